"""Non-compliance sensitivity of Experiment 1.

The main analysis counts a non-compliant hypothetical answer as wrong (the original's default; its scripts
also exclude them). If the cross-predictor complies less often than the self-predictor, a self-prediction
"advantage" can be pure compliance. Because a non-compliant answer is never right,

    P(correct) = P(compliant) x P(correct | compliant)

exactly, and the two parts have separate likelihoods: one advantage model (:func:`analysis.self_prediction.hierarchical.advantage_model`)
for compliance on every trained prediction, one for correctness on the compliant predictions. With
independent priors the joint posterior is the product of the two, so draws of the two fits are paired.

Reported beside the main estimate, in points:

* ``compliance_difference``: self minus cross compliance;
* ``conditional_difference``: self minus cross accuracy among compliant answers (the original's other
  setting), and ``delta_compliant`` (the identified delta on compliant answers);
* ``two_part_advantage``: the advantage the two parts imply together;
* ``advantage_at_equal_compliance``: the advantage if the self-predictor complied exactly as often as the
  cross-predictor, cell by cell (the part that is not compliance);
* ``compliance_part``: the rest of the two-part advantage, the part due to the self-predictor's different
  compliance rate (``two_part_advantage - advantage_at_equal_compliance``, draw by draw): how much of the
  advantage is compliance.

The two parts are combined per target x task x property cell (each part averaged over the cell's answer
units, then multiplied) and weighted by the cell's trials; a unit-level correlation between complying and
being right within a cell is not carried into the product.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

import analysis.self_prediction.hierarchical as M
from analysis.self_prediction.priors import COMPLIANCE_PRIORS


def _cell_draws(probs: tuple, cell: str) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """Per cell, the trial-weighted mean over its design rows of the self and cross probabilities: (cells,
    self (cells, samples), cross (cells, samples), trials per cell)."""
    p_self, p_cross, design = probs
    codes, cells = pd.factorize(design[cell], sort=True)
    w = design["n"].to_numpy(float)
    tot = np.bincount(codes, w)
    A = np.zeros((len(cells), len(design)))
    A[codes, np.arange(len(design))] = w
    A /= tot[:, None]
    return list(cells), A @ p_self, A @ p_cross, tot


def raw_table(trained: pd.DataFrame) -> pd.DataFrame:
    """Compliance and the accuracy both ways (non-compliant counted wrong, and compliant answers only) per
    target x kind, and pooled per kind."""
    def agg(g):
        ok = g["meta_compliant"].astype(bool)
        return pd.Series({"n": len(g), "compliance": ok.mean(), "accuracy": g["correct"].mean(),
                          "n_compliant": int(ok.sum()),
                          "accuracy_compliant": g.loc[ok, "correct"].mean() if ok.any() else np.nan})

    per = trained.groupby(["target", "kind"], sort=True).apply(agg, include_groups=False).reset_index()
    pooled = trained.groupby("kind", sort=True).apply(agg, include_groups=False).reset_index().assign(target="all")
    return pd.concat([per, pooled], ignore_index=True)


def _evenly(draws: np.ndarray, n: int) -> np.ndarray:
    """``n`` evenly spaced draws (last axis) of ``draws``, whose draws are stacked chain by chain: all of them
    when it has ``n``, else a subset that spans every chain."""
    return draws[..., np.linspace(0, draws.shape[-1] - 1, n).round().astype(int)]


def compliance_sensitivity(trained: pd.DataFrame, groups: list[str], fit: Callable, cell: str = "cell") -> dict:
    """The sensitivity of the module docstring. ``trained``: the trained predictions with the ``cell``
    column; ``fit(data, model, name)``: samples and gates a model and returns its InferenceData (the stage's
    sampler settings). With every trained answer compliant the two-part model has nothing to explain and is
    not fitted (``all_compliant``): the compliant-only accuracy is then the main accuracy."""
    out = {"raw": raw_table(trained)}
    ok = trained["meta_compliant"].astype(bool)
    out["all_compliant"] = bool(ok.all())
    if out["all_compliant"]:
        return out
    comp_data = M.advantage_data(trained.assign(meta_compliant=ok.astype(int)), groups, y="meta_compliant",
                                 pair=False, priors=COMPLIANCE_PRIORS)
    cond_data = M.advantage_data(trained[ok], groups)
    comp = M.advantage_quantities(fit(comp_data, M.advantage_model(comp_data), "compliance"), comp_data)
    cond_q = M.advantage_quantities(fit(cond_data, M.advantage_model(cond_data), "accuracy given compliance"),
                                    cond_data)
    cells, c_self, c_cross, w = _cell_draws(comp["probs"], cell)
    k_cells, k_self, k_cross, _ = _cell_draws(cond_q["probs"], cell)
    at = {c: i for i, c in enumerate(k_cells)}
    # the two fits are independent posteriors, paired draw by draw; where one has more draws (a fit sampled a
    # second time with twice the draws, analysis.self_prediction.hierarchical.sample_gated), evenly spaced draws of every chain of it
    n_draws = min(c_self.shape[1], k_self.shape[1])
    c_s, c_c, k_self, k_cross = (_evenly(p, n_draws) for p in (c_self, c_cross, k_self, k_cross))
    # a cell without any compliant answer has P(correct) = 0 in both arms
    pick = lambda p, c: p[at[c]] if c in at else np.zeros(n_draws)  # noqa: E731
    k_s = np.stack([pick(k_self, c) for c in cells])
    k_c = np.stack([pick(k_cross, c) for c in cells])
    w = w / w.sum()
    observed = [c in at for c in cells]
    wk = np.where(observed, w, 0.0)
    wk = wk / wk.sum()
    out.update({
        "compliance_difference": M.summarise_draws(w @ (c_s - c_c)),
        "conditional_difference": M.summarise_draws(wk @ (k_s - k_c)),
        "two_part_advantage": M.summarise_draws(w @ (c_s * k_s - c_c * k_c)),
        "advantage_at_equal_compliance": M.summarise_draws(w @ (c_c * (k_s - k_c))),
        "compliance_part": M.summarise_draws(w @ ((c_s - c_c) * k_s)),
        "delta_compliant": M.summarise_draws(cond_q["delta"]),
        "compliance_delta": M.summarise_draws(comp["delta"]),
        "cells_without_compliant_answers": int(len(cells) - sum(observed)),
    })
    return out
