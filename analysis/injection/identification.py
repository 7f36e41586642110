"""Identification of the injected concept: the identification model and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.bayes as M
from analysis.injection.design import CELL, LOGIT_SD, _cell_codes, _cell_label, _injected_cells, check_table
from analysis.bayes import category_codes as _codes
from analysis.injection.likelihood import _effect_draws, _observed_average, _random_effect, _summary, simultaneous_band
from analysis.bayes import aggregate_binomial as _aggregate, draws as _draws, sigmoid as _sigmoid

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class IdentificationDesign:
    cells: pd.DataFrame
    concepts: list[str]
    combo_cell: np.ndarray  # -1: control
    combo_concept: np.ndarray  # -1 for control rows (no concept effect)
    k: np.ndarray
    n: np.ndarray
    control_n: int
    control_k: int
    control_chance: float


def identification_design(rows: pd.DataFrame) -> IdentificationDesign:
    """The coding of :func:`identification_model` for one model's rows."""
    rows = check_table(rows, "identification")
    if rows["model"].nunique() > 1:
        raise DataError("identification_model fits one model's rows at a time: filter the table by `model` first")
    if (rows["n_concepts"] < 2).any():
        raise DataError("identification rows need n_concepts >= 2 candidates (chance is 1 / n_concepts)")
    inj, ctl = rows[rows["condition"] == "concept"], rows[rows["condition"] == "control"]
    if inj.empty or ctl.empty:
        raise DataError("the identification table needs concept rows and control rows (the same question "
                        f"without injection); it has {len(inj)} concept and {len(ctl)} control rows")
    cells = _injected_cells(inj, CELL)
    g = inj.assign(chance=1.0 / inj["n_concepts"]).groupby(CELL, sort=True)
    cells["k"] = g["correct"].sum().to_numpy().astype(int)
    cells["chance"] = g["chance"].mean().to_numpy()
    concepts = sorted(inj["concept"].astype(str).unique())
    cell = np.r_[_cell_codes(inj, cells, CELL), np.full(len(ctl), -1)]
    concept = np.r_[_codes(inj["concept"].astype(str), concepts), np.full(len(ctl), -1)]
    y = np.r_[inj["correct"].to_numpy(), ctl["correct"].to_numpy()]
    combos, k, n = _aggregate({"cell": cell, "concept": concept}, y)
    return IdentificationDesign(cells, concepts, combos["cell"], combos["concept"], k, n, len(ctl),
                                int(ctl["correct"].sum()), float((1.0 / ctl["n_concepts"]).mean()))


def identification_model(rows: pd.DataFrame) -> pm.Model:
    """Identification of the injected concept: a logistic regression of ``correct`` (the true concept is the
    most probable of the ``n_concepts`` candidates) on one model's rows::

        correct_i ~ Bernoulli(p_i)
        concept rows:  logit p_i = mu[cell_i] + sigma_concept * z[concept_i]
        control rows:  logit p_i = gamma
        gamma, mu[cell] ~ Normal(0, 1.5);  sigma_concept ~ HalfNormal(1);  z ~ Normal(0, 1)

    ``cell`` = (layer fraction, strength). Control rows ask the same question without injection, scored
    against the concept the trial slot would carry: ``sigmoid(gamma)`` is the top-1 rate of the same
    candidate list by the model's own preferences, which can differ from chance ``1 / n_concepts`` (a
    model that prefers some candidate). The concept effect (how identifiable a concept's vector is) is on
    injected rows only. Quantities (:func:`identification_summary`): ``sigmoid(mu[cell])`` at the average
    concept, minus chance and minus ``sigmoid(gamma)``, per draw."""
    import pymc as pm
    import pytensor.tensor as pt

    des = identification_design(rows)
    coords = {"cell": [_cell_label(r, CELL) for _, r in des.cells.iterrows()], "concept": des.concepts}
    with pm.Model(coords=coords) as model:
        gamma = pm.Normal("gamma", 0.0, LOGIT_SD)
        mu = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        eta = pt.concatenate([mu, gamma[None]])[np.where(des.combo_cell < 0, len(des.cells), des.combo_cell)]
        eta = eta + _random_effect("concept", "concept", des.combo_concept)
        M.binomial_logit("y", des.n, eta, des.k)
    return model


def identification_summary(idata: az.InferenceData, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per injected cell (``condition = concept``) and one for the control rows: raw ``n, k,
    rate``; ``chance`` (mean of 1 / n_concepts); ``mean, low, high`` = P(correct) at the average concept
    (the control row: its top-1 rate); ``obs_*`` averaged over the cell's concepts; ``vs_chance_*`` =
    P(correct) - chance with ``p_above_chance`` and its simultaneous 95% band over the injected cells
    ``vs_chance_sim_low, vs_chance_sim_high`` (the interval of a cell chosen among them); ``vs_control_*`` = P(correct) - control top-1 rate with
    ``p_above_control`` (NaN on the control row)."""
    des = identification_design(rows)
    mu, gamma = _draws(idata, "mu"), _draws(idata, "gamma")
    p0, pc = _sigmoid(mu), _sigmoid(gamma)
    inj = des.combo_cell >= 0
    eff = _effect_draws(idata, "concept", des.combo_concept[inj])
    pobs = _observed_average(mu, des.combo_cell[inj], eff, des.n[inj])
    nan = {f"vs_control_{s}": np.nan for s in ("mean", "low", "high")} | {"p_above_control": np.nan}
    # a simultaneous band over the injected cells for the difference from chance: the best cell is chosen among them
    chance = des.cells["chance"].to_numpy(dtype=float)[:, None]
    sim_low, sim_high = simultaneous_band(p0 - chance) if len(des.cells) else (np.empty(0), np.empty(0))
    out = [{"condition": "control", "layer_fraction": np.nan, "strength": 0.0, "layer": -1, "n": des.control_n,
            "k": des.control_k, "rate": des.control_k / des.control_n, "chance": des.control_chance,
            **_summary(pc), **_summary(pc, "obs_"), **_summary(pc - des.control_chance, "vs_chance_"),
            "p_above_chance": float((pc > des.control_chance).mean()), **nan}]
    for i, c in des.cells.iterrows():
        out.append({"condition": "concept", "layer_fraction": c["layer_fraction"], "strength": c["strength"],
                    "layer": c["layer"], "n": int(c["n"]), "k": int(c["k"]), "rate": c["k"] / c["n"],
                    "chance": c["chance"], **_summary(p0[i]), **_summary(pobs[i], "obs_"),
                    **_summary(p0[i] - c["chance"], "vs_chance_"),
                    "vs_chance_sim_low": float(sim_low[i]), "vs_chance_sim_high": float(sim_high[i]),
                    "p_above_chance": float((p0[i] > c["chance"]).mean()),
                    **_summary(p0[i] - pc, "vs_control_"), "p_above_control": float((p0[i] > pc).mean())})
    return pd.DataFrame(out)
