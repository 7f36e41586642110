"""The concept-injection constants, priors, table checks and cell coding. See :mod:`analysis.injection` for
the experiments.

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
  :func:`analysis.self_prediction.hierarchical.check_convergence`, at its first sampling or at the longer one of
  :func:`analysis.self_prediction.hierarchical.sample_gated`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reproduce.errors import DataError
from reproduce.schema import require_columns
from analysis.bayes import category_codes as _codes  # noqa: F401 (the family's modules import it from here)


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
    require_columns(rows, table, COLUMNS, "injection", "injection")
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
