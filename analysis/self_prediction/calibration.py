"""Experiment 2's calibration statistics: the original study's mean absolute difference (MAD) between binned
object-level probabilities and meta-level probabilities, its item-cluster bootstrap, and the tables per target,
per cell and pooled."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.self_prediction.frequentist as freq
import analysis.self_prediction.tidy as tidy
from analysis.constants import MAD_BINS


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
    thousands of resamples; ``tests/self_prediction/test_calibration_mad.py`` checks it against ``pd.qcut``."""
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
    ``tests/self_prediction/test_calibration_mad.py`` compares the two). NaN for a resample of fewer than ``bins`` points."""
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


