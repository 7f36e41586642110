"""Resumable shards keyed by content, and the code and runtime versions that fingerprints carry."""

import pandas as pd
import pytest

import reproduce.versioning as versioning
from reproduce.shards import ShardStore, chunk_key

ITEMS = [{"item_id": f"colors-{i:03d}", "word": f"w{i}"} for i in range(20)]


def rows_of(chunk: list) -> pd.DataFrame:
    return pd.DataFrame({"item_id": [it["item_id"] for it in chunk], "word": [it["word"] for it in chunk]})


class Recorder:
    def __init__(self):
        self.chunks: list[list[str]] = []

    def __call__(self, k: int, chunk: list) -> pd.DataFrame:
        self.chunks.append([it["item_id"] for it in chunk])
        return rows_of(chunk)


def test_another_selection_of_items_gets_its_own_rows_and_reuses_shared_chunks(tmp_path):
    """The behaviour-change stage evaluating other items with the same fingerprint: every row belongs to an
    item asked for, in order, and only chunks with new content are computed."""
    store = ShardStore(tmp_path, {"stage": "test"})
    first = Recorder()
    a = store.map("colors", ITEMS[:10], first, size=4)
    assert first.chunks == [[f"colors-{i:03d}" for i in r] for r in (range(0, 4), range(4, 8), range(8, 10))]
    pd.testing.assert_frame_equal(a, rows_of(ITEMS[:10]))

    shifted = Recorder()  # overlapping but differently cut: nothing of the first run fits, nothing stale read
    b = store.map("colors", ITEMS[5:15], shifted, size=4)
    pd.testing.assert_frame_equal(b, rows_of(ITEMS[5:15]))
    assert len(shifted.chunks) == 3

    grown = Recorder()  # the first selection extended: its two full chunks are reused, the rest computed
    c = store.map("colors", ITEMS[:16], grown, size=4)
    pd.testing.assert_frame_equal(c, rows_of(ITEMS[:16]))
    assert grown.chunks == [[f"colors-{i:03d}" for i in r] for r in (range(8, 12), range(12, 16))]

    again = Recorder()  # a finished selection is read back whole, with no computation
    pd.testing.assert_frame_equal(store.map("colors", ITEMS[5:15], again, size=4), b)
    assert again.chunks == []


def test_shard_keys_name_content_and_accept_plain_ids():
    assert chunk_key("t", ITEMS[:3]) == chunk_key("t", [it["item_id"] for it in ITEMS[:3]])
    assert chunk_key("t", ITEMS[:3]) != chunk_key("t", ITEMS[1:4]) != chunk_key("u", ITEMS[1:4])
    assert chunk_key("t", ITEMS[:2]) != chunk_key("t", ITEMS[:2][::-1])  # order is part of the rows


def test_a_compute_that_returns_other_items_is_refused(tmp_path):
    store = ShardStore(tmp_path, {"stage": "test"})
    with pytest.raises(RuntimeError, match="rows of items outside its chunk"):
        store.map("colors", ITEMS[:4], lambda k, chunk: rows_of(ITEMS[4:6]), size=4)


def test_code_version_follows_the_source_text(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "loss_a.py").write_text("def loss(x):\n    return x\n")
    (tmp_path / "loss_b.py").write_text("def loss(x):\n    return 2 * x\n")
    a = versioning.code_version("loss_a")
    assert a == versioning.code_version("loss_a") and len(a) == 16
    assert a != versioning.code_version("loss_b") != versioning.code_version("loss_a", "loss_b")
    assert versioning.code_version("reproduce.lm.engine") != versioning.code_version("reproduce.self_prediction.properties")


def test_runtime_versions_name_the_installed_libraries():
    import torch
    import transformers

    v = versioning.runtime_versions()
    assert v["torch"].split("+")[0] == torch.__version__.split("+")[0]
    assert v["transformers"] == transformers.__version__


def test_a_store_counts_the_shards_it_computed_and_those_an_earlier_run_left(tmp_path):
    first = ShardStore(tmp_path, {"stage": "count"})
    first.map("colors", ITEMS[:8], Recorder(), size=4)
    first.cached("summary", lambda: pd.DataFrame({"n": [8]}))
    assert (first.computed, first.reused) == (3, 0)
    again = ShardStore(tmp_path, {"stage": "count"})  # a rerun, one chunk more
    again.map("colors", ITEMS[:12], Recorder(), size=4)
    again.cached("summary", lambda: pytest.fail("a finished shard is computed again"))
    assert (again.computed, again.reused) == (1, 3)
