"""``looking-inward plan``: parameter counts from the architecture alone, token counts from the profile's
prompts, a memory model that orders settings as they must be, and a clear stop when a model cannot fit."""

import subprocess
import sys

import pytest
import torch
from conftest import tiny_profile

from reproduce.config import REPO_ROOT
from reproduce.lm.models import resolve
from reproduce.lm.memory_plan import BYTES, GIB, PlanError, check, estimate, shape_of, training_bytes, workloads
from reproduce.self_prediction import Plan
from reproduce.stage import StagePlan


@pytest.mark.slow  # simulation or benchmark: seconds to half a minute
def test_the_shape_of_a_published_architecture_is_exact_without_weights():
    s = shape_of(resolve("random:llama-8b"))
    assert s.params == 8_030_261_248  # Llama-3-8B's published parameter count
    assert (s.layers, s.hidden, s.intermediate, s.kv_width, s.vocab) == (32, 4096, 14336, 1024, 128256)
    # LoRA on every linear layer but the output head: q, k, v, o, gate, up, down per layer
    assert s.lora_per_rank == 32 * ((4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3)


def test_the_memory_model_orders_the_training_settings():
    s = shape_of(resolve("random:llama-8b"))
    gib = {(b, c): training_bytes(s, b, 32, 16 * 137, 16, c) / GIB
           for b in ("bfloat16", "float32") for c in (True, False)}
    assert gib[("bfloat16", True)] < gib[("bfloat16", False)] < gib[("float32", False)]
    assert gib[("bfloat16", True)] < gib[("float32", True)] < gib[("float32", False)]
    assert 15 < gib[("bfloat16", True)] < 22  # 16 GB of bf16 weights and little else


def test_workloads_count_the_profiles_prompts():
    plan = Plan(tiny_profile())
    w = workloads(plan, plan.refs[0])
    p = plan.profile
    n_obj = sum(len(plan.items(t)) for t in plan.tasks.values())
    n_cal = sum(min(p.sampling.items_per_task, len(plan.items(t))) for t in plan.test_tasks())
    assert w["object_level"]["prompts"] == n_obj + n_cal * p.sampling.n_samples
    assert w["meta"]["prompts"] == sum(len(plan.items(t)) * len(plan.properties[t.name]) for t in plan.test_tasks())
    assert w["meta"]["longest"] > 10 and w["meta"]["tokens"] >= w["meta"]["longest"]


@pytest.mark.slow
def test_a_model_that_cannot_fit_is_a_clear_error_naming_it():
    rows = estimate(Plan(tiny_profile()), "cpu")
    assert {r["model"] for r in rows} == {"smollm2-135m", "gemma3-270m"}
    check(rows, 64.0, "a test device")  # fits
    with pytest.raises(PlanError, match="gemma3-270m needs about .* GiB .*lower batch_size"):
        check(rows, 0.5, "a test device")


@pytest.mark.slowest
def test_plan_command_exits_2_when_the_profile_cannot_fit(monkeypatch, capsys):
    out = subprocess.run([sys.executable, "-m", "looking_inward", "plan", "--profile", "smoke", "--device", "cpu",
                          "--memory-gib", "0.05"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert out.returncode == 2 and "cannot fit the stated cpu memory (0.1 GiB)" in out.stderr
    assert "Traceback" not in out.stderr
    # the case that fits, in this process: its time estimate (timed probes, tests/test_estimate.py) stood in for
    import reproduce.time_estimate as time_estimate
    from looking_inward.cli import main

    monkeypatch.setattr(time_estimate, "time_estimate_text", lambda profile, device: "(time estimate)")
    assert main(["plan", "--profile", "smoke", "--device", "cpu", "--memory-gib", "64"]) == 0
    ok = capsys.readouterr().out
    assert "LoRA training" in ok and "fits the stated cpu memory" in ok and ok.rstrip().endswith("(time estimate)")


@pytest.mark.slow
def test_every_gpu_stage_checks_the_plan_before_loading(monkeypatch):
    """On a GPU each model stage runs the plan first: a model that cannot fit stops it with the fix."""
    import reproduce.lm.memory_plan as plan_module
    from reproduce.lm.memory_plan import fits_device

    plan = Plan(tiny_profile())
    assert fits_device(plan, "cuda", memory_gib=64) == []
    with pytest.raises(PlanError, match="cannot fit the stated cuda memory"):
        fits_device(plan, "cuda", memory_gib=0.2)
    # the stage's own entry point calls it when the device is a GPU (and not on a CPU)
    import reproduce.stage as stages

    calls = []
    monkeypatch.setattr(plan_module, "fits_device", lambda p: calls.append(p) or [])
    monkeypatch.setattr(stages, "pick_device", lambda d: torch.device("cuda"))
    monkeypatch.setattr(stages, "setup_torch", lambda profile: None)
    stages.setup_stage(plan)
    monkeypatch.setattr(stages, "pick_device", lambda d: torch.device("cpu"))
    stages.setup_stage(plan)
    assert calls == [plan]


@pytest.mark.slow
def test_the_plan_of_a_stage_without_task_datasets_checks_the_weights(monkeypatch, tmp_path):
    """The concept-injection and mirror stages plan without tasks (``StagePlan``): each model gets a row
    per experiment the profile sets, at the longest sequence bounded from above, or its weights alone when it sets
    neither; a model that cannot fit still stops the stage."""
    from reproduce.config import Injection, Mirror
    from reproduce.mirror.experiment import messages
    from reproduce.mirror.data import load_mirror_dataset
    from reproduce.lm.memory_plan import fits_device, format_rows, inference_bytes, load_tokenizer

    plan = StagePlan(tiny_profile())
    rows = estimate(plan, "cuda")
    assert [r["model"] for r in rows] == ["smollm2-135m", "gemma3-270m"]
    assert all(r["stages"] == "weights (no task prompts)" and r["prompts"] == 0 for r in rows)
    gemma = shape_of(plan.refs[1]).params
    assert rows[1]["peak_gib"] == pytest.approx(1.10 * gemma * BYTES[rows[1]["dtype"]] / GIB)  # with the margin
    assert fits_device(plan, "cuda", memory_gib=64) == []
    with pytest.raises(PlanError, match="gemma3-270m needs about .* GiB for weights"):
        fits_device(plan, "cuda", memory_gib=0.4)

    # the stages' own bounds, as the command line sets them (and each stage before its memory check)
    from looking_inward.cli import _experiments_plan

    mirror = Mirror(scripts=2, kinds=["insertion"], levels=[0.3], turns=[2, 3], max_new_tokens=40)
    plan = _experiments_plan(tiny_profile(mirror=mirror, injection=Injection(concepts=4)))
    rows = {(r["model"], r["stages"]): r for r in estimate(plan, "cuda")}
    assert set(rows) == {(m, s) for m in ("smollm2-135m", "gemma3-270m")
                         for s in ("concept injection", "mirror conversations")}
    m = rows[("smollm2-135m", "mirror conversations")]
    # control, one corrupted cell, the other model's replies; 2 scripts x 2 turns x (reply, recognition),
    # plus the paired question in both orders for each of the two altered conditions
    assert m["prompts"] == 3 * 2 * 2 * 2 + 2 * 2 * 2 * 2 and m["new"] == 40
    # by hand: the longest script's conversation to turn 3 with two replies of 40 tokens, then its longer last turn
    lm_tok = load_tokenizer(plan.refs[0])
    data = load_mirror_dataset()
    lengths = []
    for sc in data.scripts[:2]:
        for last in (None, data.prompts["recognition_question"]):
            text = lm_tok.apply_chat_template(messages(sc["turns"], ["", ""], 3, last), tokenize=False,
                                              add_generation_prompt=True)
            lengths.append(len(lm_tok(text, add_special_tokens=False)["input_ids"]) + 2 * 40)
        # the paired question: both versions of the two earlier turns, each of their replies at 40 tokens
        speaker, reply = data.prompts["pair_speakers"]
        history = "\n".join(f"{speaker}: {u}\n{reply}: " for u in sc["turns"][:2])
        question = data.prompts["pair_question"].format(first=history, second=history)
        text = lm_tok.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                          add_generation_prompt=True)
        lengths.append(len(lm_tok(text, add_special_tokens=False)["input_ids"]) + 2 * 2 * 40)
    assert m["longest"] == max(lengths)
    s = shape_of(plan.refs[0])
    assert m["peak_gib"] == pytest.approx(inference_bytes(s, m["dtype"], m["rows"], m["longest"], 40) / GIB)
    inj = rows[("gemma3-270m", "concept injection")]
    assert inj["longest"] > 100 and inj["new"] == plan.profile.injection.free_text.max_new_tokens
    # a batch of long conversations does not fit where the weights alone would
    weights = 1.10 * shape_of(plan.refs[1]).params * BYTES[inj["dtype"]] / GIB
    assert inj["peak_gib"] > 1.5 * weights
    with pytest.raises(PlanError, match="for (concept injection|mirror conversations)"):
        fits_device(plan, "cuda", memory_gib=1.2 * weights)
    assert "mirror conversations" in format_rows(list(rows.values()))
    # each stage sets the same bound before its memory check
    import reproduce.stage as stages
    from reproduce.injection.experiment import run_concept_injection
    from reproduce.mirror.experiment import run_mirror

    class Stop(Exception):
        pass

    seen = {}

    def setup(p):
        seen.update(p.bounds)
        raise Stop

    monkeypatch.setattr(stages, "setup_stage", setup)
    for stage in (run_mirror, run_concept_injection):
        with pytest.raises(Stop):
            stage(StagePlan(plan.profile), tmp_path / "out", tmp_path / "work")
    again = StagePlan(plan.profile)
    again.bounds.update(seen)
    assert set(seen) == {"mirror", "injection"} and estimate(again, "cuda") == estimate(plan, "cuda")
