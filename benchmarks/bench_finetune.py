"""Finetuning throughput and peak memory, for each model in its own process (so peaks do not mix).

Trains LoRA on real hypothetical prompts of the train tasks (answers: the property of a fixed response,
which is enough to time the loop) for a fixed number of steps and prints examples/s and peak memory.

    python benchmarks/bench_finetune.py                        # both embedded models, params of `default`
    python benchmarks/bench_finetune.py --steps 20 --mixed-precision no
    python benchmarks/bench_finetune.py --models random:llama-8b --profile paper \
        --base-dtype float32 bfloat16 --gradient-checkpointing false true   # every combination, side by side

Beside each measured peak it prints the estimate of ``looking-inward plan`` for the same batch (its longest
padded pair), so the memory model is checked against the device.

``--layouts`` times one training step in two layouts side by side, alternating, on the same batches: every
row computed in full (``finetune.collate``), and the prompt prefix the rows share computed once
(``finetune.collate_step``, what training uses); it prints the positions each computes, the seconds per step
and their ratio, and how far the gradients are apart.

    python benchmarks/bench_finetune.py --layouts --mixed-precision no      # float32, both embedded models
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def one(spec: str, steps: int, mixed_precision: str, profile: str, base_dtype: str, checkpointing: str) -> dict:
    import tempfile

    import torch

    import reproduce.lm.finetune as ft
    from reproduce.config import load_params
    from reproduce.hardware import resolve_base_dtype, resolve_gradient_checkpointing, usable_cpus
    from reproduce.lm.models import load, pick_device, resolve
    from reproduce.lm.memory_plan import GIB, shape_of, training_bytes

    _, p = load_params(profile=profile)
    ckpt = {"true": True, "false": False}.get(checkpointing, checkpointing)
    cfg = p.finetune.model_copy(update={"mixed_precision": mixed_precision, "checkpoint_every": 10**6,
                                        "epochs": 1.0, "base_dtype": base_dtype, "gradient_checkpointing": ckpt})
    torch.set_num_threads(p.threads or usable_cpus())  # the stage's rule for threads: null
    examples = _examples(p, steps * cfg.batch_size)
    dev = pick_device(p.device)
    lm = load(spec, dtype=resolve_base_dtype(cfg.base_dtype, dev), device=p.device)
    if lm.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    enc = ft.encode(lm, examples, cfg.max_length)
    longest = max(len(a) + len(b) for a, b in zip(enc.prompt_ids, enc.answer_ids))
    on = resolve_gradient_checkpointing(cfg.gradient_checkpointing, dev)
    estimate = training_bytes(shape_of(resolve(spec)), lm.dtype_name, cfg.lora_rank, cfg.batch_size * longest,
                              cfg.batch_size, on) / GIB
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        summary = ft.finetune(lm, examples, cfg, d, seed=0)
        dt = time.perf_counter() - t
    device = torch.cuda.get_device_name() if lm.device.type == "cuda" else "CPU"
    peak = (torch.cuda.max_memory_allocated() / 2**30 if lm.device.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    return {"model": spec, "device": device, "examples": len(examples), "steps": summary["steps"],
            "seconds": dt, "examples_per_s": len(examples) / dt, "peak_gib": peak,
            "mixed_precision": mixed_precision, "batch_size": cfg.batch_size, "lora_rank": cfg.lora_rank,
            "base_dtype": lm.dtype_name, "checkpointing": on, "estimate_gib": estimate, "longest": longest}


def _examples(p, n: int):
    """``n`` real hypothetical prompts of the train tasks, answered with the property of a fixed response
    (enough to time the loop)."""
    import pandas as pd

    from reproduce.self_prediction.task_data import load_task
    from reproduce.self_prediction.properties import get_property

    rows = []
    for name in p.tasks.train:
        task = load_task(name)
        for it in task.items:
            for prop in task.manifest["properties"]:
                v = get_property(prop).extract("amber teal 42 A", {**it, "option_matching_ethical_stance": "A"})
                if v is not None:
                    rows.append({"prompt": it["hypothetical_prompts"][prop], "answer": v})
    return pd.DataFrame(rows).sample(n=min(n, len(rows)), random_state=0).reset_index(drop=True)


def layouts(spec: str, steps: int, mixed_precision: str, profile: str, rounds: int = 3) -> dict:
    """Seconds per training step (forward, backward, AdamW) with every row in full against the shared-prefix
    layout, alternated ``rounds`` times over the same ``steps`` batches; medians."""
    import statistics

    import torch

    import reproduce.lm.finetune as ft
    from reproduce.config import load_params
    from reproduce.hardware import resolve_mixed_precision, usable_cpus
    from reproduce.lm.models import load

    _, p = load_params(profile=profile)
    torch.set_num_threads(p.threads or usable_cpus())  # the stage's rule for threads: null
    cfg = p.finetune
    lm = load(spec, dtype="float32", device=p.device)
    enc = ft.encode(lm, _examples(p, steps * cfg.batch_size), cfg.max_length)
    pairs = list(zip(enc.prompt_ids, enc.answer_ids))
    batches = [pairs[i:i + cfg.batch_size] for i in range(0, len(pairs), cfg.batch_size)]
    pad = lm.tokenizer.pad_token_id
    torch.manual_seed(0)
    model = ft._lora(lm, cfg)
    params = [q for q in model.parameters() if q.requires_grad]
    with torch.no_grad():  # B = 0 at initialisation would leave A without gradient
        for n, q in model.named_parameters():
            if "lora_B" in n:
                q.normal_(0, 0.01)
    opt = torch.optim.AdamW(params, lr=1e-6)
    precision = resolve_mixed_precision(mixed_precision, lm.device)
    autocast = torch.autocast(lm.device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    make = {"full": lambda b: ft.collate(b, pad), "shared prefix": lambda b: ft.collate_step(b, pad)}

    def grads(batch):
        with autocast:
            ft.answer_loss(model, batch, "sum").backward()
        g = [q.grad.clone() for q in params]
        opt.zero_grad(set_to_none=True)
        return g

    model.train()
    a, b = grads(make["full"](batches[0])), grads(make["shared prefix"](batches[0]))
    num = sum(float((x - y).pow(2).sum()) for x, y in zip(b, a))
    gap = (num / sum(float(y.pow(2).sum()) for y in a)) ** 0.5
    times: dict[str, list[float]] = {k: [] for k in make}
    for _ in range(rounds):
        for name, f in make.items():
            t = time.perf_counter()
            for batch in batches:
                with autocast:
                    ft.answer_loss(model, f(batch), "sum").backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            times[name].append((time.perf_counter() - t) / len(batches))
    positions = {name: sum(x.get("prefix_ids", torch.empty(0)).numel() + x["input_ids"].numel()
                           for x in map(f, batches)) for name, f in make.items()}
    return {"model": spec, "steps": len(batches), "batch_size": cfg.batch_size, "precision": precision,
            "seconds": {k: statistics.median(v) for k, v in times.items()}, "positions": positions, "gap": gap}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--mixed-precision", default="bf16", choices=["no", "bf16", "fp16"])
    ap.add_argument("--profile", default="default", help="params profile for LoRA rank, batch size, threads")
    ap.add_argument("--base-dtype", nargs="+", default=["auto"], choices=["auto", "float32", "bfloat16"],
                    help="dtype(s) of the frozen base weights (finetune.base_dtype)")
    ap.add_argument("--gradient-checkpointing", nargs="+", default=["auto"], choices=["auto", "true", "false"])
    ap.add_argument("--layouts", action="store_true",
                    help="time the full-row and shared-prefix step layouts side by side (see above)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.layouts:
        from reproduce.hardware import describe

        print(describe("cpu"))
        for spec in args.models:
            r = layouts(spec, args.steps, args.mixed_precision, args.profile)
            full, shared = r["seconds"]["full"], r["seconds"]["shared prefix"]
            print(f"{spec:<13} {r['steps']} steps of {r['batch_size']}, {r['precision']}: every row in full "
                  f"{full:.2f} s/step ({r['positions']['full']} positions), shared prefix {shared:.2f} s/step "
                  f"({r['positions']['shared prefix']} positions): {full / shared:.2f}x; gradients apart by "
                  f"{r['gap']:.1e} (relative norm)")
        return
    if args.child:
        print(json.dumps(one(args.child, args.steps, args.mixed_precision, args.profile, args.base_dtype[0],
                             args.gradient_checkpointing[0])))
        return
    for spec, base, ckpt in [(m, b, c) for m in args.models for b in args.base_dtype for c in args.gradient_checkpointing]:
        out = subprocess.run([sys.executable, __file__, "--child", spec, "--steps", str(args.steps),
                              "--mixed-precision", args.mixed_precision, "--profile", args.profile,
                              "--base-dtype", base, "--gradient-checkpointing", ckpt],
                             capture_output=True, text=True)
        if out.returncode:
            print(f"{spec}: failed\n{out.stderr[-4000:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['model']:<13} {r['device']}: {r['examples_per_s']:6.2f} examples/s ({r['examples']} examples, "
              f"{r['steps']} steps of {r['batch_size']}, {r['steps'] / r['seconds']:.2f} steps/s, LoRA rank {r['lora_rank']}, {r['mixed_precision']}) | "
              f"base {r['base_dtype']}, checkpointing {'on' if r['checkpointing'] else 'off'} | "
              f"peak {'GPU' if r['device'] != 'CPU' else 'RSS'} {r['peak_gib']:.2f} GiB (plan estimate "
              f"{r['estimate_gib']:.2f} GiB at longest pair {r['longest']})")


if __name__ == "__main__":
    main()
