"""Several processes (``torchrun --nproc_per_node 2`` on the CPU, gloo; accelerate's own multi-CPU launcher
needs MPI) give what one process gives: the same inference tables, with the shards shared out between the
processes, and the same LoRA adapter for the same global batch, with the loss weighted by answer tokens across
processes; only the main process writes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent  # conftest.py


def _run(cmd: list[str], root: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd + [str(HERE / "dist_driver.py"), str(root)], capture_output=True, text=True, env=env,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    one, two = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("two")
    _run([sys.executable], one)
    _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"], two)
    return one, two


@pytest.mark.slow
def test_two_processes_share_the_shards_and_give_the_same_tables(runs):
    one, two = runs
    by_rank = [set(json.loads((two / f"computed-{r}.json").read_text())) for r in (0, 1)]
    assert by_rank[0] and by_rank[1] and not by_rank[0] & by_rank[1]  # both computed, none twice
    assert by_rank[0] | by_rank[1] == set(json.loads((one / "computed-0.json").read_text()))
    tables = sorted(p.relative_to(one) for p in one.rglob("*.parquet") if "work" not in p.parts)
    assert len(tables) == 5  # 2 object-level, 2 sample tables, the meta level
    for rel in tables:
        pd.testing.assert_frame_equal(pd.read_parquet(one / rel), pd.read_parquet(two / rel))


@pytest.mark.slow
def test_two_processes_train_the_same_adapter_for_the_same_global_batch(runs):
    one, two = runs
    a = load_file(one / "finetune" / "adapter" / "adapter_model.safetensors")
    b = load_file(two / "finetune" / "adapter" / "adapter_model.safetensors")
    assert a.keys() == b.keys()
    moved = max(float(t.abs().max()) for k, t in a.items() if "lora_B" in k)
    assert moved > 1e-3  # training did something (B starts at zero)
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=1e-4, atol=1e-5)
    la = pd.read_csv(one / "finetune" / "train_log.tsv", sep="\t")
    lb = pd.read_csv(two / "finetune" / "train_log.tsv", sep="\t")
    assert list(lb["step"]) == list(la["step"]) == list(range(1, 7))
    assert lb["loss"].tolist() == pytest.approx(la["loss"].tolist(), rel=1e-5)
    # one summary, written once, by the main process
    assert json.loads((two / "finetune" / "summary.json").read_text())["steps"] == 6
