"""The ``analysis`` DVC stage: tidy tables, Bayesian fits behind a convergence gate, frequentist cross-checks,
and the outputs every figure and the manuscript read.

Outputs under ``data/analysis/``:

* ``tidy/predictions.parquet``, ``tidy/calibration_pairs.parquet``, ``tidy/calibration_errors.parquet``,
  ``tidy/behaviour.parquet`` -- the long tables (:mod:`analysis.self_prediction.tidy`);
* ``tables/*.parquet`` -- raw accuracies with Wilson intervals (overall, per finetune seed, and scored against
  the self-trained model M1', as a sensitivity against the base model, and against M1' as the original's code
  scores it: ``sensitivity_ground_truth``, per property ``sensitivity_by_property``), posterior summaries
  (advantage by group, training effect, accuracy against the mode baseline), calibration curves and MAD (per
  target and pooled, raw and renormalised meta distributions, paired self - cross difference), behaviour
  tracking against its mode baselines with the permutation null (and as the original computes it:
  ``behaviour_original``), posterior-predictive checks;
* ``posterior/<model>.nc`` -- the posterior draws (netcdf);
* ``metrics.json`` -- every result with its interval and diagnostics (committed with the code);
* ``headline.json`` -- a dozen of them, flat: the DVC metrics ``dvc exp show`` and ``dvc metrics diff`` compare;
* ``numbers.json`` -- a flat ``name -> value`` map the manuscript quotes (no number is typed by hand).

Nothing is written until every model has passed the gate.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from reproduce.config import REPO_ROOT, Profile
from reproduce.errors import DataError
from reproduce.io import atomic_path, atomic_write_json, atomic_write_parquet, read_stage_table
from reproduce.self_prediction.properties import NUMBER_SEQUENCE
from reproduce.self_prediction.schemas import BEHAVIOUR_CHANGE, CALIBRATION, META_TRAINED, META_UNTRAINED, OBJECT_LEVEL

import analysis.self_prediction.baseline as B
import analysis.self_prediction.compliance as C
import analysis.self_prediction.frequentist as freq
import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.original as original
import analysis.self_prediction.tidy as tidy
from analysis.constants import MAD_BINS
from analysis.verdicts import headline, verdict

DATA = REPO_ROOT / "data"
OUT = DATA / "analysis"
GROUPS = ["target", "task", "property"]
# plus one random intercept and self slope per target x task x property cell: the crossed main effects alone
# leave cell-level deviations (a target that always answers "A" makes among_a_or_c trivially predictable and
# among_b_or_d impossible) that the posterior-predictive check flags
CELL = tidy.CELL


# ------------------------------------------------------------------------------------------ calibration
def _qcut_quantiles(bins: int) -> np.ndarray:
    """The quantile levels ``pd.qcut(x, bins)`` asks for (levels not representable in base 2 rounded up)."""
    q = np.linspace(0, 1, bins + 1)
    np.putmask(q, bins * q != np.arange(bins + 1), np.nextafter(q, 1))
    return q


def mad_bins(object_prob, bins: int = MAD_BINS) -> np.ndarray:
    """The equal-frequency bin of every point, as ``pd.qcut(object_prob, bins, labels=False,
    duplicates="drop")`` bins them in the original (``side_experiments/19_sep_calibration_main_fig.py``,
    ``pandas_equal_frequency_binning``): edges at the ``bins``-quantiles (``np.quantile``, linear, at the
    levels qcut asks for), repeated edges dropped, intervals ``(a, b]`` with the lowest edge included. Tied
    probabilities always share a bin, so the binning does not depend on row order; with heavy ties there are
    fewer than ``bins`` bins, and a bin between two tied blocks can be empty. When every point is tied,
    pandas returns no bin at all; here they form one. Written with numpy because the bootstrap bins
    thousands of resamples; ``tests/test_calibration_mad.py`` checks it against ``pd.qcut``."""
    o = np.asarray(object_prob, float)
    edges = np.unique(np.quantile(o, _qcut_quantiles(bins)))
    if len(edges) == 1:  # every point tied: one bin
        return np.zeros(len(o), dtype=int)
    idx = np.searchsorted(edges, o, side="left") - 1
    idx[o == edges[0]] = 0
    return idx


def _binned(o: np.ndarray, m: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per non-empty bin: mean object probability, mean meta probability, points. Empty bins are skipped
    (the original's ``groupby(observed=False)`` would give them NaN means, on which its MAD fails)."""
    b = mad_bins(o, bins)
    n = np.bincount(b)
    keep = n > 0
    return np.bincount(b, o)[keep] / n[keep], np.bincount(b, m)[keep] / n[keep], n[keep]


def mad(object_prob, meta_prob, bins: int = MAD_BINS) -> float:
    """The paper's calibration statistic: bin the points by object-level probability into ``bins``
    equal-frequency bins (:func:`mad_bins`: ties kept together, so possibly fewer bins), and average |mean
    object probability - mean meta probability| over the bins; x100 (the original's
    ``mean_absolute_error`` of the bin means in percent)."""
    o, m = np.asarray(object_prob, float), np.asarray(meta_prob, float)
    if len(o) < bins:
        raise DataError(f"MAD needs at least {bins} points, got {len(o)}")
    mo, mm, _ = _binned(o, m, bins)
    return 100.0 * float(np.mean(np.abs(mo - mm)))


def calibration_curve(object_prob, meta_prob, bins: int = MAD_BINS) -> pd.DataFrame:
    mo, mm, n = _binned(np.asarray(object_prob, float), np.asarray(meta_prob, float), bins)
    return pd.DataFrame({"bin": range(len(n)), "object_prob": mo, "meta_prob": mm, "n": n})


#: resamples binned at once by :func:`mad_resamples` (bounds its memory: rows x points x (bins + 1) comparisons)
RESAMPLE_CHUNK = 256


def mad_resamples(object_prob, meta_prob, weights, bins: int = MAD_BINS) -> np.ndarray:
    """:func:`mad` of many resamples at once. Row b of ``weights`` gives every point's multiplicity in resample
    b, i.e. the sample ``np.repeat(arange(n), weights[b])``; the result equals :func:`mad` of that sample up to
    the order of float sums (the edges are ``np.quantile``'s, by its own formula, at the levels qcut asks for;
    ``tests/test_calibration_mad.py`` compares the two). NaN for a resample of fewer than ``bins`` points."""
    o = np.asarray(object_prob, float)
    order = np.argsort(o, kind="stable")
    o, m = o[order], np.asarray(meta_prob, float)[order]
    w = np.asarray(weights).astype(np.int64)[:, order]
    out = np.full(len(w), np.nan)
    q = _qcut_quantiles(bins)
    for lo in range(0, len(w), RESAMPLE_CHUNK):
        rows = np.arange(lo, min(lo + RESAMPLE_CHUNK, len(w)))
        total = w[rows].sum(axis=1)
        rows = rows[total >= bins]
        if not len(rows):
            continue
        mult, total = w[rows], total[total >= bins]
        r = np.arange(len(rows))[:, None]
        # np.quantile's linear method on the sorted resample: virtual index (N - 1) q between positions
        # floor and floor + 1 (both N - 1 at the top), and its lerp (exact where the two values are equal)
        virtual = (total[:, None] - 1) * q[None, :]
        floor = np.floor(virtual)
        top = virtual >= (total[:, None] - 1)
        below = np.where(top, total[:, None] - 1, floor).astype(np.int64)
        above = np.where(top, total[:, None] - 1, below + 1)
        gamma = virtual - floor
        # the point at sorted position k of resample b: the number of cumulative multiplicities <= k, found in
        # one search over the rows laid end to end (row b shifted by b * span, span above any row's total)
        cum, span = np.cumsum(mult, axis=1), int(total.max()) + 1
        flat = (cum + span * r).ravel()

        def at(k):
            return o[np.searchsorted(flat, (k + span * r).ravel(), side="right").reshape(k.shape) - len(o) * r]

        a, b = at(below), at(above)
        edges = np.where(gamma >= 0.5, b - (b - a) * (1 - gamma), a + (b - a) * gamma)
        # a point's bin: the number of distinct edges below it, less one (the lowest edge joins the first bin)
        distinct = np.ones(edges.shape, bool)
        distinct[:, 1:] = edges[:, 1:] != edges[:, :-1]
        below_point = np.zeros(mult.shape, np.int64)
        for j in range(edges.shape[1]):
            below_point += (edges[:, j, None] < o[None, :]) & distinct[:, j, None]
        cell = (np.clip(below_point - 1, 0, bins - 1) + bins * r).ravel()  # points not drawn: weight 0
        size = bins * len(rows)
        n = np.bincount(cell, mult.ravel(), size).reshape(-1, bins)
        so = np.bincount(cell, (mult * o).ravel(), size).reshape(-1, bins)
        sm = np.bincount(cell, (mult * m).ravel(), size).reshape(-1, bins)
        used = n > 0
        gap = np.abs(np.divide(so, n, out=np.zeros_like(so), where=used) - np.divide(sm, n, out=np.zeros_like(sm), where=used))
        out[rows] = 100.0 * gap.sum(axis=1) / used.sum(axis=1)
    return out


def _item_weights(pairs: pd.DataFrame, n_boot: int, seed: int) -> tuple[np.ndarray, int]:
    """Every point's multiplicity in each of ``n_boot`` resamples of the items (an item's top behaviours under
    every object-level model, and its self and cross points, move together), from
    :func:`analysis.self_prediction.frequentist.cluster_weights`; and the number of items."""
    codes, uniq = pd.factorize(tidy.item_of(pairs), sort=True)
    return freq.cluster_weights(len(uniq), n_boot, seed).astype(np.int64)[:, codes], len(uniq)


def mad_bootstrap(pairs: pd.DataFrame, n_boot: int, seed: int, bins: int = MAD_BINS) -> dict:
    """MAD with a 95% percentile interval from resampling items (:func:`analysis.self_prediction.tidy.item_of`: an item enters
    a pooled or several-seed MAD once per target and seed, and its points there move together)."""
    w, items = _item_weights(pairs, n_boot, seed)
    o, m = pairs["object_prob"].to_numpy(float), pairs["meta_prob"].to_numpy(float)
    boot = mad_resamples(o, m, w, bins)
    boot = boot[~np.isnan(boot)]
    return {"mad": mad(o, m, bins), "low": float(np.quantile(boot, 0.025)), "high": float(np.quantile(boot, 0.975)),
            "points": len(o), "items": items, "bins": int(len(_binned(o, m, bins)[2])), "n_boot": n_boot}


def mad_difference_bootstrap(pairs: pd.DataFrame, n_boot: int, seed: int, bins: int = MAD_BINS) -> dict:
    """MAD(self) - MAD(cross) with a paired 95% percentile interval: every resample draws items
    (``task/item_id``, :func:`analysis.self_prediction.tidy.item_of`) once and takes the self- and the cross-predictor's points of the drawn
    items under every seed, so both MADs are computed on the same items in every resample. ``pairs``: the
    calibration points of both kinds (``kind`` self / cross), scored against the same object models."""
    o, m = pairs["object_prob"].to_numpy(float), pairs["meta_prob"].to_numpy(float)
    is_self = (pairs["kind"] == "self").to_numpy()
    if is_self.sum() < bins or (~is_self).sum() < bins:
        raise DataError(f"the paired MAD needs at least {bins} points of each kind")
    w, items = _item_weights(pairs, n_boot, seed)
    boot = mad_resamples(o[is_self], m[is_self], w[:, is_self], bins) - mad_resamples(
        o[~is_self], m[~is_self], w[:, ~is_self], bins)
    boot = boot[~np.isnan(boot)]
    s, c = mad(o[is_self], m[is_self], bins), mad(o[~is_self], m[~is_self], bins)
    return {"mad_self": s, "mad_cross": c, "difference": s - c, "low": float(np.quantile(boot, 0.025)),
            "high": float(np.quantile(boot, 0.975)), "p_self_lower": float(np.mean(boot < 0)),
            "items": items, "n_boot": n_boot}


def calibration_tables(cal: pd.DataFrame, n_boot: int, seed: int) -> tuple[dict, dict, pd.DataFrame]:
    """Experiment 2 as the paper measures it: per meta variant (``raw``, the paper's; ``renormalised``, the
    sensitivity), condition, kind and target model (and ``pooled`` over targets), the MAD with its bootstrap
    interval and the binned curve; and, after training, the paired bootstrap of MAD(self) - MAD(cross). These
    pool the points of every closed property of every held-out task; :func:`calibration_cells` gives the same
    per task x property, the original's scope. Returns the tables ``mad``, ``calibration_curve``,
    ``mad_difference`` and ``mad_cells``, the metrics, and the raw calibration points."""
    mads, curves, diffs, metrics = [], [], [], {}
    raw_pairs = None
    for variant in tidy.META_VARIANTS:
        pairs = tidy.calibration_pairs(cal, variant=variant)
        if variant == "raw":
            raw_pairs = pairs
        scopes = [(t, pairs[pairs["target"] == t]) for t in sorted(pairs["target"].unique())] + [("pooled", pairs)]
        for target, p in scopes:
            for (condition, kind), g in p.groupby(["condition", "kind"], sort=True):
                if len(g) >= MAD_BINS:
                    mads.append({"variant": variant, "target": target, "condition": condition, "kind": kind,
                                 **mad_bootstrap(g, n_boot, seed)})
                    curves.append(calibration_curve(g["object_prob"], g["meta_prob"]).assign(
                        variant=variant, target=target, condition=condition, kind=kind))
            t = p[p["condition"] == "trained"]
            if (t["kind"] == "self").sum() >= MAD_BINS and (t["kind"] == "cross").sum() >= MAD_BINS:
                diffs.append({"variant": variant, "target": target, **mad_difference_bootstrap(t, n_boot, seed)})
    cells = calibration_cells(raw_pairs, n_boot, seed) if raw_pairs is not None and len(raw_pairs) else pd.DataFrame()
    tables = {"mad": pd.DataFrame(mads), "calibration_curve": pd.concat(curves, ignore_index=True) if curves else
              pd.DataFrame(), "mad_difference": pd.DataFrame(diffs), "mad_cells": cells}
    mad_t, dif = tables["mad"], tables["mad_difference"]

    def entries(variant: str, target: str) -> dict:
        d = mad_t[(mad_t["variant"] == variant) & (mad_t["target"] == target)] if len(mad_t) else mad_t
        return {f"{r.condition}_{r.kind}": {"mad": r.mad, "low": r.low, "high": r.high, "bins": r.bins}
                for r in d.itertuples()}

    def differences(variant: str) -> dict:
        d = dif[dif["variant"] == variant] if len(dif) else dif
        return {r.target: {"mad_self": r.mad_self, "mad_cross": r.mad_cross, "difference": r.difference,
                           "low": r.low, "high": r.high} for r in d.itertuples()}

    targets = sorted(t for t in mad_t["target"].unique() if t != "pooled") if len(mad_t) else []
    metrics = {"mad": entries("raw", "pooled"), "mad_by_target": {t: entries("raw", t) for t in targets},
               "mad_difference": differences("raw"),
               "mad_renormalised": entries("renormalised", "pooled"),
               "mad_difference_renormalised": differences("renormalised"),
               "mad_cells": calibration_cell_metrics(cells)}
    return tables, metrics, raw_pairs


#: the original's headline calibration cell (``side_experiments/19_sep_calibration_main_fig.py``: the animals
#: task, the second character of the answer); its other calibration scripts take one task and property each too
ORIGINAL_CALIBRATION_CELL = ("animals", "second_character")


def calibration_cells(pairs: pd.DataFrame, n_boot: int, seed: int, bins: int = MAD_BINS) -> pd.DataFrame:
    """The MAD on the original's scope: one held-out task and one property at a time (its calibration scripts
    each bin the points of one task x property; the pooled MAD of :func:`calibration_tables` bins the points
    of every closed property of every held-out task together). ``pairs``: the raw-variant calibration points
    (:func:`analysis.self_prediction.tidy.calibration_pairs`). Per task x property and per target model (and ``pooled`` over
    targets): the MAD of the untrained self-predictor and of both trained predictors, each with its item
    bootstrap interval, and the paired bootstrap of MAD(self) - MAD(cross) after training. A cell needs
    ``bins`` points of a predictor for its MAD, and of both trained predictors for the difference; cells below
    that are listed with NaN, so the table shows what the run could not measure.

    Columns: ``task, property, target, original`` (the original's headline cell), then for each of
    ``untrained_self, trained_self, trained_cross``: ``<arm>, <arm>_low, <arm>_high, <arm>_points``; then
    ``difference, low, high, items``."""
    rows = []
    for (task, prop), g in pairs.groupby(["task", "property"], sort=True):
        scopes = [(t, g[g["target"] == t]) for t in sorted(g["target"].unique())] + [("pooled", g)]
        for target, p in scopes:
            row = {"task": task, "property": prop, "target": target,
                   "original": (task, prop) == ORIGINAL_CALIBRATION_CELL}
            for condition, kind in (("untrained", "self"), ("trained", "self"), ("trained", "cross")):
                arm, sub = f"{condition}_{kind}", p[(p["condition"] == condition) & (p["kind"] == kind)]
                r = mad_bootstrap(sub, n_boot, seed, bins) if len(sub) >= bins else {}
                row.update({arm: r.get("mad", np.nan), f"{arm}_low": r.get("low", np.nan),
                            f"{arm}_high": r.get("high", np.nan), f"{arm}_points": len(sub)})
            t = p[p["condition"] == "trained"]
            enough = (t["kind"] == "self").sum() >= bins and (t["kind"] == "cross").sum() >= bins
            d = mad_difference_bootstrap(t, n_boot, seed, bins) if enough else {}
            row.update({"difference": d.get("difference", np.nan), "low": d.get("low", np.nan),
                        "high": d.get("high", np.nan), "items": d.get("items", tidy.item_of(t).nunique())})
            rows.append(row)
    return pd.DataFrame(rows)


def calibration_cell_metrics(cells: pd.DataFrame) -> dict:
    """The per-cell MADs in short: how many task x property cells (pooled over targets) have a paired
    difference, in how many self-prediction is better calibrated (difference below 0) and in how many the
    interval excludes 0 either way, and the fewest items a cell has (a bootstrap over a handful of items has
    few distinct resamples); and the original's headline cell, per target and pooled."""
    pooled = cells[(cells["target"] == "pooled") & cells["difference"].notna()] if len(cells) else cells
    out = {"cells": int(len(pooled)), "cells_total": int((cells["target"] == "pooled").sum()) if len(cells) else 0,
           "self_lower": int((pooled["difference"] < 0).sum()) if len(pooled) else 0,
           "self_credibly_better": int((pooled["high"] < 0).sum()) if len(pooled) else 0,
           "cross_credibly_better": int((pooled["low"] > 0).sum()) if len(pooled) else 0,
           "items_min": int(pooled["items"].min()) if len(pooled) else 0,
           "task": ORIGINAL_CALIBRATION_CELL[0], "property": ORIGINAL_CALIBRATION_CELL[1], "original": {}}
    # a cell too small for a MAD keeps NaN here; jsonable writes it as null
    for r in cells[cells["original"]].itertuples() if len(cells) else []:
        entry = {arm: {"mad": getattr(r, arm), "low": getattr(r, f"{arm}_low"), "high": getattr(r, f"{arm}_high"),
                       "points": int(getattr(r, f"{arm}_points"))}
                 for arm in ("untrained_self", "trained_self", "trained_cross")}
        entry["difference"] = {"difference": r.difference, "low": r.low, "high": r.high, "items": int(r.items)}
        out["original"][r.target] = entry
    return out


# ------------------------------------------------------------------------------------------------ stage
#: the fits that start at ``analysis.target_accept_retry``: their funnel-shaped posteriors diverged at 0.9 in the
#: reference runs' ``default`` tables (62 and 5-8 divergent transitions), so a first sampling at target_accept
#: would usually be thrown away; the methods name them whatever the run
CAREFUL = ("training effect", "calibration log-score")


def _settings(profile: Profile, seed_offset: int, name: str | None = None) -> M.SamplerSettings:
    """The profile's NUTS settings for the fit ``name``, seeded ``profile.seed + seed_offset``: starting at the
    retry's target acceptance for the fits in :data:`CAREFUL`."""
    a = profile.analysis
    return M.SamplerSettings(sampler=a.sampler, draws=a.draws, tune=a.tune, chains=a.chains,
                             target_accept=a.target_accept_retry if name in CAREFUL else a.target_accept,
                             target_accept_retry=a.target_accept_retry, seed=profile.seed + seed_offset)


def _fit(data: M.ContrastData, model, name: str, profile: Profile, seed_offset: int, by: list[list[str]],
         probabilities) -> dict:
    """Sample ``model``, gate it, and summarise the marginal effect overall and ``by`` (a list of tables) from
    the cell probabilities ``probabilities(idata, data)`` returns beside any other quantities of the fit
    (``quantities``); with the prior- and posterior-predictive checks."""
    prior = M.prior_predictive_accuracy(model, data, seed=profile.seed)
    idata, diag = M.sample_gated(model, _settings(profile, seed_offset, name), name)
    probs, quantities = probabilities(idata, data)
    effects = [M.marginal_effects(idata, data, probs=probs).assign(by="overall")]
    effects += [M.marginal_effects(idata, data, b, probs=probs).assign(by="+".join(b)) for b in by]
    ppc = M.posterior_predictive_check(idata, data, seed=profile.seed)
    return {"data": data, "idata": idata, "probs": probs, "quantities": quantities, "diagnostics": diag,
            "prior": prior, "effects": effects, "ppc": ppc}


def _contrast(rows: pd.DataFrame, x: str, name: str, profile: Profile, seed_offset: int, by: list[list[str]],
              groups: list[str] | None = None, common_cells: bool = False):
    """Fit the contrast model on ``rows``, gate it, and summarise the marginal effect overall and ``by``
    (``common_cells``: over the cells with trials in both arms only, :func:`analysis.self_prediction.hierarchical.common_support`;
    the fit and its checks use every cell)."""
    data = M.to_cells(tidy.with_cell(rows), x, groups or GROUPS + [CELL], "unit")

    def probabilities(idata, d):  # what common_support left out comes back as the fit's quantities
        probs = M.cell_probabilities(idata, d)
        return M.common_support(d, probs, CELL) if common_cells else (probs, None)

    fit = _fit(data, M.contrast_model(data), name, profile, seed_offset, by, probabilities)
    return {**fit, "effects": pd.concat(fit["effects"], ignore_index=True), "support": fit["quantities"] or {}}


def _advantage(trained: pd.DataFrame, profile: Profile, groups: list[str]) -> dict:
    """Experiment 1's identified estimand (:func:`analysis.self_prediction.hierarchical.advantage_model`): fit, gate, and summarise
    delta (equal predicting skill, directions weighted equally), every direction's advantage, gamma (two
    models), the trial-weighted and equal-task-weighted observed advantages, and the verdicts (ROPE).
    ``trained``: the main trained predictions with their cell (:func:`analysis.self_prediction.tidy.with_cell`)."""
    rope = profile.analysis.rope
    data = M.advantage_data(trained, groups)
    model = M.advantage_model(data)
    cells = M.prior_cell_accuracy(model, data, seed=profile.seed)
    prior_table = pd.DataFrame({"low": cells["edges"][:-1], "high": cells["edges"][1:], "density": cells["density"]})

    def probabilities(idata, d):
        q = M.advantage_quantities(idata, d)
        return q["probs"], q

    fit = _fit(data, model, "self-prediction advantage", profile, 0,
               [["target"], ["task"], ["property"], ["target", "task"], ["target", "property"]], probabilities)
    fit["prior"]["cell"] = {k: cells[k] for k in ("q05", "q50", "q95", "extreme_share", "extreme")}
    q, effects = fit["quantities"], fit["effects"]
    delta = M.summarise_draws(q["delta"])
    effects.append(pd.DataFrame([{**M.summarise_draws(q["delta"], 1.0), "by": "delta"}]))
    # equal weight per held-out task: the per-task observed advantages, averaged per draw
    p1, p0, design = fit["probs"]
    per_task = [ww @ (p1[m] - p0[m]) for _, m, ww in M._groups(design, ["task"])]
    per_cell = [ww @ (p1[m] - p0[m]) for _, m, ww in M._groups(design, [CELL])]
    directions = []
    for (t, p), d in sorted(q["directions"].items()):
        sm = M.summarise_draws(d)
        directions.append({"target": t, "cross_predictor": p, **sm,
                           "verdict": verdict(sm["low"], sm["high"], rope)})
    d_all = np.all(np.stack(list(q["directions"].values())) > 0, axis=0)
    metrics = {
        "overall": {**delta, "verdict": verdict(delta["low"], delta["high"], rope)},
        "delta_logit": M.summarise_draws(q["delta_logit"], 1.0),
        "new_task": M.summarise_draws(M.new_task_delta(fit["idata"], data, seed=profile.seed)),
        "trial_weighted": _summary(effects[0].iloc[0]),
        "equal_task": M.summarise_draws(np.mean(per_task, axis=0)),
        "equal_cell": M.summarise_draws(np.mean(per_cell, axis=0)),
        "directions": directions,
        "p_every_direction": float(d_all.mean()),
        "skill_logit": {k: M.summarise_draws(v, 1.0) for k, v in q.get("skill", {}).items()},
        "rope": rope,
    }
    if "gamma" in q:
        metrics["gamma"] = {**M.summarise_draws(q["gamma"]), "first": q["gamma_order"][0], "second": q["gamma_order"][1]}
        metrics["gamma_logit"] = M.summarise_draws(q["gamma_logit"], 1.0)
    metrics["new_task"]["verdict"] = verdict(metrics["new_task"]["low"], metrics["new_task"]["high"], rope)
    if "object_model" in data.groups:  # several finetuning seeds: what a new finetuning run would show
        runs = int(data.cells["object_model"].nunique())
        for key, new in (("new_run", ("object_model",)), ("new_task_and_run", ("task", "cell", "object_model"))):
            s = M.summarise_draws(M.new_task_delta(fit["idata"], data, new=new, seed=profile.seed))
            metrics[key] = {**s, "verdict": verdict(s["low"], s["high"], rope), "runs": runs}
        metrics["run_scale"] = _run_scale(fit["idata"], data.priors)
    metrics["headline"] = headline(metrics["overall"]["verdict"], [d["verdict"] for d in directions])
    return {**fit, "effects": pd.concat(effects, ignore_index=True), "metrics": metrics,
            "directions": pd.DataFrame(directions), "prior_cells": prior_table}


def _arms(trained: pd.DataFrame, profile: Profile, groups: list[str]) -> dict:
    """Fit the three-arm model (:mod:`analysis.self_prediction.baseline`), gate it, and summarise it pooled, per target, per
    task and per target x task x property cell; ``rows``: the trained predictor-target pairs against the
    mode arm with their verdicts (the manuscript's count). ``trained`` as in :func:`_advantage`."""
    rope = profile.analysis.rope
    data = B.arms_data(trained, groups)
    idata, diag = M.sample_gated(B.arms_model(data), _settings(profile, 4), "mode-baseline arms")
    eff = B.arm_effects(idata, data, [[], ["target"], ["task"], ["target", "task"], ["target", CELL]], rope)
    per_target = eff[eff["by"] == "target"]
    rows, vs = [], []
    for r in per_target.itertuples():
        for kind in ("self", "cross"):
            d = f"{kind}_minus_mode"
            rows.append({"target": r.target, "kind": kind, "mean": getattr(r, d), "low": getattr(r, f"{d}_low"),
                         "high": getattr(r, f"{d}_high"), "mode_baseline": r.accuracy_mode,
                         "lift": getattr(r, f"lift_{kind}"), "lift_low": getattr(r, f"lift_{kind}_low"),
                         "lift_high": getattr(r, f"lift_{kind}_high"), "verdict": getattr(r, f"{d}_verdict")})
            vs.append({"target": r.target, "kind": kind, "accuracy": getattr(r, f"accuracy_{kind}") / 100,
                       "mode_baseline": r.accuracy_mode / 100, "difference": getattr(r, d) / 100,
                       "low": getattr(r, f"{d}_low") / 100, "high": getattr(r, f"{d}_high") / 100,
                       "p_above_baseline": getattr(r, f"{d}_p_positive")})
    pooled = eff[eff["by"] == "overall"].iloc[0]
    cells = eff[eff["by"] == f"target+{CELL}"]

    def entry(r, name):
        return {"mean": r[name], "low": r[f"{name}_low"], "high": r[f"{name}_high"]}

    metrics = {
        "pooled": {**{name: {**entry(pooled, name), "p_positive": pooled[f"{name}_p_positive"],
                             "verdict": pooled[f"{name}_verdict"]} for name, _, _ in B.COMPARISONS},
                   **{f"accuracy_{a}": entry(pooled, f"accuracy_{a}") for a in B.ARMS},
                   **{f"lift_{k}": entry(pooled, f"lift_{k}") for k in ("self", "cross")}},
        "cells": int(len(cells)),
        "cells_verdicts": {f"{k}_minus_mode": cells[f"{k}_minus_mode_verdict"].value_counts().to_dict()
                           for k in ("self", "cross")},
        "cells_both_not_above": int(((cells["self_minus_mode_verdict"] != "positive")
                                     & (cells["cross_minus_mode_verdict"] != "positive")).sum()),
        "diagnostics": diag, "groups": groups, "rope": rope}
    return {"idata": idata, "effects": eff, "rows": rows, "vs_baseline": pd.DataFrame(vs), "metrics": metrics}


def _run_scale(idata, priors: M.Priors) -> dict:
    """The finetune-run factor's scales on the log-odds scale: the intercept scale ``sigma`` and the self-slope
    scale ``tau`` of ``object_model``, each as posterior median, mean and 94% interval beside its HalfNormal
    prior's scale and 95th percentile and the posterior share above that percentile. With two or three runs
    per target the data say little about a scale, so whether the posterior sits inside the prior or in its
    tail is worth reporting next to the new-run intervals that depend on it."""
    from scipy.stats import halfnorm

    out = {}
    for name, scale in (("sigma", priors.sigma), ("tau", priors.tau)):
        d = idata.posterior[name].sel(factor="object_model").to_numpy().ravel()
        q95 = float(halfnorm.ppf(0.95, scale=scale))
        out[name] = {**M.summarise_draws(d, 1.0), "median": float(np.median(d)), "prior_scale": float(scale),
                     "prior_q95": q95, "p_above_prior_q95": float((d > q95).mean())}
    return out


def _prior_sensitivity(profile: Profile, adv: dict) -> tuple[pd.DataFrame, dict]:
    """The advantage model refitted with every prior scale multiplied by each factor of
    ``analysis.prior_sensitivity`` (gated like the main fit): delta, the new-task advantage, gamma (two models),
    P(every direction) and the verdicts per factor, the main fit as factor 1; with several finetune seeds also
    the new-run advantage, whose interval rests on the run factor's scales and so on their priors."""
    from dataclasses import replace

    rope = profile.analysis.rope

    def row(factor, delta, new, p_every, gamma, diag):
        r = {"prior_scale": factor, **{f"delta_{k}": delta[k] for k in ("mean", "low", "high", "p_positive")},
             **{f"new_task_{k}": new[k] for k in ("mean", "low", "high", "p_positive")},
             "p_every_direction": p_every, "verdict": verdict(delta["low"], delta["high"], rope),
             "r_hat_max": diag["r_hat_max"], "divergences": diag["divergences"], "draws": diag["draws"],
             "sampled_twice": "refit" in diag, "target_accept": diag["target_accept"],
             "diverged": "diverged" in diag}
        if gamma:
            r.update({f"gamma_{k}": gamma[k] for k in ("mean", "low", "high", "p_positive")})
        return r

    a = adv["metrics"]  # the main fit, summarised once by _advantage
    runs = "new_run" in a
    rows = [row(1.0, a["overall"], a["new_task"], a["p_every_direction"], a.get("gamma"), adv["diagnostics"])]
    new_run = {1.0: a["new_run"]} if runs else {}
    for i, factor in enumerate(profile.analysis.prior_sensitivity):
        data = replace(adv["data"], priors=adv["data"].priors.scaled(factor))
        idata, diag = M.sample_gated(M.advantage_model(data), _settings(profile, 10 + i),
                                     f"self-prediction advantage (priors x {factor:g})")
        q = M.advantage_quantities(idata, data)
        rows.append(row(factor, M.summarise_draws(q["delta"]),
                        M.summarise_draws(M.new_task_delta(idata, data, seed=profile.seed)),
                        float(np.all(np.stack(list(q["directions"].values())) > 0, axis=0).mean()),
                        M.summarise_draws(q["gamma"]) if "gamma" in q else None, diag))
        if runs:
            nr = M.summarise_draws(M.new_task_delta(idata, data, new=("object_model",), seed=profile.seed))
            new_run[float(factor)] = {**nr, "verdict": verdict(nr["low"], nr["high"], rope)}
    table = pd.DataFrame(rows).sort_values("prior_scale").reset_index(drop=True)
    spread = float(table["delta_mean"].max() - table["delta_mean"].min())
    by_factor = {f"{r.prior_scale:g}": {"delta": r.delta_mean, "low": r.delta_low, "high": r.delta_high,
                                        "verdict": r.verdict} for r in table.itertuples()}
    for f, nr in new_run.items():
        by_factor[f"{f:g}"]["new_run"] = {k: nr[k] for k in ("mean", "low", "high", "verdict")}
    return table, {"factors": [float(f) for f in table["prior_scale"]], "delta_spread": spread,
                   "verdicts_agree": bool(table["verdict"].nunique() == 1), "by_factor": by_factor}


def _compliance(trained: pd.DataFrame, profile: Profile, groups: list[str]) -> dict:
    """:func:`analysis.self_prediction.compliance.compliance_sensitivity` with the stage's sampler settings and gate; each
    part's diagnostics under ``diagnostics``, and a verdict (ROPE) on the advantage at equal compliance."""
    diagnostics = {}

    def fit(data, model, name):
        idata, diagnostics[name] = M.sample_gated(model, _settings(profile, 5 + len(diagnostics)), name)
        return idata

    out = C.compliance_sensitivity(trained, groups, fit)
    if diagnostics:
        out["diagnostics"] = diagnostics
        e = out["advantage_at_equal_compliance"]
        out["verdict"] = verdict(e["low"], e["high"], profile.analysis.rope)
    return out


def _summary(row: pd.Series, scale: float = 100.0) -> dict:
    return {"mean": scale * row["mean"], "low": scale * row["low"], "high": scale * row["high"],
            "p_positive": row["p_positive"]}


def _by_target(effects: pd.DataFrame) -> dict:
    return {r["target"]: _summary(r) for _, r in effects[effects["by"] == "target"].iterrows()}


def _advantage_groups(trained: pd.DataFrame) -> list[str]:
    """The advantage model's random grouping factors (target and predictor are its fixed effects): task,
    property and the target x task x property cell, plus, with two or more finetune seeds, the self-trained
    object model (``<target>+self-s<seed>``): one finetune run of a target, whose intercept and self slope
    carry the seed-to-seed variation of M1''s behaviour and of the advantage."""
    groups = ["task", "property", CELL]
    if trained["seed"].nunique() >= 2:
        groups.append("object_model")
    return groups


def _seed_spread(trained: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Experiment 1 per finetune seed: raw accuracy of every trained predictor against M1' of each seed, and
    the spread between seeds (max - min, points) of the self accuracy, the cross accuracy and their
    difference, per target."""
    acc = tidy.accuracy_table(trained, ["seed", "target", "kind", "predictor"])
    out = {"seeds": sorted(int(s) for s in trained["seed"].dropna().unique()), "by_target": {}}
    for target, g in acc.groupby("target", sort=True):
        w = g.pivot_table(index="seed", columns="kind", values="accuracy")
        entry = {}
        for col in ("self", "cross"):
            if col in w:
                entry[f"{col}_by_seed"] = {str(int(s)): 100 * v for s, v in w[col].items()}
                entry[f"{col}_spread"] = 100 * float(w[col].max() - w[col].min())
        if {"self", "cross"} <= set(w.columns):
            d = 100 * (w["self"] - w["cross"])
            entry["advantage_by_seed"] = {str(int(s)): v for s, v in d.items()}
            entry["advantage_spread"] = float(d.max() - d.min())
        out["by_target"][target] = entry
    return acc, out


#: the held-out task family of experiment 1 that the original's experiment 1 has no task of
NO_COUNTERPART_FAMILY = NUMBER_SEQUENCE


def _sensitivity(meta_u: pd.DataFrame, meta_t: pd.DataFrame, objects: pd.DataFrame | None, n_boot: int,
                 seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Experiment 1 scored several ways: against M1' (``trained``, the main result and the original's
    protocol), against the base model (``base``, the sensitivity variant), against M1' as the original's code
    scores it (``trained_original``, :mod:`analysis.self_prediction.original`: its property functions, every object answer
    kept, the whole cleaned hypothetical answer; only when the object-level answers are given), and against
    M1' on the held-out tasks of the families the original's experiment 1 has (``trained_without_numbers``:
    without the number-sequence tasks; only when there are both). Raw accuracies with Wilson intervals and mode
    baselines per scoring x kind x target, the same per scoring x kind x property, and the cluster-bootstrap
    advantage per scoring (the tables' ``ground_truth`` column names the scoring)."""
    tables, by_property, metrics = [], [], {}

    def summarise(name: str, t: pd.DataFrame) -> None:
        tables.append(tidy.accuracy_table(t, ["kind", "predictor", "target"]).assign(ground_truth=name))
        tables.append(tidy.accuracy_table(t, ["kind"]).assign(ground_truth=name, predictor="all", target="all"))
        by_property.append(tidy.accuracy_table(t, ["kind", "property"]).assign(ground_truth=name))
        boot = freq.cluster_bootstrap_difference(tidy.with_item(t), cluster="item", n_boot=n_boot, seed=seed)
        metrics[name] = {"advantage": {k: 100 * boot[k] for k in ("estimate", "low", "high")},
                         "self": 100 * t.loc[t["self"] == 1, "correct"].mean(),
                         "cross": 100 * t.loc[t["self"] == 0, "correct"].mean(),
                         "mode_baseline": 100 * t["mode_correct"].mean(), "n": int(len(t))}

    scorings = [(truth, truth, None) for truth in tidy.GROUND_TRUTHS]
    if objects is not None:
        scorings.append(("trained_original", "trained", objects))
    for name, truth, obj in scorings:
        t = tidy.main_trained(tidy.predictions(meta_u, meta_t, ground_truth=truth, objects=obj))
        if t["kind"].nunique() < 2:
            continue
        summarise(name, t)
        numbers = t["family"] == NO_COUNTERPART_FAMILY
        if name == "trained" and numbers.any() and t.loc[~numbers, "kind"].nunique() == 2:
            summarise("trained_without_numbers", t[~numbers])
    return pd.concat(tables, ignore_index=True), pd.concat(by_property, ignore_index=True), metrics


def _behaviour(bc: pd.DataFrame, profile: Profile, tables: dict, posteriors: dict) -> tuple[dict, pd.DataFrame]:
    """Experiment 3 on the changed items: outcome shares, P(prediction = new / old) beside their mode baselines
    recomputed on the same items, a labelled variant computed as the original computes it (compliant predictions
    only, modes pooled over tasks; :func:`analysis.self_prediction.tidy.behaviour_original`), the permutation null, the
    difference in differences against the prediction before the change, and the hierarchical multinomial
    model."""
    n_boot, seed = profile.analysis.bootstrap, profile.seed
    out_bc = tidy.behaviour_outcomes(bc)
    counts = (out_bc.groupby(["model", "property", "outcome"]).size().unstack("outcome")
              .reindex(columns=M.OUTCOMES, fill_value=0).fillna(0).astype(int).reset_index())
    tables["behaviour_counts"] = counts
    # a pair can count as changed only where its old and its new answer are both in the requested form
    comparable = int((bc["old_compliant"].astype(bool) & bc["new_compliant"].astype(bool)).sum()) if len(bc) else 0
    b = {"evaluated": int(len(bc)), "changed": int(len(out_bc)),
         "changed_share": float(bc["changed"].mean()) if len(bc) else 0.0,
         "comparable": comparable, "changed_share_of_comparable": len(out_bc) / comparable if comparable else np.nan}
    if "seed" in bc and bc["seed"].notna().any():
        b["seed"] = int(bc["seed"].dropna().iloc[0])
    for o in M.OUTCOMES:
        k = int((out_bc["outcome"] == o).sum())
        lo, hi = freq.wilson(k, len(out_bc)) if len(out_bc) else (np.nan, np.nan)
        b[f"share_{o}"] = {"share": k / len(out_bc) if len(out_bc) else np.nan, "low": lo, "high": hi, "k": k}
    if not len(out_bc):
        return b, out_bc
    track = tidy.behaviour_tracking(out_bc)
    perm = freq.permutation_null(out_bc, n_perm=n_boot, seed=seed)
    p = perm.pivot(index="model", columns="statistic", values="p_value")
    track = track.assign(p_value_new=track["model"].map(p["p_new"]), p_value_old=track["model"].map(p["p_old"]),
                         p_value_new_minus_old=track["model"].map(p["new_minus_old"]))
    tables["behaviour_tracking"], tables["behaviour_permutation"] = track, perm
    items = tidy.with_item(out_bc)  # the bootstraps below resample items
    did = freq.difference_in_differences(items, n_boot=n_boot, seed=seed, cluster="item")
    b["tracking"] = {r["model"]: {"p_new": 100 * r["p_new"], "baseline_new": 100 * r["baseline_new"],
                                  "p_old": 100 * r["p_old"], "baseline_old": 100 * r["baseline_old"],
                                  "before_new": 100 * r["before_new"], "before_old": 100 * r["before_old"],
                                  "compliant": 100 * r["compliant"], "compliant_before": 100 * r["compliant_before"],
                                  "p_new_if_compliant": 100 * r["p_new_if_compliant"],
                                  "p_old_if_compliant": 100 * r["p_old_if_compliant"],
                                  "n": int(r["n"])} for _, r in track.iterrows()}
    # the original's own computation, a labelled variant: non-compliant predictions dropped, modes pooled over tasks
    orig = tidy.behaviour_original(out_bc)
    tables["behaviour_original"] = orig
    b["original"] = {r["model"]: {"n": int(r["n"]), **{f"{k}_{side}": 100 * r[f"{k}_{side}"]
                                                     for side in ("new", "old")
                                                     for k in ("p", "low", "high", "baseline", "micro_baseline")}}
                     for _, r in orig.iterrows()}
    b["permutation"] = {f"{r.model}_{r.statistic}": {"observed": 100 * r.observed, "null_mean": 100 * r.null_mean,
                                                     "null_low": 100 * r.null_low, "null_high": 100 * r.null_high,
                                                     "p_value": r.p_value, "n_informative": r.n_informative}
                        for r in perm.itertuples()}
    b["vs_mode"] = {k: {kk: 100 * vv for kk, vv in v.items()}
                    for k, v in freq.paired_vs_mode(items, n_boot=n_boot, seed=seed, cluster="item").items()}
    b["did"] = {k: {kk: 100 * vv for kk, vv in v.items()} for k, v in did.items() if isinstance(v, dict)}
    b["did"]["n_boot"] = did["n_boot"]
    # where the matches with the new behaviour lie: one property can carry most of them
    hits = out_bc.loc[out_bc["match_new"] == 1, "property"].value_counts()
    b["new_matches_by_property"] = {str(k): int(v) for k, v in sorted(hits.items())}
    if len(counts) and counts[M.OUTCOMES[:2]].to_numpy().sum() > 0:
        bmodel = M.behaviour_model(out_bc)
        bidata, b["diagnostics"] = M.sample_gated(bmodel, _settings(profile, 3), "behaviour tracking")
        pp = bidata.posterior["p"].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
        p_new, p_old = pp[:, 0].mean(axis=0), pp[:, 1].mean(axis=0)  # every changed item x property once
        d = p_new - p_old
        b["model"] = {"p_new": float(p_new.mean()), "p_old": float(p_old.mean()),
                      "new_minus_old": {"mean": 100 * d.mean(), "low": 100 * np.quantile(d, M.Q_LOW),
                                        "high": 100 * np.quantile(d, M.Q_HIGH), "p_positive": float((d > 0).mean())}}
        posteriors["behaviour"] = bidata
    return b, out_bc


def _object_responses(data: Path) -> pd.DataFrame | None:
    """The object-level answers of the base models and of every M1' (``data/object_level`` and
    ``data/object_level_trained``), with the option that shows the behaviour of every stance item (from the
    task datasets), for the original's scoring (:func:`analysis.self_prediction.original.object_responses`); None when
    neither folder exists (tables made without the object-level stages)."""
    paths = [p for d in ("object_level", "object_level_trained") for p in sorted((data / d).glob("*.parquet"))]
    if not paths:
        return None
    tables = [read_stage_table(p, p.parent.name, OBJECT_LEVEL) for p in paths]
    stance = {t for df in tables for t in df.loc[df["property"] == "ethical_stance", "task"]}
    return original.object_responses(tables, original.stance_targets(stance))


def run_analysis(profile: Profile, data: Path = DATA, out: Path = OUT) -> dict:
    """Read the stage tables under ``data``, fit, gate, and write everything under ``out``; returns the metrics."""
    n_boot, seed = profile.analysis.bootstrap, profile.seed
    meta_u = read_stage_table(data / "meta_untrained.parquet", "meta_untrained", META_UNTRAINED)
    meta_t = read_stage_table(data / "meta_trained.parquet", "meta_trained", META_TRAINED)
    cal = read_stage_table(data / "calibration.parquet", "calibration", CALIBRATION)
    bc_path = data / "behaviour_change.parquet"
    bc = read_stage_table(bc_path, "behaviour_change", BEHAVIOUR_CHANGE) if bc_path.exists() else None

    if not (meta_t["ground_truth"] == "trained").any():  # the schema guarantees the column
        raise DataError(f"{data / 'meta_trained.parquet'} has no rows scored against the self-trained model "
                         "(ground_truth = 'trained'); re-run the meta_trained stage (`dvc repro meta_trained`)")
    pred = tidy.predictions(meta_u, meta_t, ground_truth="trained")
    full = pred[~pred["scaling"].astype(bool)]
    trained = tidy.with_cell(tidy.main_trained(pred))  # with its cell: every model of experiment 1 groups by it
    if trained["kind"].nunique() < 2:
        raise DataError("the trained predictions need both self- and cross-predictors; run the finetune and "
                         "meta_trained stages with at least two models")
    tables, metrics, numbers, posteriors = {}, {}, {}, {}

    # raw accuracies (Wilson), compliance and the mode baseline, one definition each
    tables["accuracy"] = tidy.accuracy_table(pred, ["condition", "run", "seed", "n_examples", "scaling", "kind",
                                                    "predictor", "target", "object_model", "task", "property"])
    tables["accuracy_by_target"] = tidy.accuracy_table(full, ["condition", "kind", "predictor", "target"])
    main_t = tidy.with_schema(meta_t)
    objects = pd.concat([tidy.with_schema(meta_u), main_t[main_t["ground_truth"] == "trained"]], ignore_index=True)
    tables["compliance"] = tidy.compliance_table(objects, pred)
    # the data-scaling sweep runs on the first finetune seed only (finetune.seeds[0], in the order given):
    # compare it with that seed's full runs; the seed is read from the sweep's own rows
    done = pred[pred["condition"] == "trained"]
    sweep = done[done["scaling"].astype(bool)]
    sweep_sizes = sweep["n_examples"].dropna().unique()  # the sizes trained: one at or above a target's pairs is not
    first = done[done["seed"] == (sweep["seed"].iloc[0] if len(sweep) else done["seed"].min())]
    tables["scaling"] = tidy.accuracy_table(first, ["target", "predictor", "kind", "n_examples"])
    metrics["scaling"] = [{"target": r.target, "predictor": r.predictor, "n_examples": int(r.n_examples), "n": int(r.n),
                           "accuracy": 100 * r.accuracy, "low": 100 * r.wilson_low, "high": 100 * r.wilson_high,
                           "mode_baseline": 100 * r.mode_baseline}
                          for r in tables["scaling"].itertuples() if r.kind == "cross"]
    # how many pairs each full run trained on (the n_examples each prediction row carries from its run's entry
    # in runs.json): self and cross may differ where a self-trained target has fewer compliant training
    # answers than the cap
    full_runs = done[~done["scaling"].astype(bool)].drop_duplicates(["kind", "predictor", "target", "seed"])
    metrics["pairs"] = [{"kind": r.kind, "predictor": r.predictor, "target": r.target, "seed": int(r.seed),
                         "n_examples": int(r.n_examples)}
                        for r in full_runs.sort_values(["kind", "target", "predictor", "seed"]).itertuples()]
    tables["accuracy_by_seed"], metrics["seeds"] = _seed_spread(trained)
    (tables["sensitivity_ground_truth"], tables["sensitivity_by_property"],
     metrics["sensitivity_ground_truth"]) = _sensitivity(meta_u, meta_t, _object_responses(data), n_boot, seed)

    # 1. self-prediction advantage (trained, held-out tasks), scored against M1'
    groups = _advantage_groups(trained)
    adv = _advantage(trained, profile, groups)
    posteriors["advantage"] = adv["idata"]
    tables["advantage"] = adv["effects"]
    tables["advantage_directions"] = adv["directions"]
    tables["prior_cell_accuracy"] = adv["prior_cells"]
    tables["ppc_advantage"] = adv["ppc"]
    tables["ppc_units"] = M.unit_level_check(adv["idata"], adv["data"], seed=profile.seed)
    metrics["advantage"] = {**adv["metrics"],
                            "by_target": _by_target(adv["effects"]),
                            "groups": groups, "fixed": adv["data"].fixed + ["self x target"],
                            "tasks": sorted(trained["task"].unique()),  # held-out tasks with scored trained rows
                            # and per target: a target whose M1' never complied on a task has no rows there
                            "tasks_by_target": {t: sorted(g["task"].unique()) for t, g in trained.groupby("target")},
                            "diagnostics": adv["diagnostics"], "prior_predictive_accuracy": adv["prior"],
                            "ppc_coverage": float(adv["ppc"]["covered"].mean()),
                            "ppc_units": {r.statistic: {"observed": r.observed, "low": r.rep_low, "high": r.rep_high,
                                                        "p_value": r.p_value, "covered": bool(r.covered)}
                                          for r in tables["ppc_units"].itertuples()}}
    # prior sensitivity: the advantage model refitted with every prior scale halved and doubled
    tables["prior_sensitivity"], metrics["prior_sensitivity"] = _prior_sensitivity(profile, adv)

    # non-compliance sensitivity: compliance and accuracy given compliance as two parts (analysis.self_prediction.compliance)
    comp = _compliance(trained, profile, groups)
    tables["compliance_sensitivity"] = comp.pop("raw")
    metrics["compliance_sensitivity"] = comp
    items = tidy.with_item(trained)  # every frequentist interval resamples or clusters items
    metrics["advantage_frequentist"] = {
        "bootstrap": freq.cluster_bootstrap_difference(items, cluster="item", n_boot=n_boot, seed=seed),
        "glm_cluster": freq.glm_cluster(items, cluster="item"),
        # the same estimand as delta: directions weighted equally, conditional on the observed cells
        "paired": freq.paired_directions(items, cluster="item"),
        "glm_cell": freq.glm_cell_fixed(items, cluster="item")}

    # the mode baseline as a third arm of one model (analysis.self_prediction.baseline): self - mode, cross - mode and
    # self - cross with joint uncertainty, pooled, per target and per cell, and the normalised lift
    arms = _arms(trained, profile, groups)
    posteriors["baseline"] = arms["idata"]
    tables["arms"] = arms["effects"]
    tables["vs_baseline"] = arms["vs_baseline"]
    metrics["vs_baseline"] = arms["rows"]
    metrics["baseline_arms"] = arms["metrics"]

    # 2. the effect of self-prediction training (self-predictors before, against the base model, vs after,
    # against M1')
    selfp = full[full["kind"] == "self"].assign(trained=lambda d: (d["condition"] == "trained").astype(int))
    # M1' can lose every scorable answer of a cell (e.g. no multiple-choice letter at all), so the effect is
    # averaged over the cells with scored answers before and after; the crude pooled difference beside it
    train = _contrast(selfp, "trained", "training effect", profile, 1, [["target"]], common_cells=True)
    posteriors["training"] = train["idata"]
    tables["training"] = train["effects"]
    tables["ppc_training"] = train["ppc"]
    # raw accuracy and mode baseline per target on the same cells as the effect (the figure's dashes)
    left_out = set(train["support"].get("cells_left_out", []))
    both = tidy.with_cell(selfp)
    tables["training_common"] = tidy.accuracy_table(both[~both[CELL].astype(str).isin(left_out)],
                                                    ["condition", "target"])
    metrics["training_effect"] = {
        "overall": _summary(train["effects"].iloc[0]),
        "by_target": _by_target(train["effects"]),
        "diagnostics": train["diagnostics"],
        "support": train["support"],
        # crude: every scored answer of each arm, so it also counts the change in which cells can be scored
        "bootstrap": freq.cluster_bootstrap_difference(tidy.with_item(selfp), x="trained", cluster="item",
                                                       n_boot=n_boot, seed=seed)}

    # 3. calibration: the paper's MAD (per target and pooled, raw and renormalised, paired self - cross),
    # and the hierarchical model on item-level error
    cal_tables, metrics["calibration"], pairs = calibration_tables(cal, n_boot, seed)
    tables.update(cal_tables)
    # the mean probability a predictor puts outside the options, which the paper's MAD counts as error
    outside = cal.dropna(subset=["p_outside"]).groupby(["condition", "kind"])["p_outside"].mean()
    metrics["calibration"]["p_outside"] = {f"{c}_{k}": 100 * float(v) for (c, k), v in outside.items()}
    errors = tidy.calibration_errors(cal)
    terr = errors[errors["condition"] == "trained"]
    for kind, g in terr.groupby("kind"):  # the raw total-variation error, descriptive
        metrics["calibration"][f"total_variation_{kind}"] = 100 * float(g["error"].mean())
    if terr["kind"].nunique() == 2:
        # item-level calibration by a proper scoring rule: the multinomial log-score of the sampled counts
        terr = tidy.with_cell(terr)
        ldata = M.ContrastData(terr.assign(n=1), "self", GROUPS + [CELL], "unit")
        lmodel, scale = M.log_score_model(terr, GROUPS + [CELL])
        name = "calibration log-score"
        lidata, metrics["calibration"]["diagnostics"] = M.sample_gated(lmodel, _settings(profile, 2, name), name)
        leff = M.log_score_effects(lidata, ldata, scale, [[], ["target"]])
        posteriors["calibration"] = lidata
        tables["calibration_log_score"] = leff
        o = leff.iloc[0]
        rope_ls = profile.analysis.rope_log_score
        metrics["calibration"]["log_score"] = {
            "self_minus_cross": {"mean": o["mean"], "low": o["low"], "high": o["high"], "p_positive": o["p_positive"],
                                 "verdict": verdict(o["low"], o["high"], rope_ls)},
            "self": {"mean": o["self"], "low": o["self_low"], "high": o["self_high"]},
            "cross": {"mean": o["cross"], "low": o["cross_low"], "high": o["cross_high"]},
            "by_target": {r.target: {"mean": r.mean, "low": r.low, "high": r.high,
                                     "verdict": verdict(r.low, r.high, rope_ls)}
                          for r in leff[leff["by"] == "target"].itertuples()},
            "rope": rope_ls, "items": int(len(terr) // 2)}

    # 4. behaviour change: does the prediction track the new behaviour or the old one, beyond the baselines?
    if bc is not None:
        metrics["behaviour"], tidy_bc = _behaviour(bc, profile, tables, posteriors)
    else:
        tidy_bc = pd.DataFrame()

    metrics["compliance"] = {f"{r.condition}_{r.predictor}_on_{r.target}": r.compliance
                             for r in tables["accuracy_by_target"].itertuples()}
    metrics["run"] = _precision(meta_u, meta_t)
    # the sweep's sizes that were trained (a size at or above a target's number of pairs is skipped)
    metrics["run"]["scaling_sizes"] = sorted(int(x) for x in sweep_sizes)
    numbers = _numbers(metrics, tables, pred)

    # publish: only now that every model passed the gate
    for name, df in {"predictions": pred, "calibration_pairs": pairs, "calibration_errors": errors,
                     "behaviour": tidy_bc}.items():
        atomic_write_parquet(out / "tidy" / f"{name}.parquet", df)
    for name, df in tables.items():
        atomic_write_parquet(out / "tables" / f"{name}.parquet", df)
    for name, idata in posteriors.items():
        _write_netcdf(idata, out / "posterior" / f"{name}.nc")
    atomic_write_json(out / "metrics.json", jsonable(metrics))
    atomic_write_json(out / "numbers.json", jsonable(numbers))
    atomic_write_json(out / "headline.json", jsonable(headline_numbers(metrics)))
    return metrics


def headline_numbers(metrics: dict) -> dict:
    """A dozen headline numbers, flat (DVC's ``metrics``: ``dvc exp show`` and ``dvc metrics diff`` put runs
    side by side on these; ``metrics.json`` keeps every number with its interval and diagnostics). A result
    the run did not produce (no behaviour-change stage, too few cells for an interval) is left out."""
    def at(*path):
        d = metrics
        for key in path:
            d = d.get(key) if isinstance(d, dict) else None
        return d

    sources = {
        "delta": (("advantage", "overall"), ("mean", "low", "high")),
        "gamma": (("advantage", "gamma"), ("mean",)),
        "training_effect": (("training_effect", "overall"), ("mean", "low", "high")),
        "mad_self_minus_cross": (("calibration", "mad_difference", "pooled"), ("difference", "low", "high")),
        "log_score_self_minus_cross": (("calibration", "log_score", "self_minus_cross"), ("mean", "low", "high")),
        "behaviour_share_new": (("behaviour", "share_new"), ("share",)),
        "behaviour_new_vs_mode": (("behaviour", "vs_mode", "new"), ("estimate",)),
    }
    out: dict = {}
    for name, (path, keys) in sources.items():
        d = at(*path)
        for i, k in enumerate(keys):
            if isinstance(d, dict) and isinstance(d.get(k), (int, float)):
                out[name if i == 0 else f"{name}_{k}"] = d[k]
    if isinstance(at("advantage", "p_every_direction"), (int, float)):
        out["p_every_direction"] = metrics["advantage"]["p_every_direction"]
    return out


def _precision(meta_u: pd.DataFrame, meta_t: pd.DataFrame) -> dict:
    """The dtype each predictor's inference ran at, and the mixed precision and base weights' dtype of its
    training runs, as ``auto`` resolved them on the hardware (read from the stage tables; absent in tables of older runs)."""
    run = {}
    if "dtype" in meta_u:
        run["dtype"] = {p: "/".join(sorted(g.unique())) for p, g in meta_u.groupby("predictor")["dtype"]}
    for col in ("mixed_precision", "base_dtype"):  # base_dtype: the frozen weights' dtype while training
        if col in meta_t:
            run[col] = {p: "/".join(sorted(g.dropna().unique())) or "n/a" for p, g in meta_t.groupby("predictor")[col]}
    return run


def _numbers(metrics: dict, tables: dict, pred: pd.DataFrame) -> dict:
    """The flat map the manuscript quotes. Accuracies and differences are in percentage points."""
    n = {}

    def put(prefix, d):
        for k, v in d.items():
            if isinstance(v, dict):
                put(f"{prefix}_{k}", v)
            elif isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool):
                n[f"{prefix}_{k}"] = float(v)

    a = metrics["advantage"]
    put("advantage", {k: v for k, v in a.items()
                      if k in ("overall", "by_target", "trial_weighted", "equal_task", "equal_cell", "gamma", "delta_logit", "new_task",
                               "new_run", "new_task_and_run", "gamma_logit", "p_every_direction", "rope")})
    for d in a["directions"]:
        put(f"advantage_direction_{d['target']}_from_{d['cross_predictor']}",
            {k: d[k] for k in ("mean", "low", "high", "p_positive")})
    put("advantage_bootstrap", {k: 100 * metrics["advantage_frequentist"]["bootstrap"][k] for k in ("estimate", "low", "high")})
    for name in ("paired", "glm_cell"):
        put(f"advantage_{name}_delta", {k: 100 * v for k, v in metrics["advantage_frequentist"][name]["delta"].items()})
    g = metrics["advantage_frequentist"]["glm_cluster"]
    put("advantage_glm", {"ame": 100 * g["ame"], "ame_low": 100 * g["ame_low"], "ame_high": 100 * g["ame_high"],
                          "log_odds": g["log_odds"], "p_value": g["p_value"]})
    te = metrics["training_effect"]
    put("training", {k: v for k, v in te.items() if k in ("overall", "by_target")})
    put("training_crude", {k: 100 * te["bootstrap"][k] for k in ("estimate", "low", "high")})
    if te.get("support"):
        sup = te["support"]
        n["n_training_cells"], n["n_training_cells_total"] = sup["cells"], sup["cells_total"]
        n["n_training_left_out_untrained"] = sup["trials_left_out"]["0"]
        n["n_training_left_out_trained"] = sup["trials_left_out"]["1"]
        n["n_training_trials_untrained"], n["n_training_trials_trained"] = sup["trials"]["0"], sup["trials"]["1"]
    put("calibration", {k: v for k, v in metrics["calibration"].items() if k != "diagnostics"})
    n["prior_sensitivity_delta_spread"] = metrics["prior_sensitivity"]["delta_spread"]
    cs = metrics["compliance_sensitivity"]
    put("compliance_sensitivity", {k: v for k, v in cs.items() if k not in ("diagnostics", "raw")})
    put("arms", metrics["baseline_arms"]["pooled"])
    n["n_arms_cells"] = metrics["baseline_arms"]["cells"]
    n["n_arms_cells_both_not_above"] = metrics["baseline_arms"]["cells_both_not_above"]
    for r in metrics["vs_baseline"]:
        n[f"lift_{r['kind']}_{r['target']}"] = r["lift"]
    put("sensitivity", metrics["sensitivity_ground_truth"])
    put("seeds", metrics["seeds"]["by_target"])
    n["n_seeds"] = len(metrics["seeds"]["seeds"])
    if "behaviour" in metrics:
        put("behaviour", {k: v for k, v in metrics["behaviour"].items() if k != "diagnostics"})
    for r in tables["accuracy_by_target"].itertuples():
        key = f"accuracy_{r.condition}_{r.predictor}_on_{r.target}"
        n[key] = 100 * r.accuracy
        n[f"{key}_low"], n[f"{key}_high"] = 100 * r.wilson_low, 100 * r.wilson_high
        n[f"compliance_{r.condition}_{r.predictor}_on_{r.target}"] = 100 * r.compliance
        n[f"mode_baseline_{r.condition}_{r.predictor}_on_{r.target}"] = 100 * r.mode_baseline
    for r in tables["vs_baseline"].itertuples():
        n[f"vs_baseline_{r.kind}_{r.target}"] = 100 * r.difference
        n[f"vs_baseline_{r.kind}_{r.target}_low"], n[f"vs_baseline_{r.kind}_{r.target}_high"] = 100 * r.low, 100 * r.high
    n["n_test_items"] = int(pred.drop_duplicates(["task", "item_id"]).shape[0])
    n["n_observations_trained"] = int((pred["condition"] == "trained").sum())
    return n


def jsonable(obj):
    """``obj`` as JSON can hold it: numpy numbers as Python ones, NaN and infinities as null (JSON has no
    NaN). ``metrics.json`` is ``jsonable(metrics)``."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


#: InferenceData attributes that record when a fit ran and how long it took: dropped before writing, so that a
#: posterior file's bytes depend on the draws alone and a rerun leaves dvc.lock unchanged
TIME_ATTRS = ("created_at", "sampling_time")


def _write_netcdf(idata, path: Path) -> None:
    for group in idata.groups():
        for key in TIME_ATTRS:
            getattr(idata, group).attrs.pop(key, None)
    with atomic_path(path) as tmp:
        idata.to_netcdf(str(tmp))


def main(profile: Profile) -> None:
    metrics = run_analysis(profile)
    a = metrics["advantage"]["overall"]
    print(f"self-prediction advantage: {a['mean']:+.1f} points [{a['low']:+.1f}, {a['high']:+.1f}], "
          f"P(> 0) = {a['p_positive']:.2f}")
    print(json.dumps(metrics["calibration"].get("mad", {}), indent=1))
