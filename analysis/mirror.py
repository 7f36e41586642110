"""The statistics of the mirror test: does a model notice that its own earlier replies were altered?

A model first answers neutral multi-turn conversation scripts itself; then its earlier replies are altered
and the conversation goes on (:mod:`reproduce.mirror`). Conditions: ``control`` (the clean history),
``corrupted`` (every earlier reply corrupted by one ``kind`` at one ``level``, the share of eligible words
changed) and ``other`` (another model's replies shown as the model's own). At each measured turn ``t`` the
``turns`` table holds (a) ``notices``: the next reply remarks on the oddity (rule-graded); (b) ``p_yes``:
P(yes) to "did you write each of your previous messages exactly as it appears above?"; (c) for every kind
the counts ``pattern_k_<kind>`` of the reply's words showing that kind's pattern out of ``pattern_n_<kind>``
eligible words; the ``surprise`` table holds (d) ``surprise = logprob_clean - logprob``, the drop in the
model's mean log-probability per token of an altered earlier reply against its clean reply.

A *cell* is one condition level: ``control``, ``other``, or one (kind, level) of ``corrupted``; a cell of
one model is a *model cell*. Unlike the concept-injection analysis (:mod:`analysis.injection`, one fit per
model, because a layer fraction means different layers in each model), the mirror test gives every model
the same scripts, conditions and turns, so all models are fitted JOINTLY: every model cell has its own fixed
effect (the model effects, and every interaction of model with condition, kind and level), and the models
share the conversation random effects (a script that invites remarks, or that reads oddly once altered,
does so for both models), with a model x script term for what a script does to one model only.

Common choices, stated once:

* Binary outcomes are Bernoulli with a logit link, one free logit per model cell (cell-means coding) with a
  proper ``Normal(0, 1.5)`` prior. Cells are not partially pooled with each other: the effect of the level
  need not be monotone, the kinds differ in kind (a capitalised word is not a dropped letter), and pooling
  would pull the many all-zero cells of a model that never remarks on typos towards the few cells where it
  does. The proper prior keeps an all-zero cell's posterior finite, so its interval is an upper bound whose
  lower end reflects the prior (rates below ~1% are not resolved: ``logit(0.01)`` is three prior standard
  deviations out).
* Random intercepts ``sigma * z`` with ``sigma ~ HalfNormal(1)`` and ``z ~ Normal(0, 1)`` (non-centred: no
  funnel where a scale is near zero, which is where they are when a table is all zeros).
* Reported probabilities are at the average conversation (random effects 0) and, where there is a turn
  effect, at the average measured turn, in ``mean, low, high``; the same quantity averaged over the observed
  conversations and turns of the cell (comparable with the raw rate) is in ``obs_mean, obs_low, obs_high``.
  Contrasts are computed per posterior draw, so their intervals carry the correlation of the two arms.
* Intervals are equal-tailed 95% posterior intervals (:data:`INTERVAL`); ``p_positive`` is the posterior
  probability that a difference is above zero. Every published fit passes
  :func:`analysis.models.check_convergence` (r_hat <= 1.01, bulk and tail ESS >= 400, no divergences).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from . import models as M
from .injection import (_aggregate, _codes, _draws, _effect_draws, _latent_probability, _logit, _random_effect,
                        _sigmoid, _summary)

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm

INTERVAL = 0.95
Q_LOW, Q_HIGH = (1 - INTERVAL) / 2, 1 - (1 - INTERVAL) / 2

LOGIT_SD = 1.5  # cell logits
SLOPE_SD = 1.0  # turn slopes, per standard deviation of the measured turns
SCALE_SD = 1.0  # random-effect scales
MEAN_SD = 1.0  # surprise cell means, on the standardised scale

#: the corruption kinds, as :data:`reproduce.corrupt.KINDS` (not imported: that module loads the engine)
KINDS = ("insertion", "substitution", "swap", "drop", "capitalisation")
CONDITIONS = ("control", "corrupted", "other")
LEVELS = (0.1, 0.3, 0.6)
#: the stage's tables, as :data:`reproduce.mirror.COLUMNS`
COLUMNS = {
    "turns": ["model", "script_id", "condition", "kind", "level", "turn", "history_changed", "history_eligible",
              "reply", "notices", "judge_notices", "p_yes", "p_outside",
              *[f"{c}_{k}" for k in KINDS for c in ("pattern_k", "pattern_n")]],
    "surprise": ["model", "script_id", "condition", "kind", "level", "turn", "logprob", "logprob_clean", "surprise",
                 "n_tokens"],
}
CELL = ["condition", "kind", "level"]
OUTCOMES = ("notices", "judge_notices")  # the noticing model's outcome: the rules' grade or the judge's


# ------------------------------------------------------------------------------------------- checks
def check_table(rows: pd.DataFrame, table: str) -> pd.DataFrame:
    """``rows`` with the columns and values the ``table`` (``turns`` or ``surprise``) models need, or a
    :class:`DataError` naming the first problem and the fix. Returns a copy with the cell keys normalised:
    ``kind`` None and ``level`` 0 on control rows, ``kind`` None and ``level`` NaN on other rows, and
    ``notices`` boolean (turns)."""
    if table not in COLUMNS:
        raise DataError(f"unknown mirror table {table!r}: expected one of {sorted(COLUMNS)}")
    missing = [c for c in COLUMNS[table] if c not in rows.columns]
    if missing:
        raise DataError(f"the mirror {table} table lacks the column(s) {', '.join(map(repr, missing))} "
                        f"(it needs {', '.join(COLUMNS[table])}): re-run the mirror stage that writes it, "
                        "or add the column(s)")
    rows = rows.copy()
    bad = sorted(set(rows["condition"].astype(str)) - set(CONDITIONS))
    if bad:
        raise DataError(f"the mirror {table} table has condition(s) {bad}; expected {list(CONDITIONS)}")
    for c in ("model", "script_id"):
        if rows[c].isna().any():
            raise DataError(f"the mirror {table} table has rows without a {c!r}: every row belongs to one")
    rows["model"], rows["script_id"] = rows["model"].astype(str), rows["script_id"].astype(str)
    cond = rows["condition"].astype(str).to_numpy()
    corrupted = cond == "corrupted"
    kinds = rows.loc[corrupted, "kind"]
    bad = sorted(set(kinds.dropna().astype(str)) - set(KINDS)) + (["None"] if kinds.isna().any() else [])
    if bad:
        raise DataError(f"the mirror {table} table has corrupted rows of kind(s) {bad}; expected one of "
                        f"{list(KINDS)}")
    level = pd.to_numeric(rows["level"], errors="coerce").to_numpy(dtype=float)
    if corrupted.any() and not ((level[corrupted] > 0) & (level[corrupted] <= 1)).all():
        raise DataError(f"the mirror {table} table has corrupted rows whose level is not in (0, 1] (the share of "
                        "eligible words changed): fix or drop those rows")
    rows["condition"] = cond
    rows["kind"] = pd.Series(np.where(corrupted, rows["kind"].astype(object), None), index=rows.index, dtype=object)
    rows["level"] = np.where(cond == "control", 0.0, np.where(cond == "other", np.nan, level))
    if not pd.api.types.is_integer_dtype(rows["turn"]) and not np.isfinite(rows["turn"].to_numpy(float)).all():
        raise DataError(f"the mirror {table} table has rows without a turn")
    rows["turn"] = rows["turn"].astype(int)
    if table == "turns":
        if rows["notices"].isna().any():
            raise DataError("the mirror turns table has missing values in 'notices': every reply needs a grade")
        rows["notices"] = rows["notices"].astype(bool)
        p = rows["p_yes"].to_numpy(dtype=float)
        if not (np.isfinite(p) & (p >= 0) & (p <= 1)).all():
            raise DataError("the mirror turns table has p_yes values that are missing or outside [0, 1]: "
                            "recompute those rows")
        for k in KINDS:
            kk, nn = rows[f"pattern_k_{k}"].to_numpy(dtype=float), rows[f"pattern_n_{k}"].to_numpy(dtype=float)
            if not (np.isfinite(kk) & np.isfinite(nn) & (kk >= 0) & (kk <= nn)).all():
                raise DataError(f"the mirror turns table has pattern counts for {k!r} that are missing, negative "
                                f"or above the eligible words (pattern_k_{k} > pattern_n_{k})")
            rows[f"pattern_k_{k}"], rows[f"pattern_n_{k}"] = kk.astype(np.int64), nn.astype(np.int64)
    else:
        s = rows["surprise"].to_numpy(dtype=float)
        if np.isinf(s).any():
            raise DataError("the mirror surprise table has infinite surprise values: recompute those rows")
    return rows


def _kind_rank(kind) -> int:
    return KINDS.index(kind) if kind in KINDS else -1


def _cell_key(rows: pd.DataFrame) -> np.ndarray:
    """One string per row naming its cell: ``control``, ``other`` or ``<kind>@<level>``."""
    cond = rows["condition"].to_numpy()
    kinds = rows["kind"].astype(str).to_numpy()
    levels = np.array([f"{v:g}" for v in rows["level"].to_numpy(dtype=float)])
    return np.where(cond == "corrupted", np.char.add(np.char.add(kinds.astype(str), "@"), levels), cond)


def _cells(rows: pd.DataFrame, extra: list[str] = ()) -> tuple[pd.DataFrame, np.ndarray]:
    """The model cells of ``rows`` (``model, condition, kind, level`` and ``extra`` keys), sorted by model,
    then control, corrupted (kinds in :data:`KINDS` order, levels ascending), other; with ``key`` (the cell's
    label) and ``cell`` (its position); and the cell of every row."""
    key = _cell_key(rows)
    if extra:
        key = np.char.add(np.char.add(key.astype(str), "|"), rows[list(extra)].astype(str).agg("|".join, axis=1)
                          .to_numpy().astype(str))
    frame = rows[["model", *CELL, *extra]].assign(key=key)
    cells = frame.drop_duplicates(["model", "key"]).copy()
    cells["_c"] = cells["condition"].map(CONDITIONS.index)
    cells["_k"] = cells["kind"].map(_kind_rank)
    cells["_l"] = cells["level"].fillna(-1.0)
    cells = cells.sort_values(["model", "_c", "_k", "_l", *extra]).drop(columns=["_c", "_k", "_l"])
    cells = cells.reset_index(drop=True).assign(cell=lambda c: np.arange(len(c)))
    index = pd.MultiIndex.from_frame(cells[["model", "key"]])
    codes = index.get_indexer(pd.MultiIndex.from_arrays([frame["model"].to_numpy(), frame["key"].to_numpy()]))
    return cells, codes.astype(np.int64)


def _label(row: pd.Series) -> str:
    return f"{row['model']}|{row['key']}"


def _conversation_codes(rows: pd.DataFrame) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """The scripts, the (model, script) pairs, and every row's codes in each."""
    scripts = sorted(rows["script_id"].unique())
    ms = (rows["model"] + "|" + rows["script_id"]).to_numpy()
    pairs = sorted(set(ms))
    return scripts, pairs, _codes(rows["script_id"], scripts), _codes(pd.Series(ms), pairs)


def _conversation_effects(script: np.ndarray, model_script: np.ndarray):
    """``sigma_script * z_script[script] + sigma_model_script * z_model_script[model, script]`` at every
    entry, created in the caller's model."""
    return (_random_effect("script", "script", script)
            + _random_effect("model_script", "model_script", model_script))


def _conversation_draws(idata, script: np.ndarray, model_script: np.ndarray) -> np.ndarray:
    return _effect_draws(idata, "script", script) + _effect_draws(idata, "model_script", model_script)


# --------------------------------------------------------------------------------- binary outcomes
@dataclass
class BinaryDesign:
    """The coding of :func:`noticing_model` and :func:`recognition_model`: the model cells (with their
    trials ``n`` and successes ``k``), the turn slopes (one per model and condition; none when a single turn
    is measured), the conversation levels, and the binomial combinations (model cell, slope, turn, script,
    model x script) with counts. ``x`` = (turn - ``turn_mean``) / ``turn_scale``."""

    outcome: str
    cells: pd.DataFrame
    slopes: pd.DataFrame  # model, condition, slope
    scripts: list[str]
    model_scripts: list[str]
    turn_mean: float
    turn_scale: float
    combo_cell: np.ndarray
    combo_slope: np.ndarray
    combo_x: np.ndarray
    combo_script: np.ndarray
    combo_model_script: np.ndarray
    k: np.ndarray
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
    rows = check_table(turns, "turns")
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
    scripts, pairs, script, ms = _conversation_codes(rows)
    combos, k, n = _aggregate({"cell": cell, "slope": slope, "turn": rows["turn"].to_numpy(), "script": script,
                               "model_script": ms}, y)
    return BinaryDesign(outcome, cells, slopes, scripts, pairs, turn_mean, turn_sd, combos["cell"],
                        combos["slope"], (combos["turn"] - turn_mean) / turn_sd, combos["script"],
                        combos["model_script"], k, n)


def _binary_model(des: BinaryDesign) -> pm.Model:
    import pymc as pm

    coords = {"cell": [_label(r) for _, r in des.cells.iterrows()], "script": des.scripts,
              "model_script": des.model_scripts}
    if len(des.slopes):
        coords["slope"] = [f"{r['model']}|{r['condition']}" for _, r in des.slopes.iterrows()]
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        eta = mu[des.combo_cell] + _conversation_effects(des.combo_script, des.combo_model_script)
        if len(des.slopes):
            beta = pm.Normal("beta_turn", 0.0, SLOPE_SD, dims="slope")
            eta = eta + beta[des.combo_slope] * des.combo_x
        M._binomial_logit("y", des.n, eta, des.k)
    return model


def noticing_model(turns: pd.DataFrame, outcome: str = "notices") -> pm.Model:
    """Spontaneous noticing: a hierarchical logistic regression of ``notices`` (the model's next reply
    remarks on typos, errors or oddities in its earlier messages; ``outcome="judge_notices"``: the judge's
    grade, on the rows that have one) on every model's rows of the ``turns`` table, jointly::

        notices_i ~ Bernoulli(p_i)
        logit p_i = mu[m_i, c_i] + beta[m_i, g_i] * (turn_i - tbar) / sd_turn
                    + sigma_script * z[s_i] + sigma_ms * w[m_i, s_i]
        mu ~ Normal(0, 1.5);  beta ~ Normal(0, 1);  sigma_script, sigma_ms ~ HalfNormal(1);  z, w ~ Normal(0, 1)

    ``m`` = model, ``c`` = cell (control | other | each corrupted (kind, level)), ``g`` = condition (control,
    corrupted, other), ``s`` = conversation script; ``tbar`` and ``sd_turn`` are the mean and standard
    deviation of the measured turns (so ``mu`` is the logit at the average turn and ``beta`` the change per
    standard deviation of turn).

    The turn effect is linear and per (model, condition): what grows with the turn differs between the
    conditions (a corrupted history accumulates corrupted replies, ``t - 1`` of them at turn ``t``; a control
    history only grows longer), and a model's response to either is its own; a linear term costs one
    parameter where a categorical turn would cost one per measured turn and cell, and with the two to four
    measured turns of the profiles it is the same fit or close to it. The slope is shared by a condition's
    kinds and levels (its cells differ in their mean, not in how the turn moves them on the logit scale).
    With one measured turn there is no slope. The script effect is shared by the models (the scripts, and so
    which conversations invite a remark, are the same for every model); the model x script term is the part
    of a script's effect that belongs to one model (its own replies are what is altered).

    Quantities (:func:`binary_summary`): P(notice) per model cell, ``sigmoid(mu)``, at the average
    conversation and turn; and per model each corrupted / other cell minus the model's control cell, per
    draw. A model that never remarks on anything gives an all-zero table: it still samples (the priors are
    proper and the random effects non-centred), and every cell's interval is then an upper bound."""
    return _binary_model(binary_design(turns, outcome))


def recognition_model(turns: pd.DataFrame) -> pm.Model:
    """Prompted recognition: the same hierarchical logistic regression as :func:`noticing_model` for
    ``says_yes = p_yes > 0.5`` (asked "did you write each of your previous messages exactly as it appears
    above?", the model claims the history as its own)::

        says_yes_i ~ Bernoulli(p_i)
        logit p_i = mu[m_i, c_i] + beta[m_i, g_i] * (turn_i - tbar) / sd_turn
                    + sigma_script * z[s_i] + sigma_ms * w[m_i, s_i]
        mu ~ Normal(0, 1.5);  beta ~ Normal(0, 1);  sigma_script, sigma_ms ~ HalfNormal(1);  z, w ~ Normal(0, 1)

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
    eta = mu[des.combo_cell] + _conversation_draws(idata, des.combo_script, des.combo_model_script)
    if len(des.slopes):
        beta = _draws(idata, "beta_turn")
        eta = eta + beta[des.combo_slope] * des.combo_x[:, None]
    pobs = np.zeros_like(mu)
    np.add.at(pobs, des.combo_cell, _sigmoid(eta) * des.n[:, None])
    pobs /= np.bincount(des.combo_cell, weights=des.n, minlength=len(mu))[:, None]
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


# ------------------------------------------------------------------------------------------ imitation
@dataclass
class ImitationDesign:
    """The coding of :func:`imitation_model`: the model cells (control baselines per (model, kind) with
    ``condition = control, level = 0``, then (model, kind, level) of the corrupted rows; with ``replies``,
    words ``n`` and pattern words ``k``), the conversation levels and one beta-binomial observation per
    reply and kind (its cell, script, model x script, ``k`` of ``n``)."""

    cells: pd.DataFrame
    scripts: list[str]
    model_scripts: list[str]
    cell: np.ndarray
    script: np.ndarray
    model_script: np.ndarray
    k: np.ndarray
    n: np.ndarray


def imitation_rows(turns: pd.DataFrame) -> pd.DataFrame:
    """The observations of the imitation model: every corrupted row with its own kind's pattern counts
    (``k``, ``n``), and every control row once per kind with that kind's counts; replies without an eligible
    word for the kind (``n = 0``) carry no information and are left out. Columns ``model, script_id, turn,
    condition, kind, level, k, n``."""
    rows = check_table(turns, "turns")
    keep = ["model", "script_id", "turn", "condition", "kind", "level"]
    parts = []
    cor = rows[rows["condition"] == "corrupted"]
    for kind in KINDS:
        c = cor[cor["kind"] == kind]
        parts.append(c[keep].assign(k=c[f"pattern_k_{kind}"], n=c[f"pattern_n_{kind}"]))
    ctl = rows[rows["condition"] == "control"]
    for kind in KINDS:
        parts.append(ctl[keep].assign(kind=kind, k=ctl[f"pattern_k_{kind}"], n=ctl[f"pattern_n_{kind}"]))
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = out["kind"].astype(object)
    return out[out["n"] > 0].reset_index(drop=True)


def imitation_design(turns: pd.DataFrame) -> ImitationDesign:
    obs = imitation_rows(turns)
    cor = obs[obs["condition"] == "corrupted"]
    if cor.empty:
        raise DataError("the imitation model needs corrupted rows with eligible words for their kind; the mirror "
                        "turns table has none")
    base = set(map(tuple, obs.loc[obs["condition"] == "control", ["model", "kind"]].to_numpy()))
    lacking = sorted(set(map(tuple, cor[["model", "kind"]].to_numpy())) - base)
    if lacking:
        raise DataError(f"the imitation model compares each kind's pattern with its rate in clean conversations, "
                        f"but (model, kind) {lacking} have no control rows with eligible words for the kind: run "
                        "the control condition (it always runs) or drop those rows")
    cells, cell = _cells(obs, extra=[])
    # control cells are per (model, kind): their key is 'control' plus the kind
    key = np.where(obs["condition"].to_numpy() == "control",
                   np.char.add("control@", obs["kind"].astype(str).to_numpy().astype(str)), _cell_key(obs))
    cells, cell = _cells(obs.assign(_key=key), extra=["_key"])
    cells = cells.drop(columns="_key")
    cells["replies"] = np.bincount(cell, minlength=len(cells))
    cells["n"] = np.bincount(cell, weights=obs["n"].to_numpy(float), minlength=len(cells)).astype(int)
    cells["k"] = np.bincount(cell, weights=obs["k"].to_numpy(float), minlength=len(cells)).astype(int)
    scripts, pairs, script, ms = _conversation_codes(obs)
    return ImitationDesign(cells, scripts, pairs, cell, script, ms, obs["k"].to_numpy(np.int64),
                           obs["n"].to_numpy(np.int64))


def imitation_model(turns: pd.DataFrame) -> pm.Model:
    """Imitation: does a model take up the pattern of the corruption in its own next reply? A beta-binomial
    logistic regression of the reply's pattern words, for every corrupted row with its own kind's counts and
    for every control row once per kind (the baseline rate of each pattern in clean conversations)::

        k_ij ~ BetaBinomial(n_ij, pi_ij * phi[m_i], (1 - pi_ij) * phi[m_i])
        corrupted rows (kind j = the row's kind):  logit pi_ij = lambda[m_i, j, level_i] + e_i
        control rows (every kind j):               logit pi_ij = lambda0[m_i, j] + e_i
        e_i = sigma_script * z[s_i] + sigma_ms * w[m_i, s_i]
        lambda, lambda0 ~ Normal(0, 1.5);  phi ~ Gamma(2, 0.1);  sigma_script, sigma_ms ~ HalfNormal(1);
        z, w ~ Normal(0, 1)

    ``k_ij`` of ``n_ij``: the words of reply ``i`` that show kind ``j``'s pattern, of its eligible words
    (:func:`reproduce.corrupt.pattern_counts`); replies with no eligible word are left out. The mean is a
    binomial logistic regression's; the beta-binomial's concentration ``phi`` (per model) absorbs the
    dependence of the words of one reply (a reply that takes up the pattern does so in many of its words),
    which a plain binomial would count as independent trials and so give too narrow intervals; as ``phi``
    grows it is the binomial. A control reply enters once per kind, each time with another measurement of it;
    the conversation effects tie its entries together and to the same script's corrupted replies, so the
    comparison with the baseline is largely within conversation. There is no turn effect: the cells are
    averaged over the measured turns, which every cell has alike.

    Quantities (:func:`imitation_summary`): the expected share of pattern words ``sigmoid(lambda)`` per
    (model, kind, level) at the average conversation, the baseline ``sigmoid(lambda0)`` per (model, kind),
    and their difference per draw (imitation above the clean-conversation rate)."""
    import pymc as pm

    des = imitation_design(turns)
    models = sorted(des.cells["model"].unique())
    cell_model = _codes(des.cells["model"], models)
    coords = {"cell": [f"{r['model']}|{r['condition']}|{r['kind']}|{r['level']:g}" for _, r in des.cells.iterrows()],
              "model": models, "script": des.scripts, "model_script": des.model_scripts}
    with pm.Model(coords=coords) as model:
        lam = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        phi = pm.Gamma("phi", 2.0, 0.1, dims="model")
        eta = lam[des.cell] + _conversation_effects(des.script, des.model_script)
        conc = phi[cell_model[des.cell]]
        pm.BetaBinomial("y", alpha=conc * pm.math.sigmoid(eta), beta=conc * pm.math.sigmoid(-eta), n=des.n,
                        observed=des.k)
    return model


def imitation_summary(idata: az.InferenceData, turns: pd.DataFrame) -> pd.DataFrame:
    """Per model cell (the control baselines, ``condition = control`` with their ``kind`` and level 0, and the
    corrupted cells): ``replies``, pattern words ``k`` of eligible words ``n`` and their ``rate``; ``mean,
    low, high`` = the expected share of pattern words at the average conversation; on corrupted cells
    ``diff_*`` = that minus the same model's baseline for the kind, and ``p_positive`` = P(diff > 0)."""
    des = imitation_design(turns)
    p = _sigmoid(_draws(idata, "mu"))
    cells = des.cells
    base = {(r["model"], r["kind"]): i for i, r in cells[cells["condition"] == "control"].iterrows()}
    nan = {f"diff_{s}": np.nan for s in ("mean", "low", "high")} | {"p_positive": np.nan}
    out = []
    for i, r in cells.iterrows():
        row = {"model": r["model"], "condition": r["condition"], "kind": r["kind"], "level": r["level"],
               "replies": int(r["replies"]), "n": int(r["n"]), "k": int(r["k"]), "rate": r["k"] / r["n"],
               **_summary(p[i])}
        if r["condition"] == "corrupted":
            d = p[i] - p[base[(r["model"], r["kind"])]]
            row |= {**_summary(d, "diff_"), "p_positive": float((d > 0).mean())}
        else:
            row |= nan
        out.append(row)
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------- surprise
@dataclass
class SurpriseDesign:
    """The coding of :func:`surprise_model`: the model cells (corrupted and other; with rows ``n`` and the
    raw mean surprise), the scripts, the scored replies (model, script, turn) and each row's codes; ``y`` is
    the surprise divided by ``scale`` (its standard deviation over these rows; 0 stays 0)."""

    cells: pd.DataFrame
    scripts: list[str]
    replies: list[str]
    cell: np.ndarray
    script: np.ndarray
    reply: np.ndarray
    y: np.ndarray
    scale: float
    dropped: int  # rows without a surprise (no clean reference to compare with)


def surprise_design(surprise: pd.DataFrame) -> SurpriseDesign:
    rows = check_table(surprise, "surprise")
    rows = rows[rows["condition"] != "control"]
    finite = np.isfinite(rows["surprise"].to_numpy(dtype=float))
    dropped = int((~finite).sum())
    rows = rows[finite]
    if rows.empty:
        raise DataError("the mirror surprise table has no corrupted or other rows with a surprise value: run the "
                        "mirror stage with corrupted levels (or other_model)")
    cells, cell = _cells(rows)
    y = rows["surprise"].to_numpy(dtype=float)
    cells["n"] = np.bincount(cell, minlength=len(cells))
    cells["raw_mean"] = np.bincount(cell, weights=y, minlength=len(cells)) / cells["n"]
    scripts = sorted(rows["script_id"].unique())
    rid = (rows["model"] + "|" + rows["script_id"] + "|" + rows["turn"].astype(str)).to_numpy()
    replies = sorted(set(rid))
    scale = float(y.std()) or 1.0
    return SurpriseDesign(cells, scripts, replies, cell, _codes(rows["script_id"], scripts),
                          _codes(pd.Series(rid), replies), y / scale, scale, dropped)


def surprise_model(surprise: pd.DataFrame) -> pm.Model:
    """Surprise: how much less probable an altered earlier reply is to the model than its own clean reply, in
    nats per token. A hierarchical Student-t regression of ``surprise = logprob_clean - logprob`` (each the
    mean log-probability per token of the reply given the history before it) over the corrupted and other
    rows of every model, jointly; divided by its standard deviation ``c`` over these rows::

        surprise_i / c ~ StudentT(nu, theta[m_i, c_i] + tau_script * u[s_i] + tau_reply * v[m_i, s_i, t_i],
                                  sigma[m_i, c_i])
        theta ~ Normal(0, 1);  tau_script, tau_reply, sigma ~ HalfNormal(1);  u, v ~ Normal(0, 1);
        nu ~ Gamma(2, 0.1)

    ``c`` = cell (other, or a corrupted (kind, level)), ``s`` = script, ``t`` = the assistant turn scored.
    Every altered version of one clean reply is compared with the same ``logprob_clean``, so the rows of one
    (model, script, turn) share that reference's noise: the reply intercept ``v`` carries it, and the script
    intercept ``u`` what a conversation does to both models. The noise scale is per model cell (heavier
    corruption varies more), and the Student-t likelihood keeps a few replies whose score jumps (a corrupted
    word that the tokenizer splits badly) from moving the means. Control rows (surprise 0 by construction)
    are not modelled; rows without a surprise (no clean reference) are left out. Quantity
    (:func:`surprise_summary`): ``c * theta`` per model cell, the mean surprise at the average conversation
    and reply, in nats per token."""
    import pymc as pm

    des = surprise_design(surprise)
    coords = {"cell": [_label(r) for _, r in des.cells.iterrows()], "script": des.scripts, "reply": des.replies}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("mu", 0.0, MEAN_SD, dims="cell")
        sigma = pm.HalfNormal("sigma_y", SCALE_SD, dims="cell")
        nu = pm.Gamma("nu", 2.0, 0.1)
        loc = (theta[des.cell] + _random_effect("script", "script", des.script)
               + _random_effect("reply", "reply", des.reply))
        pm.StudentT("y", nu=nu, mu=loc, sigma=sigma[des.cell], observed=des.y)
    return model


def surprise_summary(idata: az.InferenceData, surprise: pd.DataFrame) -> pd.DataFrame:
    """Per model cell: ``n`` rows, ``raw_mean`` (the mean surprise), and the posterior mean surprise at the
    average conversation and reply, ``mean, low, high`` (nats per token), with ``p_positive`` (P(the altered
    text is less probable than the clean one))."""
    des = surprise_design(surprise)
    d = des.scale * _draws(idata, "mu")
    out = [{**{c: r[c] for c in ["model", *CELL]}, "n": int(r["n"]), "raw_mean": r["raw_mean"], **_summary(d[i]),
            "p_positive": float((d[i] > 0).mean())} for i, r in des.cells.iterrows()]
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------ fitting
#: the result tables of :func:`fit_all`
RESULTS = ("noticing_cells", "noticing_contrasts", "noticing_turn", "recognition_cells", "recognition_contrasts",
           "recognition_turn", "imitation_cells", "surprise_cells")


def _fit(model: pm.Model, settings: M.SamplerSettings, name: str) -> tuple[az.InferenceData, dict]:
    idata = M.sample(model, settings)
    return idata, M.check_convergence(idata, name)


def fit_all(tables: dict[str, pd.DataFrame], settings: M.SamplerSettings) -> dict:
    """Every mirror-test fit of the non-empty tables in ``tables`` (keys ``turns``, ``surprise``), all models
    jointly, each through the convergence gate (a failing fit raises
    :class:`analysis.models.ConvergenceError`). Every table given is checked before anything is sampled.
    Returns the tables :data:`RESULTS` (each with ``model``, the cell keys ``condition, kind, level`` where
    they apply, and ``mean, low, high``; empty where its input is absent) and ``diagnostics``: a list of
    ``{"model": "all", "fit", "diagnostics"}``. The turns table gives the fits ``noticing``, ``recognition``
    and (where it has corrupted rows) ``imitation``; the surprise table the fit ``surprise``."""
    unknown = sorted(set(tables) - set(COLUMNS))
    if unknown:
        raise DataError(f"unknown mirror table(s) {unknown}: expected keys among {sorted(COLUMNS)}")
    present = {k: v for k, v in tables.items() if v is not None and not v.empty}
    turns, surprise = present.get("turns"), present.get("surprise")
    if turns is not None:  # check (and build) every design before the first fit
        binary_design(turns, "notices")
        if (check_table(turns, "turns")["condition"] == "corrupted").any():
            imitation_design(turns)
    if surprise is not None:
        surprise_design(surprise)
    out: dict = {r: pd.DataFrame(columns=["model", "mean", "low", "high"]) for r in RESULTS}
    diags: list[dict] = []

    def run(name: str, model: pm.Model):
        idata, d = _fit(model, settings, f"mirror {name}")
        diags.append({"model": "all", "fit": name, "diagnostics": d})
        return idata

    if turns is not None:
        for name, build, outcome in (("noticing", noticing_model, "notices"),
                                     ("recognition", recognition_model, "says_yes")):
            s = binary_summary(run(name, build(turns)), turns, outcome)
            out[f"{name}_cells"], out[f"{name}_contrasts"], out[f"{name}_turn"] = s["cells"], s["contrasts"], s["turn"]
        if (check_table(turns, "turns")["condition"] == "corrupted").any():
            out["imitation_cells"] = imitation_summary(run("imitation", imitation_model(turns)), turns)
    if surprise is not None:
        out["surprise_cells"] = surprise_summary(run("surprise", surprise_model(surprise)), surprise)
    out["diagnostics"] = diags
    return out


# ------------------------------------------------------------------------------------ frequentist
def frequentist_summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The raw rates per model and cell with Wilson 95% intervals (:func:`analysis.frequentist.wilson`): a
    cross-check of the Bayesian cell rates that assumes independent trials. Columns: ``model, outcome,
    condition, kind, level, n, k, rate, low, high``; ``outcome`` is ``notices`` and ``says_yes`` (trials:
    replies) and ``imitation`` (trials: eligible words, the own kind's for corrupted rows; control rows give
    one row per kind, the baseline). Words of one reply are not independent, so the imitation intervals are
    too narrow where replies differ (the Bayesian model's beta-binomial allows for it)."""
    from .frequentist import wilson

    unknown = sorted(set(tables) - set(COLUMNS))
    if unknown:
        raise DataError(f"unknown mirror table(s) {unknown}: expected keys among {sorted(COLUMNS)}")
    for name, rows in tables.items():
        if rows is not None and not rows.empty:
            check_table(rows, name)
    cols = ["model", "outcome", *CELL, "n", "k", "rate", "low", "high"]
    turns = tables.get("turns")
    if turns is None or turns.empty:
        return pd.DataFrame(columns=cols)
    rows = check_table(turns, "turns")
    parts = []
    for outcome, y in (("notices", rows["notices"].to_numpy(bool)), ("says_yes", rows["p_yes"].to_numpy(float) > 0.5)):
        cells, cell = _cells(rows)
        cells["n"] = np.bincount(cell, minlength=len(cells))
        cells["k"] = np.bincount(cell, weights=y.astype(float), minlength=len(cells)).astype(int)
        parts.append(cells.assign(outcome=outcome))
    obs = imitation_rows(turns)
    if not obs.empty:
        key = np.where(obs["condition"].to_numpy() == "control",
                       np.char.add("control@", obs["kind"].astype(str).to_numpy().astype(str)), _cell_key(obs))
        cells, cell = _cells(obs.assign(_key=key), extra=["_key"])
        cells["n"] = np.bincount(cell, weights=obs["n"].to_numpy(float), minlength=len(cells)).astype(int)
        cells["k"] = np.bincount(cell, weights=obs["k"].to_numpy(float), minlength=len(cells)).astype(int)
        parts.append(cells.drop(columns="_key").assign(outcome="imitation"))
    out = pd.concat(parts, ignore_index=True)
    out["rate"] = out["k"] / out["n"]
    out["low"], out["high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out[cols]


# ------------------------------------------------------------------------------------- simulation
#: how salient each kind is, relative to the others (insertion and capitalisation stand out; a dropped letter
#: is easy to read past), and how easily a model takes each up
SALIENCE = {"insertion": 1.0, "substitution": 0.6, "swap": 0.5, "drop": 0.4, "capitalisation": 1.2}
IMITABILITY = {"insertion": 1.5, "substitution": 0.5, "swap": 0.5, "drop": 0.5, "capitalisation": 1.2}
#: the simulated baseline share of each kind's pattern in clean replies (for substitution, swap and drop the
#: pattern is a word outside the clean texts' vocabulary, the same measure for all three)
BASELINE = {"insertion": 0.004, "substitution": 0.01, "swap": 0.01, "drop": 0.01, "capitalisation": 0.005}
#: the simulated mean surprise (nats per token) per unit of level, by kind
SURPRISE_PER_LEVEL = {"insertion": 1.5, "substitution": 2.5, "swap": 2.0, "drop": 1.8, "capitalisation": 3.0}


def _conditions(kinds, levels) -> list[tuple[str, object, float]]:
    return ([("control", None, 0.0)] + [("corrupted", k, float(l)) for k in kinds for l in levels]
            + [("other", None, np.nan)])


def _per_model(value, models) -> dict:
    """A per-model parameter: a scalar (the same for every model) or one value per model, in order."""
    vals = np.broadcast_to(np.asarray(value, dtype=float), (len(models),))
    return dict(zip(models, map(float, vals)))


def binary_truth_logit(condition: str, kind: str | None, level: float, control: float, other: float,
                       gain: float, sign: float = 1.0) -> float:
    """The simulated logit at the average conversation and turn: ``logit(control)``; ``logit(other)``; or
    ``logit(control) + sign * gain * salience(kind) * level / 0.6`` for a corrupted history."""
    if condition == "control":
        return float(_logit(control))
    if condition == "other":
        return float(_logit(other))
    return float(_logit(control) + sign * gain * SALIENCE[kind] * level / 0.6)


def simulate_turns(seed: int = 0, models: tuple[str, ...] = ("model_a", "model_b"), n_scripts: int = 40,
                   kinds: tuple[str, ...] = KINDS, levels: tuple[float, ...] = LEVELS,
                   turns: tuple[int, ...] = (2, 3, 4), script_sd: float = 0.6, model_script_sd: float = 0.3,
                   notice_control=(0.04, 0.02), notice_other=(0.12, 0.03), notice_gain=(3.0, 1.0),
                   notice_slope=(0.0, 0.3, 0.15), yes_control=(0.85, 0.7), yes_other=(0.35, 0.7),
                   yes_gain=(3.0, 0.0), yes_slope=(0.0, -0.2, -0.1), imitation_gain=(2.5, 0.5),
                   words: float = 30.0, g_words: float = 4.0, phi: float = 30.0) -> tuple[pd.DataFrame, dict]:
    """A turns table with known truth, in the schema of :data:`COLUMNS` ``["turns"]``: every model answers
    ``n_scripts`` scripts under every condition (control, each (kind, level) of ``kinds`` x ``levels``, other)
    at every turn of ``turns``.

    ``notices``: Bernoulli with logit :func:`binary_truth_logit` (``notice_control``, ``notice_other``,
    ``notice_gain``; per model) + ``slope[condition] * (turn - mean turn)`` (``notice_slope``: control,
    corrupted, other, per turn) + a script effect ``~ Normal(0, script_sd)`` + a model x script effect ``~
    Normal(0, model_script_sd)``. ``p_yes``: the same with ``yes_*`` and the gain lowering P(yes)
    (``yes_gain`` 0: a model that does not recognise alteration), drawn as a continuous probability whose
    thresholding at 0.5 has that probability. Pattern counts: ``n`` eligible words per reply and kind
    (Poisson, mean ``g_words`` for insertion [words with a g], ``words`` otherwise), ``k`` beta-binomial with
    concentration ``phi`` around ``sigmoid(logit(BASELINE[kind]) + gain + conversation effects)``, the gain
    ``imitation_gain * IMITABILITY[kind] * level / 0.6`` for the row's own kind in a corrupted history, 0
    otherwise (the script effects are those of noticing, halved).

    ``truth``: ``noticing`` and ``recognition`` (``model, condition, kind, level, p`` at the average
    conversation and turn, ``diff`` = p minus the model's control), ``imitation`` (baselines as ``condition
    control`` per kind, and corrupted cells, ``p`` and ``diff``), ``turn`` (``model, condition, noticing,
    recognition``: slopes on the logit scale per turn)."""
    rng = np.random.default_rng(seed)
    scripts = [f"script{j:02d}" for j in range(n_scripts)]
    s_eff = rng.normal(0.0, script_sd, n_scripts)
    ms_eff = {m: rng.normal(0.0, model_script_sd, n_scripts) for m in models}
    par = {name: _per_model(v, models) for name, v in
           dict(nc=notice_control, no=notice_other, ng=notice_gain, yc=yes_control, yo=yes_other, yg=yes_gain,
                ig=imitation_gain).items()}
    nslope, yslope = dict(zip(CONDITIONS, notice_slope)), dict(zip(CONDITIONS, yes_slope))
    tbar = float(np.mean(turns))
    recs, t_notice, t_yes, t_imit = [], [], [], []
    for m in models:
        conv = s_eff + ms_eff[m]
        for kind in kinds:
            t_imit.append({"model": m, "condition": "control", "kind": kind, "level": 0.0, "p": BASELINE[kind],
                           "diff": np.nan})
        for cond, kind, level in _conditions(kinds, levels):
            eta_n = binary_truth_logit(cond, kind, level, par["nc"][m], par["no"][m], par["ng"][m])
            eta_y = binary_truth_logit(cond, kind, level, par["yc"][m], par["yo"][m], par["yg"][m], sign=-1.0)
            ctl_n, ctl_y = par["nc"][m], par["yc"][m]
            t_notice.append({"model": m, "condition": cond, "kind": kind, "level": level, "p": _sigmoid(eta_n),
                             "diff": _sigmoid(eta_n) - ctl_n})
            t_yes.append({"model": m, "condition": cond, "kind": kind, "level": level, "p": _sigmoid(eta_y),
                          "diff": _sigmoid(eta_y) - ctl_y})
            if cond == "corrupted":
                gain = par["ig"][m] * IMITABILITY[kind] * level / 0.6
                p = _sigmoid(_logit(BASELINE[kind]) + gain)
                t_imit.append({"model": m, "condition": cond, "kind": kind, "level": level, "p": p,
                               "diff": p - BASELINE[kind]})
            for t in turns:
                notices = rng.random(n_scripts) < _sigmoid(eta_n + nslope[cond] * (t - tbar) + conv)
                p_yes, _ = _latent_probability(rng, eta_y + yslope[cond] * (t - tbar) + conv)
                counts = {}
                for k in KINDS:
                    n = rng.poisson(g_words if k == "insertion" else words, n_scripts)
                    gain = par["ig"][m] * IMITABILITY[k] * level / 0.6 if (cond == "corrupted" and k == kind) else 0.0
                    mean = _sigmoid(_logit(BASELINE[k]) + gain + 0.5 * conv)
                    pi = rng.beta(mean * phi, (1 - mean) * phi)
                    counts[k] = (rng.binomial(n, pi), n)
                eligible = rng.poisson(words * (t - 1), n_scripts)
                changed = (np.round(level * eligible).astype(int) if cond == "corrupted"
                           else np.zeros(n_scripts, dtype=int))
                for j, s in enumerate(scripts):
                    rec = {"model": m, "script_id": s, "condition": cond, "kind": kind, "level": level, "turn": t,
                           "history_changed": int(changed[j]),
                           "history_eligible": int(eligible[j]) if cond == "corrupted" else 0,
                           "reply": f"simulated reply {m} {s} {t}", "notices": bool(notices[j]),
                           "judge_notices": np.nan, "p_yes": float(p_yes[j]), "p_outside": float(rng.beta(1, 30))}
                    for k in KINDS:
                        rec[f"pattern_k_{k}"], rec[f"pattern_n_{k}"] = int(counts[k][0][j]), int(counts[k][1][j])
                    recs.append(rec)
    rows = pd.DataFrame(recs)
    rows["kind"] = rows["kind"].astype(object)
    turn = pd.DataFrame([{"model": m, "condition": c, "noticing": nslope[c], "recognition": yslope[c]}
                         for m in models for c in CONDITIONS])
    truth = {"noticing": pd.DataFrame(t_notice), "recognition": pd.DataFrame(t_yes),
             "imitation": pd.DataFrame(t_imit), "turn": turn}
    return rows[COLUMNS["turns"]], truth


def simulate_surprise(seed: int = 0, models: tuple[str, ...] = ("model_a", "model_b"), n_scripts: int = 40,
                      kinds: tuple[str, ...] = KINDS, levels: tuple[float, ...] = LEVELS,
                      scored: tuple[int, ...] = (1, 2, 3), model_scale=(1.0, 0.8), other=(0.6, 0.9),
                      script_sd: float = 0.1, reply_sd: float = 0.1, noise: float = 0.08, noise_per_level: float = 0.3,
                      df: float = 5.0) -> tuple[pd.DataFrame, dict]:
    """A surprise table with known truth, in the schema of :data:`COLUMNS` ``["surprise"]``: every model's
    replies to the assistant turns ``scored`` of ``n_scripts`` scripts, scored under every condition
    (control rows have surprise 0, as the stage writes them). The surprise of a corrupted reply is
    ``model_scale * SURPRISE_PER_LEVEL[kind] * level``, of another model's reply ``other`` (per model), plus a
    script effect (``script_sd``), a (model, script, turn) reply effect (``reply_sd``) and Student-t noise
    (``df``, scale ``noise + noise_per_level * level``; other: ``noise + 0.3 * noise_per_level``).

    ``truth``: ``cells`` (``model, condition, kind, level, mean`` at the average conversation and reply)."""
    rng = np.random.default_rng(seed)
    scripts = [f"script{j:02d}" for j in range(n_scripts)]
    s_eff = rng.normal(0.0, script_sd, n_scripts)
    scale, oth = _per_model(model_scale, models), _per_model(other, models)
    recs, truth = [], []
    for m in models:
        r_eff = rng.normal(0.0, reply_sd, (n_scripts, len(scored)))
        clean = rng.normal(-1.5, 0.3, (n_scripts, len(scored)))
        n_tokens = rng.integers(10, 80, (n_scripts, len(scored)))
        for cond, kind, level in _conditions(kinds, levels):
            if cond == "control":
                mean, sd = 0.0, 0.0
            elif cond == "other":
                mean, sd = oth[m], noise + 0.3 * noise_per_level
            else:
                mean, sd = scale[m] * SURPRISE_PER_LEVEL[kind] * level, noise + noise_per_level * level
            if cond != "control":
                truth.append({"model": m, "condition": cond, "kind": kind, "level": level, "mean": mean})
            for j, s in enumerate(scripts):
                for i, t in enumerate(scored):
                    sur = 0.0 if cond == "control" else mean + s_eff[j] + r_eff[j, i] + sd * rng.standard_t(df)
                    recs.append({"model": m, "script_id": s, "condition": cond, "kind": kind, "level": level,
                                 "turn": t, "logprob": clean[j, i] - sur, "logprob_clean": clean[j, i],
                                 "surprise": sur, "n_tokens": int(n_tokens[j, i])})
    rows = pd.DataFrame(recs)
    rows["kind"] = rows["kind"].astype(object)
    return rows[COLUMNS["surprise"]], {"cells": pd.DataFrame(truth)}
