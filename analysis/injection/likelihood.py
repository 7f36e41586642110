"""Likelihood pieces and posterior-draw helpers shared by the concept-injection models."""

from __future__ import annotations

import numpy as np
import pandas as pd

import analysis.bayes as M
from analysis.injection.design import INTERVAL, Q_HIGH, Q_LOW, SCALE_SD
from analysis.summaries import interval_summary
from analysis.bayes import aggregate_binomial as _aggregate, draws as _draws, sigmoid as _sigmoid  # noqa: F401


def _random_effect(name: str, dim: str, codes: np.ndarray, zero_sum: bool = False):
    """``sigma * z[level]`` at every row of ``codes`` (0 where the code is -1: no unit), with ``sigma ~
    HalfNormal(1)`` and ``z ~ Normal(0, 1)``: a non-centred random intercept, created in the caller's model
    (as ``sigma_<name>``, ``z_<name>``). ``zero_sum``: ``z ~ ZeroSumNormal(1)`` instead (the observed levels'
    effects sum to zero, so the fixed means are at the average of the observed levels)."""
    import pymc as pm
    import pytensor.tensor as pt

    z = (pm.ZeroSumNormal(f"z_{name}", 1.0, dims=dim) if zero_sum else pm.Normal(f"z_{name}", 0.0, 1.0, dims=dim))
    effect = pm.HalfNormal(f"sigma_{name}", SCALE_SD) * z
    n_levels = len(pm.modelcontext(None).coords[dim])
    padded = pt.concatenate([effect, pt.zeros(1)])  # the last entry: rows without a unit
    return padded[np.where(codes < 0, n_levels, codes)]


def _summary(d: np.ndarray, prefix: str = "") -> dict:
    """Posterior mean and 95% interval of draws ``d`` (last axis: samples), as ``<prefix>mean, low, high``."""
    return interval_summary(d, prefix, INTERVAL)


def _effect_draws(idata, name: str, codes: np.ndarray) -> np.ndarray:
    """Draws of the random intercept ``sigma * z`` at every entry of ``codes`` (0 where -1): (rows, samples)."""
    eff = _draws(idata, f"sigma_{name}")[None, :] * _draws(idata, f"z_{name}")
    eff = np.vstack([eff, np.zeros((1, eff.shape[1]))])
    return eff[np.where(codes < 0, len(eff) - 1, codes)]


def _observed_average(eta_cell: np.ndarray, combo_cell: np.ndarray, combo_effect: np.ndarray,
                      combo_n: np.ndarray) -> np.ndarray:
    """Per cell, the trial-weighted average over its observed unit combinations of ``sigmoid(cell logit +
    unit effect)``: (cells, samples). ``combo_effect``: the combinations' effects (combos, samples)."""
    p = _sigmoid(eta_cell[combo_cell] + combo_effect) * combo_n[:, None]
    tot = np.zeros_like(eta_cell)
    np.add.at(tot, combo_cell, p)
    return tot / np.bincount(combo_cell, weights=combo_n, minlength=len(eta_cell))[:, None]


def simultaneous_band(d: np.ndarray, level: float = INTERVAL) -> tuple[np.ndarray, np.ndarray]:
    """A simultaneous ``level`` credible band over the rows of ``d`` (quantities, samples): ``mean_k +/- c *
    sd_k``, with ``c`` the ``level`` quantile over draws of ``max_k |d_k - mean_k| / sd_k``, so that every row's
    true value lies inside its band together with posterior probability ``level``. A quantity chosen from the rows
    after seeing them (the best cell, the best layer) keeps its band's coverage, which its own interval does not;
    ``c`` is about 1.96 for one row and grows with the rows' number (about 2.8 for 10 independent rows). A row's
    band is widened to its own equal-tailed ``level`` interval where the symmetric band cuts inside it (a skewed
    posterior), and cut to the range of its draws. Rows with no spread get a band of their mean."""
    d = np.asarray(d, dtype=float)
    mean, sd = d.mean(axis=1), d.std(axis=1)
    spread = sd > 0
    if not spread.any():
        return mean.copy(), mean.copy()
    z = np.abs(d[spread] - mean[spread, None]) / sd[spread, None]
    c = float(np.quantile(z.max(axis=0), level))
    # a skewed row's symmetric band can cut inside its own equal-tailed interval: never narrower than that, and
    # never beyond the draws
    q = (1 - level) / 2
    low = np.maximum(np.minimum(mean - c * sd, np.quantile(d, q, axis=1)), d.min(axis=1))
    high = np.minimum(np.maximum(mean + c * sd, np.quantile(d, 1 - q, axis=1)), d.max(axis=1))
    return low, high
