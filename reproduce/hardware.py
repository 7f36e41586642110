"""What this machine computes fast, measured rather than assumed.

bfloat16 halves memory traffic, but on a CPU it is fast only where the instruction set has it (avx512_bf16,
AMX). Elsewhere (AVX2-only CPUs, most laptops) PyTorch emulates it, and a bf16 matrix product ran about
40x slower than float32 on one such machine. So ``dtype: auto`` and ``mixed_precision: auto`` choose bf16 on a
CPU whose flags have it (avx512_bf16 or amx_bf16) and whose kernels use it (PyTorch dispatching AVX-512 kernels,
oneDNN not capped below them): a decision from facts of the machine, the same on every run, whatever else the
machine is doing. A timed matrix product, which another process can slow by several times, decides only where
the flags cannot be read (not Linux on x86): it is repeated until its readings agree, and kept per machine
(CPU model, flags, thread count, torch version) in the package cache. On CUDA, bf16 is chosen where the device
supports it.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from reproduce.io import atomic_write_json, cache_base

#: bf16 is chosen on a CPU only when its measured matmul rate beats float32's by this factor
BF16_MIN_SPEEDUP = 1.25
#: the probe's matrix product (rows x inner @ inner x cols), the shape of a small model's projection
PROBE_SHAPE = (256, 576, 576)
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "fma")


@dataclass(frozen=True)
class DtypeChoice:
    """A resolved dtype and the evidence behind it (logged, and recorded in fingerprints and tables)."""

    requested: str  # auto | float32 | bfloat16 | float16
    dtype: str  # float32 | bfloat16 | float16
    device: str  # cpu | cuda
    reason: str
    fp32_gflops: float | None = None
    bf16_gflops: float | None = None

    @property
    def bf16_speedup(self) -> float | None:
        if self.fp32_gflops and self.bf16_gflops:
            return self.bf16_gflops / self.fp32_gflops
        return None


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the system has one (``taskset``, a Slurm
    or container CPU set, a pinned test worker), else every CPU. ``os.cpu_count()`` counts the machine's
    CPUs even where the process may use only a few, and as many threads as that on fewer CPUs spin against
    each other."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity masks on this system (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The CPU flags among :data:`CPU_FLAGS` (Linux only; an empty list elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [f for f in CPU_FLAGS if f in have]
    except OSError:
        pass
    return []


def cpu_dispatch() -> str:
    """The instruction set PyTorch's CPU kernels dispatch to (``AVX512``, ``AVX2``, ...), plus oneDNN's cap
    where ``ONEDNN_MAX_CPU_ISA`` sets one. Below the CPU's flags when ``ATEN_CPU_CAPABILITY`` or
    ``ONEDNN_MAX_CPU_ISA`` lower it, which is how a CPU without AVX-512 (or bf16) can be emulated."""
    try:
        level = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        level = "unknown"
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA")
    return f"{level}, oneDNN<={isa}" if isa else level


def describe(device: torch.device | str = "cpu") -> str:
    """One line naming the hardware, printed beside every measured figure."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return f"GPU {torch.cuda.get_device_name(dev)} (torch {torch.__version__})"
    flags = ",".join(cpu_flags()) or "flags unknown"
    return (f"CPU {cpu_model()} [{flags}], kernels {cpu_dispatch()}, {torch.get_num_threads()} threads "
            f"(torch {torch.__version__})")


def timed_rate(fn: Callable[[], object], work: float, device: str = "cpu", min_seconds: float = 0.05) -> float:
    """``work`` units per second of ``fn``: one warm-up call, then calls until at least ``min_seconds`` and 3
    calls have passed (on CUDA each call is synchronised, so the time is the device's)."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    fn()  # warm-up
    sync()
    reps, start = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        sync()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and reps >= 3:
            return work * reps / elapsed


def matmul_gflops(dtype: torch.dtype, device: str = "cpu", shape: tuple[int, int, int] = PROBE_SHAPE,
                  min_seconds: float = 0.05) -> float:
    """The rate of one matrix product at ``dtype`` on ``device`` with the current thread count, GFLOP/s."""
    m, k, n = shape
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(m, k, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(k, n, generator=g).to(device=device, dtype=dtype)
    return timed_rate(lambda: a @ b, 2.0 * m * k * n / 1e9, device, min_seconds)


def measure_bf16(device: str = "cpu", rounds: int = 5) -> tuple[float, float]:
    """(float32, bfloat16) GFLOP/s: the best of ``rounds`` interleaved timings of each. Another process on
    the machine can only slow a timing down, so the best one is the machine's rate."""
    fp32 = bf16 = 0.0
    for _ in range(rounds):
        fp32 = max(fp32, matmul_gflops(torch.float32, device, min_seconds=0.02))
        bf16 = max(bf16, matmul_gflops(torch.bfloat16, device, min_seconds=0.02))
    return fp32, bf16


#: the timed probe is repeated until this many of its readings agree on the decision (at most PROBE_TRIES)
PROBE_AGREE, PROBE_TRIES = 3, 9


def stable_bf16(device: str = "cpu", measure: Callable | None = None) -> tuple[float, float]:
    """(float32, bfloat16) GFLOP/s from repeated probes: measured until :data:`PROBE_AGREE` readings in a row
    agree on whether bf16 clears :data:`BF16_MIN_SPEEDUP` (at most :data:`PROBE_TRIES`; then the majority), and
    the median of the readings that agree with the decision."""
    measure = measure or measure_bf16
    readings: list[tuple[float, float]] = []
    for _ in range(PROBE_TRIES):
        readings.append(measure(device))
        votes = [b >= BF16_MIN_SPEEDUP * f for f, b in readings]
        if len(votes) >= PROBE_AGREE and len(set(votes[-PROBE_AGREE:])) == 1:
            decision = votes[-1]
            break
    else:
        decision = sum(votes) * 2 > len(votes)
    kept = sorted((r for r, v in zip(readings, votes) if v == decision), key=lambda r: r[1] / r[0])
    return kept[len(kept) // 2]


def _probe_key(device: str) -> str:
    return (f"{device}|{cpu_model()}|{','.join(cpu_flags())}|{cpu_dispatch()}|threads={torch.get_num_threads()}"
            f"|torch={torch.__version__}")


@functools.lru_cache(maxsize=None)
def _probe(key: str, device: str) -> tuple[float, float]:
    path = cache_base() / "hardware.json"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]["fp32_gflops"], known[key]["bf16_gflops"]
    fp32, bf16 = stable_bf16(device)
    known[key] = {"fp32_gflops": round(fp32, 1), "bf16_gflops": round(bf16, 1),
                  "measured": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        atomic_write_json(path, known)
    except OSError:  # a read-only cache: measure again next time
        pass
    return known[key]["fp32_gflops"], known[key]["bf16_gflops"]


def probe_bf16(device: str = "cpu") -> tuple[float, float]:
    """(float32 GFLOP/s, bfloat16 GFLOP/s) on this machine at the current thread count. Measured once per
    machine and kept in the package cache (``hardware.json``), so every stage of a run, each its own process,
    resolves ``auto`` the same way; ``looking-inward hardware --measure`` measures again."""
    return _probe(_probe_key(device), device)


def forget_probe() -> None:
    """Drop the cached measurements (this process's and the cache file's)."""
    _probe.cache_clear()
    (cache_base() / "hardware.json").unlink(missing_ok=True)


BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def native_bf16() -> tuple[bool | None, str]:
    """Whether this CPU multiplies bf16 natively, from its flags and the kernels' dispatch, and why: None where
    the flags cannot be read (then a timed probe decides)."""
    flags = cpu_flags()
    if not flags:
        return None, "CPU flags unknown"
    have = [f for f in BF16_FLAGS if f in flags]
    if not have:
        return False, "no avx512_bf16 or amx_bf16 among the CPU flags"
    dispatch = cpu_dispatch()
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if "AVX512" not in dispatch.split(",")[0].upper():
        return False, f"the CPU has {', '.join(have)} but PyTorch dispatches {dispatch} kernels"
    if isa and not any(k in isa for k in ("BF16", "AMX", "ALL", "AVX10")):
        return False, f"the CPU has {', '.join(have)} but oneDNN is capped at {isa}"
    return True, f"{', '.join(have)} in the CPU flags, {dispatch} kernels"


def resolve_dtype(requested: str, device: torch.device | str) -> DtypeChoice:
    """The dtype to run at. ``auto``: bf16 on a CUDA device that supports it, and on a CPU with native bf16
    (:func:`native_bf16`: its flags, never a timing, where they can be read; elsewhere a repeated timed probe, bf16
    at least :data:`BF16_MIN_SPEEDUP` times float32's rate); float32 everywhere else. An explicit dtype is kept;
    an explicit bf16 on a CPU without native bf16 warns with the measured slowdown."""
    dev = torch.device(device).type
    if dev == "cuda":
        ok = _cuda_bf16()
        if requested == "auto":
            return DtypeChoice(requested, "bfloat16" if ok else "float32", dev,
                               "CUDA device supports bf16" if ok else "CUDA device without bf16 support")
        return DtypeChoice(requested, requested, dev, "set in params.yaml")
    if requested not in ("auto", "bfloat16"):
        return DtypeChoice(requested, requested, dev, "set in params.yaml")
    native, why = native_bf16()
    if requested == "auto" and native is not None:
        return DtypeChoice(requested, "bfloat16" if native else "float32", dev,
                           ("native bf16: " if native else "bf16 not native: ") + why)
    if requested == "bfloat16" and native:
        return DtypeChoice(requested, "bfloat16", dev, "set in params.yaml; native bf16: " + why)
    fp32, bf16 = probe_bf16(dev)
    fast = bf16 >= BF16_MIN_SPEEDUP * fp32
    measured = f"bf16 {bf16:.0f} vs float32 {fp32:.0f} GFLOP/s on this CPU ({torch.get_num_threads()} threads)"
    if requested == "auto":
        return DtypeChoice(requested, "bfloat16" if fast else "float32", dev,
                           ("native bf16 (flags unknown; timed): " if fast else "bf16 not faster (flags unknown; "
                            "timed): ") + measured, fp32, bf16)
    if not fast:
        warnings.warn(f"dtype bfloat16 was asked for, but this CPU has no fast bf16: {measured} "
                      f"({fp32 / bf16:.1f}x slower). Set dtype: auto (or float32) in params.yaml.", stacklevel=2)
    return DtypeChoice(requested, "bfloat16", dev, "set in params.yaml; " + measured, fp32, bf16)


def _cuda_bf16() -> bool:
    """Whether the CUDA device has bf16. A GPU that is not visible here (``looking-inward plan --device cuda``
    planning for another machine) is taken to have it, as every recent one does; a stage never gets this far
    without a visible GPU."""
    return not torch.cuda.is_available() or torch.cuda.is_bf16_supported()


def resolve_mixed_precision(requested: str, device: torch.device | str) -> str:
    """``auto`` -> ``bf16`` where bf16 is fast on ``device`` (the same rule as :func:`resolve_dtype`), else ``no``."""
    if requested != "auto":
        return requested
    return "bf16" if resolve_dtype("auto", device).dtype == "bfloat16" else "no"


def resolve_base_dtype(requested: str, device: torch.device | str) -> str:
    """The dtype of the frozen base weights for LoRA training: ``auto`` -> ``bfloat16`` on a CUDA device with
    bf16 (the usual LoRA recipe: half the memory, the adapter and optimiser stay float32), else ``float32``
    (on a CPU the models are small and float32 weights under autocast are the measured setting)."""
    if requested != "auto":
        return requested
    return "bfloat16" if torch.device(device).type == "cuda" and _cuda_bf16() else "float32"


def resolve_gradient_checkpointing(requested: bool | str, device: torch.device | str) -> bool:
    """``auto`` -> on for CUDA (activation memory is what limits batch size there), off on a CPU."""
    return torch.device(device).type == "cuda" if requested == "auto" else bool(requested)


def record(choice: DtypeChoice) -> dict:
    """The fields a shard fingerprint or a run summary keeps of a dtype choice."""
    d = asdict(choice)
    d["hardware"] = describe(choice.device)
    d["cpu_count"] = os.cpu_count()
    return d
