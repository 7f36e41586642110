"""Inference benchmark on the `default` profile's workloads, measured side by side in one run, printed as ratios.

1. Meta level: every property's hypothetical prompt for the first items of each test task (as the meta_untrained
   stage asks them), greedy with option distributions: the engine against a naive loop that calls
   ``model.generate`` on one prompt at a time (greedy, same token limits, and the engine's stopping rule: EOS,
   or the first newline after content), whose answers must equal the engine's. Target >= 10x.
2. Calibration sampling, n = 20 samples per object-level prompt at temperature 1: the engine (one prefill per
   prompt, the samples decoded together) against a naive loop of one ``model.generate`` call per sample (the
   same stopping rule; the tokens each side generated are printed, so that the two did the same work).
   Beside it, one ``generate(num_return_sequences=20)`` call per prompt (batched, but the prompt computed 20
   times). Target >= 20x over the naive loop.
3. Exact option scoring (one forward pass) against estimating the same distribution from 20 samples. Target
   >= 20x.
4. The engine's achieved rate on (1) and (2): 2 x parameters x positions computed per second (body
   parameters for every position, the output layer only where logits are taken), as a fraction of a plain
   matmul of the model's own projection shape at the same dtype and thread count, measured in this run.
   Target >= 50%. Beside it, the share of prompt tokens not computed: for the meta level the prompts' shared
   prefixes, for sampling mostly the n samples of a prompt sharing its one prefill.

Beside every ratio it prints its ceiling on this machine: every forward pass the faster side made (recorded by a
hook on the model) priced by a roofline model, the larger of its arithmetic at the measured matmul rate and its
memory traffic (the weights read once, the key-value cache read and written) at the measured copy bandwidth;
the slower side's measured time over that sum is the most a path doing the same passes could gain here.

It prints the hardware, the dtype ``auto`` chose and the float32 vs bf16 matmul rates it measured.

``--chunks`` measures instead, side by side, the CPU prompt pass in chunks of similar length
(``Engine.chunk_cost``, the default on a CPU) against one padded pass per batch, on the `default` profile's
own calls: the meta level (every property of ``--items`` items of each test task) and the object level's
greedy answers (those items' object-level prompts), each mode run ``--repeats`` times, alternated; medians,
padded positions, and whether every answer is identical.

    python benchmarks/bench_inference.py                       # both embedded models, dtype auto
    python benchmarks/bench_inference.py --models gemma3-270m --dtype float32 --items 2
    python benchmarks/bench_inference.py --models random:llama-8b --items 2 --check   # real shapes, no weights
    python benchmarks/bench_inference.py --chunks --items 20 --dtype float32           # chunked vs one pass
    python benchmarks/bench_inference.py --attention                                   # SDPA vs eager attention
    python benchmarks/bench_inference.py --split --items 2 --repeats 5                 # split cache vs one cache

``--split`` times, side by side and alternated, sampling on the split key-value cache with the blocked
inverse-CDF draw (the engine's default on a CPU), on one cache per row with the blocked draw, and with neither
(one cache, the whole vocabulary's cumulative sum: the engine's default on a GPU), on the meta level, calibration sampling and 48-token free-text answers, with how
many outputs equal the one-cache engine's and in how many batches the split cache served.

``--attention`` times attention alone at the model's head shapes and dtype, on random tensors: SDPA as the
engine calls it against eager attention (transformers' ``eager`` computation), for a sampling decoding step
and a meta-level suffix pass, with the largest difference between their outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch

from reproduce.self_prediction.task_data import load_task
from reproduce.lm.engine import Engine, full_cdf, inverse_cdf
from reproduce.hardware import describe, matmul_gflops, measure_bf16, resolve_dtype, timed_rate, usable_cpus
from reproduce.lm.models import load
from reproduce.self_prediction.properties import get_property

TEST_TASKS = ["animals", "english_words", "years", "categories", "myopic_reward", "survival_instinct"]


def default_calls(items: int) -> tuple[tuple[list[str], dict], tuple[list[str], dict]]:
    """The `default` profile's meta-level call (every property of the first ``items`` items of each test task)
    and object-level call (those items' object prompts), each as its prompts and the keyword arguments of
    ``Engine.generate`` (lists, one entry per prompt)."""
    tasks = [load_task(t) for t in TEST_TASKS]
    pairs = [(it, p) for t in tasks for it in t.items[:items] for p in t.manifest["properties"]]
    meta = ([it["hypothetical_prompts"][p] for it, p in pairs],
            dict(max_new_tokens=[6 if get_property(p).closed else 10 for _, p in pairs],
                 options=[get_property(p).options for _, p in pairs]))
    obj = ([it["object_prompt"] for t in tasks for it in t.items[:items]],
           dict(max_new_tokens=[int(t.manifest["max_new_tokens"]) for t in tasks for _ in t.items[:items]]))
    return meta, obj


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


class NewlineStop:
    """The engine's stopping rule (:meth:`~reproduce.lm.engine.Engine.ends_line`) for ``model.generate``, as a
    stopping criterion row by row (EOS and the token limit end a row as they do anyway)."""

    def __init__(self, engine, start: int):
        self.engine, self.start = engine, start

    def __call__(self, input_ids, scores, **kwargs):
        done = []
        for row in input_ids[:, self.start:].tolist():
            seen = any(self.engine.has_content(t) for t in row[:-1])
            done.append(bool(row) and self.engine.ends_line(row[-1], seen))
        return torch.tensor(done, device=input_ids.device)


def naive(engine, prompts: list[str], limits: list[int], sample: bool = False, n: int = 1) -> tuple[int, int, list[str]]:
    """``model.generate`` on one prompt at a time (``n`` times when sampling, or once with
    ``num_return_sequences=n`` when ``n`` is negative), under the engine's stopping rule and attention kernels;
    returns the number of sequences, the tokens generated and, greedy, each prompt's answer (cut as the engine
    cuts it)."""
    from transformers import StoppingCriteriaList

    from reproduce.lm.engine import cut_response

    lm = engine.lm
    tok, seqs, generated, answers = lm.tokenizer, 0, 0, []
    ends = set(engine.eos_ids) | {tok.pad_token_id}  # a row that stopped is padded to the batch's length
    with torch.inference_mode(), engine.attention_backends():
        for p, m in zip(prompts, limits):
            enc = tok(lm.format.render(p), return_tensors="pt", add_special_tokens=lm.format.add_special_tokens)
            start = enc["input_ids"].shape[1]
            kw = dict(max_new_tokens=m, pad_token_id=tok.pad_token_id, do_sample=sample,
                      stopping_criteria=StoppingCriteriaList([NewlineStop(engine, start)]))
            if sample:
                kw.update(temperature=1.0, top_k=0, top_p=1.0)
            rows, times = (-n, 1) if n < 0 else (1, n)
            for _ in range(times):
                out = lm.model.generate(**enc.to(lm.device), num_return_sequences=rows, **kw)[:, start:]
                for r in out.tolist():
                    cut = next((i for i, t in enumerate(r) if t in ends), len(r))
                    generated += cut
                    if not sample:
                        answers.append(cut_response(tok.decode(r[:cut]))[0])
                seqs += rows
    return seqs, generated, answers


def weights(lm) -> tuple[int, int]:
    """(body, output layer) parameter counts: the body is every weight but the embeddings and the output layer
    (embedding lookups are not matmuls; a tied output layer is counted once, as the output layer)."""
    model = lm.model
    out = model.get_output_embeddings().weight
    emb = model.get_input_embeddings().weight
    return sum(p.numel() for p in model.parameters()) - emb.numel() - (0 if out is emb else out.numel()), out.numel()


def flops(lm, positions: int, logit_rows: int) -> float:
    """2 x parameters x positions: the body's weights for every computed position, the output layer's for
    every position whose logits were taken."""
    body, out = weights(lm)
    return 2.0 * (body * positions + out * logit_rows)


def roofline(lm) -> float:
    """A plain matmul of the model's MLP up-projection shape (512 rows), at the model's dtype, GFLOP/s."""
    cfg = lm.model.config
    return matmul_gflops(lm.dtype, lm.device.type, (512, cfg.hidden_size, cfg.intermediate_size), min_seconds=0.5)


def memory_gbps(device: str, mib: int = 512, min_seconds: float = 0.5) -> float:
    """Copy bandwidth, GB/s of bytes read plus written, of one ``mib`` MiB tensor copied into another."""
    src = torch.ones(mib << 18, device=device)  # float32: 4 bytes each
    dst = torch.empty_like(src)
    return timed_rate(lambda: dst.copy_(src), 2 * src.numel() * 4 / 1e9, device, min_seconds)


@contextlib.contextmanager
def recorded(lm):
    """Every forward pass of ``lm``'s model while the block runs, as (rows, new positions per row, key-value
    positions per row after the pass, rows whose logits are computed). Logit rows are read from
    ``logits_to_keep``; a pass that projects only selected positions by a hook on the output layer
    (``Engine.score`` on long continuations) is counted with every position's logits."""
    passes: list[tuple[int, int, int, int]] = []

    def hook(module, args, kwargs):
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        rows, width = ids.shape
        mask, split = kwargs.get("attention_mask"), kwargs.get("split_cache")
        keep = kwargs.get("logits_to_keep", 0)  # 0: every position
        if split is not None:  # a row attends to its base (padding included) and its own tokens
            kv = split.keys[0].shape[-2] + split.tail.get_seq_length() + width
        else:
            kv = width if mask is None else mask.shape[-1]
        passes.append((rows, width, kv, rows * (width if not keep else min(keep, width))))

    handle = lm.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield passes
    finally:
        handle.remove()


def attention_dims(lm) -> tuple[int, int, int, int]:
    """(layers, query heads, key-value heads, head size) of ``lm``'s language model."""
    cfg = lm.model.config
    cfg = getattr(cfg, "text_config", cfg)
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return cfg.num_hidden_layers, heads, getattr(cfg, "num_key_value_heads", None) or heads, head_dim


def bound_seconds(lm, passes, gflops: float, gbps: float) -> float:
    """The roofline model's time for ``passes``: each pass takes the larger of its arithmetic at ``gflops`` and
    its memory traffic at ``gbps``. Arithmetic: the weights' matmuls (body for every position, output layer where
    logits are taken) and causal attention over the cache. Traffic: the weights read once, the key-value cache
    read once and the new positions written. A lower bound: activations, softmax and the rest are free. On a
    split cache (sampling) the traffic is priced as if every row held its own copy of its prompt, more than the
    split reads; on a CPU the arithmetic is the larger term of these passes either way."""
    body, out = weights(lm)
    layers, heads, kv_heads, head_dim = attention_dims(lm)
    size = torch.finfo(lm.dtype).bits // 8
    kv_bytes = layers * 2 * kv_heads * head_dim * size  # per position
    total = 0.0
    for rows, width, kv, logits in passes:
        pairs = rows * (width * (kv - width) + width * (width + 1) / 2)  # (query, key) pairs under the causal mask
        arithmetic = 2.0 * (body * rows * width + out * logits) + 4.0 * layers * heads * head_dim * pairs
        traffic = size * (body + (out if logits else 0)) + kv_bytes * rows * (kv + width)
        total += max(arithmetic / (gflops * 1e9), traffic / (gbps * 1e9))
    return total


def profiled(lm, engine, label: str, call, first: float) -> None:
    """Run ``call`` once more under torch.profiler and print its time beside the first call's and the ops by
    their own CPU time (``--profile``)."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if lm.device.type == "cuda" else [])
    engine.stats = type(engine.stats)()
    with torch_profile(activities=acts) as prof:
        _, t_again = timed(call)
    print(f"profile         {label} again: {t_again:.2f} s (first call {first:.2f} s)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


def check_sharing(lm, prompts, limits, options, batch_size) -> None:
    """Prefix sharing against full recomputation on this device, in float32 (the weights are upcast for the
    check and cast back, which is exact): greedy texts and option distributions."""
    dtype = lm.model.dtype
    lm.model.float()
    lm.dtype = torch.float32
    try:
        a = Engine(lm, batch_size=batch_size).generate(prompts, limits, options=options)
        b = Engine(lm, batch_size=batch_size, share_prefix=False).generate(prompts, limits, options=options)
    finally:
        lm.model.to(dtype)
        lm.dtype = dtype
    same = sum(x[0].raw == y[0].raw for x, y in zip(a, b))
    diff = max((abs(u - v) for x, y in zip(a, b) if x[0].option_probs and y[0].option_probs
                for u, v in zip(x[0].option_probs, y[0].option_probs)), default=0.0)
    print(f"check           prefix sharing vs full recomputation (float32): {same}/{len(a)} greedy texts "
          f"identical, option probabilities differ by at most {diff:.2e}")


def bench(spec: str, dtype: str, items: int, sample_items: int, n: int, batch_size: int, check: bool,
          profile: bool = False) -> None:
    lm = load(spec, dtype=dtype)
    c = lm.dtype_choice
    engine = Engine(lm, batch_size=batch_size)
    params = sum(p.numel() for p in lm.model.parameters())
    print(f"\n== {spec}: {params / 1e9:.2f}B parameters, {lm.dtype_name} (dtype {c.requested}: {c.reason}), "
          f"batch {batch_size}")
    peak, bw = roofline(lm), memory_gbps(lm.device.type)  # before the reset: the probes' buffers are not the engine's
    if lm.device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    print(f"roofline model  matmul {peak:.1f} GFLOP/s ({lm.dtype_name}, the model's up-projection shape, 512 rows), "
          f"copy bandwidth {bw:.1f} GB/s")

    def ceiling(passes, t_slow: float) -> str:
        t_bound = bound_seconds(lm, passes, peak, bw)
        return f"ceiling {t_slow / t_bound:6.1f}x (the same passes at the roofline model: {t_bound:.2f} s)"

    # 1. meta level: every property of the first `items` items of each test task
    (prompts, kw), _ = default_calls(items)
    limits, options = kw["max_new_tokens"], kw["options"]
    # the first call on new shapes pays one-off costs (kernel selection; on a GPU, attention plans per shape):
    # timed apart as "cold", the speed-ups use a second, warm call of the same work
    _, t_cold = timed(lambda: engine.generate(prompts, limits, options=options))
    engine.stats.reset()
    with recorded(lm) as meta_passes:
        engine_out, t_engine = timed(lambda: engine.generate(prompts, limits, options=options))
    meta_stats = engine.stats
    if profile:
        profiled(lm, engine, "meta level", lambda: engine.generate(prompts, limits, options=options), t_engine)
    engine.stats = type(meta_stats)()
    naive(engine, prompts[:1], limits[:1])  # warm, as the engine's timed call is warm
    (_, naive_tokens, naive_answers), t_naive = timed(lambda: naive(engine, prompts, limits))
    same = sum(a == g[0].response for a, g in zip(naive_answers, engine_out))
    print(f"meta level      {len(prompts)} prompts ({items} items x every property of {len(TEST_TASKS)} test tasks)")
    print(f"  engine          {len(prompts) / t_engine:8.2f} prompts/s   prompt tokens computed "
          f"{meta_stats.computed_tokens}/{meta_stats.prompt_tokens} (prefix sharing saved {100 * meta_stats.saved_fraction:.0f}%)")
    print(f"  engine, cold    {len(prompts) / t_cold:8.2f} prompts/s   (first call on these shapes)")
    print(f"  naive loop      {len(prompts) / t_naive:8.2f} prompts/s   | engine speed-up {t_naive / t_engine:6.1f}x "
          f"(target >= 10x); {ceiling(meta_passes, t_naive)}")
    print(f"  answers         {same}/{len(prompts)} identical to the engine's; tokens generated: engine "
          f"{sum(g[0].n_new_tokens for g in engine_out)}, naive {naive_tokens}")
    if check:
        check_sharing(lm, prompts, limits, options, batch_size)

    # 2. calibration sampling: n samples of the first `sample_items` object-level prompts of each test task
    _, (sp, kw) = default_calls(sample_items)
    sl = kw["max_new_tokens"]
    _, t_sample_cold = timed(lambda: engine.generate(sp, sl, n=n, temperature=1.0, seed=0))
    engine.stats = type(meta_stats)()
    with recorded(lm) as sample_passes:
        sample_out, t_sample = timed(lambda: engine.generate(sp, sl, n=n, temperature=1.0, seed=0))
    sample_stats = engine.stats
    if profile:
        profiled(lm, engine, "sampling", lambda: engine.generate(sp, sl, n=n, temperature=1.0, seed=0), t_sample)
    engine.stats = type(meta_stats)()
    naive(engine, sp[:1], sl[:1], sample=True, n=1)
    (_, naive_s_tokens, _), t_naive_s = timed(lambda: naive(engine, sp, sl, sample=True, n=n))
    (_, nrs_tokens, _), t_nrs = timed(lambda: naive(engine, sp, sl, sample=True, n=-n))
    seqs = len(sp) * n
    print(f"sampling        {len(sp)} prompts x {n} samples (temperature 1)")
    print(f"  engine          {seqs / t_sample:8.2f} samples/s   prompt tokens computed "
          f"{sample_stats.computed_tokens}/{sample_stats.prompt_tokens} (saved {100 * sample_stats.saved_fraction:.0f}%: one "
          f"prefill per prompt for its {n} samples, and shared prefixes)")
    print(f"  engine, cold    {seqs / t_sample_cold:8.2f} samples/s   (first call on these shapes)")
    print(f"  naive loop      {seqs / t_naive_s:8.2f} samples/s   | engine speed-up {t_naive_s / t_sample:6.1f}x "
          f"(target >= 20x); {ceiling(sample_passes, t_naive_s)}")
    print(f"  generate(num_return_sequences={n}) {seqs / t_nrs:8.2f} samples/s | engine speed-up {t_nrs / t_sample:6.1f}x; "
          f"{ceiling(sample_passes, t_nrs)}")
    print(f"  tokens generated per sample: engine {sum(x.n_new_tokens for g in sample_out for x in g) / seqs:.2f}, "
          f"naive loop {naive_s_tokens / seqs:.2f}, num_return_sequences {nrs_tokens / seqs:.2f}")

    # 3. option scoring against sampling the same distribution
    meta = [it["hypothetical_prompts"]["starts_with_vowel"] for it in load_task("animals").items[:sample_items * 6]]
    engine.generate(meta, 1, options=[("true", "false")] * len(meta))  # warm both paths' shapes
    engine.generate(meta, 6, n=n, temperature=1.0, seed=0)
    with recorded(lm) as scored_passes:
        _, t_scored = timed(lambda: engine.generate(meta, 1, options=[("true", "false")] * len(meta)))
    _, t_sampled = timed(lambda: engine.generate(meta, 6, n=n, temperature=1.0, seed=0))
    print(f"options         exact scoring {len(meta) / t_scored:8.2f} prompts/s | {n} samples per prompt "
          f"{len(meta) / t_sampled:8.2f} prompts/s | speed-up {t_sampled / t_scored:6.1f}x (target >= 20x); "
          f"{ceiling(scored_passes, t_sampled)}")

    # 4. achieved rate against the matmul roofline, and against the roofline model of the same passes
    for name, st, t, passes in (("meta level", meta_stats, t_engine, meta_passes),
                                ("sampling", sample_stats, t_sample, sample_passes)):
        useful = flops(lm, st.computed_tokens + st.decode_tokens, st.logit_rows) / t / 1e9
        padded = flops(lm, st.padded_tokens + st.decode_tokens, st.logit_rows) / t / 1e9
        t_bound = bound_seconds(lm, passes, peak, bw)
        print(f"rate            {name:<10} {useful:7.1f} GFLOP/s useful ({padded:.1f} with padding) = "
              f"{100 * useful / peak:5.1f}% of the {peak:.1f} GFLOP/s matmul roofline (target >= 50%); "
              f"{(st.computed_tokens + st.decode_tokens) / t:.0f} tokens/s; the roofline model of its "
              f"{len(passes)} passes: {t_bound:.2f} s of {t:.2f} s ({100 * t_bound / t:.0f}%)")
    if lm.device.type == "cuda":
        print(f"memory          peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB allocated on the GPU")


def bench_chunks(spec: str, dtype: str, items: int, batch_size: int, repeats: int) -> None:
    """The prompt pass in chunks of similar length against one padded pass, on the `default` calls."""
    import statistics

    lm = load(spec, dtype=dtype)
    print(f"\n== {spec}: {lm.dtype_name}, batch {batch_size}, {items} items per test task, {repeats} runs per mode")
    meta, obj = default_calls(items)
    modes = {"chunks": Engine(lm, batch_size=batch_size).chunk_cost, "one pass": None}
    if modes["chunks"] is None:
        print("  chunking is off on this device: nothing to compare")
        return
    for name, (prompts, kwargs) in (("meta level", meta), ("object level", obj)):
        times: dict[str, list[float]] = {m: [] for m in modes}
        seen: dict[str, tuple] = {}
        Engine(lm, batch_size=batch_size).generate(prompts[:batch_size],  # warm the shapes
                                                   **{k: v[:batch_size] for k, v in kwargs.items()})
        for _ in range(repeats):
            for mode, cost in modes.items():
                engine = Engine(lm, batch_size=batch_size)
                engine.chunk_cost = cost
                out, t = timed(lambda: engine.generate(prompts, **kwargs))
                times[mode].append(t)
                seen[mode] = ([g[0].response for g in out], engine.stats.padded_tokens, engine.stats.computed_tokens)
        med = {m: statistics.median(v) for m, v in times.items()}
        same = seen["chunks"][0] == seen["one pass"][0]
        print(f"{name:<13} {len(prompts)} prompts: one pass {med['one pass']:6.1f} s, chunks {med['chunks']:6.1f} s "
              f"-> {med['one pass'] / med['chunks']:.2f}x; positions computed {seen['one pass'][1]} -> {seen['chunks'][1]} "
              f"for {seen['chunks'][2]} real; answers identical: {same}")


def bench_split(spec: str, dtype: str, items: int, sample_items: int, n: int, batch_size: int,
                repeats: int) -> None:
    """Decoding on the split cache (``reproduce.lm.split_cache``, the engine's default on a CPU where it serves)
    against decoding on one growing cache, side by side on the `default` calls: the meta level, calibration
    sampling, and free-text greedy answers of 48 tokens (as the mirror and concept-injection stages decode). A
    third engine, "neither", also draws samples by the whole vocabulary's cumulative sum
    (``reproduce.lm.engine.full_cdf``) instead of ``reproduce.lm.engine.inverse_cdf``'s blocks: the engine's default
    on a GPU, and on a CPU the engine as it was before both."""
    import statistics

    lm = load(spec, dtype=dtype)
    print(f"\n== {spec}: {lm.dtype_name}, batch {batch_size}, {repeats} runs per mode, alternated")
    meta, obj = default_calls(items)
    _, (objs, sampled) = default_calls(sample_items)
    calls = {
        "meta level": meta,
        f"sampling (n={n})": (objs, dict(sampled, n=n, temperature=1.0, seed=0)),
        "free text (48)": (obj[0], dict(max_new_tokens=48, stop_at_newline=False)),
    }
    engines = {"split": Engine(lm, batch_size=batch_size, split_decode=True),
               "one cache": Engine(lm, batch_size=batch_size, split_decode=False),
               "neither": Engine(lm, batch_size=batch_size, split_decode=False)}
    engines["split"].draw = engines["one cache"].draw = inverse_cdf
    engines["neither"].draw = full_cdf
    for name, (prompts, kw) in calls.items():
        times: dict[str, list[float]] = {k: [] for k in engines}
        outs = {}
        for k, e in engines.items():  # warm all three on these shapes
            e.stats.reset()
            outs[k] = e.generate(prompts, **kw)
        used = engines["split"].stats.extra.get("split_batches", 0), engines["split"].stats.extra.get("batches", 0)
        for i in range(repeats):  # alternated, the order reversed every other run
            for k, e in list(engines.items())[::1 if i % 2 == 0 else -1]:
                _, t = timed(lambda: e.generate(prompts, **kw))
                times[k].append(t)
        a, b = outs["split"], outs["one cache"]
        same = sum(x.raw == y.raw for xs, ys in zip(a, b) for x, y in zip(xs, ys))
        total = sum(len(xs) for xs in a)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"  {name:<16} split {med['split']:6.2f} s | one cache {med['one cache']:6.2f} s | neither "
              f"{med['neither']:6.2f} s | speed-up {med['one cache'] / med['split']:.2f}x over one cache, "
              f"{med['neither'] / med['split']:.2f}x over neither | identical outputs {same}/{total} | "
              f"split cache in {used[0]}/{used[1]} batches")


def bench_attention(spec: str, dtype: str, repeats: int) -> None:
    """Attention alone, at the model's head shapes and dtype, on random tensors: SDPA as the engine calls it
    (on a CPU, torch picks its flash kernel) against eager attention (two matrix products and a float32
    softmax, as transformers' ``eager`` implementation computes it), for a decoding step of sampling (120
    rows, 1 query position, 140 cached positions) and a meta-level suffix pass (128 rows, 20 query positions
    over 130). Medians of ``repeats`` alternated timings, and the largest difference between the two. The
    key-value heads are repeated and the causal mask is a boolean matrix: the kernels at the model's shapes,
    not a replay of the model's own call (whose mask and head layout transformers chooses)."""
    import statistics

    import torch.nn.functional as F

    lm = load(spec, dtype=dtype)
    _, heads, kv_heads, head_dim = attention_dims(lm)
    dt, dev = lm.dtype, lm.device
    print(f"\n== {spec}: {lm.dtype_name}, {heads} query heads, {kv_heads} key-value heads of {head_dim}, "
          f"random tensors, {repeats} alternated runs per kernel")
    g = torch.Generator(device="cpu").manual_seed(0)
    for name, rows, q_len, kv_len in (("decoding step", 120, 1, 140), ("suffix pass", 128, 20, 130)):
        q = torch.randn(rows, heads, q_len, head_dim, generator=g).to(dev, dt)
        k = torch.randn(rows, kv_heads, kv_len, head_dim, generator=g).to(dev, dt)
        v = torch.randn(rows, kv_heads, kv_len, head_dim, generator=g).to(dev, dt)
        k, v = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (k, v))  # as transformers' repeat_kv
        mask = torch.ones(q_len, kv_len, dtype=torch.bool, device=dev).tril(kv_len - q_len)
        scale = head_dim ** -0.5

        def sdpa():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)

        def eager():
            w = (torch.matmul(q, k.transpose(-1, -2)) * scale).masked_fill(~mask, float("-inf"))
            return torch.matmul(torch.softmax(w, dim=-1, dtype=torch.float32).to(dt), v)

        times = {"sdpa": [], "eager": []}
        for _ in range(repeats):
            for label, fn in (("sdpa", sdpa), ("eager", eager)):
                times[label].append(timed_rate(fn, 1.0, dev.type, 0.2))  # calls per second, after a warm-up call
        ms = {m: 1e3 / statistics.median(v) for m, v in times.items()}
        diff = (sdpa().float() - eager().float()).abs().max().item()
        print(f"{name:<14} {rows} rows x {q_len} over {kv_len}: sdpa {ms['sdpa']:.2f} ms, eager {ms['eager']:.2f} ms "
              f"per layer -> eager {ms['sdpa'] / ms['eager']:.2f}x; outputs differ by at most {diff:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    ap.add_argument("--items", type=int, default=4, help="meta level: items per test task (every property)")
    ap.add_argument("--sample-items", type=int, default=1, help="sampling: items per test task")
    ap.add_argument("--samples", type=int, default=20, help="samples per prompt")
    ap.add_argument("--batch-size", type=int, default=128, help="the default profile's batch size")
    ap.add_argument("--threads", type=int, default=usable_cpus())
    ap.add_argument("--check", action="store_true",
                    help="also compare prefix-shared greedy answers with full recomputation on this device")
    ap.add_argument("--profile", action="store_true",
                    help="profile a second meta-level call and a second sampling call (torch.profiler)")
    ap.add_argument("--chunks", action="store_true",
                    help="compare the prompt pass in chunks of similar length with one padded pass (CPU)")
    ap.add_argument("--attention", action="store_true",
                    help="time attention alone, SDPA against eager, at the model's head shapes (random tensors)")
    ap.add_argument("--split", action="store_true",
                    help="compare decoding on the split cache with decoding on one growing cache")
    ap.add_argument("--repeats", type=int, default=3, help="--chunks, --attention, --split: runs per mode, alternated")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(describe(device))
    probe = resolve_dtype("auto", device)
    print(f"dtype auto -> {probe.dtype} ({probe.reason}; the rule's probe, measured once per machine and kept "
          "in the package cache's hardware.json)")
    fp32, bf16 = measure_bf16(device)
    print(f"float32 vs bf16 matmul measured in this run: {fp32:.0f} vs {bf16:.0f} GFLOP/s ({torch.get_num_threads()} "
          f"threads, {device})")
    for spec in args.models:
        if args.chunks:
            bench_chunks(spec, args.dtype, args.items, args.batch_size, args.repeats)
            continue
        if args.attention:
            bench_attention(spec, args.dtype, args.repeats)
            continue
        if args.split:
            bench_split(spec, args.dtype, args.items, args.sample_items, args.samples, args.batch_size, args.repeats)
            continue
        bench(spec, args.dtype, args.items, args.sample_items, args.samples, args.batch_size, args.check, args.profile)
        if torch.cuda.is_available():  # the model went with bench's frame: hand its memory back before the next
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
