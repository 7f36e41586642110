"""The ``object_level`` and ``object_level_trained`` stages: greedy object-level answers and T=1 samples
of the base and the self-trained models."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reproduce.self_prediction.task_data import TaskData
from reproduce.lm.engine import Engine, derive_seed
from reproduce.io import short_hash
from reproduce.lm.adapters import release_memory
from reproduce.shards import ShardStore
from reproduce.self_prediction.schemas import OBJECT_LEVEL, OBJECT_SAMPLES
from reproduce.self_prediction.runs import (_bases, _expand_properties, _finetune_params, _grouped, _mapped, Plan,
                                            _runs, _self_run, self_runs, trained_model_name)
from reproduce.stage import (DATA, WORK, make_engine, fingerprint, load_model, setup_stage, atomic_write_parquet)


OBJECT_COLUMNS = OBJECT_LEVEL.required
SAMPLE_COLUMNS = OBJECT_SAMPLES.required


def object_behaviour(plan: Plan, lm, engine: Engine, task: TaskData, items: list[dict], stage: str,
                     work: Path = WORK) -> pd.DataFrame:
    """``lm``'s greedy object-level answers on ``items`` of ``task``, one row per item x property
    (:data:`OBJECT_COLUMNS`), in resumable shards under ``work/stage/<model>``."""
    by_id = {it["item_id"]: it for it in items}
    max_new = int(task.manifest["max_new_tokens"])
    store = ShardStore(work / stage / lm.name, fingerprint(
        stage, plan.profile, lm, (__name__,), task=task.name, task_sha256=task.manifest["sha256"],
        max_new_tokens=max_new))

    def compute(k: int, chunk: list[dict]) -> pd.DataFrame:
        gens = engine.generate([it["object_prompt"] for it in chunk], max_new,
                               progress=f"{lm.name} object {task.name} [{k + 1}]")
        return pd.DataFrame({
            "item_id": [it["item_id"] for it in chunk],
            "prompt_hash": [short_hash(it["object_prompt"]) for it in chunk],
            "response": [g[0].response for g in gens],
            "response_raw": [g[0].raw for g in gens],
            "finish": [g[0].finish for g in gens],
            "n_new_tokens": [g[0].n_new_tokens for g in gens],
        })

    df = store.map(task.name, items, compute).assign(model=lm.name, dtype=lm.dtype_name, task=task.name,
                                                     split=task.split, family=task.family)
    return _expand_properties(df, task, plan.properties[task.name], by_id)[OBJECT_COLUMNS]


def object_samples(plan: Plan, lm, engine: Engine, task: TaskData, items: list[dict], work: Path = WORK) -> pd.DataFrame:
    """``lm``'s temperature-1 object-level samples on ``items`` of ``task`` (``sampling`` params), one row per
    item x sample x property, in resumable shards under ``work/object_samples/<model>``."""
    profile, s = plan.profile, plan.profile.sampling
    by_id = {it["item_id"]: it for it in items}
    max_new = int(task.manifest["max_new_tokens"])
    store = ShardStore(work / "object_samples" / lm.name, fingerprint(
        "object_samples", profile, lm, (__name__,), task=task.name, task_sha256=task.manifest["sha256"],
        max_new_tokens=max_new, n_samples=s.n_samples, temperature=s.temperature, seed=profile.seed))

    def compute(k: int, chunk: list[dict]) -> pd.DataFrame:
        # each prompt's samples are seeded by (seed, prompt, sample index): independent of the chunking
        gens = engine.generate([it["object_prompt"] for it in chunk], max_new, n=s.n_samples,
                               temperature=s.temperature, seed=derive_seed(profile.seed, "object_samples"),
                               progress=f"{lm.name} samples {task.name} [{k + 1}]")
        return pd.DataFrame({
            "item_id": [it["item_id"] for it, g in zip(chunk, gens) for _ in g],
            "sample": [j for g in gens for j in range(len(g))],
            "response": [x.response for g in gens for x in g],
        })

    df = store.map(task.name, items, compute).assign(model=lm.name, dtype=lm.dtype_name, task=task.name,
                                                     split=task.split, family=task.family)
    return _expand_properties(df, task, plan.properties[task.name], by_id)[SAMPLE_COLUMNS]


def _write_object_tables(plan: Plan, lm, engine: Engine, stage: str, out_dir: Path, samples_dir: Path, work: Path,
                         **extra) -> Path:
    """``lm``'s greedy answers on every task's items and its T=1 samples on the calibration subset, written to
    ``out_dir/<lm.name>.parquet`` and ``samples_dir/<lm.name>.parquet`` (``extra`` columns added to both)."""
    greedy_frames, sample_frames = [], []
    for task in plan.tasks.values():
        items = plan.items(task)
        greedy_frames.append(object_behaviour(plan, lm, engine, task, items, stage, work))
        n_cal = min(plan.profile.sampling.items_per_task, len(items)) if task.split == "test" else 0
        if n_cal:
            sample_frames.append(object_samples(plan, lm, engine, task, items[:n_cal], work))
    path = out_dir / f"{lm.name}.parquet"
    atomic_write_parquet(path, pd.concat(greedy_frames, ignore_index=True).assign(**extra), schema=OBJECT_LEVEL)
    samples = (pd.concat(sample_frames, ignore_index=True) if sample_frames
               else pd.DataFrame(columns=SAMPLE_COLUMNS))
    atomic_write_parquet(samples_dir / f"{lm.name}.parquet", samples.assign(**extra), schema=OBJECT_SAMPLES)
    return path


def run_object_level(plan: Plan, out_dir: Path = DATA / "object_level", samples_dir: Path = DATA / "object_samples",
                     work: Path = WORK) -> dict[str, Path]:
    setup_stage(plan)
    written = {}
    for ref in plan.refs:
        lm, engine = load_model(plan.profile, ref)
        written[ref.name] = _write_object_tables(plan, lm, engine, "object_level", out_dir, samples_dir, work)
        del lm, engine
        release_memory()
    return written


def run_object_level_trained(plan: Plan, trained_self: Path = DATA / "finetuned" / "self",
                             out_dir: Path = DATA / "object_level_trained",
                             samples_dir: Path = DATA / "object_samples_trained", work: Path = WORK) -> dict[str, Path]:
    """Every self-trained model (M1', one per seed) answers the object-level prompts again, as the base models
    did in ``object_level``: greedy on the train and test items, T=1 samples on the calibration subset. Tables
    as ``object_level``'s, named and with ``model`` set to :func:`trained_model_name`, plus ``base_model`` and
    ``seed``."""
    _finetune_params(plan)
    setup_stage(plan)
    refs = {r.name: r for r in plan.refs}
    index = _runs(trained_self)
    runs = self_runs(plan)
    written = {}
    with _bases(plan) as bases:
        for i in _grouped(runs, lambda r: r.predictor, bases):
            run = runs[i]
            r = _self_run(index, trained_self, run.predictor, run.seed)
            name = trained_model_name(run.target, run.seed)
            with bases.trained(refs[run.predictor], [trained_self / r["run"] / "adapter"], name, r["fingerprint"],
                               plan.profile.dtype, *_mapped(plan)) as lm:
                written[name] = _write_object_tables(plan, lm, make_engine(plan.profile, lm), "object_level_trained",
                                                     out_dir, samples_dir, work, base_model=run.target, seed=run.seed)
    return written

