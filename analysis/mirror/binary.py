"""The mirror test's binary outcomes: the noticing and recognition models and their summaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from analysis.bayes import category_codes as _codes
from analysis.bayes import aggregate_binomial as _aggregate, draws as _draws, sigmoid as _sigmoid
from analysis.mirror.design import (CELL, CONDITIONS, LOGIT_SD, OUTCOMES, SLOPE_SD, _binomial_logit, _cells, _conversation_codes,
                     _conversation_draws, _conversation_effects, _label, _summary, altered_only, check_table)

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class BinaryDesign:
    """The coding of :func:`noticing_model` and :func:`recognition_model`: the model cells (with their
    trials ``n`` and successes ``k``), the turn slopes (one per model and condition; none when a single turn
    is measured), the conversation levels, and the binomial counts on one grid per model of the fixed
    part's combinations (model cell, slope, turn) by the model's (model, script) pairs: ``blocks`` holds each
    model's (combinations, pairs) positions, ``k`` and ``n`` the grids' counts raveled one after another, ``n =
    0`` where nothing was observed (such entries add nothing to the likelihood). ``x`` = (turn -
    ``turn_mean``) / ``turn_scale``.

    Why grids: the linear predictor is the sum of a part that depends on the combination and a part that
    depends on the pair, so on a model's grid it is one broadcast sum of two short vectors, without a gather
    per term over thousands of rows."""

    outcome: str
    cells: pd.DataFrame
    slopes: pd.DataFrame  # model, condition, slope
    scripts: list[str]
    model_scripts: list[str]
    pair_model: np.ndarray  # the model of each (model, script) pair
    pair_script: np.ndarray  # the script of each pair
    turn_mean: float
    turn_scale: float
    fixed_cell: np.ndarray  # per combination of the fixed part
    fixed_slope: np.ndarray
    fixed_x: np.ndarray
    blocks: list[tuple[np.ndarray, np.ndarray]]  # per model: its combinations, its pairs
    k: np.ndarray  # the grids' counts, raveled and concatenated
    n: np.ndarray


def _outcome(rows: pd.DataFrame, outcome: str) -> tuple[pd.DataFrame, np.ndarray]:
    if outcome == "notices":
        return rows, rows["notices"].to_numpy(dtype=bool)
    if outcome == "judge_notices":
        rows = rows[rows["judge_notices"].notna()]
        if rows.empty:
            raise DataError("the mirror turns table has no judge grades (judge_notices is NaN throughout): set "
                            "mirror.judge and re-run the stage, or fit the rules' grade (outcome='notices')")
        return rows, rows["judge_notices"].to_numpy(dtype=float) > 0.5
    if outcome == "says_yes":
        return rows, rows["p_yes"].to_numpy(dtype=float) > 0.5
    raise DataError(f"unknown mirror outcome {outcome!r}: expected one of {[*OUTCOMES, 'says_yes']}")


def binary_design(turns: pd.DataFrame, outcome: str) -> BinaryDesign:
    """The :class:`BinaryDesign` of the ``turns`` table (all models) for ``outcome``: ``notices``,
    ``judge_notices`` (rows with a judge grade; ``> 0.5``) or ``says_yes`` (``p_yes > 0.5``)."""
    rows = altered_only(check_table(turns, "turns"))
    rows, y = _outcome(rows, outcome)
    if rows.empty:
        raise DataError("the mirror turns table is empty: run the mirror stage first")
    no_control = sorted(set(rows["model"]) - set(rows.loc[rows["condition"] == "control", "model"]))
    if no_control:
        raise DataError(f"the mirror turns table has no control rows for model(s) {no_control}: every altered "
                        "history is compared with the clean one, so each model needs control rows")
    cells, cell = _cells(rows)
    cells["n"] = np.bincount(cell, minlength=len(cells))
    cells["k"] = np.bincount(cell, weights=y.astype(float), minlength=len(cells)).astype(int)
    turn = rows["turn"].to_numpy(dtype=float)
    turn_mean, turn_sd = float(turn.mean()), float(turn.std())
    if turn_sd > 0:
        slopes = rows[["model", "condition"]].drop_duplicates()
        slopes = slopes.assign(_c=slopes["condition"].map(CONDITIONS.index)).sort_values(["model", "_c"])
        slopes = slopes.drop(columns="_c").reset_index(drop=True).assign(slope=lambda s: np.arange(len(s)))
        index = pd.MultiIndex.from_frame(slopes[["model", "condition"]])
        slope = index.get_indexer(pd.MultiIndex.from_frame(rows[["model", "condition"]])).astype(np.int64)
    else:
        slopes = pd.DataFrame(columns=["model", "condition", "slope"])
        slope, turn_sd = np.full(len(rows), -1, dtype=np.int64), 1.0
    scripts, pairs, ms, pair_model, pair_script = _conversation_codes(rows)
    combos, k, n = _aggregate({"cell": cell, "slope": slope, "turn": rows["turn"].to_numpy(), "model_script": ms}, y)
    fixed = pd.DataFrame({c: combos[c] for c in ("cell", "slope", "turn")})
    fixed_id = fixed.groupby(["cell", "slope", "turn"], sort=True).ngroup().to_numpy()
    uniq = fixed.drop_duplicates().sort_values(["cell", "slope", "turn"]).reset_index(drop=True)
    kg, ng = np.zeros((len(uniq), len(pairs)), dtype=np.int64), np.zeros((len(uniq), len(pairs)), dtype=np.int64)
    np.add.at(kg, (fixed_id, combos["model_script"]), k)
    np.add.at(ng, (fixed_id, combos["model_script"]), n)
    models = sorted(rows["model"].unique())
    fixed_model = _codes(cells["model"].to_numpy()[uniq["cell"].to_numpy()], models)
    blocks = [(np.flatnonzero(fixed_model == j), np.flatnonzero(pair_model == j)) for j in range(len(models))]
    return BinaryDesign(outcome, cells, slopes, scripts, pairs, pair_model, pair_script, turn_mean, turn_sd,
                        uniq["cell"].to_numpy(np.int64), uniq["slope"].to_numpy(np.int64),
                        (uniq["turn"].to_numpy(float) - turn_mean) / turn_sd, blocks,
                        np.concatenate([kg[np.ix_(f, p)].ravel() for f, p in blocks]),
                        np.concatenate([ng[np.ix_(f, p)].ravel() for f, p in blocks]))


def _binary_model(des: BinaryDesign) -> pm.Model:
    import pymc as pm
    import pytensor.tensor as pt

    coords = {"cell": [_label(r) for _, r in des.cells.iterrows()], "script": des.scripts,
              "model_script": des.model_scripts}
    if len(des.slopes):
        coords["slope"] = [f"{r['model']}|{r['condition']}" for _, r in des.slopes.iterrows()]
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        fixed = mu[des.fixed_cell]
        if len(des.slopes):
            beta = pm.Normal("beta_turn", 0.0, SLOPE_SD, dims="slope")
            fixed = fixed + beta[des.fixed_slope] * des.fixed_x
        conv = _conversation_effects(des.pair_model, des.pair_script)
        eta = pt.concatenate([(fixed[f][:, None] + conv[p][None, :]).ravel() for f, p in des.blocks])
        _binomial_logit("y", des.n, eta, des.k)
    return model


def noticing_model(turns: pd.DataFrame, outcome: str = "notices") -> pm.Model:
    """Spontaneous noticing: a hierarchical logistic regression of ``notices`` (the model's next reply
    remarks on typos, errors or oddities in its earlier messages; ``outcome="judge_notices"``: the judge's
    grade, on the rows that have one) on every model's rows of the ``turns`` table, jointly::

        notices_i ~ Bernoulli(p_i)
        logit p_i = mu[m_i, c_i] + beta[m_i, g_i] * (turn_i - tbar) / sd_turn + u[s_i] + w[m_i, s_i]
        u = sigma_script * B_s z_s        (sum_s u[s] = 0)
        w = sigma_ms * B_ms z_ms          (sum_s w[m, s] = 0 for every m;  sum_m w[m, s] = 0 for every s)
        mu ~ Normal(0, 1.5);  beta ~ Normal(0, 1);  sigma_script, sigma_ms ~ HalfNormal(1);
        z_s, z_ms ~ Normal(0, 1)

    ``m`` = model, ``c`` = cell (control | other | each corrupted (kind, level)), ``g`` = condition (control,
    corrupted, other), ``s`` = conversation script; ``tbar`` and ``sd_turn`` are the mean and standard
    deviation of the measured turns (so ``mu`` is the logit at the average turn and ``beta`` the change per
    standard deviation of turn); ``B_*`` are orthonormal bases of the zero-sum effects
    (:func:`_zero_sum_effect`), so ``mu`` is at the average of the observed conversations. With one model
    there is no ``w`` (it would be zero).

    The turn effect is linear and per (model, condition): what grows with the turn differs between the
    conditions (a corrupted history accumulates corrupted replies, ``t - 1`` of them at turn ``t``; a control
    history only grows longer), and a model's response to either is its own; a linear term costs one
    parameter where a categorical turn would cost one per measured turn and cell, and with the two to four
    measured turns of the profiles it is the same fit or close to it. The slope is shared by a condition's
    kinds and levels (its cells differ in their mean, not in how the turn moves them on the logit scale).
    With one measured turn there is no slope. The script effect is shared by the models (the scripts, and so
    which conversations invite a remark, are the same for every model); the model x script term is the part
    of a script's effect that belongs to one model (its own replies are what is altered). Both are one
    intercept per conversation for all its cells and turns: the cells are compared within conversation.

    Quantities (:func:`binary_summary`): P(notice) per model cell, ``sigmoid(mu)``, at the average
    conversation and turn; and per model each corrupted / other cell minus the model's control cell, per
    draw. A model that never remarks on anything gives an all-zero table: it still samples (the priors are
    proper and the random effects non-centred), and every cell's interval is then an upper bound (about 6% with
    80 replies per cell; the lower end reflects the prior)."""
    return _binary_model(binary_design(turns, outcome))


def recognition_model(turns: pd.DataFrame) -> pm.Model:
    """Prompted recognition: the same hierarchical logistic regression as :func:`noticing_model` for
    ``says_yes = p_yes > 0.5`` (asked "did you write every reply shown above as yours exactly as it appears,
    word for word?", the model claims the history as its own)::

        says_yes_i ~ Bernoulli(p_i)
        logit p_i = mu[m_i, c_i] + beta[m_i, g_i] * (turn_i - tbar) / sd_turn + u[s_i] + w[m_i, s_i]
        u, w, and the priors: as in noticing_model

    The answer is thresholded at 0.5 (the forced-choice answer the model would give greedily) rather than
    modelled as a probability, as in the injection analysis: ``p_yes`` of a small model sits near 0 or 1 for
    most prompts, and what is asked is whether the model says the text is its own. Quantities: P(says the
    history is its own) per model cell at the average conversation and turn, and each corrupted / other cell
    minus the model's control cell (negative where the model recognises that its history was altered)."""
    return _binary_model(binary_design(turns, "says_yes"))


def binary_summary(idata: az.InferenceData, turns: pd.DataFrame, outcome: str) -> dict[str, pd.DataFrame]:
    """From a :func:`noticing_model` / :func:`recognition_model` fit on ``turns``:

    * ``cells``: per model cell ``model, condition, kind, level``, the raw ``n, k, rate``, ``mean, low,
      high`` = P(outcome) at the average conversation and turn, ``obs_*`` = averaged over the cell's observed
      conversations and turns;
    * ``contrasts``: per model, each corrupted / other cell minus the model's control cell, ``mean, low,
      high``, ``p_positive`` and ``obs_*``;
    * ``turn``: per model and condition the turn slope ``beta`` on the logit scale per turn (``mean, low,
      high``; empty when one turn is measured)."""
    des = binary_design(turns, outcome)
    mu = _draws(idata, "mu")
    p0 = _sigmoid(mu)
    fixed = mu[des.fixed_cell]
    if len(des.slopes):
        beta = _draws(idata, "beta_turn")
        fixed = fixed + beta[des.fixed_slope] * des.fixed_x[:, None]
    conv = _conversation_draws(idata, des.pair_model, des.pair_script)
    pobs = np.zeros_like(mu)
    n_grid = np.zeros((len(des.fixed_cell), len(des.model_scripts)), dtype=np.int64)
    at = 0
    for f, p in des.blocks:
        n_grid[np.ix_(f, p)] = des.n[at:at + len(f) * len(p)].reshape(len(f), len(p))
        at += len(f) * len(p)
    for c in range(len(mu)):  # the cell's trial-weighted average over its observed turns and conversations
        f = np.flatnonzero(des.fixed_cell == c)
        n = n_grid[f]
        p = np.flatnonzero(n.sum(axis=0))
        w = n[:, p] / n.sum()
        pobs[c] = np.einsum("fp,fps->s", w, _sigmoid(fixed[f][:, None, :] + conv[p][None, :, :]))
    keys = ["model", *CELL]
    cells = [{**{c: r[c] for c in keys}, "n": int(r["n"]), "k": int(r["k"]), "rate": r["k"] / r["n"],
              **_summary(p0[i]), **_summary(pobs[i], "obs_")} for i, r in des.cells.iterrows()]
    contrasts = []
    for model, g in des.cells.groupby("model", sort=True):
        ctl = int(g.loc[g["condition"] == "control", "cell"].iloc[0])
        for i, r in g[g["condition"] != "control"].iterrows():
            d, dobs = p0[i] - p0[ctl], pobs[i] - pobs[ctl]
            contrasts.append({**{c: r[c] for c in keys}, "vs": "control", **_summary(d),
                              "p_positive": float((d > 0).mean()), **_summary(dobs, "obs_")})
    turn = []
    if len(des.slopes):
        for j, r in des.slopes.iterrows():
            turn.append({"model": r["model"], "condition": r["condition"], **_summary(beta[j] / des.turn_scale)})
    cols = ["model", *CELL, "vs", "mean", "low", "high", "p_positive", "obs_mean", "obs_low", "obs_high"]
    return {"cells": pd.DataFrame(cells),
            "contrasts": pd.DataFrame(contrasts, columns=cols) if not contrasts else pd.DataFrame(contrasts),
            "turn": pd.DataFrame(turn, columns=["model", "condition", "mean", "low", "high"])}
