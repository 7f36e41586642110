"""The DVC stages of the foundation: ``datasets``, ``object_level`` and ``meta_untrained``.

Each stage validates everything it can (params, datasets, properties, model specs) before loading a model,
works in resumable shards (:mod:`reproduce.shards`) and writes its final tables atomically.

Output tables (parquet, one row per observation):

``data/object_level/<model>.parquet`` -- greedy (temperature 0) object-level behaviour, one row per
item x property: ``model, task, split, family, item_id, prompt_hash, response, response_raw, finish,
n_new_tokens, property, value, compliant``.

``data/object_samples/<model>.parquet`` -- temperature-1 samples on the calibration subset (the first
``sampling.items_per_task`` items of each test task), one row per item x sample x property:
``model, task, split, family, item_id, sample, response, property, value, compliant``.

``data/meta_untrained.parquet`` -- every predictor's hypothetical (meta-level) answers on the test tasks,
before any training, joined with every target's object-level behaviour (self and cross), one row per
predictor x target x item x property: ``predictor, target, kind (self|cross), task, split, family, item_id,
property, meta_prompt_hash, meta_response, meta_value, meta_compliant, options, option_probs, p_outside,
object_value, object_compliant, p_object_value, correct``. ``options``/``option_probs`` are empty for
open-set properties (words); ``p_object_value`` is the normalised probability the predictor gave the
target's actual value (missing when the value is outside the options or non-compliant).

``data/finetuned/runs.json`` -- one entry per finetune: ``run, predictor, target, kind, n_examples, scaling,
steps, first_loss, final_loss``; each run's ``adapter/``, ``train_log.tsv`` (step, loss) and ``summary.json``
beside it, and the training pairs of each target in ``data/finetuned/examples/<target>.parquet``.

``data/meta_trained.parquet`` -- like ``meta_untrained`` for every trained predictor about its own target,
with ``run, n_examples, scaling`` added (``scaling`` marks the smaller cross-prediction runs of the sweep).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from . import __version__
from .config import REPO_ROOT, Profile
from .datasets import DATA_RAW, TaskData, load_task, select_properties, write_task
from .engine import ENGINE_VERSION, Engine, derive_seed
from .io import atomic_dir, atomic_write_bytes, atomic_write_json, atomic_write_parquet, short_hash
from .models import ModelRef, load, resolve
from .properties import get_property
from .shards import ShardStore
from .tasks import DATASET_LICENCE, DATASET_SEED, GENERATOR_VERSION, MAX_NEW_TOKENS, TASKS, generate_items

DATA = REPO_ROOT / "data"
WORK = DATA / ".work"
SHARD_ITEMS = 64  # items per resumable shard: a killed stage loses at most this much work per model
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
    return manifests


# ------------------------------------------------------------------------------------- preparation
class Plan:
    """Everything a stage needs, validated before any model is loaded."""

    def __init__(self, profile: Profile, data_raw: Path = DATA_RAW):
        self.profile = profile
        self.tasks: dict[str, TaskData] = {}
        self.properties: dict[str, list[str]] = {}
        for split in ("train", "test"):
            for name in getattr(profile.tasks, split):
                task = load_task(name, data_raw)
                if task.split != split:
                    raise ValueError(f"task {name!r} is a {task.split} task but params lists it under tasks.{split}")
                self.tasks[name] = task
                self.properties[name] = select_properties(task, profile.properties)
        # models last: resolving an embedded model may assemble its weights file
        self.refs: list[ModelRef] = [resolve(m) for m in profile.models]
        names = [r.name for r in self.refs]
        if len(set(names)) != len(names):
            raise ValueError(f"two models resolve to the same name {names}; give them aliases (alias=spec)")

    def items(self, task: TaskData) -> list[dict]:
        """The first ``items_per_task.<split>`` items (all of them for a smaller task)."""
        return task.items[:getattr(self.profile.items_per_task, task.split)]

    def test_tasks(self) -> list[TaskData]:
        return [t for t in self.tasks.values() if t.split == "test"]


def _setup_torch(profile: Profile) -> None:
    torch.set_num_threads(profile.threads or os.cpu_count() or 1)


def _load(profile: Profile, ref: ModelRef):
    lm = load(ref, dtype=profile.dtype, device=profile.device, system_prompt=profile.system_prompt)
    return lm, Engine(lm, batch_size=profile.batch_size)


def _fingerprint(stage: str, profile: Profile, lm, **extra) -> dict:
    return {
        "stage": stage, "package": __version__, "engine": ENGINE_VERSION, "model": lm.ref.spec, "weights": lm.ref.fingerprint,
        "dtype": profile.dtype, "device": lm.device.type, "batch_size": profile.batch_size,
        "format": lm.format.kind, "system_prompt": profile.system_prompt, **extra,
    }


def _chunks(items: list, size: int = SHARD_ITEMS) -> Iterable[tuple[int, list]]:
    for k in range(0, len(items), size):
        yield k // size, items[k:k + size]


def _expand_properties(df: pd.DataFrame, task: TaskData, props: list[str], items_by_id: dict) -> pd.DataFrame:
    """One row per response x property, with the property value and compliance."""
    frames = []
    for p in props:
        prop = get_property(p)
        values = [prop.extract(r, items_by_id[i]) for r, i in zip(df["response"], df["item_id"])]
        frames.append(df.assign(property=p, value=values, compliant=[v is not None for v in values]))
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------------------------ object level
def run_object_level(plan: Plan, out_dir: Path = DATA / "object_level", samples_dir: Path = DATA / "object_samples",
                     work: Path = WORK) -> dict[str, Path]:
    profile = plan.profile
    _setup_torch(profile)
    written = {}
    for ref in plan.refs:
        lm, engine = _load(profile, ref)
        greedy_frames, sample_frames = [], []
        for task in plan.tasks.values():
            items = plan.items(task)
            by_id = {it["item_id"]: it for it in items}
            max_new = int(task.manifest["max_new_tokens"])
            store = ShardStore(work / "object_level" / ref.name, _fingerprint(
                "object_level", profile, lm, task=task.name, task_sha256=task.manifest["sha256"], max_new_tokens=max_new))
            keys = []
            for k, chunk in _chunks(items):
                key = f"{task.name}-{k:04d}-{len(chunk)}"
                keys.append(key)
                if store.done(key):
                    continue
                gens = engine.generate([it["object_prompt"] for it in chunk], max_new,
                                       progress=f"{ref.name} object {task.name} [{k + 1}]")
                store.write(key, pd.DataFrame({
                    "item_id": [it["item_id"] for it in chunk],
                    "prompt_hash": [short_hash(it["object_prompt"]) for it in chunk],
                    "response": [g[0].response for g in gens],
                    "response_raw": [g[0].raw for g in gens],
                    "finish": [g[0].finish for g in gens],
                    "n_new_tokens": [g[0].n_new_tokens for g in gens],
                }))
            df = store.read(keys).assign(model=ref.name, task=task.name, split=task.split, family=task.family)
            greedy_frames.append(_expand_properties(df, task, plan.properties[task.name], by_id))

            n_cal = min(profile.sampling.items_per_task, len(items)) if task.split == "test" else 0
            if n_cal:
                s = profile.sampling
                sstore = ShardStore(work / "object_samples" / ref.name, _fingerprint(
                    "object_samples", profile, lm, task=task.name, task_sha256=task.manifest["sha256"],
                    max_new_tokens=max_new, n_samples=s.n_samples, temperature=s.temperature, seed=profile.seed))
                skeys = []
                for k, chunk in _chunks(items[:n_cal]):
                    key = f"{task.name}-{k:04d}-{len(chunk)}"
                    skeys.append(key)
                    if sstore.done(key):
                        continue
                    gens = engine.generate([it["object_prompt"] for it in chunk], max_new, n=s.n_samples,
                                           temperature=s.temperature, seed=derive_seed(profile.seed, ref.name, task.name, k),
                                           progress=f"{ref.name} samples {task.name} [{k + 1}]")
                    sstore.write(key, pd.DataFrame({
                        "item_id": [it["item_id"] for it, g in zip(chunk, gens) for _ in g],
                        "sample": [j for g in gens for j in range(len(g))],
                        "response": [x.response for g in gens for x in g],
                    }))
                sdf = sstore.read(skeys).assign(model=ref.name, task=task.name, split=task.split, family=task.family)
                sample_frames.append(_expand_properties(sdf, task, plan.properties[task.name], by_id))
        cols = ["model", "task", "split", "family", "item_id", "prompt_hash", "response", "response_raw", "finish",
                "n_new_tokens", "property", "value", "compliant"]
        path = out_dir / f"{ref.name}.parquet"
        atomic_write_parquet(path, pd.concat(greedy_frames, ignore_index=True)[cols])
        written[ref.name] = path
        scols = ["model", "task", "split", "family", "item_id", "sample", "response", "property", "value", "compliant"]
        samples = pd.concat(sample_frames, ignore_index=True)[scols] if sample_frames else pd.DataFrame(columns=scols)
        atomic_write_parquet(samples_dir / f"{ref.name}.parquet", samples)
        del lm, engine
    return written


# -------------------------------------------------------------------------------------- meta level
def meta_predictions(plan: Plan, lm, engine: Engine, stage: str, work: Path = WORK) -> pd.DataFrame:
    """A predictor's hypothetical answers on every test item x property (target-independent)."""
    profile = plan.profile
    frames = []
    for task in plan.test_tasks():
        items = plan.items(task)
        for p in plan.properties[task.name]:
            prop = get_property(p)
            max_new = META_MAX_NEW_TOKENS["closed" if prop.closed else "open"]
            store = ShardStore(work / stage / lm.name, _fingerprint(
                stage, profile, lm, task=task.name, task_sha256=task.manifest["sha256"], property=p,
                max_new_tokens=max_new))
            keys = []
            for k, chunk in _chunks(items):
                key = f"{task.name}-{p}-{k:04d}-{len(chunk)}"
                keys.append(key)
                if store.done(key):
                    continue
                prompts = [it["hypothetical_prompts"][p] for it in chunk]
                gens = engine.generate(prompts, max_new, options=[prop.options] * len(prompts),
                                       progress=f"{lm.name} meta {task.name}/{p} [{k + 1}]")
                store.write(key, pd.DataFrame({
                    "item_id": [it["item_id"] for it in chunk],
                    "meta_prompt_hash": [short_hash(x) for x in prompts],
                    "meta_response": [g[0].response for g in gens],
                    "option_probs": [list(g[0].option_probs) if g[0].option_probs else [] for g in gens],
                    "p_outside": [g[0].p_outside for g in gens],
                }))
            df = store.read(keys)
            values = [prop.parse_meta(r) for r in df["meta_response"]]
            frames.append(df.assign(
                predictor=lm.name, task=task.name, split=task.split, family=task.family, property=p,
                meta_value=values, meta_compliant=[v is not None for v in values],
                options=[list(prop.options or [])] * len(df),
            ))
    return pd.concat(frames, ignore_index=True)


def join_targets(meta: pd.DataFrame, objects: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Pair one predictor's meta answers with each target's object-level values."""
    frames = []
    for target, obj in objects.items():
        o = obj[["task", "item_id", "property", "value", "compliant"]].rename(
            columns={"value": "object_value", "compliant": "object_compliant"})
        j = meta.merge(o, on=["task", "item_id", "property"], how="left", validate="one_to_one")
        if j["object_compliant"].isna().any():
            missing = j.loc[j["object_compliant"].isna(), ["task", "item_id"]].drop_duplicates()
            raise RuntimeError(f"object level of {target!r} lacks {len(missing)} items the meta level asked about; "
                               "re-run the object_level stage with the same params")
        j["target"] = target
        j["kind"] = ["self" if p == target else "cross" for p in j["predictor"]]
        j["p_object_value"] = [
            probs[opts.index(v)] if len(opts) and v is not None and v in list(opts) else None
            for probs, opts, v in zip(j["option_probs"], j["options"], j["object_value"])
        ]
        j["correct"] = j["object_compliant"].astype(bool) & j["meta_compliant"] & (j["meta_value"] == j["object_value"])
        frames.append(j)
    cols = ["predictor", "target", "kind", "task", "split", "family", "item_id", "property", "meta_prompt_hash",
            "meta_response", "meta_value", "meta_compliant", "options", "option_probs", "p_outside",
            "object_value", "object_compliant", "p_object_value", "correct"]
    return pd.concat(frames, ignore_index=True)[cols]


def _objects(plan: Plan, object_dir: Path) -> dict[str, pd.DataFrame]:
    """Every model's object-level table, or a clear error naming the stage to run first."""
    out = {}
    for ref in plan.refs:
        path = object_dir / f"{ref.name}.parquet"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing; run the object_level stage first (`dvc repro object_level`)")
        out[ref.name] = pd.read_parquet(path)
    return out


def run_meta_untrained(plan: Plan, object_dir: Path = DATA / "object_level",
                       out: Path = DATA / "meta_untrained.parquet", work: Path = WORK) -> Path:
    _setup_torch(plan.profile)
    objects = _objects(plan, object_dir)
    frames = []
    for ref in plan.refs:
        lm, engine = _load(plan.profile, ref)
        frames.append(join_targets(meta_predictions(plan, lm, engine, "meta_untrained", work), objects))
        del lm, engine
    atomic_write_parquet(out, pd.concat(frames, ignore_index=True))
    return out


# ----------------------------------------------------------------------------------- finetuning (exp. 1)
@dataclass(frozen=True)
class TrainingRun:
    """One finetune: ``predictor`` trained on ``target``'s behaviour (self when they are the same model)."""

    predictor: str
    target: str
    n_examples: int | None  # None: every pair (up to finetune.max_examples); an int: a scaling-sweep run

    @property
    def kind(self) -> str:
        return "self" if self.predictor == self.target else "cross"

    @property
    def name(self) -> str:
        size = "" if self.n_examples is None else f"__n{self.n_examples}"
        return f"{self.predictor}__on__{self.target}{size}"


def training_runs(plan: Plan, n_pairs: dict[str, int]) -> list[TrainingRun]:
    """Self and cross in both directions, plus cross-prediction on each smaller scaling size."""
    names = [r.name for r in plan.refs]
    runs = [TrainingRun(p, t, None) for t in names for p in names]
    for t in names:
        for size in plan.profile.finetune.scaling_sizes:
            if size < n_pairs[t]:
                runs += [TrainingRun(p, t, size) for p in names if p != t]
    return runs


def _finetune_params(plan: Plan):
    if plan.profile.finetune is None:
        raise ValueError("the active profile has no `finetune:` section in params.yaml; add one (see the smoke profile)")
    return plan.profile.finetune


def run_finetune(plan: Plan, object_dir: Path = DATA / "object_level", out: Path = DATA / "finetuned",
                 curves: Path = DATA / "training_curves", work: Path = WORK) -> list[dict]:
    """Train every run; write ``out/<run>/`` (adapter, train_log.tsv, summary.json), the training pairs of each
    target (``out/examples/<target>.parquet``) and an index ``out/runs.json``.

    Training happens under ``work/finetune/<run>`` (checkpoints, and finished runs reused by fingerprint), out of
    DVC's reach: DVC deletes a stage's outputs before re-running it, which would lose the checkpoints."""
    from .finetune import finetune, training_examples

    cfg = _finetune_params(plan)
    _setup_torch(plan.profile)
    objects = _objects(plan, object_dir)
    examples = {t: training_examples(objects[t], plan.tasks, t, plan.profile.seed, cfg.max_examples) for t in objects}
    for t, ex in examples.items():
        atomic_write_parquet(out / "examples" / f"{t}.parquet", ex)
    refs = {r.name: r for r in plan.refs}
    index = []
    for run in training_runs(plan, {t: len(ex) for t, ex in examples.items()}):
        ex = examples[run.target] if run.n_examples is None else examples[run.target].head(run.n_examples)
        lm = load(refs[run.predictor], dtype="float32", device=plan.profile.device)  # train in fp32, autocast
        trained = work / "finetune" / run.name
        summary = finetune(lm, ex, cfg, trained, seed=plan.profile.seed, progress=f"finetune {run.name}")
        _publish(trained, out / run.name)
        atomic_write_bytes(curves / f"{run.name}.tsv", (trained / "train_log.tsv").read_bytes())
        index.append({"run": run.name, "predictor": run.predictor, "target": run.target, "kind": run.kind,
                      "n_examples": len(ex), "scaling": run.n_examples is not None, "steps": summary["steps"],
                      "first_loss": summary["first_loss"], "final_loss": summary["final_loss"],
                      "fingerprint": summary["fingerprint"]})
        del lm
    atomic_write_json(out / "runs.json", index)
    return index


def _publish(trained: Path, dest: Path) -> None:
    """Copy a finished run (adapter, log, summary) into the stage output, atomically."""
    with atomic_dir(dest) as tmp:
        shutil.copytree(trained, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".checkpoint", ".adapter.*"))


def load_trained(plan: Plan, ref: ModelRef, adapter_dir: Path, run_name: str, fingerprint: str):
    """The predictor with its adapter merged, named after the run (so its shards never mix with the base's)."""
    from peft import PeftModel

    lm, _ = _load(plan.profile, ref)
    merged = PeftModel.from_pretrained(lm.model, adapter_dir).merge_and_unload().state_dict()
    # the merged weights go into a freshly loaded model: the module tree peft leaves behind after merging
    # ran Gemma 3 about 14x slower on a CPU, with identical weights
    lm, _ = _load(plan.profile, ref)
    lm.model.load_state_dict(merged)
    lm.ref = replace(ref, name=run_name, fingerprint=short_hash(f"{ref.fingerprint}:{fingerprint}"))
    return lm, Engine(lm, batch_size=plan.profile.batch_size)


def run_meta_trained(plan: Plan, object_dir: Path = DATA / "object_level", trained: Path = DATA / "finetuned",
                     out: Path = DATA / "meta_trained.parquet", work: Path = WORK) -> Path:
    """Every trained predictor's hypothetical answers on the held-out test tasks, about its own target."""
    _finetune_params(plan)
    _setup_torch(plan.profile)
    objects = _objects(plan, object_dir)
    index_path = trained / "runs.json"
    if not index_path.exists():
        raise FileNotFoundError(f"{index_path} is missing; run the finetune stage first (`dvc repro finetune`)")
    refs = {r.name: r for r in plan.refs}
    frames = []
    for run in json.loads(index_path.read_text()):
        lm, engine = load_trained(plan, refs[run["predictor"]], trained / run["run"] / "adapter", run["run"],
                                  run["fingerprint"])
        meta = meta_predictions(plan, lm, engine, "meta_trained", work)
        joined = join_targets(meta.assign(predictor=run["predictor"]), {run["target"]: objects[run["target"]]})
        frames.append(joined.assign(run=run["run"], n_examples=run["n_examples"], scaling=run["scaling"]))
        del lm, engine
    atomic_write_parquet(out, pd.concat(frames, ignore_index=True))
    return out
