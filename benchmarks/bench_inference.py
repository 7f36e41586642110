"""Inference benchmark: measured side by side in one run, printed as ratios.

1. Object-level generation: the engine (length-bucketed, left-padded batches, newline stop) against a naive
   loop that calls ``model.generate`` on one prompt at a time (greedy, same token limit, stopping at EOS
   only). Target: 8x or more on a CPU. Beside it, the engine at batch size 1 isolates what batching alone
   gives. On a CPU these prompts (about 90 tokens, answers of a few tokens) are dominated by the prompt's
   forward pass, which costs the same per token batched or not; batching pays most on a GPU.
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


def naive_loop(lm, prompts: list[str], max_new_tokens: int) -> list[str]:
    """One prompt at a time through ``model.generate``: greedy, EOS stop only, no batching."""
    tok, out = lm.tokenizer, []
    with torch.inference_mode():
        for p in prompts:
            enc = tok(lm.format.render(p), return_tensors="pt", add_special_tokens=lm.format.add_special_tokens)
            ids = lm.model.generate(**enc.to(lm.device), max_new_tokens=max_new_tokens, do_sample=False,
                                    pad_token_id=tok.pad_token_id)
            out.append(tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
    return out


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
    _, t_naive = timed(lambda: naive_loop(lm, prompts, 24))
    same = sum(x[0].response == y[0].response for x, y in zip(a, b))
    tok = lm.tokenizer
    prompt_tokens = sum(len(tok(t, add_special_tokens=lm.format.add_special_tokens)["input_ids"])
                        for t in batched.render(prompts)) / len(prompts)
    new_tokens = sum(x[0].n_new_tokens for x in a) / len(a)
    print(f"object level   ({prompt_tokens:.0f} prompt tokens, {new_tokens:.1f} new tokens per prompt on average)")
    print(f"  engine, batch {args.batch_size:<3}   {args.n / t_batched:7.2f} prompts/s")
    print(f"  naive generate loop {args.n / t_naive:7.2f} prompts/s | speed-up {t_naive / t_batched:5.1f}x (target >= 8x)")
    print(f"  engine, batch 1     {args.n / t_single:7.2f} prompts/s | speed-up {t_single / t_batched:5.1f}x from batching"
          f" alone (identical responses {same}/{args.n})")

    meta = [it["hypothetical_prompts"]["starts_with_vowel"] for it in load_task("animals").items[: args.n]]
    opts = [("true", "false")] * len(meta)
    _, t_scored = timed(lambda: batched.generate(meta, 1, options=opts))
    _, t_sampled = timed(lambda: batched.generate(meta, 6, n=args.samples, temperature=1.0, seed=0))
    print(f"meta options   exact scoring {len(meta) / t_scored:7.2f} prompts/s | {args.samples} samples per prompt"
          f" {len(meta) / t_sampled:7.2f} prompts/s | speed-up {t_sampled / t_scored:5.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
