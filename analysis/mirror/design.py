"""The mirror test's constants, priors, table checks, cell keys and the helpers the models share (zero-sum
conversation effects, the binomial likelihood). See :mod:`analysis.mirror` for the experiment.

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
  :func:`analysis.self_prediction.hierarchical.check_convergence` (r_hat <= 1.01, bulk and tail ESS >= 400, no divergences),
  at its first sampling or at the longer one of :func:`analysis.self_prediction.hierarchical.sample_gated`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reproduce.errors import DataError
from reproduce.schema import require_columns

from analysis.bayes import category_codes as _codes
from analysis.bayes import draws as _draws, sigmoid as _sigmoid
from analysis.summaries import interval_summary


INTERVAL = 0.95
Q_LOW, Q_HIGH = (1 - INTERVAL) / 2, 1 - (1 - INTERVAL) / 2

LOGIT_SD = 1.5  # cell logits
SLOPE_SD = 1.0  # turn slopes, per standard deviation of the measured turns
SCALE_SD = 1.0  # random-effect scales
MEAN_SD = 1.0  # surprise cell means, on the standardised scale

#: the corruption kinds, as :data:`reproduce.mirror.corrupt.KINDS` (not imported: that module loads the engine)
KINDS = ("insertion", "substitution", "swap", "drop", "capitalisation")
CONDITIONS = ("control", "corrupted", "other")
LEVELS = (0.1, 0.3, 0.6)
#: the stage's tables, as :data:`reproduce.mirror.experiment.COLUMNS`
COLUMNS = {
    "turns": ["model", "script_id", "condition", "kind", "level", "turn", "history_changed", "history_eligible",
              "reply", "notices", "first_person", "third_person", "judge_notices", "p_yes", "p_outside",
              *[f"{c}_{k}" for k in KINDS for c in ("pattern_k", "pattern_n", "pattern_copied")]],
    "surprise": ["model", "script_id", "condition", "kind", "level", "turn", "logprob", "logprob_clean", "surprise",
                 "n_tokens", "changed"],
}
CELL = ["condition", "kind", "level"]
OUTCOMES = ("notices", "judge_notices")  # the noticing model's outcome: the rules' grade or the judge's


def _summary(d: np.ndarray, prefix: str = "") -> dict:
    """Posterior mean and 95% interval of draws ``d`` (last axis: samples), as ``<prefix>mean, low, high``."""
    return interval_summary(d, prefix, INTERVAL)


# ------------------------------------------------------------------------------------------- checks
def check_table(rows: pd.DataFrame, table: str) -> pd.DataFrame:
    """``rows`` with the columns and values the ``table`` (``turns`` or ``surprise``) models need, or a
    :class:`DataError` naming the first problem and the fix. Returns a copy with the cell keys normalised:
    ``kind`` None and ``level`` 0 on control rows, ``kind`` None and ``level`` NaN on other rows, and
    ``notices`` boolean (turns)."""
    require_columns(rows, table, COLUMNS, "mirror", "mirror")
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
            cc = rows[f"pattern_copied_{k}"].to_numpy(dtype=float)
            if not (np.isfinite(cc) & (cc >= 0) & (cc <= kk)).all():
                raise DataError(f"the mirror turns table has copied-word counts for {k!r} that are missing, negative "
                                f"or above the pattern words (pattern_copied_{k} > pattern_k_{k})")
            rows[f"pattern_k_{k}"], rows[f"pattern_n_{k}"] = kk.astype(np.int64), nn.astype(np.int64)
            rows[f"pattern_copied_{k}"] = cc.astype(np.int64)
    else:
        s = rows["surprise"].to_numpy(dtype=float)
        if np.isinf(s).any():
            raise DataError("the mirror surprise table has infinite surprise values: recompute those rows")
        changed = pd.to_numeric(rows["changed"], errors="coerce").to_numpy(dtype=float)
        if not (np.isfinite(changed) & (changed >= 0)).all():
            raise DataError("the mirror surprise table has rows whose 'changed' (the words the corruption changed in "
                            "the reply) is missing or negative: rerun the mirror stage, which counts it")
        rows["changed"] = changed.astype(np.int64)
    return rows


def unchanged_history(rows: pd.DataFrame) -> pd.Series:
    """Per row of a turns table: a corrupted row whose history the corruption left unchanged
    (``history_changed == 0``: in every earlier reply the level's share of the eligible words rounded to no
    word, as for insertion in replies without a ``g``, or at a low level in replies with few eligible words).
    Such a history is the clean one byte for byte, so its reply is a control trial, not an altered one."""
    return (rows["condition"] == "corrupted") & (pd.to_numeric(rows["history_changed"]) == 0)


def altered_only(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (checked turns) without the rows of :func:`unchanged_history`."""
    return rows[~unchanged_history(rows)]


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
    """``k ~ Binomial(n, sigmoid(eta))``, observed: :func:`analysis.self_prediction.hierarchical._binomial_logit`'s log-likelihood
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
