"""Posterior summaries the side experiments' models share."""

from __future__ import annotations

import numpy as np


def interval_summary(d: np.ndarray, prefix: str = "", interval: float = 0.95) -> dict:
    """Posterior mean and equal-tailed ``interval`` of draws ``d`` (last axis: samples), as ``<prefix>mean, low,
    high``."""
    q = (1 - interval) / 2
    return {f"{prefix}mean": float(np.mean(d)), f"{prefix}low": float(np.quantile(d, q)),
            f"{prefix}high": float(np.quantile(d, 1 - q))}
