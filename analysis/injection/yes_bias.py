"""The yes-bias check: does an injection make the model answer yes to *any* question? The model and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.bayes as M
from analysis.injection.design import CELL, LOGIT_SD, _cell_codes, _cell_label, _injected_cells, check_table
from analysis.bayes import category_codes as _codes
from analysis.injection.likelihood import _effect_draws, _observed_average, _random_effect, _summary
from analysis.bayes import aggregate_binomial as _aggregate, draws as _draws, sigmoid as _sigmoid

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class YesBiasDesign:
    cells: pd.DataFrame
    questions: list[str]
    combo_cell: np.ndarray  # -1: control
    combo_question: np.ndarray
    k: np.ndarray
    n: np.ndarray
    control_n: int
    control_k: int


def yes_bias_design(rows: pd.DataFrame) -> YesBiasDesign:
    """The coding of :func:`yes_bias_model`: one model's ``yes_bias`` rows (``detect`` rows are ignored)."""
    rows = check_table(rows, "detection")
    d = rows[rows["question"] == "yes_bias"]
    if d["model"].nunique() > 1:
        raise DataError("yes_bias_model fits one model's rows at a time: filter the table by `model` first")
    inj, ctl = d[d["condition"] != "control"], d[d["condition"] == "control"]
    if inj.empty or ctl.empty:
        raise DataError("the yes-bias check needs yes_bias questions both with injection and without (control "
                        f"rows); this table has {len(inj)} injected and {len(ctl)} control yes_bias rows")
    cells = _injected_cells(inj, ["condition", *CELL])
    cells["k"] = inj.groupby(["condition", *CELL], sort=True)["detected"].sum().to_numpy().astype(int)
    questions = sorted(d["question_id"].astype(str).unique())
    cell = np.r_[_cell_codes(inj, cells, ["condition", *CELL]), np.full(len(ctl), -1)]
    q = np.r_[_codes(inj["question_id"].astype(str), questions), _codes(ctl["question_id"].astype(str), questions)]
    y = np.r_[inj["detected"].to_numpy(), ctl["detected"].to_numpy()]
    combos, k, n = _aggregate({"cell": cell, "question": q}, y)
    return YesBiasDesign(cells, questions, combos["cell"], combos["question"], k, n, len(ctl),
                         int(ctl["detected"].sum()))


def yes_bias_model(rows: pd.DataFrame) -> pm.Model:
    """The yes-bias check: does injection make the model answer yes to *any* question? A logistic regression
    of answering yes (``detected``, ``p_yes > 0.5``) on one model's ``yes_bias`` rows, questions whose
    answer is no whatever is injected::

        yes_i ~ Bernoulli(p_i)
        logit p_i = nu[cell_i] + sigma_question * z[question_i]      (injected rows)
        logit p_i = nu0        + sigma_question * z[question_i]      (control rows, no injection)
        nu[cell], nu0 ~ Normal(0, 1.5);  sigma_question ~ HalfNormal(1);  z ~ Normal(0, 1)

    The question effect is shared by a question's injected and control trials, so the comparison is within
    question. Quantity (:func:`yes_bias_summary`): the bias ``sigmoid(nu[cell]) - sigmoid(nu0)`` at the
    average question. A separate model from :func:`detection_model` because it answers a separate question
    (and shares no parameter with it)."""
    import pymc as pm
    import pytensor.tensor as pt

    des = yes_bias_design(rows)
    coords = {"cell": [_cell_label(r, ["condition", *CELL]) for _, r in des.cells.iterrows()],
              "question": des.questions}
    with pm.Model(coords=coords) as model:
        nu0 = pm.Normal("nu0", 0.0, LOGIT_SD)
        nu = pm.Normal("nu", 0.0, LOGIT_SD, dims="cell")
        eta = pt.concatenate([nu, nu0[None]])[np.where(des.combo_cell < 0, len(des.cells), des.combo_cell)]
        eta = eta + _random_effect("question", "question", des.combo_question)
        M.binomial_logit("y", des.n, eta, des.k)
    return model


def yes_bias_summary(idata: az.InferenceData, rows: pd.DataFrame) -> pd.DataFrame:
    """Per injected cell: raw ``n, k, rate``; ``mean, low, high`` = P(yes) under injection at the average
    question; ``control_*`` = P(yes) without injection; ``diff_*`` = the yes-bias (injected minus control),
    with ``p_positive``; ``obs_diff_*`` = the bias averaged over the cell's questions."""
    des = yes_bias_design(rows)
    nu, nu0 = _draws(idata, "nu"), _draws(idata, "nu0")
    p0, pc = _sigmoid(nu), _sigmoid(nu0)
    eff = _effect_draws(idata, "question", des.combo_question)
    inj = des.combo_cell >= 0
    pobs = _observed_average(nu, des.combo_cell[inj], eff[inj], des.n[inj])
    ctl = ~inj
    cobs = (_sigmoid(nu0 + eff[ctl]) * des.n[ctl][:, None]).sum(axis=0) / des.n[ctl].sum()
    out = []
    for i, c in des.cells.iterrows():
        out.append({"condition": c["condition"], "layer_fraction": c["layer_fraction"], "strength": c["strength"],
                    "layer": c["layer"], "n": int(c["n"]), "k": int(c["k"]), "rate": c["k"] / c["n"],
                    "control_n": des.control_n, "control_rate": des.control_k / des.control_n,
                    **_summary(p0[i]), **_summary(pc, "control_"), **_summary(p0[i] - pc, "diff_"),
                    "p_positive": float((p0[i] > pc).mean()), **_summary(pobs[i] - cobs, "obs_diff_")})
    return pd.DataFrame(out)
