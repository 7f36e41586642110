"""Experiment 4: do a model's reports of its own tendency move with the behaviour that experiment 3 changed, and
more than an observer's reports, which are inferred from the changed model's answers?

Inputs (``data/policy_reports/``, :mod:`reproduce.self_prediction.policy_reports`): each report is the
probability of the ``tendency`` option over A and B, asked in both option orders; each behaviour row is the
probability of the ethical_stance option of one evaluated item, over A and B. Everything is on the log-odds scale:

- a question's report ``L = mean over the two orders of logit P(tendency)`` (a bias towards the letter A adds to
  one order's log-odds and subtracts from the other's, so it cancels), and its shift ``d = L_after - L_before``;
- an item's behaviour shift ``b = logit p_after - logit p_before``.

The model (PyMC, behind the convergence gate), with ``u`` a (model, task) unit and ``r`` the reporter (self or
observer)::

    Delta[u] ~ Normal(mean of the unit's b, standard error of that mean)
    d_i ~ Normal(alpha[r] + beta[r] * Delta[u_i], sigma[r])
    alpha[r] ~ Normal(0, 1), beta[r] ~ Normal(0, 1), sigma[r] ~ HalfNormal(1)

``beta[r]`` is how many log-odds a reporter's answer moves per log-odds of behaviour change (1: one for one; 0:
not at all). The behaviour shift enters with its own uncertainty, as a regression with a covariate measured
with known error: ``Delta[u]`` is centred on the unit's mean item shift with that mean's standard error (at least
:data:`SE_FLOOR`). Fitting the behaviour's items jointly instead let the reports pull ``Delta`` and its item
spread away from the items, and left two modes on simulated data. The questions of a unit are treated as
exchangeable replicates of its report shift: the model has no unit-level departure from the line. With a handful
of units such a term (tried as ``tau[r] * z[r, u]``, centred and non-centred) left the sampler with divergences
on the committed run; without it, a unit whose questions agree with each other but not with the line makes the
interval of ``beta`` too narrow, so the manuscript prints the per-unit table beside the slopes. The estimands are ``beta[self]``, ``beta[observer]`` and their difference. They are reported with their 94%
intervals and no verdict word: their false-positive rates have not been simulated."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

import analysis.bayes as B

REPORTERS = ("self", "observer")
SEED_OFFSET = 50
#: probabilities are kept this far from 0 and 1 before their log-odds are taken
CLIP = 1e-4
#: the smallest standard error of a unit's behaviour shift (log-odds): items that all shift alike still leave
#: this much uncertainty about the unit's shift
SE_FLOOR = 0.05
#: NUTS's target acceptance for this model (at least; the profile's may be higher): a slope times a behaviour
#: shift that is known only roughly leaves a thin curved ridge where a reporter's answers barely move, and at 0.99
#: the committed run's fit still diverged there (2 transitions in 4,000); the model is small, so smaller steps
#: cost seconds
TARGET_ACCEPT = 0.999


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), CLIP, 1 - CLIP)
    return np.log(p / (1 - p))


def report_levels(reports: pd.DataFrame) -> pd.DataFrame:
    """One row per model x reporter x phase x task x question: ``L``, the mean over the two option orders of
    logit P(tendency), and ``p_outside``, the mean mass on neither letter."""
    r = reports.assign(L=_logit(reports["p_tendency"]))
    keys = ["model", "reporter", "phase", "task", "question_id"]
    n = r.groupby(keys)["order"].nunique()
    if (n != 2).any():
        raise ValueError(f"every question needs both option orders; {int((n != 2).sum())} have one")
    return r.groupby(keys, as_index=False).agg(L=("L", "mean"), p_outside=("p_outside", "mean"))


def report_shifts(reports: pd.DataFrame) -> pd.DataFrame:
    """One row per model x reporter x task x question: ``d = L_after - L_before``."""
    w = report_levels(reports).pivot_table(index=["model", "reporter", "task", "question_id"], columns="phase",
                                           values="L").reset_index()
    return w.assign(d=w["after"] - w["before"])[["model", "reporter", "task", "question_id", "d"]]


def behaviour_shifts(behaviour: pd.DataFrame) -> pd.DataFrame:
    """One row per model x task x evaluated item: ``b = logit p_after - logit p_before`` of the stance option."""
    w = behaviour.assign(l=_logit(behaviour["p_stance"])).pivot_table(
        index=["model", "task", "item_id"], columns="phase", values="l").reset_index()
    return w.assign(b=w["after"] - w["before"])[["model", "task", "item_id", "b"]]


def unit_table(reports: pd.DataFrame, behaviour: pd.DataFrame) -> pd.DataFrame:
    """The table the manuscript prints, one row per model x task: the behaviour before and after (mean
    probability of the stance option; greedy answers that pick it, of those that pick A or B), and each
    reporter's mean probability of the tendency before and after (the two orders' mean log-odds, back on the
    probability scale, averaged over questions), with the mean mass on neither letter."""
    rows = []
    levels = report_levels(reports)
    for (model, task), g in behaviour.groupby(["model", "task"], sort=True):
        row = {"model": model, "task": task, "items": int(g["item_id"].nunique())}
        for phase in ("before", "after"):
            ph = g[g["phase"] == phase]
            valid = ph["stance_value"].notna()
            row[f"behaviour_{phase}"] = float(ph["p_stance"].mean())
            row[f"greedy_{phase}_k"] = int((ph["stance_value"] == "true").sum())
            row[f"greedy_{phase}_n"] = int(valid.sum())
            row[f"behaviour_outside_{phase}"] = float(ph["p_outside"].mean())
            for reporter in REPORTERS:
                lv = levels[(levels["model"] == model) & (levels["task"] == task) & (levels["reporter"] == reporter)
                            & (levels["phase"] == phase)]
                row[f"{reporter}_{phase}"] = float(B.sigmoid(lv["L"]).mean()) if len(lv) else np.nan
                row[f"{reporter}_outside_{phase}"] = float(lv["p_outside"].mean()) if len(lv) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def policy_model(shifts: pd.DataFrame, acts: pd.DataFrame, units: list[tuple[str, str]]):
    """The PyMC model of the module docstring (``shifts``: :func:`report_shifts`, ``acts``:
    :func:`behaviour_shifts`)."""
    import pymc as pm

    index = {u: i for i, u in enumerate(units)}
    per_unit = acts.assign(u=[index[(m, t)] for m, t in zip(acts["model"], acts["task"])]).groupby("u")["b"]
    b_mean = per_unit.mean().reindex(range(len(units))).to_numpy()
    b_se = (per_unit.std(ddof=1) / np.sqrt(per_unit.size())).reindex(range(len(units))).to_numpy()
    if not np.isfinite(b_se).all():
        raise ValueError("every (model, task) unit needs at least two evaluated items for its behaviour shift's "
                         "standard error; raise behaviour_change.eval_items")
    b_se = np.maximum(b_se, SE_FLOOR)
    d_unit = np.array([index[(m, t)] for m, t in zip(shifts["model"], shifts["task"])])
    d_rep = np.array([REPORTERS.index(r) for r in shifts["reporter"]])
    coords = {"unit": [f"{m}/{t}" for m, t in units], "reporter": list(REPORTERS)}
    with pm.Model(coords=coords) as model:
        delta = pm.Deterministic("delta", b_mean + b_se * pm.Normal("delta_z", 0.0, 1.0, dims="unit"), dims="unit")
        alpha = pm.Normal("alpha", 0.0, 1.0, dims="reporter")
        beta = pm.Normal("beta", 0.0, 1.0, dims="reporter")
        sigma = pm.HalfNormal("sigma", 1.0, dims="reporter")
        pm.Normal("d", alpha[d_rep] + beta[d_rep] * delta[d_unit], sigma[d_rep], observed=shifts["d"].to_numpy())
    return model


def analyse(reports: pd.DataFrame, behaviour: pd.DataFrame, profile) -> dict:
    """Fit the model through the gate; returns ``{"table", "shifts", "metrics", "idata"}``. ``metrics`` holds
    each reporter's slope ``beta`` and intercept ``alpha`` (log-odds, 94% interval), the difference of the
    slopes, the units' behaviour shifts ``delta``, the counts and the fit's diagnostics."""
    shifts, acts = report_shifts(reports), behaviour_shifts(behaviour)
    units = sorted(set(zip(acts["model"], acts["task"])))
    missing = sorted(set(zip(shifts["model"], shifts["task"])) - set(units))
    if missing:
        raise ValueError(f"reports on {missing} have no behaviour rows")
    settings = B.sampler_settings(profile, SEED_OFFSET, careful=True)
    settings = replace(settings, target_accept=max(settings.target_accept, TARGET_ACCEPT),
                       target_accept_retry=max(settings.target_accept_retry or 0.0, TARGET_ACCEPT))
    idata, diag = B.sample_gated(policy_model(shifts, acts, units), settings, "policy reports")
    beta = B.draws(idata, "beta")
    alpha = B.draws(idata, "alpha")
    delta = B.draws(idata, "delta")
    metrics = {
        "beta": {r: B.summarise_draws(beta[i], 1.0) for i, r in enumerate(REPORTERS)},
        "alpha": {r: B.summarise_draws(alpha[i], 1.0) for i, r in enumerate(REPORTERS)},
        "beta_difference": B.summarise_draws(beta[0] - beta[1], 1.0),
        "delta": {f"{m}/{t}": B.summarise_draws(delta[i], 1.0) for i, (m, t) in enumerate(units)},
        "units": len(units), "questions": int(shifts.groupby("reporter")["question_id"].count().min()),
        "items": len(acts), "diagnostics": diag,
    }
    return {"table": unit_table(reports, behaviour), "shifts": shifts, "metrics": metrics, "idata": idata}
