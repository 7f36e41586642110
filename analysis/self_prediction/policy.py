"""Experiment 4: do a model's reports of its own tendency move with the behaviour that experiment 3 changed, and
more than an observer's reports, which are inferred from the changed model's answers?

Inputs (``data/policy_reports/``, :mod:`reproduce.self_prediction.policy_reports`): each report is the
probability of the ``tendency`` option over A and B, asked in both option orders; each behaviour row is the
probability of the ethical_stance option of one evaluated item, over A and B. Everything is on the log-odds scale:

- a question's report ``L = mean over the two orders of logit P(tendency)`` (a bias towards the letter A adds to
  one order's log-odds and subtracts from the other's, so it cancels), and its shift ``d = L_after - L_before``;
- an item's behaviour shift ``b = logit p_after - logit p_before``; a (model, task) unit's shift ``Delta`` is
  estimated by the mean of its items' ``b``, with that mean's standard error (at least :data:`SE_FLOOR`).

For each reporter ``r`` (self, observer), the questions' shifts are regressed on their unit's behaviour shift::

    d_i = alpha[r] + beta[r] * Delta[u_i] + e_i,    e_i ~ Normal(0, sigma[r]^2)

``beta[r]`` is how many log-odds a report moves per log-odds of behaviour change (1: one for one; 0: not at all).
The posterior is drawn exactly, by Monte Carlo, with no sampler: each draw takes the units' behaviour shifts from
their sampling distributions, ``Delta[u] ~ Normal(mean, standard error)`` (the same draw for both reporters, so
their difference is paired), and then ``(alpha, beta, sigma)`` from the regression's posterior under the
reference prior (flat in ``alpha``, ``beta`` and ``log sigma``: ``sigma^2`` scaled inverse chi-square with
``n - 2`` degrees of freedom, the coefficients Normal around least squares). The reports do not inform
``Delta`` (a cut): a joint model in PyMC let them do so, and on the committed run its posterior had a thin
curved ridge (the observer's reports barely move, so ``beta * Delta`` is pinned while ``Delta`` is not) where
NUTS diverged at target acceptance 0.999 on one build of the tables and not on another.

Because the reports do not inform ``Delta``, and ``Delta`` is known only up to its standard error, each slope is
diluted towards 0 (regression dilution) by about the *reliability* of the units' shifts, the share of their
spread that is not measurement error: ``max(0, 1 - mean(se^2) / var(mean shifts))``, reported beside the slopes.

The questions of a unit are treated as exchangeable replicates of its report shift: a unit whose questions agree
with each other but not with the line makes the interval of ``beta`` too narrow, so the manuscript prints the
per-unit table beside the slopes. The estimands are ``beta[self]``, ``beta[observer]`` and their difference,
reported with their 94% intervals and no verdict word: their false-positive rates have not been simulated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import analysis.bayes as B

REPORTERS = ("self", "observer")
SEED_OFFSET = 50
#: Monte Carlo draws of the posterior
DRAWS = 4000
#: probabilities are kept this far from 0 and 1 before their log-odds are taken
CLIP = 1e-4
#: the smallest standard error of a unit's behaviour shift (log-odds): items that all shift alike still leave
#: this much uncertainty about the unit's shift
SE_FLOOR = 0.05


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


def report_shifts(levels: pd.DataFrame) -> pd.DataFrame:
    """One row per model x reporter x task x question: ``d = L_after - L_before`` (``levels``:
    :func:`report_levels`)."""
    w = levels.pivot_table(index=["model", "reporter", "task", "question_id"], columns="phase",
                                           values="L").reset_index()
    return w.assign(d=w["after"] - w["before"])[["model", "reporter", "task", "question_id", "d"]]


def behaviour_shifts(behaviour: pd.DataFrame) -> pd.DataFrame:
    """One row per model x task x evaluated item: ``b = logit p_after - logit p_before`` of the stance option."""
    w = behaviour.assign(l=_logit(behaviour["p_stance"])).pivot_table(
        index=["model", "task", "item_id"], columns="phase", values="l").reset_index()
    return w.assign(b=w["after"] - w["before"])[["model", "task", "item_id", "b"]]


def unit_table(levels: pd.DataFrame, behaviour: pd.DataFrame) -> pd.DataFrame:
    """The table the manuscript prints, one row per model x task: the behaviour before and after (mean
    probability of the stance option; greedy answers that pick it, of those that pick A or B), and each
    reporter's mean probability of the tendency before and after (the two orders' mean log-odds, back on the
    probability scale, averaged over questions), with the mean mass on neither letter."""
    rows = []
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


def regression_draws(d: np.ndarray, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """One posterior draw per row of ``x`` (draws x observations) of ``(alpha, beta, sigma)`` in
    ``d = alpha + beta * x + Normal(0, sigma^2)`` under the reference prior: ``sigma^2 = (n - 2) s^2 / chi2(n - 2)``
    and the coefficients Normal around least squares with covariance ``sigma^2 (X'X)^-1``."""
    k, n = x.shape
    if n < 3:
        raise ValueError(f"a reporter's regression needs at least 3 report shifts, got {n}")
    sx, sxx = x.sum(1), (x * x).sum(1)
    sy, sxy = d.sum(), (x * d).sum(1)
    det = n * sxx - sx * sx
    if (det <= 0).any():
        raise ValueError("every unit's behaviour shift is the same: the slope is not identified")
    beta_hat = (n * sxy - sx * sy) / det
    alpha_hat = (sy - beta_hat * sx) / n
    resid = d[None, :] - alpha_hat[:, None] - beta_hat[:, None] * x
    s2 = (resid ** 2).sum(1) / (n - 2)
    sigma2 = (n - 2) * s2 / rng.chisquare(n - 2, size=k)
    # (X'X)^-1 = [[sxx, -sx], [-sx, n]] / det; its Cholesky factor, per draw
    v_aa, v_ab, v_bb = sxx / det, -sx / det, n / det
    l11 = np.sqrt(v_aa)
    l21 = v_ab / l11
    l22 = np.sqrt(np.maximum(v_bb - l21 ** 2, 0.0))
    z1, z2 = rng.standard_normal(k), rng.standard_normal(k)
    sd = np.sqrt(sigma2)
    alpha = alpha_hat + sd * l11 * z1
    beta = beta_hat + sd * (l21 * z1 + l22 * z2)
    return alpha, beta, sd


def unit_shifts(acts: pd.DataFrame, units: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's behaviour shift: the mean of its items' ``b`` and that mean's standard error (at least
    :data:`SE_FLOOR`)."""
    g = acts.groupby(["model", "task"])["b"]
    mean, sd, n = g.mean(), g.std(ddof=1), g.size()
    if (n.reindex(units) < 2).any():
        raise ValueError("every (model, task) unit needs at least two evaluated items for its behaviour shift's "
                         "standard error; raise behaviour_change.eval_items")
    se = np.maximum((sd / np.sqrt(n)).reindex(units).to_numpy(), SE_FLOOR)
    return mean.reindex(units).to_numpy(), se


def reliability(mean: np.ndarray, se: np.ndarray) -> float:
    """The share of the units' spread in behaviour shift that is not measurement error:
    ``max(0, 1 - mean(se^2) / var(mean))`` (0 where every unit has the same mean)."""
    spread = float(np.var(mean, ddof=1)) if len(mean) > 1 else 0.0
    return 0.0 if spread <= 0 else float(max(0.0, 1.0 - float(np.mean(se ** 2)) / spread))


def analyse(reports: pd.DataFrame, behaviour: pd.DataFrame, profile, draws: int = DRAWS) -> dict:
    """The exact Monte Carlo posterior of the module docstring; returns ``{"table", "shifts", "metrics"}``.
    ``metrics`` holds each reporter's slope ``beta`` and intercept ``alpha`` (log-odds, 94% interval), the
    difference of the slopes, the units' behaviour shifts ``delta`` (mean and standard error), the counts and how
    the posterior was drawn."""
    levels = report_levels(reports)
    shifts, acts = report_shifts(levels), behaviour_shifts(behaviour)
    units = sorted(set(zip(acts["model"], acts["task"])))
    missing = sorted(set(zip(shifts["model"], shifts["task"])) - set(units))
    if missing:
        raise ValueError(f"reports on {missing} have no behaviour rows")
    mean, se = unit_shifts(acts, units)
    rng = np.random.default_rng([profile.seed, SEED_OFFSET])
    delta = mean[None, :] + se[None, :] * rng.standard_normal((draws, len(units)))
    index = {u: i for i, u in enumerate(units)}
    out = {}
    for r in REPORTERS:
        rows = shifts[shifts["reporter"] == r]
        x = delta[:, [index[(m, t)] for m, t in zip(rows["model"], rows["task"])]]
        out[r] = regression_draws(rows["d"].to_numpy(float), x, rng)
    metrics = {
        "beta": {r: B.summarise_draws(out[r][1], 1.0) for r in REPORTERS},
        "alpha": {r: B.summarise_draws(out[r][0], 1.0) for r in REPORTERS},
        "beta_difference": B.summarise_draws(out["self"][1] - out["observer"][1], 1.0),
        "delta": {f"{m}/{t}": {"mean": float(mean[i]), "se": float(se[i])} for i, (m, t) in enumerate(units)},
        "reliability": reliability(mean, se),
        "units": len(units), "questions": int(shifts.groupby("reporter")["question_id"].count().min()),
        "items": len(acts), "posterior": {"method": "exact Monte Carlo (reference prior; behaviour shifts cut)",
                                          "draws": draws},
    }
    return {"table": unit_table(levels, behaviour), "shifts": shifts, "metrics": metrics}
