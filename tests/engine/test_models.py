"""The model registry: offline resolution with clear errors, and the prompt format of each embedded model."""

import contextlib
import json

import pytest

from reproduce.lm.models import PLAIN_TEMPLATE, ModelError, resolve


@pytest.mark.parametrize("spec,match", [
    ("gpt-5", "unknown model 'gpt-5'.*embedded model"),
    ("nobody-org/no-such-model-7b", "not in the local Hugging Face cache.*never downloads"),
    ("/nonexistent/weights.gguf", "GGUF file .* not found"),
    ("", "empty model spec"),
])
def test_unresolvable_specs_fail_fast_with_advice(spec, match):
    with pytest.raises(ModelError, match=match):
        resolve(spec)


def test_a_relative_path_that_does_not_exist_is_named_as_a_path(tmp_path, monkeypatch):
    """`models/mine` where `models/` exists here reads as a path (an org/name id looks the same): the message
    names the folder it looked for, not only the Hugging Face cache; `./x` and `../x` are paths outright."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    with pytest.raises(ModelError, match="neither a local directory .*models/mine.* nor in the local Hugging Face cache"):
        resolve("models/mine")
    for spec in ("./mine", "../elsewhere/mine", "~/no-such-model-folder"):
        with pytest.raises(ModelError, match="local model directory .* does not exist"):
            resolve(spec)
    with pytest.raises(ModelError, match="not in the local Hugging Face cache.*never downloads"):
        resolve("nobody-org/no-such-model-7b")  # no folder nobody-org here: an id


def test_local_directory_without_config(tmp_path):
    with pytest.raises(ModelError, match="has no config.json"):
        resolve(str(tmp_path))


def test_weights_are_keyed_by_their_content_not_their_path(tmp_path, monkeypatch):
    """A local model directory or GGUF file keeps its fingerprint when copied elsewhere and gets a new one when
    a byte of a file changes at the same size and path; each digest is remembered in the cache by path, size
    and times, and a file that changed is read again."""
    import hashlib
    import os
    import shutil

    import reproduce.io as io

    monkeypatch.setenv("LOOKING_INWARD_CACHE", str(tmp_path / "cache"))
    a = tmp_path / "a"
    a.mkdir()
    (a / "config.json").write_text('{"model_type": "llama"}')
    weights = b"\x00" * 1000
    (a / "model.safetensors").write_bytes(weights)
    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b)
    fp = resolve(str(a)).fingerprint
    assert resolve(str(b)).fingerprint == fp
    stored = json.loads((tmp_path / "cache" / "digests.json").read_text())
    assert hashlib.sha256(weights).hexdigest() in stored.values()

    # another process finds the digests on disk and reads no weights
    monkeypatch.setattr(io, "_DIGESTS", {})
    with monkeypatch.context() as m:
        m.setattr(io, "sha256_file", lambda p: pytest.fail(f"{p} was read again"))
        assert resolve(str(a)).fingerprint == resolve(str(b)).fingerprint == fp

    # one byte changed in place, the size and the modification time set back as they were
    st = (b / "model.safetensors").stat()
    (b / "model.safetensors").write_bytes(b"\x00" * 999 + b"\x01")
    os.utime(b / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert resolve(str(b)).fingerprint != fp
    assert resolve(str(a)).fingerprint == fp
    (b / "model.safetensors").write_bytes(weights)
    assert resolve(str(b)).fingerprint == fp
    stored = json.loads((tmp_path / "cache" / "digests.json").read_text())
    assert sum(k.startswith(f"{(b / 'model.safetensors').resolve()}|") for k in stored) == 1  # earlier versions dropped

    g = tmp_path / "m.gguf"
    g.write_bytes(b"GGUF" + weights)
    (tmp_path / "copy").mkdir()
    shutil.copy(g, tmp_path / "copy" / "m.gguf")
    assert resolve(str(g)).fingerprint == resolve(str(tmp_path / "copy" / "m.gguf")).fingerprint != fp


def test_a_cache_that_cannot_be_written_still_keys_weights_by_content(tmp_path, monkeypatch, capsys):
    """Without a writable cache each file is hashed in the process, the keys are the same as with one, and the
    warning that names the fix comes once per process, not once per file."""
    import hashlib

    import reproduce.io as io

    monkeypatch.setenv("LOOKING_INWARD_CACHE", str(tmp_path / "cache"))
    a = tmp_path / "a"
    a.mkdir()
    (a / "config.json").write_text('{"model_type": "llama"}')
    (a / "model.safetensors").write_bytes(b"\x00" * 1000)
    writable = resolve(str(a)).fingerprint
    monkeypatch.setenv("LOOKING_INWARD_CACHE", str(tmp_path / "read-only"))  # holds no digest yet
    monkeypatch.setattr(io, "_DIGESTS", {})
    monkeypatch.setattr(io, "_UNWRITABLE", set(), raising=False)
    monkeypatch.setattr(io.os, "access", lambda path, mode: False)
    capsys.readouterr()
    assert resolve(str(a)).fingerprint == writable
    assert io.file_digest(a / "model.safetensors") == hashlib.sha256(b"\x00" * 1000).hexdigest()
    err = capsys.readouterr().err
    assert err.count("cannot keep file digests") == 1 and "LOOKING_INWARD_CACHE" in err



def test_embedded_specs_and_aliases_resolve_without_loading():
    ref = resolve("smollm2-135m")
    assert ref.kind == "embedded" and ref.path.suffix == ".gguf" and ref.name == "smollm2-135m"
    assert resolve("m1=smollm2-135m").name == "m1"


def test_smollm2_uses_its_chat_template(models):
    lm, _ = models["smollm2-135m"]
    text = lm.format.render("Name an animal.")
    assert lm.format.kind == "chat"
    assert text.startswith("<|im_start|>system\n")  # the template's own default system prompt is kept
    assert text.endswith("<|im_start|>user\nName an animal.<|im_end|>\n<|im_start|>assistant\n")
    assert lm.tokenizer.padding_side == "left"
    ids = lm.tokenizer(text, add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    assert ids[0] == lm.tokenizer.convert_tokens_to_ids("<|im_start|>")


def test_gemma_base_uses_the_plain_format_with_one_bos(models):
    lm, _ = models["gemma3-270m"]
    assert lm.format.kind == "plain"
    assert lm.format.render("Name an animal.") == PLAIN_TEMPLATE.format(prompt="Name an animal.")
    ids = lm.tokenizer(lm.format.render("x"), add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    assert ids[0] == lm.tokenizer.bos_token_id and ids.count(lm.tokenizer.bos_token_id) == 1


def test_system_prompt_can_be_set():
    from reproduce.lm.models import PromptFormat

    class Tok:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            return "|".join(f"{m['role']}:{m['content']}" for m in messages)

    assert PromptFormat("chat", Tok(), "Be brief.").render("hi") == "system:Be brief.|user:hi"


@pytest.mark.slow
def test_random_specs_build_real_shapes_seeded_with_an_embedded_tokenizer():
    import torch

    from reproduce.lm.engine import Engine
    from reproduce.lm.models import RANDOM_SHAPES, load

    ref = resolve("tiny=random:tiny")
    assert (ref.kind, ref.name) == ("random", "tiny")
    assert resolve("random:llama-8b").fingerprint != resolve("random:qwen2-7b").fingerprint
    a, b = load("random:tiny", dtype="float32", device="cpu"), load("random:tiny", dtype="float32", device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters()))
    cfg = a.model.config
    assert (cfg.hidden_size, cfg.num_hidden_layers) == (RANDOM_SHAPES["tiny"]["hidden_size"], 2)
    assert cfg.vocab_size >= len(a.tokenizer) and a.format.kind == "chat"  # SmolLM2's tokenizer and template
    out = Engine(a).generate(["Name an animal."], 3, options=[("true", "false")])
    assert out[0][0].n_new_tokens >= 1 and abs(sum(out[0][0].option_probs) - 1) < 1e-6


def test_random_spec_from_a_config_directory_and_bad_random_specs(tmp_path):
    import json

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 32,
                                                       "intermediate_size": 64, "num_hidden_layers": 1,
                                                       "num_attention_heads": 2, "vocab_size": 10}))
    ref = resolve(f"random:{tmp_path}")
    assert ref.kind == "random" and json.loads(ref.config)["hidden_size"] == 32
    with pytest.raises(ModelError, match="not one of"):
        resolve("random:llama-9000b")
    with pytest.raises(ModelError, match="tokenizer"):
        resolve(f"random:tiny@{tmp_path}")


def test_the_nutpie_sampler_without_nutpie_is_a_clear_error(monkeypatch):
    import importlib.util

    import analysis.self_prediction.hierarchical as M
    from reproduce.config import ConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nutpie" else real(name, *a))
    with pytest.raises(ConfigError, match=r"\[nutpie\]"):
        M.sample(None, M.SamplerSettings(sampler="nutpie"))


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["random:tiny", "smollm2-135m"])
def test_device_map_auto_loads_and_answers_as_the_plain_load(spec):
    """``device_map="auto"`` goes through accelerate's big-model path (random shapes: built, then dispatched);
    on a machine with no GPU every layer lands on the CPU and the answers are those of the plain load."""
    from reproduce.lm.engine import Engine
    from reproduce.lm.models import load

    plain = load(spec, dtype="float32", device="cpu")
    mapped = load(spec, dtype="float32", device="cpu", device_map="auto", max_memory={"cpu": "8GiB"})
    assert mapped.device.type == "cpu"
    prompts = ["Name a colour.", "What is 2 + 2?", "Pick A or B: A) yes B) no"]
    options = [None, None, ("A", "B")]
    a = Engine(plain, 2).generate(prompts, 6, options=options)
    b = Engine(mapped, 2).generate(prompts, 6, options=options)
    assert [g[0].response for g in a] == [g[0].response for g in b]
    assert b[2][0].option_probs == pytest.approx(a[2][0].option_probs, abs=1e-6)
    with pytest.raises(Exception, match="device_map 'balanced' is not supported"):
        load(spec, dtype="float32", device="cpu", device_map="balanced")


@pytest.mark.slow
def test_gguf_conversion_parses_once_and_writes_the_same_bytes(tmp_path, monkeypatch):
    """The shared GGUF parse of a conversion changes no byte of what it writes, and transformers' three
    parses of the file (configuration, tokenizer, weights) become one."""
    import gguf

    import reproduce.lm.models as models

    built = []
    original = gguf.GGUFReader

    class Counting(original):
        def __init__(self, *args, **kwargs):
            built.append(args[0])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", Counting)
    ref = resolve("smollm2-135m")
    out = {}
    for label, shared in (("shared", True), ("plain", False)):
        monkeypatch.setenv("LOOKING_INWARD_CACHE", str(tmp_path / label))
        if not shared:
            monkeypatch.setattr(models, "_one_gguf_parse", contextlib.nullcontext)
        built.clear()
        out[label] = (models._convert_gguf(ref), len(built))
    (shared_dir, shared_parses), (plain_dir, plain_parses) = out["shared"], out["plain"]
    assert shared_parses == 1 and plain_parses >= 2
    files = sorted(p.name for p in shared_dir.iterdir())
    assert files == sorted(p.name for p in plain_dir.iterdir()) and "model.safetensors" in files
    for name in files:
        assert (shared_dir / name).read_bytes() == (plain_dir / name).read_bytes(), name


@pytest.mark.slow
def test_a_damaged_gguf_stops_a_stage_before_any_model_is_loaded(tmp_path, monkeypatch):
    """A truncated copy of an embedded model, listed second: the plan refuses it before the first model's stage
    work begins (one line naming the file and the fix)."""
    import reproduce.stage as stage_kit
    from reproduce.lm.models import ModelError, resolve
    from reproduce.lm.weights import check_gguf
    from reproduce.self_prediction.runs import Plan

    from conftest import tiny_profile

    good = resolve("smollm2-135m").path
    check_gguf(good)  # the real file passes
    data = good.read_bytes()
    for cut, match in ((len(data) - 1000, "its tensors need"), (4096, "inside its header"), (3, "bytes")):
        bad = tmp_path / f"cut{cut}.gguf"
        bad.write_bytes(data[:cut])
        with pytest.raises(ModelError, match=match):
            check_gguf(bad)
    (tmp_path / "notgguf.gguf").write_bytes(b"PK\x03\x04" + data[4:4096])
    with pytest.raises(ModelError, match="does not start with"):
        check_gguf(tmp_path / "notgguf.gguf")
    monkeypatch.setattr(stage_kit, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(ModelError, match=r"cut\d+.gguf is not a complete GGUF file"):
        Plan(tiny_profile(models=["smollm2-135m", f"broken={tmp_path / f'cut{len(data) - 1000}.gguf'}"]))
