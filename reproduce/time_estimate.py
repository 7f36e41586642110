"""How long each stage will take on this machine, scaled from a measured run of the same settings.

A CPU stage that runs a model spends most of its time in matrix products (about 73% of a profiled training
step and of a meta-level call, README "Benchmarks"), so its time on another CPU is about its time on the
reference CPU times the ratio of the two CPUs' matmul rates, at the dtype and thread count the stage runs
with. That rate is what ``dtype: auto`` already measures (:func:`reproduce.hardware.probe_bf16`), so the
estimate costs nothing more.

The reference (``reproduce/reference_run.json``) is a whole ``dvc repro`` from scratch: every stage's wall
time (``data/timings.json``), the settings it ran (``params.yaml``, validated), the hardware line and the
matmul rate measured on that machine in the same environment, written by ``looking-inward timings
--save-reference``. It says nothing about other settings, so:

- a **model stage** (one whose ``params:`` in dvc.yaml include ``dtype``) gets an estimate when every setting
  it reads equals the reference's, apart from how it runs (``seed``, ``dtype``, ``device``, ``device_map``,
  ``max_memory``, ``threads``: the measured rate stands for those); its time is scaled by
  ``reference rate / rate here``;
- every **other stage** (the statistics, figures, report) gets one when the whole profile equals the
  reference's, apart from the same keys; its time is not scaled (it is not matrix products; sampling a
  posterior on a slower CPU is slower too, by less), so on a slower CPU its estimate is low;
- a stage with other settings, or a run on a GPU, gets none, and the output says why.

Checked against the measured cases (README "How long default takes"): on an AVX2-only 2-core EPYC whose
float32 matmul ran 2.4x slower than the reference's, ``meta_untrained`` took 2.6x and a finetuning step
2.4x the reference's time.

A large matrix product's rate is a poor guide where CPUs differ in more than their matrix units: on a 2-core
Xeon with AMX, bf16 products ran 1.7-3.3x faster than on an EPYC with avx512_bf16, while the whole run took about
as long. So a reference saved by this version also records a **workload probe** (:func:`measure_workload`),
timed on the reference's machine in its environment and again here:

- ``inference``: a small Llama with the embedded SmolLM2's layer shapes (4 layers) prefills 32 prompts of 96
  tokens and decodes 8 tokens, at the dtype the stages run with: small products, attention, normalisation and
  the per-call overhead, as in the engine;
- ``training``: one forward and backward pass of 8 rows of 96 tokens through the same model in float32, its
  weights frozen (as under LoRA), under bf16 autocast where ``mixed_precision`` resolves to bf16;
- ``host``: a loop of small numpy operations, the single-core speed the statistics stages (NUTS on small
  models, bootstraps, pandas) depend on.

With both probes, a model stage is scaled by the ratio of the inference probe's times, a finetuning stage by the
training probe's (:data:`TRAINING_SHARE`), and every other stage by the host probe's; the dtypes may differ
(the probe runs at each side's own). Without them (an older reference) the matmul rule above applies.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from reproduce.config import CODE_ROOT, Profile, _diff
from reproduce.errors import ProjectError

REFERENCE = Path(__file__).with_name("reference_run.json")
#: settings that change how a stage runs, not how much it computes (the measured rate stands for them)
EXECUTION_KEYS = ("seed", "dtype", "device", "device_map", "max_memory", "threads")
#: stages a fresh clone's `dvc repro` does not run (their outputs are committed), or runs in a second (check)
NOT_RUN = ("check", "datasets", "injection_datasets", "mirror_datasets", "citation")


class EstimateError(ProjectError, ValueError):
    """A reference run that cannot be written or read, with what to do."""


#: the share of a model stage's time spent training (the rest: inference), for the workload probe's weights;
#: behaviour_change trains two runs and then answers and predicts, about half each in the reference runs
TRAINING_SHARE = {"finetune_self": 1.0, "finetune_cross": 1.0, "behaviour_change": 0.5}
#: the workload probe's model: SmolLM2-135M's layer shapes and vocabulary, with 4 of its 30 layers
PROBE_MODEL = {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 4, "num_attention_heads": 9,
               "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 1024,
               "tie_word_embeddings": True}
PROBE_PREFILL = (32, 96)  # rows x prompt tokens, then PROBE_DECODE greedy steps of every row
PROBE_DECODE = 8
PROBE_TRAIN = (8, 96)  # rows x tokens of the training step


@dataclass(frozen=True)
class StageEstimate:
    stage: str                 # as dvc.yaml names it (object_level)
    reference_seconds: float | None
    seconds: float | None      # None: no estimate (``why`` says why)
    basis: str                 # what scaled it: matmul | workload | "" (the reference's time as it is)
    why: str = ""

    @property
    def scaled(self) -> bool:
        return bool(self.basis)


def _timings(fn: Callable[[], object], rounds: int) -> list[float]:
    """Seconds of ``rounds`` timed calls after one warm-up call."""
    fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _best_seconds(fn: Callable[[], object], rounds: int, readings: list | None = None) -> float:
    """The shortest of ``rounds`` timed calls after one warm-up call (another process can only slow one);
    every reading is appended to ``readings`` where given."""
    times = _timings(fn, rounds)
    if readings is not None:
        readings.extend(times)
    return min(times)


#: a probe part whose median reading is this much above its best, or a load average of at least one other
#: runnable process, makes ``plan`` warn that the machine is busy (its estimate assumes an idle machine)
BUSY_SPREAD = 0.25
BUSY_LOAD = 1.0


def spread(readings: dict[str, list[float]]) -> dict[str, float]:
    """Each probe part's median reading over its best, minus 1 (0: every reading equal)."""
    return {k: float(np.median(v) / min(v) - 1) for k, v in readings.items() if v}


def busy_warning(readings: dict[str, list[float]], load: float | None, cpus: int) -> str:
    """The warning ``plan`` prints when the probe's readings spread more than :data:`BUSY_SPREAD` or, before it
    ran, the load average over the last minute was :data:`BUSY_LOAD` or more (another process running); ``""``
    when the machine looked idle."""
    s = spread(readings)
    worst = max(s.values(), default=0.0)
    if worst <= BUSY_SPREAD and (load is None or load < BUSY_LOAD):
        return ""
    why = []
    if load is not None and load >= BUSY_LOAD:
        why.append(f"load average {load:.1f} over the last minute on {cpus} CPU{'s' if cpus != 1 else ''}")
    if worst > BUSY_SPREAD:
        why.append(f"the probe's readings spread {100 * worst:.0f}% above their best")
    return (f"warning: this machine looks busy ({'; '.join(why)}): the estimate assumes the stages have it to "
            f"themselves, and is too long or too short while other work runs; run `looking-inward plan` again "
            f"when it is idle")


def measure_workload(dtype: str, mixed_precision: str, rounds: int = 3, readings: dict | None = None) -> dict:
    """Seconds of the workload probe's three parts (see the module's doc) on this CPU at the current thread
    count: ``inference`` at ``dtype`` (float32 or bfloat16) and ``training`` under ``mixed_precision`` (no or
    bf16), each the best of ``rounds``, and ``host`` (:func:`measure_host`, best of its own 15 rounds). Takes
    about 10 seconds; random weights, seeded."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**PROBE_MODEL, attn_implementation="sdpa")).eval()
    model.requires_grad_(False)
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(PROBE_MODEL["vocab_size"], PROBE_PREFILL, generator=g)
    pairs = torch.randint(PROBE_MODEL["vocab_size"], PROBE_TRAIN, generator=g)
    infer_model = LlamaForCausalLM(model.config).eval().to(getattr(torch, dtype))
    infer_model.load_state_dict(model.state_dict())

    @torch.inference_mode()
    def inference():
        out = infer_model(input_ids=prompts, use_cache=True, logits_to_keep=1)
        for _ in range(PROBE_DECODE):
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            out = infer_model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)

    def training():
        embeds = model.get_input_embeddings()(pairs).detach().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mixed_precision == "bf16"):
            logits = model(inputs_embeds=embeds).logits
        torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), pairs.flatten()).backward()

    r = readings if readings is not None else {}
    for k in ("inference", "training", "host"):
        r.setdefault(k, [])
    return {"inference": round(_best_seconds(inference, rounds, r["inference"]), 4),
            "training": round(_best_seconds(training, rounds, r["training"]), 4),
            "host": round(measure_host(readings=r["host"]), 4), "dtype": dtype, "mixed_precision": mixed_precision}


def measure_host(rounds: int = 15, readings: list | None = None) -> float:
    """Seconds (best of ``rounds``) of 20,000 steps of small numpy operations on 256 numbers: one core's speed at
    the interpreter-bound, small-array work of the statistics stages. Fifteen rounds (about 2-3 s), because on a
    virtual machine this time can sit at twice its best for seconds at a stretch (0.11 against 0.19-0.21 s on a
    2-core Xeon): more rounds make it likelier, not certain, that the best one sees the machine's real speed."""
    x = np.random.default_rng(0).normal(size=256)

    def work():
        y = x
        for _ in range(20000):
            y = np.tanh(0.5 * y + 0.1)
            y = y - y.mean()
        return y

    return _best_seconds(work, rounds, readings)


def stage_params(dvc_yaml: Path = CODE_ROOT / "dvc.yaml") -> dict[str, list[str]]:
    """Each stage of dvc.yaml and the top-level settings it declares (``params.yaml: null``: all of them)."""
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    out = {}
    for name, spec in stages.items():
        declared = spec.get("params") or []
        if any(isinstance(p, dict) for p in declared):
            declared = ["*"]
        out[name] = list(declared)
    return out


def pipeline_stages() -> set[str]:
    """The stages a fresh clone's ``dvc repro`` runs, as the commands name them (``object-level``)."""
    return {s.replace("_", "-") for s in stage_params() if s not in NOT_RUN}


def complete_runs(data: dict, needed: set[str] | None = None) -> list[dict]:
    """The runs of a timings file that hold every stage of ``needed`` (default: :func:`pipeline_stages`)."""
    needed = pipeline_stages() if needed is None else needed
    return [r for r in data.get("runs", []) if needed <= set(r["stages"])]


def is_model_stage(params: list[str]) -> bool:
    return "dtype" in params


def _differing(reference: dict, profile: Profile) -> set[str]:
    """The top-level settings (execution keys left out) whose values differ from the reference run's."""
    keys = _diff({k: v for k, v in reference.items() if k not in EXECUTION_KEYS},
                 {k: v for k, v in profile.model_dump().items() if k not in EXECUTION_KEYS})
    return {k.split(".")[0] for k in keys}


def _factors(reference: dict, rate_here: float | None, workload_here: dict | None) -> Callable:
    """(stage name, model stage?) -> (the factor its reference time is multiplied by here, or None; its
    :attr:`StageEstimate.basis`)."""
    probe = reference.get("workload")
    if probe and workload_here:
        ratio = {k: workload_here[k] / probe[k] for k in ("inference", "training", "host")}

        def by_workload(name, model):
            if not model:
                return ratio["host"], "workload"
            share = TRAINING_SHARE.get(name, 0.0)
            return share * ratio["training"] + (1 - share) * ratio["inference"], "workload"
        return by_workload
    matmul = reference["gflops"] / rate_here if rate_here else None
    return lambda name, model: (matmul, "matmul") if model else (1.0, "")


def estimate(profile: Profile, reference: dict, rate_here: float | None, device: str = "cpu",
             stages: dict[str, list[str]] | None = None, workload_here: dict | None = None) -> list[StageEstimate]:
    """Every stage of the reference run with its estimated seconds here. ``workload_here``: this machine's
    workload probe (:func:`measure_workload`, at the dtype and thread count the stages will use); where it and
    the reference's are both there, every stage is scaled by it. Otherwise ``rate_here``, this machine's matmul
    GFLOP/s at the reference's dtype, scales the model stages and the others keep the reference's time."""
    stages = stage_params() if stages is None else stages
    differing = _differing(reference["params"], profile)
    factor_of = _factors(reference, rate_here, workload_here)
    out = []
    for name, declared in stages.items():
        ref = reference["stages"].get(name.replace("_", "-"), {}).get("seconds")
        model = is_model_stage(declared)
        if ref is None:
            continue  # a stage the reference did not time (datasets: committed, not re-run)
        if device != "cpu":
            out.append(StageEstimate(name, ref, None, "", "the reference run is a CPU run"))
            continue
        if model:
            mismatch = sorted(differing & set(declared))
        else:
            mismatch = sorted(differing)
        factor, basis = factor_of(name, model)
        if mismatch:
            out.append(StageEstimate(name, ref, None, "", "settings differ: " + ", ".join(mismatch)))
        elif factor is None:
            out.append(StageEstimate(name, ref, None, "", "no matmul rate measured here"))
        else:
            out.append(StageEstimate(name, ref, ref * factor, basis))
    return out


def format_estimate(rows: list[StageEstimate], reference: dict, here: str) -> str:
    ref_total = sum(r.reference_seconds for r in rows)
    lines = [f"time estimate for this machine: {here}",
             f"scaled from the reference run: profile {reference['profile']}, {ref_total / 60:.1f} min, "
             f"{reference['finished'][:10]}, {reference['hardware']}, {reference['dtype']} matmul "
             f"{reference['gflops']:.0f} GFLOP/s" + (f", {probe_text(reference['workload'])}"
                                                       if reference.get("workload") else ""),
             f"{'stage':<22}{'reference':>10}{'here':>10}"]
    workload = any(r.basis == "workload" for r in rows)
    for r in rows:
        est = f"{r.seconds / 60:7.1f} min" if r.seconds is not None else "       -  "
        note = f"   ({r.why})" if r.seconds is None else "" if r.scaled else "   (not scaled: no model)"
        lines.append(f"{r.stage:<22}{r.reference_seconds / 60:6.1f} min{est:>10}{note}")
    known = [r for r in rows if r.seconds is not None]
    total = sum(r.seconds for r in known)
    tail = "" if len(known) == len(rows) else f" for the {len(known)} of {len(rows)} stages with an estimate"
    lines.append(f"{'total':<22}{ref_total / 60:6.1f} min{total / 60:7.1f} min{tail}")
    if workload:
        lines.append("Each stage is scaled by the ratio of the workload probe's times, here over the reference's: "
                     "a small model's inference for model stages, its training step for finetuning, small numpy "
                     "operations for the rest (reproduce/time_estimate.py).")
    else:
        lines.append("Model stages are scaled by the ratio of matmul rates; the others keep the reference's time, "
                     "so on a slower CPU the total is low by some minutes (reproduce/time_estimate.py).")
    return "\n".join(lines)


def probe_text(probe: dict) -> str:
    return (f"workload probe: inference {probe['inference']:.2f} s ({probe['dtype']}), training "
            f"{probe['training']:.2f} s (mixed precision {probe['mixed_precision']}), host {probe['host']:.2f} s")


def load_reference(path: Path = REFERENCE) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


#: a whole run in bf16 on a CPU with native bf16, for machines where ``dtype: auto`` resolves to bf16
REFERENCE_BF16 = REFERENCE.with_name("reference_run_bf16.json")


def load_references(paths: tuple[Path, ...] = (REFERENCE, REFERENCE_BF16)) -> list[dict]:
    """Every reference run there is, the float32 one first."""
    return [r for r in (load_reference(p) for p in paths) if r is not None]


def threads_of(hardware: str) -> int:
    """The thread count in a stage's hardware line (``..., 2 threads (torch ...)``)."""
    m = re.search(r"(\d+) threads", hardware)
    if not m:
        raise EstimateError(f"no thread count in the hardware line {hardware!r}")
    return int(m.group(1))


def run_hardware(timings: dict, stages: dict[str, list[str]]) -> str:
    """The one hardware line of a whole run's model stages (``timings``: ``data/timings.json``), or an
    EstimateError naming the stages without a time, or the machines, where there is more than one."""
    timed = timings.get("stages", {})
    missing = [s for s in stages if s not in NOT_RUN and s.replace("_", "-") not in timed]
    if missing:
        raise EstimateError(f"data/timings.json has no time for {', '.join(missing)}: a reference needs a whole "
                            "run; run `dvc repro` to the end first")
    hardware = {timed[s.replace("_", "-")]["hardware"] for s, p in stages.items() if is_model_stage(p)}
    if len(hardware) != 1:
        raise EstimateError(f"the model stages ran on different hardware ({sorted(hardware)}); a reference needs "
                            "one machine for the whole run")
    return hardware.pop()


def build_reference(timings: dict, params: Profile, label: str, hardware: str, rates: tuple[float, float],
                    dtype: str, commit: str | None, workload: dict | None = None) -> dict:
    """The reference record of a finished run on ``hardware`` (:func:`run_hardware`): its stage times, settings,
    the measured matmul rate (float32 or bf16, whichever ``dtype`` the run used) and the workload probe
    (:func:`measure_workload` at the run's dtype and mixed precision), where given."""
    if dtype not in ("float32", "bfloat16"):
        raise EstimateError(f"dtype {dtype!r}: a CPU reference runs in float32 or bfloat16")
    timed = timings["stages"]
    return {"profile": label, "hardware": hardware, "dtype": dtype,
            "gflops": rates[0] if dtype == "float32" else rates[1],
            "finished": max(t["finished"] for t in timed.values()), "commit": commit,
            "stages": {s: {"seconds": t["seconds"]} for s, t in timed.items()},
            "params": params.model_dump(), **({"workload": workload} if workload else {})}


def save_reference(timings: Path, out: Path) -> Path:
    """Write the reference run for ``plan``'s time estimate from this run's timings and settings; the matmul rate
    is measured now, so this must run on the run's machine, in its environment."""
    import torch

    from reproduce.cards import git_commit
    from reproduce.config import DEFAULT_PARAMS, REPO_ROOT, load_params
    from reproduce.hardware import describe, probe_bf16, resolve_dtype
    from reproduce.io import atomic_write_json

    label, profile = load_params(DEFAULT_PARAMS)
    data = json.loads(timings.read_text())
    complete = complete_runs(data)
    if complete:  # the last whole run, not a quicker rerun of some stages after it
        data = {**data, "stages": complete[-1]["stages"]}
    ran = run_hardware(data, stage_params())
    torch.set_num_threads(threads_of(ran))
    if describe("cpu") != ran:
        raise EstimateError(f"this environment ({describe('cpu')}) is not the run's ({ran}): save the reference on "
                            "the machine, and with the environment variables, the run used")
    dtype = resolve_dtype(profile.dtype, "cpu").dtype
    ref = build_reference(data, profile, label, ran, probe_bf16("cpu"), dtype, git_commit(REPO_ROOT),
                          workload=workload_here(profile, dtype))
    atomic_write_json(out, ref)
    return out


#: the workload probe's timed rounds per part in ``plan`` (more than a saved reference's 3: the spread is reported)
PLAN_ROUNDS = 5


def workload_here(profile, dtype: str, readings: dict | None = None) -> dict:
    """The workload probe on this CPU at the dtype and mixed precision the profile's stages resolve to, each part
    timed :data:`PLAN_ROUNDS` times (every reading appended to ``readings``)."""
    from reproduce.hardware import resolve_mixed_precision

    mixed = resolve_mixed_precision(profile.finetune.mixed_precision if profile.finetune else "no", "cpu")
    return measure_workload(dtype, mixed, rounds=PLAN_ROUNDS, readings=readings)


def readings_text(readings: dict[str, list[float]]) -> str:
    """How far each probe part's readings spread: best and median seconds."""
    return "probe readings (best / median of each part): " + ", ".join(
        f"{k} {min(v):.2f} / {float(np.median(v)):.2f} s" for k, v in readings.items() if v)


def time_estimate_text(profile, device: str | None) -> str:
    """``plan``'s time estimate: the reference run's stage times scaled by this machine's workload probe (a
    reference without one: by its matmul rate)."""
    import torch

    from reproduce.hardware import describe, probe_bf16, resolve_dtype, usable_cpus

    references = load_references()
    if not references:
        return "no time estimate: reproduce/reference_run.json is missing (`looking-inward timings --save-reference`)"
    reference = references[0]
    if device is None:
        device = "cuda" if profile.device in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
    if device != "cpu":
        return (f"no time estimate for {device}: the reference run ({reference['profile']}, "
                f"{reference['hardware']}) is a CPU run")
    torch.set_num_threads(profile.threads or usable_cpus())  # the stages' rule for threads: null
    dtype = resolve_dtype(profile.dtype, "cpu").dtype
    fp32, bf16 = probe_bf16("cpu")
    rates = {"float32": fp32, "bfloat16": bf16}
    reference = next((r for r in references if r["dtype"] == dtype), reference)  # a run at this machine's dtype
    if reference.get("workload"):  # the probe runs at each side's own dtype, so the dtypes may differ
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # before the probe adds its own
        readings: dict[str, list[float]] = {}
        probe = workload_here(profile, dtype, readings)
        text = format_estimate(estimate(profile, reference, rates[dtype], workload_here=probe), reference,
                               f"{describe('cpu')}, {dtype} matmul {rates[dtype]:.0f} GFLOP/s, {probe_text(probe)}")
        warning = busy_warning(readings, load, usable_cpus())
        extra = [readings_text(readings)] if any(readings.values()) else []
        return "\n".join([text] + extra + ([warning] if warning else []))
    if dtype == reference["dtype"]:
        rate = rates[dtype]
        return format_estimate(estimate(profile, reference, rate), reference,
                               f"{describe('cpu')}, {dtype} matmul {rate:.0f} GFLOP/s")
    # a matmul probe's ratio between dtypes does not carry over to whole stages (small products, and the
    # other 30% of the time, gain less from bf16), so only the reference's own dtype is scaled
    other = reference["dtype"]
    if other not in rates:
        return f"no time estimate: the reference ran in {other}"
    text = format_estimate(estimate(profile, reference, rates[other]), reference,
                           f"{describe('cpu')}, if run with dtype: {other} (matmul {rates[other]:.0f} GFLOP/s)")
    return (f"no time estimate at this machine's dtype ({dtype}, {profile.dtype}): the reference ran in {other}. "
            f"The same stages with dtype: {other}:\n{text}")
