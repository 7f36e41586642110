"""The residual stream: reading it (concept vectors) and adding to it (concept injection).

**Where.** "The residual stream at layer ``l``" is the output of decoder block ``l`` (0-based), the hidden
state that block ``l + 1`` reads. Concept vectors are read there and injections are added there, so a vector
is injected into the same space it was measured in. A layer is chosen as a fraction of depth:
``layer = round(fraction * (n_layers - 1))`` (:func:`layer_at`), so 0 is the first block and 1 the last.

**Concept vector** (:func:`concept_vectors`): the residual at the last token of the rendered prompt
:data:`reproduce.injection.content.CONCEPT_PROMPT` (``"Say a few words about {word}."``; the chat template's
generation prompt included, the point where the model is about to answer), minus the mean of the same over the
baseline words. One vector per concept and layer.

**Scale.** An injection adds ``strength * v / |v| * n_l``, where ``n_l`` is the mean norm of the residual at
layer ``l`` over the baseline prompts' last tokens (:attr:`ConceptVectors.norms`). Strength is thus in units of
the typical residual norm at that layer, comparable across layers and models.

**Injection** (:class:`Steer`): a forward hook on block ``l`` adds each row's vector at the real-token
positions ``start <= p < end`` of that row (``end=None``: through every generated token). Positions are read
from the ``position_ids`` the engine passes to the model (real tokens only, padding excluded), so the rule
holds in the prompt pass, in shared-prefix passes and at every decoding step under the key-value cache: a
generated token at position ``p`` is injected when ``p >= start``. Which prompt each batch row belongs to is
set by the engine before each forward pass (:meth:`Steer.set_rows`); rows with no injection get nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from reproduce.errors import ProjectError
from reproduce.lm.models import LoadedModel

#: the attribute paths where Hugging Face causal LMs keep their decoder blocks
LAYER_PATHS = ("model.layers", "model.language_model.layers", "model.decoder.layers", "transformer.h",
               "gpt_neox.layers", "transformer.blocks", "language_model.model.layers")


class SteeringError(ProjectError, ValueError):
    """A model, layer or injection that the steering code cannot use, with what to do about it."""


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's list of decoder blocks, or a SteeringError naming what was looked for."""
    n = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    for path in LAYER_PATHS:
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, torch.nn.ModuleList) and len(obj) and (n is None or len(obj) == n):
            return obj
    raise SteeringError(
        f"{type(model).__name__} has no list of decoder blocks at any of {', '.join(LAYER_PATHS)}"
        f"{'' if n is None else f' with config.num_hidden_layers = {n}'}: concept injection needs a decoder-only "
        "transformer whose blocks each read and write the residual stream. Use a Hugging Face causal LM "
        "(Llama, Qwen, Gemma, Mistral, GPT-2/NeoX families ...).")


def check_fraction(fraction: object) -> float:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 <= float(fraction) <= 1.0:
        raise SteeringError(f"layer fraction {fraction!r} must be a number in [0, 1] (a fraction of depth: "
                            "0 = first block, 1 = last); e.g. injection.layer_fractions: [0.4, 0.6, 0.8]")
    return float(fraction)


def check_strength(strength: object) -> float:
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not math.isfinite(float(strength)) \
            or float(strength) < 0:
        raise SteeringError(f"injection strength {strength!r} must be a finite number >= 0 (in units of the "
                            "mean residual norm at the layer); e.g. injection.strengths: [1, 2, 4, 8]")
    return float(strength)


def layer_at(fraction: float, n_layers: int) -> int:
    """The decoder block at ``fraction`` of depth: ``round(fraction * (n_layers - 1))``."""
    return int(round(check_fraction(fraction) * (n_layers - 1)))


# ------------------------------------------------------------------------------------------ reading
def _hidden(output):
    return output[0] if isinstance(output, tuple) else output


def _encode(lm: LoadedModel, prompts: Sequence) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One batch of rendered prompts, left-padded, on the model's device: input ids, attention mask and position
    ids over real tokens."""
    enc = lm.tokenizer([lm.format.render(p) for p in prompts], add_special_tokens=lm.format.add_special_tokens,
                       return_tensors="pt", padding=True)
    mask = enc["attention_mask"].to(lm.device)
    return enc["input_ids"].to(lm.device), mask, (mask.long().cumsum(-1) - 1).clamp_min(0)


@torch.inference_mode()
def _block_outputs(lm: LoadedModel, prompts: Sequence, layers: Sequence[int], batch_size: int, reduce,
                   progress: str | None = None) -> torch.Tensor:
    """Block outputs at ``layers`` for every rendered prompt, reduced per prompt to one vector per layer:
    ``[prompts, layers, d]``, float32 on the CPU. Prompts are left-padded in batches with position ids over
    real tokens, so a row's numbers are those of its unpadded prompt; ``reduce(hidden, i, k, pad, n)`` gets the
    batch's ``[rows, tokens, d]`` output of one block and its row ``i``, which holds prompt ``k`` after ``pad``
    padding positions, ``n`` real tokens long."""
    from tqdm.auto import tqdm

    blocks = decoder_layers(lm.model)
    layers = list(layers)
    captured: dict[int, torch.Tensor] = {}
    hooks = [blocks[l].register_forward_hook(lambda m, a, o, l=l: captured.__setitem__(l, _hidden(o)))
             for l in layers]
    out = []
    try:
        for b in tqdm(range(0, len(prompts), batch_size), desc=progress, disable=progress is None, leave=False):
            ids, mask, pos = _encode(lm, prompts[b:b + batch_size])
            lm.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False, logits_to_keep=1)
            real = mask.sum(-1).tolist()
            out += [torch.stack([reduce(captured[l], i, b + i, mask.shape[1] - n, n).float().cpu() for l in layers])
                    for i, n in enumerate(real)]
    finally:
        for h in hooks:
            h.remove()
    return torch.stack(out)


def last_token_residuals(lm: LoadedModel, prompts: Sequence, layers: Sequence[int], batch_size: int = 32,
                         progress: str | None = None) -> torch.Tensor:
    """Residual stream (block outputs) at the last token of each rendered prompt: ``[prompts, layers, d]``."""
    return _block_outputs(lm, prompts, layers, batch_size, lambda h, i, k, pad, n: h[i, -1], progress)


def span_mean_residuals(lm: LoadedModel, prompts: Sequence, spans: Sequence[tuple[int, int]], layers: Sequence[int],
                        batch_size: int = 16) -> torch.Tensor:
    """Mean residual (block outputs) over the token positions ``spans[i] = (start, end)`` of each rendered
    prompt: ``[prompts, layers, d]``."""
    def mean(h, i, k, pad, n):
        s0, e0 = spans[k]
        if not 0 <= s0 < e0 <= n:
            raise SteeringError(f"span {s0}..{e0} is outside prompt {k}'s {n} tokens")
        return h[i, pad + s0:pad + e0].float().mean(0)

    return _block_outputs(lm, prompts, layers, batch_size, mean)


@dataclass(frozen=True)
class ConceptVectors:
    """Concept vectors of one model: ``vectors[c, k]`` for concept ``c`` at ``layers[k]``; ``norms[k]`` the mean
    residual norm there over the baseline prompts."""

    words: tuple[str, ...]
    layers: tuple[int, ...]
    vectors: torch.Tensor  # [concepts, layers, d], float32
    norms: torch.Tensor  # [layers]

    def index(self, word: str) -> int:
        try:
            return self.words.index(word)
        except ValueError:
            raise SteeringError(f"concept {word!r} is not in the concept list ({len(self.words)} words)") from None

    def layer_index(self, layer: int) -> int:
        try:
            return self.layers.index(layer)
        except ValueError:
            raise SteeringError(f"no concept vectors were computed at layer {layer} (have {self.layers})") from None

    def injection(self, word: str, layer: int, strength: float, sign: float = 1.0,
                  units: str = "residual_norm") -> torch.Tensor:
        """``sign * strength * unit(v) * n_l`` for concept ``word`` at ``layer`` (``units = "residual_norm"``), or
        ``sign * strength * v``, a multiple of the unnormalised concept vector as Lindsey (2025) and its
        replications scale it (``units = "raw"``)."""
        k = self.layer_index(layer)
        v = self.vectors[self.index(word), k]
        if units == "raw":
            return sign * check_strength(strength) * v
        return sign * check_strength(strength) * v / v.norm().clamp_min(1e-12) * self.norms[k]

    def random_injection(self, layer: int, strength: float, seed: int, units: str = "residual_norm") -> torch.Tensor:
        """A random direction (seeded Gaussian) with the same scale as a concept injection: ``strength`` mean
        residual norms, or (``units = "raw"``) ``strength`` times the mean norm of the concept vectors there."""
        k = self.layer_index(layer)
        g = torch.Generator().manual_seed(seed)
        v = torch.randn(self.vectors.shape[-1], generator=g)
        scale = self.vectors[:, k].norm(dim=-1).mean() if units == "raw" else self.norms[k]
        return check_strength(strength) * v / v.norm() * scale


def concept_vectors(lm: LoadedModel, words: Sequence[str], baselines: Sequence[str], template: str,
                    layers: Sequence[int], batch_size: int = 32, progress: str | None = None) -> ConceptVectors:
    """Concept vectors: the last-token residual of ``template.format(word=w)`` minus the baseline words' mean."""
    if not words or not baselines:
        raise SteeringError("concept vectors need at least one concept word and one baseline word")
    acts = last_token_residuals(lm, [template.format(word=w) for w in [*words, *baselines]], layers, batch_size,
                                progress)
    concept, base = acts[:len(words)], acts[len(words):]
    return ConceptVectors(tuple(words), tuple(int(l) for l in layers), concept - base.mean(0, keepdim=True),
                          base.norm(dim=-1).mean(0))


# ------------------------------------------------------------------------------------------ writing
#: the attribute paths where Hugging Face causal LMs keep the norm applied after the last decoder block
FINAL_NORM_PATHS = ("model.norm", "model.language_model.norm", "transformer.ln_f", "gpt_neox.final_layer_norm",
                    "model.decoder.final_layer_norm", "language_model.model.norm")


def final_norm(model: torch.nn.Module) -> torch.nn.Module:
    """The norm a causal LM applies to the last block's output before its output head."""
    for path in FINAL_NORM_PATHS:
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        return obj
    raise SteeringError(f"cannot find the final norm of {type(model).__name__} (looked at {', '.join(FINAL_NORM_PATHS)})")


@torch.inference_mode()
def last_position_readout(lm: LoadedModel, prompts: Sequence, token_ids: Sequence[int], layers: Sequence[int],
                          steer: "Steer | None" = None, batch_size: int = 16,
                          progress: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """At the last position of every rendered prompt: the model's own next-token log-probabilities of
    ``token_ids`` (``[prompts, tokens]``), and their logit lens at each block in ``layers``
    (``[prompts, layers, tokens]``): the block's output through the model's final norm and output head (and its
    final logit soft-cap, where it has one), log-softmax over the vocabulary. At the last block the lens is the
    model's own distribution. ``steer`` (entered by the caller, one injection or ``None`` per prompt) adds its
    injections by position, as in the engine's passes; the lens reads each block's output after them."""
    from tqdm.auto import tqdm

    blocks, layers, ids = decoder_layers(lm.model), list(layers), torch.tensor(list(token_ids))
    norm, head = final_norm(lm.model), lm.model.get_output_embeddings()
    cap = getattr(lm.model.config, "final_logit_softcapping", None) or getattr(
        getattr(lm.model.config, "text_config", None), "final_logit_softcapping", None)
    if lm.tokenizer.padding_side != "left":
        raise SteeringError("the last-position readout needs a left-padding tokenizer (as the engine sets)")
    last = len(blocks) - 1
    captured: dict[int, torch.Tensor] = {}
    hooks = [blocks[l].register_forward_hook(lambda m, a, o, l=l: captured.__setitem__(l, _hidden(o)[:, -1]))
             for l in layers]

    def logprobs(logits: torch.Tensor, capped: bool) -> torch.Tensor:
        logits = logits.float()
        if cap and not capped:  # the model's own logits come capped already; the lens's are the head's raw output
            logits = torch.tanh(logits / cap) * cap
        return torch.log_softmax(logits, dim=-1)[..., ids.to(logits.device)].cpu()

    own, lens = [], []
    try:
        for b in tqdm(range(0, len(prompts), batch_size), desc=progress, disable=progress is None, leave=False):
            batch = prompts[b:b + batch_size]
            ids_in, mask, pos = _encode(lm, batch)
            if steer is not None:
                steer.set_rows(range(b, b + len(batch)))
            out = lm.model(input_ids=ids_in, attention_mask=mask, position_ids=pos, use_cache=False, logits_to_keep=1)
            own.append(logprobs(out.logits[:, -1], capped=True))
            lens.append(torch.stack([logprobs(head(norm(captured[l])), capped=False) for l in layers], dim=1))
            if b == 0 and last in layers:
                # the lens at the last block must be the model's own distribution; a head this function does not
                # reproduce (another scaling of the logits) would make every read layer's numbers wrong
                gap = float((lens[-1][:, layers.index(last)] - own[-1]).abs().max())
                if gap > (1e-3 if lm.model.dtype == torch.float32 else 5e-2):
                    raise SteeringError(f"the logit lens of {lm.name} does not reproduce its own output at the last "
                                        f"block (largest difference {gap:.3g} in log-probability): its output head "
                                        "scales the logits in a way the lens does not know")
    finally:
        for h in hooks:
            h.remove()
        if steer is not None:
            steer.set_rows(None)
    return torch.cat(own).numpy(), torch.cat(lens).numpy()


@dataclass(frozen=True)
class Injection:
    """What one prompt gets: ``vector`` added to the output of block ``layer`` (``None``: the :class:`Steer`'s
    layer) at real-token positions ``start <= p < end`` (``end=None``: every later position, generated tokens
    included). ``key`` identifies the injection for prefix sharing: rows may share computed positions at or
    after ``start`` only when their keys (and layers) are equal."""

    vector: torch.Tensor
    start: int
    end: int | None = None
    key: Hashable = None
    layer: int | None = None

    def __post_init__(self):
        if self.start < 0 or (self.end is not None and self.end <= self.start):
            raise SteeringError(f"an injection needs 0 <= start < end; got start={self.start}, end={self.end}")


class Steer:
    """Injections into the blocks of ``lm``, one (or ``None``) per prompt of an engine call: each at its own
    ``Injection.layer``, or else at block ``layer`` (``None``: every injection names its own). Prompts steered
    at different blocks can so share one call (one decoding loop, the model's weights read once per step for
    all of them). Use as a context manager around :meth:`reproduce.lm.engine.Engine.generate` / ``score`` with
    ``steer=`` this object."""

    def __init__(self, lm: LoadedModel, layer: int | None, injections: Sequence[Injection | None]):
        blocks = decoder_layers(lm.model)
        self.lm, self.layer, self._blocks = lm, layer, blocks
        self.injections = list(injections)
        d = lm.model.config.hidden_size
        if layer is None and any(inj is not None and inj.layer is None for inj in self.injections):
            raise SteeringError("an injection without a layer of its own needs the Steer's layer: give "
                                "Steer(lm, layer, ...) a block index, or each Injection its layer=")
        for at in {self.layer_of(inj) for inj in self.injections if inj is not None} | (
                set() if layer is None else {layer}):
            if not 0 <= at < len(blocks):
                raise SteeringError(f"layer {at} is outside {lm.name}'s {len(blocks)} decoder blocks (0..{len(blocks) - 1})")
        for inj in self.injections:
            if inj is not None and tuple(inj.vector.shape) != (d,):
                raise SteeringError(f"an injection vector has shape {tuple(inj.vector.shape)}; {lm.name} needs ({d},)")
        self._rows: list[int] | None = None
        self._pos: torch.Tensor | None = None
        self._mask: torch.Tensor | None = None
        self._hooks: list = []
        self.calls = 0  # forward passes in which something was added

    # the engine's side
    def min_start(self) -> int | None:
        starts = [inj.start for inj in self.injections if inj is not None]
        return min(starts) if starts else None

    def layer_of(self, inj: Injection) -> int:
        return self.layer if inj.layer is None else inj.layer

    def planning_key(self, prompt: int) -> tuple[int, Hashable] | None:
        inj = self.injections[prompt]
        return None if inj is None else (inj.start, (self.layer_of(inj), inj.key if inj.key is not None else id(inj)))

    def set_rows(self, rows: Sequence[int] | None) -> None:
        """The prompt index of each row of the next forward pass (``None``: a pass that no injection reaches)."""
        self._rows = None if rows is None else list(rows)

    # the hooks
    def __enter__(self):
        layers = sorted({self.layer_of(inj) for inj in self.injections if inj is not None})
        self._hooks = [self.lm.model.register_forward_pre_hook(self._capture, with_kwargs=True)]
        self._hooks += [self._blocks[at].register_forward_hook(functools.partial(self._add, at)) for at in layers]
        return self

    def __exit__(self, *exc):
        for h in self._hooks:
            h.remove()
        self._hooks, self._rows = [], None

    def _capture(self, module, args, kwargs):
        self._pos, self._mask = kwargs.get("position_ids"), kwargs.get("attention_mask")

    def _add(self, layer, module, args, output):
        """Block ``layer``'s forward hook: adds the injections of the rows steered at that block."""
        if self._rows is None:
            return None
        if self._pos is None:
            raise SteeringError("the model was called without position_ids: injections are placed by position; "
                                "run steered inference through reproduce.lm.engine.Engine")
        hidden = _hidden(output)
        rows = [None if (i := self.injections[r]) is None or self.layer_of(i) != layer else i for r in self._rows]
        if len(rows) != hidden.shape[0]:
            raise SteeringError(f"steer rows ({len(rows)}) do not match the batch ({hidden.shape[0]})")
        if all(inj is None for inj in rows):
            return None
        dev, width = hidden.device, hidden.shape[1]
        pos = self._pos.to(dev)[:, -width:]
        real = torch.ones_like(pos, dtype=torch.bool) if self._mask is None else self._mask.to(dev)[:, -width:].bool()
        big = torch.iinfo(torch.long).max
        start = torch.tensor([big if i is None else i.start for i in rows], device=dev)
        end = torch.tensor([big if i is None or i.end is None else i.end for i in rows], device=dev)
        sel = real & (pos >= start[:, None]) & (pos < end[:, None])
        if not bool(sel.any()):
            return None
        vec = torch.stack([torch.zeros(hidden.shape[-1]) if i is None else i.vector.float().cpu() for i in rows])
        add = sel.unsqueeze(-1).to(torch.float32) * vec.to(dev).unsqueeze(1)
        new = (hidden.float() + add).to(hidden.dtype)
        self.calls += 1
        return (new, *output[1:]) if isinstance(output, tuple) else new


def token_span(lm: LoadedModel, rendered: str, char_start: int, char_end: int) -> tuple[int, int]:
    """The token positions ``[start, end)`` of ``rendered`` (as the engine tokenises it) that overlap the
    characters ``[char_start, char_end)``."""
    tok = lm.tokenizer
    enc = tok(rendered, add_special_tokens=lm.format.add_special_tokens, return_offsets_mapping=True)
    hits = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a < char_end and b > char_start]
    if not hits:
        raise SteeringError(f"no token of the rendered prompt covers characters {char_start}..{char_end}")
    return hits[0], hits[-1] + 1


def unit_rows(x: torch.Tensor) -> np.ndarray:
    return (x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)).numpy()
