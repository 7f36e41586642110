"""Decoding without copying the key-value cache at every step.

transformers' ``DynamicLayer`` appends each new position with ``torch.cat``, which copies the layer's whole
cache: at 128 rows and a few hundred positions that copy costs about a third of the step's attention on a CPU.
:func:`preallocate` gives each full-attention layer of a cache a buffer with room for the positions still to
come, so a decoding step writes one position in place. The layer's ``keys`` / ``values`` stay views of the
filled part, so the model reads exactly the tensors it would have read (the values are bit-identical; only
their strides differ). Sliding-window layers (Gemma 3's local layers) crop themselves and are left as they are.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """A full-attention cache layer whose keys and values live in buffers with spare positions."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int):
        super().__init__()
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True
        self._fill(keys, values, room)

    def _fill(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> None:
        n = keys.shape[-2]
        self._k = keys.new_empty((*keys.shape[:-2], n + max(room, 1), keys.shape[-1]))
        self._v = values.new_empty((*values.shape[:-2], n + max(room, 1), values.shape[-1]))
        self._k[..., :n, :] = keys
        self._v[..., :n, :] = values
        self._n = n
        self._expose()

    def _expose(self) -> None:
        self.keys = self._k[..., :self._n, :]
        self.values = self._v[..., :self._n, :]
        self._exposed = self.keys

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if self.keys is not self._exposed:  # replaced from outside (crop, reorder, offload): start a new buffer
            self._fill(self.keys, self.values, key_states.shape[-2])
        n = key_states.shape[-2]
        if self._n + n > self._k.shape[-2]:  # out of room: double it (an amortised copy, not one per step)
            self._fill(self.keys, self.values, max(n, self._n))
        self._k[..., self._n:self._n + n, :] = key_states
        self._v[..., self._n:self._n + n, :] = value_states
        self._n += n
        self._expose()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.keys is not self._exposed:
            return super().batch_select_indices(indices)
        self._k, self._v = self._k[indices, ...], self._v[indices, ...]  # the room travels with the rows
        self._expose()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.keys is not self._exposed:
            return super().batch_repeat_interleave(repeats)
        self._k = self._k.repeat_interleave(repeats, dim=0)
        self._v = self._v.repeat_interleave(repeats, dim=0)
        self._expose()


def preallocate(cache, room: int) -> int:
    """Give every plain full-attention layer of ``cache`` (a transformers ``DynamicCache``) room for ``room``
    more positions, in place. Returns the number of layers converted (0 for a cache of another kind)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return 0
    done = 0
    for i, layer in enumerate(layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys is not None and layer.keys.dim() == 4:
            layers[i] = PreallocatedLayer(layer.keys, layer.values, room)
            done += 1
    return done
