"""Tidy long tables from the stage outputs, with ONE definition each of compliance, accuracy and the mode
baseline, used by every model, metric and figure.

Definitions
-----------
* **Scored observation.** A (predictor, target, item, property) is scored when the target's object-level
  answer is compliant, i.e. the property is defined. Items whose object-level answer is non-compliant have
  no ground truth and are left out of every accuracy (:func:`scored`).
* **Correct.** A scored observation is correct when the predictor's hypothetical answer is compliant and
  equals the target's property value. A non-compliant hypothetical answer counts as wrong (never dropped),
  so a predictor cannot raise its accuracy by refusing.
* **Compliance.** The share of hypothetical answers that parse to a valid property value
  (``meta_compliant``), over all scored observations; reported beside every accuracy.
* **Mode baseline.** For each target, test task and property: the accuracy of always predicting the most
  common value of the target's property on the evaluated items (ties broken by the value's sort order),
  over the same scored items (:func:`mode_baseline`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KEY = ["target", "task", "property"]


def scored(df: pd.DataFrame) -> pd.DataFrame:
    """The observations that have a ground truth: the target's object-level answer is compliant."""
    return df[df["object_compliant"].astype(bool)]


def is_correct(df: pd.DataFrame) -> pd.Series:
    return df["meta_compliant"].astype(bool) & df["object_compliant"].astype(bool) & (df["meta_value"] == df["object_value"])


def mode_baseline(df: pd.DataFrame) -> pd.DataFrame:
    """Per target x task x property: ``mode_value``, ``mode_accuracy`` and ``n`` (scored items).

    ``df`` holds one row per (target, item, property) or more (rows are de-duplicated by item first), with
    ``object_value`` and ``object_compliant``."""
    obj = scored(df).drop_duplicates(KEY + ["item_id"])
    rows = []
    for key, g in obj.groupby(KEY, sort=True):
        counts = g["object_value"].value_counts()
        top = counts.max()
        mode = sorted(v for v, c in counts.items() if c == top)[0]
        rows.append(dict(zip(KEY, key), mode_value=mode, mode_accuracy=top / len(g), n=len(g)))
    return pd.DataFrame(rows, columns=KEY + ["mode_value", "mode_accuracy", "n"])


def predictions(meta_untrained: pd.DataFrame, meta_trained: pd.DataFrame | None = None) -> pd.DataFrame:
    """Experiment 1's long table: one row per scored predictor x target x item x property, before and after
    training: ``condition (untrained|trained), run, n_examples, scaling, predictor, target, kind, self (0/1),
    task, family, item_id, unit, property, meta_value, meta_compliant, object_value, correct (0/1),
    mode_value, mode_correct (0/1)``. ``unit`` identifies the target's answer to one item (the cluster for
    item-level dependence: its properties share one response)."""
    parts = [meta_untrained.assign(condition="untrained", run="untrained", n_examples=0, scaling=False)]
    if meta_trained is not None and len(meta_trained):
        parts.append(meta_trained.assign(condition="trained"))
    df = scored(pd.concat(parts, ignore_index=True)).copy()
    df["correct"] = is_correct(df).astype(int)
    df["self"] = (df["kind"] == "self").astype(int)
    df["unit"] = df["target"] + "/" + df["task"] + "/" + df["item_id"]
    base = mode_baseline(meta_untrained)
    df = df.merge(base[KEY + ["mode_value"]], on=KEY, how="left", validate="many_to_one")
    df["mode_correct"] = (df["object_value"] == df["mode_value"]).astype(int)
    cols = ["condition", "run", "n_examples", "scaling", "predictor", "target", "kind", "self", "task", "family",
            "item_id", "unit", "property", "meta_value", "meta_compliant", "object_value", "correct", "mode_value",
            "mode_correct"]
    return df[cols].reset_index(drop=True)


def accuracy_table(pred: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Raw accuracy, compliance and mode baseline per group, with Wilson 95% intervals for the accuracy."""
    from .frequentist import wilson

    g = pred.groupby(by, sort=True)
    out = g.agg(n=("correct", "size"), k=("correct", "sum"), compliance=("meta_compliant", "mean"),
                mode_baseline=("mode_correct", "mean")).reset_index()
    out["accuracy"] = out["k"] / out["n"]
    out["wilson_low"], out["wilson_high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out


def compliance_table(meta_untrained: pd.DataFrame, pred: pd.DataFrame) -> pd.DataFrame:
    """Compliance rates at both levels, with Wilson 95% intervals.

    ``level = object``: the share of a model's object-level answers (one per item x property on the evaluated
    test items) whose property could be extracted. ``level = meta``: the share of hypothetical answers that
    parse to a valid value, over the scored observations of each condition x predictor x target (the same
    rows as every accuracy). Columns: ``level, condition, predictor, target, kind, n, k, rate, low, high``."""
    from .frequentist import wilson

    obj = meta_untrained.drop_duplicates(KEY + ["item_id"])
    o = obj.groupby("target", sort=True)["object_compliant"].agg(n="size", k="sum").reset_index()
    o = o.assign(level="object", condition="object level", predictor=o["target"], kind="object")
    full = pred[~pred["scaling"].astype(bool)]
    m = (full.groupby(["condition", "predictor", "target", "kind"], sort=True)["meta_compliant"]
         .agg(n="size", k="sum").reset_index().assign(level="meta"))
    out = pd.concat([o, m], ignore_index=True)
    out["k"] = out["k"].astype(int)
    out["rate"] = out["k"] / out["n"]
    out["low"], out["high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out[["level", "condition", "predictor", "target", "kind", "n", "k", "rate", "low", "high"]]


# ---------------------------------------------------------------------------------------- calibration
TOP_BEHAVIOURS = 3


def calibration_pairs(cal: pd.DataFrame, top: int = TOP_BEHAVIOURS) -> pd.DataFrame:
    """The paper's calibration points: for every predictor x item x property, the ``top`` most frequent
    object-level values among the temperature-1 samples (values that were sampled at least once; ties by
    option order), each with its object-level probability and the predictor's meta-level probability.

    Columns: ``condition, predictor, target, kind, task, property, item_id, value, object_prob, meta_prob``.
    Rows with no compliant sample have no distribution and give no points."""
    rows = []
    for r in cal[cal["n_compliant"] > 0].itertuples(index=False):
        counts = np.asarray(r.object_counts, dtype=float)
        meta = np.asarray(r.meta_probs, dtype=float)
        if len(meta) != len(counts):
            continue
        order = [i for i in np.argsort(-counts, kind="stable")[:top] if counts[i] > 0]
        for i in order:
            rows.append((r.condition, r.predictor, r.target, r.kind, r.task, r.property, r.item_id,
                         r.options[i], counts[i] / r.n_compliant, meta[i]))
    return pd.DataFrame(rows, columns=["condition", "predictor", "target", "kind", "task", "property", "item_id",
                                       "value", "object_prob", "meta_prob"])


def calibration_errors(cal: pd.DataFrame) -> pd.DataFrame:
    """Item-level calibration error: the total-variation distance between the object-level distribution
    (compliant samples) and the predictor's option distribution, ``0.5 * sum |p_object - p_meta|`` in [0, 1].

    Columns: ``condition, predictor, target, kind, self, task, property, item_id, unit, error``."""
    c = cal[cal["n_compliant"] > 0]
    errors = [0.5 * float(np.abs(np.asarray(o, float) - np.asarray(m, float)).sum()) if len(o) == len(m) else np.nan
              for o, m in zip(c["object_probs"], c["meta_probs"])]
    out = c[["condition", "predictor", "target", "kind", "task", "property", "item_id"]].assign(error=errors)
    out = out.dropna(subset=["error"])
    out["self"] = (out["kind"] == "self").astype(int)
    out["unit"] = out["target"] + "/" + out["task"] + "/" + out["item_id"]
    return out.reset_index(drop=True)


# -------------------------------------------------------------------------------------- behaviour change
def behaviour_outcomes(bc: pd.DataFrame) -> pd.DataFrame:
    """Experiment 3: the items whose property changed (old and new behaviour both compliant and different),
    each with ``outcome``: ``new`` (the new prediction matches the new behaviour), ``old`` (it matches the
    old one) or ``neither`` (another value, or a non-compliant prediction)."""
    ch = bc[bc["changed"].astype(bool)].copy()
    ch["outcome"] = np.select([ch["matches_new"].astype(bool), ch["matches_old"].astype(bool)], ["new", "old"],
                              default="neither")
    return ch.reset_index(drop=True)
