"""The ``calibration`` stage (experiment 2): object-level sample distributions beside the predictors'
option probabilities."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reproduce.config import ConfigError
from reproduce.io import read_stage_table
from reproduce.self_prediction.properties import get_property
from reproduce.self_prediction.schemas import CALIBRATION, META_TRAINED, META_UNTRAINED, OBJECT_SAMPLES
from reproduce.self_prediction.runs import Plan, _finetune_params, trained_model_name
from reproduce.stage import DATA, atomic_write_parquet


def object_distribution(samples: pd.DataFrame) -> pd.DataFrame:
    """The object-level temperature-1 distribution of every closed property, one row per model x item x
    property: ``model, task, item_id, property, options, n_samples, n_compliant, n_other, object_counts,
    object_probs, object_first``. Counts are over the compliant samples; ``n_other`` counts compliant values
    outside the options; ``object_probs`` is ``object_counts / n_compliant`` (empty when no sample complied);
    ``object_first`` the number of each option's first compliant sample (-1 for an option never sampled), which
    breaks ties between equally frequent values as the original's sort of its samples does (the value sampled
    first ranks first)."""
    closed = samples[[get_property(p).closed for p in samples["property"]]]
    rows = []
    for (model, task, item_id, p), g in closed.groupby(["model", "task", "item_id", "property"], sort=True):
        options = list(get_property(p).options)
        ok = g[g["compliant"].astype(bool)].sort_values("sample", kind="stable")
        values = ok["value"]
        counts = [int((values == o).sum()) for o in options]
        first = [int(ok.loc[values == o, "sample"].iloc[0]) if c else -1 for o, c in zip(options, counts)]
        n_compliant = len(values)
        rows.append({"model": model, "task": task, "item_id": item_id, "property": p, "options": options,
                     "n_samples": int(g["sample"].nunique()), "n_compliant": n_compliant,
                     "n_other": n_compliant - sum(counts), "object_counts": counts,
                     "object_probs": [c / n_compliant for c in counts] if n_compliant else [],
                     "object_first": first})
    return pd.DataFrame(rows)


def run_calibration(plan: Plan, samples_dir: Path = DATA / "object_samples",
                    trained_samples_dir: Path = DATA / "object_samples_trained",
                    meta_untrained: Path = DATA / "meta_untrained.parquet",
                    meta_trained: Path = DATA / "meta_trained.parquet", out: Path = DATA / "calibration.parquet") -> Path:
    """Experiment 2's table: on the calibration subset, the object-level T=1 distribution of every closed
    property next to the meta-level option distribution of each predictor about it. Untrained predictors
    are paired with the base target's samples; trained predictors (the full self- and cross-prediction runs of
    every seed; the scaling sweep is left out) with the samples of the self-trained target of their seed, the
    behaviour they are scored against in experiment 1.

    One row per condition x predictor x target x seed x item x property: ``condition (untrained|trained), run,
    seed, predictor, target, object_model, kind, task, split, family, item_id, property, options, n_samples,
    n_compliant, n_other, object_counts, object_probs, object_first, object_value, meta_value, meta_probs,
    p_outside``.
    ``meta_probs`` is the option distribution renormalised over the options and ``p_outside`` the mass the
    predictor put elsewhere. Open-set properties (words) have no option distribution and are not part of it."""
    untrained = read_stage_table(meta_untrained, "meta_untrained", META_UNTRAINED).assign(condition="untrained", run=None)
    trained = read_stage_table(meta_trained, "meta_trained", META_TRAINED)
    seeds = _finetune_params(plan).seeds
    samples = pd.concat(
        [read_stage_table(samples_dir / f"{r.name}.parquet", "object_level", OBJECT_SAMPLES) for r in plan.refs]
        + [read_stage_table(trained_samples_dir / f"{trained_model_name(r.name, s)}.parquet", "object_level_trained",
                            OBJECT_SAMPLES)
           for s in seeds for r in plan.refs], ignore_index=True)
    dist = object_distribution(samples).rename(columns={"model": "object_model"})
    if dist.empty:
        raise ConfigError("no temperature-1 samples of a closed property; raise sampling.items_per_task or "
                         "sampling.n_samples in params.yaml")
    # the full self- and cross-prediction runs (experiment 2 compares those two; the sibling is experiment 1's)
    trained = trained[~trained["scaling"].astype(bool) & (trained["ground_truth"] == "trained")
                      & (trained["kind"] != "sibling")].assign(condition="trained")
    meta = pd.concat([untrained, trained], ignore_index=True).drop(columns=["options"])
    table = meta.merge(dist, on=["object_model", "task", "item_id", "property"], how="inner", validate="many_to_one")
    table = table.rename(columns={"option_probs": "meta_probs"}).sort_values(
        ["condition", "target", "seed", "predictor", "task", "item_id", "property"],
        ascending=[False, True, True, True, True, True, True], kind="stable")
    cols = ["condition", "run", "seed", "predictor", "target", "object_model", "kind", "task", "split", "family",
            "item_id", "property", "options", "n_samples", "n_compliant", "n_other", "object_counts", "object_probs",
            "object_first", "object_value", "meta_value", "meta_probs", "p_outside"]
    table = table[cols].reset_index(drop=True)
    table["seed"] = table["seed"].astype("Int64")
    atomic_write_parquet(out, table, schema=CALIBRATION)
    return out

