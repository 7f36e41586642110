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
  tracking beside its leave-one-out mode baselines, with the permutation null and the match rates' excess over
  it (``behaviour_excess``; and as the original computes it: ``behaviour_original``), posterior-predictive
  checks;
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

import analysis.self_prediction.frequentist as freq
import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.predictive as P
import analysis.self_prediction.original as original
import analysis.self_prediction.policy as PO
import analysis.self_prediction.sibling as S
import analysis.self_prediction.tidy as tidy
from analysis.self_prediction.calibration import calibration_tables
from analysis.self_prediction.fits import (CELL, GROUPS, _advantage, _arms, _by_target, _compliance, _contrast,
                                           _prior_sensitivity, _seed_spread, _settings, _summary, advantage_groups)
from analysis.verdicts import verdict

DATA = REPO_ROOT / "data"
OUT = DATA / "analysis"


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
    """Experiment 3 on the changed items: outcome shares, P(prediction = new / old) beside their leave-one-out
    mode baselines, a labelled variant computed as the original computes it (compliant predictions only, modes
    recomputed on the scored items and pooled over tasks; :func:`analysis.self_prediction.tidy.behaviour_original`),
    the permutation null, the match rates' excess over their permutation expectation (the tracking
    contrasts, 0 for a predictor unrelated to both behaviours), and the hierarchical multinomial model."""
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
    items = tidy.with_item(out_bc)  # the bootstraps below resample items
    excess = freq.permutation_excess(items, n_boot=n_boot, seed=seed, cluster="item")
    tables["behaviour_tracking"], tables["behaviour_permutation"], tables["behaviour_excess"] = track, perm, excess
    b["tracking"] = {r["model"]: {"p_new": 100 * r["p_new"], "loo_mode_new": 100 * r["loo_mode_new"],
                                  "n_loo_new": int(r["n_loo_new"]),
                                  "p_old": 100 * r["p_old"], "loo_mode_old": 100 * r["loo_mode_old"],
                                  "n_loo_old": int(r["n_loo_old"]),
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
    b["vs_loo_mode"] = {k: {kk: vv if kk == "n" else 100 * vv for kk, vv in v.items()}
                        for k, v in freq.paired_vs_mode(items, n_boot=n_boot, seed=seed, cluster="item").items()}
    pools = {side: out_bc[f"loo_mode_{side}_pool"].value_counts() for side in ("new", "old")}
    b["loo_mode_pool"] = {f"{side}_{k}_n": int(pools[side].get(k, 0)) for side in ("new", "old")
                          for k in ("cell", "tasks", "none")}
    # the tracking contrasts: each match rate minus its expectation under the permutation null
    b["excess"] = {f"{r.model}_{r.statistic}": {"estimate": 100 * r.estimate, "low": 100 * r.low,
                                                 "high": 100 * r.high, "observed": 100 * r.observed,
                                                 "expected": 100 * r.expected, "n": int(r.n)}
                   for r in excess.itertuples()}
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
    task datasets), for the original's scoring (:func:`analysis.self_prediction.original.object_responses`); None unless
    both folders hold tables (tables made without the object-level stages)."""
    folders = ("object_level", "object_level_trained")
    if not all(any((data / d).glob("*.parquet")) for d in folders):  # the original's scoring reads both
        return None
    paths = [p for d in folders for p in sorted((data / d).glob("*.parquet"))]
    tables = [read_stage_table(p, p.parent.name, OBJECT_LEVEL) for p in paths]
    stance = {t for df in tables for t in df.loc[df["property"] == "ethical_stance", "task"]}
    return original.object_responses(tables, original.stance_targets(stance))


def _base_objects(data: Path) -> pd.DataFrame | None:
    """The base models' object-level rows (``data/object_level``), for behavioural similarity; None without them."""
    paths = sorted((data / "object_level").glob("*.parquet"))
    if not paths:
        return None
    return pd.concat([read_stage_table(p, "object_level", OBJECT_LEVEL) for p in paths], ignore_index=True)


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
    meta_all = meta_t  # with the sibling predictors' rows, which only the sibling section reads
    meta_t = meta_t[meta_t["kind"] != "sibling"].reset_index(drop=True)
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
    groups = advantage_groups(trained)
    adv = _advantage(trained, profile, groups)
    posteriors["advantage"] = adv["idata"]
    tables["advantage"] = adv["effects"]
    tables["advantage_directions"] = adv["directions"]
    tables["prior_cell_accuracy"] = adv["prior_cells"]
    tables["ppc_advantage"] = adv["ppc"]
    tables["ppc_units"] = P.unit_level_check(adv["idata"], adv["data"], seed=profile.seed)
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
    # the sibling control: self minus sibling, sibling minus cross (analysis.self_prediction.sibling), and
    # behavioural similarity beside each arm's accuracy
    arm_rows = S.arm_rows(tidy.predictions(meta_u, meta_all, ground_truth="trained", sibling=True))
    if S.has_sibling(arm_rows):
        sib = S.analyse(arm_rows, _base_objects(data), profile, groups, metrics["advantage"])
        metrics["sibling"] = sib["metrics"]
        tables.update(sib["tables"])
        posteriors.update(sib["posteriors"])
    else:
        arm_rows = arm_rows.iloc[0:0]

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

    # 5. experiment 4: self-reports of the changed policy beside the behaviour they report (and an observer's)
    policy = _policy_tables(data)
    tidy_policy = pd.DataFrame()
    if policy is not None and len(policy[0]):
        pol = PO.analyse(*policy, profile)
        metrics["policy"] = {**pol["metrics"], "table": pol["table"].to_dict("records")}
        tables["policy"], tidy_policy = pol["table"], pol["shifts"]

    metrics["compliance"] = {f"{r.condition}_{r.predictor}_on_{r.target}": r.compliance
                             for r in tables["accuracy_by_target"].itertuples()}
    metrics["run"] = _precision(meta_u, meta_t)
    # the sweep's sizes that were trained (a size at or above a target's number of pairs is skipped)
    metrics["run"]["scaling_sizes"] = sorted(int(x) for x in sweep_sizes)
    numbers = _numbers(metrics, tables, pred)

    # publish: only now that every model passed the gate
    for name, df in {"predictions": pred, "calibration_pairs": pairs, "calibration_errors": errors,
                     "behaviour": tidy_bc, "sibling_arms": arm_rows, "policy_shifts": tidy_policy}.items():
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
        "advantage_population": (("advantage", "population"), ("mean", "low", "high")),
        "delta": (("advantage", "overall"), ("mean", "low", "high")),
        "gamma": (("advantage", "gamma"), ("mean",)),
        "training_effect": (("training_effect", "overall"), ("mean", "low", "high")),
        "mad_self_minus_cross": (("calibration", "mad_difference", "pooled"), ("difference", "low", "high")),
        "log_score_self_minus_cross": (("calibration", "log_score", "self_minus_cross"), ("mean", "low", "high")),
        "behaviour_share_new": (("behaviour", "share_new"), ("share",)),
        "behaviour_excess_new_minus_old": (("behaviour", "excess", "pooled_excess_new_minus_old"),
                                           ("estimate", "low", "high")),
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
                               "new_run", "new_task_and_run", "gamma_logit", "p_every_direction", "rope",
                               "population")})
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


def _policy_tables(data: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Experiment 4's two tables (``data/policy_reports/``), or None where the folder is absent (the analysis of a
    pipeline without experiment 4, as in the synthetic tests; ``dvc repro`` always has it)."""
    from reproduce.self_prediction.policy_reports import POLICY_BEHAVIOUR, POLICY_REPORTS

    folder = data / "policy_reports"
    if not folder.exists():
        return None
    return (read_stage_table(folder / "reports.parquet", "policy_reports", POLICY_REPORTS),
            read_stage_table(folder / "behaviour.parquet", "policy_reports", POLICY_BEHAVIOUR))


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
