"""What the model stages of experiments 1-3 share: the :class:`Plan` with the task datasets, the finetuning runs'
names and index, and reading the object-level tables. The kit every model stage shares is :mod:`reproduce.stage`.

The original study's protocol: M1 is self-trained on its own (base) behaviour, giving M1'. Self-training
changes M1's object-level behaviour, so M1' answers the object-level prompts again, and that behaviour is
the ground truth of experiment 1: the cross-predictor M2 is trained on M1''s train-task behaviour, and both
trained predictors are scored against M1''s test-task behaviour. Every run is repeated per finetuning seed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from reproduce.config import ConfigError
from reproduce.errors import MissingInput
import reproduce.dist as dist
from reproduce.hardware import resolve_base_dtype
from reproduce.io import atomic_dir, read_stage_table
from reproduce.lm.adapters import BaseModels
from reproduce.lm.models import pick_device
from reproduce.self_prediction.properties import get_property
from reproduce.self_prediction.schemas import OBJECT_LEVEL
from reproduce.self_prediction.task_data import TaskData, load_task, select_properties
from reproduce.stage import StagePlan


class Plan(StagePlan):
    """Everything a stage of experiments 1-3 needs, validated before any model is loaded: the settings, the
    task datasets of both splits with their properties, and the models."""

    def _validate_inputs(self) -> None:
        self.tasks: dict[str, TaskData] = {}
        self.properties: dict[str, list[str]] = {}
        for split in ("train", "test"):
            for name in getattr(self.profile.tasks, split):
                task = load_task(name, self.data_raw)
                if task.split != split:
                    raise ConfigError(f"task {name!r} is a {task.split} task but params lists it under tasks.{split}")
                self.tasks[name] = task
                self.properties[name] = select_properties(task, self.profile.properties)

    def items(self, task: TaskData) -> list[dict]:
        """The first ``items_per_task.<split>`` items (all of them for a smaller task)."""
        return task.items[:getattr(self.profile.items_per_task, task.split)]

    def test_tasks(self) -> list[TaskData]:
        return [t for t in self.tasks.values() if t.split == "test"]

    def has_workload(self) -> bool:
        return bool(self.tasks)

    def workloads(self, tokenizer, fmt) -> dict[str, dict]:
        from reproduce.self_prediction.workloads import workloads

        return workloads(self, tokenizer, fmt)


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


#: the sibling's training seed is its run's finetuning seed plus this: another LoRA initialisation and pair order
#: than the self-predictor's, which trained from the same base weights with the run's seed
SIBLING_SEED_OFFSET = 1000


def sibling_name(model: str) -> str:
    """The predictor name of ``model``'s sibling, e.g. ``smollm2-135m~sibling``: the rows, runs and tables that
    carry it name it so (the base weights are ``model``'s)."""
    return f"{model}~sibling"


@dataclass(frozen=True)
class TrainingRun:
    """One finetune: ``predictor`` (a base model) trained on the behaviour of ``target`` with finetuning seed
    ``seed``. Self runs (the same model) learn the base target's behaviour; cross runs (another model) and sibling
    runs (``sibling``: a second copy of the target's own base weights, trained from another training seed,
    :data:`SIBLING_SEED_OFFSET`) learn the self-trained target's (:func:`trained_model_name`), from the same
    pairs."""

    predictor: str
    target: str
    seed: int
    n_examples: int | None = None  # None: every pair (up to finetune.max_examples); an int: a scaling-sweep run
    sibling: bool = False

    def __post_init__(self) -> None:
        if self.sibling and (self.predictor != self.target or self.n_examples is not None):
            raise ValueError("a sibling run trains the target's own base weights on every pair")

    @property
    def kind(self) -> str:
        return "sibling" if self.sibling else "self" if self.predictor == self.target else "cross"

    @property
    def predictor_name(self) -> str:
        """The predictor as the rows name it: the base model, or its sibling (:func:`sibling_name`)."""
        return sibling_name(self.predictor) if self.sibling else self.predictor

    @property
    def train_seed(self) -> int:
        """The seed of the finetune itself (pair order, LoRA initialisation)."""
        return self.seed + SIBLING_SEED_OFFSET if self.sibling else self.seed

    @property
    def trained_on(self) -> str:
        """The exact behaviour the training pairs describe."""
        return self.target if self.kind == "self" else trained_model_name(self.target, self.seed)

    @property
    def name(self) -> str:
        size = "" if self.n_examples is None else f"__n{self.n_examples}"
        return f"{self.predictor_name}__on__{self.target}__s{self.seed}{size}"


def self_runs(plan: Plan) -> list[TrainingRun]:
    """One self-training run per model and finetuning seed."""
    return [TrainingRun(r.name, r.name, s) for s in _finetune_params(plan).seeds for r in plan.refs]


def cross_runs(plan: Plan, n_pairs: dict[tuple[str, int], int]) -> list[TrainingRun]:
    """Every other model trained on each self-trained target, per seed, and (``finetune.sibling``) the target's
    sibling; plus, for the first seed, the scaling sweep (the smaller sizes of ``finetune.scaling_sizes`` that are
    below the number of pairs)."""
    cfg = _finetune_params(plan)
    names = [r.name for r in plan.refs]
    runs = [TrainingRun(p, t, s) for s in cfg.seeds for t in names for p in names if p != t]
    if cfg.sibling:
        runs += [TrainingRun(t, t, s, sibling=True) for s in cfg.seeds for t in names]
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


