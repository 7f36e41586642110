"""The Bayesian fits of experiments 1-3 that the ``analysis`` stage runs, each behind the convergence gate: the
self-prediction advantage, the mode-baseline arms, the run scale, prior sensitivity and compliance."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from reproduce.config import Profile

import analysis.self_prediction.baseline as B
import analysis.self_prediction.compliance as C
import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.population as population
from analysis.self_prediction.population import advantage_groups  # noqa: F401  (the stage reads it here)
import analysis.self_prediction.predictive as P
import analysis.self_prediction.tidy as tidy
from analysis.bayes import sampler_settings
from analysis.verdicts import verdict

GROUPS = ["target", "task", "property"]
# plus one random intercept and self slope per target x task x property cell: the crossed main effects alone
# leave cell-level deviations (a target that always answers "A" makes among_a_or_c trivially predictable and
# among_b_or_d impossible) that the posterior-predictive check flags
CELL = tidy.CELL


# ------------------------------------------------------------------------------------------------ stage
#: the fits that start at ``analysis.target_accept_retry``: their funnel-shaped posteriors diverged at 0.9 in the
#: reference runs' ``default`` tables (62 and 5-8 divergent transitions), so a first sampling at target_accept
#: would usually be thrown away; the methods name them whatever the run
CAREFUL = ("training effect", "calibration log-score")


def _settings(profile: Profile, seed_offset: int, name: str | None = None) -> M.SamplerSettings:
    """The profile's NUTS settings for the fit ``name``, seeded ``profile.seed + seed_offset``: starting at the
    retry's target acceptance for the fits in :data:`CAREFUL`."""
    return sampler_settings(profile, seed_offset, careful=name in CAREFUL)


def _fit(data: M.ContrastData, model, name: str, profile: Profile, seed_offset: int, by: list[list[str]],
         probabilities) -> dict:
    """Sample ``model``, gate it, and summarise the marginal effect overall and ``by`` (a list of tables) from
    the cell probabilities ``probabilities(idata, data)`` returns beside any other quantities of the fit
    (``quantities``); with the prior- and posterior-predictive checks."""
    prior = P.prior_predictive_accuracy(model, data, seed=profile.seed)
    idata, diag = M.sample_gated(model, _settings(profile, seed_offset, name), name)
    probs, quantities = probabilities(idata, data)
    effects = [M.marginal_effects(idata, data, probs=probs).assign(by="overall")]
    effects += [M.marginal_effects(idata, data, b, probs=probs).assign(by="+".join(b)) for b in by]
    ppc = P.posterior_predictive_check(idata, data, seed=profile.seed)
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
    cells = P.prior_cell_accuracy(model, data, seed=profile.seed)
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
    # every verdict of experiment 1's rules, as the null simulation takes them (population.rule_verdicts)
    rules = population.rule_verdicts(fit["idata"], data, rope, profile.seed, q=q)
    directions = [{"target": t, "cross_predictor": p, **s} for (t, p), s in rules["directions"].items()]
    metrics = {
        "overall": {**delta, "verdict": verdict(delta["low"], delta["high"], rope)},
        "delta_logit": M.summarise_draws(q["delta_logit"], 1.0),
        "new_task": M.summarise_draws(M.new_task_delta(fit["idata"], data, seed=profile.seed)),
        "trial_weighted": _summary(effects[0].iloc[0]),
        "equal_task": M.summarise_draws(np.mean(per_task, axis=0)),
        "equal_cell": M.summarise_draws(np.mean(per_cell, axis=0)),
        "directions": directions,
        "p_every_direction": rules["p_every_direction"],
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
    # the headline: the verdicts on a new held-out task (and a new finetuning run, with several seeds), overall
    # and in every direction; the verdicts on the observed tasks and runs are the secondary, conditional ones
    key, new = population.headline_key(data.groups), population.headline_factors(data.groups)
    for d in directions:
        s = dict(rules["population_directions"][(d["target"], d["cross_predictor"])])
        v = s.pop("verdict")
        d.update({f"population_{k}": x for k, x in s.items()}, population_verdict=v)
    metrics["population"] = {**{k: metrics[key][k] for k in ("mean", "low", "high", "p_positive", "verdict")},
                             "estimand": key, "new": list(new),
                             "p_every_direction": rules["p_every_direction_population"]}
    # (metrics[key] and rules["population"] are the same draws: the same estimand at the same seed)
    metrics["headline"] = rules["headline"]
    metrics["headline_conditional"] = rules["headline_conditional"]
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
    scale ``tau`` of ``object_model``, each as posterior median, mean and 94% interval beside its prior's
    (half-Student-t or half-normal) scale and 95th percentile and the posterior share above that percentile. With two or three runs
    per target the data say little about a scale, so whether the posterior sits inside the prior or in its
    tail is worth reporting next to the new-run intervals that depend on it."""
    from analysis.self_prediction.priors import scale_quantile

    out = {}
    for name, scale in (("sigma", priors.sigma), ("tau", priors.tau)):
        d = idata.posterior[name].sel(factor="object_model").to_numpy().ravel()
        q95 = scale_quantile(0.95, scale, priors.nu)
        out[name] = {**M.summarise_draws(d, 1.0), "median": float(np.median(d)), "prior_scale": float(scale),
                     "prior": f"HalfStudentT({priors.nu:g}, {scale:g})" if priors.nu else f"HalfNormal({scale:g})",
                     "prior_q95": q95, "p_above_prior_q95": float((d > q95).mean())}
    return out


#: the factors of :func:`_prior_sensitivity`'s refits of one variance component at a time
COMPONENT_FACTORS = (0.5, 2.0)


def _prior_sensitivity(profile: Profile, adv: dict) -> tuple[pd.DataFrame, dict]:
    """The advantage model refitted (each gated like the main fit) with every prior scale multiplied by each
    factor of ``analysis.prior_sensitivity`` (component ``all``), and with one variance component's scale
    (:data:`analysis.self_prediction.priors.VARIANCE_COMPONENTS`: intercept scales ``sigma``, self-slope scales
    ``tau``, the answer unit's ``unit`` and the unit x arm ``pair``) halved and doubled with the others at their
    defaults (:data:`COMPONENT_FACTORS`): per refit delta, the new-task advantage, the headline estimand (a new
    task, and a new finetuning run with several finetune seeds), gamma (two models), P(every direction) and the
    verdicts; the main fit as factor 1. With several finetune seeds also the new-run advantage, whose interval
    rests on the run factor's scales and so on their priors. ``len(factors) + 2 * 4`` refits."""
    rope = profile.analysis.rope
    new = population.headline_factors(adv["data"].groups)

    def row(component, factor, delta, new_task, head, p_every, gamma, diag):
        r = {"component": component, "prior_scale": factor,
             **{f"delta_{k}": delta[k] for k in ("mean", "low", "high", "p_positive")},
             **{f"new_task_{k}": new_task[k] for k in ("mean", "low", "high", "p_positive")},
             **{f"headline_{k}": head[k] for k in ("mean", "low", "high", "p_positive")},
             "p_every_direction": p_every, "verdict": verdict(delta["low"], delta["high"], rope),
             "headline_verdict": verdict(head["low"], head["high"], rope),
             "r_hat_max": diag["r_hat_max"], "divergences": diag["divergences"], "draws": diag["draws"],
             "sampled_twice": "refit" in diag, "target_accept": diag["target_accept"],
             "diverged": "diverged" in diag}
        if gamma:
            r.update({f"gamma_{k}": gamma[k] for k in ("mean", "low", "high", "p_positive")})
        return r

    a = adv["metrics"]  # the main fit, summarised once by _advantage
    runs = "new_run" in a
    head = a[population.headline_key(adv["data"].groups)]  # (the same draws: same estimand, same seed)
    rows = [row("all", 1.0, a["overall"], a["new_task"], head, a["p_every_direction"], a.get("gamma"),
                adv["diagnostics"])]
    new_run = {1.0: a["new_run"]} if runs else {}
    refits = [("all", f, adv["data"].priors.scaled(f)) for f in profile.analysis.prior_sensitivity]
    refits += [(c, f, adv["data"].priors.scaled_component(c, f)) for c in M.VARIANCE_COMPONENTS
               for f in COMPONENT_FACTORS if c != "pair" or adv["data"].pair]
    for i, (component, factor, priors) in enumerate(refits):
        data = replace(adv["data"], priors=priors)
        label = "priors" if component == "all" else f"{component} prior"
        idata, diag = M.sample_gated(M.advantage_model(data), _settings(profile, 10 + i),
                                     f"self-prediction advantage ({label} x {factor:g})")
        q = M.advantage_quantities(idata, data)
        rows.append(row(component, factor, M.summarise_draws(q["delta"]),
                        M.summarise_draws(M.new_task_delta(idata, data, seed=profile.seed)),
                        M.summarise_draws(M.new_task_delta(idata, data, new=new, seed=profile.seed)),
                        population.p_every_direction(q["directions"], rope),
                        M.summarise_draws(q["gamma"]) if "gamma" in q else None, diag))
        if runs and component == "all":
            nr = M.summarise_draws(M.new_task_delta(idata, data, new=("object_model",), seed=profile.seed))
            new_run[float(factor)] = {**nr, "verdict": verdict(nr["low"], nr["high"], rope)}
    table = pd.DataFrame(rows)
    table = table.assign(_main=table["component"] != "all").sort_values(["_main", "component", "prior_scale"]) \
        .drop(columns="_main").reset_index(drop=True)
    every = table[table["component"] == "all"]
    spread = float(every["delta_mean"].max() - every["delta_mean"].min())
    by_factor = {f"{r.prior_scale:g}": {"delta": r.delta_mean, "low": r.delta_low, "high": r.delta_high,
                                        "verdict": r.verdict} for r in every.itertuples()}
    for f, nr in new_run.items():
        by_factor[f"{f:g}"]["new_run"] = {k: nr[k] for k in ("mean", "low", "high", "verdict")}
    by_component = {}
    for r in table[table["component"] != "all"].itertuples():
        by_component.setdefault(r.component, {})[f"{r.prior_scale:g}"] = {
            "delta": {"mean": r.delta_mean, "low": r.delta_low, "high": r.delta_high, "verdict": r.verdict},
            "headline": {"mean": r.headline_mean, "low": r.headline_low, "high": r.headline_high,
                         "verdict": r.headline_verdict}}
    main = table.iloc[0]
    return table, {"factors": [float(f) for f in every["prior_scale"]], "delta_spread": spread,
                   "verdicts_agree": bool(every["verdict"].nunique() == 1), "by_factor": by_factor,
                   "component_factors": list(COMPONENT_FACTORS), "by_component": by_component,
                   "headline_new": list(new),
                   "headline": {"mean": main.headline_mean, "low": main.headline_low, "high": main.headline_high,
                                "verdict": main.headline_verdict},
                   "headline_verdicts_agree": bool(table["headline_verdict"].nunique() == 1),
                   "refits": len(refits)}


def _compliance(trained: pd.DataFrame, profile: Profile, groups: list[str]) -> dict:
    """:func:`analysis.self_prediction.compliance.compliance_sensitivity` with the stage's sampler settings and gate; each
    part's diagnostics under ``diagnostics``, and a verdict (ROPE) on the identified estimand, the advantage at
    equal predicting skill on compliant answers (``delta_compliant``); the trial-weighted advantage at equal
    compliance mixes the models' predicting skill in and gets none."""
    diagnostics = {}

    def fit(data, model, name):
        idata, diagnostics[name] = M.sample_gated(model, _settings(profile, 5 + len(diagnostics)), name)
        return idata

    out = C.compliance_sensitivity(trained, groups, fit)
    if diagnostics:
        out["diagnostics"] = diagnostics
        if "delta_compliant" in out:
            e = out["delta_compliant"]
            out["verdict"] = verdict(e["low"], e["high"], profile.analysis.rope)
    return out


def _summary(row: pd.Series, scale: float = 100.0) -> dict:
    return {"mean": scale * row["mean"], "low": scale * row["low"], "high": scale * row["high"],
            "p_positive": row["p_positive"]}


def _by_target(effects: pd.DataFrame) -> dict:
    return {r["target"]: _summary(r) for _, r in effects[effects["by"] == "target"].iterrows()}


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
