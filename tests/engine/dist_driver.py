"""Run by tests/engine/test_distributed.py, once as one process and once under ``accelerate launch`` with two: the
object and meta levels of two tiny random models, and one LoRA finetune, into the folder given."""

import json
import sys
from pathlib import Path

import torch

from conftest import tiny_profile
import reproduce.dist as dist
import reproduce.lm.finetune as ft
from reproduce.config import Finetune
from reproduce.shards import ShardStore
from reproduce.self_prediction import Plan, run_meta_untrained, run_object_level

root = Path(sys.argv[1])
ShardStore.map.__defaults__ = (1,)  # one item per shard, so that both processes get shards to compute
computed = []
write = ShardStore.write
ShardStore.write = lambda self, key, df: (computed.append(key), write(self, key, df))[1]

plan = Plan(tiny_profile(models=["a=random:tiny", "b=random:tiny"], threads=1))
run_object_level(plan, root / "object_level", root / "object_samples", root / "work")
run_meta_untrained(plan, root / "object_level", root / "meta_untrained.parquet", root / "work")

# a finetune whose global batch (5 pairs) does not split evenly over two processes
prompts = [f"Question {i}: name a colour." for i in range(15)]
answers = ["amber", "teal", "ochre", "red", "blue"] * 3
examples = __import__("pandas").DataFrame({"prompt": prompts, "answer": answers})
from reproduce.lm.models import load  # noqa: E402

lm = load("random:tiny", dtype="float32", device="cpu")
cfg = Finetune(lora_rank=4, lora_alpha=8, learning_rate=5e-3, epochs=2, batch_size=5, mixed_precision="no",
               checkpoint_every=100, max_length=256)
torch.use_deterministic_algorithms(True)
ft.finetune(lm, examples, cfg, root / "finetune", seed=0)
(root / f"computed-{dist.rank()}.json").write_text(json.dumps(computed))
