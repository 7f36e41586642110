"""Detection of an injected thought: the detection model and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.bayes as M
from analysis.injection.design import CELL, LOGIT_SD, _cell_codes, _cell_label, _has, _injected_cells, check_table
from analysis.bayes import category_codes as _codes
from analysis.injection.likelihood import _effect_draws, _observed_average, _random_effect, _summary, simultaneous_band
from analysis.bayes import aggregate_binomial as _aggregate, draws as _draws, sigmoid as _sigmoid

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class DetectionDesign:
    """The coding of :func:`detection_model`: the injected cells (condition x layer fraction x strength,
    with their trials ``n`` and successes ``k``), the (condition, concept) levels of the concept effect, and
    the binomial combinations (cell or control, concept level) with counts."""

    cells: pd.DataFrame
    concept_levels: list[str]  # "condition|concept"
    combo_cell: np.ndarray  # -1: control
    combo_concept: np.ndarray  # -1: no concept effect (control, or concept None)
    wording_levels: list[str]  # the question's wordings (empty: a table without the ``wording`` column)
    combo_wording: np.ndarray  # -1: no wording effect
    k: np.ndarray
    n: np.ndarray
    control_n: int
    control_k: int


def _detect_rows(rows: pd.DataFrame) -> pd.DataFrame:
    rows = check_table(rows, "detection")
    return rows[rows["question"] == "detect"]


def detection_design(rows: pd.DataFrame) -> DetectionDesign:
    """The :class:`DetectionDesign` of one model's ``detect`` rows (yes_bias rows are ignored here)."""
    d = _detect_rows(rows)
    if d["model"].nunique() > 1:
        raise DataError("detection_model fits one model's rows at a time: filter the table by `model` first")
    inj, ctl = d[d["condition"] != "control"], d[d["condition"] == "control"]
    if inj.empty:
        raise DataError("the detection table has no injected 'detect' rows (conditions concept/random/negated)")
    if ctl.empty:
        raise DataError("the detection table has no control 'detect' rows: the false-positive rate, which every "
                        "detection rate is compared with, needs trials without injection")
    cells = _injected_cells(inj, ["condition", *CELL])
    cells["k"] = inj.groupby(["condition", *CELL], sort=True)["detected"].sum().to_numpy().astype(int)
    has = inj["concept"].map(_has)
    labels = inj["condition"].astype(str) + "|" + inj["concept"].where(has, "").astype(str)
    levels = sorted(labels[has].unique())
    cell = np.r_[_cell_codes(inj, cells, ["condition", *CELL]), np.full(len(ctl), -1)]
    concept = np.r_[np.where(has, _codes(labels, levels), -1), np.full(len(ctl), -1)]
    y = np.r_[inj["detected"].to_numpy(), ctl["detected"].to_numpy()]
    both = pd.concat([inj, ctl])
    words = both["wording"] if "wording" in both.columns else pd.Series([None] * len(both), index=both.index)
    wlevels = sorted(words.dropna().astype(str).unique())
    wording = _codes(words, wlevels)  # -1 where a row has no wording (and for every row of a table without them)
    combos, k, n = _aggregate({"cell": cell, "concept": concept, "wording": wording}, y)
    return DetectionDesign(cells, levels, combos["cell"], combos["concept"], wlevels, combos["wording"], k, n,
                           len(ctl), int(ctl["detected"].sum()))


def detection_model(rows: pd.DataFrame) -> pm.Model:
    """Detection of an injected thought: a hierarchical logistic regression of ``detected`` (the model
    answers yes to "do you detect an injected thought?", ``p_yes > 0.5``) on one model's ``detect`` rows::

        detected_i ~ Bernoulli(p_i)
        control rows:   logit p_i = phi                                              + sigma_wording * w[wording_i]
        injected rows:  logit p_i = mu[cell_i] + sigma_concept * z[condition_i, concept_i] + sigma_wording * w[wording_i]
        phi, mu[cell] ~ Normal(0, 1.5);  sigma_concept, sigma_wording ~ HalfNormal(1);  z, w ~ Normal(0, 1)

    ``wording``: the question's wording (the dataset's paraphrases, trial slot k in wording k mod their number, the
    same with and without injection), a grouping factor shared by control and injected trials, so that the
    false-positive rate is that of a wording drawn from the population of wordings, not of one sentence (a table
    without the column, or with one wording, has no such term).

    ``cell`` = (condition, layer fraction, strength), one free logit each (see the module docstring for why
    cells are not pooled). ``phi`` is the false-positive rate's logit: control trials have no injection, so
    no cell and no concept effect (the wording effect, shared, cancels in a within-wording contrast). The concept effect is per (condition, concept): a concept's vector and its
    negation need not be equally salient. Its scale is shared by the conditions: at weak strengths and in the
    negated and random conditions there are few detections, and a scale per condition was then barely
    identified (the sampler's worst tail ESS); one scale assumes the same spread between concepts on the
    logit scale in every condition. Rows without a concept (a random vector with ``concept`` None) get no
    concept effect. Quantities (:func:`detection_summary`): ``sigmoid(mu[cell])``, the
    detection rate at the average concept and wording; ``sigmoid(phi)``; their difference per draw; and the
    false-positive rate of a new wording, ``sigmoid(phi + sigma_wording * e)`` with ``e ~ Normal(0, 1)``."""
    import pymc as pm
    import pytensor.tensor as pt

    des = detection_design(rows)
    coords = {"cell": [_cell_label(r, ["condition", *CELL]) for _, r in des.cells.iterrows()]}
    if des.concept_levels:
        coords["concept"] = des.concept_levels
    if len(des.wording_levels) > 1:
        coords["wording"] = des.wording_levels
    with pm.Model(coords=coords) as model:
        phi = pm.Normal("phi", 0.0, LOGIT_SD)
        mu = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        eta = pt.concatenate([mu, phi[None]])[np.where(des.combo_cell < 0, len(des.cells), des.combo_cell)]
        if des.concept_levels:
            eta = eta + _random_effect("concept", "concept", des.combo_concept)
        if len(des.wording_levels) > 1:
            eta = eta + _random_effect("wording", "wording", des.combo_wording)
        M.binomial_logit("y", des.n, eta, des.k)
    return model


def detection_summary(idata: az.InferenceData, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """From :func:`detection_model`'s fit on ``rows``: ``cells`` (per cell: the raw ``n, k, rate``; ``mean,
    low, high`` = P(detect) at the average concept; ``obs_*`` = averaged over the cell's concepts;
    ``diff_*`` = detection minus the false-positive rate, with ``p_positive`` = P(diff > 0); ``diff_sim_low,
    diff_sim_high`` = its simultaneous 95% band over the condition's cells (:func:`simultaneous_band`), the interval
    of a cell chosen among them; ``obs_diff_*``)
    and ``fp_rate`` (one row: raw ``n, k, rate``; ``mean, low, high`` = P(yes) on control trials in a new wording,
    which carries the wording variation (the interval quoted); ``avg_*`` = at the average wording, the arm the
    cells' differences use; ``wordings`` and the wording scale ``sigma_wording_*``, 0 without the term)."""
    des = detection_design(rows)
    mu, phi = _draws(idata, "mu"), _draws(idata, "phi")
    fp = _sigmoid(phi)
    p0 = _sigmoid(mu)
    inj = des.combo_cell >= 0
    eff = (_effect_draws(idata, "concept", des.combo_concept[inj]) if des.concept_levels
           else np.zeros((int(inj.sum()), mu.shape[1])))
    worded = len(des.wording_levels) > 1
    if worded:
        eff = eff + _effect_draws(idata, "wording", des.combo_wording[inj])
        sigma_w = _draws(idata, "sigma_wording")
    else:
        sigma_w = np.zeros_like(phi)
    # a new wording's false-positive rate: one standard-normal wording draw per posterior draw (seeded)
    fp_new = _sigmoid(phi + sigma_w * np.random.default_rng(20251029).standard_normal(phi.shape))
    pobs = _observed_average(mu, des.combo_cell[inj], eff, des.n[inj])
    # per condition, a simultaneous band over its cells for the difference: the best cell is chosen among them
    sim_low, sim_high = np.full(len(des.cells), np.nan), np.full(len(des.cells), np.nan)
    for _, idx in des.cells.groupby("condition", sort=False).groups.items():
        rows_i = des.cells.index.get_indexer(idx)
        sim_low[rows_i], sim_high[rows_i] = simultaneous_band(p0[rows_i] - fp[None, :])
    out = []
    for i, c in des.cells.iterrows():
        out.append({"condition": c["condition"], "layer_fraction": c["layer_fraction"], "strength": c["strength"],
                    "layer": c["layer"], "n": int(c["n"]), "k": int(c["k"]), "rate": c["k"] / c["n"],
                    **_summary(p0[i]), **_summary(pobs[i], "obs_"), **_summary(p0[i] - fp, "diff_"),
                    "diff_sim_low": float(sim_low[i]), "diff_sim_high": float(sim_high[i]),
                    "p_positive": float((p0[i] > fp).mean()), **_summary(pobs[i] - fp, "obs_diff_")})
    fp_row = {"n": des.control_n, "k": des.control_k, "rate": des.control_k / des.control_n, **_summary(fp_new),
              **_summary(fp, "avg_"), "wordings": max(len(des.wording_levels), 1), **_summary(sigma_w, "sigma_wording_")}
    return {"cells": pd.DataFrame(out), "fp_rate": pd.DataFrame([fp_row])}
