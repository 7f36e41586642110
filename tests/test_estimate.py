"""``looking-inward plan``'s time estimate: the reference run's stage times, scaled by the measured matmul rate
(injected here), only for stages whose settings equal the reference's."""

import json

import pytest

import reproduce.time_estimate as estimate_module
from reproduce.config import load_params
from reproduce.time_estimate import (NOT_RUN, TRAINING_SHARE, EstimateError, REFERENCE, build_reference, estimate,
                                format_estimate, measure_workload, REFERENCE_BF16, load_reference, run_hardware,
                                stage_params, threads_of)

HW = "CPU Test [avx2,fma], kernels AVX2, 2 threads (torch 2.13.0+cpu)"


def _reference(gflops=100.0, workload=None):
    _, profile = load_params(profile="default")
    stages = stage_params()
    timings = {"stages": {s.replace("_", "-"): {"seconds": 60.0 * (i + 1), "hardware": HW,
                                                "finished": f"2026-01-01T00:{i:02d}:00+00:00"}
                          for i, s in enumerate(stages) if s not in NOT_RUN}}
    return build_reference(timings, profile, "default", run_hardware(timings, stages), (gflops, 2.0), "float32",
                           "abc", workload=workload), profile


def _probe(inference, training, host, dtype="float32", mixed_precision="no"):
    return {"inference": inference, "training": training, "host": host, "dtype": dtype,
            "mixed_precision": mixed_precision}


def _by_stage(rows):
    return {r.stage: r for r in rows}


def test_model_stages_scale_by_the_matmul_rate_and_the_others_keep_their_time():
    ref, profile = _reference(gflops=100.0)
    rows = _by_stage(estimate(profile, ref, rate_here=40.0))  # a CPU 2.5x slower
    ol = ref["stages"]["object-level"]["seconds"]
    assert rows["object_level"].seconds == pytest.approx(ol * 2.5) and rows["object_level"].scaled
    an = ref["stages"]["analysis"]["seconds"]
    assert rows["analysis"].seconds == pytest.approx(an) and not rows["analysis"].scaled
    faster = _by_stage(estimate(profile, ref, rate_here=200.0))
    assert faster["finetune_self"].seconds == pytest.approx(ref["stages"]["finetune-self"]["seconds"] / 2)
    assert "datasets" not in rows  # committed, not timed


def test_with_workload_probes_each_stage_scales_by_its_kind_of_work():
    ref, profile = _reference(gflops=100.0, workload=_probe(1.0, 2.0, 0.5))
    here = _probe(3.0, 2.0, 1.0, dtype="bfloat16", mixed_precision="bf16")  # the dtypes may differ
    rows = _by_stage(estimate(profile, ref, rate_here=1000.0, workload_here=here))  # the matmul rate is not used
    seconds = {s: v["seconds"] for s, v in ref["stages"].items()}
    assert rows["object_level"].seconds == pytest.approx(3 * seconds["object-level"])  # inference
    assert rows["finetune_self"].seconds == pytest.approx(seconds["finetune-self"])  # training
    assert TRAINING_SHARE["behaviour_change"] == 0.5
    assert rows["behaviour_change"].seconds == pytest.approx(2 * seconds["behaviour-change"])  # half of each
    assert rows["analysis"].seconds == pytest.approx(2 * seconds["analysis"])  # host
    assert all(r.basis == "workload" for r in rows.values())
    text = format_estimate(list(rows.values()), ref, "here")
    assert "workload probe: inference 1.00 s (float32)" in text and "not scaled" not in text
    # an older reference without the probe: the matmul rule, whatever is measured here
    old, _ = _reference(gflops=100.0)
    rows = _by_stage(estimate(profile, old, rate_here=50.0, workload_here=here))
    assert rows["object_level"].basis == "matmul" and rows["analysis"].basis == ""
    assert rows["object_level"].seconds == pytest.approx(2 * seconds["object-level"])


@pytest.mark.slow  # simulation or benchmark: seconds to half a minute
def test_the_workload_probe_times_each_part_at_the_dtype_asked(monkeypatch):
    monkeypatch.setattr(estimate_module, "PROBE_MODEL", dict(estimate_module.PROBE_MODEL, num_hidden_layers=1,
                                                              vocab_size=512))
    for dtype, mixed in (("float32", "no"), ("bfloat16", "bf16")):
        probe = measure_workload(dtype, mixed, rounds=1)
        assert probe["dtype"] == dtype and probe["mixed_precision"] == mixed
        assert all(probe[k] > 0 for k in ("inference", "training", "host"))


def test_a_changed_setting_withdraws_the_estimate_of_the_stages_that_read_it_only():
    ref, profile = _reference()
    smaller = profile.model_copy(update={"injection": profile.injection.model_copy(update={"concepts": 10})})
    rows = _by_stage(estimate(smaller, ref, rate_here=100.0))
    assert rows["concept_injection"].seconds is None and "injection" in rows["concept_injection"].why
    assert rows["object_level"].seconds is not None and rows["mirror"].seconds is not None
    # a stage without a model reads its inputs' sizes through its data, so any change withdraws it
    assert rows["injection_analysis"].seconds is None and rows["analysis"].seconds is None
    text = format_estimate(list(rows.values()), ref, "here")
    assert "settings differ: injection" in text and "stages with an estimate" in text


def test_how_a_stage_runs_does_not_withdraw_the_estimate():
    ref, profile = _reference()
    other = profile.model_copy(update={"threads": 8, "seed": 3, "dtype": "float32", "device": "cpu"})
    assert all(r.seconds is not None for r in estimate(other, ref, rate_here=100.0))


def test_no_estimate_on_a_gpu_or_without_a_rate():
    ref, profile = _reference()
    assert all(r.seconds is None and "CPU run" in r.why for r in estimate(profile, ref, 100.0, device="cuda"))
    rows = _by_stage(estimate(profile, ref, rate_here=None))
    assert rows["meta_trained"].seconds is None and rows["analysis"].seconds is not None


def test_a_reference_needs_a_whole_run_on_one_machine():
    stages = stage_params()
    timed = {s.replace("_", "-"): {"seconds": 1.0, "hardware": HW, "finished": "2026-01-01T00:00:00+00:00"}
             for s in stages if s not in NOT_RUN}
    partial = {k: v for k, v in timed.items() if k != "mirror"}
    with pytest.raises(EstimateError, match="no time for mirror"):
        run_hardware({"stages": partial}, stages)
    mixed = dict(timed, mirror=dict(timed["mirror"], hardware=HW.replace("2 threads", "4 threads")))
    with pytest.raises(EstimateError, match="different hardware"):
        run_hardware({"stages": mixed}, stages)
    assert threads_of(HW) == 2
    with pytest.raises(EstimateError, match="no thread count"):
        threads_of("GPU H100")


@pytest.mark.parametrize("path,dtype", [(REFERENCE, "float32"), (REFERENCE_BF16, "bfloat16")])
def test_the_committed_reference_is_a_whole_run_of_the_default_profile_as_it_is_now(path, dtype):
    """Changing profiles/default.yaml's sizes makes the references stale: measure new ones (`dvc repro` from
    scratch, then `looking-inward timings --save-reference reproduce/reference_run.json`, or
    `reference_run_bf16.json` after a run on a CPU with native bf16)."""
    ref = load_reference(path)
    assert ref is not None and ref["profile"] == "default" and ref["dtype"] == dtype
    _, profile = load_params(profile="default")
    rows = estimate(profile, ref, rate_here=ref["gflops"], workload_here=ref.get("workload"))
    assert {r.stage for r in rows} == set(stage_params()) - set(NOT_RUN)
    assert all(r.seconds == pytest.approx(r.reference_seconds) for r in rows)
    assert json.loads(path.read_text())["gflops"] > 0
    probe = ref.get("workload")
    assert probe is None or (probe["dtype"] == dtype and min(probe[k] for k in ("inference", "training", "host")) > 0)


def test_plan_prints_the_estimate_at_this_machines_rate(monkeypatch):
    import reproduce.hardware as hardware

    ref, profile = _reference(gflops=100.0)
    bf = dict(ref, dtype="bfloat16", gflops=400.0, hardware=HW.replace("avx2,fma", "avx2,avx512_bf16,fma"),
              stages={s: {"seconds": v["seconds"] / 2} for s, v in ref["stages"].items()})
    monkeypatch.setattr(estimate_module, "load_references", lambda: [ref, bf])
    profile = profile.model_copy(update={"dtype": "float32"})
    monkeypatch.setattr(hardware, "native_bf16", lambda: (None, "flags unknown"))  # the timed probe decides
    monkeypatch.setattr(hardware, "probe_bf16", lambda device="cpu": (50.0, 1.0))  # half as fast
    text = estimate_module.time_estimate_text(profile, "cpu")
    assert "scaled from the reference run: profile default" in text
    total = sum(v["seconds"] for v in ref["stages"].values())
    model = sum(ref["stages"][s.replace("_", "-")]["seconds"] for s, p in stage_params().items()
                if s not in NOT_RUN and "dtype" in p)
    assert f"{(total + model) / 60:7.1f} min" in text.splitlines()[-2]  # model stages twice as long
    # a machine that would run bf16 is scaled from the bf16 reference run, at its bf16 rate
    monkeypatch.setattr(hardware, "probe_bf16", lambda device="cpu": (100.0, 400.0))
    text = estimate_module.time_estimate_text(profile.model_copy(update={"dtype": "auto"}), "cpu")
    assert "bfloat16 matmul" in text and bf["hardware"] in text
    assert f"{total / 2 / 60:7.1f} min" in text.splitlines()[-2]
    # without a reference at its dtype, it gets the float32 estimate, labelled so
    monkeypatch.setattr(estimate_module, "load_references", lambda: [ref])
    text = estimate_module.time_estimate_text(profile.model_copy(update={"dtype": "auto"}), "cpu")
    assert text.startswith("no time estimate at this machine's dtype (bfloat16") and "dtype: float32" in text
    assert estimate_module.time_estimate_text(profile, "cuda").startswith("no time estimate for cuda")
    # a reference with the workload probe is scaled by the probe, run here at this machine's own dtype
    probed = dict(ref, workload=_probe(1.0, 1.0, 1.0))
    monkeypatch.setattr(estimate_module, "load_references", lambda: [probed])
    asked = []
    monkeypatch.setattr(estimate_module, "workload_here",
                        lambda p, dtype, readings=None: asked.append(dtype) or _probe(3.0, 3.0, 3.0, dtype))
    text = estimate_module.time_estimate_text(profile.model_copy(update={"dtype": "auto"}), "cpu")
    assert asked == ["bfloat16"] and "workload probe: inference 3.00 s (bfloat16)" in text
    assert f"{3 * total / 60:7.1f} min" in next(line for line in text.splitlines() if line.startswith("total"))


def test_plan_reports_the_probes_spread_and_warns_when_the_machine_is_busy():
    """A noisy probe (one reading twice the others, as when another process takes the core for a moment) or a
    load average of another running process makes `plan` say the machine looks busy; steady readings on an idle
    machine make it say nothing."""
    from reproduce.time_estimate import busy_warning, readings_text, spread

    steady = {"inference": [0.40, 0.41, 0.40, 0.42, 0.40], "training": [1.0, 1.01, 1.0, 1.02, 1.0],
              "host": [0.11] * 15}
    assert max(spread(steady).values()) < 0.05
    assert busy_warning(steady, load=0.1, cpus=2) == ""
    noisy = {**steady, "host": [0.11] * 5 + [0.21] * 10}  # the VM's slow spells: the median at twice the best
    w = busy_warning(noisy, load=0.1, cpus=2)
    assert w.startswith("warning: this machine looks busy") and "spread 91% above their best" in w
    w = busy_warning(steady, load=1.9, cpus=2)
    assert "load average 1.9 over the last minute on 2 CPUs" in w and "spread" not in w
    assert busy_warning(steady, load=None, cpus=2) == ""  # no load average on this platform: the spread alone
    assert readings_text(steady).startswith("probe readings (best / median of each part): inference 0.40 / 0.40 s")


def test_the_plan_probe_keeps_every_reading(monkeypatch):
    import reproduce.time_estimate as te

    calls = iter([0.0, 1.0, 1.0, 3.0])  # perf_counter: a 1-second then a 2-second reading
    monkeypatch.setattr(te.time, "perf_counter", lambda: next(calls))
    got: list = []
    assert te._best_seconds(lambda: None, 2, got) == 1.0 and got == [1.0, 2.0]
