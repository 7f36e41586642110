"""The ``analysis`` DVC stage: tidy tables, Bayesian fits behind a convergence gate, frequentist cross-checks,
and the outputs every figure and the manuscript read.

Outputs under ``data/analysis/``:

* ``tidy/predictions.parquet``, ``tidy/calibration_pairs.parquet``, ``tidy/calibration_errors.parquet``,
  ``tidy/behaviour.parquet`` -- the long tables (:mod:`analysis.tidy`);
* ``tables/*.parquet`` -- raw accuracies with Wilson intervals, posterior summaries (advantage by group,
  training effect, accuracy against the mode baseline), calibration curves and MAD, behaviour tracking,
  posterior-predictive checks;
* ``posterior/<model>.nc`` -- the posterior draws (netcdf);
* ``metrics.json`` -- headline numbers with intervals and diagnostics (``dvc metrics show``);
* ``numbers.json`` -- a flat ``name -> value`` map the manuscript quotes (no number is typed by hand).

Nothing is written until every model has passed the gate.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from reproduce.config import REPO_ROOT, Profile
from reproduce.io import atomic_path, atomic_write_json, atomic_write_parquet

from . import frequentist as freq
from . import models as M
from . import tidy

DATA = REPO_ROOT / "data"
OUT = DATA / "analysis"
GROUPS = ["target", "task", "property"]
# plus one random intercept and self slope per target x task x property cell: the crossed main effects alone
# leave cell-level deviations (a target that always answers "A" makes among_a_or_c trivially predictable and
# among_b_or_d impossible) that the posterior-predictive check flags
CELL = "cell"


def _with_cell(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(**{CELL: df["target"] + "|" + df["task"] + "|" + df["property"]})
MAD_BINS = 10


# ------------------------------------------------------------------------------------------ calibration
def mad(object_prob, meta_prob, bins: int = MAD_BINS) -> float:
    """The paper's calibration statistic: sort the points by object-level probability, split them into
    ``bins`` equal-frequency bins, and average |mean object probability - mean meta probability| over the
    bins; x100."""
    o, m = np.asarray(object_prob, float), np.asarray(meta_prob, float)
    if len(o) < bins:
        raise ValueError(f"MAD needs at least {bins} points, got {len(o)}")
    parts = np.array_split(np.argsort(o, kind="stable"), bins)
    return 100.0 * float(np.mean([abs(o[p].mean() - m[p].mean()) for p in parts]))


def calibration_curve(object_prob, meta_prob, bins: int = MAD_BINS) -> pd.DataFrame:
    o, m = np.asarray(object_prob, float), np.asarray(meta_prob, float)
    parts = np.array_split(np.argsort(o, kind="stable"), bins)
    return pd.DataFrame({"bin": range(bins), "object_prob": [o[p].mean() for p in parts],
                         "meta_prob": [m[p].mean() for p in parts], "n": [len(p) for p in parts]})


def mad_bootstrap(pairs: pd.DataFrame, n_boot: int, seed: int, bins: int = MAD_BINS) -> dict:
    """MAD with a 95% percentile interval from resampling answer units (an item's top behaviours move together)."""
    units = pairs["target"] + "/" + pairs["task"] + "/" + pairs["item_id"]
    codes, uniq = pd.factorize(units, sort=True)
    members = [np.flatnonzero(codes == j) for j in range(len(uniq))]
    o, m = pairs["object_prob"].to_numpy(float), pairs["meta_prob"].to_numpy(float)
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(n_boot):
        idx = np.concatenate([members[j] for j in rng.integers(0, len(uniq), len(uniq))])
        if len(idx) >= bins:
            boot.append(mad(o[idx], m[idx], bins))
    return {"mad": mad(o, m, bins), "low": float(np.quantile(boot, 0.025)), "high": float(np.quantile(boot, 0.975)),
            "points": len(o), "items": len(uniq), "n_boot": n_boot}


# ------------------------------------------------------------------------------------------------ stage
def _settings(profile: Profile, seed_offset: int) -> M.SamplerSettings:
    a = profile.analysis
    return M.SamplerSettings(sampler=a.sampler, draws=a.draws, tune=a.tune, chains=a.chains,
                             target_accept=a.target_accept, seed=profile.seed + seed_offset)


def _read(path: Path, stage: str) -> pd.DataFrame:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; run the {stage} stage first (`dvc repro {stage}`)")
    return pd.read_parquet(path)


def _contrast(rows: pd.DataFrame, x: str, name: str, profile: Profile, seed_offset: int, by: list[list[str]]):
    """Fit the contrast model on ``rows``, gate it, and summarise the marginal effect overall and ``by``."""
    data = M.to_cells(_with_cell(rows), x, GROUPS + [CELL], "unit")
    model = M.contrast_model(data)
    prior = M.prior_predictive_accuracy(model, data, seed=profile.seed)
    idata = M.sample(model, _settings(profile, seed_offset))
    diag = M.check_convergence(idata, name)
    probs = M.cell_probabilities(idata, data)
    effects = [M.marginal_effects(idata, data, probs=probs).assign(by="overall")]
    effects += [M.marginal_effects(idata, data, b, probs=probs).assign(by="+".join(b)) for b in by]
    ppc = M.posterior_predictive_check(idata, data, seed=profile.seed)
    return {"data": data, "idata": idata, "probs": probs, "diagnostics": diag, "prior": prior,
            "effects": pd.concat(effects, ignore_index=True), "ppc": ppc}


def _summary(row: pd.Series, scale: float = 100.0) -> dict:
    return {"mean": scale * row["mean"], "low": scale * row["low"], "high": scale * row["high"],
            "p_positive": row["p_positive"]}


def _by_target(effects: pd.DataFrame) -> dict:
    return {r["target"]: _summary(r) for _, r in effects[effects["by"] == "target"].iterrows()}


def run_analysis(profile: Profile, data: Path = DATA, out: Path = OUT) -> dict:
    """Read the stage tables under ``data``, fit, gate, and write everything under ``out``; returns the metrics."""
    n_boot, seed = profile.analysis.bootstrap, profile.seed
    meta_u = _read(data / "meta_untrained.parquet", "meta_untrained")
    meta_t = _read(data / "meta_trained.parquet", "meta_trained")
    cal = _read(data / "calibration.parquet", "calibration")
    bc_path = data / "behaviour_change.parquet"
    bc = pd.read_parquet(bc_path) if bc_path.exists() else None

    pred = tidy.predictions(meta_u, meta_t)
    full = pred[~pred["scaling"].astype(bool)]
    trained = full[full["condition"] == "trained"]
    if trained["kind"].nunique() < 2:
        raise ValueError("the trained predictions need both self- and cross-predictors; run the finetune and "
                         "meta_trained stages with at least two models")
    tables, metrics, numbers, posteriors = {}, {}, {}, {}

    # raw accuracies (Wilson), compliance and the mode baseline, one definition each
    tables["accuracy"] = tidy.accuracy_table(pred, ["condition", "run", "n_examples", "scaling", "kind", "predictor",
                                                    "target", "task", "property"])
    tables["accuracy_by_target"] = tidy.accuracy_table(full, ["condition", "kind", "predictor", "target"])
    tables["compliance"] = tidy.compliance_table(meta_u, pred)
    tables["scaling"] = tidy.accuracy_table(pred[pred["condition"] == "trained"],
                                            ["target", "predictor", "kind", "n_examples"])

    # 1. self-prediction advantage (trained, held-out tasks)
    adv = _contrast(trained, "self", "self-prediction advantage", profile, 0,
                    [["target"], ["task"], ["property"], ["target", "task"], ["target", "property"]])
    posteriors["advantage"] = adv["idata"]
    tables["advantage"] = adv["effects"]
    tables["ppc_advantage"] = adv["ppc"]
    overall = adv["effects"].iloc[0]
    metrics["advantage"] = {"overall": _summary(overall),
                            "by_target": _by_target(adv["effects"]),
                            "diagnostics": adv["diagnostics"], "prior_predictive_accuracy": adv["prior"],
                            "ppc_coverage": float(adv["ppc"]["covered"].mean())}
    metrics["advantage_frequentist"] = {
        "bootstrap": freq.cluster_bootstrap_difference(trained, n_boot=n_boot, seed=seed),
        "glm_cluster": freq.glm_cluster(trained)}

    # accuracy against the mode baseline, from the same posterior
    rows = []
    for level, kind in ((1, "self"), (0, "cross")):
        draws = M.accuracy_draws(adv["idata"], adv["data"], level, ["target"], probs=adv["probs"])
        for (target,), acc in draws.items():
            base = trained[(trained["target"] == target) & (trained["kind"] == kind)]["mode_correct"].mean()
            d = acc - base
            rows.append({"target": target, "kind": kind, "accuracy": acc.mean(), "mode_baseline": base,
                         "difference": d.mean(), "low": np.quantile(d, M.Q_LOW), "high": np.quantile(d, M.Q_HIGH),
                         "p_above_baseline": float((d > 0).mean())})
    tables["vs_baseline"] = pd.DataFrame(rows)

    # 2. the effect of self-prediction training (self-predictors before vs after)
    selfp = full[full["kind"] == "self"].assign(trained=lambda d: (d["condition"] == "trained").astype(int))
    train = _contrast(selfp, "trained", "training effect", profile, 1, [["target"]])
    posteriors["training"] = train["idata"]
    tables["training"] = train["effects"]
    tables["ppc_training"] = train["ppc"]
    metrics["training_effect"] = {
        "overall": _summary(train["effects"].iloc[0]),
        "by_target": _by_target(train["effects"]),
        "diagnostics": train["diagnostics"],
        "bootstrap": freq.cluster_bootstrap_difference(selfp, x="trained", n_boot=n_boot, seed=seed)}

    # 3. calibration: MAD (paper) per condition x kind, and the hierarchical model on item-level error
    pairs = tidy.calibration_pairs(cal)
    errors = tidy.calibration_errors(cal)
    mads, curves = [], []
    for (condition, kind), g in pairs.groupby(["condition", "kind"], sort=True):
        if len(g) >= MAD_BINS:
            mads.append({"condition": condition, "kind": kind, **mad_bootstrap(g, n_boot, seed)})
            curves.append(calibration_curve(g["object_prob"], g["meta_prob"]).assign(condition=condition, kind=kind))
    tables["mad"] = pd.DataFrame(mads)
    tables["calibration_curve"] = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    metrics["calibration"] = {"mad": {f"{r.condition}_{r.kind}": {"mad": r.mad, "low": r.low, "high": r.high}
                                      for r in tables["mad"].itertuples()}}
    terr = errors[errors["condition"] == "trained"]
    if terr["kind"].nunique() == 2:
        terr = _with_cell(terr)
        cdata = M.ContrastData(terr.assign(n=1), "self", GROUPS + [CELL], "unit")
        cmodel = M.calibration_model(terr, GROUPS + [CELL])
        cidata = M.sample(cmodel, _settings(profile, 2))
        metrics["calibration"]["diagnostics"] = M.check_convergence(cidata, "calibration")
        cprobs = M.cell_probabilities(cidata, cdata)
        ceff = pd.concat([M.marginal_effects(cidata, cdata, probs=cprobs).assign(by="overall"),
                          M.marginal_effects(cidata, cdata, ["target"], probs=cprobs).assign(by="target")],
                         ignore_index=True)
        posteriors["calibration"] = cidata
        tables["calibration_error"] = ceff
        metrics["calibration"]["error_self_minus_cross"] = _summary(ceff.iloc[0])
        metrics["calibration"]["error_self"] = 100 * float(ceff.iloc[0]["accuracy_1"])
        metrics["calibration"]["error_cross"] = 100 * float(ceff.iloc[0]["accuracy_0"])

    # 4. behaviour change: does the prediction track the new behaviour or the old one?
    if bc is not None:
        out_bc = tidy.behaviour_outcomes(bc)
        counts = (out_bc.groupby(["model", "property", "outcome"]).size().unstack("outcome")
                  .reindex(columns=M.OUTCOMES, fill_value=0).fillna(0).astype(int).reset_index())
        tables["behaviour_counts"] = counts
        b = {"evaluated": int(len(bc)), "changed": int(len(out_bc)),
             "changed_share": float(bc["changed"].mean()) if len(bc) else 0.0}
        for o in M.OUTCOMES:
            k = int((out_bc["outcome"] == o).sum())
            lo, hi = freq.wilson(k, len(out_bc)) if len(out_bc) else (np.nan, np.nan)
            b[f"share_{o}"] = {"share": k / len(out_bc) if len(out_bc) else np.nan, "low": lo, "high": hi, "k": k}
        if len(counts) and counts[M.OUTCOMES[:2]].to_numpy().sum() > 0:
            bmodel = M.behaviour_model(counts)
            bidata = M.sample(bmodel, _settings(profile, 3))
            b["diagnostics"] = M.check_convergence(bidata, "behaviour tracking")
            p = bidata.posterior["p"].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
            w = counts[M.OUTCOMES].sum(axis=1).to_numpy(float)
            w = w / w.sum()
            p_new, p_old = np.einsum("c,cs->s", w, p[:, 0]), np.einsum("c,cs->s", w, p[:, 1])
            d = p_new - p_old
            b["model"] = {"p_new": float(p_new.mean()), "p_old": float(p_old.mean()),
                          "new_minus_old": {"mean": 100 * d.mean(), "low": 100 * np.quantile(d, M.Q_LOW),
                                            "high": 100 * np.quantile(d, M.Q_HIGH), "p_positive": float((d > 0).mean())}}
            posteriors["behaviour"] = bidata
        metrics["behaviour"] = b
        tidy_bc = out_bc
    else:
        tidy_bc = pd.DataFrame()

    metrics["compliance"] = {f"{r.condition}_{r.predictor}_on_{r.target}": r.compliance
                             for r in tables["accuracy_by_target"].itertuples()}
    metrics["run"] = _precision(meta_u, meta_t)
    numbers = _numbers(metrics, tables, pred)

    # publish: only now that every model passed the gate
    for name, df in {"predictions": pred, "calibration_pairs": pairs, "calibration_errors": errors,
                     "behaviour": tidy_bc}.items():
        atomic_write_parquet(out / "tidy" / f"{name}.parquet", df)
    for name, df in tables.items():
        atomic_write_parquet(out / "tables" / f"{name}.parquet", df)
    for name, idata in posteriors.items():
        _write_netcdf(idata, out / "posterior" / f"{name}.nc")
    atomic_write_json(out / "metrics.json", _jsonable(metrics))
    atomic_write_json(out / "numbers.json", _jsonable(numbers))
    return metrics


def _precision(meta_u: pd.DataFrame, meta_t: pd.DataFrame) -> dict:
    """The dtype each predictor's inference ran at and the mixed precision of its training runs, as ``auto``
    resolved them on the hardware (read from the stage tables; absent in tables of older runs)."""
    run = {}
    if "dtype" in meta_u:
        run["dtype"] = {p: "/".join(sorted(g.unique())) for p, g in meta_u.groupby("predictor")["dtype"]}
    if "mixed_precision" in meta_t:
        run["mixed_precision"] = {p: "/".join(sorted(g.dropna().unique())) or "n/a"
                                  for p, g in meta_t.groupby("predictor")["mixed_precision"]}
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

    put("advantage", {k: v for k, v in metrics["advantage"].items() if k in ("overall", "by_target")})
    put("advantage_bootstrap", {k: 100 * metrics["advantage_frequentist"]["bootstrap"][k] for k in ("estimate", "low", "high")})
    g = metrics["advantage_frequentist"]["glm_cluster"]
    put("advantage_glm", {"ame": 100 * g["ame"], "ame_low": 100 * g["ame_low"], "ame_high": 100 * g["ame_high"],
                          "log_odds": g["log_odds"], "p_value": g["p_value"]})
    put("training", {k: v for k, v in metrics["training_effect"].items() if k in ("overall", "by_target")})
    put("calibration", {k: v for k, v in metrics["calibration"].items() if k != "diagnostics"})
    if "behaviour" in metrics:
        put("behaviour", {k: v for k, v in metrics["behaviour"].items() if k != "diagnostics"})
    for r in tables["accuracy_by_target"].itertuples():
        key = f"accuracy_{r.condition}_{r.predictor}_on_{r.target}"
        n[key] = 100 * r.accuracy
        n[f"{key}_low"], n[f"{key}_high"] = 100 * r.wilson_low, 100 * r.wilson_high
        n[f"compliance_{r.condition}_{r.predictor}_on_{r.target}"] = 100 * r.compliance
        n[f"mode_baseline_{r.target}"] = 100 * r.mode_baseline
    for r in tables["vs_baseline"].itertuples():
        n[f"vs_baseline_{r.kind}_{r.target}"] = 100 * r.difference
        n[f"vs_baseline_{r.kind}_{r.target}_low"], n[f"vs_baseline_{r.kind}_{r.target}_high"] = 100 * r.low, 100 * r.high
    n["n_test_items"] = int(pred.drop_duplicates(["task", "item_id"]).shape[0])
    n["n_observations_trained"] = int((pred["condition"] == "trained").sum())
    return n


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _write_netcdf(idata, path: Path) -> None:
    with atomic_path(path) as tmp:
        idata.to_netcdf(str(tmp))


def main(profile: Profile) -> None:
    metrics = run_analysis(profile)
    a = metrics["advantage"]["overall"]
    print(f"self-prediction advantage: {a['mean']:+.1f} points [{a['low']:+.1f}, {a['high']:+.1f}], "
          f"P(> 0) = {a['p_positive']:.2f}")
    print(json.dumps(metrics["calibration"].get("mad", {}), indent=1))
