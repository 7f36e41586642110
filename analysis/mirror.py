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
* Conversation effects: a script intercept ``u`` shared by the models and a model x script interaction
  ``w``, each with a scale ``~ HalfNormal(1)``, both *zero-sum* (``u`` over the scripts; ``w`` over each
  model's scripts and over each script's models), written as ``sigma * B z`` with ``z ~ Normal(0, 1)`` on an
  orthonormal basis ``B`` of the zero-sum effects (:func:`_zero_sum_effect`, which says why). Non-centred in
  the binary and imitation models (no funnel where a scale is near zero, which is where they are when a
  table is all zeros); centred in the surprise model, whose data pin every intercept down.
* Reported probabilities are at the average conversation (the observed conversations' average: effects 0)
  and, where there is a turn effect, at the average measured turn, in ``mean, low, high``; the same quantity
  averaged over the observed conversations and turns of the cell (comparable with the raw rate) is in
  ``obs_mean, obs_low, obs_high``. Contrasts are computed per posterior draw, so their intervals carry the
  correlation of the two arms.
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
from .injection import _aggregate, _codes, _draws, _latent_probability, _logit, _sigmoid

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


def _summary(d: np.ndarray, prefix: str = "") -> dict:
    """Posterior mean and 95% interval of draws ``d`` (last axis: samples), as ``<prefix>mean, low, high``."""
    return {f"{prefix}mean": float(np.mean(d)), f"{prefix}low": float(np.quantile(d, Q_LOW)),
            f"{prefix}high": float(np.quantile(d, Q_HIGH))}


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


def _conversation_codes(rows: pd.DataFrame) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The scripts, the (model, script) pairs, every row's pair (a code), and each pair's model and script
    (codes)."""
    scripts = sorted(rows["script_id"].unique())
    models = sorted(rows["model"].unique())
    ms = (rows["model"] + "|" + rows["script_id"]).to_numpy()
    pairs = sorted(set(ms))
    pair_model = _codes(pd.Series([p.rsplit("|", 1)[0] for p in pairs]), models)
    pair_script = _codes(pd.Series([p.rsplit("|", 1)[1] for p in pairs]), scripts)
    return scripts, pairs, _codes(pd.Series(ms), pairs), pair_model, pair_script


def zero_sum_basis(n_levels: int, groupings: list[np.ndarray] | None = None) -> np.ndarray:
    """An orthonormal basis (``n_levels`` x ``r``) of the effects that sum to zero within every group of every
    grouping (each an array of the levels' group codes; default: one group of all levels)."""
    groupings = [np.zeros(n_levels, dtype=np.int64)] if not groupings else groupings
    a = np.vstack([np.eye(int(g.max()) + 1)[np.asarray(g, dtype=np.int64)].T for g in groupings])
    _, sv, vt = np.linalg.svd(a, full_matrices=True)
    rank = int((sv > 1e-9 * sv.max()).sum())
    return vt[rank:].T


def _zero_sum_effect(name: str, dim: str, groupings: list[np.ndarray] | None = None, centred: bool = False):
    """A random intercept for every level of ``dim``, ``sigma * B z`` with ``sigma ~ HalfNormal(1)``, ``z ~
    Normal(0, 1)`` over the ``r`` columns of ``B``, the :func:`zero_sum_basis` of the ``groupings``, created in
    the caller's model (as ``sigma_<name>``, ``z_<name>`` with the dim ``<name>_basis``): non-centred, and the
    effects sum to zero within every group. ``B z ~ Normal(0, P)`` with ``P = B B'`` the projection onto such
    effects: the levels are exchangeable within a group, with the variance ``sigma^2 (1 - 1/n)`` of a group of
    ``n`` (PyMC's ``ZeroSumNormal``, for any groupings).

    Why zero-sum: the cells have one free logit each and no common intercept, so a shift of every cell of a
    model up and of its conversations' effects down is the same fit; with free effects the cells' ``Normal(0,
    1.5)`` prior, summed over the many cells far from a logit of 0 (rare noticing, rare patterns), pulled the
    cells up and the effects down together (by more than half a logit in a test). With zero-sum effects the
    cells are at the average of the observed conversations. And nested or crossed terms (script, model x
    script, reply) that each sum to zero within the next coarser one are orthogonal, so the sampler does not
    have to trade one against the other (the split of a script's effect between a shared and a per-model
    part is otherwise identified only through the scales, and that ridge made NUTS take several times the
    steps). Why a basis and not ``P z`` with ``z`` per level: the components of ``z`` that ``P`` removes would
    be left to their prior, a direction as wide as the prior while the data pin the others down, and NUTS
    then needed four times the leapfrog steps to cross it. ``centred``: ``B v`` with ``v ~ Normal(0, sigma)``
    (as ``v_<name>``), the same distribution, for effects that the data pin down (see :func:`surprise_model`)."""
    import pymc as pm
    import pytensor.tensor as pt

    model = pm.modelcontext(None)
    basis = zero_sum_basis(len(model.coords[dim]), groupings)
    if basis.shape[1] == 0:  # e.g. one script: a zero-sum effect is zero
        return pt.zeros(basis.shape[0])
    model.add_coord(f"{name}_basis", np.arange(basis.shape[1]))
    sigma = pm.HalfNormal(f"sigma_{name}", SCALE_SD)
    if centred:
        return pt.dot(basis, pm.Normal(f"v_{name}", 0.0, sigma, dims=f"{name}_basis"))
    return sigma * pt.dot(basis, pm.Normal(f"z_{name}", 0.0, 1.0, dims=f"{name}_basis"))


def _zero_sum_draws(idata, name: str, n_levels: int, groupings: list[np.ndarray] | None = None) -> np.ndarray:
    """Draws of :func:`_zero_sum_effect` at every level: (levels, samples)."""
    basis = zero_sum_basis(n_levels, groupings)
    if basis.shape[1] == 0:
        return np.zeros((n_levels, idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]))
    if f"v_{name}" in idata.posterior:
        return basis @ _draws(idata, f"v_{name}")
    return _draws(idata, f"sigma_{name}")[None, :] * (basis @ _draws(idata, f"z_{name}"))


def _pair_groupings(pair_model: np.ndarray, pair_script: np.ndarray) -> list[np.ndarray]:
    return [pair_model, pair_script]


def _conversation_effects(pair_model: np.ndarray, pair_script: np.ndarray, centred: bool = False):
    """The conversation effect of every (model, script) pair, created in the caller's model (which has the
    dims ``script`` and ``model_script``): ``u[script] + w[model, script]``, the script's effect shared by the
    models (zero-sum over the scripts) and, with two or more models, the model x script interaction (zero-sum
    over each model's scripts and over each script's models)."""
    effect = _zero_sum_effect("script", "script", centred=centred)[pair_script]
    if pair_model.max() > 0:
        effect = effect + _zero_sum_effect("model_script", "model_script", _pair_groupings(pair_model, pair_script),
                                           centred=centred)
    return effect


def _conversation_draws(idata, pair_model: np.ndarray, pair_script: np.ndarray) -> np.ndarray:
    """Draws of :func:`_conversation_effects` per pair: (pairs, samples)."""
    effect = _zero_sum_draws(idata, "script", int(pair_script.max()) + 1)[pair_script]
    if pair_model.max() > 0:
        effect = effect + _zero_sum_draws(idata, "model_script", len(pair_model),
                                          _pair_groupings(pair_model, pair_script))
    return effect


def _binomial_logit(name: str, n: np.ndarray, eta, k: np.ndarray):
    """``k ~ Binomial(n, sigmoid(eta))``, observed: :func:`analysis.models._binomial_logit`'s log-likelihood
    ``k * eta - n * softplus(eta) + log C(n, k)`` with the constant ``log C(n, k)`` computed once here (that
    function's graph evaluates it, three log-gamma functions per entry, at every step of the sampler)."""
    import pymc as pm
    import pytensor.tensor as pt
    from scipy.special import gammaln

    n, k = np.asarray(n, dtype=np.int64), np.asarray(k, dtype=np.int64)
    log_c = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)

    def logp(value, n, eta, log_c):
        return value * eta - n * pt.softplus(eta) + log_c

    def random(n, eta, log_c, rng=None, size=None):
        return rng.binomial(n, _sigmoid(eta), size=size)

    return pm.CustomDist(name, n, eta, log_c, logp=logp, random=random, dtype="int64", observed=k)


# --------------------------------------------------------------------------------- binary outcomes
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
    ``says_yes = p_yes > 0.5`` (asked "did you write each of your previous messages exactly as it appears
    above?", the model claims the history as its own)::

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


# ------------------------------------------------------------------------------------------ imitation
@dataclass
class ImitationDesign:
    """The coding of :func:`imitation_model`: the model cells (control baselines per (model, kind) with
    ``condition = control, level = 0``, then (model, kind, level) of the corrupted rows; with ``replies``,
    words ``n`` and pattern words ``k``), the conversation levels, and one binomial observation per reply and
    kind (its cell and (model, script) pair, ``k`` of ``n``)."""

    cells: pd.DataFrame
    scripts: list[str]
    model_scripts: list[str]
    pair_model: np.ndarray
    pair_script: np.ndarray
    cell: np.ndarray
    pair: np.ndarray
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


def _imitation_cells(obs: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The model cells of the imitation observations: control cells are per (model, kind)."""
    key = np.where(obs["condition"].to_numpy() == "control",
                   np.char.add("control@", obs["kind"].astype(str).to_numpy().astype(str)), _cell_key(obs))
    cells, cell = _cells(obs.assign(_key=key), extra=["_key"])
    return cells.drop(columns="_key"), cell


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
    cells, cell = _imitation_cells(obs)
    cells["replies"] = np.bincount(cell, minlength=len(cells))
    cells["n"] = np.bincount(cell, weights=obs["n"].to_numpy(float), minlength=len(cells)).astype(int)
    cells["k"] = np.bincount(cell, weights=obs["k"].to_numpy(float), minlength=len(cells)).astype(int)
    scripts, pairs, pair, pair_model, pair_script = _conversation_codes(obs)
    return ImitationDesign(cells, scripts, pairs, pair_model, pair_script, cell, pair, obs["k"].to_numpy(np.int64),
                           obs["n"].to_numpy(np.int64))


def imitation_model(turns: pd.DataFrame) -> pm.Model:
    """Imitation: does a model take up the pattern of the corruption in its own next reply? A binomial
    logistic regression of the reply's pattern words, for every corrupted row with its own kind's counts and
    for every control row once per kind (the baseline rate of each pattern in clean conversations), on every
    model's rows jointly::

        k_i ~ Binomial(n_i, p_i)
        corrupted rows (kind j = the row's kind):  logit p_i = lambda[m_i, j, level_i] + c_i + sigma_obs * e_i
        control rows (each kind j):                logit p_i = lambda0[m_i, j]        + c_i + sigma_obs * e_i
        c_i = u[s_i] + w[m_i, s_i]   (the conversation effect, as in :func:`noticing_model`)
        lambda, lambda0 ~ Normal(0, 1.5);  sigma_*, sigma_obs ~ HalfNormal(1);  e ~ Normal(0, 1)

    ``k_i`` of ``n_i``: the words of the reply that show kind ``j``'s pattern, of its eligible words
    (:func:`reproduce.corrupt.pattern_counts`); replies with no eligible word are left out. ``e_i`` is an
    observation-level effect (one per reply and kind): the words of one reply are not independent trials (a
    reply that takes up the pattern does so in many of its words), and a plain binomial would count them as
    such and give too narrow intervals; with ``e`` the reply, not the word, is the unit of replication. (A
    beta-binomial says the same, but its log-gamma terms made every step of the sampler ten times as
    costly.) A control reply enters once per kind, each time with another measurement of it; the conversation
    effects tie its entries together and to the same script's corrupted replies, so the comparison with the
    baseline is largely within conversation. There is no turn effect: the cells are averaged over the
    measured turns, which every cell has alike.

    Quantities (:func:`imitation_summary`): ``sigmoid(lambda)``, the share of pattern words of the typical
    reply (``e = 0``) at the average conversation, per (model, kind, level); the baseline
    ``sigmoid(lambda0)`` per (model, kind); their difference per draw (imitation above the clean-conversation
    rate); and the expected share over replies, ``E_e sigmoid(lambda + sigma_obs * e)``."""
    import pymc as pm

    des = imitation_design(turns)
    coords = {"cell": [f"{r['model']}|{r['condition']}|{r['kind']}|{r['level']:g}" for _, r in des.cells.iterrows()],
              "script": des.scripts, "model_script": des.model_scripts, "obs": np.arange(len(des.k))}
    with pm.Model(coords=coords) as model:
        lam = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        conv = _conversation_effects(des.pair_model, des.pair_script)
        e = pm.HalfNormal("sigma_obs", SCALE_SD) * pm.Normal("z_obs", 0.0, 1.0, dims="obs")
        _binomial_logit("y", des.n, lam[des.cell] + conv[des.pair] + e, des.k)
    return model


#: Gauss-Hermite nodes and weights for expectations over a standard normal
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(32)
_GH_W = _GH_W / _GH_W.sum()


def imitation_summary(idata: az.InferenceData, turns: pd.DataFrame) -> pd.DataFrame:
    """Per model cell (the control baselines, ``condition = control`` with their ``kind`` and level 0, and the
    corrupted cells): ``replies``, pattern words ``k`` of eligible words ``n`` and their ``rate``; ``mean,
    low, high`` = the share of pattern words of the typical reply at the average conversation; ``share_*`` =
    the expected share over replies (comparable with ``rate``); on corrupted cells ``diff_*`` = the typical
    reply's share minus the same model's baseline for the kind, and ``p_positive`` = P(diff > 0)."""
    des = imitation_design(turns)
    lam, sd = _draws(idata, "mu"), _draws(idata, "sigma_obs")
    p = _sigmoid(lam)
    share = np.einsum("g,cgs->cs", _GH_W, _sigmoid(lam[:, None, :] + _GH_X[None, :, None] * sd[None, None, :]))
    cells = des.cells
    base = {(r["model"], r["kind"]): i for i, r in cells[cells["condition"] == "control"].iterrows()}
    nan = {f"diff_{s}": np.nan for s in ("mean", "low", "high")} | {"p_positive": np.nan}
    out = []
    for i, r in cells.iterrows():
        row = {"model": r["model"], "condition": r["condition"], "kind": r["kind"], "level": r["level"],
               "replies": int(r["replies"]), "n": int(r["n"]), "k": int(r["k"]), "rate": r["k"] / r["n"],
               **_summary(p[i]), **_summary(share[i], "share_")}
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
    raw mean surprise), the scripts, the scored replies (model, script, turn: the clean reply every altered
    version of it is compared with) with each reply's script and model, and the surprises on one grid per
    model of its cells by its replies: ``blocks`` holds each model's (cells, replies) positions, ``y`` the
    grids raveled one after another, divided by ``scale`` (the standard deviation of the surprises; 0 stays
    0), and ``mask`` 1 where a row was observed, 0 where not (such entries add nothing to the likelihood)."""

    cells: pd.DataFrame
    scripts: list[str]
    model_scripts: list[str]
    pair_model: np.ndarray
    pair_script: np.ndarray
    replies: list[str]
    reply_pair: np.ndarray  # the (model, script) pair of each reply
    blocks: list[tuple[np.ndarray, np.ndarray]]
    y: np.ndarray
    mask: np.ndarray
    scale: float
    dropped: int  # rows without a surprise (no clean reference to compare with)


def surprise_design(surprise: pd.DataFrame) -> SurpriseDesign:
    rows = check_table(surprise, "surprise")
    rows = rows[rows["condition"] != "control"]
    # a corrupted reply that the corruption left unchanged (a short reply at a low level: round(level * n) = 0)
    # is the clean reply itself, with a surprise of exactly 0 that says nothing about noticing; a pile of such
    # exact zeros would collapse a cell's noise scale
    rows = rows[~((rows["condition"] == "corrupted") & (rows["logprob"] == rows["logprob_clean"]))]
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
    scripts, models = sorted(rows["script_id"].unique()), sorted(rows["model"].unique())
    frame = pd.DataFrame({"model": rows["model"].to_numpy(), "script": rows["script_id"].to_numpy(),
                          "turn": rows["turn"].to_numpy()}).drop_duplicates().sort_values(["model", "script", "turn"])
    replies = [f"{m}|{s}|{t}" for m, s, t in frame.itertuples(index=False)]
    _, pairs, _, pair_model, pair_script = _conversation_codes(rows)
    reply_pair = _codes(frame["model"] + "|" + frame["script"], pairs)
    reply_model = pair_model[reply_pair]
    rid = (rows["model"] + "|" + rows["script_id"] + "|" + rows["turn"].astype(str)).to_numpy()
    reply = _codes(pd.Series(rid), replies)
    if (pd.DataFrame({"c": cell, "r": reply}).duplicated()).any():
        raise DataError("the mirror surprise table has more than one row for a (model, condition, kind, level, "
                        "script_id, turn): each altered reply is scored once; drop the duplicates")
    scale = float(y.std()) or 1.0
    grid = np.zeros((len(cells), len(replies)))
    seen = np.zeros((len(cells), len(replies)))
    grid[cell, reply], seen[cell, reply] = y / scale, 1.0
    cell_model = _codes(cells["model"], models)
    blocks = [(np.flatnonzero(cell_model == j), np.flatnonzero(reply_model == j)) for j in range(len(models))]
    return SurpriseDesign(cells, scripts, pairs, pair_model, pair_script, replies, reply_pair, blocks,
                          np.concatenate([grid[np.ix_(c, r)].ravel() for c, r in blocks]),
                          np.concatenate([seen[np.ix_(c, r)].ravel() for c, r in blocks]), scale, dropped)


def _student_t(name: str, y: np.ndarray, mask: np.ndarray, loc, log_sigma, nu):
    """``y ~ StudentT(nu, loc, exp(log_sigma))`` at the entries where ``mask`` is 1 (the others add 0), observed,
    with ``loc`` and ``log_sigma`` given per entry; written out so that the log-gamma terms of ``nu`` are
    computed once, not once per entry."""
    import pymc as pm
    import pytensor.tensor as pt

    def logp(value, mask, loc, log_sigma, nu):
        const = pt.gammaln((nu + 1.0) / 2.0) - pt.gammaln(nu / 2.0) - 0.5 * pt.log(np.pi * nu)
        r = (value - loc) * pt.exp(-log_sigma)
        return mask * (const - log_sigma - (nu + 1.0) / 2.0 * pt.log1p(r * r / nu))

    return pm.CustomDist(name, mask, loc, log_sigma, nu, logp=logp, observed=y)


#: the surprise model's intercepts are centred from this many conversations on; with fewer (the ``default``
#: profile's 6), few replies pin each intercept down and the centred form is a funnel (the sampler failed the
#: gate with r_hat 4.4 on the model x script effect), so they are non-centred there
CENTRED_MIN_SCRIPTS = 20


def surprise_model(surprise: pd.DataFrame) -> pm.Model:
    """Surprise: how much less probable an altered earlier reply is to the model than its own clean reply, in
    nats per token. A hierarchical Student-t regression of ``surprise = logprob_clean - logprob`` (each the
    mean log-probability per token of the reply given the history before it) over the corrupted and other
    rows of every model, jointly; divided by its standard deviation ``c`` over these rows::

        surprise_i / c ~ StudentT(nu, theta[m_i, c_i] + u[s_i] + w[m_i, s_i] + v[m_i, s_i, t_i], sigma[m_i, c_i])
        u = B_s a_s,  w = B_ms a_ms,  v = B_r a_r       (zero-sum, as in noticing_model; v: over the turns
                                                         of each (model, script))
        a_s ~ Normal(0, sigma_script),  a_ms ~ Normal(0, sigma_ms),  a_r ~ Normal(0, sigma_reply)
        log sigma[m, c] = lambda[m] + tau z[m, c],  lambda ~ Normal(0, 1),  tau ~ HalfNormal(0.5),  z ~ Normal(0, 1)
        theta ~ Normal(0, 1);  sigma_script, sigma_ms, sigma_reply ~ HalfNormal(1);  nu ~ Gamma(2, 0.1)

    ``c`` = cell (other, or a corrupted (kind, level)), ``s`` = script, ``t`` = the assistant turn scored.
    Every altered version of one clean reply is compared with the same ``logprob_clean``, so the rows of one
    (model, script, turn) share that reference's noise: the reply intercept ``v`` carries it; ``u`` and ``w``
    are the conversation effects of :func:`noticing_model` (what a script does to both models, and to one).
    The intercepts are *centred* (``a ~ Normal(0, sigma)``, not ``sigma * z``) from
    :data:`CENTRED_MIN_SCRIPTS` conversations on: each reply is scored in every cell, so the data pin every
    intercept down, where the centred form samples well (the non-centred one left the script scale near the
    ESS gate); with fewer conversations they are non-centred. The noise scale is per model cell
    (heavier corruption varies more), partially pooled within each model (a cell with few changed replies,
    such as insertion at a low level, borrows strength; with independent HalfNormal scales the ``default``
    profile's 8 conversations left that cell's scale just under the ESS gate), and the Student-t likelihood keeps a few replies whose score jumps (a
    corrupted word that the tokenizer splits badly) from moving the means. Control rows (surprise 0 by
    construction) are not modelled; rows without a surprise (no clean reference) are left out. Quantity
    (:func:`surprise_summary`): ``c * theta`` per model cell, the mean surprise at the average conversation
    and reply, in nats per token."""
    import pymc as pm
    import pytensor.tensor as pt

    des = surprise_design(surprise)
    coords = {"cell": [_label(r) for _, r in des.cells.iterrows()], "script": des.scripts,
              "model_script": des.model_scripts, "reply": des.replies}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("mu", 0.0, MEAN_SD, dims="cell")
        # noise scales partially pooled within a model: a cell with few changed replies (insertion at a low
        # level) borrows from the model's other cells instead of leaving its scale to the prior alone
        cell_model = _codes(des.cells["model"], sorted(des.cells["model"].unique()))
        log_sigma_model = pm.Normal("log_sigma_model", 0.0, 1.0, shape=int(cell_model.max()) + 1)
        tau_sigma = pm.HalfNormal("tau_sigma", 0.5)
        z_sigma = pm.Normal("z_sigma", 0.0, 1.0, dims="cell")
        log_sigma = log_sigma_model[cell_model] + tau_sigma * z_sigma
        pm.Deterministic("sigma_y", pt.exp(log_sigma), dims="cell")
        nu = pm.Gamma("nu", 2.0, 0.1)
        centred = len(des.scripts) >= CENTRED_MIN_SCRIPTS
        conv = _conversation_effects(des.pair_model, des.pair_script, centred=centred)
        reply = conv[des.reply_pair] + _zero_sum_effect("reply", "reply", [des.reply_pair], centred=centred)
        loc = pt.concatenate([(theta[c][:, None] + reply[r][None, :]).ravel() for c, r in des.blocks])
        ls = pt.concatenate([pt.repeat(log_sigma[c], len(r)) for c, r in des.blocks])
        _student_t("y", des.y, des.mask, loc, ls, nu)
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
           "recognition_turn", "imitation_cells", "surprise_cells", "judge_noticing_cells", "judge_noticing_contrasts",
           "judge_noticing_turn")


def has_judge(turns: pd.DataFrame | None) -> bool:
    """Whether the turns table carries the optional judge's grades (a stage run with ``mirror.judge`` set)."""
    return turns is not None and "judge_notices" in turns and bool(turns["judge_notices"].notna().any())


def _fit(model: pm.Model, settings: M.SamplerSettings, name: str) -> tuple[az.InferenceData, dict]:
    idata = M.sample(model, settings)
    return idata, M.check_convergence(idata, name)


def fit_all(tables: dict[str, pd.DataFrame], settings: M.SamplerSettings) -> dict:
    """Every mirror-test fit of the non-empty tables in ``tables`` (keys ``turns``, ``surprise``), all models
    jointly, each through the convergence gate (a failing fit raises
    :class:`analysis.models.ConvergenceError`). Every table given is checked before anything is sampled.
    Returns the tables :data:`RESULTS` (each with ``model``, the cell keys ``condition, kind, level`` where
    they apply, and ``mean, low, high``; empty where its input is absent) and ``diagnostics``: a list of
    ``{"model": "all", "fit", "diagnostics"}``. The turns table gives the fits ``noticing``, ``recognition``,
    (where it has corrupted rows) ``imitation`` and (where a judge graded it) ``judge_noticing``, the same
    model as ``noticing`` on the judge's grade; the surprise table the fit ``surprise``."""
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
        fits = [("noticing", noticing_model, "notices"), ("recognition", recognition_model, "says_yes")]
        if has_judge(turns):
            fits.append(("judge_noticing", lambda t: noticing_model(t, "judge_notices"), "judge_notices"))
        for name, build, outcome in fits:
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
    condition, kind, level, n, k, rate, low, high``; ``outcome`` is ``notices``, ``judge_notices`` (where a judge
    graded the replies; P(yes) > 0.5) and ``says_yes`` (trials:
    replies) and ``imitation`` (trials: eligible words, the own kind's for corrupted rows; control rows give
    one row per kind, the baseline). Words of one reply are not independent, so the imitation intervals are
    too narrow where replies differ (the Bayesian model's observation-level effect allows for it)."""
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
    outcomes = [("notices", rows, rows["notices"].to_numpy(bool)), ("says_yes", rows, rows["p_yes"].to_numpy(float) > 0.5)]
    if has_judge(rows):
        judged = rows[rows["judge_notices"].notna()]
        outcomes.append(("judge_notices", judged, judged["judge_notices"].to_numpy(float) > 0.5))
    for outcome, rows_o, y in outcomes:
        cells, cell = _cells(rows_o)
        cells["n"] = np.bincount(cell, minlength=len(cells))
        cells["k"] = np.bincount(cell, weights=y.astype(float), minlength=len(cells)).astype(int)
        parts.append(cells.assign(outcome=outcome))
    obs = imitation_rows(turns)
    if not obs.empty:
        cells, cell = _imitation_cells(obs)
        cells["n"] = np.bincount(cell, weights=obs["n"].to_numpy(float), minlength=len(cells)).astype(int)
        cells["k"] = np.bincount(cell, weights=obs["k"].to_numpy(float), minlength=len(cells)).astype(int)
        parts.append(cells.assign(outcome="imitation"))
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
                   words: float = 30.0, g_words: float = 4.0, reply_sd: float = 0.7) -> tuple[pd.DataFrame, dict]:
    """A turns table with known truth, in the schema of :data:`COLUMNS` ``["turns"]``: every model answers
    ``n_scripts`` scripts under every condition (control, each (kind, level) of ``kinds`` x ``levels``, other)
    at every turn of ``turns``.

    ``notices``: Bernoulli with logit :func:`binary_truth_logit` (``notice_control``, ``notice_other``,
    ``notice_gain``; per model) + ``slope[condition] * (turn - mean turn)`` (``notice_slope``: control,
    corrupted, other, per turn) + a script effect ``~ Normal(0, script_sd)`` + a model x script effect ``~
    Normal(0, model_script_sd)``. ``p_yes``: the same with ``yes_*`` and the gain lowering P(yes)
    (``yes_gain`` 0: a model that does not recognise alteration), drawn as a continuous probability whose
    thresholding at 0.5 has that probability. Pattern counts: ``n`` eligible words per reply and kind
    (Poisson, mean ``g_words`` for insertion [words with a g], ``words`` otherwise), ``k`` binomial with
    ``sigmoid(logit(BASELINE[kind]) + gain + conversation effects + reply effect)``, the gain
    ``imitation_gain * IMITABILITY[kind] * level / 0.6`` for the row's own kind in a corrupted history, 0
    otherwise (the conversation effects are those of noticing, halved; the reply effect ``~ Normal(0,
    reply_sd)``, one per reply and kind).

    ``truth``: ``noticing`` and ``recognition`` (``model, condition, kind, level, p`` at the average
    conversation and turn, ``diff`` = p minus the model's control), ``imitation`` (baselines as ``condition
    control`` per kind, and corrupted cells: ``p`` of the typical reply at the average conversation, ``diff``
    = p minus the baseline), ``turn`` (``model, condition, noticing, recognition``: slopes on the logit scale
    per turn). "Average conversation" is the population's (effect 0); the fits' is the average of the
    observed conversations, a little off it (the 40 scripts' mean effect has a standard deviation of
    ``script_sd / sqrt(40)``), which the intervals absorb."""
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
                    pi = _sigmoid(_logit(BASELINE[k]) + gain + 0.5 * conv + rng.normal(0.0, reply_sd, n_scripts))
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
