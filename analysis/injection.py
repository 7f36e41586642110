"""The statistics of the concept-injection experiments (Lindsey 2025, "Emergent introspective awareness in
large language models"): detection of an injected thought, identification of its concept, prefill
"accidents" and intentional control of an internal representation.

A concept vector is added to a model's residual stream at a layer (reported as a fraction of the model's
depth) with a strength; each (condition, layer fraction, strength) combination is a *cell*. Every model is
fitted on its own rows only: models differ in depth, so a layer fraction means different layers in each,
and nothing is pooled across models.

Common choices, stated once:

* Binary outcomes are Bernoulli with a logit link. Each cell has its own fixed logit (cell-means coding)
  with a proper ``Normal(0, 1.5)`` prior, which puts roughly uniform prior mass on probabilities between a
  few percent and ~95%. Cells are *not* partially pooled with each other: the layer x strength response is
  non-monotone (too strong an injection derails the model) and pooling would pull the many all-zero weak
  cells towards the strong ones, inflating exactly the detection rates that are compared with the
  false-positive rate. About 50 trials per cell identify a cell's logit on their own; the proper prior keeps
  an all-zero (or all-one) cell's posterior finite, so such a cell's interval is an upper (lower) bound whose
  other end reflects the prior. The prior gives a rate below 1% little mass (``logit(0.01)`` is three prior
  standard deviations out): an all-zero cell of 50 trials has a posterior mean near 3% and a 95% interval
  of about [0.5%, 8.5%], so rates below ~1% are not resolved, and the same holds for the false-positive
  rate, which the prior pulls up alike (the difference of two such cells is centred near zero).
* Repeated units (concept, question, prefill pair, sentence) get random intercepts ``sigma * z`` with
  ``sigma ~ HalfNormal(1)`` and ``z ~ Normal(0, 1)`` (non-centred, so NUTS does not meet the funnel where a
  scale is near zero); the intention model's word and sentence intercepts are constrained to sum to zero
  (see :func:`intention_model` for why).
* Reported probabilities are *at the average unit* (random effect 0: the typical concept, question or
  pair), in ``mean, low, high``; the same quantity averaged over the units observed in the cell (weighted by
  their trials, comparable with the raw rate) is in ``obs_mean, obs_low, obs_high``. Contrasts are computed
  per posterior draw, so their intervals carry the correlation of the two arms.
* Intervals are equal-tailed 95% posterior intervals (:data:`INTERVAL`); ``p_positive`` is the posterior
  probability that a difference is above zero. Every published fit passes
  :func:`analysis.models.check_convergence`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from . import models as M

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm

INTERVAL = 0.95
Q_LOW, Q_HIGH = (1 - INTERVAL) / 2, 1 - (1 - INTERVAL) / 2

LOGIT_SD = 1.5  # cell logits, control intercepts
SCALE_SD = 1.0  # random-effect scales

COLUMNS = {
    "detection": ["model", "question", "question_id", "condition", "concept", "layer", "layer_fraction", "strength",
                  "p_yes", "p_outside", "detected"],
    "identification": ["model", "question_id", "condition", "concept", "layer", "layer_fraction", "strength",
                       "p_true", "rank", "correct", "n_concepts"],
    "prefill": ["model", "pair_id", "word", "condition", "layer", "layer_fraction", "strength", "p_accident",
                "accident"],
    "intention": ["model", "sentence_id", "word", "instruction", "layer", "layer_fraction", "cosine"],
}
CONDITIONS = {
    "detection": ("control", "concept", "random", "negated"),
    "identification": ("control", "concept"),
    "prefill": ("control", "matching", "random"),
}
QUESTIONS = ("detect", "yes_bias")
INSTRUCTIONS = ("think", "dont_think")
INJECTED = ("concept", "random", "negated")
CELL = ["layer_fraction", "strength"]


# ------------------------------------------------------------------------------------------- checks
def check_table(rows: pd.DataFrame, table: str) -> pd.DataFrame:
    """``rows`` with the columns and values the ``table`` model needs, or a :class:`DataError` naming
    the first problem and the fix. Returns the rows with the outcome as a boolean / float column."""
    if table not in COLUMNS:
        raise DataError(f"unknown injection table {table!r}: expected one of {sorted(COLUMNS)}")
    missing = [c for c in COLUMNS[table] if c not in rows.columns]
    if missing:
        raise DataError(f"the {table} table lacks the column(s) {', '.join(map(repr, missing))} "
                        f"(it needs {', '.join(COLUMNS[table])}): re-run the injection stage that writes it, "
                        "or add the column(s)")
    if table in CONDITIONS:
        bad = sorted(set(rows["condition"].astype(str)) - set(CONDITIONS[table]))
        if bad:
            raise DataError(f"the {table} table has condition(s) {bad}; expected {list(CONDITIONS[table])}")
    if table == "detection":
        bad = sorted(set(rows["question"].astype(str)) - set(QUESTIONS))
        if bad:
            raise DataError(f"the detection table has question(s) {bad}; expected {list(QUESTIONS)}")
    if table == "intention":
        bad = sorted(set(rows["instruction"].astype(str)) - set(INSTRUCTIONS))
        if bad:
            raise DataError(f"the intention table has instruction(s) {bad}; expected {list(INSTRUCTIONS)}")
        if not np.isfinite(rows["cosine"].to_numpy(dtype=float)).all():
            raise DataError("the intention table has non-finite cosines: drop or recompute those rows")
        if rows["layer_fraction"].isna().any():
            raise DataError("the intention table has rows without a layer_fraction: every row is at a layer")
    outcome = {"detection": "detected", "identification": "correct", "prefill": "accident"}.get(table)
    if outcome is not None:
        if rows[outcome].isna().any():
            raise DataError(f"the {table} table has missing values in {outcome!r}: every trial needs a 0/1 outcome")
        rows = rows.assign(**{outcome: rows[outcome].astype(bool)})
        injected = rows["condition"] != "control"
        if rows.loc[injected, CELL].isna().any().any():
            raise DataError(f"the {table} table has injected rows without a layer_fraction or strength: "
                            "only control rows may have them missing")
    return rows


def _injected_cells(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The cells ``by`` of ``rows``, sorted, one row each, with their layer (the first seen: a layer
    fraction is one layer within a model), trials ``n`` and their position ``cell``."""
    cells = (rows.groupby(by, sort=True, dropna=False).agg(layer=("layer", "first"), n=("layer", "size"))
             .reset_index())
    cells["layer"] = cells["layer"].astype(int)
    return cells.assign(cell=np.arange(len(cells)))


def _codes(values: pd.Series, levels: list) -> np.ndarray:
    return pd.Categorical(values, categories=levels).codes.astype(np.int64)


def _cell_codes(rows: pd.DataFrame, cells: pd.DataFrame, by: list[str]) -> np.ndarray:
    """Each row's position in ``cells`` (matched on ``by``)."""
    keyed = cells.set_index(by)["cell"]
    return keyed.loc[pd.MultiIndex.from_frame(rows[by])].to_numpy().astype(np.int64) if len(by) > 1 \
        else keyed.loc[rows[by[0]]].to_numpy().astype(np.int64)


def _cell_label(row: pd.Series, by: list[str]) -> str:
    return "|".join(f"{b}={row[b]:g}" if isinstance(row[b], (float, np.floating)) else f"{b}={row[b]}" for b in by)


def _has(value) -> bool:
    """Whether a concept / unit label is present (None and NaN are 'no unit')."""
    return value is not None and not (isinstance(value, float) and np.isnan(value))


# --------------------------------------------------------------------------------- likelihood pieces
def _aggregate(codes: dict[str, np.ndarray], y: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Bernoulli rows to binomial counts per distinct combination of integer ``codes`` (the same likelihood,
    fewer terms): the combinations' codes, successes ``k`` and trials ``n``."""
    frame = pd.DataFrame(codes).assign(y=y.astype(int))
    g = frame.groupby(list(codes), sort=True)["y"].agg(k="sum", n="size").reset_index()
    return {c: g[c].to_numpy() for c in codes}, g["k"].to_numpy(), g["n"].to_numpy()


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


def _draws(idata, name: str) -> np.ndarray:
    return M._draws(idata, name)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _summary(d: np.ndarray, prefix: str = "") -> dict:
    """Posterior mean and 95% interval of draws ``d`` (last axis: samples), as ``<prefix>mean, low, high``."""
    return {f"{prefix}mean": float(np.mean(d)), f"{prefix}low": float(np.quantile(d, Q_LOW)),
            f"{prefix}high": float(np.quantile(d, Q_HIGH))}


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


# ---------------------------------------------------------------------------------------- detection
@dataclass
class DetectionDesign:
    """The coding of :func:`detection_model`: the injected cells (condition x layer fraction x strength,
    with their trials ``n`` and successes ``k``), the (condition, concept) levels of the concept effect, and
    the binomial combinations (cell or control, concept level) with counts."""

    cells: pd.DataFrame
    concept_levels: list[str]  # "condition|concept"
    combo_cell: np.ndarray  # -1: control
    combo_concept: np.ndarray  # -1: no concept effect (control, or concept None)
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
    combos, k, n = _aggregate({"cell": cell, "concept": concept}, y)
    return DetectionDesign(cells, levels, combos["cell"], combos["concept"], k, n, len(ctl),
                           int(ctl["detected"].sum()))


def detection_model(rows: pd.DataFrame) -> pm.Model:
    """Detection of an injected thought: a hierarchical logistic regression of ``detected`` (the model
    answers yes to "do you detect an injected thought?", ``p_yes > 0.5``) on one model's ``detect`` rows::

        detected_i ~ Bernoulli(p_i)
        control rows:   logit p_i = phi
        injected rows:  logit p_i = mu[cell_i] + sigma_concept * z[condition_i, concept_i]
        phi, mu[cell] ~ Normal(0, 1.5);  sigma_concept ~ HalfNormal(1);  z ~ Normal(0, 1)

    ``cell`` = (condition, layer fraction, strength), one free logit each (see the module docstring for why
    cells are not pooled). ``phi`` is the false-positive rate's logit: control trials have no injection, so
    no cell and no concept effect. The concept effect is per (condition, concept): a concept's vector and its
    negation need not be equally salient. Its scale is shared by the conditions: at weak strengths and in the
    negated and random conditions there are few detections, and a scale per condition was then barely
    identified (the sampler's worst tail ESS); one scale assumes the same spread between concepts on the
    logit scale in every condition. Rows without a concept (a random vector with ``concept`` None) get no
    concept effect. Quantities (:func:`detection_summary`): ``sigmoid(mu[cell])``, the
    detection rate at the average concept; ``sigmoid(phi)``; their difference per draw."""
    import pymc as pm
    import pytensor.tensor as pt

    des = detection_design(rows)
    coords = {"cell": [_cell_label(r, ["condition", *CELL]) for _, r in des.cells.iterrows()]}
    if des.concept_levels:
        coords["concept"] = des.concept_levels
    with pm.Model(coords=coords) as model:
        phi = pm.Normal("phi", 0.0, LOGIT_SD)
        mu = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        eta = pt.concatenate([mu, phi[None]])[np.where(des.combo_cell < 0, len(des.cells), des.combo_cell)]
        if des.concept_levels:
            eta = eta + _random_effect("concept", "concept", des.combo_concept)
        M._binomial_logit("y", des.n, eta, des.k)
    return model


def detection_summary(idata: az.InferenceData, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """From :func:`detection_model`'s fit on ``rows``: ``cells`` (per cell: the raw ``n, k, rate``; ``mean,
    low, high`` = P(detect) at the average concept; ``obs_*`` = averaged over the cell's concepts;
    ``diff_*`` = detection minus the false-positive rate, with ``p_positive`` = P(diff > 0); ``obs_diff_*``)
    and ``fp_rate`` (one row: raw ``n, k, rate`` and P(yes) on control trials)."""
    des = detection_design(rows)
    mu, phi = _draws(idata, "mu"), _draws(idata, "phi")
    fp = _sigmoid(phi)
    p0 = _sigmoid(mu)
    inj = des.combo_cell >= 0
    eff = (_effect_draws(idata, "concept", des.combo_concept[inj]) if des.concept_levels
           else np.zeros((int(inj.sum()), mu.shape[1])))
    pobs = _observed_average(mu, des.combo_cell[inj], eff, des.n[inj])
    out = []
    for i, c in des.cells.iterrows():
        out.append({"condition": c["condition"], "layer_fraction": c["layer_fraction"], "strength": c["strength"],
                    "layer": c["layer"], "n": int(c["n"]), "k": int(c["k"]), "rate": c["k"] / c["n"],
                    **_summary(p0[i]), **_summary(pobs[i], "obs_"), **_summary(p0[i] - fp, "diff_"),
                    "p_positive": float((p0[i] > fp).mean()), **_summary(pobs[i] - fp, "obs_diff_")})
    fp_row = {"n": des.control_n, "k": des.control_k, "rate": des.control_k / des.control_n, **_summary(fp)}
    return {"cells": pd.DataFrame(out), "fp_rate": pd.DataFrame([fp_row])}


# ---------------------------------------------------------------------------------------- yes bias
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
        M._binomial_logit("y", des.n, eta, des.k)
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


# ----------------------------------------------------------------------------------- identification
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
        M._binomial_logit("y", des.n, eta, des.k)
    return model


def identification_summary(idata: az.InferenceData, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per injected cell (``condition = concept``) and one for the control rows: raw ``n, k,
    rate``; ``chance`` (mean of 1 / n_concepts); ``mean, low, high`` = P(correct) at the average concept
    (the control row: its top-1 rate); ``obs_*`` averaged over the cell's concepts; ``vs_chance_*`` =
    P(correct) - chance with ``p_above_chance``; ``vs_control_*`` = P(correct) - control top-1 rate with
    ``p_above_control`` (NaN on the control row)."""
    des = identification_design(rows)
    mu, gamma = _draws(idata, "mu"), _draws(idata, "gamma")
    p0, pc = _sigmoid(mu), _sigmoid(gamma)
    inj = des.combo_cell >= 0
    eff = _effect_draws(idata, "concept", des.combo_concept[inj])
    pobs = _observed_average(mu, des.combo_cell[inj], eff, des.n[inj])
    nan = {f"vs_control_{s}": np.nan for s in ("mean", "low", "high")} | {"p_above_control": np.nan}
    out = [{"condition": "control", "layer_fraction": np.nan, "strength": 0.0, "layer": -1, "n": des.control_n,
            "k": des.control_k, "rate": des.control_k / des.control_n, "chance": des.control_chance,
            **_summary(pc), **_summary(pc, "obs_"), **_summary(pc - des.control_chance, "vs_chance_"),
            "p_above_chance": float((pc > des.control_chance).mean()), **nan}]
    for i, c in des.cells.iterrows():
        out.append({"condition": "concept", "layer_fraction": c["layer_fraction"], "strength": c["strength"],
                    "layer": c["layer"], "n": int(c["n"]), "k": int(c["k"]), "rate": c["k"] / c["n"],
                    "chance": c["chance"], **_summary(p0[i]), **_summary(pobs[i], "obs_"),
                    **_summary(p0[i] - c["chance"], "vs_chance_"),
                    "p_above_chance": float((p0[i] > c["chance"]).mean()),
                    **_summary(p0[i] - pc, "vs_control_"), "p_above_control": float((p0[i] > pc).mean())})
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------ prefill
@dataclass
class PrefillDesign:
    levels: pd.DataFrame  # condition, layer_fraction, strength, layer, n, k; the control level first
    pairs: list[str]
    combo_level: np.ndarray
    combo_pair: np.ndarray
    k: np.ndarray
    n: np.ndarray


def prefill_design(rows: pd.DataFrame) -> PrefillDesign:
    """The coding of :func:`prefill_model` for one model's rows: one level for all control rows (no
    injection, so no layer or strength), then one per (injected condition, layer fraction, strength)."""
    rows = check_table(rows, "prefill")
    if rows["model"].nunique() > 1:
        raise DataError("prefill_model fits one model's rows at a time: filter the table by `model` first")
    ctl, inj = rows[rows["condition"] == "control"], rows[rows["condition"] != "control"]
    if ctl.empty or not (inj["condition"] == "matching").any():
        raise DataError("the prefill analysis compares matching injection with no injection: the table needs "
                        f"control and matching rows (it has {len(ctl)} control, "
                        f"{int((inj['condition'] == 'matching').sum())} matching)")
    cells = _injected_cells(inj, ["condition", *CELL])
    cells["k"] = inj.groupby(["condition", *CELL], sort=True)["accident"].sum().to_numpy().astype(int)
    control = pd.DataFrame([{"condition": "control", "layer_fraction": np.nan, "strength": 0.0, "layer": -1,
                             "n": len(ctl), "k": int(ctl["accident"].sum())}])
    levels = pd.concat([control, cells.drop(columns="cell")], ignore_index=True)
    pairs = sorted(rows["pair_id"].astype(str).unique())
    level = np.r_[np.zeros(len(ctl), dtype=np.int64), 1 + _cell_codes(inj, cells, ["condition", *CELL])]
    pair = np.r_[_codes(ctl["pair_id"].astype(str), pairs), _codes(inj["pair_id"].astype(str), pairs)]
    y = np.r_[ctl["accident"].to_numpy(), inj["accident"].to_numpy()]
    combos, k, n = _aggregate({"level": level, "pair": pair}, y)
    return PrefillDesign(levels, pairs, combos["level"], combos["pair"], k, n)


def prefill_model(rows: pd.DataFrame) -> pm.Model:
    """Prefill "accidents": after a word is put in the model's mouth, does it disavow it (``accident``,
    ``p_accident > 0.5``)? A logistic regression on one model's rows::

        accident_i ~ Bernoulli(p_i)
        logit p_i = kappa[level_i] + sigma_pair * z[pair_i]
        kappa[level] ~ Normal(0, 1.5);  sigma_pair ~ HalfNormal(1);  z ~ Normal(0, 1)

    ``level`` = control (no injection: one level) or (matching | random, layer fraction, strength): the
    prefilled word's own concept injected, or an unrelated one. A pair (sentence + prefilled word) is seen
    in every condition, so its intercept makes the contrasts within pair. Quantities
    (:func:`prefill_summary`): P(accident) per level at the average pair, and per injected cell the contrasts
    matching - control and matching - random (the published finding: matching injection lowers the rate)."""
    import pymc as pm

    des = prefill_design(rows)
    coords = {"level": [_cell_label(r, ["condition", *CELL]) for _, r in des.levels.iterrows()],
              "pair": des.pairs}
    with pm.Model(coords=coords) as model:
        kappa = pm.Normal("kappa", 0.0, LOGIT_SD, dims="level")
        eta = kappa[des.combo_level] + _random_effect("pair", "pair", des.combo_pair)
        M._binomial_logit("y", des.n, eta, des.k)
    return model


def prefill_summary(idata: az.InferenceData, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``conditions``: per level (control; matching / random per cell) the raw ``n, k, rate`` and
    P(accident) at the average pair (``mean, low, high``) and averaged over its pairs (``obs_*``).
    ``contrasts``: per injected cell, ``matching - control`` and (where random rows exist) ``matching -
    random``, as ``mean, low, high`` (differences of probabilities), ``p_positive``, and ``obs_*``."""
    des = prefill_design(rows)
    kappa = _draws(idata, "kappa")
    p0 = _sigmoid(kappa)
    eff = _effect_draws(idata, "pair", des.combo_pair)
    pobs = _observed_average(kappa, des.combo_level, eff, des.n)
    lv = des.levels
    conds = [{**{c: r[c] for c in ("condition", "layer_fraction", "strength", "layer", "n", "k")},
              "rate": r["k"] / r["n"], **_summary(p0[i]), **_summary(pobs[i], "obs_")} for i, r in lv.iterrows()]
    contrasts = []
    for i, r in lv[lv["condition"] == "matching"].iterrows():
        others = [("control", 0)]
        same = lv.index[(lv["condition"] == "random") & (lv["layer_fraction"] == r["layer_fraction"])
                        & (lv["strength"] == r["strength"])]
        others += [("random", int(j)) for j in same]
        for name, j in others:
            d, dobs = p0[i] - p0[j], pobs[i] - pobs[j]
            contrasts.append({"contrast": f"matching - {name}", "layer_fraction": r["layer_fraction"],
                              "strength": r["strength"], "layer": r["layer"], **_summary(d),
                              "p_positive": float((d > 0).mean()), **_summary(dobs, "obs_")})
    return {"conditions": pd.DataFrame(conds), "contrasts": pd.DataFrame(contrasts)}


# ---------------------------------------------------------------------------------------- intention
@dataclass
class IntentionDesign:
    layers: pd.DataFrame  # layer, layer_fraction, n (sentences)
    sentences: list[str]
    layer: np.ndarray
    sentence: np.ndarray
    y: np.ndarray  # paired difference think - dont_think, divided by scale
    scale: float


def intention_design(rows: pd.DataFrame) -> IntentionDesign:
    """The coding of :func:`intention_model` for one model's rows: one paired difference per sentence and layer,
    ``cosine(think) - cosine(dont_think)`` (the same sentence, word and layer under both instructions), divided
    by the differences' standard deviation so that the priors are on a known scale (0 stays 0)."""
    rows = check_table(rows, "intention")
    if rows["model"].nunique() > 1:
        raise DataError("intention_model fits one model's rows at a time: filter the table by `model` first")
    if rows["instruction"].nunique() < 2:
        raise DataError("the intention table needs both instructions, think and dont_think")
    wide = rows.assign(sentence_id=rows["sentence_id"].astype(str)).pivot_table(
        index=["sentence_id", "layer", "layer_fraction"], columns="instruction", values="cosine", aggfunc="mean")
    wide = wide.dropna().reset_index()
    if wide.empty:
        raise DataError("the intention table has no (sentence, layer) seen under both instructions")
    d = (wide["think"] - wide["dont_think"]).to_numpy(dtype=float)
    layers = wide.groupby("layer", sort=True).agg(layer_fraction=("layer_fraction", "first"),
                                                  n=("think", "size")).reset_index()
    sentences = sorted(wide["sentence_id"].unique())
    scale = float(d.std()) or 1.0
    return IntentionDesign(layers, sentences, _codes(wide["layer"], list(layers["layer"])),
                           _codes(wide["sentence_id"], sentences), d / scale, scale)


def intention_model(rows: pd.DataFrame) -> pm.Model:
    """Intentional control: does the instruction "think about {word}" (against "do not think about {word}")
    move the residual stream, while the model writes a sentence, toward the word's concept vector? On the
    paired difference ``d[s, l] = cosine(think) - cosine(dont_think)`` of sentence ``s`` at layer ``l`` (the
    same sentence, word and layer under both instructions; divided by its standard deviation ``c``)::

        d[s, l] / c ~ StudentT(nu, delta[l] + tau * u[s], sigma[l])
        delta ~ Normal(0, 1);  tau, sigma ~ HalfNormal(1);  u ~ Normal(0, 1);  nu ~ Gamma(2, 0.1)

    Pairing removes everything the two instructions share: which word's vector the cosine is taken with
    (the cosine itself varies across words and layers far more than the instruction moves it), the sentence
    and the layer. ``delta[l]`` is the population-level difference at layer ``l``; each sentence's own shift
    ``tau * u[s]`` is shared by its layers, so the layers of one sentence are not counted as independent
    replicates; the noise scale ``sigma[l]`` is per layer (differences are much smaller in early layers); the
    Student-t likelihood keeps a few outlying sentences from moving the means. Quantity
    (:func:`intention_summary`): ``c * delta[l]`` per layer, in cosine units."""
    import pymc as pm

    des = intention_design(rows)
    coords = {"layer": [int(v) for v in des.layers["layer"]], "sentence": des.sentences}
    with pm.Model(coords=coords) as model:
        delta = pm.Normal("delta", 0.0, 1.0, dims="layer")
        tau = pm.HalfNormal("tau_sentence", SCALE_SD)
        u = pm.Normal("u_sentence", 0.0, 1.0, dims="sentence")
        sigma = pm.HalfNormal("sigma_y", SCALE_SD, dims="layer")
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("y", nu=nu, mu=delta[des.layer] + tau * u[des.sentence], sigma=sigma[des.layer], observed=des.y)
    return model


def intention_summary(idata: az.InferenceData, rows: pd.DataFrame) -> pd.DataFrame:
    """Per layer: ``layer_fraction``, ``n`` (sentences), the raw mean cosines ``raw_think, raw_dont_think`` and
    their difference ``raw_diff`` (also as ``think_mean, dont_think_mean``), and the posterior think -
    don't-think difference (cosine units) as ``mean, low, high``, ``p_positive``, and ``obs_*`` (including the
    observed sentences' average shift)."""
    des = intention_design(rows)
    delta = _draws(idata, "delta")  # (layer, samples)
    shift = (_draws(idata, "tau_sentence")[None, :] * _draws(idata, "u_sentence")).mean(axis=0)
    diff = des.scale * delta
    raw = rows.assign(y=rows["cosine"].astype(float)).pivot_table(index="layer", columns="instruction", values="y",
                                                                   aggfunc="mean")
    out = []
    for j, r in des.layers.iterrows():
        rt, rd = raw.loc[r["layer"], "think"], raw.loc[r["layer"], "dont_think"]
        out.append({"layer": int(r["layer"]), "layer_fraction": r["layer_fraction"], "n": int(r["n"]),
                    "raw_think": rt, "raw_dont_think": rd, "raw_diff": rt - rd, "think_mean": rt, "dont_think_mean": rd,
                    **_summary(diff[j]), "p_positive": float((diff[j] > 0).mean()),
                    **_summary(diff[j] + des.scale * shift, "obs_")})
    return pd.DataFrame(out)

# ------------------------------------------------------------------------------------------ fitting
#: the result tables of :func:`fit_all`
RESULTS = ("detection_cells", "fp_rate", "yes_bias", "identification_cells", "prefill_conditions",
           "prefill_contrasts", "intention_layers")


def _fit(model: pm.Model, settings: M.SamplerSettings, name: str) -> tuple[az.InferenceData, dict]:
    idata = M.sample(model, settings)
    return idata, M.check_convergence(idata, name)


def fit_all(tables: dict[str, pd.DataFrame], settings: M.SamplerSettings) -> dict:
    """Every model's fits of every non-empty table in ``tables`` (keys among ``detection``,
    ``identification``, ``prefill``, ``intention``), each through the convergence gate (a failing fit raises
    :class:`analysis.models.ConvergenceError`). Returns the tables :data:`RESULTS` (each with a ``model``
    column first; empty where its input is absent) and ``diagnostics``: a list of ``{"model", "fit",
    "diagnostics"}``. The detection table gives two fits, ``detection`` and (where it has yes_bias rows)
    ``yes_bias``."""
    unknown = sorted(set(tables) - set(COLUMNS))
    if unknown:
        raise DataError(f"unknown injection table(s) {unknown}: expected keys among {sorted(COLUMNS)}")
    parts: dict[str, list[pd.DataFrame]] = {r: [] for r in RESULTS}
    diags: list[dict] = []

    def run(name: str, build, rows: pd.DataFrame, model_name: str):
        idata, d = _fit(build(rows), settings, f"{name} ({model_name})")
        diags.append({"model": model_name, "fit": name, "diagnostics": d})
        return idata

    for table in ("detection", "identification", "prefill", "intention"):
        rows = tables.get(table)
        if rows is None or rows.empty:
            continue
        rows = check_table(rows, table)
        for m in sorted(rows["model"].astype(str).unique()):
            r = rows[rows["model"].astype(str) == m]
            tag = lambda df: df.assign(model=m)[["model", *df.columns]]  # noqa: E731
            if table == "detection":
                s = detection_summary(run("detection", detection_model, r, m), r)
                parts["detection_cells"].append(tag(s["cells"]))
                parts["fp_rate"].append(tag(s["fp_rate"]))
                if (r["question"] == "yes_bias").any():
                    parts["yes_bias"].append(tag(yes_bias_summary(run("yes_bias", yes_bias_model, r, m), r)))
            elif table == "identification":
                parts["identification_cells"].append(
                    tag(identification_summary(run("identification", identification_model, r, m), r)))
            elif table == "prefill":
                s = prefill_summary(run("prefill", prefill_model, r, m), r)
                parts["prefill_conditions"].append(tag(s["conditions"]))
                parts["prefill_contrasts"].append(tag(s["contrasts"]))
            else:
                parts["intention_layers"].append(tag(intention_summary(run("intention", intention_model, r, m), r)))
    out: dict = {k: (pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=["model", "mean", "low", "high"]))
                 for k, v in parts.items()}
    out["diagnostics"] = diags
    return out


# ------------------------------------------------------------------------------------ frequentist
def frequentist_summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The raw rates per model and cell with Wilson 95% intervals (statsmodels ``proportion_confint``,
    ``method="wilson"``, through :func:`analysis.frequentist.wilson`): a cross-check of the Bayesian cell
    rates that assumes independent trials. Columns: ``model, table, outcome, condition, layer_fraction,
    strength, n, k, rate, low, high``; ``table`` is detection (``detect`` questions), yes_bias,
    identification or prefill, and control rows form one row each (layer_fraction NaN, strength 0)."""
    from .frequentist import wilson

    specs = [("detection", "detection", "detected", lambda r: r["question"] == "detect"),
             ("yes_bias", "detection", "detected", lambda r: r["question"] == "yes_bias"),
             ("identification", "identification", "correct", None),
             ("prefill", "prefill", "accident", None)]
    for table, rows in tables.items():  # every table given is checked, the intention table included
        if table not in COLUMNS:
            raise DataError(f"unknown injection table {table!r}: expected keys among {sorted(COLUMNS)}")
        if rows is not None and not rows.empty:
            check_table(rows, table)
    parts = []
    for name, table, outcome, pick in specs:
        rows = tables.get(table)
        if rows is None or rows.empty:
            continue
        rows = check_table(rows, table)
        if pick is not None:
            rows = rows[pick(rows)]
        if rows.empty:
            continue
        rows = rows.assign(layer_fraction=rows["layer_fraction"].where(rows["condition"] != "control", np.nan),
                           strength=rows["strength"].where(rows["condition"] != "control", 0.0))
        g = (rows.groupby(["model", "condition", *CELL], sort=True, dropna=False)[outcome]
             .agg(n="size", k="sum").reset_index())
        parts.append(g.assign(table=name, outcome=outcome))
    cols = ["model", "table", "outcome", "condition", *CELL, "n", "k", "rate", "low", "high"]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    out["k"] = out["k"].astype(int)
    out["rate"] = out["k"] / out["n"]
    out["low"], out["high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out[cols]


# ------------------------------------------------------------------------------------- simulation
def _latent_probability(rng: np.random.Generator, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A continuous probability whose thresholding at 0.5 is Bernoulli(sigmoid(eta)): ``sigmoid(eta + e)``
    with logistic noise ``e`` (P(eta + e > 0) = sigmoid(eta)). Returns (probability, outcome)."""
    latent = eta + rng.logistic(size=np.shape(eta))
    return _sigmoid(latent), latent > 0


def _logit(p):
    return np.log(p) - np.log1p(-p)


def detection_truth_logit(condition: str, layer_fraction: float, strength: float, fp_rate: float) -> float:
    """The simulated detection logit at the average concept: the false-positive rate plus a detection
    probability that rises with log strength and peaks about two thirds of the way through the model, a
    concept's vector more detectable than its negation or a random vector. A weak injection is as good as
    none: its cells sit at the false-positive rate (with the default 1%, mostly all-zero in 50 trials)."""
    gain = {"concept": 1.6, "negated": 1.25, "random": 1.0}[condition]
    g = -5.0 + gain * np.log2(strength) - 10.0 * (layer_fraction - 0.62) ** 2
    return float(_logit(fp_rate + (1.0 - fp_rate) * _sigmoid(g)))


def simulate_detection(seed: int = 0, model: str = "sim", n_concepts: int = 50, n_layers: int = 30,
                       layers: tuple[int, ...] = (10, 15, 20), strengths: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0),
                       conditions: tuple[str, ...] = INJECTED, n_controls: int = 50, n_bias_questions: int = 20,
                       concept_sd: float = 0.8, question_sd: float = 0.8, fp_rate: float = 0.01,
                       yes_control: float = 0.15, yes_gain: float = 0.3) -> tuple[pd.DataFrame, dict]:
    """A detection table with known truth, in the schema of :data:`COLUMNS` ``["detection"]``.

    ``detect`` rows: every concept in every (condition, layer, strength) cell once (the random condition's
    vector has no concept: ``concept`` None), with logit :func:`detection_truth_logit` + a (condition,
    concept) effect ``~ Normal(0, concept_sd)``; ``n_controls`` control trials at ``fp_rate``.
    ``yes_bias`` rows: ``n_bias_questions`` questions, each once per injected cell and once without
    injection, P(yes) = ``sigmoid(logit(yes_control) + yes_gain * log2(strength) + question effect)``.

    ``truth``: ``cells`` (condition, layer_fraction, strength, p [average concept], p_obs [averaged over the
    realised concept effects], diff = p - fp_rate), ``fp_rate``, ``yes_bias`` (cells with p and diff =
    p - yes_control at the average question), ``yes_control``."""
    rng = np.random.default_rng(seed)
    concepts = [f"concept{j:02d}" for j in range(n_concepts)]
    effects = {c: rng.normal(0.0, concept_sd, n_concepts) for c in conditions if c != "random"}
    recs, truth_cells = [], []
    for cond in conditions:
        for layer in layers:
            lf = layer / n_layers
            for s in strengths:
                eta0 = detection_truth_logit(cond, lf, s, fp_rate)
                eff = effects.get(cond, np.zeros(n_concepts))
                p_yes, det = _latent_probability(rng, eta0 + eff)
                for j in range(n_concepts):
                    recs.append(("detect", "q_detect", cond, concepts[j] if cond != "random" else None, layer, lf, s,
                                 p_yes[j], det[j]))
                truth_cells.append({"condition": cond, "layer_fraction": lf, "strength": s, "p": _sigmoid(eta0),
                                    "p_obs": float(_sigmoid(eta0 + eff).mean()),
                                    "diff": _sigmoid(eta0) - fp_rate})
    p_yes, det = _latent_probability(rng, np.full(n_controls, _logit(fp_rate)))
    recs += [("detect", "q_detect", "control", None, -1, np.nan, 0.0, p_yes[j], det[j]) for j in range(n_controls)]
    q_eff = rng.normal(0.0, question_sd, n_bias_questions)
    questions = [f"bias{j:02d}" for j in range(n_bias_questions)]
    truth_bias = []
    for cond in conditions:
        for layer in layers:
            lf = layer / n_layers
            for s in strengths:
                eta0 = _logit(yes_control) + yes_gain * np.log2(s)
                p_yes, det = _latent_probability(rng, eta0 + q_eff)
                for j in range(n_bias_questions):
                    concept = concepts[j % n_concepts] if cond != "random" else None
                    recs.append(("yes_bias", questions[j], cond, concept, layer, lf, s, p_yes[j], det[j]))
                truth_bias.append({"condition": cond, "layer_fraction": lf, "strength": s, "p": _sigmoid(eta0),
                                   "diff": _sigmoid(eta0) - yes_control})
    p_yes, det = _latent_probability(rng, _logit(yes_control) + q_eff)
    recs += [("yes_bias", questions[j], "control", None, -1, np.nan, 0.0, p_yes[j], det[j])
             for j in range(n_bias_questions)]
    rows = pd.DataFrame(recs, columns=["question", "question_id", "condition", "concept", "layer", "layer_fraction",
                                       "strength", "p_yes", "detected"])
    rows["p_outside"] = rng.beta(1.0, 30.0, len(rows))
    rows = rows.assign(model=model, detected=rows["detected"].astype(bool), layer=rows["layer"].astype(int))
    truth = {"cells": pd.DataFrame(truth_cells), "fp_rate": fp_rate, "yes_bias": pd.DataFrame(truth_bias),
             "yes_control": yes_control}
    return rows[COLUMNS["detection"]], truth


def identification_truth_logit(layer_fraction: float, strength: float, chance: float) -> float:
    """The simulated identification logit at the average concept: chance plus an identification probability
    rising with log strength and peaking about two thirds of the way through the model; a weak injection
    leaves the model at chance."""
    g = -4.2 + 1.3 * np.log2(strength) - 10.0 * (layer_fraction - 0.62) ** 2
    return float(_logit(chance + (1.0 - chance) * _sigmoid(g)))


def simulate_identification(seed: int = 0, model: str = "sim", n_concepts: int = 50, n_layers: int = 30,
                            layers: tuple[int, ...] = (10, 15, 20),
                            strengths: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0), concept_sd: float = 0.8,
                            control_rate: float | None = None) -> tuple[pd.DataFrame, dict]:
    """An identification table with known truth: every concept in every (layer, strength) cell once,
    ``correct`` with logit :func:`identification_truth_logit` + a concept effect ``~ Normal(0, concept_sd)``,
    and one control row per concept at ``control_rate`` (default: chance, ``1 / n_concepts``: without
    injection the model's pick has nothing to do with the slot's concept); ``n_concepts`` candidates. ``rank`` and ``p_true``
    are consistent with ``correct`` (rank 1 and the largest probability when correct).

    ``truth``: ``cells`` (layer_fraction, strength, p, p_obs, vs_chance, vs_control), ``control``,
    ``chance``."""
    rng = np.random.default_rng(seed)
    concepts = [f"concept{j:02d}" for j in range(n_concepts)]
    eff = rng.normal(0.0, concept_sd, n_concepts)
    chance = 1.0 / n_concepts
    control_rate = chance if control_rate is None else control_rate

    def outcome(eta):
        correct = rng.random(len(eta)) < _sigmoid(eta)
        rank = np.where(correct, 1, rng.integers(2, n_concepts + 1, len(eta)))
        p_true = np.where(correct, rng.uniform(0.5, 0.99, len(eta)), rng.uniform(0.0, 0.45, len(eta)) / rank)
        return correct, rank, p_true

    recs, truth = [], []
    for layer in layers:
        lf = layer / n_layers
        for s in strengths:
            eta0 = identification_truth_logit(lf, s, chance)
            correct, rank, p_true = outcome(eta0 + eff)
            recs += [("q_identify", "concept", concepts[j], layer, lf, s, p_true[j], rank[j], correct[j])
                     for j in range(n_concepts)]
            truth.append({"layer_fraction": lf, "strength": s, "p": _sigmoid(eta0),
                          "p_obs": float(_sigmoid(eta0 + eff).mean()), "vs_chance": _sigmoid(eta0) - chance,
                          "vs_control": _sigmoid(eta0) - control_rate})
    correct, rank, p_true = outcome(np.full(n_concepts, _logit(control_rate)))
    recs += [("q_identify", "control", concepts[j], -1, np.nan, 0.0, p_true[j], rank[j], correct[j])
             for j in range(n_concepts)]
    rows = pd.DataFrame(recs, columns=["question_id", "condition", "concept", "layer", "layer_fraction", "strength",
                                       "p_true", "rank", "correct"])
    rows = rows.assign(model=model, n_concepts=n_concepts, correct=rows["correct"].astype(bool),
                       rank=rows["rank"].astype(int), layer=rows["layer"].astype(int))
    return rows[COLUMNS["identification"]], {"cells": pd.DataFrame(truth), "control": control_rate, "chance": chance}


def simulate_prefill(seed: int = 0, model: str = "sim", n_pairs: int = 60, n_layers: int = 30,
                     cells: tuple[tuple[int, float], ...] = ((20, 4.0),), p_control: float = 0.85,
                     p_matching: float = 0.4, p_random: float = 0.8, pair_sd: float = 1.0
                     ) -> tuple[pd.DataFrame, dict]:
    """A prefill table with known truth: ``n_pairs`` (sentence, prefilled word) pairs, each once without
    injection and once per (layer, strength) cell with the matching and with a random concept injected;
    P(accident) = ``sigmoid(logit(p_<condition>) + pair effect)``, pair effects ``~ Normal(0, pair_sd)``
    (``p_*`` are at the average pair, the same in every cell). ``p_matching = p_control = p_random`` is the
    null. ``truth``: ``conditions`` {condition: p}, ``contrasts`` {"matching - control": ...,
    "matching - random": ...}."""
    rng = np.random.default_rng(seed)
    eff = rng.normal(0.0, pair_sd, n_pairs)
    words = [f"word{j:02d}" for j in range(n_pairs)]
    p = {"control": p_control, "matching": p_matching, "random": p_random}
    recs = []
    settings = [("control", -1, np.nan, 0.0)] + [(c, layer, layer / n_layers, s) for layer, s in cells
                                                 for c in ("matching", "random")]
    for cond, layer, lf, s in settings:
        prob, acc = _latent_probability(rng, _logit(p[cond]) + eff)
        recs += [(f"pair{j:02d}", words[j], cond, layer, lf, s, prob[j], acc[j]) for j in range(n_pairs)]
    rows = pd.DataFrame(recs, columns=["pair_id", "word", "condition", "layer", "layer_fraction", "strength",
                                       "p_accident", "accident"])
    rows = rows.assign(model=model, accident=rows["accident"].astype(bool), layer=rows["layer"].astype(int))
    truth = {"conditions": p, "contrasts": {"matching - control": p_matching - p_control,
                                            "matching - random": p_matching - p_random}}
    return rows[COLUMNS["prefill"]], truth


def intention_truth(layer_fraction: float) -> tuple[float, float]:
    """The simulated mean cosines (think, don't think) at a layer fraction: both peak mid-to-late, thinking
    about the word more than not thinking about it, and not thinking about it still above baseline."""
    bump = np.exp(-(((layer_fraction - 0.6) / 0.2) ** 2))
    return 0.04 + 0.12 * bump, 0.03 + 0.05 * bump


def simulate_intention(seed: int = 0, model: str = "sim", n_sentences: int = 24, n_words: int = 12,
                       n_layers: int = 32, layers: tuple[int, ...] = tuple(range(3, 33, 3)), word_sd: float = 0.02,
                       sentence_sd: float = 0.01, shift_sd: float = 0.01, noise_sd: float = 0.015,
                       df: float = 5.0) -> tuple[pd.DataFrame, dict]:
    """An intention table with known truth: ``n_sentences`` sentences, sentence ``i`` carrying word
    ``i % n_words``, each written under both instructions, the cosine read at each of ``layers``:
    ``intention_truth`` + word and sentence intercepts + the sentence's think shift ``~ Normal(0,
    shift_sd)`` (added for think, as ``+/- 1/2`` of it) + Student-t noise (``df``, scale ``noise_sd``).
    ``truth``: ``layers`` (layer, layer_fraction, think, dont_think, diff at the average sentence)."""
    rng = np.random.default_rng(seed)
    w_eff, s_eff = rng.normal(0, word_sd, n_words), rng.normal(0, sentence_sd, n_sentences)
    shift = rng.normal(0, shift_sd, n_sentences)
    recs, truth = [], []
    for layer in layers:
        lf = layer / n_layers
        think, dont = intention_truth(lf)
        truth.append({"layer": layer, "layer_fraction": lf, "think": think, "dont_think": dont, "diff": think - dont})
        for i in range(n_sentences):
            base = w_eff[i % n_words] + s_eff[i]
            for instr, m, sign in (("think", think, 0.5), ("dont_think", dont, -0.5)):
                y = m + base + sign * shift[i] + noise_sd * rng.standard_t(df)
                recs.append((f"s{i:02d}", f"word{i % n_words:02d}", instr, layer, lf, y))
    rows = pd.DataFrame(recs, columns=["sentence_id", "word", "instruction", "layer", "layer_fraction", "cosine"])
    rows = rows.assign(model=model)
    return rows[COLUMNS["intention"]], {"layers": pd.DataFrame(truth)}
