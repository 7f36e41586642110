"""Trained predictors from one loaded base model: LoRA adapters merged in place and taken out again exactly.

Every trained run of a stage is the same base model plus one or two LoRA adapters. Loading a fresh base
per run (and merging into a second copy) holds two models at the peak and reads the weights from disk
once or twice a run. Here one base stays loaded for the whole stage (:class:`BaseModels`); a run's adapters
are added into the weights of the layers they touch (:func:`merged`), and on leaving, those layers get
back their original weights, bit for bit, from a copy kept in host memory. The module tree is never
changed (peft's LoRA layers are not injected), so a merged model runs at the base model's speed.

The merge is peft's: for each adapted linear layer ``W += scaling * B @ A`` with ``scaling = lora_alpha /
r`` (``lora_alpha / sqrt(r)`` under rsLoRA), computed in float32 and rounded once to the weight's dtype;
adapters apply in order, each onto the weights the previous one left. Only what this package trains is
accepted (LoRA on linear layers, no DoRA, no bias, no ``modules_to_save``); anything else is a clear error
rather than a silently partial merge.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch

from reproduce.errors import ProjectError
from reproduce.io import short_hash


class AdapterError(ProjectError, ValueError):
    """An adapter folder that cannot be merged into the model it is meant for."""


_PREFIX = "base_model.model."


def read_lora(adapter: str | Path) -> tuple[dict, dict[str, tuple[torch.Tensor, torch.Tensor]]]:
    """``(config, {module path: (A, B)})`` of a peft LoRA adapter folder."""
    from safetensors.torch import load_file

    adapter = Path(adapter)
    cfg_file, weights = adapter / "adapter_config.json", adapter / "adapter_model.safetensors"
    if not cfg_file.exists() or not weights.exists():
        raise AdapterError(f"{adapter} is not a LoRA adapter folder (adapter_config.json and "
                           "adapter_model.safetensors expected); re-run the finetuning stage that writes it")
    cfg = json.loads(cfg_file.read_text())
    unsupported = [k for k in ("use_dora", "modules_to_save", "layer_replication", "trainable_token_indices")
                   if cfg.get(k)]
    if cfg.get("peft_type", "LORA") != "LORA" or unsupported or cfg.get("bias", "none") != "none" or cfg.get("lora_bias"):
        raise AdapterError(f"{adapter}: only plain LoRA adapters (no DoRA, bias or extra trained modules) can be "
                           f"merged here; this one has {unsupported or cfg.get('peft_type')}")
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, t in load_file(weights).items():
        body = key.removeprefix(_PREFIX)
        for part in ("lora_A", "lora_B"):
            suffix = f".{part}.weight"
            if body.endswith(suffix):
                pairs.setdefault(body.removesuffix(suffix), {})[part] = t
                break
        else:
            raise AdapterError(f"{adapter}: unexpected tensor {key!r} in a LoRA adapter")
    broken = [m for m, p in pairs.items() if set(p) != {"lora_A", "lora_B"}]
    if broken:
        raise AdapterError(f"{adapter}: modules {broken[:3]} lack lora_A or lora_B")
    return cfg, {m: (p["lora_A"], p["lora_B"]) for m, p in sorted(pairs.items())}


def _scaling(cfg: dict, module: str) -> float:
    """peft's ``lora_alpha / r`` for ``module`` (per-module ``rank_pattern``/``alpha_pattern`` honoured)."""
    def pattern(name: str, default):
        for key, value in (cfg.get(name) or {}).items():
            if module == key or module.endswith("." + key):
                return value
        return default
    r = pattern("rank_pattern", cfg["r"])
    alpha = pattern("alpha_pattern", cfg["lora_alpha"])
    return alpha / math.sqrt(r) if cfg.get("use_rslora") else alpha / r


@contextmanager
def merged(model: torch.nn.Module, adapters: Sequence[str | Path],
           originals: dict[str, torch.Tensor] | None = None) -> Iterator[torch.nn.Module]:
    """``model`` with ``adapters`` merged into its weights, in order, for the duration of the block.

    The original weights of every touched layer are kept on the CPU and copied back on exit (also when
    the block raises), so the model leaves exactly as it came in. ``originals``, when given, keeps those
    copies between calls (they are the same base weights every time), so a run after the first only copies
    back; on a GPU they sit in pinned memory, which copies fastest."""
    saved: dict[str, torch.Tensor] = {} if originals is None else originals
    touched: set[str] = set()
    try:
        for adapter in adapters:
            cfg, lora = read_lora(adapter)
            for path, (a, b) in lora.items():
                try:
                    layer = model.get_submodule(path)
                except AttributeError:
                    raise AdapterError(f"{adapter}: the model has no module {path!r}; was this adapter trained on "
                                       "another architecture?") from None
                w = getattr(layer, "weight", None)
                expect = (b.shape[0], a.shape[1]) if not cfg.get("fan_in_fan_out") else (a.shape[1], b.shape[0])
                if w is None or tuple(w.shape) != expect:
                    raise AdapterError(f"{adapter}: {path} has weight shape {None if w is None else tuple(w.shape)}, "
                                       f"the adapter expects {expect}; was it trained on another model size?")
                if path not in saved:
                    host = torch.empty(w.shape, dtype=w.dtype, device="cpu", pin_memory=w.is_cuda)
                    saved[path] = host.copy_(w.detach())
                touched.add(path)
                delta = b.to(w.device, torch.float32) @ a.to(w.device, torch.float32)
                if cfg.get("fan_in_fan_out"):
                    delta = delta.T
                with torch.no_grad():
                    w.copy_((w.float() + _scaling(cfg, path) * delta).to(w.dtype))
                del delta
        yield model
    finally:
        with torch.no_grad():
            for path in touched:
                model.get_submodule(path).weight.copy_(saved[path], non_blocking=True)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        if originals is None:
            saved.clear()


def release_memory() -> None:
    """Give freed tensors back: Python's garbage, and the CUDA allocator's cache."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class BaseModels:
    """The base models a stage needs, each loaded once (per dtype) and shared by all its trained runs.

    ``get(ref, dtype)`` loads on first use; ``trained(ref, adapters, name, fingerprint)`` yields a
    :class:`~reproduce.lm.models.LoadedModel` that names the trained run (so its shards never mix with the
    base's) with the adapters merged in, and restores the base on exit. ``close()`` (or the ``with``
    block) frees everything."""

    def __init__(self, device: str = "auto", system_prompt: str | None = None):
        self.device, self.system_prompt = device, system_prompt
        self._loaded: dict[tuple, object] = {}
        self._originals: dict[tuple, dict[str, torch.Tensor]] = {}

    def get(self, ref, dtype: str, device_map: str | None = None, max_memory: dict | None = None):
        """``ref`` loaded at ``dtype`` (``auto`` resolved first, so ``auto`` and the dtype it picks share one
        copy), spread over devices with ``device_map="auto"``."""
        from reproduce.lm.models import load

        key = self._key(ref, dtype, device_map)
        if key not in self._loaded:
            self._loaded[key] = load(ref, dtype=dtype, device=self.device, system_prompt=self.system_prompt,
                                     device_map=device_map, max_memory=max_memory)
        return self._loaded[key]

    @contextmanager
    def trained(self, ref, adapters: Sequence[str | Path], name: str, fingerprint: str, dtype: str,
                device_map: str | None = None, max_memory: dict | None = None):
        """The base of ``ref`` at ``dtype`` with ``adapters`` merged, renamed ``name``; its fingerprint combines
        the base's, the run's ``fingerprint`` and the code of the merge."""
        from reproduce.versioning import code_version

        base = self.get(ref, dtype, device_map, max_memory)
        fp = short_hash(f"{base.ref.fingerprint}:{fingerprint}:{code_version(__name__)}")
        with merged(base.model, adapters, self._originals.setdefault(self._key(ref, dtype, device_map), {})):
            yield replace(base, ref=replace(base.ref, name=name, fingerprint=fp))

    def _key(self, ref, dtype: str, device_map: str | None) -> tuple:
        """One loaded copy per model, resolved dtype and device map (``auto`` and the dtype it picks share)."""
        from reproduce.hardware import resolve_dtype
        from reproduce.lm.models import pick_device

        resolved = resolve_dtype(dtype, pick_device(self.device)).dtype if dtype == "auto" else dtype
        return ref.name, resolved, device_map

    def drop(self, name: str) -> None:
        """Free every loaded copy of the model named ``name``."""
        for key in [k for k in self._loaded if k[0] == name]:
            del self._loaded[key]
            self._originals.pop(key, None)
        release_memory()

    def close(self) -> None:
        self._loaded.clear()
        self._originals.clear()
        release_memory()

    def __enter__(self) -> "BaseModels":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
