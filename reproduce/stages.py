"""The DVC stages: ``datasets``, ``object_level``, ``meta_untrained``, ``finetune_self``,
``object_level_trained``, ``finetune_cross``, ``meta_trained``, ``calibration`` and ``behaviour_change``.

Experiment 1 follows the original study (Binder et al. 2024; felixbinder/introspection_self_prediction): each
model M1 is self-trained on its own base behaviour, giving M1' (once per finetuning seed); M1' answers the
object-level prompts again; the cross-predictor M2 is trained on M1''s train-task behaviour; both trained
predictors are scored against M1''s test-task behaviour. Every trained row is also scored against the base
model's behaviour, a labelled sensitivity variant (``ground_truth = base``).

Each stage validates everything it can (params, datasets, properties, model specs) before loading a model,
works in resumable shards (:mod:`reproduce.shards`) and writes its final tables atomically.

Output tables (parquet, one row per observation):

``data/object_level/<model>.parquet`` -- greedy (temperature 0) object-level behaviour, one row per
item x property: ``model, dtype, task, split, family, item_id, prompt_hash, response, response_raw, finish,
n_new_tokens, property, value, compliant``.

``data/object_samples/<model>.parquet`` -- temperature-1 samples on the calibration subset (the first
``sampling.items_per_task`` items of each test task), one row per item x sample x property:
``model, dtype, task, split, family, item_id, sample, response, property, value, compliant``.

``data/object_level_trained/<model>+self-s<seed>.parquet`` and ``data/object_samples_trained/...`` -- the
same for every self-trained model (``model`` is its name, :func:`trained_model_name`), plus ``base_model``
and ``seed``.

``data/meta_untrained.parquet`` -- every predictor's hypothetical (meta-level) answers on the test tasks,
before any training, joined with every target's object-level behaviour (self and cross), one row per
predictor x target x item x property: ``predictor, dtype, target, object_model, ground_truth, seed, kind
(self|cross), task, split, family, item_id, property, meta_prompt_hash, meta_response, meta_value,
meta_compliant, options, option_probs, p_outside, option_position, object_value, object_compliant,
p_object_value, correct``.
``object_model`` names the exact behaviour a row is scored against (here the untrained target, ``ground_truth
= base``; ``seed`` is missing). ``options``/``option_probs`` are empty for open-set properties (words);
``option_probs`` is renormalised over the options and ``p_outside`` is the mass outside them, both read at
the first generated token that carries content (``option_position``; an opening quote is skipped, so the
distribution describes the same token as the parsed ``meta_value``);
``p_object_value`` is the normalised probability the predictor gave the target's actual value (missing when
the value is outside the options or non-compliant).

``data/finetuned/self/runs.json`` and ``data/finetuned/cross/runs.json`` -- one entry per finetune: ``run,
predictor, target, kind, seed, trained_on`` (the behaviour its pairs describe), ``n_examples, scaling, steps,
first_loss, final_loss, mixed_precision`` (as resolved on the hardware), ``fingerprint``; each run's
``adapter/``, ``train_log.tsv`` (step, loss) and ``summary.json`` beside it, and the training pairs in
``examples/``.

``data/meta_trained.parquet`` -- like ``meta_untrained`` for every trained predictor about its own target,
twice: ``ground_truth = trained`` (scored against the self-trained target of the run's seed, ``object_model =
<target>+self-s<seed>``: the main result) and ``ground_truth = base`` (scored against the untrained target);
with ``seed, run, trained_on, n_examples, scaling, mixed_precision`` (``scaling`` marks the smaller
cross-prediction runs of the sweep). Every model-run table has a ``dtype`` column: the dtype inference ran
at, ``auto`` resolved.

``data/calibration.parquet`` (experiment 2) and ``data/behaviour_change.parquet`` (experiment 3): see
:func:`run_calibration` and :func:`run_behaviour_change`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from . import __version__
from .config import REPO_ROOT, ConfigError, Profile
from .datasets import DATA_RAW, TaskData, load_task, select_properties, write_task
from .engine import ENGINE_VERSION, Engine, derive_seed
from .errors import DataError, MissingInput
from . import dist
from .io import atomic_dir, read_stage_table, short_hash
from .io import atomic_write_bytes as _write_bytes, atomic_write_json as _write_json, atomic_write_parquet as _write_parquet
from .adapters import BaseModels, release_memory
from .hardware import resolve_base_dtype
from .models import ModelRef, load, pick_device, resolve
from .properties import get_property, is_correct
from .shards import ShardStore
from .tasks import DATASET_LICENCE, DATASET_SEED, GENERATOR_VERSION, MAX_NEW_TOKENS, TASKS, generate_items
from .versioning import chat_template_hash, code_version, runtime_versions

# stage outputs are written by the main process only (reproduce.dist); shards by every process
atomic_write_bytes, atomic_write_json, atomic_write_parquet = map(dist.main_only, (_write_bytes, _write_json,
                                                                                   _write_parquet))
DATA = REPO_ROOT / "data"
WORK = DATA / ".work"
META_MAX_NEW_TOKENS = {"closed": 6, "open": 10}


# ----------------------------------------------------------------------------------------- datasets
def run_datasets(root: Path = DATA_RAW, seed: int = DATASET_SEED) -> list[dict]:
    manifests = []
    for spec in tqdm(TASKS.values(), desc="datasets", unit="task"):
        items = generate_items(spec, seed)
        manifest = {
            "name": spec.name,
            "version": GENERATOR_VERSION,
            "split": spec.split,
            "family": spec.family,
            "description": spec.description,
            "properties": list(spec.fitting_properties()),
            "max_new_tokens": MAX_NEW_TOKENS[spec.family],
            "stance_question": spec.stance_question,
            "licence": DATASET_LICENCE,
            "generator": f"reproduce.tasks (looking-inward-local {__version__}), generator {GENERATOR_VERSION}",
            "seed": seed,
        }
        manifests.append(write_task(root, manifest, items))
    from .injection_data import write_injection_dataset
    from .mirror_data import write_mirror_dataset

    manifests.append(write_injection_dataset(root))
    manifests.append(write_mirror_dataset(root))
    return manifests


# ------------------------------------------------------------------------------------- preparation
class Plan:
    """Everything a stage needs, validated before any model is loaded."""

    def __init__(self, profile: Profile, data_raw: Path = DATA_RAW):
        self.profile, self.data_raw = profile, Path(data_raw)
        self.tasks: dict[str, TaskData] = {}
        self.properties: dict[str, list[str]] = {}
        for split in ("train", "test"):
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
        from .plan import fits_device

        for warning in fits_device(plan):
            print(f"warning: tight memory: {warning}", file=sys.stderr)


def _setup_torch(profile: Profile) -> None:
    if profile.device_map and dist.distributed():
        raise ConfigError("device_map: auto spreads one model over every GPU, which several processes cannot "
                          "share; run the stage as one process, or drop device_map to run one copy per GPU")
    dist.setup(profile.device)  # the process group, before any model is placed
    torch.set_num_threads(profile.threads or max(1, (os.cpu_count() or 1) // dist.world_size()))


def _engine(profile: Profile, lm) -> Engine:
    c = lm.dtype_choice
    if c is not None:
        print(f"{lm.name}: {lm.dtype_name} on {lm.device.type} (dtype {c.requested}: {c.reason})", file=sys.stderr)
    return Engine(lm, batch_size=profile.batch_size)


def _load(profile: Profile, ref: ModelRef):
    lm = load(ref, dtype=profile.dtype, device=profile.device, system_prompt=profile.system_prompt,
              device_map=profile.device_map, max_memory=profile.max_memory)
    return lm, _engine(profile, lm)


def _fingerprint(stage: str, profile: Profile, lm, **extra) -> dict:
    """What determines a shard's rows. The dtype is the resolved one (``auto`` may pick either); ``code`` hashes
    the source of the modules that compute the rows, so editing any of them starts fresh shards; the chat
    template is hashed because a tokenizer update can change the rendered prompts without any code change."""
    return {
        "stage": stage, "package": __version__, "engine": ENGINE_VERSION, "model": lm.ref.spec, "weights": lm.ref.fingerprint,
        "dtype": lm.dtype_name, "device": lm.device.type, "batch_size": profile.batch_size,
        "format": lm.format.kind, "system_prompt": profile.system_prompt,
        "chat_template": chat_template_hash(lm),
        "code": code_version("reproduce.engine", "reproduce.models", "reproduce.properties", "reproduce.tasks"),
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


# ------------------------------------------------------------------------------------ object level
OBJECT_COLUMNS = ["model", "dtype", "task", "split", "family", "item_id", "prompt_hash", "response", "response_raw",
                  "finish", "n_new_tokens", "property", "value", "compliant"]
SAMPLE_COLUMNS = ["model", "dtype", "task", "split", "family", "item_id", "sample", "response", "property", "value",
                  "compliant"]


def object_behaviour(plan: Plan, lm, engine: Engine, task: TaskData, items: list[dict], stage: str,
                     work: Path = WORK) -> pd.DataFrame:
    """``lm``'s greedy object-level answers on ``items`` of ``task``, one row per item x property
    (:data:`OBJECT_COLUMNS`), in resumable shards under ``work/stage/<model>``."""
    by_id = {it["item_id"]: it for it in items}
    max_new = int(task.manifest["max_new_tokens"])
    store = ShardStore(work / stage / lm.name, _fingerprint(
        stage, plan.profile, lm, task=task.name, task_sha256=task.manifest["sha256"], max_new_tokens=max_new))

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
    store = ShardStore(work / "object_samples" / lm.name, _fingerprint(
        "object_samples", profile, lm, task=task.name, task_sha256=task.manifest["sha256"],
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
    atomic_write_parquet(path, pd.concat(greedy_frames, ignore_index=True).assign(**extra))
    samples = (pd.concat(sample_frames, ignore_index=True) if sample_frames
               else pd.DataFrame(columns=SAMPLE_COLUMNS))
    atomic_write_parquet(samples_dir / f"{lm.name}.parquet", samples.assign(**extra))
    return path


def run_object_level(plan: Plan, out_dir: Path = DATA / "object_level", samples_dir: Path = DATA / "object_samples",
                     work: Path = WORK) -> dict[str, Path]:
    _setup(plan)
    written = {}
    for ref in plan.refs:
        lm, engine = _load(plan.profile, ref)
        written[ref.name] = _write_object_tables(plan, lm, engine, "object_level", out_dir, samples_dir, work)
        del lm, engine
        release_memory()
    return written


# -------------------------------------------------------------------------------------- meta level
def meta_predictions(plan: Plan, lm, engine: Engine, stage: str, work: Path = WORK,
                     tasks: list[TaskData] | None = None, n_items: int | None = None) -> pd.DataFrame:
    """A predictor's hypothetical answers on every item x property of the test tasks (or of ``tasks``, first
    ``n_items`` items); target-independent."""
    profile = plan.profile
    frames = []
    for task in plan.test_tasks() if tasks is None else tasks:
        items = plan.items(task)[:n_items]
        props = plan.properties[task.name]
        limits = {p: META_MAX_NEW_TOKENS["closed" if get_property(p).closed else "open"] for p in props}
        store = ShardStore(work / stage / lm.name, _fingerprint(
            stage, profile, lm, task=task.name, task_sha256=task.manifest["sha256"], properties=props,
            max_new_tokens=limits))

        # one call for every property of a chunk's items: an item's hypothetical prompts differ only in their
        # last sentence, so the engine computes the part they share once
        def compute(k: int, chunk: list[dict]) -> pd.DataFrame:
            pairs = [(it, p) for it in chunk for p in props]
            prompts = [it["hypothetical_prompts"][p] for it, p in pairs]
            gens = engine.generate(prompts, [limits[p] for _, p in pairs],
                                   options=[get_property(p).options for _, p in pairs],
                                   progress=f"{lm.name} meta {task.name} [{k + 1}]")
            return pd.DataFrame({
                "item_id": [it["item_id"] for it, _ in pairs],
                "property": [p for _, p in pairs],
                "meta_prompt_hash": [short_hash(x) for x in prompts],
                "meta_response": [g[0].response for g in gens],
                "option_probs": [list(g[0].option_probs) if g[0].option_probs else [] for g in gens],
                "p_outside": [g[0].p_outside for g in gens],
                # where the option mass was read: the first generated token that carries content (-1: none did)
                "option_position": [g[0].option_position for g in gens],
            })

        df = store.map(task.name, items, compute)
        values = [get_property(p).parse_meta(r) for p, r in zip(df["property"], df["meta_response"])]
        frames.append(df.assign(
            predictor=lm.name, dtype=lm.dtype_name, task=task.name, split=task.split, family=task.family,
            meta_value=values, meta_compliant=[v is not None for v in values],
            options=[list(get_property(p).options or []) for p in df["property"]],
        ))
    return pd.concat(frames, ignore_index=True)


def join_targets(meta: pd.DataFrame, objects: dict[str, pd.DataFrame], ground_truth: str = "base",
                 object_models: dict[str, str] | None = None, seed: int | None = None) -> pd.DataFrame:
    """Pair one predictor's meta answers with each target's object-level values.

    ``objects`` maps a target (a base model's name) to the object-level table the answers are scored against;
    ``object_models`` names that behaviour exactly (default: the target itself, i.e. the untrained model) and
    ``ground_truth`` labels it: ``base`` (the untrained target) or ``trained`` (the self-trained target);
    ``seed`` is the finetuning seed of a trained predictor (missing before training)."""
    frames = []
    for target, obj in objects.items():
        o = obj[["task", "item_id", "property", "value", "compliant"]].rename(
            columns={"value": "object_value", "compliant": "object_compliant"})
        j = meta.merge(o, on=["task", "item_id", "property"], how="left", validate="one_to_one")
        if j["object_compliant"].isna().any():
            missing = j.loc[j["object_compliant"].isna(), ["task", "item_id"]].drop_duplicates()
            raise DataError(f"object level of {target!r} lacks {len(missing)} items the meta level asked about; "
                            "re-run the object_level stage with the same params")
        j["target"] = target
        j["object_model"] = (object_models or {}).get(target, target)
        j["ground_truth"] = ground_truth
        j["seed"] = pd.array([seed] * len(j), dtype="Int64")
        j["kind"] = ["self" if p == target else "cross" for p in j["predictor"]]
        j["p_object_value"] = _prob_of(j["option_probs"], j["options"], j["object_value"])
        j["correct"] = is_correct(j)
        frames.append(j)
    cols = ["predictor", "dtype", "target", "object_model", "ground_truth", "seed", "kind", "task", "split", "family", "item_id",
            "property", "meta_prompt_hash",
            "meta_response", "meta_value", "meta_compliant", "options", "option_probs", "p_outside", "option_position",
            "object_value", "object_compliant", "p_object_value", "correct"]
    return pd.concat(frames, ignore_index=True)[cols]


def _prob_of(probs: Iterable, options: Iterable, values: Iterable) -> list[float | None]:
    """The normalised probability each option distribution gives a value (None when the value is missing or
    outside the options)."""
    return [p[list(o).index(v)] if len(o) and v is not None and v in list(o) else None
            for p, o, v in zip(probs, options, values)]


def _objects(plan: Plan, object_dir: Path) -> dict[str, pd.DataFrame]:
    """Every model's object-level table."""
    return {ref.name: read_stage_table(object_dir / f"{ref.name}.parquet", "object_level") for ref in plan.refs}


def run_meta_untrained(plan: Plan, object_dir: Path = DATA / "object_level",
                       out: Path = DATA / "meta_untrained.parquet", work: Path = WORK) -> Path:
    _setup(plan)
    objects = _objects(plan, object_dir)
    frames = []
    for ref in plan.refs:
        lm, engine = _load(plan.profile, ref)
        frames.append(join_targets(meta_predictions(plan, lm, engine, "meta_untrained", work), objects))
        del lm, engine
    atomic_write_parquet(out, pd.concat(frames, ignore_index=True))
    return out


# ----------------------------------------------------------------------------------- finetuning (exp. 1)
# The original study's protocol: M1 is self-trained on its own (base) behaviour, giving M1'. Self-training
# changes M1's object-level behaviour, so M1' answers the object-level prompts again, and that behaviour is
# the ground truth of experiment 1: the cross-predictor M2 is trained on M1''s train-task behaviour, and both
# trained predictors are scored against M1''s test-task behaviour. Every run is repeated per finetuning seed.
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
        raise ConfigError("the active profile has no `finetune:` section in params.yaml; add one (see the smoke profile)")
    return plan.profile.finetune


def _train(plan: Plan, runs: list[TrainingRun], examples: dict[tuple[str, int], pd.DataFrame], out: Path,
           curves: Path, work: Path) -> list[dict]:
    """Train ``runs`` (each on ``examples[(target, seed)]``, its first ``n_examples`` for a sweep run) and
    publish them under ``out``; returns the index written to ``out/runs.json``."""
    from .finetune import finetune

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
            summary = finetune(lm, ex, cfg, trained, seed=run.seed, progress=f"finetune {run.name}")
            _publish(trained, out / run.name)
            atomic_write_bytes(curves / f"{run.name}.tsv", (trained / "train_log.tsv").read_bytes())
            entries[i] = _index_entry(run, ex, summary)
    index = [entries[i] for i in range(len(runs))]
    atomic_write_json(out / "runs.json", index)
    return index


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


def _index_entry(run: "TrainingRun", ex: pd.DataFrame, summary: dict) -> dict:
    return {"run": run.name, "predictor": run.predictor, "target": run.target, "kind": run.kind,
            "seed": run.seed, "trained_on": run.trained_on, "n_examples": len(ex),
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
    from .finetune import training_examples

    cfg = _finetune_params(plan)
    _setup(plan)
    objects = _objects(plan, object_dir)
    examples = {}
    for seed in cfg.seeds:
        for t in objects:
            examples[(t, seed)] = training_examples(objects[t], plan.tasks, t, seed, cfg.max_examples)
            atomic_write_parquet(out / "examples" / f"{t}-s{seed}.parquet", examples[(t, seed)])
    return _train(plan, self_runs(plan), examples, out, curves, work)


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


def run_object_level_trained(plan: Plan, trained_self: Path = DATA / "finetuned" / "self",
                             out_dir: Path = DATA / "object_level_trained",
                             samples_dir: Path = DATA / "object_samples_trained", work: Path = WORK) -> dict[str, Path]:
    """Every self-trained model (M1', one per seed) answers the object-level prompts again, as the base models
    did in ``object_level``: greedy on the train and test items, T=1 samples on the calibration subset. Tables
    as ``object_level``'s, named and with ``model`` set to :func:`trained_model_name`, plus ``base_model`` and
    ``seed``."""
    _finetune_params(plan)
    _setup(plan)
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
                written[name] = _write_object_tables(plan, lm, _engine(plan.profile, lm), "object_level_trained",
                                                     out_dir, samples_dir, work, base_model=run.target, seed=run.seed)
    return written


def _trained_objects(plan: Plan, object_dir: Path) -> dict[tuple[str, int], pd.DataFrame]:
    """Every self-trained model's object-level table, keyed by (target, seed)."""
    return {(ref.name, seed): read_stage_table(object_dir / f"{trained_model_name(ref.name, seed)}.parquet",
                                          "object_level_trained")
            for seed in _finetune_params(plan).seeds for ref in plan.refs}


def run_finetune_cross(plan: Plan, object_dir: Path = DATA / "object_level_trained",
                       out: Path = DATA / "finetuned" / "cross", curves: Path = DATA / "training_curves" / "cross",
                       work: Path = WORK) -> list[dict]:
    """Train every other model on each self-trained target's train-task behaviour (cross-prediction), per
    seed, and the scaling sweep on the first seed; outputs as :func:`run_finetune_self`'s."""
    from .finetune import training_examples

    cfg = _finetune_params(plan)
    _setup(plan)
    objects = _trained_objects(plan, object_dir)
    examples = {}
    for (t, seed), obj in objects.items():
        name = trained_model_name(t, seed)
        examples[(t, seed)] = training_examples(obj, plan.tasks, name, seed, cfg.max_examples)
        atomic_write_parquet(out / "examples" / f"{name}.parquet", examples[(t, seed)])
        if cfg.max_examples and len(examples[(t, seed)]) < cfg.max_examples:
            print(f"warning: {name} gave only {len(examples[(t, seed)])} compliant training pairs (finetune."
                  f"max_examples is {cfg.max_examples}): its cross-predictors train on fewer pairs than the "
                  "self-predictor did; runs.json records n_examples. Raise items_per_task.train to even them.",
                  file=sys.stderr)
    return _train(plan, cross_runs(plan, {k: len(v) for k, v in examples.items()}), examples, out, curves, work)


def _publish(trained: Path, dest: Path) -> None:
    """Copy a finished run (adapter, log, summary) into the stage output, atomically, on the main process;
    every process waits until it is there."""
    if dist.is_main():
        with atomic_dir(dest) as tmp:
            shutil.copytree(trained, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".checkpoint", ".adapter.*"))
    dist.barrier()


def run_meta_trained(plan: Plan, object_dir: Path = DATA / "object_level",
                     trained_object_dir: Path = DATA / "object_level_trained",
                     trained_self: Path = DATA / "finetuned" / "self", trained_cross: Path = DATA / "finetuned" / "cross",
                     out: Path = DATA / "meta_trained.parquet", work: Path = WORK) -> Path:
    """Every trained predictor's hypothetical answers on the held-out test tasks, about its own target.

    Each run's answers are scored twice: against the self-trained target of the run's seed (``ground_truth =
    trained``, the original study's protocol and the main result) and against the untrained target
    (``ground_truth = base``, a sensitivity variant)."""
    _finetune_params(plan)
    _setup(plan)
    objects = _objects(plan, object_dir)
    trained_objects = _trained_objects(plan, trained_object_dir)
    refs = {r.name: r for r in plan.refs}
    runs = [(trained_self, r) for r in _runs(trained_self)] + \
           [(trained_cross, r) for r in _runs(trained_cross, "finetune_cross")]
    frames: dict[int, list[pd.DataFrame]] = {}
    with _bases(plan) as bases:
        for i in _grouped(runs, lambda r: r[1]["predictor"], bases):
            trained, run = runs[i]
            with bases.trained(refs[run["predictor"]], [trained / run["run"] / "adapter"], run["run"],
                               run["fingerprint"], plan.profile.dtype, *_mapped(plan)) as lm:
                meta = meta_predictions(plan, lm, _engine(plan.profile, lm), "meta_trained", work)
            meta = meta.assign(predictor=run["predictor"])
            t, seed = run["target"], run["seed"]
            frames[i] = [joined.assign(run=run["run"], trained_on=run["trained_on"], n_examples=run["n_examples"],
                                       scaling=run["scaling"], mixed_precision=run["mixed_precision"])
                         for joined in (join_targets(meta, {t: trained_objects[(t, seed)]}, "trained",
                                                     {t: trained_model_name(t, seed)}, seed),
                                        join_targets(meta, {t: objects[t]}, "base", seed=seed))]
    atomic_write_parquet(out, pd.concat([f for i in range(len(runs)) for f in frames[i]], ignore_index=True))
    return out


# ------------------------------------------------------------------------------------ calibration (exp. 2)
def object_distribution(samples: pd.DataFrame) -> pd.DataFrame:
    """The object-level temperature-1 distribution of every closed property, one row per model x item x
    property: ``model, task, item_id, property, options, n_samples, n_compliant, n_other, object_counts,
    object_probs``. Counts are over the compliant samples; ``n_other`` counts compliant values outside the
    options; ``object_probs`` is ``object_counts / n_compliant`` (empty when no sample complied)."""
    closed = samples[[get_property(p).closed for p in samples["property"]]]
    rows = []
    for (model, task, item_id, p), g in closed.groupby(["model", "task", "item_id", "property"], sort=True):
        options = list(get_property(p).options)
        values = g.loc[g["compliant"].astype(bool), "value"]
        counts = [int((values == o).sum()) for o in options]
        n_compliant = len(values)
        rows.append({"model": model, "task": task, "item_id": item_id, "property": p, "options": options,
                     "n_samples": int(g["sample"].nunique()), "n_compliant": n_compliant,
                     "n_other": n_compliant - sum(counts), "object_counts": counts,
                     "object_probs": [c / n_compliant for c in counts] if n_compliant else []})
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
    n_compliant, n_other, object_counts, object_probs, object_value, meta_value, meta_probs, p_outside``.
    ``meta_probs`` is the option distribution renormalised over the options and ``p_outside`` the mass the
    predictor put elsewhere. Open-set properties (words) have no option distribution and are not part of it."""
    untrained = read_stage_table(meta_untrained, "meta_untrained").assign(condition="untrained", run=None)
    trained = read_stage_table(meta_trained, "meta_trained")
    seeds = _finetune_params(plan).seeds
    samples = pd.concat(
        [read_stage_table(samples_dir / f"{r.name}.parquet", "object_level") for r in plan.refs]
        + [read_stage_table(trained_samples_dir / f"{trained_model_name(r.name, s)}.parquet", "object_level_trained")
           for s in seeds for r in plan.refs], ignore_index=True)
    dist = object_distribution(samples).rename(columns={"model": "object_model"})
    if dist.empty:
        raise ConfigError("no temperature-1 samples of a closed property; raise sampling.items_per_task or "
                         "sampling.n_samples in params.yaml")
    trained = trained[~trained["scaling"].astype(bool) & (trained["ground_truth"] == "trained")].assign(
        condition="trained")
    meta = pd.concat([untrained, trained], ignore_index=True).drop(columns=["options"])
    table = meta.merge(dist, on=["object_model", "task", "item_id", "property"], how="inner", validate="many_to_one")
    table = table.rename(columns={"option_probs": "meta_probs"}).sort_values(
        ["condition", "target", "seed", "predictor", "task", "item_id", "property"],
        ascending=[False, True, True, True, True, True, True], kind="stable")
    cols = ["condition", "run", "seed", "predictor", "target", "object_model", "kind", "task", "split", "family",
            "item_id", "property", "options", "n_samples", "n_compliant", "n_other", "object_counts", "object_probs",
            "object_value", "meta_value", "meta_probs", "p_outside"]
    table = table[cols].reset_index(drop=True)
    table["seed"] = table["seed"].astype("Int64")
    atomic_write_parquet(out, table)
    return out


# ------------------------------------------------------------------------------- behaviour change (exp. 3)
def behaviour_change_plan(plan: Plan) -> tuple:
    """The validated ``behaviour_change`` params, its tasks and the number of evaluated items per task;
    fails before any model is loaded."""
    bc = plan.profile.behaviour_change
    if bc is None:
        raise ConfigError("the active profile has no `behaviour_change:` section in params.yaml; add one "
                         "(see the smoke profile)")
    _finetune_params(plan)
    if len(plan.refs) < 2:
        raise ConfigError("behaviour change needs at least two models: each one is taught another one's answers")
    test = [t.name for t in plan.test_tasks()]
    n_eval = bc.eval_items or plan.profile.items_per_task.test
    tasks = []
    for name in bc.tasks or test:
        if name not in test:
            raise ConfigError(f"behaviour_change.tasks lists {name!r}, which is not one of the profile's test tasks "
                             f"{test}; the predictions before the change come from the meta_trained stage, which "
                             "covers the test tasks only")
        task = plan.tasks[name]
        if n_eval > len(plan.items(task)):
            raise ConfigError(f"behaviour_change.eval_items ({n_eval}) exceeds the {len(plan.items(task))} items of "
                             f"{name!r} that meta_trained evaluated (items_per_task.test); lower it")
        if len(task.items) < n_eval + bc.train_items:
            raise ConfigError(f"task {name!r} has {len(task.items)} items, fewer than the {n_eval} evaluated + "
                             f"behaviour_change.train_items ({bc.train_items}); lower behaviour_change.train_items")
        tasks.append(task)
    return bc, tasks, n_eval


def run_behaviour_change(plan: Plan, object_dir: Path = DATA / "object_level",
                         trained_object_dir: Path = DATA / "object_level_trained",
                         trained_self: Path = DATA / "finetuned" / "self",
                         meta_trained: Path = DATA / "meta_trained.parquet", out: Path = DATA / "behaviour_change.parquet",
                         adapters: Path = DATA / "behaviour_change", curves: Path = DATA / "behaviour_change_curves",
                         work: Path = WORK) -> Path:
    """Experiment 3, on the first finetuning seed. Each model's self-trained version M1' is finetuned further on
    the next model's object-level answers (``behaviour_change.train_items`` items per task, right after the
    ``eval_items`` evaluated ones), then answers the evaluated items again, at the object level and
    hypothetically.

    Writes ``out``: one row per model x evaluated item x property: ``model, source, run, seed, task, split,
    family, item_id, property, base_value`` (the untrained model's behaviour), ``source_value`` (the taught
    model's), ``old_response, old_value, old_compliant`` (M1', before the change: its ``object_level_trained``
    answers), ``new_response, new_value, new_compliant`` (after it), ``changed`` (both compliant and
    different), ``meta_old_value, meta_old_compliant`` (M1''s prediction, from meta_trained), ``meta_value,
    meta_compliant, options, option_probs, p_outside`` (the changed model's prediction), ``p_old, p_new`` (the
    probability it gives the old and the new behaviour) and ``matches_old, matches_new``.
    Beside it: ``adapters/<run>/`` (adapter, train_log.tsv, summary.json), the training pairs in
    ``adapters/examples/<model>.parquet`` and the loss curves in ``curves/``."""
    from .finetune import behaviour_examples, finetune

    bc, tasks, n_eval = behaviour_change_plan(plan)
    ft = _finetune_params(plan)
    seed = ft.seeds[0]
    cfg = ft.model_copy(update={"learning_rate": bc.learning_rate, "epochs": bc.epochs, "max_examples": None,
                                "scaling_sizes": []})
    _setup(plan)
    objects = _objects(plan, object_dir)
    trained_objects = _trained_objects(plan, trained_object_dir)
    index = _runs(trained_self)
    runs = {r.name: _self_run(index, trained_self, r.name, seed) for r in plan.refs}
    meta_old = read_stage_table(meta_trained, "meta_trained")
    meta_old = meta_old[meta_old["ground_truth"] == "trained"]

    sources = {}  # every model's answers on the training items: the behaviour another model is taught
    for ref in plan.refs:
        lm, engine = _load(plan.profile, ref)
        sources[ref.name] = pd.concat([object_behaviour(plan, lm, engine, t, t.items[n_eval:n_eval + bc.train_items],
                                                        "behaviour_source", work) for t in tasks], ignore_index=True)
        del lm, engine
        release_memory()

    evaluated = pd.DataFrame([(t.name, it["item_id"]) for t in tasks for it in t.items[:n_eval]],
                             columns=["task", "item_id"])
    frames = []
    for i, ref in enumerate(plan.refs):
        source = plan.refs[(i + 1) % len(plan.refs)].name
        self_run = runs[ref.name]
        self_adapter = trained_self / self_run["run"] / "adapter"
        name = f"{ref.name}__bc__{source}__s{seed}"
        examples = behaviour_examples(sources[source], tasks, seed)
        atomic_write_parquet(adapters / "examples" / f"{ref.name}.parquet", examples)

        with _bases(plan) as bases:  # one base per dtype, for training on M1' and for M1' changed
            with bases.trained(ref, [self_adapter], self_run["run"], self_run["fingerprint"],
                               _training_dtype(plan)) as lm:
                summary = finetune(lm, examples, cfg, work / "behaviour_change" / name, seed=seed,
                                   progress=f"behaviour change {name}")
            _publish(work / "behaviour_change" / name, adapters / name)
            atomic_write_bytes(curves / f"{name}.tsv", (adapters / name / "train_log.tsv").read_bytes())

            # before the change: M1''s own answers, computed once by object_level_trained
            old = trained_objects[(ref.name, seed)].merge(evaluated, on=["task", "item_id"], validate="many_to_one")
            with bases.trained(ref, [self_adapter, adapters / name / "adapter"], name,
                               f"{self_run['fingerprint']}:{summary['fingerprint']}", plan.profile.dtype,
                               *_mapped(plan)) as lm:
                engine = _engine(plan.profile, lm)
                new = pd.concat([object_behaviour(plan, lm, engine, t, t.items[:n_eval], "behaviour_eval", work)
                                 for t in tasks], ignore_index=True)
                meta_new = meta_predictions(plan, lm, engine, "meta_behaviour", work, tasks, n_eval)
                del engine
        frames.append(_behaviour_table(
            ref.name, source, name, objects[ref.name], objects[source], old, new,
            meta_old[meta_old["run"] == self_run["run"]], meta_new).assign(seed=seed))
    table = pd.concat(frames, ignore_index=True)
    table.insert(table.columns.get_loc("run") + 1, "seed", table.pop("seed"))
    atomic_write_parquet(out, table)
    return out


def _behaviour_table(model: str, source: str, run: str, base: pd.DataFrame, taught: pd.DataFrame, old: pd.DataFrame,
                     new: pd.DataFrame, meta_old: pd.DataFrame, meta_new: pd.DataFrame) -> pd.DataFrame:
    key = ["task", "item_id", "property"]

    def part(df, cols, prefix):
        return df[key + cols].rename(columns={c: f"{prefix}{c}" for c in cols})

    t = part(old, ["response", "value", "compliant"], "old_").assign(model=model, source=source, run=run)
    t = t.merge(old[key + ["split", "family"]], on=key, validate="one_to_one")
    t = t.merge(part(new, ["response", "value", "compliant"], "new_"), on=key, validate="one_to_one")
    t = t.merge(part(base, ["value"], "base_"), on=key, how="left", validate="one_to_one")
    t = t.merge(part(taught, ["value"], "source_"), on=key, how="left", validate="one_to_one")
    t = t.merge(meta_old[key + ["meta_value", "meta_compliant"]].rename(
        columns={"meta_value": "meta_old_value", "meta_compliant": "meta_old_compliant"}), on=key, how="left",
        validate="one_to_one")
    t = t.merge(meta_new[key + ["meta_value", "meta_compliant", "options", "option_probs", "p_outside"]], on=key,
                validate="one_to_one")
    if t["meta_old_compliant"].isna().any():
        raise DataError(f"meta_trained lacks predictions of {model}'s self-trained run on some evaluated items; "
                           "re-run the meta_trained stage with the same params")
    t["changed"] = t["old_compliant"] & t["new_compliant"] & (t["old_value"] != t["new_value"])
    t["p_old"] = _prob_of(t["option_probs"], t["options"], t["old_value"])
    t["p_new"] = _prob_of(t["option_probs"], t["options"], t["new_value"])
    t["matches_old"] = t["meta_compliant"] & t["old_compliant"] & (t["meta_value"] == t["old_value"])
    t["matches_new"] = t["meta_compliant"] & t["new_compliant"] & (t["meta_value"] == t["new_value"])
    cols = ["model", "source", "run", "task", "split", "family", "item_id", "property", "base_value", "source_value",
            "old_response", "old_value", "old_compliant", "new_response", "new_value", "new_compliant", "changed",
            "meta_old_value", "meta_old_compliant", "meta_value", "meta_compliant", "options", "option_probs",
            "p_outside", "p_old", "p_new", "matches_old", "matches_new"]
    return t[cols]
