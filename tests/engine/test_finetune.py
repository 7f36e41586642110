"""Finetuning: training data without leakage, identical data for self- and cross-predictors, a tiny real
finetune that learns its pairs, resume after an interruption, and clear errors for bad parameters."""

import json

import pandas as pd
import pytest
import torch
from pydantic import ValidationError

from conftest import simulate_edit
import reproduce.lm.finetune as ft
import reproduce.self_prediction.training_pairs as training_pairs
from reproduce.lm.adapters import merged
from reproduce.config import Finetune
from reproduce.self_prediction.task_data import load_task
from reproduce.lm.models import load
from reproduce.self_prediction.properties import get_property

TASKS = {n: load_task(n) for n in ("colors", "numbers", "animals")}


def fake_objects(model: str, word: str) -> pd.DataFrame:
    """An object-level table in the stage's shape: ``model`` always answers with ``word`` (+ a number)."""
    rows = []
    for name, task in TASKS.items():
        for it in task.items[:5]:
            response = f"{word} 17" if task.family == "word_sequence" else "42"
            for p in task.manifest["properties"]:
                v = get_property(p).extract(response, it)
                rows.append(dict(model=model, task=name, split=task.split, family=task.family,
                                 item_id=it["item_id"], property=p, value=v, compliant=v is not None))
    return pd.DataFrame(rows)


OBJECTS = pd.concat([fake_objects("m1", "amber"), fake_objects("m2", "ochre")], ignore_index=True)


def cfg(**kw) -> Finetune:
    base = dict(lora_rank=8, lora_alpha=16, learning_rate=2e-3, epochs=3, batch_size=4, mixed_precision="no",
                checkpoint_every=2, max_length=256)
    return Finetune(**{**base, **kw})


def test_examples_come_from_train_tasks_and_the_targets_own_answers():
    ex = training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0)
    assert set(ex["task"]) == {"colors", "numbers"}  # animals is a test task: never trained on
    assert (ex["target"] == "m1").all()
    assert not ex["answer"].isin(["ochre", "o"]).any()  # nothing of the other model's behaviour
    assert set(ex.loc[ex.property == "first_word", "answer"]) == {"amber"}
    for row in ex.itertuples():
        item = next(it for it in TASKS[row.task].items if it["item_id"] == row.item_id)
        assert row.prompt == item["hypothetical_prompts"][row.property]
    # non-compliant rows (third_word of "amber 17") are not training pairs
    assert "third_word" not in set(ex["property"])


def test_self_and_cross_predictors_of_a_target_get_identical_examples():
    a = training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=3, max_examples=20)
    b = training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=3, max_examples=20)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=4, max_examples=20))


def test_the_originals_construction_draws_a_fixed_number_per_task_and_property():
    """finetune.examples_per_cell: at most n compliant pairs from each train task x property (seeded), as the
    original's create_finetuning_dataset samples each config; unset, every compliant pair is a candidate."""
    full = OBJECTS[(OBJECTS.model == "m1") & (OBJECTS.split == "train") & OBJECTS.compliant].groupby(
        ["task", "property"]).size()
    assert len(training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0)) == full.sum()
    picked = training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0, per_cell=2)
    counts = picked.groupby(["task", "property"]).size()
    assert counts.index.equals(full.index) and (counts == full.clip(upper=2)).all()  # every cell, at most 2
    assert (picked["target"] == "m1").all() and len(picked) == full.clip(upper=2).sum()
    pd.testing.assert_frame_equal(picked, training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0, per_cell=2))
    assert not picked.equals(training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=1, per_cell=2))
    # the shuffle still mixes the cells (not grouped by task), and max_examples caps after the draw
    assert picked["task"].tolist() != sorted(picked["task"].tolist())
    assert len(training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0, max_examples=3, per_cell=2)) == 3


@pytest.mark.parametrize("limit", [dict(per_cell=0), dict(max_examples=0), dict(per_cell=-2)])
def test_a_limit_below_one_pair_is_a_clear_error_not_an_empty_table(limit):
    with pytest.raises(ft.TrainingError, match="at least 1 pair"):
        training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0, **limit)


def test_no_compliant_training_data_is_a_clear_error():
    empty = OBJECTS.assign(compliant=False)
    with pytest.raises(ft.TrainingError, match="no compliant object-level answers on the train tasks"):
        training_pairs.training_examples(empty, TASKS, "m1", seed=0)


@pytest.mark.parametrize("bad", [dict(lora_rank=0), dict(learning_rate=0), dict(batch_size=0), dict(epochs=-1),
                                 dict(mixed_precision="fp8"), dict(checkpoint_every=0)])
def test_bad_training_parameters_are_rejected(bad):
    with pytest.raises(ValidationError):
        cfg(**bad)


def _loss(lm, examples) -> float:
    enc = ft.encode(lm, examples, 256)
    batch = ft.collate(list(zip(enc.prompt_ids, enc.answer_ids)), lm.tokenizer.pad_token_id)
    with torch.no_grad():
        return float(ft.answer_loss(lm.model, batch))


@pytest.fixture(scope="module")
def examples():
    return training_pairs.training_examples(OBJECTS, TASKS, "m1", seed=0, max_examples=12)


@pytest.mark.slow
def test_too_long_examples_are_a_clear_error(examples):
    lm = load("smollm2-135m", dtype="float32", device="cpu")
    with pytest.raises(ft.TrainingError, match="exceed finetune.max_length=16"):
        ft.encode(lm, examples, 16)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_a_tiny_finetune_lowers_the_loss_on_its_training_pairs(spec, examples, tmp_path):
    lm = load(spec, dtype="float32", device="cpu")
    before, weights = _loss(lm, examples), {k: v.clone() for k, v in lm.model.state_dict().items()}
    modules = {n: type(m) for n, m in lm.model.named_modules()}
    summary = ft.finetune(lm, examples, cfg(), tmp_path, seed=0)
    # the base is handed back untouched (the LoRA layers taken out), so one loaded base serves every run
    assert {n: type(m) for n, m in lm.model.named_modules()} == modules and not lm.model.training
    assert all(torch.equal(v, weights[k]) for k, v in lm.model.state_dict().items())
    # the same weights give the same loss up to float32 rounding: MKL's products may round differently when their
    # buffers sit at other addresses (seen on a Xeon: 7.3202748 against 7.3202763); a LoRA layer left in place
    # would move it by far more (the adapter halves it, below)
    assert _loss(lm, examples) == pytest.approx(before, rel=1e-5)
    with merged(lm.model, [tmp_path / "adapter"]):
        after = _loss(lm, examples)
    assert after < 0.5 * before, (before, after)
    assert summary["steps"] == 9 and (tmp_path / "adapter" / "adapter_config.json").exists()
    log = pd.read_csv(tmp_path / "train_log.tsv", sep="\t")
    assert list(log["step"]) == list(range(1, 10)) and not (tmp_path / ".checkpoint").exists()


@pytest.mark.slow
def test_an_interrupted_finetune_resumes_to_the_same_result(examples, tmp_path, monkeypatch):
    full = ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(), tmp_path / "a", seed=0)

    real, calls = ft.answer_loss, {"n": 0}

    def dies_at_step_6(model, batch, *args):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt("killed")
        return real(model, batch, *args)

    monkeypatch.setattr(ft, "answer_loss", dies_at_step_6)
    with pytest.raises(KeyboardInterrupt):
        ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(), tmp_path / "b", seed=0)
    state = torch.load(tmp_path / "b" / ".checkpoint" / "state.pt", weights_only=False)
    assert state["step"] == 4 and not (tmp_path / "b" / "summary.json").exists()
    monkeypatch.setattr(ft, "answer_loss", real)
    resumed = ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(), tmp_path / "b", seed=0)
    assert resumed["steps"] == full["steps"]
    a = pd.read_csv(tmp_path / "a" / "train_log.tsv", sep="\t")
    b = pd.read_csv(tmp_path / "b" / "train_log.tsv", sep="\t")
    assert list(b["step"]) == list(a["step"])  # no step lost or repeated
    assert b["loss"].tolist() == pytest.approx(a["loss"].tolist(), rel=1e-4)
    # a finished run is not redone
    again = ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(), tmp_path / "b", seed=0)
    assert again == json.loads((tmp_path / "b" / "summary.json").read_text())


def _counting_loss(monkeypatch) -> dict:
    real, calls = ft.answer_loss, {"n": 0}

    def counted(model, batch, *args):
        calls["n"] += 1
        return real(model, batch, *args)

    monkeypatch.setattr(ft, "answer_loss", counted)
    return calls


@pytest.mark.slow
def test_a_finished_run_is_reused_when_only_other_runs_or_checkpoints_change(examples, tmp_path, monkeypatch):
    """Adding a scaling size, checkpointing more often, a larger example cap or a longer length limit does not
    change what this run computes: the finished run is returned without a training step."""
    calls = _counting_loss(monkeypatch)
    first = ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(epochs=1), tmp_path, seed=0)
    assert calls["n"] == first["steps"] == 3
    for changed in (dict(scaling_sizes=[4, 8]), dict(checkpoint_every=1), dict(max_examples=500),
                    dict(max_length=300)):
        again = ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(epochs=1, **changed),
                            tmp_path, seed=0)
        assert again == first and calls["n"] == 3, changed


@pytest.mark.slow
def test_a_change_to_the_training_code_or_parameters_retrains(examples, tmp_path, monkeypatch):
    """The fingerprint carries the source of reproduce.lm.finetune, of the prompt rendering (reproduce.lm.formats)
    and of model loading (reproduce.lm.models): an edit to any of them (simulated by another code version of that
    module) retrains, as do another seed, learning rate or example set."""
    lm = load("smollm2-135m", dtype="float32", device="cpu")
    base = ft.fingerprint(lm, examples, cfg(epochs=1), 0)
    real_version = ft.code_version
    for module in ("reproduce.lm.finetune", "reproduce.lm.formats", "reproduce.lm.models"):
        simulate_edit(monkeypatch, ft, module)
        assert ft.fingerprint(lm, examples, cfg(epochs=1), 0) != base, module
    monkeypatch.setattr(ft, "code_version", real_version)
    assert ft.fingerprint(lm, examples, cfg(epochs=1), 0) == base
    assert base != ft.fingerprint(lm, examples, cfg(epochs=1), 1)
    assert base != ft.fingerprint(lm, examples, cfg(epochs=1, learning_rate=1e-3), 0)
    assert base != ft.fingerprint(lm, examples.head(8), cfg(epochs=1), 0)
    assert base != ft.fingerprint(lm, examples, cfg(epochs=1, mixed_precision="bf16"), 0)

    calls = _counting_loss(monkeypatch)
    first = ft.finetune(lm, examples, cfg(epochs=1), tmp_path, seed=0)
    assert calls["n"] == 3
    simulate_edit(monkeypatch, ft, "reproduce.lm.finetune")
    second = ft.finetune(load("smollm2-135m", dtype="float32", device="cpu"), examples, cfg(epochs=1), tmp_path,
                         seed=0)
    assert calls["n"] == 6 and second["fingerprint"] != first["fingerprint"]
    assert json.loads((tmp_path / "summary.json").read_text())["fingerprint"] == second["fingerprint"]


@pytest.mark.slow
def test_gradient_checkpointing_trains_the_same_adapter_and_is_switched_off_after(examples, tmp_path):
    """Checkpointing recomputes the same operations: the same losses, within float tolerance, and it leaves
    the base as it found it. On a CPU ``auto`` keeps it off and the base in float32."""
    from reproduce.hardware import resolve_base_dtype, resolve_gradient_checkpointing

    assert resolve_base_dtype("auto", "cpu") == "float32" and not resolve_gradient_checkpointing("auto", "cpu")
    lm = load("random:tiny", dtype="float32", device="cpu")
    plain = ft.finetune(lm, examples, cfg(epochs=1), tmp_path / "a", seed=0)
    ckpt = ft.finetune(lm, examples, cfg(epochs=1, gradient_checkpointing=True), tmp_path / "b", seed=0)
    assert ckpt["gradient_checkpointing"] and not plain["gradient_checkpointing"]
    assert ckpt["fingerprint"] == plain["fingerprint"]  # memory, not the adapter
    a = pd.read_csv(tmp_path / "a" / "train_log.tsv", sep="\t")["loss"]
    b = pd.read_csv(tmp_path / "b" / "train_log.tsv", sep="\t")["loss"]
    assert b.tolist() == pytest.approx(a.tolist(), rel=1e-5)
    assert not getattr(lm.model, "is_activation_checkpointing", getattr(lm.model, "is_gradient_checkpointing", None))


def test_the_shared_prefix_step_computes_the_loss_and_gradient_of_each_row_alone(examples):
    """Training computes the prompt prefix a step's rows share once (collate_step): its loss and gradient are
    those of computing every row alone, unpadded, within float32 rounding; and it computes fewer positions."""
    lm = load("random:tiny", dtype="float32", device="cpu")
    enc = ft.encode(lm, examples, 256)
    rows = list(zip(enc.prompt_ids, enc.answer_ids))[:6]
    pad = lm.tokenizer.pad_token_id
    torch.manual_seed(0)
    model = ft._lora(lm, cfg())
    try:
        params = [q for q in model.parameters() if q.requires_grad]
        with torch.no_grad():
            for n, q in model.named_parameters():
                if "lora_B" in n:
                    q.normal_(0, 0.05)

        def loss_and_grad(batches):
            loss = sum(ft.answer_loss(model, b, "sum") for b in batches)
            loss.backward()
            g = torch.cat([q.grad.flatten() for q in params])
            for q in params:
                q.grad = None
            return float(loss.detach()), g

        step = ft.collate_step(rows, pad)
        assert step["prefix_ids"].shape[1] >= ft.MIN_SHARED_PREFIX
        assert step["prefix_ids"].numel() + step["input_ids"].numel() < ft.collate(rows, pad)["input_ids"].numel()
        alone_loss, alone = loss_and_grad([ft.collate([r], pad) for r in rows])
        shared_loss, shared = loss_and_grad([step])
        assert shared_loss == pytest.approx(alone_loss, rel=1e-5)
        assert float((shared - alone).norm() / alone.norm()) < 1e-4
        # no shared prefix asked for: the plain layout, the same loss
        plain = ft.collate_step(rows, pad, share_prefix=False)
        assert plain["prefix_ids"].numel() == 0
        assert loss_and_grad([plain])[0] == pytest.approx(alone_loss, rel=1e-5)
    finally:
        model.unload()


TRAIN_TWICE = """
import sys
import pandas as pd
import reproduce.lm.finetune as ft
from reproduce.config import Finetune
from reproduce.lm.models import load

examples = pd.DataFrame({"target": "m", "task": "t", "item_id": [f"i{k}" for k in range(8)], "property": "p",
                         "prompt": [f"Say the number {k}." for k in range(8)], "answer": [str(k) for k in range(8)]})
cfg = Finetune(lora_rank=4, lora_alpha=8, learning_rate=2e-3, epochs=1, batch_size=4, mixed_precision="no",
               checkpoint_every=1, max_length=64)
ft.finetune(load("random:tiny", dtype="float32", device="cpu"), examples, cfg, sys.argv[1], seed=0)
"""


@pytest.mark.slow
def test_training_twice_gives_byte_identical_adapter_folders(tmp_path):
    """Two processes with different string hashing (peft keeps target_modules as a set): the same finetune writes
    the same bytes, every file of the run folder."""
    import os
    import subprocess
    import sys

    folders = []
    for seed in ("1", "2"):
        out = tmp_path / f"run{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"}
        subprocess.run([sys.executable, "-c", TRAIN_TWICE, str(out)], env=env, check=True, capture_output=True,
                       timeout=600)
        folders.append({p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert folders[0].keys() == folders[1].keys() and any(k.endswith("adapter_config.json") for k in folders[0])
    assert [k for k in folders[0] if folders[0][k] != folders[1][k]] == []
