"""``dtype: auto``: bf16 only where it is measured fast; the measurement is injected here."""

from types import SimpleNamespace

import pytest
import torch

import reproduce.hardware as hardware


@pytest.fixture
def measured(monkeypatch):
    """Pretend the CPU's flags cannot be read and the matmul probe measured (float32, bfloat16) GFLOP/s."""
    def set_rates(fp32: float, bf16: float) -> None:
        monkeypatch.setattr(hardware, "native_bf16", lambda: (None, "CPU flags unknown"))
        monkeypatch.setattr(hardware, "probe_bf16", lambda device="cpu": (fp32, bf16))
    return set_rates


@pytest.mark.parametrize("flags,dispatch,isa,native", [
    (["avx2", "avx512f", "avx512_bf16"], "AVX512", None, True),
    (["avx2", "avx512f", "amx_bf16", "amx_tile"], "AVX512", None, True),
    (["avx2", "avx512f", "avx512_bf16"], "AVX512", "AVX512_CORE_BF16", True),
    (["avx2", "avx512f", "avx512_bf16"], "AVX2", None, False),  # kernels lowered (ATEN_CPU_CAPABILITY=avx2)
    (["avx2", "avx512f", "avx512_bf16"], "AVX512", "AVX2", False),  # oneDNN capped
    (["avx2", "avx512f"], "AVX512", None, False),  # AVX-512 without bf16
    (["avx2", "fma"], "AVX2", None, False),  # a laptop
    ([], "DEFAULT", None, None),  # flags unknown: the timed probe decides
])
def test_native_bf16_is_read_from_the_flags_and_the_kernels(monkeypatch, flags, dispatch, isa, native):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: flags)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: dispatch)
    if isa:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    else:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert hardware.native_bf16()[0] is native


def test_auto_follows_the_flags_and_never_a_timing_where_they_are_known(monkeypatch):
    """A busy machine made a timed probe read bf16 11 against float32 13 GFLOP/s on a CPU with AMX, and that one
    reading chose float32 for every later run. The flags decide now: the same dtype on every run, loaded or not."""
    monkeypatch.setattr(hardware, "probe_bf16", lambda device="cpu": pytest.fail("timed"))
    for native in (True, False):
        monkeypatch.setattr(hardware, "native_bf16", lambda n=native: (n, "flags"))
        c = hardware.resolve_dtype("auto", "cpu")
        assert c.dtype == ("bfloat16" if native else "float32") and c.fp32_gflops is None
        assert hardware.resolve_mixed_precision("auto", "cpu") == ("bf16" if native else "no")


def test_the_timed_probe_is_repeated_until_its_readings_agree():
    """Where the flags are unknown: noisy readings (another process holding a core) do not decide alone."""
    readings = iter([(13.0, 11.0), (150.0, 880.0), (140.0, 860.0), (12.0, 80.0), (153.0, 883.0), (90.0, 95.0)])
    calls = []
    fp32, bf16 = hardware.stable_bf16("cpu", measure=lambda device: calls.append(1) or next(readings))
    assert (fp32, bf16) == (140.0, 860.0) and len(calls) == 4  # three agreeing readings in a row: their median
    always_noisy = iter([(10.0, 20.0), (10.0, 5.0)] * 10)
    fp32, bf16 = hardware.stable_bf16("cpu", measure=lambda device: next(always_noisy))
    assert (fp32, bf16) == (10.0, 20.0)  # nine readings, the majority (bf16 faster in five) decides


def test_auto_picks_float32_where_bf16_is_emulated(measured):
    measured(66.0, 1.7)  # an AVX2-only CPU, as measured on one
    c = hardware.resolve_dtype("auto", "cpu")
    assert c.dtype == "float32" and "not faster" in c.reason and c.bf16_speedup == pytest.approx(1.7 / 66)
    assert hardware.resolve_mixed_precision("auto", "cpu") == "no"


def test_auto_picks_bf16_where_it_is_native(measured):
    measured(40.0, 145.0)  # avx512_bf16
    c = hardware.resolve_dtype("auto", "cpu")
    assert c.dtype == "bfloat16" and "native" in c.reason
    assert hardware.resolve_mixed_precision("auto", "cpu") == "bf16"


def test_auto_wants_a_clear_speed_up(measured):
    measured(50.0, 55.0)  # barely faster: not worth bf16's rounding
    assert hardware.resolve_dtype("auto", "cpu").dtype == "float32"


def test_explicit_bf16_on_a_slow_cpu_runs_but_warns_with_the_slowdown(measured):
    measured(66.0, 1.7)
    with pytest.warns(UserWarning, match=r"38\.8x slower.*dtype: auto"):
        c = hardware.resolve_dtype("bfloat16", "cpu")
    assert c.dtype == "bfloat16"


def test_explicit_dtypes_are_kept_without_measuring(monkeypatch):
    monkeypatch.setattr(hardware, "probe_bf16", lambda device="cpu": pytest.fail("measured"))
    assert hardware.resolve_dtype("float32", "cpu").dtype == "float32"
    assert hardware.resolve_mixed_precision("no", "cpu") == "no"


@pytest.mark.slow
def test_the_real_probe_measures_both_dtypes(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOKING_INWARD_CACHE", str(tmp_path))
    hardware._probe.cache_clear()
    fp32, bf16 = hardware.probe_bf16("cpu")
    assert fp32 > 0 and bf16 > 0
    assert hardware.probe_bf16("cpu") == (fp32, bf16)  # measured once per process
    assert "CPU" in hardware.describe("cpu") and str(torch.get_num_threads()) in hardware.describe("cpu")


@pytest.mark.slow
def test_load_auto_records_the_resolved_dtype_and_the_fingerprint_uses_it(measured):
    from conftest import tiny_profile

    from reproduce.lm.models import load
    from reproduce.stage import fingerprint

    STAGE = ("reproduce.self_prediction.object_level",)
    measured(66.0, 1.7)
    lm = load("smollm2-135m", dtype="auto", device="cpu")
    assert lm.dtype == torch.float32 and lm.dtype_name == "float32"
    assert lm.dtype_choice.requested == "auto" and lm.dtype_choice.fp32_gflops == 66.0
    assert next(lm.model.parameters()).dtype == torch.float32
    assert fingerprint("object_level", tiny_profile(dtype="auto"), lm, STAGE)["dtype"] == "float32"
    measured(40.0, 145.0)
    lm = load("smollm2-135m", dtype="auto", device="cpu")
    assert next(lm.model.parameters()).dtype == torch.bfloat16
    assert fingerprint("object_level", tiny_profile(dtype="auto"), lm, STAGE)["dtype"] == "bfloat16"


def test_the_measurement_is_kept_per_machine_so_every_stage_agrees(tmp_path, monkeypatch):
    """Each stage is its own process: the probe is measured once and read back from the cache, so a busy
    moment cannot make two stages of one run resolve ``auto`` differently."""
    monkeypatch.setenv("LOOKING_INWARD_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(hardware, "stable_bf16", lambda device="cpu": calls.append(device) or (40.0, 145.0))
    hardware._probe.cache_clear()
    assert hardware.probe_bf16("cpu") == (40.0, 145.0)
    hardware._probe.cache_clear()  # a new process
    monkeypatch.setattr(hardware, "stable_bf16", lambda device="cpu": (60.0, 2.0))
    assert hardware.probe_bf16("cpu") == (40.0, 145.0) and calls == ["cpu"]
    hardware.forget_probe()  # `looking-inward hardware --measure`
    assert hardware.probe_bf16("cpu") == (60.0, 2.0)
    hardware._probe.cache_clear()


def test_the_probe_takes_the_best_of_interleaved_timings(monkeypatch):
    rates = iter([30.0, 100.0, 10.0, 20.0, 35.0, 140.0, 33.0, 90.0, 5.0, 145.0])  # a busy machine
    monkeypatch.setattr(hardware, "matmul_gflops", lambda dtype, device, min_seconds: next(rates))
    assert hardware.measure_bf16("cpu", rounds=5) == (35.0, 145.0)


def test_timed_rate_warms_up_then_counts_at_least_three_calls_and_the_minimum_time(monkeypatch):
    clock = iter([0.0, 0.01, 0.02, 0.03, 0.06])  # perf_counter at the start and after each timed call
    monkeypatch.setattr(hardware, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    calls = []
    rate = hardware.timed_rate(lambda: calls.append(1), work=6.0, min_seconds=0.05)
    assert len(calls) == 1 + 4  # the warm-up, then 3 calls under the minimum time and the one that passes it
    assert rate == pytest.approx(6.0 * 4 / 0.06)


def test_kernel_dispatch_is_named_and_keys_the_probe(monkeypatch):
    """A lowered instruction set (ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY: how a CPU without AVX-512 is
    emulated) shows in the hardware line and gets its own probe measurement, never another setting's."""
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    plain = hardware._probe_key("cpu")
    assert hardware.cpu_dispatch() in hardware.describe("cpu")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert hardware.cpu_dispatch().endswith("oneDNN<=AVX2")
    assert "oneDNN<=AVX2" in hardware.describe("cpu")
    assert hardware._probe_key("cpu") != plain


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="no CPU affinity on this system")
def test_threads_follow_the_cpus_this_process_may_use():
    """A process pinned to one CPU (taskset, a Slurm CPU set, a test worker) sizes its pools for one, whatever
    the machine's CPU count; a stage sets torch's threads from it."""
    import os
    import subprocess
    import sys

    one = min(os.sched_getaffinity(0))
    code = ("import os, torch; os.sched_setaffinity(0, {%d}); from reproduce.hardware import usable_cpus;"
            "from reproduce.stage import setup_torch; from conftest import tiny_profile;"
            "setup_torch(tiny_profile(device='cpu')); print(usable_cpus(), torch.get_num_threads())" % one)
    tests = os.path.dirname(__file__)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.path.dirname(tests)])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["1", "1"]
    assert hardware.usable_cpus() == len(os.sched_getaffinity(0))
