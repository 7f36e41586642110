"""Batched inference: greedy generation, seeded sampling, and option distributions.

The prompt's forward pass dominates on a CPU, so the engine computes every shared prompt prefix once:

- Prompts are rendered with the model's :class:`~reproduce.lm.formats.PromptFormat` and tokenised once. Each
  row (a prompt, or one of its ``n`` samples) is laid out as ``[call prefix | group prefix | suffix]``.
- Call prefix: the tokens every prompt of a call begins with (the chat template's system turn, the task's
  instructions, the meta level's "Previously, you were asked ..."), computed once per call.
- Group prefix: after the call prefix, rows that share a longer prefix form a group whose prefix is computed
  once per batch: the seven hypothetical prompts of one item differ only in their last sentence, and the ``n``
  samples of one prompt share all of it (so sampling prefills each prompt once, whatever ``n``). Groups are
  chosen over the rows sorted by token ids (:func:`plan_groups`), to maximise the prompt tokens saved.
- Suffix: each row's own tokens. Padding sits in the middle of a row (before the group prefix and before the
  suffix), masked out, with position ids counted over real tokens only, so a row's numbers are those of its
  unpadded prompt. ``share_prefix=False`` recomputes every row in full (the reference path).
- Chunks (CPU): a padded position costs a CPU as much as a real one, and the rows of one batch differ in length
  (the meta level's property questions run from a few words to two sentences). So on a CPU each pass (group
  prefixes, then suffixes) runs in chunks of rows of similar length (:func:`plan_chunks`), and the chunks'
  caches are joined, front-padded, into one cache for decoding (:func:`merge_rows`). Attention does not
  depend on where a masked position sits, so the numbers are those of one padded pass. Caches other than plain
  key-value layers, and sliding windows the row would reach, keep one pass.
- Decoding is a loop of its own over the key-value cache: greedy (argmax), or sampling by inverse CDF
  (:func:`inverse_cdf`) with one uniform per row and step from a generator seeded by (seed, prompt, sample
  index), so a prompt's samples do not depend on which other prompts share its batch. Rows that have stopped
  are dropped from the batch.
- On a CPU, sampling decodes on a split cache (:mod:`reproduce.lm.split_cache`) where it serves (float32 or bfloat16, plain
  key-value layers, SDPA attention): the ``n`` samples of a prompt share every prompt token but the last, so
  their group's prompt cache is held once and each row's last prompt token and decoded tokens go to a small
  cache of their own, instead of ``n`` copies of the prompt that every step copies again as it grows. The
  numbers are those of one cache per row to float32 rounding (in bfloat16, to bfloat16 rounding). Greedy calls, whose rows have several tokens of their own
  (the meta level's questions), decode on one cache (``split_decode=False`` turns the split off everywhere).
  On a GPU both the split cache and the blocked draw (:func:`inverse_cdf`) cost time: each adds small kernels
  to a decoding step, which at these batch sizes is bound by kernel launches, not arithmetic. On an H200
  (random-weights Llama-3.1-8B shape, bf16, batch 64, ``bench_inference.py --split``) calibration sampling
  took 1.38 s on the split cache with the blocked draw, 1.07 s on one cache with it, and 0.86 s on one cache
  with the whole vocabulary's cumulative sum (:func:`full_cdf`). So on a GPU the engine decodes on one cache
  and draws with :func:`full_cdf`; both draws give the same token for the same uniform.
- Special tokens other than EOS are suppressed (a base model can otherwise loop on tokens such as
  ``<start_of_image>``).
- A response ends at EOS, at the first newline token that follows a token with content, or at its
  ``max_new_tokens``; every task asks for a one-line answer. The newline cut is applied to the decoded text,
  so a row's response does not depend on when the rest of its batch stopped.
- Option distributions describe the same token as the scored answer. The meta value is parsed from the
  greedy string with surrounding quotes and punctuation stripped (:mod:`reproduce.self_prediction.properties`), so for an
  answer ``"b"`` it is the ``b``, not the opening quote. The option mass is therefore read at the first
  decoding step whose greedy token carries content: tokens that decode to nothing but whitespace, quotes,
  brackets, asterisks, backticks or underscores (:func:`is_opening`) are skipped. At that step the raw
  next-token logits (conditioned on the prompt and the greedy tokens before it, exactly what the greedy answer
  saw) give, for each option, the summed probability of its single-token surface forms (``b``, ``B``,
  `` b``, `` B`` ...). Probabilities are normalised over the options; the mass on every other token is
  returned as ``p_outside``. This is exact, with no sampling. ``Generation.option_position`` names the step
  used; when no content token is generated (EOS or the token limit first) the first step is used and the
  position is -1. Alternative not taken: scoring each option's full surface string by teacher forcing, which
  costs one forward pass per option instead of none beyond the greedy decode.

:attr:`Engine.stats` counts the prompt tokens a full recomputation would compute, those actually computed,
and the decoding work, for the benchmark's roofline figure.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import time
import weakref
from collections.abc import Sequence
from types import SimpleNamespace
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

import reproduce.lm.split_cache as split_cache
from reproduce.lm.models import LoadedModel, ModelError

#: part of every shard fingerprint: results of another engine version are never mixed with these
ENGINE_VERSION = "7"


#: characters a model may open an answer with before its content: whitespace, quotes, brackets, emphasis
OPENING_CHARS = frozenset(" \t\r\n\"'`*_([{<\u00ab\u2039\u201c\u201d\u201e\u2018\u2019\u201a")


def is_opening(text: str) -> bool:
    """Whether a decoded token is only opening punctuation or whitespace (no content of its own): the option
    distribution is read after such tokens, at the first one that carries the answer."""
    return all(c in OPENING_CHARS for c in text)


@dataclass(frozen=True)
class Generation:
    """One generated answer. For a greedy prompt asked for its options, ``option_probs`` and ``p_outside``
    come from the next-token distribution at the first generated position whose token carries content (an
    opening quote, space or bracket is skipped), so they describe the token the scored answer is parsed
    from. ``option_position`` is that position's index among the generated tokens, or -1 when no content
    token was generated and the first position was used instead."""

    response: str  # stripped, cut at the first newline after content
    raw: str  # everything decoded, special tokens removed
    n_new_tokens: int
    finish: str  # eos | newline | length
    option_probs: tuple[float, ...] | None = None  # normalised over the options
    p_outside: float | None = None  # mass on tokens that are none of the options, at the same position
    option_position: int | None = None  # generated position the distribution is read at; -1: fallback to 0


def cut_response(text: str) -> tuple[str, bool]:
    """Strip, and cut at the first newline after non-whitespace content. Returns (response, was_cut)."""
    stripped = text.lstrip()
    cut = stripped.find("\n")
    if cut == -1:
        return stripped.strip(), False
    return stripped[:cut].strip(), True


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts, stable across processes and platforms (unlike ``hash``)."""
    h = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") & ((1 << 63) - 1)


def inverse_cdf(logits: torch.Tensor, u: torch.Tensor, block: int = 4096) -> torch.Tensor:
    """One token per row of ``logits`` (``[rows, vocab]``, float32, ``-inf`` where excluded) by inverse CDF
    with the uniforms ``u`` (``[rows]``, float64 in [0, 1)): the first token whose cumulative weight exceeds
    ``u`` times the total, the weights ``exp(logits - max)`` (the softmax before its normalisation, which the
    threshold carries instead).

    The vocabulary is cut into blocks of ``block`` tokens: the block comes from the cumulative block sums, the
    token from a cumulative sum over its block only, so a step reads the weights twice instead of building a
    cumulative sum of the whole vocabulary (3.5x less time for 120 rows of Gemma 3's 262,144 tokens on a
    2-core AVX2 CPU). Block sums are float32 (as accurate as the float32 weights), the cumulative sums float64.
    A token of zero weight is never drawn, whatever the rounding."""
    rows, vocab = logits.shape
    w = torch.sub(logits, logits.amax(-1, keepdim=True)).exp_()
    pad = (-vocab) % block
    if pad:
        w = torch.nn.functional.pad(w, (0, pad))
    w = w.view(rows, -1, block)
    sums = w.sum(-1)  # [rows, blocks]
    cum = sums.to(torch.float64).cumsum(-1)
    thr = u.to(cum.device, torch.float64) * cum[:, -1]
    b = torch.searchsorted(cum, thr.unsqueeze(-1), right=True).squeeze(-1)
    last_b = sums.shape[1] - 1 - torch.argmax((sums > 0).flip(-1).to(torch.int8), -1)
    b = torch.minimum(b, last_b)  # rounding cannot carry the draw past the last block with weight
    at = torch.arange(rows, device=w.device)
    before = torch.where(b > 0, cum[at, (b - 1).clamp_min(0)], torch.zeros_like(thr))
    wb = w[at, b]  # [rows, block]
    inner = wb.to(torch.float64).cumsum(-1) + before.unsqueeze(-1)
    j = torch.searchsorted(inner, thr.unsqueeze(-1), right=True).squeeze(-1)
    last_j = block - 1 - torch.argmax((wb > 0).flip(-1).to(torch.int8), -1)
    j = torch.minimum(j, last_j)  # nor past the block's last token with weight
    return b * block + j


def full_cdf(logits: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The draw :func:`inverse_cdf` makes, by one float64 cumulative sum of the whole softmax (fewer, larger
    kernels: the engine's draw on a GPU). A token of zero weight is never drawn: the threshold ``u`` times the
    total lies below the total for ``u < 1``, and the first position the cumulative sum passes it has weight."""
    cdf = torch.softmax(logits, dim=-1).double().cumsum(-1)
    nxt = torch.searchsorted(cdf, (u.to(cdf.device, torch.float64) * cdf[:, -1]).unsqueeze(-1), right=True)
    return nxt.squeeze(-1).clamp_max(logits.shape[-1] - 1)


# ------------------------------------------------------------------------------------- prefix planning
def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass(frozen=True)
class Group:
    """Rows that share ``prefix`` tokens after the call prefix (0 for a row on its own)."""

    rows: tuple[int, ...]
    prefix: int


def _rows_of(batch: Sequence[Group], rest) -> tuple[list[int], dict[int, Group], list[list[int]]]:
    """A batch's rows in order, each row's group, and each row's tokens after its group's prefix."""
    members = [r for g in batch for r in g.rows]
    group_of = {r: g for g in batch for r in g.rows}
    return members, group_of, [list(rest[r][group_of[r].prefix:]) for r in members]


def plan_groups(rest: Sequence[Sequence[int]], min_shared: int, max_rows: int) -> list[Group]:
    """Split rows into groups of at most ``max_rows`` that share a prefix of at least ``min_shared`` tokens,
    choosing the split that saves the most prompt tokens.

    ``rest[r]`` is row ``r``'s tokens after the call prefix. Rows are sorted by their tokens, so rows with a
    common prefix are neighbours; a group is a run of neighbours, its prefix the shortest common prefix of
    consecutive members, capped so that every member keeps at least one token of its own. Computing a
    group's prefix once saves ``(size - 1) * prefix`` tokens; a dynamic programme over the sorted rows picks
    the runs that save the most in total."""
    order = sorted(range(len(rest)), key=lambda r: (list(rest[r]), r))
    n = len(order)
    # lcp[i]: common prefix of sorted rows i and i + 1, capped at one token short of either row
    lcp = [min(common_prefix(rest[order[i]], rest[order[i + 1]]), len(rest[order[i]]) - 1,
               len(rest[order[i + 1]]) - 1) for i in range(n - 1)]
    best = [0] * (n + 1)  # best[b]: tokens saved by the best split of the first b sorted rows
    start = [0] * (n + 1)
    for b in range(1, n + 1):
        best[b], start[b] = best[b - 1], b - 1  # row b - 1 on its own
        shared = None
        for a in range(b - 2, max(-1, b - 1 - max_rows), -1):  # run a .. b - 1
            shared = lcp[a] if shared is None else min(shared, lcp[a])
            if shared < min_shared:
                break
            gain = best[a] + (b - 1 - a) * shared
            if gain > best[b]:
                best[b], start[b] = gain, a
    groups, b = [], n
    while b > 0:
        a = start[b]
        rows = tuple(order[a:b])
        prefix = min(lcp[a:b - 1]) if b - a > 1 else 0
        groups.append(Group(rows, prefix))
        b = a
    return groups[::-1]


def pack_batches(groups: Sequence[Group], lengths: Sequence[int], max_rows: int) -> list[list[Group]]:
    """Pack whole groups into batches of at most ``max_rows`` rows, longest first, so that a batch holds
    rows of similar length (little padding)."""
    key = {g: (-max(lengths[r] for r in g.rows), -g.prefix, g.rows) for g in groups}
    batches: list[list[Group]] = []
    rows = 0
    for g in sorted(groups, key=key.__getitem__):
        if not batches or rows + len(g.rows) > max_rows:
            batches.append([])
            rows = 0
        batches[-1].append(g)
        rows += len(g.rows)
    return batches


def plan_chunks(lengths: Sequence[int], chunk_cost: float) -> list[list[int]]:
    """Split rows into chunks of similar length for one padded forward pass each: the rows sorted by length,
    then cut where it saves the most. A chunk of ``k`` rows padded to its longest costs ``k * longest``
    positions, plus ``chunk_cost`` positions for the extra pass (a dynamic programme over the sorted rows).
    Returns lists of row indices, each sorted by length."""
    order = sorted(range(len(lengths)), key=lambda r: (lengths[r], r))
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[b]: cheapest split of the first b sorted rows
    cut = [0] * (n + 1)
    for b in range(1, n + 1):
        longest = lengths[order[b - 1]]
        for a in range(b):
            cost = best[a] + (b - a) * longest + chunk_cost
            if cost < best[b]:
                best[b], cut[b] = cost, a
    chunks, b = [], n
    while b > 0:
        chunks.append(order[cut[b]:b])
        b = cut[b]
    return chunks[::-1]


def cache_rows(cache, rows: Sequence[int]):
    """A new cache holding ``cache``'s batch rows ``rows`` (repeats allowed); ``cache`` is left as it was."""
    new = copy.copy(cache)
    new.layers = [copy.copy(layer) for layer in cache.layers]
    new.batch_select_indices(torch.tensor(list(rows)))  # CPU indices serve a cache spread over devices
    return new


def merge_rows(caches: Sequence, widths: Sequence[int]):
    """One cache whose batch is the rows of ``caches`` in order, each cache left-padded along the sequence to
    the longest: ``widths[c]`` positions are ``caches[c]``'s length. The padded positions hold zeros and must
    be masked out (the engine's masks put zeros there). Attention does not depend on where a masked position
    sits, and position ids carry each token's place, so a row computes what it did before. The other caches are
    emptied layer by layer as they are joined, so memory peaks at one cache and one layer, not two caches."""
    from transformers.cache_utils import DynamicSlidingWindowLayer

    width = max(widths)
    pad = lambda t, w: torch.nn.functional.pad(t, (0, 0, width - w, 0))  # noqa: E731
    out = caches[0]
    for i, layer in enumerate(out.layers):
        layer.keys = torch.cat([pad(c.layers[i].keys, w) for c, w in zip(caches, widths)])
        layer.values = torch.cat([pad(c.layers[i].values, w) for c, w in zip(caches, widths)])
        for c in caches[1:]:
            c.layers[i].keys = c.layers[i].values = None
        if type(layer) is DynamicSlidingWindowLayer:
            layer.cumulative_length = width
    return out


#: per tokenizer object (every model loaded from one directory shares it, :func:`reproduce.lm.models.load`): what
#: :func:`_token_classes` found, so that a stage building an engine per finetuned run decodes the vocabulary once
_TOKEN_CLASSES: dict[int, tuple] = {}


def _token_classes(tok, n_out: int) -> tuple[int, list[bool], list[bool], list[bool]]:
    """The vocabulary's size (the larger of the tokenizer's and the output layer's) and, for every token id, whether
    its text holds a newline, has content, and is an opening (:func:`is_opening`). Decoding a 262k vocabulary takes
    seconds, so the result is kept for the tokenizer object it was computed from (and its length)."""
    n = max(len(tok), n_out)
    kept = _TOKEN_CLASSES.get(id(tok))
    if kept is not None and kept[0]() is tok and kept[1] == n:
        return kept[2]
    vocab = tok.batch_decode([[i] for i in range(n)])
    out = (n, ["\n" in t for t in vocab], [bool(t.strip()) for t in vocab], [is_opening(t) for t in vocab])
    _TOKEN_CLASSES[id(tok)] = (weakref.ref(tok), n, out)
    return out


@dataclass
class EngineStats:
    """Work done by :meth:`Engine.generate` since the engine was made (or :meth:`reset`)."""

    prompts: int = 0
    rows: int = 0  # sequences generated (prompts x samples)
    prompt_tokens: int = 0  # prompt tokens a full recomputation of every row would compute
    computed_tokens: int = 0  # prompt tokens actually computed (each shared prefix once)
    padded_tokens: int = 0  # computed positions including padding
    decode_tokens: int = 0  # positions computed while decoding (one per active row and step)
    logit_rows: int = 0  # positions whose output logits were computed
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def saved_fraction(self) -> float:
        return 1.0 - self.computed_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def reset(self) -> None:
        self.__init__()


class Engine:
    #: shorter common prefixes are not worth a separate forward pass
    MIN_SHARED_PREFIX = 8
    #: on a CPU, the positions one more forward pass is worth when a batch's rows are split into chunks of
    #: similar length (:func:`plan_chunks`); ``None`` (other devices, where a padded position costs little
    #: until the device is saturated, and not measured there) keeps one pass
    CPU_CHUNK_COST = 64

    def __init__(self, lm: LoadedModel, batch_size: int = 32, share_prefix: bool = True,
                 split_decode: bool | None = None):
        """``split_decode``: sample on the split key-value cache where it serves; ``None`` (the default): on a
        CPU yes, elsewhere no (see the module's notes, measured on a GPU)."""
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.lm, self.batch_size, self.share_prefix = lm, batch_size, share_prefix
        cpu = lm.device.type == "cpu"
        self.split_decode = cpu if split_decode is None else split_decode
        #: (logits, uniforms) -> tokens: the blocked draw on a CPU, one cumulative sum elsewhere
        self.draw = inverse_cdf if cpu else full_cdf
        self.chunk_cost = self.CPU_CHUNK_COST if cpu else None
        tok = lm.tokenizer
        eos = lm.model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if tok.eos_token_id is not None:
            eos.append(tok.eos_token_id)
        self.eos_ids = sorted(set(eos))
        special = set(tok.all_special_ids)
        special |= {i for i, t in tok.added_tokens_decoder.items() if getattr(t, "special", False)}
        self.suppress_ids = sorted(special - set(self.eos_ids) - {tok.pad_token_id})
        self.vocab_size, self._newline, self._content, self._opening = _token_classes(
            tok, self.lm.model.get_output_embeddings().weight.shape[0])
        self._eos = set(self.eos_ids)
        self._suppress = torch.tensor(self.suppress_ids, dtype=torch.long, device=lm.device)
        self._option_cache: dict[tuple[str, ...], list[list[int]]] = {}
        self.stats = EngineStats()

    def ends_line(self, token: int, seen_content: bool) -> bool:
        """The newline rule: a row stops at a newline token once a token with content came before it."""
        return bool(self._newline[token]) and seen_content

    def has_content(self, token: int) -> bool:
        """Whether ``token``'s text holds anything but whitespace (it arms the newline rule)."""
        return bool(self._content[token])

    def _new_cache(self):
        from transformers.cache_utils import DynamicCache

        return DynamicCache(config=self.lm.model.config)

    @functools.cached_property
    def _empty_cache(self):
        """An empty cache of the model's layer types, never written: what a cache of this model would be."""
        return self._new_cache()

    # ------------------------------------------------------------------ options
    def option_token_ids(self, options: Sequence[str]) -> list[list[int]]:
        """For each option, the ids of its single-token surface forms (case and leading-space variants)."""
        key = tuple(options)
        if key in self._option_cache:
            return self._option_cache[key]
        tok = self.lm.tokenizer
        owner: dict[int, str] = {}
        result = []
        for o in options:
            ids = set()
            for v in {o, o.lower(), o.upper(), o.capitalize()}:
                for surface in (v, " " + v):
                    enc = tok.encode(surface, add_special_tokens=False)
                    if len(enc) == 1:
                        ids.add(enc[0])
            if not ids:
                raise ModelError(f"option {o!r} has no single-token form in {self.lm.name}'s vocabulary; "
                                 "it cannot be scored from one forward pass")
            for i in ids:
                if owner.setdefault(i, o) != o:
                    raise ModelError(f"token {i} of {self.lm.name} stands for both {owner[i]!r} and {o!r}")
            result.append(sorted(ids))
        self._option_cache[key] = result
        return result

    def _distribution(self, logits: torch.Tensor, options: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        probs = torch.softmax(logits.float(), dim=-1)
        groups = self.option_token_ids(options)
        mass = torch.stack([probs[:, ids].sum(-1) for ids in groups], dim=-1)
        inside = mass.sum(-1, keepdim=True)
        norm = mass / inside.clamp_min(1e-30)
        return norm.cpu().numpy(), (1.0 - inside.squeeze(-1)).clamp_min(0.0).cpu().numpy()

    # --------------------------------------------------------------- generation
    def render(self, prompts: Sequence[str]) -> list[str]:
        return [self.lm.format.render(p) for p in prompts]

    def tokenize(self, prompts: Sequence[str]) -> list[list[int]]:
        return self.lm.tokenizer(self.render(prompts), add_special_tokens=self.lm.format.add_special_tokens)["input_ids"]

    def _tokenize_distinct(self, prompts: Sequence) -> tuple[list[str], dict[str, list[int]]]:
        """Each prompt rendered, and the token ids of every distinct rendering (a prompt scored with many
        continuations is tokenised once)."""
        rendered = self.render(prompts)
        distinct = list(dict.fromkeys(rendered))
        ids = self.lm.tokenizer(distinct, add_special_tokens=self.lm.format.add_special_tokens)["input_ids"]
        return rendered, dict(zip(distinct, ids))

    def _shared_prefix(self, ids: list[list[int]]) -> int:
        """Length of the token prefix common to every prompt (leaving each at least one token of its own)."""
        if not self.share_prefix or not ids:
            return 0
        first, n = ids[0], min(len(x) for x in ids) - 1
        p = min(n, min(common_prefix(first, x) for x in ids))
        return p if p >= self.MIN_SHARED_PREFIX else 0

    def _forward(self, tokens: list[list[int]], mask: torch.Tensor, cache, logits_to_keep: int = 1):
        """One forward pass over ``tokens`` (rows of equal width) on top of ``cache``; ``mask`` covers the
        cache and the new tokens. Position ids count real tokens only (padding gets 1, as transformers does)."""
        dev = self.lm.device
        pos = mask.long().cumsum(-1) - 1
        pos.masked_fill_(mask == 0, 1)
        width = len(tokens[0])
        out = self.lm.model(input_ids=torch.tensor(tokens, device=dev), attention_mask=mask,
                            position_ids=pos[:, -width:], past_key_values=cache, use_cache=True,
                            logits_to_keep=logits_to_keep)
        self.stats.padded_tokens += len(tokens) * width
        self.stats.logit_rows += len(tokens) * logits_to_keep
        return out

    def attention_backends(self):
        """The attention kernels the engine allows: on CUDA every SDPA backend but cuDNN's, which builds a plan
        per new shape; a stage meets a new shape at almost every batch and decoding step, and on an H100
        (random-weights Llama-3.1-8B shape, bf16, ``benchmarks/bench_inference.py``) those plans made the
        first call on a workload 6x slower for the meta level and 5x for sampling. Elsewhere, torch's choice."""
        if self.lm.device.type != "cuda":
            return contextlib.nullcontext()
        from torch.nn.attention import SDPBackend, sdpa_kernel

        return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])

    def generate(self, prompts: Sequence[str], max_new_tokens: int | Sequence[int], **kwargs) -> list[list[Generation]]:
        """Generate for each prompt: greedy (``temperature=None``) or ``n`` samples at ``temperature``.

        ``max_new_tokens`` is one limit for all prompts or one per prompt. ``options[i]`` (greedy only) asks
        for the option distribution of prompt ``i``. Returns one list of ``n`` generations per prompt, in
        input order. Sample ``j`` of a prompt is drawn with a generator seeded by ``(seed, prompt, j)``: the
        same prompt, seed and index give the same sample whatever else is in the call."""
        with self.attention_backends():
            return self._generate(prompts, max_new_tokens, **kwargs)

    @torch.inference_mode()
    def _generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int | Sequence[int],
        *,
        n: int = 1,
        temperature: float | None = None,
        seed: int = 0,
        options: Sequence[Sequence[str] | None] | None = None,
        progress: str | None = None,
        steer=None,
        stop_at_newline: bool = True,
    ) -> list[list[Generation]]:
        """The body of :meth:`generate`."""
        limits = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        if len(limits) != len(prompts):
            raise ValueError("max_new_tokens must be one int or one per prompt")
        if any(m < 1 for m in limits):
            raise ValueError("max_new_tokens must be >= 1")
        sample = temperature is not None
        if options is not None and sample:
            raise ValueError("option distributions come from greedy runs; pass temperature=None")
        if options is not None and len(options) != len(prompts):
            raise ValueError("options must have one entry per prompt")
        if not prompts:
            return []
        t0 = time.perf_counter()
        ids = self.tokenize(prompts)
        k = n if sample else 1
        rows = [(i, j) for i in range(len(prompts)) for j in range(k)]  # row -> (prompt, sample)
        max_rows = max(self.batch_size, k)  # the samples of one prompt always share a batch
        shared, prefix, rest, batches, prefix_cache = self._plan(ids, rows, max_rows, steer)
        self.stats.prompts += len(prompts)
        self.stats.rows += len(rows)
        self.stats.prompt_tokens += sum(len(ids[i]) for i, _ in rows)

        results: list[list[Generation | None]] = [[None] * k for _ in prompts]
        bar = tqdm(total=len(rows), desc=progress, unit="seq", disable=progress is None, leave=False)
        for batch in batches:
            gens = self._batch(batch, prefix, prefix_cache, rest, rows, ids, limits, sample, temperature, seed,
                               options, steer, stop_at_newline)
            for r, g in gens.items():
                i, j = rows[r]
                results[i][j] = g
            bar.update(sum(len(g.rows) for g in batch))
        bar.close()
        if steer is not None:
            steer.set_rows(None)
        self.stats.seconds += time.perf_counter() - t0
        return results  # type: ignore[return-value]

    #: bytes of float32 logits one teacher-forcing batch may hold (a 262k vocabulary makes them the largest tensor)
    SCORE_LOGIT_BYTES = 1 << 29

    def score(self, prompts: Sequence, continuations: Sequence[str], *, steer=None,
              progress: str | None = None) -> list[np.ndarray]:
        """Teacher forcing: for each (prompt, continuation) pair, the log-probability of every token of the
        continuation given the rendered prompt and the continuation's earlier tokens. The continuation is
        tokenised on its own and appended to the prompt's tokens (no merge across the boundary), so a prompt
        ending inside an assistant turn (a prefilled answer) is continued exactly. Shared prompt prefixes are
        computed once, as in :meth:`generate`; ``steer`` holds one injection (or None) per pair."""
        if len(prompts) != len(continuations):
            raise ValueError("score needs one continuation per prompt")
        with self.attention_backends():
            return self._score(prompts, continuations, steer, progress)

    #: continuations up to this many tokens are scored over a trie of their prefixes (see :meth:`_score_trie`)
    TRIE_MAX_TOKENS = 8

    @torch.inference_mode()
    def _score(self, prompts, continuations, steer, progress) -> list[np.ndarray]:
        if not prompts:
            return []
        tok = self.lm.tokenizer
        cont = [tok.encode(c, add_special_tokens=False) for c in continuations]
        if any(not c for c in cont):
            raise ValueError("every continuation needs at least one token")
        if max(len(c) for c in cont) <= self.TRIE_MAX_TOKENS:
            return self._score_trie(prompts, cont, steer, progress)
        return self._score_rows(prompts, cont, steer, progress)

    @torch.inference_mode()
    def _score_trie(self, prompts, cont, steer, progress) -> list[np.ndarray]:
        """Short continuations (candidate answers): every distinct context (prompt and injection, plus a proper
        prefix of a continuation) is one row whose next-token distribution is computed once, so the candidates
        of one prompt share the distribution of their first token, and a one-token candidate costs nothing
        beyond its prompt."""
        t0 = time.perf_counter()
        rendered, enc = self._tokenize_distinct(prompts)
        context: dict[tuple, int] = {}
        row_ids, row_pair, need = [], [], []  # need[r]: (context row, token) per continuation token
        for r, (text, c) in enumerate(zip(rendered, cont)):
            key = (text, None if steer is None else steer.planning_key(r))
            pairs = []
            for j in range(len(c)):
                ctx = (key, tuple(c[:j]))
                if ctx not in context:
                    context[ctx] = len(row_ids)
                    row_ids.append(enc[text] + list(c[:j]))
                    row_pair.append(r)
                pairs.append((context[ctx], c[j]))
            need.append(pairs)
        rows = [(i, 0) for i in range(len(row_ids))]
        saved = None
        if steer is not None:  # the hook reads injections by engine row: one per context row
            saved, steer.injections = steer.injections, [steer.injections[r] for r in row_pair]
        try:
            shared, prefix, rest, batches, prefix_cache = self._plan(row_ids, rows, self.batch_size, steer,
                                                                     keep_last=[1] * len(rows))
            self.stats.prompts += len(prompts)
            self.stats.rows += len(rows)
            self.stats.prompt_tokens += sum(len(x) for x in row_ids)
            wanted: dict[int, set[int]] = {}
            for pairs in need:
                for row, t in pairs:
                    wanted.setdefault(row, set()).add(t)
            got: dict[tuple[int, int], float] = {}
            bar = tqdm(total=len(rows), desc=progress, unit="seq", disable=progress is None, leave=False)
            for batch in batches:
                members, _, out = self._prefill(batch, prefix, prefix_cache, rest, rows, steer)
                logp = torch.log_softmax(out.logits[:, -1].float(), dim=-1).cpu()
                for b, row in enumerate(members):
                    for t in wanted[row]:
                        got[row, t] = float(logp[b, t])
                bar.update(len(members))
            bar.close()
        finally:
            if saved is not None:
                steer.injections = saved
                steer.set_rows(None)
        self.stats.seconds += time.perf_counter() - t0
        return [np.array([got[row, t] for row, t in pairs], dtype=np.float64) for pairs in need]

    @torch.inference_mode()
    def _score_rows(self, prompts, cont, steer, progress) -> list[np.ndarray]:
        """Long continuations (a text's perplexity): one row per pair, the logits of its continuation's
        positions only."""
        t0 = time.perf_counter()
        rendered, enc = self._tokenize_distinct(prompts)
        ids = [enc[r] + c for r, c in zip(rendered, cont)]
        rows = [(r, 0) for r in range(len(ids))]
        keep = [len(c) + 1 for c in cont]
        K = max(keep)
        max_rows = max(1, min(self.batch_size, self.SCORE_LOGIT_BYTES // (4 * K * self.vocab_size)))
        shared, prefix, rest, batches, prefix_cache = self._plan(ids, rows, max_rows, steer, keep_last=keep)
        self.stats.prompts += len(ids)
        self.stats.rows += len(ids)
        self.stats.prompt_tokens += sum(len(x) for x in ids)
        out_lp: list[np.ndarray | None] = [None] * len(ids)
        bar = tqdm(total=len(rows), desc=progress, unit="seq", disable=progress is None, leave=False)
        for batch in batches:
            # the positions whose next-token distribution is needed, each computed once: positions of rows of one
            # group (same prompt prefix, same injection) with the same suffix so far have the same hidden state,
            # so the candidates of one prompt share the distribution of their first token
            members, group_of, suffixes = _rows_of(batch, rest)
            width_s = max(len(x) for x in suffixes)
            where: dict[tuple, int] = {}
            pick_b, pick_t, need = [], [], {}
            for b, (r, suffix) in enumerate(zip(members, suffixes)):
                m = len(cont[r])
                key0 = (group_of[r], None if steer is None else steer.planning_key(rows[r][0]))
                idx = []
                for j in range(len(suffix) - m - 1, len(suffix) - 1):  # predicts suffix[j + 1]
                    key = (key0, tuple(suffix[:j + 1]))
                    if key not in where:
                        where[key] = len(pick_b)
                        pick_b.append(b)
                        pick_t.append(width_s - len(suffix) + j)
                    idx.append(where[key])
                need[r] = idx
            _, _, out = self._prefill(batch, prefix, prefix_cache, rest, rows, steer, logits_to_keep=0,
                                      select=(torch.tensor(pick_b), torch.tensor(pick_t)))
            self.stats.logit_rows += len(pick_b)
            logp = torch.log_softmax(out.logits[0].float(), dim=-1)
            for r in members:
                at = torch.tensor(need[r], device=logp.device)
                out_lp[r] = logp[at, torch.tensor(cont[r], device=logp.device)].cpu().numpy().astype(np.float64)
            bar.update(len(members))
        bar.close()
        if steer is not None:
            steer.set_rows(None)
        self.stats.seconds += time.perf_counter() - t0
        return out_lp  # type: ignore[return-value]

    def _plan(self, ids: list[list[int]], rows: list[tuple[int, int]], max_rows: int, steer, keep_last: list[int] | None = None):
        """Call prefix, rows' remaining tokens, batches of groups, and the call prefix's cache.

        Under ``steer``, shared computation never crosses an injection: the call prefix ends at or before the
        earliest injected position, and for grouping, a row's tokens from its injection's start on are told
        apart by the injection's key, so only rows with the same injection share positions it reaches.
        ``keep_last[r]``: row ``r``'s last ``keep_last[r]`` tokens stay in its own suffix (teacher forcing
        needs the logits there)."""
        shared = self._shared_prefix(ids if keep_last is None else
                                     [x[:len(x) - keep_last[r] + 1] for r, x in enumerate(ids)])
        if steer is not None and steer.min_start() is not None:
            shared = min(shared, steer.min_start())
            shared = shared if shared >= self.MIN_SHARED_PREFIX else 0
        prefix = ids[0][:shared]
        rest = [ids[i][shared:] for i, _ in rows]
        plan = rest
        if steer is not None or keep_last is not None:
            big = 1 << 40
            keys: dict = {}
            plan = []
            for r, (i, _) in enumerate(rows):
                x = list(rest[r])
                key = None if steer is None else steer.planning_key(i)
                if key is not None:
                    n = keys.setdefault(key, len(keys) + 1)
                    x = x[:max(0, key[0] - shared)] + [t + n * big for t in x[max(0, key[0] - shared):]]
                if keep_last is not None:
                    x = x[:len(x) - keep_last[r]] + [-(r + 1)]  # a unique end: no group prefix reaches the kept tokens
                plan.append(x)
        if self.share_prefix:
            groups = plan_groups(plan, self.MIN_SHARED_PREFIX, max_rows)
        else:
            groups = [Group((r,), 0) for r in range(len(rows))]
        batches = pack_batches(groups, [len(x) for x in rest], max_rows)
        prefix_cache = None
        if shared:
            if steer is not None:
                steer.set_rows(None)
            out = self._forward([prefix], torch.ones(1, shared, dtype=torch.long, device=self.lm.device), None)
            prefix_cache = out.past_key_values
            self.stats.computed_tokens += shared
        return shared, prefix, rest, batches, prefix_cache

    def _prefill(self, batch: list[Group], prefix: list[int], prefix_cache, rest, rows, steer, logits_to_keep: int = 1,
                 select: tuple[torch.Tensor, torch.Tensor] | None = None, horizon: int = 0):
        """The prompt pass of one batch: group prefixes (one row per group, on the call prefix's cache), then
        every row's own tokens on its group's cache. Returns (members, mask, output), the rows in the order of
        the output's batch. ``horizon``: the most tokens a row may generate after it. ``select = (rows,
        positions)``: the suffix pass projects only those hidden states to logits (output logits
        ``[1, len(rows), vocab]``), the rest of the model unchanged."""
        members, group_of, suffix = _rows_of(batch, rest)
        width_s = max(len(x) for x in suffix)
        # 1. group prefixes: one row per group, on the call prefix's cache
        cache, owner, before = self._group_pass(batch, members, group_of, prefix, prefix_cache, rest, rows, steer,
                                                width_s + horizon)

        # 2. suffixes: every row's own tokens, on its group's cache
        self.stats.computed_tokens += sum(len(x) for x in suffix)
        order, mask, out = self._pass(suffix, cache, owner, before, [rows[r][0] for r in members], steer,
                                      logits_to_keep, horizon, select)
        return [members[b] for b in order], mask, out

    def _group_pass(self, batch: list[Group], members: list[int], group_of: dict[int, Group], prefix: list[int],
                    prefix_cache, rest, rows, steer, horizon: int):
        """The group prefixes of a batch: one row per group, on the call prefix's cache. ``members`` and
        ``group_of``: the batch's rows and each row's group (:func:`_rows_of`). Returns (cache, owner, mask):
        ``owner[b]`` is the cache row that ``members[b]`` continues (``None`` without a cache), ``mask`` the
        cache's padding mask (``None`` without one). ``horizon``: the positions that will still be appended
        after this pass."""
        before = None if prefix_cache is None else torch.ones(1, len(prefix), dtype=torch.long, device=self.lm.device)
        if not max(g.prefix for g in batch):
            return prefix_cache, None if prefix_cache is None else [0] * len(members), before
        gorder, before, out = self._pass([list(rest[g.rows[0]][:g.prefix]) for g in batch], prefix_cache,
                                         None if prefix_cache is None else [0] * len(batch), before,
                                         [rows[g.rows[0]][0] for g in batch], steer, 1, horizon)
        self.stats.computed_tokens += sum(g.prefix for g in batch)
        at = {batch[gi]: k for k, gi in enumerate(gorder)}
        return out.past_key_values, [at[group_of[r]] for r in members], before

    def _prefill_split(self, batch: list[Group], prefix: list[int], prefix_cache, rest, rows, steer, horizon: int):
        """The prompt pass of a batch whose rows have one token of their own each (the ``n`` samples of a prompt
        share all but the last), decoding-ready on a :class:`~reproduce.lm.split_cache.SplitCache`: the group
        prefixes as in :meth:`_prefill`, then each row's last token as a first decoding step on the groups'
        cache, which is never copied per row. Returns (members, split cache, next positions, last logits), or
        ``None`` where the split cache does not serve (then :meth:`_prefill`)."""
        members, group_of, suffix = _rows_of(batch, rest)
        width_g = max(g.prefix for g in batch)
        bases = len(batch) if width_g else 1  # the groups' prefixes, or else the call prefix alone
        if any(len(x) != 1 for x in suffix) or len(members) < 2 * bases or (
                prefix_cache is None and not all(g.prefix for g in batch)):
            return None  # rows with more of their own, too few rows per base for the split to pay, or a base empty
        dev = self.lm.device
        length = len(prefix) + width_g + 1 + horizon  # at most, padding included
        if not split_cache.supported(self.lm.model, prefix_cache if prefix_cache is not None else self._empty_cache,
                                     length):
            return None
        # the group prefixes (without them, every row continues the call prefix: a single prompt's samples)
        cache, owner, before = self._group_pass(batch, members, group_of, prefix, prefix_cache, rest, rows, steer,
                                                1 + horizon)
        self.stats.computed_tokens += len(members)
        split = split_cache.SplitCache(cache, before, owner, self._new_cache)
        del cache
        pos = before.long().sum(-1)[torch.tensor(owner, device=before.device)].to(dev)
        if steer is not None:
            steer.set_rows([rows[r][0] for r in members])
        out = split.forward(self.lm.model, torch.tensor(suffix, device=dev), pos.unsqueeze(-1))
        self.stats.padded_tokens += len(members)
        self.stats.logit_rows += len(members)
        return members, split, pos + 1, out.logits[:, -1].float().to(dev)

    def _pass(self, tokens: list[list[int]], cache, owner: list[int] | None, before: torch.Tensor | None,
              prompts: list[int], steer, logits_to_keep: int, horizon: int,
              select: tuple[torch.Tensor, torch.Tensor] | None = None):
        """One forward pass of rows of new tokens: row ``i``'s ``tokens[i]`` continue row ``owner[i]`` of
        ``cache`` (whose mask is ``before[owner[i]]``; no cache: ``None``). Each row is left-padded to the
        longest, the padding masked out. Returns (order, mask, output): the rows' indices in the order of the
        output's batch, and the mask over the output's cache.

        On a CPU, where a padded position costs as much as a real one, the rows run in chunks of similar length
        (:func:`plan_chunks`) whose caches are then joined, front-padded, into one (:func:`merge_rows`).
        ``horizon``: the positions that will still be appended after this pass, which tells whether a sliding
        attention window would be reached (then one pass). ``select`` (one pass): see :meth:`_prefill`."""
        dev, pad = self.lm.device, self.lm.tokenizer.pad_token_id
        chunks = [list(range(len(tokens)))]
        if select is None and cache is not None and self.chunk_cost is not None:
            if split_cache.mergeable(cache, before.shape[1] + max(len(t) for t in tokens) + horizon):
                chunks = plan_chunks([len(t) for t in tokens], self.chunk_cost)
        order, masks, caches, logits = [], [], [], []
        for chunk in chunks:
            w = max(len(tokens[i]) for i in chunk)
            mask = torch.tensor([[0] * (w - len(tokens[i])) + [1] * len(tokens[i]) for i in chunk], dtype=torch.long,
                                device=dev).reshape(len(chunk), w)
            c = None
            if cache is not None:
                at = [owner[i] for i in chunk]
                mask = torch.cat([before[torch.tensor(at, device=before.device)], mask], dim=-1)
                c = cache_rows(cache, at)
            if steer is not None:
                steer.set_rows([prompts[i] for i in chunk])
            if not w:  # rows with no tokens of their own here (a group of one in a group pass): the cache as it is
                order += chunk
                masks.append(mask)
                caches.append(c)
                continue
            padded = [[pad] * (w - len(tokens[i])) + tokens[i] for i in chunk]
            hook = None
            if select is not None:
                def only_selected(module, args):
                    h = args[0]
                    return (h[select[0].to(h.device), select[1].to(h.device)].unsqueeze(0),)

                hook = self.lm.model.get_output_embeddings().register_forward_pre_hook(only_selected)
            try:
                out = self._forward(padded, mask, c, logits_to_keep)
            finally:
                if hook is not None:
                    hook.remove()
            if len(chunks) == 1:
                return chunk, mask, out
            order += chunk
            masks.append(mask)
            caches.append(out.past_key_values)
            logits.append(out.logits)
        widths = [m.shape[1] for m in masks]
        mask = torch.cat([torch.nn.functional.pad(m, (max(widths) - m.shape[1], 0)) for m in masks])
        return order, mask, SimpleNamespace(past_key_values=merge_rows(caches, widths),
                                            logits=torch.cat(logits) if len(logits) == len(chunks) else None)

    def _batch(self, batch: list[Group], prefix: list[int], prefix_cache, rest, rows, ids, limits, sample,
               temperature, seed, options, steer=None, stop_at_newline: bool = True) -> dict[int, Generation]:
        tok, dev = self.lm.tokenizer, self.lm.device
        horizon = max(limits[rows[r][0]] for g in batch for r in g.rows)
        # decoding on each prompt's cache held once (reproduce.lm.split_cache) where it serves, else on one cache
        split, cache, mask = None, None, None
        pre = self._prefill_split(batch, prefix, prefix_cache, rest, rows, steer, horizon) \
            if self.split_decode else None
        if pre is not None:
            members, split, pos, logits = pre
        else:
            members, mask, out = self._prefill(batch, prefix, prefix_cache, rest, rows, steer, horizon=horizon)
            cache, logits = out.past_key_values, out.logits[:, -1].float().to(dev)
            del out
            pos = mask.long().sum(-1)  # next position of each active row
        self.stats.extra["batches"] = self.stats.extra.get("batches", 0) + 1
        self.stats.extra["split_batches"] = self.stats.extra.get("split_batches", 0) + (split is not None)

        # option distributions: read from the raw logits of each step until the row's greedy token carries content
        results: dict[int, Generation] = {}
        dists: dict[int, tuple[np.ndarray, float, int]] = {}  # row -> (probs, outside, position)
        first: dict[int, tuple[np.ndarray, float, int]] = {}  # the first step's, the fallback
        pending = {r: tuple(options[rows[r][0]]) for r in members
                   if options is not None and options[rows[r][0]] is not None}

        # 3. decoding: active rows only, stopped rows dropped from the batch
        gens = {r: torch.Generator().manual_seed(derive_seed(seed, ids[rows[r][0]], rows[r][1])) for r in members} \
            if sample else {}
        active = list(members)
        new: dict[int, list[int]] = {r: [] for r in members}
        finish = {r: "length" for r in members}
        seen_content = {r: False for r in members}
        while True:
            step_dists = self._step_distributions(logits, active, pending, new)
            if len(self._suppress):
                logits[:, self._suppress] = float("-inf")
            if sample:
                # uniforms drawn on the CPU (the same numbers on every device), then moved to the logits' device
                u = torch.cat([torch.rand(1, generator=gens[r], dtype=torch.float64) for r in active])
                nxt = self.draw(logits if temperature == 1 else logits / temperature, u)
            else:
                nxt = logits.argmax(-1)
            keep = []
            for row, (r, t) in enumerate(zip(active, nxt.tolist())):
                if r in step_dists:
                    first.setdefault(r, step_dists[r])
                    if t not in self._eos and not self._opening[t]:
                        dists[r] = step_dists[r]
                        del pending[r]
                if t in self._eos:
                    finish[r] = "eos"
                    continue
                new[r].append(t)
                stop = stop_at_newline and self.ends_line(t, seen_content[r])
                seen_content[r] = seen_content[r] or self.has_content(t)
                if not stop and len(new[r]) < limits[rows[r][0]]:
                    keep.append(row)
            if not keep:
                break
            if len(keep) < len(active):
                sel = torch.tensor(keep, device=dev)
                if split is not None:
                    split.select(keep)
                else:
                    cache.batch_select_indices(torch.tensor(keep))  # CPU indices serve a cache spread over devices
                pos, nxt = pos[sel], nxt[sel]
                mask = None if mask is None else mask[sel]
                active = [active[row] for row in keep]
            if mask is not None:
                mask = torch.cat([mask, torch.ones(len(active), 1, dtype=mask.dtype, device=dev)], dim=-1)
            if steer is not None:
                steer.set_rows([rows[r][0] for r in active])
            if split is not None:
                out = split.forward(self.lm.model, nxt.unsqueeze(-1), pos.unsqueeze(-1))
            else:
                out = self.lm.model(input_ids=nxt.unsqueeze(-1), attention_mask=mask, position_ids=pos.unsqueeze(-1),
                                    past_key_values=cache, use_cache=True)
            pos = pos + 1
            self.stats.decode_tokens += len(active)
            self.stats.logit_rows += len(active)
            logits = out.logits[:, -1].float().to(dev)

        for r in members:
            raw = tok.decode(new[r], skip_special_tokens=True)
            response, was_cut = cut_response(raw) if stop_at_newline else (raw.strip(), False)
            if r in first and r not in dists:  # no content token generated: the first step, flagged
                dists[r] = (*first[r][:2], -1)
            probs, outside, position = dists.get(r, (None, None, None))
            results[r] = Generation(
                response=response, raw=raw, n_new_tokens=len(new[r]), finish="newline" if was_cut else finish[r],
                option_probs=None if probs is None else tuple(float(x) for x in probs), p_outside=outside,
                option_position=position)
        return results

    def _step_distributions(self, logits: torch.Tensor, active: list[int], pending: dict[int, tuple[str, ...]],
                            new: dict[int, list[int]]) -> dict[int, tuple[np.ndarray, float, int]]:
        """The option distribution of every active row still waiting for its content token, from this step's
        raw logits (before special tokens are suppressed), with the step's position."""
        by_options: dict[tuple[str, ...], list[int]] = {}
        for row, r in enumerate(active):
            if r in pending:
                by_options.setdefault(pending[r], []).append(row)
        out = {}
        for opts, at in by_options.items():
            probs, outside = self._distribution(logits[at], opts)
            for x, row in enumerate(at):
                r = active[row]
                out[r] = (probs[x], float(outside[x]), len(new[r]))
        return out
