"""Trained runs from one loaded base: the in-place LoRA merge equals peft's, the base comes back bit for bit,
bad adapters are clear errors, and finetuning leaves the shared base untouched."""

import copy
import json

import pytest
import torch

from reproduce.lm.adapters import AdapterError, BaseModels, merged, read_lora
from reproduce.lm.models import load, resolve


@pytest.fixture(scope="module")
def tiny():
    return load("random:tiny", dtype="float32", device="cpu")


def _adapter(model, path, seed: int, rank: int = 4, alpha: float = 8.0, **kw):
    """A LoRA adapter with random (non-zero) A and B on every linear layer of a copy of ``model``."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    cfg = LoraConfig(r=rank, lora_alpha=alpha, target_modules="all-linear", init_lora_weights=False, **kw)
    peft_model = get_peft_model(copy.deepcopy(model), cfg)
    for name, p in peft_model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.05)
    peft_model.save_pretrained(path)
    return path


def _peft_merged(model, adapters):
    from peft import PeftModel

    m = copy.deepcopy(model)
    for a in adapters:
        m = PeftModel.from_pretrained(m, a).merge_and_unload()
    return m


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"use_rslora": True}])
def test_the_merge_equals_peft_and_the_base_comes_back_exactly(tiny, tmp_path, kw):
    a = _adapter(tiny.model, tmp_path / "a", seed=1, **kw)
    b = _adapter(tiny.model, tmp_path / "b", seed=2, rank=2, alpha=3.0)
    before = _state(tiny.model)
    modules = {n: type(m) for n, m in tiny.model.named_modules()}
    for adapters in ([a], [a, b]):
        reference = _peft_merged(tiny.model, adapters).state_dict()
        with merged(tiny.model, adapters) as m:
            got = m.state_dict()
            changed = [k for k in got if not torch.equal(got[k], before[k])]
            assert len(changed) == len(read_lora(a)[1])  # every adapted layer, and nothing else
            for k, v in reference.items():
                torch.testing.assert_close(got[k], v, rtol=0, atol=1e-6)
        after = tiny.model.state_dict()
        assert all(torch.equal(after[k], before[k]) for k in before)  # bit for bit
    assert {n: type(m) for n, m in tiny.model.named_modules()} == modules  # the module tree never changed


@pytest.mark.slow
def test_merged_logits_equal_the_unmerged_lora_forward(tiny, tmp_path):
    from peft import PeftModel

    a = _adapter(tiny.model, tmp_path / "a", seed=3)
    ids = torch.tensor([[1, 5, 9, 14, 2, 7]])
    with torch.no_grad():
        lora = PeftModel.from_pretrained(copy.deepcopy(tiny.model), a)(input_ids=ids).logits
        base = tiny.model(input_ids=ids).logits
        with merged(tiny.model, [a]):
            got = tiny.model(input_ids=ids).logits
    assert not torch.allclose(base, lora, atol=1e-4)  # the adapter does something
    torch.testing.assert_close(got, lora, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_an_error_inside_the_block_still_restores_the_base(tiny, tmp_path):
    a = _adapter(tiny.model, tmp_path / "a", seed=4)
    before = _state(tiny.model)
    with pytest.raises(RuntimeError, match="boom"):
        with merged(tiny.model, [a]):
            raise RuntimeError("boom")
    assert all(torch.equal(tiny.model.state_dict()[k], v) for k, v in before.items())


@pytest.mark.slow
def test_bad_adapters_are_clear_errors_and_leave_the_base_as_it_was(tiny, tmp_path):
    before = _state(tiny.model)
    with pytest.raises(AdapterError, match="not a LoRA adapter folder"):
        with merged(tiny.model, [tmp_path / "missing"]):
            pass
    # an adapter of another size: the first adapter's layers are merged, then the second fails; all restored
    good = _adapter(tiny.model, tmp_path / "good", seed=5)
    other = load("random:tiny", dtype="float32", device="cpu").model
    other.model.layers[0].mlp.down_proj = torch.nn.Linear(256, 64, bias=False)
    other.model.layers[0].mlp.up_proj = torch.nn.Linear(64, 256, bias=False)
    other.model.layers[0].mlp.gate_proj = torch.nn.Linear(64, 256, bias=False)
    wrong = _adapter(other, tmp_path / "wrong", seed=6)
    with pytest.raises(AdapterError, match="another model size"):
        with merged(tiny.model, [good, wrong]):
            pass
    assert all(torch.equal(tiny.model.state_dict()[k], v) for k, v in before.items())
    cfg = json.loads((good / "adapter_config.json").read_text())
    (tmp_path / "dora").mkdir()
    (tmp_path / "dora" / "adapter_config.json").write_text(json.dumps({**cfg, "use_dora": True}))
    (tmp_path / "dora" / "adapter_model.safetensors").write_bytes((good / "adapter_model.safetensors").read_bytes())
    with pytest.raises(AdapterError, match="only plain LoRA"):
        read_lora(tmp_path / "dora")


@pytest.mark.slow
def test_one_base_serves_every_run_and_names_each(tmp_path):
    ref = resolve("random:tiny")
    with BaseModels("cpu") as bases:
        base = bases.get(ref, "float32")
        assert bases.get(ref, "float32") is base
        a = _adapter(base.model, tmp_path / "a", seed=7)
        with bases.trained(ref, [a], "tiny+a", "fp-a", "float32") as lm:
            assert lm.model is base.model and lm.name == "tiny+a"
            assert lm.ref.fingerprint != base.ref.fingerprint
        with bases.trained(ref, [a], "tiny+a", "fp-b", "float32") as lm2:
            assert lm2.ref.fingerprint != lm.ref.fingerprint  # the run's fingerprint is in the name's
        bases.drop(ref.name)
        assert bases.get(ref, "float32") is not base


@pytest.mark.slow
def test_a_run_after_another_sees_only_its_own_adapters(tmp_path):
    """The base's original weights are kept once and copied back after every run: run b after run a has
    exactly the weights of b merged into the untouched base, whatever ran before."""
    ref = resolve("random:tiny")
    with BaseModels("cpu") as bases:
        base = bases.get(ref, "float32")
        before = _state(base.model)
        a = _adapter(base.model, tmp_path / "a", seed=8)
        b = _adapter(base.model, tmp_path / "b", seed=9, rank=2)
        expected_b = _peft_merged(base.model, [b]).state_dict()
        for _ in range(2):
            with bases.trained(ref, [a], "a", "a", "float32"):
                pass
            with bases.trained(ref, [b], "b", "b", "float32") as lm:
                for k, v in expected_b.items():
                    torch.testing.assert_close(lm.model.state_dict()[k], v, rtol=0, atol=1e-6)
        assert all(torch.equal(base.model.state_dict()[k], v) for k, v in before.items())


def test_a_saved_adapter_names_the_model_spec_not_this_machines_cache(tiny, tmp_path):
    """peft writes the base model's local folder into the adapter's config and model card; the finetuning
    stage names the spec instead, so the same run in another cache folder gives the same bytes."""
    from reproduce.lm.finetune import portable_adapter

    model = copy.deepcopy(tiny.model)  # the module's model keeps its own name
    digests = []
    for cache in ("/one/cache/models/smollm2-135m-abc", "/another/place/models/smollm2-135m-abc"):
        model.config._name_or_path = model.name_or_path = cache  # as a model loaded from that folder has them
        folder = _adapter(model, tmp_path / cache.split("/")[1], seed=0)
        assert f"base_model:adapter:{cache}" in (folder / "README.md").read_text()  # what peft writes
        portable_adapter(folder, "smollm2-135m")
        cfg = json.loads((folder / "adapter_config.json").read_text())
        assert cfg["base_model_name_or_path"] == "smollm2-135m"
        card = (folder / "README.md").read_text()
        assert cache not in card and "base_model: smollm2-135m\n" in card and "base_model:adapter:smollm2-135m" in card
        digests.append({n: (folder / n).read_bytes() for n in ("adapter_config.json", "README.md")})
    assert digests[0] == digests[1]
    read_lora(folder)  # still a LoRA adapter folder the stages read
