"""The ``finetune_self`` and ``finetune_cross`` stages (experiment 1): LoRA self- and cross-prediction
runs, and the scaling sweep."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from reproduce.lm.finetune import pairs_hash
from reproduce.self_prediction.schemas import TRAINING_EXAMPLES
from reproduce.self_prediction.runs import (_bases, cross_runs, _finetune_params, _grouped, _objects, Plan, _publish,
                                            self_runs, trained_model_name, _trained_objects, _training_dtype,
                                            TrainingRun)
from reproduce.stage import (DATA, WORK, setup_stage, atomic_write_bytes, atomic_write_json, atomic_write_parquet)


def _pairs_asked(objects: pd.DataFrame, target: str, cfg) -> int | None:
    """How many training pairs the settings ask for from ``target``'s train-task table: max_examples, or
    examples_per_cell times its task x property cells, whichever is smaller (None: every compliant pair)."""
    cells = objects[(objects["model"] == target) & (objects["split"] == "train")].groupby(["task", "property"]).ngroups
    by_cell = cfg.examples_per_cell * cells if cfg.examples_per_cell else None
    asked = [n for n in (cfg.max_examples, by_cell) if n]
    return min(asked) if asked else None


def _train(plan: Plan, runs: list[TrainingRun], examples: dict[tuple[str, int], pd.DataFrame], out: Path,
           curves: Path, work: Path) -> list[dict]:
    """Train ``runs`` (each on ``examples[(target, seed)]``, its first ``n_examples`` for a sweep run) and
    publish them under ``out``; returns the index written to ``out/runs.json``."""
    from reproduce.lm.finetune import finetune

    cfg = _finetune_params(plan)
    refs = {r.name: r for r in plan.refs}
    dtype = _training_dtype(plan)
    entries: dict[int, dict] = {}
    with _bases(plan) as bases:
        for i in _grouped(runs, lambda r: r.predictor, bases):
            run = runs[i]
            ex = examples[(run.target, run.seed)]
            ex = ex if run.n_examples is None else ex.head(run.n_examples)
            lm = bases.get(refs[run.predictor], dtype)  # one base per predictor; finetune leaves it untouched
            trained = work / "finetune" / run.name
            summary = finetune(lm, ex, cfg, trained, seed=run.train_seed, progress=f"finetune {run.name}")
            _publish(trained, out / run.name)
            atomic_write_bytes(curves / f"{run.name}.tsv", (trained / "train_log.tsv").read_bytes())
            entries[i] = _index_entry(run, ex, summary)
    index = [entries[i] for i in range(len(runs))]
    atomic_write_json(out / "runs.json", index)
    return index


def _index_entry(run: "TrainingRun", ex: pd.DataFrame, summary: dict) -> dict:
    return {"run": run.name, "predictor": run.predictor_name, "base": run.predictor, "target": run.target,
            "kind": run.kind, "seed": run.seed, "train_seed": run.train_seed, "trained_on": run.trained_on,
            "n_examples": len(ex), "pairs": pairs_hash(ex),  # equal for a target's cross-predictors and sibling
            "scaling": run.n_examples is not None, "steps": summary["steps"],
            "first_loss": summary["first_loss"], "final_loss": summary["final_loss"],
            "mixed_precision": summary["mixed_precision"], "base_dtype": summary["base_dtype"],
            "gradient_checkpointing": summary["gradient_checkpointing"], "fingerprint": summary["fingerprint"]}


def run_finetune_self(plan: Plan, object_dir: Path = DATA / "object_level", out: Path = DATA / "finetuned" / "self",
                      curves: Path = DATA / "training_curves" / "self", work: Path = WORK) -> list[dict]:
    """Self-train every model on its own base behaviour, once per finetuning seed: ``out/<run>/`` (adapter,
    train_log.tsv, summary.json), the training pairs in ``out/examples/<target>-s<seed>.parquet`` and an index
    ``out/runs.json``.

    Training happens under ``work/finetune/<run>`` (checkpoints, and finished runs reused by fingerprint), out of
    DVC's reach: DVC deletes a stage's outputs before re-running it, which would lose the checkpoints."""
    from reproduce.self_prediction.training_pairs import training_examples

    cfg = _finetune_params(plan)
    setup_stage(plan)
    objects = _objects(plan, object_dir)
    examples = {}
    for seed in cfg.seeds:
        for t in objects:
            examples[(t, seed)] = training_examples(objects[t], plan.tasks, t, seed, cfg.max_examples,
                                                    per_cell=cfg.examples_per_cell)
            atomic_write_parquet(out / "examples" / f"{t}-s{seed}.parquet", examples[(t, seed)], schema=TRAINING_EXAMPLES)
    return _train(plan, self_runs(plan), examples, out, curves, work)


def run_finetune_cross(plan: Plan, object_dir: Path = DATA / "object_level_trained",
                       out: Path = DATA / "finetuned" / "cross", curves: Path = DATA / "training_curves" / "cross",
                       work: Path = WORK) -> list[dict]:
    """Train every other model on each self-trained target's train-task behaviour (cross-prediction), per
    seed, the target's sibling on the same pairs (``finetune.sibling``), and the scaling sweep on the first seed;
    outputs as :func:`run_finetune_self`'s."""
    from reproduce.self_prediction.training_pairs import training_examples

    cfg = _finetune_params(plan)
    setup_stage(plan)
    objects = _trained_objects(plan, object_dir)
    examples = {}
    for (t, seed), obj in objects.items():
        name = trained_model_name(t, seed)
        examples[(t, seed)] = training_examples(obj, plan.tasks, name, seed, cfg.max_examples,
                                                per_cell=cfg.examples_per_cell)
        atomic_write_parquet(out / "examples" / f"{name}.parquet", examples[(t, seed)],
                             schema=TRAINING_EXAMPLES)
        asked = _pairs_asked(obj, name, cfg)
        if asked and len(examples[(t, seed)]) < asked:
            n = len(examples[(t, seed)])
            print(f"warning: {name} gave only {n} compliant training pairs of the {asked} that "
                  f"finetune.max_examples and finetune.examples_per_cell ask for: its full cross-prediction runs "
                  f"train on {n} (runs.json records every run's n_examples, and the report's methods state the self- and "
                  "cross-predictors' counts). Where the self-predictors trained on more, self against cross is "
                  "confounded with training-set size: raise items_per_task.train to even them.", file=sys.stderr)
    return _train(plan, cross_runs(plan, {k: len(v) for k, v in examples.items()}), examples, out, curves, work)

