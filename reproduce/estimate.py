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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .config import CODE_ROOT, Profile, _diff
from .errors import ProjectError

REFERENCE = Path(__file__).with_name("reference_run.json")
#: settings that change how a stage runs, not how much it computes (the measured rate stands for them)
EXECUTION_KEYS = ("seed", "dtype", "device", "device_map", "max_memory", "threads")
#: stages a fresh clone's `dvc repro` does not run: their outputs are committed
NOT_RUN = ("datasets",)


class EstimateError(ProjectError, ValueError):
    """A reference run that cannot be written or read, with what to do."""


@dataclass(frozen=True)
class StageEstimate:
    stage: str                 # as dvc.yaml names it (object_level)
    reference_seconds: float | None
    seconds: float | None      # None: no estimate (``why`` says why)
    scaled: bool
    why: str = ""


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


def is_model_stage(params: list[str]) -> bool:
    return "dtype" in params


def _differing(reference: dict, profile: Profile) -> set[str]:
    """The top-level settings (execution keys left out) whose values differ from the reference run's."""
    keys = _diff({k: v for k, v in reference.items() if k not in EXECUTION_KEYS},
                 {k: v for k, v in profile.model_dump().items() if k not in EXECUTION_KEYS})
    return {k.split(".")[0] for k in keys}


def estimate(profile: Profile, reference: dict, rate_here: float | None, device: str = "cpu",
             stages: dict[str, list[str]] | None = None) -> list[StageEstimate]:
    """Every stage of the reference run with its estimated seconds here (``rate_here``: this machine's matmul
    GFLOP/s at the dtype and thread count the stages will use)."""
    stages = stage_params() if stages is None else stages
    differing = _differing(reference["params"], profile)
    factor = reference["gflops"] / rate_here if rate_here else None
    out = []
    for name, declared in stages.items():
        ref = reference["stages"].get(name.replace("_", "-"), {}).get("seconds")
        model = is_model_stage(declared)
        if ref is None:
            continue  # a stage the reference did not time (datasets: committed, not re-run)
        if device != "cpu":
            out.append(StageEstimate(name, ref, None, model, "the reference run is a CPU run"))
            continue
        if model:
            mismatch = sorted(differing & set(declared))
        else:
            mismatch = sorted(differing)
        if mismatch:
            out.append(StageEstimate(name, ref, None, model, "settings differ: " + ", ".join(mismatch)))
        elif model and factor is None:
            out.append(StageEstimate(name, ref, None, model, "no matmul rate measured here"))
        else:
            out.append(StageEstimate(name, ref, ref * factor if model else ref, model))
    return out


def format_estimate(rows: list[StageEstimate], reference: dict, here: str) -> str:
    ref_total = sum(r.reference_seconds for r in rows)
    lines = [f"time estimate for this machine: {here}",
             f"scaled from the reference run: profile {reference['profile']}, {ref_total / 60:.1f} min, "
             f"{reference['finished'][:10]}, {reference['hardware']}, {reference['dtype']} matmul "
             f"{reference['gflops']:.0f} GFLOP/s",
             f"{'stage':<22}{'reference':>10}{'here':>10}"]
    for r in rows:
        est = f"{r.seconds / 60:7.1f} min" if r.seconds is not None else "       -  "
        note = f"   ({r.why})" if r.seconds is None else "" if r.scaled else "   (not scaled: no model)"
        lines.append(f"{r.stage:<22}{r.reference_seconds / 60:6.1f} min{est:>10}{note}")
    known = [r for r in rows if r.seconds is not None]
    total = sum(r.seconds for r in known)
    tail = "" if len(known) == len(rows) else f" for the {len(known)} of {len(rows)} stages with an estimate"
    lines.append(f"{'total':<22}{ref_total / 60:6.1f} min{total / 60:7.1f} min{tail}")
    lines.append("Model stages are scaled by the ratio of matmul rates; the others keep the reference's time, "
                 "so on a slower CPU the total is low by some minutes (reproduce/estimate.py).")
    return "\n".join(lines)


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
                    dtype: str, commit: str | None) -> dict:
    """The reference record of a finished run on ``hardware`` (:func:`run_hardware`): its stage times, settings
    and the measured matmul rate (float32 or bf16, whichever ``dtype`` the run used)."""
    if dtype not in ("float32", "bfloat16"):
        raise EstimateError(f"dtype {dtype!r}: a CPU reference runs in float32 or bfloat16")
    timed = timings["stages"]
    return {"profile": label, "hardware": hardware, "dtype": dtype,
            "gflops": rates[0] if dtype == "float32" else rates[1],
            "finished": max(t["finished"] for t in timed.values()), "commit": commit,
            "stages": {s: {"seconds": t["seconds"]} for s, t in timed.items()},
            "params": params.model_dump()}
