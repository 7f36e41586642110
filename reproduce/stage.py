"""The kit every model stage shares, whatever its experiment: the validated :class:`StagePlan`, set-up before
any model is loaded, loading a model with its inference engine, shard fingerprints, and the stage-output
writers that only the main process runs.

An experiment family builds on this (:mod:`reproduce.self_prediction.runs` adds the task datasets and the
finetuning runs; the concept-injection and mirror stages use the plan as it is).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

import reproduce.dist as dist
from reproduce import __version__
from reproduce.config import REPO_ROOT, ConfigError, Profile, unrecorded
from reproduce.datasets import DATA_RAW
from reproduce.hardware import usable_cpus
from reproduce.io import (atomic_write_bytes as _write_bytes, atomic_write_json as _write_json,
                          atomic_write_parquet as _write_parquet)
from reproduce.lm.engine import ENGINE_VERSION, Engine
from reproduce.lm.models import ModelRef, load, pick_device, resolve
from reproduce.lm.weights import check_weights
from reproduce.versioning import chat_template_hash, code_version, runtime_versions

# stage outputs are written by the main process only (reproduce.dist); shards by every process
atomic_write_bytes, atomic_write_json, atomic_write_parquet = map(dist.main_only, (_write_bytes, _write_json,
                                                                                   _write_parquet))

DATA = REPO_ROOT / "data"
WORK = DATA / ".work"

#: the modules whose source every model stage's shard fingerprint hashes: inference, loading, prompt rendering
ENGINE_MODULES = ("reproduce.lm.engine", "reproduce.lm.split_cache", "reproduce.lm.models", "reproduce.lm.formats")


class StagePlan:
    """What a model stage needs, validated before any model is loaded: the settings and the resolved models.

    ``bounds`` is the stage's bound on its own sequences for the memory plan, kind -> ``bound(tokenizer,
    prompt format)`` -> workload (:func:`reproduce.lm.memory_plan.workloads`); a family whose prompts are known in
    advance overrides :meth:`workloads` instead."""

    def __init__(self, profile: Profile, data_raw: Path = DATA_RAW):
        self.profile, self.data_raw = profile, Path(data_raw)
        self.bounds: dict[str, Callable] = {}
        self._validate_inputs()
        # models last: resolving an embedded model may assemble its weights file
        self.refs: list[ModelRef] = [resolve(m) for m in profile.models]
        names = [r.name for r in self.refs]
        if len(set(names)) != len(names):
            raise ConfigError(f"two models resolve to the same name {names}; give them aliases (alias=spec)")
        for ref in self.refs:  # every model's weights, before any model's work: a damaged second model stops here
            check_weights(ref)

    def _validate_inputs(self) -> None:
        """A family's own checks of its inputs, before any model is resolved."""

    def has_workload(self) -> bool:
        """Whether the memory plan has sequences to bound for this plan (else: the weights alone)."""
        return bool(self.bounds)

    def workloads(self, tokenizer, fmt) -> dict[str, dict]:
        """Per kind of work: ``prompts``, ``tokens``, ``longest`` prompt, ``new`` tokens at most, ``rows``."""
        return {kind: bound(tokenizer, fmt) for kind, bound in self.bounds.items()}


def setup_stage(plan: StagePlan) -> None:
    """Before a model stage loads anything: the process group and threads, and on a GPU the memory plan, so
    that a model that cannot fit stops the stage in seconds with the fix, not minutes later out of memory."""
    setup_torch(plan.profile)
    if pick_device(plan.profile.device).type == "cuda":
        from reproduce.lm.memory_plan import fits_device

        with unrecorded():  # the memory plan reads every stage's settings; it warns and changes no output
            warnings = fits_device(plan)
        for warning in warnings:
            print(f"warning: tight memory: {warning}", file=sys.stderr)


def setup_torch(profile: Profile) -> None:
    if profile.device_map and dist.distributed():
        raise ConfigError("device_map: auto spreads one model over every GPU, which several processes cannot "
                          "share; run the stage as one process, or drop device_map to run one copy per GPU")
    dist.setup(profile.device)  # the process group, before any model is placed
    torch.set_num_threads(profile.threads or max(1, usable_cpus() // dist.world_size()))


def make_engine(profile: Profile, lm) -> Engine:
    c = lm.dtype_choice
    if c is not None:
        print(f"{lm.name}: {lm.dtype_name} on {lm.device.type} (dtype {c.requested}: {c.reason})", file=sys.stderr)
    return Engine(lm, batch_size=profile.batch_size)


def load_model(profile: Profile, ref: ModelRef):
    """The model ``ref`` loaded with the profile's dtype, device and system prompt, and its engine."""
    lm = load(ref, dtype=profile.dtype, device=profile.device, system_prompt=profile.system_prompt,
              device_map=profile.device_map, max_memory=profile.max_memory)
    return lm, make_engine(profile, lm)


def fingerprint(stage: str, profile: Profile, lm, uses: Sequence[str], **extra) -> dict:
    """What determines a shard's rows. The dtype is the resolved one (``auto`` may pick either). ``code`` hashes
    the source of the modules that compute the rows: the engine, model loading and prompt rendering, which every
    stage runs, and ``uses``, the stage's own modules (the one that builds the rows from the engine's answers,
    and any it reads answer options from, steers or corrupts with), so editing any of them starts fresh shards
    and editing a module a stage does not use (the properties, for concept injection) keeps them. The prompts
    themselves come from the datasets, which the stages key by their release hash. The chat template
    is hashed because a tokenizer update can change the rendered prompts without any change to the code or the
    weights, which are keyed by content (``weights``)."""
    if not uses or isinstance(uses, str):
        raise ValueError("fingerprint needs the stage's own modules in uses, as a sequence of module names")
    return {
        "stage": stage, "package": __version__, "engine": ENGINE_VERSION, "model": lm.ref.spec,
        "weights": lm.ref.fingerprint,
        "dtype": lm.dtype_name, "device": lm.device.type, "batch_size": profile.batch_size,
        "format": lm.format.kind, "system_prompt": profile.system_prompt,
        "chat_template": chat_template_hash(lm),
        "code": code_version(*ENGINE_MODULES, *uses),
        "runtime": runtime_versions(), **({"device_map": profile.device_map} if profile.device_map else {}), **extra,
    }


def run_judge(profile, spec: str, questions: list[str]) -> list[float]:
    """Load the judge named by ``spec`` (any model spec the registry resolves: an id, a local path, a name in
    ``models.yaml``) with the profile's dtype and device, return its P(yes) for every question, and release it."""
    from reproduce.lm.adapters import release_memory
    from reproduce.lm.judge import judge

    lm, engine = load_model(profile, resolve(spec))
    try:
        return judge(engine, questions, progress=f"judge {lm.name}")
    finally:
        del engine, lm
        release_memory()
