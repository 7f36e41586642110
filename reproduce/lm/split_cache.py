"""Decoding on a key-value cache in two parts: each prompt's positions held once, each row's new tokens apart.

On one cache, every row of a decoding batch holds a copy of its prompt's keys and values, and the ``n``
samples of one prompt hold ``n`` identical copies. A growing cache then costs, at every decoding step and in
every layer, a concatenation that copies the whole cache (transformers' ``DynamicLayer``), a copy of it again
whenever a stopped row is dropped, and attention that reads each row's own copy of the prompt.

:class:`SplitCache` keeps the shared part (the *base*: a group's prompt prefix, as the engine computed it once)
once and never copies it again; each row's own tokens (the last prompt token, then the decoded ones) go to a
small *tail* cache (a transformers cache of its own, which the model appends to as usual). Attention over the two parts is exact: with the base's scores ``s_b`` (the row's prompt, padding
masked out) and the tail's ``s_t``, ``softmax([s_b, s_t]) @ [V_b; V_t]`` equals

    (exp(m_b - m) * P_b + exp(m_t - m) * P_t) / (exp(m_b - m) * Z_b + exp(m_t - m) * Z_t),

where for each part ``m`` is its largest score, ``Z = sum(exp(s - m))``, ``P = exp(s - m) @ V`` and ``m`` is the
larger of ``m_b`` and ``m_t``. The queries of the rows that share a base are stacked so that each base's keys
and values are read once per step for all of them.

The arithmetic is float32 and the summation order differs from SDPA's, so outputs match the one-cache path to
float32 rounding (about 1e-6), not to the bit. A bfloat16 model's base is held in float32 (converted once, when
the split cache is made) and its queries and tail are raised to float32 for the attention, whose output is
rounded back to bfloat16: SDPA's CPU kernel likewise accumulates bfloat16 inputs in float32, but rounds the
attention weights to bfloat16 before multiplying them into the values, so the two paths then agree to
bfloat16 rounding, not to the bit. It serves float32 and bfloat16 caches, plain key-value layers whose sliding
window the rows do not reach, models on transformers' ``sdpa`` attention without logit soft-capping, and one
new token per row and step. :func:`supported` tells; the engine falls back to the one-cache path otherwise. A
forward pass in which not every layer's attention came through here raises, so a model that bypasses the
attention interface is caught rather than silently mixed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence

import torch

#: the name under which the split attention is registered with transformers' attention interface
ATTENTION = "looking_inward_split"


#: the cache dtypes served; the attention itself runs in float32
DTYPES = (torch.float32, torch.bfloat16)


class SplitCacheError(RuntimeError):
    pass


def _attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling: float | None = None,
               split_cache: "SplitCache | None" = None, softcap=None, sliding_window=None, **kwargs):
    """transformers' attention-interface signature; ``key``/``value`` are the tail's (the cache update has run)."""
    if split_cache is None:
        raise SplitCacheError(f"attention '{ATTENTION}' was called without its cache: it serves "
                              "reproduce.lm.engine's decoding only")
    if softcap is not None:
        raise SplitCacheError("split attention does not implement logit soft-capping")
    return split_cache.attend(module, query, key, value, scaling), None


_registered = False


def _register() -> None:
    """Register :func:`_attention` with transformers' attention interface (once per process)."""
    global _registered
    if not _registered:
        from transformers import AttentionInterface

        AttentionInterface.register(ATTENTION, _attention)
        _registered = True


def _attention_configs(model) -> list:
    """The distinct configs that the model's attention layers read their implementation from."""
    seen: dict[int, object] = {}
    for m in model.modules():
        if hasattr(m, "layer_idx") and hasattr(m, "config"):
            seen.setdefault(id(m.config), m.config)
    return list(seen.values())


def mergeable(cache, length: int) -> bool:
    """Whether :func:`reproduce.lm.engine.merge_rows` can join caches like ``cache``: plain key-value layers only (no quantised,
    static or recurrent state), and sliding-window layers whose window ``length`` positions do not reach (a
    front-padded row would then lose other positions to the window than the same row padded in the middle)."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    for layer in getattr(cache, "layers", None) or [None]:
        if type(layer) is DynamicSlidingWindowLayer:
            if length >= layer.sliding_window - 1:
                return False
        elif type(layer) is not DynamicLayer:
            return False
    return True


def supported(model, cache, length: int) -> bool:
    """Whether decoding on ``cache`` (``length`` positions once decoding ends) can use :class:`SplitCache`."""
    layers = getattr(cache, "layers", None)
    if not layers or not mergeable(cache, length):
        return False
    held = [layer.keys.dtype for layer in layers if getattr(layer, "keys", None) is not None and layer.keys.numel()]
    if any(d not in DTYPES for d in held or [model.dtype]):
        return False
    configs = _attention_configs(model)
    if not configs:
        return False
    return all(getattr(c, "_attn_implementation", None) == "sdpa" and getattr(c, "attn_logit_softcapping", None) is None
               for c in configs)


class SplitCache:
    """The base (each group's prompt prefix: its keys and values held once, in float32, and its padding mask)
    beside a tail cache.

    ``cache``: the prompt pass's cache, one row per base (``mask`` its padding mask ``[bases, positions]``);
    ``owner[b]``: the base row that row ``b`` continues. ``new_tail()``: an empty cache of the model's layer
    types for the rows' own tokens."""

    def __init__(self, cache, mask: torch.Tensor, owner: Sequence[int], new_tail):
        self.group = list(owner)  # base row of each active row
        self.keys = [layer.keys.float() for layer in cache.layers]  # float32 as they are: no copy
        self.values = [layer.values.float() for layer in cache.layers]
        self._bias = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_fill(mask == 0, -math.inf)
        self.tail = new_tail()
        self.calls = 0
        self._configs: list | None = None  # the attention configs of the model it serves, found once
        self._layout()

    @property
    def rows(self) -> int:
        return len(self.group)

    def _layout(self) -> None:
        """Each base row's active rows in ``[bases, most]`` slots (the last index, ``rows``, is a zero query),
        and each row's slot."""
        members: list[list[int]] = [[] for _ in range(self.keys[0].shape[0])]
        for b, g in enumerate(self.group):
            members[g].append(b)
        self.most = max(len(m) for m in members)
        slot = torch.full((len(members), self.most), self.rows, dtype=torch.long)
        where = torch.empty(self.rows, dtype=torch.long)
        for g, m in enumerate(members):
            for j, b in enumerate(m):
                slot[g, j] = b
                where[b] = g * self.most + j
        # rows already in slot order (the samples of each prompt together, no prompt short of rows): no gathers
        self._plain = self.most * len(members) == self.rows and bool((where == torch.arange(self.rows)).all())
        self._slot, self._where, self._on = slot.reshape(-1), where, {}

    def _index(self, device):
        if device not in self._on:
            self._on[device] = (self._slot.to(device), self._where.to(device), self._bias.to(device))
        return self._on[device]

    def select(self, keep: Sequence[int]) -> None:
        """Keep the active rows ``keep`` (indices into the current rows), in that order. Base rows that no
        row uses any more are dropped once they are half of the base (a copy of the base, made rarely)."""
        self.tail.batch_select_indices(torch.tensor(list(keep)))
        self.group = [self.group[i] for i in keep]
        used = sorted(set(self.group))
        if len(used) <= self.keys[0].shape[0] // 2:
            at = {g: k for k, g in enumerate(used)}
            pick = torch.tensor(used)
            self.keys = [k.index_select(0, pick.to(k.device)) for k in self.keys]
            self.values = [v.index_select(0, pick.to(v.device)) for v in self.values]
            self._bias = self._bias.index_select(0, pick.to(self._bias.device))
            self.group = [at[g] for g in self.group]
        self._layout()

    @contextlib.contextmanager
    def active(self, model):
        """Route the model's attention here for one forward pass; checks that every layer came through."""
        if self._configs is None:
            _register()
            self._configs = _attention_configs(model)
        configs = self._configs
        before = [c._attn_implementation for c in configs]
        self.calls = 0
        try:
            for c in configs:
                c._attn_implementation = ATTENTION
            yield {"split_cache": self}
        finally:
            for c, b in zip(configs, before):
                c._attn_implementation = b
        if self.calls != len(self.keys):
            raise SplitCacheError(f"{self.calls} of {len(self.keys)} attention layers came through the split "
                                  "cache: this model's attention bypasses transformers' attention interface")

    def forward(self, model, input_ids: torch.Tensor, position_ids: torch.Tensor):
        """One forward pass of ``model`` over one new token per active row (``input_ids``, ``position_ids``:
        ``[rows, 1]``), attending to the base and the tail, which it extends. Returns the model's output."""
        with self.active(model) as routed:
            return model(input_ids=input_ids, position_ids=position_ids, past_key_values=self.tail, use_cache=True,
                         **routed)

    def attend(self, module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               scaling: float | None) -> torch.Tensor:
        """Attention of each row's query (``[rows, heads, 1, d]``) over its base and its tail (``key``,
        ``value``: ``[rows, kv_heads, tail, d]``). Returns ``[rows, 1, heads, d]`` in the query's dtype; the
        arithmetic is float32 (for a float32 model, the tensors as they are)."""
        rows, heads, q, d = query.shape
        if q != 1:
            raise SplitCacheError("split attention decodes one token per row and step")
        layer = module.layer_idx
        base_k, base_v = self.keys[layer], self.values[layer]
        slot, where, bias = self._index(query.device)
        bases, kv = base_k.shape[0], base_k.shape[1]
        g = heads // kv
        scale = d ** -0.5 if scaling is None else scaling
        qr = query.float().reshape(rows, kv, g, d)
        key, value = key.float(), value.float()
        # base: the queries of each base row's rows stacked, one product per base row
        if self._plain:
            qb = qr.reshape(bases, self.most, kv, g, d)
        else:  # [bases, most, kv, g, d], zero queries in the empty slots
            qb = torch.cat([qr, qr.new_zeros(1, kv, g, d)]).index_select(0, slot).reshape(bases, self.most, kv, g, d)
        qb = qb.transpose(1, 2).reshape(bases, kv, self.most * g, d)
        sb = torch.matmul(qb, base_k.transpose(-1, -2)) * scale + bias[:, None, None, :]
        mb = sb.amax(-1, keepdim=True)
        pb = torch.exp(sb - mb)
        zb = pb.sum(-1, keepdim=True)
        ob = torch.matmul(pb, base_v)

        # back to rows: [bases, kv, most * g, d + 2] -> [rows, kv, g, d + 2], one gather for all three
        both = torch.cat([ob, mb, zb], dim=-1).reshape(bases, kv, self.most, g, d + 2).transpose(1, 2)
        both = both.reshape(bases * self.most, kv, g, d + 2)
        if not self._plain:
            both = both.index_select(0, where)
        ob, mb, zb = both[..., :d], both[..., d:d + 1], both[..., d + 1:]
        # tail: each row's own tokens, the current one included
        st = torch.matmul(qr, key.transpose(-1, -2)) * scale  # [rows, kv, g, tail]
        mt = st.amax(-1, keepdim=True)
        pt = torch.exp(st - mt)
        zt = pt.sum(-1, keepdim=True)
        ot = torch.matmul(pt, value)
        m = torch.maximum(mb, mt)
        ab, at = torch.exp(mb - m), torch.exp(mt - m)
        out = (ob * ab + ot * at) / (zb * ab + zt * at)
        self.calls += 1
        return out.reshape(rows, 1, heads, d).to(query.dtype)
