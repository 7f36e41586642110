"""Inference benchmark: measured side by side in one run, printed as ratios.

1. Object-level generation: the batched engine (length-bucketed, left-padded batches) against a naive loop
   that sends one prompt at a time through the same ``generate`` call with the same stop rules, so the
   ratio measures batching alone. Target: 8x or more on a CPU.
2. Meta-level distributions: exact option scoring (one forward pass, greedy run with first-step logits)
   against estimating the same distribution by sampling 20 answers per prompt. Target: 20x or more.

    python benchmarks/bench_inference.py                 # SmolLM2, bfloat16, 64 prompts
    python benchmarks/bench_inference.py --model gemma3-270m --dtype float32 --n 32
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch

from reproduce.datasets import load_task
from reproduce.engine import Engine
from reproduce.models import load


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    ap.add_argument("--n", type=int, default=64, help="prompts per measurement")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--samples", type=int, default=20, help="samples per prompt for the sampling estimate")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    lm = load(args.model, dtype=args.dtype)
    batched, single = Engine(lm, batch_size=args.batch_size), Engine(lm, batch_size=1)
    device = torch.cuda.get_device_name() if lm.device.type == "cuda" else f"CPU ({platform.processor() or platform.machine()})"
    print(f"model {args.model}, {args.dtype}, {device}, {args.threads} threads, {args.n} prompts")

    tasks = ["animals", "english_words", "years", "categories", "myopic_reward", "survival_instinct"]
    items = [it for t in tasks for it in load_task(t).items[: -(-args.n // len(tasks))]][: args.n]
    prompts = [it["object_prompt"] for it in items]
    batched.generate(prompts[:2], 4)  # warm-up
    a, t_batched = timed(lambda: batched.generate(prompts, 24))
    b, t_single = timed(lambda: single.generate(prompts, 24))
    same = sum(x[0].response == y[0].response for x, y in zip(a, b))
    print(f"object level   batched {args.n / t_batched:7.2f} prompts/s | one at a time {args.n / t_single:7.2f} prompts/s"
          f" | speed-up {t_single / t_batched:5.1f}x (target >= 8x; identical responses {same}/{args.n})")

    meta = [it["hypothetical_prompts"]["starts_with_vowel"] for it in load_task("animals").items[: args.n]]
    opts = [("true", "false")] * len(meta)
    _, t_scored = timed(lambda: batched.generate(meta, 1, options=opts))
    _, t_sampled = timed(lambda: batched.generate(meta, 6, n=args.samples, temperature=1.0, seed=0))
    print(f"meta options   scored  {len(meta) / t_scored:7.2f} prompts/s | {args.samples} samples {len(meta) / t_sampled:7.2f}"
          f" prompts/s | speed-up {t_sampled / t_scored:5.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
