"""Resumable stage work: results are written in small shards, atomically, under a fingerprint.

A shard is one parquet file for one unit of work (a chunk of items of one task). A stage that is killed
and re-run finds its finished shards and skips them, so no row is lost or written twice. The fingerprint
folder is named by a hash of everything that determines the results (model weights, dtype, batch size,
dataset hash, generation settings, code version); changing any of them starts a fresh folder instead of
mixing incompatible rows. Within a folder a shard is named by a hash of the item ids it holds, not by its
position: a stage that evaluates another selection of items reuses exactly the chunks it shares with an
earlier run and computes the rest, and can never read rows of items it did not ask for. Work folders live
under ``data/.work``, outside DVC's outputs, because DVC deletes a stage's outputs before running it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import reproduce.dist as dist
from reproduce.io import atomic_write_json, atomic_write_parquet, short_hash


SHARD_ITEMS = 64  # items per shard: a killed stage loses at most this much work per model


class ShardStore:
    def __init__(self, root: str | Path, fingerprint: dict[str, Any]):
        self.fingerprint = fingerprint
        self.dir = Path(root) / short_hash(json.dumps(fingerprint, sort_keys=True, default=str))
        self.dir.mkdir(parents=True, exist_ok=True)
        fp = self.dir / "fingerprint.json"
        if not fp.exists():
            atomic_write_json(fp, fingerprint)
        # shards this store computed, and shards it found finished (by an earlier, perhaps killed, run): a stage's
        # wall time covers only the former's work
        self.computed = self.reused = 0

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.parquet"

    def done(self, key: str) -> bool:
        return self.path(key).exists()

    def write(self, key: str, df: pd.DataFrame) -> None:
        atomic_write_parquet(self.path(key), df)

    def cached(self, key: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        """The shard ``key``, computed and written first if it is not there yet."""
        if self.done(key):
            self.reused += 1
        else:
            self.write(key, compute())
            self.computed += 1
        return self.read([key])

    def read(self, keys: list[str]) -> pd.DataFrame:
        missing = [k for k in keys if not self.done(k)]
        if missing:
            raise RuntimeError(f"shards not finished: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        frames = [pd.read_parquet(self.path(k)) for k in keys]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def map(self, prefix: str, items: list, compute: Callable[[int, list], pd.DataFrame],
            size: int = SHARD_ITEMS) -> pd.DataFrame:
        """Cut ``items`` into consecutive chunks of ``size``; for each chunk ``k`` not finished yet, write the
        shard ``compute(k, chunk)`` under the key :func:`chunk_key` (``<prefix>-<hash of the chunk's item
        ids>``); return every shard's rows in order. ``k`` is the chunk's index in this call (for progress
        labels): the rows must depend on the chunk's items alone. Under several processes each computes
        its share of the chunks (:func:`reproduce.dist.mine`) and all read every shard after a barrier."""
        chunks = [items[k * size:(k + 1) * size] for k in range(0, -(-len(items) // size))]
        keys = [chunk_key(prefix, chunk) for chunk in chunks]
        # every chunk counted, whichever process computes it, by what was finished before this call began
        finished = [self.done(key) for key in keys]
        self.reused += sum(finished)
        self.computed += len(keys) - sum(finished)
        for k, (chunk, key) in enumerate(zip(chunks, keys)):
            if dist.mine(k) and not self.done(key):
                df = compute(k, chunk)
                if "item_id" in df.columns:
                    stray = set(df["item_id"]) - {item_id(it) for it in chunk}
                    if stray:
                        raise RuntimeError(f"shard {key}: compute returned rows of items outside its chunk: "
                                           f"{sorted(map(str, stray))[:5]}")
                self.write(key, df)
        dist.barrier()
        return self.read(keys)


def item_id(item: Any) -> str:
    """An item's id: its ``item_id`` field, or the item itself when it is a plain string."""
    return item if isinstance(item, str) else str(item["item_id"])


def chunk_key(prefix: str, chunk: list) -> str:
    """A shard's key: ``prefix`` and a hash of its item ids, in order (the rows come in that order)."""
    return f"{prefix}-{short_hash(chr(0).join(item_id(it) for it in chunk))}"
