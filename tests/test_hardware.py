"""``dtype: auto``: bf16 only where it is measured fast; the measurement is injected here."""

import pytest
import torch

from reproduce import hardware


@pytest.fixture
def measured(monkeypatch):
    """Pretend the matmul probe measured (float32, bfloat16) GFLOP/s."""
    def set_rates(fp32: float, bf16: float) -> None:
        monkeypatch.setattr(hardware, "probe_bf16", lambda device="cpu": (fp32, bf16))
    return set_rates


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


def test_the_real_probe_measures_both_dtypes():
    fp32, bf16 = hardware.probe_bf16("cpu")
    assert fp32 > 0 and bf16 > 0
    assert hardware.probe_bf16("cpu") == (fp32, bf16)  # measured once per process
    assert "CPU" in hardware.describe("cpu") and str(torch.get_num_threads()) in hardware.describe("cpu")


def test_load_auto_records_the_resolved_dtype_and_the_fingerprint_uses_it(measured):
    from conftest import tiny_profile

    from reproduce.models import load
    from reproduce.stages import _fingerprint

    measured(66.0, 1.7)
    lm = load("smollm2-135m", dtype="auto", device="cpu")
    assert lm.dtype == torch.float32 and lm.dtype_name == "float32"
    assert lm.dtype_choice.requested == "auto" and lm.dtype_choice.fp32_gflops == 66.0
    assert next(lm.model.parameters()).dtype == torch.float32
    assert _fingerprint("object_level", tiny_profile(dtype="auto"), lm)["dtype"] == "float32"
    measured(40.0, 145.0)
    lm = load("smollm2-135m", dtype="auto", device="cpu")
    assert next(lm.model.parameters()).dtype == torch.bfloat16
    assert _fingerprint("object_level", tiny_profile(dtype="auto"), lm)["dtype"] == "bfloat16"
