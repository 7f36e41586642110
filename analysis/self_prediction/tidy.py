"""Tidy long tables from the stage outputs, with ONE definition each of compliance, accuracy, the mode
baseline, the calibration points and the behaviour-change outcomes, used by every model, metric and figure.

The protocol is the original study's (Binder et al. 2024; github.com/felixbinder/introspection_self_prediction,
``evals/analysis/james/experiments/1_oct_cross_pred.py``): each model M1 is self-trained on its own behaviour,
which gives M1' (one per finetune seed); the cross-predictor M2 is trained on M1''s behaviour; both trained
predictors are scored against M1''s behaviour. Every stage row names the behaviour it is scored against in
``object_model`` (``smollm2-135m`` for the base model, ``smollm2-135m+self-s0`` for M1' of seed 0) and says
which in ``ground_truth``: ``base`` (untrained rows; and, for trained rows, the sensitivity variant that
scores the same predictions against the base model's behaviour) or ``trained`` (M1': the main result).

Definitions
-----------
* **Scored observation.** A (predictor, object model, item, property) is scored when the object model's
  answer is compliant, i.e. the property is defined. Items whose object-level answer is non-compliant have
  no ground truth and are left out of every accuracy (:func:`scored`).
* **Correct.** A scored observation is correct when the predictor's hypothetical answer is compliant and
  equals the object model's property value. A non-compliant hypothetical answer counts as wrong (never
  dropped), so a predictor cannot raise its accuracy by refusing.
* **Compliance.** The share of hypothetical answers that parse to a valid property value
  (``meta_compliant``), over all scored observations; reported beside every accuracy.
* **Mode baseline.** For each object model, test task and property: the accuracy of always predicting the
  most common value of the object model's property on the evaluated items (ties broken by the value's sort
  order), over the same scored items (:func:`mode_baseline`). A trained row's baseline is therefore M1''s,
  computed from M1''s answers, never the base model's.
* **Scored as the original's code scores it** (a labelled variant, ``objects=`` in :func:`predictions`;
  :mod:`analysis.self_prediction.original`): the original's property functions on the stored object-level answer, every
  answer kept (a missing value, ``"nan"``, where a function finds none), the whole cleaned hypothetical answer
  compared with it, and the mode over every evaluated item.
* **Answer unit.** ``unit = object_model/task/item_id``: one object-level answer defines several properties
  and is shared by the self- and the cross-predictor of the same target and seed (the cluster of every
  bootstrap and the unit intercept of the models).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reproduce.self_prediction.properties import is_correct  # the one definition of a correct prediction

import analysis.self_prediction.original as original
from analysis.constants import TOP_BEHAVIOURS

KEY = ["object_model", "task", "property"]
GROUND_TRUTHS = ("trained", "base")  # the main result first, then the sensitivity variant


def with_schema(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the columns that say what each row is scored against: ``object_model`` (default: the
    target, i.e. the base model), ``ground_truth`` (default ``base``) and ``seed`` (nullable integer, NA when
    absent). Tables written before seeds and self-trained ground truth existed scored every row against the
    base model, which these defaults say."""
    out = _scored_against(df)
    if "ground_truth" not in out:
        out["ground_truth"] = "base"
    return out


def _scored_against(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with ``object_model`` (default: the target) and ``seed`` (nullable integer, NA when
    absent): what :func:`with_schema` and the calibration tables share."""
    out = df.copy()
    if "object_model" not in out:
        out["object_model"] = out["target"]
    out["seed"] = (out["seed"] if "seed" in out else pd.Series(pd.NA, index=out.index)).astype("Int64")
    return out


def unit_of(df: pd.DataFrame) -> pd.Series:
    """The answer unit of every row: ``object_model/task/item_id``."""
    return df["object_model"].astype(str) + "/" + df["task"] + "/" + df["item_id"]


def item_of(df: pd.DataFrame) -> pd.Series:
    """The item of every row, ``task/item_id``: the unit the frequentist intervals and the MAD's resample or
    cluster. The items are what a run draws; an item's answers under every target, seed and model (its answer
    units) are one draw of it, so they are resampled together."""
    return df["task"].astype(str) + "/" + df["item_id"].astype(str)


def with_item(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with an ``item`` column (:func:`item_of`)."""
    return df.assign(item=item_of(df))


#: the target x task x property cell of an observation (its own random intercept and slope in the models)
CELL = "cell"


def with_cell(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its :data:`CELL` column, ``target|task|property``."""
    return df.assign(**{CELL: df["target"] + "|" + df["task"] + "|" + df["property"]})


def main_trained(pred: pd.DataFrame) -> pd.DataFrame:
    """Experiment 1's main comparison: the trained predictions of the full training runs (not the
    data-scaling sweep) of :func:`predictions`."""
    return pred[(pred["condition"] == "trained") & ~pred["scaling"].astype(bool)]


def scored(df: pd.DataFrame) -> pd.DataFrame:
    """The observations that have a ground truth: the object model's answer is compliant."""
    return df[df["object_compliant"].astype(bool)]


def _mode(values: pd.Series) -> tuple[object, int]:
    """The most common value (ties broken by sort order) and its count."""
    counts = values.value_counts()
    top = counts.max()
    return sorted(v for v, c in counts.items() if c == top)[0], int(top)


def mode_baseline(df: pd.DataFrame) -> pd.DataFrame:
    """Per object model x task x property: ``mode_value``, ``mode_accuracy`` and ``n`` (scored items).

    ``df`` holds one row per (object model, item, property) or more (rows are de-duplicated by item first),
    with ``object_value`` and ``object_compliant`` (``object_model`` defaults to ``target``)."""
    obj = scored(with_schema(df)).drop_duplicates(KEY + ["item_id"])
    rows = []
    for key, g in obj.groupby(KEY, sort=True):
        mode, top = _mode(g["object_value"])
        rows.append(dict(zip(KEY, key), mode_value=mode, mode_accuracy=top / len(g), n=len(g)))
    return pd.DataFrame(rows, columns=KEY + ["mode_value", "mode_accuracy", "n"])


PREDICTION_COLUMNS = ["condition", "ground_truth", "run", "seed", "n_examples", "scaling", "predictor", "target",
                      "object_model", "kind", "self", "task", "family", "item_id", "unit", "property", "meta_value",
                      "meta_compliant", "object_value", "correct", "mode_value", "mode_correct"]


def predictions(meta_untrained: pd.DataFrame, meta_trained: pd.DataFrame | None = None,
                ground_truth: str = "trained", objects: pd.DataFrame | None = None,
                sibling: bool = False) -> pd.DataFrame:
    """Experiment 1's long table: one row per scored predictor x object model x item x property, before and
    after training, with the columns of :data:`PREDICTION_COLUMNS`. Untrained rows are scored against the
    base model; trained rows against ``ground_truth``: ``trained`` (M1', the main result) or ``base`` (the
    sensitivity variant). Each row's mode baseline is that of the behaviour it is scored against.
    ``objects``: the object-level answers of every object model scored against
    (:func:`analysis.self_prediction.original.object_responses`); when given, every row is scored as the original's code
    scores it, a labelled variant (:mod:`analysis.self_prediction.original`): every answer kept, its value and the
    prediction's read by the original's rules. ``sibling``: keep the sibling predictors' rows (``kind =
    sibling``, ``self = 0``; :mod:`analysis.self_prediction.sibling`); without it the table holds the self- and
    cross-predictors only, the arms of every other analysis."""
    if ground_truth not in GROUND_TRUTHS:
        raise ValueError(f"ground_truth={ground_truth!r}: one of {', '.join(GROUND_TRUTHS)}")
    parts = [with_schema(meta_untrained).assign(condition="untrained", run="untrained", n_examples=0, scaling=False,
                                                ground_truth="base")]
    if meta_trained is not None and len(meta_trained):
        mt = with_schema(meta_trained)
        keep = (mt["ground_truth"] == ground_truth) & (sibling or mt["kind"] != "sibling")
        parts.append(mt[keep].assign(condition="trained"))
    both = pd.concat(parts, ignore_index=True)
    both["seed"] = both["seed"].astype("Int64")
    if objects is not None:
        both = original.rescore(both, objects)
    base = mode_baseline(both)
    df = scored(both).copy()
    df["correct"] = (df["correct"] if objects is not None else is_correct(df)).astype(int)
    df["self"] = (df["kind"] == "self").astype(int)
    df["unit"] = unit_of(df)
    df = df.merge(base[KEY + ["mode_value"]], on=KEY, how="left", validate="many_to_one")
    df["mode_correct"] = (df["object_value"] == df["mode_value"]).astype(int)
    return df[PREDICTION_COLUMNS].reset_index(drop=True)


def accuracy_table(pred: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Raw accuracy, compliance and mode baseline per group, with Wilson 95% intervals for the accuracy."""
    from analysis.intervals import wilson

    g = pred.groupby(by, sort=True, dropna=False)
    out = g.agg(n=("correct", "size"), k=("correct", "sum"), compliance=("meta_compliant", "mean"),
                mode_baseline=("mode_correct", "mean")).reset_index()
    out["accuracy"] = out["k"] / out["n"]
    out["wilson_low"], out["wilson_high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out


def compliance_table(objects: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    """Compliance rates at both levels, with Wilson 95% intervals.

    ``level = object``: the share of an object model's answers (one per item x property on the evaluated
    test items) whose property could be extracted, for every behaviour something is scored against (the base
    models and each self-trained M1'; ``objects`` holds their stage rows). ``level = meta``: the share of
    hypothetical answers that parse to a valid value, over the scored observations of each condition x
    predictor x target (the same rows as every accuracy). Columns: ``level, condition, predictor, target,
    kind, n, k, rate, low, high`` (for ``level = object``, ``predictor`` is the object model)."""
    from analysis.intervals import wilson

    obj = with_schema(objects).drop_duplicates(KEY + ["item_id"])
    o = obj.groupby(["object_model", "target"], sort=True)["object_compliant"].agg(n="size", k="sum").reset_index()
    o = o.rename(columns={"object_model": "predictor"}).assign(level="object", condition="object level", kind="object")
    full = pred[~pred["scaling"].astype(bool)]
    m = (full.groupby(["condition", "predictor", "target", "kind"], sort=True)["meta_compliant"]
         .agg(n="size", k="sum").reset_index().assign(level="meta"))
    out = pd.concat([o, m], ignore_index=True)
    out["k"] = out["k"].astype(int)
    out["rate"] = out["k"] / out["n"]
    out["low"], out["high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out[["level", "condition", "predictor", "target", "kind", "n", "k", "rate", "low", "high"]]


# ---------------------------------------------------------------------------------------- calibration
META_VARIANTS = ("raw", "renormalised")  # the paper's meta distribution first, then the sensitivity variant


def _with_calibration_schema(cal: pd.DataFrame) -> pd.DataFrame:
    out = _scored_against(cal)
    if "p_outside" not in out:
        out["p_outside"] = np.nan
    return out


def meta_distribution(meta_probs, p_outside, variant: str = "raw") -> np.ndarray:
    """The predictor's meta-level probability of each option.

    ``raw`` (the paper's): the option probabilities with the mass outside the options kept out of them,
    ``meta_probs * (1 - p_outside)``, so the options sum to ``1 - p_outside``. The original samples the
    hypothetical answer 20 times and divides each option's count by every sample, answers outside the
    options included; the exact counterpart of that frequency is the raw mass. ``renormalised`` (the
    sensitivity variant): ``meta_probs`` as stored, renormalised over the options. A missing ``p_outside``
    counts as 0."""
    m = np.asarray(meta_probs, dtype=float)
    if variant == "renormalised":
        return m
    if variant != "raw":
        raise ValueError(f"variant={variant!r}: one of {', '.join(META_VARIANTS)}")
    out = 0.0 if p_outside is None or pd.isna(p_outside) else float(p_outside)
    return m * (1.0 - out)


def calibration_pairs(cal: pd.DataFrame, top: int = TOP_BEHAVIOURS, variant: str = "raw") -> pd.DataFrame:
    """The paper's calibration points: for every predictor x item x property, the ``top`` most frequent
    object-level values among the temperature-1 samples (values that were sampled at least once), each with its
    object-level probability and the predictor's meta-level probability (:func:`meta_distribution`
    ``variant``). Equally frequent values rank in the order they were first sampled (``object_first``), as in
    the original, whose stable sort of the sampled values keeps them in the order they came; a table without
    ``object_first`` ranks them in option order. Ties across the third place are common with 20 samples, and
    which value takes it moves the MAD by a few tenths of a point.

    The object-level probability is the value's count over the *compliant* samples (``n_compliant``), as in
    the original (``side_experiments/19_sep_calibration_main_fig.py``: a sample whose property cannot be
    extracted is dropped before the distribution is formed). For a trained row the samples are M1''s (the
    calibration table's ``object_model``), for an untrained row the base model's.

    Columns: ``condition, predictor, target, object_model, seed, kind, task, property, item_id, unit, rank,
    value, object_prob, meta_prob``. Rows with no compliant sample have no distribution and give no points."""
    cal = _with_calibration_schema(cal)
    rows = []
    if "object_first" not in cal:
        cal = cal.assign(object_first=[list(range(len(c))) for c in cal["object_counts"]])
    for r in cal[cal["n_compliant"] > 0].itertuples(index=False):
        counts = np.asarray(r.object_counts, dtype=float)
        if len(r.meta_probs) != len(counts):
            continue
        meta = meta_distribution(r.meta_probs, r.p_outside, variant)
        order = [i for i in np.lexsort((np.asarray(r.object_first), -counts))[:top] if counts[i] > 0]
        for rank, i in enumerate(order, start=1):
            rows.append((r.condition, r.predictor, r.target, r.object_model, r.seed, r.kind, r.task, r.property,
                         r.item_id, rank, r.options[i], counts[i] / r.n_compliant, meta[i]))
    out = pd.DataFrame(rows, columns=["condition", "predictor", "target", "object_model", "seed", "kind", "task",
                                      "property", "item_id", "rank", "value", "object_prob", "meta_prob"])
    out["seed"] = out["seed"].astype("Int64")
    out.insert(out.columns.get_loc("item_id") + 1, "unit", unit_of(out) if len(out) else pd.Series(dtype=str))
    return out


#: the log-score's floor on a meta probability: 1e-4, above the smallest normal number of every inference dtype
#: (float16's is 6.1e-5; bfloat16's and float32's 1.2e-38) and so the same whatever dtype the model ran in; one
#: sample the predictor gave less than this costs log(1e-4) = -9.2 nats, not the -87.3 of float32's smallest
#: normal, which let a handful of underflowed items decide the mean score and its sign depend on the dtype
FLOOR = 1e-4


def log_score(counts, meta) -> float:
    """The multinomial log-score per sample: ``sum_k counts_k * log meta_k / sum_k counts_k`` (nats; 0 is
    perfect, higher is better), the log-likelihood of the sampled counts under the predictor's distribution
    up to the multinomial coefficient, which does not depend on the predictor. With the ``raw`` meta
    distribution the mass outside the options lowers every ``meta_k``. A probability below :data:`FLOOR` (one
    that underflowed to 0 included) is read as :data:`FLOOR`, so one impossible sample costs a finite penalty
    that does not depend on the inference dtype."""
    counts = np.asarray(counts, float)
    return float(counts @ np.log(np.maximum(np.asarray(meta, float), FLOOR)) / counts.sum())


def calibration_errors(cal: pd.DataFrame, variant: str = "raw") -> pd.DataFrame:
    """Item-level calibration error: the total-variation distance between the object-level distribution
    (compliant samples) and the predictor's meta-level distribution, in [0, 1]. With the ``raw`` meta
    distribution the mass outside the options is a value no sample took, so it adds ``p_outside / 2``:
    ``0.5 * (sum |p_object - p_meta| + p_outside)``.

    ``log_score``: the multinomial log-score of the item's compliant object-level samples under the meta
    distribution, per sample (:func:`log_score`), a proper scoring rule on the counts themselves.

    Columns: ``condition, predictor, target, object_model, seed, kind, self, task, property, item_id, unit,
    error, log_score``."""
    c = _with_calibration_schema(cal)
    c = c[c["n_compliant"] > 0]
    errors, scores = [], []
    for o, counts, m, out in zip(c["object_probs"], c["object_counts"], c["meta_probs"], c["p_outside"]):
        if len(o) != len(m):
            errors.append(np.nan)
            scores.append(np.nan)
            continue
        meta = meta_distribution(m, out, variant)
        errors.append(0.5 * float(np.abs(np.asarray(o, float) - meta).sum() + max(0.0, 1.0 - meta.sum())))
        scores.append(log_score(counts, meta))
    out = c[["condition", "predictor", "target", "object_model", "seed", "kind", "task", "property", "item_id"]]
    out = out.assign(error=errors, log_score=scores).dropna(subset=["error"])
    out["self"] = (out["kind"] == "self").astype(int)
    out["unit"] = unit_of(out)
    return out.reset_index(drop=True)


# -------------------------------------------------------------------------------------- behaviour change
BEHAVIOUR_CELL = ["model", "task", "property"]


def behaviour_outcomes(bc: pd.DataFrame) -> pd.DataFrame:
    """Experiment 3: the items whose property changed (old and new behaviour both compliant and different;
    ``old`` is M1''s behaviour, ``new`` the changed model's), each with

    * ``outcome``: ``new`` (the changed model's prediction matches its new behaviour), ``old`` (it matches
      the old one) or ``neither`` (another value, or a non-compliant prediction);
    * the leave-one-out mode baselines of the new and of the old behaviour (:func:`leave_one_out_mode`):
      ``loo_mode_new`` / ``loo_mode_old``, the most common new / old value among the *other* changed items of
      the item's model x task x property (ties by sort order), or, where the item is alone in that cell, among
      the changed items of the same model and property in the other tasks (``loo_mode_new_pool`` /
      ``loo_mode_old_pool``: ``cell``, ``tasks`` or ``none``), and ``loo_mode_new_correct`` /
      ``loo_mode_old_correct`` (1/0, NaN without a baseline) whether the item's new / old value equals it.
      The original recomputes the mode on the changed items themselves (``evals/analysis/james/
      james_analysis.py``, ``calculate_evidence_1`` with ``shifting="only_shifted"`` and
      ``recalculate_mode``); with a couple of changed items per cell such a mode is fitted to the very items
      it scores and is right on most of them by construction, so it is kept only in the labelled variant
      :func:`behaviour_original`. The original also drops the items whose prediction is non-compliant,
      where here such an item stays and matches neither behaviour (so the rates do not condition on the
      changed model complying);
    * ``unit`` (``model/task/item_id``: an item's properties share one answer) and ``match_new``,
      ``match_old``, ``before_new``, ``before_old`` (0/1: the prediction after / before the change equals
      the new / old value; a non-compliant prediction matches nothing), ``compliant_after`` and
      ``compliant_before`` (0/1: the prediction after / before the change is compliant)."""
    ch = bc[bc["changed"].astype(bool)].copy()
    ch["outcome"] = np.select([ch["matches_new"].astype(bool), ch["matches_old"].astype(bool)], ["new", "old"],
                              default="neither")
    ok = ch["meta_compliant"].astype(bool)
    ok_before = ch["meta_old_compliant"].astype(bool) if "meta_old_compliant" in ch else ch["meta_old_value"].notna()
    ch["match_new"] = (ok & (ch["meta_value"] == ch["new_value"])).astype(int)
    ch["match_old"] = (ok & (ch["meta_value"] == ch["old_value"])).astype(int)
    ch["before_new"] = (ok_before & (ch["meta_old_value"] == ch["new_value"])).astype(int)
    ch["before_old"] = (ok_before & (ch["meta_old_value"] == ch["old_value"])).astype(int)
    ch["compliant_after"], ch["compliant_before"] = ok.astype(int), ok_before.astype(int)
    ch["unit"] = ch["model"] + "/" + ch["task"] + "/" + ch["item_id"]
    ch = ch.reset_index(drop=True)
    for side in ("new", "old"):
        ch[f"loo_mode_{side}"], ch[f"loo_mode_{side}_pool"] = leave_one_out_mode(ch, f"{side}_value")
        hit = (ch[f"{side}_value"] == ch[f"loo_mode_{side}"]).astype(float)
        ch[f"loo_mode_{side}_correct"] = hit.where(ch[f"loo_mode_{side}"].notna())
    return ch


def leave_one_out_mode(d: pd.DataFrame, column: str, cell: list[str] = BEHAVIOUR_CELL,
                       coarse: tuple[str, ...] = ("model", "property")) -> tuple[pd.Series, pd.Series]:
    """Per row, the most common value of ``column`` among the other rows of its ``cell`` (ties by sort
    order), so that the guess never sees the value it is scored on; where the row is alone in its cell, the
    most common value among the rows of the same ``coarse`` group in the other cells (for experiment 3: the
    same model and property in the other tasks, the level at which the original pools its modes); where
    there is none, NaN. Returns the modes and the pool each came from (``cell``, ``tasks``, ``none``)."""
    values = sorted(d[column].unique())
    code = d[column].map({v: i for i, v in enumerate(values)}).to_numpy(int)
    cells = pd.factorize(pd.MultiIndex.from_frame(d[list(cell)]))[0]
    pools = pd.factorize(pd.MultiIndex.from_frame(d[list(coarse)]))[0]
    in_cell = np.zeros((cells.max() + 1, len(values)))
    np.add.at(in_cell, (cells, code), 1)
    in_pool = np.zeros((pools.max() + 1, len(values)))
    np.add.at(in_pool, (pools, code), 1)
    others = in_cell[cells]
    others[np.arange(len(d)), code] -= 1
    use_cell = others.sum(axis=1) > 0
    counts = np.where(use_cell[:, None], others, in_pool[pools] - in_cell[cells])
    has = counts.sum(axis=1) > 0
    mode = pd.Series(np.asarray(values, dtype=object)[counts.argmax(axis=1)], index=d.index).where(has)
    pool = pd.Series(np.select([use_cell, has], ["cell", "tasks"], default="none"), index=d.index)
    return mode, pool


def behaviour_original(out: pd.DataFrame) -> pd.DataFrame:
    """Experiment 3 computed as the original computes it (a labelled variant beside :func:`behaviour_tracking`):
    the original reads its tables with ``exclude_noncompliant=True``, which drops a non-compliant prediction
    before anything is computed (``evals/analysis/james/james_analysis.py``, ``calculate_evidence_1``, as run by
    ``experiments/31_7_gpt_4o_double_ft.py``), and recomputes the mode per response property pooled over tasks
    (``recalculate_mode`` on each response property x meta model x object model, its two "among" properties
    renamed to one first). So: the changed items whose prediction after the change is compliant, P(prediction =
    new) and P(prediction = old) on them, and the mode baselines of the new and of the old values recomputed on
    those same items per model x property (the two "among" properties as one; ties by sort order). ``out`` is
    :func:`behaviour_outcomes`'s table. Per model and pooled (``model = "pooled"``, each item's baseline still
    from its own model's mode); Wilson 95% intervals for the two match rates. Beside them
    (``micro_baseline_*``) the baseline of the original's paper figure for its pooled bar
    (``final_10_9_claude_shift_3000.py`` with ``micro_average=True``: every property relabelled as one before
    the modes, so one mode over all of a model's values). Columns: ``model, n, k_new, p_new, low_new, high_new,
    baseline_new, micro_baseline_new, k_old, p_old, low_old, high_old, baseline_old, micro_baseline_old``;
    with no compliant prediction a model's rates are NaN."""
    from analysis.intervals import wilson

    ok = out[out["compliant_after"].astype(bool)].copy()
    # the original renames its "is either of two options" properties to one, among_options, before the modes
    # (ObjectAndMeta.rename_properties in evals/analysis/james/object_meta.py): their modes are pooled
    pooled_property = ok["property"].where(~ok["property"].str.startswith("among_"), "among_options")
    for side in ("new", "old"):
        mode = ok.groupby([ok["model"], pooled_property])[f"{side}_value"].transform(lambda v: _mode(v)[0])
        ok[f"orig_mode_{side}_correct"] = (ok[f"{side}_value"] == mode).astype(int)
        # the paper figure's micro-average bar (final_10_9_claude_shift_3000.py, micro_average=True): every
        # property relabelled as one before recalculate_mode, so one mode over all of a model's values
        micro = ok.groupby("model")[f"{side}_value"].transform(lambda v: _mode(v)[0])
        ok[f"micro_mode_{side}_correct"] = (ok[f"{side}_value"] == micro).astype(int)
    rows = []
    for model in [*sorted(out["model"].unique()), "pooled"]:
        g = ok if model == "pooled" else ok[ok["model"] == model]
        n = len(g)
        row = {"model": model, "n": n}
        for side in ("new", "old"):
            k = int(g[f"match_{side}"].sum())
            lo, hi = wilson(k, n) if n else (np.nan, np.nan)
            row.update({f"k_{side}": k, f"p_{side}": k / n if n else np.nan, f"low_{side}": float(lo),
                        f"high_{side}": float(hi),
                        f"baseline_{side}": g[f"orig_mode_{side}_correct"].mean() if n else np.nan,
                        f"micro_baseline_{side}": g[f"micro_mode_{side}_correct"].mean() if n else np.nan})
        rows.append(row)
    return pd.DataFrame(rows)


def behaviour_tracking(out: pd.DataFrame) -> pd.DataFrame:
    """Per model and pooled (``model = "pooled"``): P(prediction = new) and P(prediction = old) on the
    changed items, each beside its leave-one-out mode baseline (the mean over the items that have one; ``n_loo_new``
    / ``n_loo_old`` count them), and the prediction before the change. A non-compliant prediction matches neither, so beside them: the share of compliant predictions
    after and before the change (``compliant``, ``compliant_before``) and the match rates among the compliant
    predictions only (``p_new_if_compliant``, ``p_old_if_compliant``; NaN when none is). Columns: ``model, n,
    p_new, loo_mode_new, n_loo_new, p_old, loo_mode_old, n_loo_old, before_new, before_old, compliant,
    compliant_before, p_new_if_compliant, p_old_if_compliant``."""
    rows = []
    for model, g in [*out.groupby("model", sort=True), ("pooled", out)]:
        ok = g["compliant_after"].astype(bool)
        rows.append({"model": model, "n": len(g), "p_new": g["match_new"].mean(),
                     "loo_mode_new": g["loo_mode_new_correct"].mean(),
                     "n_loo_new": int(g["loo_mode_new_correct"].notna().sum()), "p_old": g["match_old"].mean(),
                     "loo_mode_old": g["loo_mode_old_correct"].mean(),
                     "n_loo_old": int(g["loo_mode_old_correct"].notna().sum()), "before_new": g["before_new"].mean(),
                     "before_old": g["before_old"].mean(), "compliant": ok.mean(),
                     "compliant_before": g["compliant_before"].mean(),
                     "p_new_if_compliant": g.loc[ok, "match_new"].mean() if ok.any() else float("nan"),
                     "p_old_if_compliant": g.loc[ok, "match_old"].mean() if ok.any() else float("nan")})
    return pd.DataFrame(rows)
