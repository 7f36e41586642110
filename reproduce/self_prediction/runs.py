"""What every model stage shares: the validated :class:`Plan`, loading, shard fingerprints, and the
finetuning runs' names and index.

The original study's protocol: M1 is self-trained on its own (base) behaviour, giving M1'. Self-training
changes M1's object-level behaviour, so M1' answers the object-level prompts again, and that behaviour is
the ground truth of experiment 1: the cross-predictor M2 is trained on M1''s train-task behaviour, and both
trained predictors are scored against M1''s test-task behaviour. Every run is repeated per finetuning seed.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from reproduce import __version__
from reproduce.config import REPO_ROOT, ConfigError, Profile, unrecorded
from reproduce.datasets import DATA_RAW, TaskData, load_task, select_properties
from reproduce.lm.engine import ENGINE_VERSION, Engine
from reproduce.errors import MissingInput
import reproduce.dist as dist
from reproduce.io import atomic_dir, read_stage_table
from reproduce.self_prediction.schemas import OBJECT_LEVEL
from reproduce.io import (atomic_write_bytes as _write_bytes, atomic_write_json as _write_json,
                  atomic_write_parquet as _write_parquet)
from reproduce.lm.adapters import BaseModels
from reproduce.hardware import resolve_base_dtype, usable_cpus
from reproduce.lm.models import ModelRef, load, pick_device, resolve
from reproduce.self_prediction.properties import get_property
from reproduce.versioning import chat_template_hash, code_version, runtime_versions

# stage outputs are written by the main process only (reproduce.dist); shards by every process
atomic_write_bytes, atomic_write_json, atomic_write_parquet = map(dist.main_only, (_write_bytes, _write_json,
                                                                                   _write_parquet))


DATA = REPO_ROOT / "data"


WORK = DATA / ".work"


class Plan:
    """Everything a stage needs, validated before any model is loaded."""

    def __init__(self, profile: Profile, data_raw: Path = DATA_RAW, tasks: bool = True):
        """``tasks=False``: no task datasets (the concept-injection and mirror stages, which use none of them,
        so their outputs do not depend on ``tasks``, ``properties`` or ``items_per_task``)."""
        self.profile, self.data_raw = profile, Path(data_raw)
        #: for a stage without task datasets, its bounds on its own sequences for the memory plan: kind ->
        #: (tokenizer, prompt format) -> workload (see :func:`reproduce.lm.memory_plan.workloads`)
        self.bounds: dict = {}
        self.tasks: dict[str, TaskData] = {}
        self.properties: dict[str, list[str]] = {}
        for split in ("train", "test") if tasks else ():
            for name in getattr(profile.tasks, split):
                task = load_task(name, data_raw)
                if task.split != split:
                    raise ConfigError(f"task {name!r} is a {task.split} task but params lists it under tasks.{split}")
                self.tasks[name] = task
                self.properties[name] = select_properties(task, profile.properties)
        # models last: resolving an embedded model may assemble its weights file
        self.refs: list[ModelRef] = [resolve(m) for m in profile.models]
        names = [r.name for r in self.refs]
        if len(set(names)) != len(names):
            raise ConfigError(f"two models resolve to the same name {names}; give them aliases (alias=spec)")

    def items(self, task: TaskData) -> list[dict]:
        """The first ``items_per_task.<split>`` items (all of them for a smaller task)."""
        return task.items[:getattr(self.profile.items_per_task, task.split)]

    def test_tasks(self) -> list[TaskData]:
        return [t for t in self.tasks.values() if t.split == "test"]


def _setup(plan: "Plan") -> None:
    """Before a model stage loads anything: the process group and threads, and on a GPU the memory plan, so
    that a model that cannot fit stops the stage in seconds with the fix, not minutes later out of memory."""
    _setup_torch(plan.profile)
    if pick_device(plan.profile.device).type == "cuda":
        from reproduce.lm.memory_plan import fits_device

        with unrecorded():  # the memory plan reads every stage's settings; it warns and changes no output
            warnings = fits_device(plan)
        for warning in warnings:
            print(f"warning: tight memory: {warning}", file=sys.stderr)


def _setup_torch(profile: Profile) -> None:
    if profile.device_map and dist.distributed():
        raise ConfigError("device_map: auto spreads one model over every GPU, which several processes cannot "
                          "share; run the stage as one process, or drop device_map to run one copy per GPU")
    dist.setup(profile.device)  # the process group, before any model is placed
    torch.set_num_threads(profile.threads or max(1, usable_cpus() // dist.world_size()))


def _engine(profile: Profile, lm) -> Engine:
    c = lm.dtype_choice
    if c is not None:
        print(f"{lm.name}: {lm.dtype_name} on {lm.device.type} (dtype {c.requested}: {c.reason})", file=sys.stderr)
    return Engine(lm, batch_size=profile.batch_size)


def _load(profile: Profile, ref: ModelRef):
    lm = load(ref, dtype=profile.dtype, device=profile.device, system_prompt=profile.system_prompt,
              device_map=profile.device_map, max_memory=profile.max_memory)
    return lm, _engine(profile, lm)


def _fingerprint(stage: str, profile: Profile, lm, uses: Sequence[str], **extra) -> dict:
    """What determines a shard's rows. The dtype is the resolved one (``auto`` may pick either). ``code`` hashes
    the source of the modules that compute the rows: the engine, model loading and prompt rendering, which every
    stage runs, and ``uses``, the stage's own modules (the one that builds the rows from the engine's answers,
    and any it reads answer options from, steers or corrupts with), so editing any of them starts fresh shards
    and editing a module a stage does not use (the properties, for concept injection) keeps them. The prompts
    themselves come from the datasets, which the stages key by their release hash. The chat template
    is hashed because a tokenizer update can change the rendered prompts without any change to the code or the
    weights, which are keyed by content (``weights``)."""
    if not uses or isinstance(uses, str):
        raise ValueError("_fingerprint needs the stage's own modules in uses, as a sequence of module names")
    return {
        "stage": stage, "package": __version__, "engine": ENGINE_VERSION, "model": lm.ref.spec,
        "weights": lm.ref.fingerprint,
        "dtype": lm.dtype_name, "device": lm.device.type, "batch_size": profile.batch_size,
        "format": lm.format.kind, "system_prompt": profile.system_prompt,
        "chat_template": chat_template_hash(lm),
        "code": code_version("reproduce.lm.engine", "reproduce.lm.split_cache", "reproduce.lm.models", "reproduce.lm.formats",
                             *uses),
        "runtime": runtime_versions(), **({"device_map": profile.device_map} if profile.device_map else {}), **extra,
    }


def _expand_properties(df: pd.DataFrame, task: TaskData, props: list[str], items_by_id: dict) -> pd.DataFrame:
    """One row per response x property, with the property value and compliance."""
    frames = []
    for p in props:
        prop = get_property(p)
        values = [prop.extract(r, items_by_id[i]) for r, i in zip(df["response"], df["item_id"])]
        frames.append(df.assign(property=p, value=values, compliant=[v is not None for v in values]))
    return pd.concat(frames, ignore_index=True)


def _objects(plan: Plan, object_dir: Path) -> dict[str, pd.DataFrame]:
    """Every model's object-level table."""
    return {ref.name: read_stage_table(object_dir / f"{ref.name}.parquet", "object_level", OBJECT_LEVEL) for ref in plan.refs}


def trained_model_name(target: str, seed: int) -> str:
    """The name of ``target``'s self-trained version of finetuning seed ``seed`` (M1'), e.g.
    ``smollm2-135m+self-s0``: the ``object_model`` of every row scored against it."""
    return f"{target}+self-s{seed}"


@dataclass(frozen=True)
class TrainingRun:
    """One finetune: ``predictor`` trained on the behaviour of ``target`` (self when they are the same model)
    with finetuning seed ``seed``. Self runs learn the base target's behaviour, cross runs the self-trained
    target's (:func:`trained_model_name`)."""

    predictor: str
    target: str
    seed: int
    n_examples: int | None = None  # None: every pair (up to finetune.max_examples); an int: a scaling-sweep run

    @property
    def kind(self) -> str:
        return "self" if self.predictor == self.target else "cross"

    @property
    def trained_on(self) -> str:
        """The exact behaviour the training pairs describe."""
        return self.target if self.kind == "self" else trained_model_name(self.target, self.seed)

    @property
    def name(self) -> str:
        size = "" if self.n_examples is None else f"__n{self.n_examples}"
        return f"{self.predictor}__on__{self.target}__s{self.seed}{size}"


def self_runs(plan: Plan) -> list[TrainingRun]:
    """One self-training run per model and finetuning seed."""
    return [TrainingRun(r.name, r.name, s) for s in _finetune_params(plan).seeds for r in plan.refs]


def cross_runs(plan: Plan, n_pairs: dict[tuple[str, int], int]) -> list[TrainingRun]:
    """Every other model trained on each self-trained target, per seed; plus, for the first seed, the
    scaling sweep (the smaller sizes of ``finetune.scaling_sizes`` that are below the number of pairs)."""
    cfg = _finetune_params(plan)
    names = [r.name for r in plan.refs]
    runs = [TrainingRun(p, t, s) for s in cfg.seeds for t in names for p in names if p != t]
    for t in names:
        for size in cfg.scaling_sizes:
            if size < n_pairs[(t, cfg.seeds[0])]:
                runs += [TrainingRun(p, t, cfg.seeds[0], size) for p in names if p != t]
    return runs


def _finetune_params(plan: Plan):
    if plan.profile.finetune is None:
        raise ConfigError("params.yaml has no `finetune:` section; add one (see profiles/smoke.yaml)")
    return plan.profile.finetune


def _mapped(plan: Plan) -> tuple:
    """The profile's ``device_map`` and ``max_memory``, for loading a model to run inference on."""
    return plan.profile.device_map, plan.profile.max_memory


def _bases(plan: Plan) -> BaseModels:
    return BaseModels(plan.profile.device, plan.profile.system_prompt)


def _training_dtype(plan: Plan) -> str:
    """The dtype of the frozen base weights while training (``finetune.base_dtype`` resolved on the device)."""
    return resolve_base_dtype(_finetune_params(plan).base_dtype, pick_device(plan.profile.device))


def _grouped(runs: list, predictor, bases: BaseModels | None = None) -> Iterable[int]:
    """The indices of ``runs`` grouped by predictor (groups in order of first appearance, runs in order within
    a group), so that each base model is loaded once; with ``bases``, a predictor's base is dropped when its
    last run is done, so at most one base per dtype is held at a time."""
    groups: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault(predictor(run), []).append(i)
    for name, indices in groups.items():
        yield from indices
        if bases is not None:
            bases.drop(name)


def _runs(trained: Path, stage: str = "finetune_self") -> list[dict]:
    index_path = trained / "runs.json"
    if not index_path.exists():
        raise MissingInput(f"{index_path} is missing; run the {stage} stage first (`dvc repro {stage}`)")
    return json.loads(index_path.read_text())


def _self_run(index: list[dict], trained_self: Path, model: str, seed: int) -> dict:
    """The self-trained run of ``model`` and ``seed`` in ``index`` (``trained_self``'s runs.json)."""
    for r in index:
        if r["predictor"] == model and r["kind"] == "self" and r["seed"] == seed:
            return r
    raise MissingInput(f"no self-trained run of {model!r} with seed {seed} in {trained_self / 'runs.json'}; "
                            "re-run the finetune_self stage with the same params")


def _trained_objects(plan: Plan, object_dir: Path) -> dict[tuple[str, int], pd.DataFrame]:
    """Every self-trained model's object-level table, keyed by (target, seed)."""
    return {(ref.name, seed): read_stage_table(object_dir / f"{trained_model_name(ref.name, seed)}.parquet",
                                          "object_level_trained", OBJECT_LEVEL)
            for seed in _finetune_params(plan).seeds for ref in plan.refs}

def _publish(trained: Path, dest: Path) -> None:
    """Copy a finished run (adapter, log, summary) into the stage output, atomically, on the main process;
    every process waits until it is there."""
    if dist.is_main():
        with atomic_dir(dest) as tmp:
            shutil.copytree(trained, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".checkpoint", ".adapter.*"))
    dist.barrier()


