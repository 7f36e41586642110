"""Prior and posterior predictive checks of the self-prediction advantage model
(:mod:`analysis.self_prediction.hierarchical`): what the priors imply for accuracies before the data, and whether
replicated data reproduce the observed cells and the answer-level statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.constants import PRIOR_CELL_EXTREME, Q_HIGH, Q_LOW
from analysis.self_prediction.hierarchical import ContrastData, _linear_draws, _sigmoid, cell_probabilities


def unit_level_check(idata, data: ContrastData, seed: int = 0, max_draws: int = 1000) -> pd.DataFrame:
    """Posterior-predictive checks below the model's cells, which the cell-level check cannot see (each cell
    has its own intercept and slope, so replicated cell totals match observed ones almost by construction).
    Every observation is replicated from its own linear predictor (``max_draws`` posterior draws); then:

    * ``all_correct_<arm>`` / ``none_correct_<arm>``: the share of answer units whose properties the
      self- (or cross-) predictor gets all right, or all wrong: how strongly an answer's properties go
      together, which the single unit intercept has to carry;
    * ``disagreement``: the share of an answer's properties that the self- and a cross-predictor score
      differently (one right, one wrong): the dependence between the two arms on the same answer.

    One row per statistic: ``observed``, the replicated mean and 94% interval, and ``p_value`` = P(replicated
    >= observed). Units with a single property are left out of the unit shares."""
    c = data.cells.reset_index(drop=True)
    if not data.unit:
        raise ValueError("the unit-level check needs answer units")
    eta, slope = _linear_draws(idata, data, c)
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(eta.shape[1], size=min(max_draws, eta.shape[1]), replace=False))
    p = _sigmoid(eta[:, take] + slope[:, take] * c[data.x].to_numpy(float)[:, None])
    n = c["n"].to_numpy()
    rep = rng.binomial(n[:, None], p)
    obs = c["k"].to_numpy()[:, None]
    stats = {}
    for arm, level in (("self", 1), ("cross", 0)):
        m = (c[data.x] == level).to_numpy()
        codes, _ = pd.factorize(c.loc[m, data.unit], sort=True)
        trials = np.bincount(codes, n[m])
        keep = trials > 1
        for name, y in (("observed", obs[m]), ("replicated", rep[m])):
            k = np.stack([np.bincount(codes, y[:, j], minlength=len(trials)) for j in range(y.shape[1])], axis=1)[keep]
            t = trials[keep][:, None]
            stats.setdefault(f"all_correct_{arm}", {})[name] = (k == t).mean(axis=0)
            stats.setdefault(f"none_correct_{arm}", {})[name] = (k == 0).mean(axis=0)
    # self and cross on the same answer and property (one row each when n = 1)
    key = [g for g in data.groups if g != data.unit] + [data.unit]
    single = c["n"].to_numpy() == 1
    s_idx = c[single & (c[data.x] == 1).to_numpy()].reset_index().set_index(key)["index"]
    x_idx = c[single & (c[data.x] == 0).to_numpy()].reset_index()[key + ["index"]]
    pairs = x_idx.join(s_idx.rename("self_index"), on=key, how="inner")
    if len(pairs):
        i, j = pairs["self_index"].to_numpy(), pairs["index"].to_numpy()
        stats["disagreement"] = {"observed": (obs[i] != obs[j]).mean(axis=0), "replicated": (rep[i] != rep[j]).mean(axis=0)}
    rows = []
    for name, d in stats.items():
        o, r = float(d["observed"][0]), d["replicated"]
        rows.append({"statistic": name, "observed": o, "rep_mean": float(r.mean()), "rep_low": float(np.quantile(r, Q_LOW)),
                     "rep_high": float(np.quantile(r, Q_HIGH)), "p_value": float((r >= o).mean())})
    out = pd.DataFrame(rows)
    out["covered"] = (out["observed"] >= out["rep_low"]) & (out["observed"] <= out["rep_high"])
    return out


# ---------------------------------------------------------------------------------- calibration model
def prior_predictive_accuracy(model, data: ContrastData, samples: int = 500, seed: int = 0) -> dict:
    """The overall accuracy the priors imply before seeing data (quantiles), and the share of prior draws
    with an overall accuracy below 1% or above 99% (a prior that piles up at the extremes is not weak)."""
    import pymc as pm

    with model:
        prior = pm.sample_prior_predictive(draws=samples, random_seed=seed)
    y = prior.prior_predictive["y"].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
    acc = y.sum(axis=0) / data.cells["n"].sum()
    return {"q05": float(np.quantile(acc, 0.05)), "q50": float(np.quantile(acc, 0.5)),
            "q95": float(np.quantile(acc, 0.95)), "extreme_share": float(((acc < 0.01) | (acc > 0.99)).mean())}


def prior_cell_accuracy(model, data: ContrastData, samples: int = 500, seed: int = 0, extreme: float = PRIOR_CELL_EXTREME) -> dict:
    """The accuracy of each observed cell implied by the priors alone: its quantiles, the share of (cell,
    draw) pairs below ``extreme`` or above ``1 - extreme`` (a U-shaped prior piles up there), and a
    20-bin histogram of the implied accuracies (the prior-predictive figure)."""
    import types

    import pymc as pm

    with model:
        prior = pm.sample_prior_predictive(draws=samples, random_seed=seed)
    eta0, slope = _linear_draws(types.SimpleNamespace(posterior=prior.prior), data, data.cells)
    p = _sigmoid(eta0 + slope * data.cells[data.x].to_numpy(float)[:, None])
    hist, edges = np.histogram(p, bins=20, range=(0, 1), density=True)
    return {"q05": float(np.quantile(p, 0.05)), "q50": float(np.quantile(p, 0.5)), "q95": float(np.quantile(p, 0.95)),
            "extreme_share": float(((p < extreme) | (p > 1 - extreme)).mean()), "extreme": extreme,
            "density": [float(h) for h in hist], "edges": [float(e) for e in edges]}


def posterior_predictive_check(idata, data: ContrastData, seed: int = 0, chunk: int = 500) -> pd.DataFrame:
    """Replicated successes per group x contrast cell (summed over units), with the observed count, the
    94% predictive interval and the posterior predictive p-value P(replicated >= observed).

    The replicates are ``Binomial(n, sigmoid(eta))`` of every observed cell for every posterior draw, drawn in
    numpy from the posterior's linear predictor (:func:`_linear_draws`), ``chunk`` draws at a time; PyMC's
    ``sample_posterior_predictive`` compiled a PyTensor graph (no BLAS with a pip-installed PyTensor) for
    the same draws."""
    keys = data.groups + [data.x]
    c = data.cells.reset_index(drop=True)
    eta, slope = _linear_draws(idata, data, c)
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(c[keys]), sort=True)
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    x, n = c[data.x].to_numpy(float)[order, None], c["n"].to_numpy()[order, None]
    eta, slope = eta[order], slope[order]
    rng = np.random.default_rng(seed)
    rep = np.concatenate([np.add.reduceat(rng.binomial(n, _sigmoid(eta[:, s:s + chunk] + slope[:, s:s + chunk] * x)),
                                          starts, axis=0) for s in range(0, eta.shape[1], chunk)], axis=1)
    k = np.add.reduceat(c["k"].to_numpy()[order], starts)
    trials = np.add.reduceat(c["n"].to_numpy()[order], starts)
    out = pd.DataFrame(list(uniq), columns=keys)
    out = out.assign(observed=k.astype(int), n=trials.astype(int), rep_mean=rep.mean(axis=1),
                     rep_low=np.quantile(rep, Q_LOW, axis=1), rep_high=np.quantile(rep, Q_HIGH, axis=1),
                     p_value=(rep >= k[:, None]).mean(axis=1))
    out["covered"] = (out["observed"] >= out["rep_low"]) & (out["observed"] <= out["rep_high"])
    return out
