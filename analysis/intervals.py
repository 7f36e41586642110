"""Intervals for raw rates and means that every experiment family reports beside its model estimates."""

from __future__ import annotations

import numpy as np


def wilson(k, n, alpha: float = 0.05):
    """Wilson score interval ``(low, high)`` for one proportion ``k / n``, or element-wise for arrays.

    In exact arithmetic the interval lies in [0, 1] and contains ``k / n`` (its bounds are exactly 0 at
    ``k = 0`` and 1 at ``k = n``). statsmodels' floating-point bounds can land a rounding error on the wrong
    side (an upper bound of 0.9999999999999999 at k = n = 1246, below the rate 1.0, made a figure's error
    bar negative), so each bound is moved onto ``k / n`` when it misses it, and into [0, 1]. Only by a
    rounding error: a miss larger than 1e-9 is a bug, and raises. ``n = 0`` gives NaN bounds."""
    from statsmodels.stats.proportion import proportion_confint

    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = (np.asarray(b, dtype=float) for b in proportion_confint(k, n, alpha=alpha, method="wilson"))
        rate = np.where(n > 0, k / np.where(n > 0, n, 1), np.nan)
    miss = np.nanmax(np.r_[np.ravel(lo - rate), np.ravel(rate - hi), np.ravel(-lo), np.ravel(hi - 1), 0.0])
    if miss > 1e-9:
        raise ArithmeticError(f"Wilson interval misses its rate k/n by {miss:.3g}: not a rounding error")
    lo = np.where(n > 0, np.clip(np.minimum(lo, rate), 0.0, 1.0), np.nan)
    hi = np.where(n > 0, np.clip(np.maximum(hi, rate), 0.0, 1.0), np.nan)
    return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)


def t_interval(x, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``x`` and its t interval at ``level`` (mean +/- t quantile x sd / sqrt(n)): ``(mean, low,
    high)``; the bounds are NaN with fewer than two values, the mean too with none."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    n = len(x)
    mean = float(x.mean()) if n else float("nan")
    if n < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half
