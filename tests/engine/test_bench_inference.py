"""The inference benchmark's roofline model: the passes it records and the time it prices them at."""

import importlib.util

import pytest

from reproduce.lm.engine import Engine
from reproduce.lm.models import load
from reproduce.config import REPO_ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_inference", REPO_ROOT / "benchmarks" / "bench_inference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lm():
    return load("random:tiny", dtype="float32", device="cpu")


def test_recorded_passes_are_the_engines_positions(bench, lm):
    """Every position the engine computes, prompt and decoding, is in one recorded pass; each batch's decoding
    steps grow its key-value length by one, with stopped rows leaving."""
    engine = Engine(lm, batch_size=8)
    prompts = [f"The list is {w} {w} paddle bottle. Which word comes first?" for w in ("energy", "button", "cup")]
    with bench.recorded(lm) as passes:
        engine.generate(prompts, 4, n=3, temperature=1.0, seed=1)
    st = engine.stats
    assert sum(rows * width for rows, width, _, _ in passes) == st.padded_tokens + st.decode_tokens
    assert sum(logits for *_, logits in passes) == st.logit_rows
    runs = [[passes[0]]]  # passes in runs whose key-value length grows by one: a batch's decoding steps
    for a, b in zip(passes, passes[1:]):
        if a[1] == b[1] == 1 and b[2] == a[2] + 1:
            runs[-1].append(b)
        else:
            runs.append([b])
    steps = [r for r in runs if len(r) > 1]
    assert len(steps) == 2  # nine rows in batches of at most eight: two batches
    assert all(b[0] <= a[0] for r in steps for a, b in zip(r, r[1:]))  # stopped rows leave, none join
    with bench.recorded(lm) as after:
        pass
    engine.generate(prompts[:1], 2)
    assert after == []  # the hook is removed when the block ends


def test_bound_prices_each_pass_at_the_larger_of_arithmetic_and_traffic(bench, lm):
    """One pass by hand: 4 rows of 3 new positions on 5 cached ones, logits for every row."""
    cfg = lm.model.config
    out = lm.model.get_output_embeddings().weight
    emb = lm.model.get_input_embeddings().weight
    body = sum(p.numel() for p in lm.model.parameters()) - emb.numel() - (0 if out is emb else out.numel())
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    pairs = 4 * (3 * 5 + 3 * 4 / 2)
    arithmetic = 2.0 * (body * 12 + out.numel() * 4) + 4.0 * cfg.num_hidden_layers * cfg.num_attention_heads * head_dim * pairs
    kv = cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_dim * 4
    traffic = 4 * (body + out.numel()) + kv * 4 * (8 + 3)
    one = [(4, 3, 8, 4)]
    assert bench.bound_seconds(lm, one, 1.0, 1e30) == pytest.approx(arithmetic / 1e9)
    assert bench.bound_seconds(lm, one, 1e30, 1.0) == pytest.approx(traffic / 1e9)
    assert bench.bound_seconds(lm, one, 1.0, 1.0) == pytest.approx(max(arithmetic, traffic) / 1e9)
    assert bench.bound_seconds(lm, one * 3, 2.0, 2.0) == pytest.approx(1.5 * max(arithmetic, traffic) / 1e9)


def test_memory_bandwidth_is_a_positive_rate(bench):
    assert bench.memory_gbps("cpu", mib=8, min_seconds=0.01) > 0


def test_attention_benchmark_times_both_kernels_and_they_agree(bench, capsys):
    """``--attention`` on a random tiny model: both shapes timed, and SDPA and eager attention agree in float32."""
    bench.bench_attention("random:tiny", "float32", repeats=1)
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith(("decoding step", "suffix pass"))]
    assert len(lines) == 2
    for line in lines:
        assert "sdpa" in line and "eager" in line
        assert float(line.rsplit("at most ", 1)[1]) < 1e-4


@pytest.mark.slow  # simulation or benchmark: seconds to half a minute
def test_split_benchmark_compares_three_engines_on_the_default_calls(bench, capsys):
    """``--split`` on a random tiny model: the three calls timed for the three engines; sampling decodes on the
    split cache and the greedy calls do not; greedy outputs are identical (the same path)."""
    bench.bench_split("random:tiny", "float32", items=1, sample_items=1, n=4, batch_size=8, repeats=1)
    lines = [x.strip() for x in capsys.readouterr().out.splitlines() if "identical outputs" in x]
    assert [x.split()[0] for x in lines] == ["meta", "sampling", "free"]
    for line in lines:
        assert "split" in line and "one cache" in line and "neither" in line
        same, total = map(int, line.split("identical outputs ")[1].split()[0].split("/"))
        used, batches = map(int, line.split("split cache in ")[1].split()[0].split("/"))
        if line.startswith("sampling"):
            assert used == batches >= 1
        else:
            assert used == 0 and same == total


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_the_naive_baseline_stops_where_the_engine_stops_and_answers_the_same(bench, models, spec):
    """The naive loop is ``model.generate`` one prompt at a time under the engine's stopping rule (EOS, or the
    first newline after content): greedy, it must give the engine's answers with the engine's token counts, or
    the speed-ups would compare different work (a base model that never emits EOS would otherwise run every
    answer to its limit)."""
    lm, engine = models[spec]
    prompts = [f"What is the first letter of the word '{w}'? Answer with the letter only." for w in ("apple", "zebra")]
    prompts += ["Name an animal.", "Write a number between 1 and 9."]
    limits = [12] * len(prompts)
    out = engine.generate(prompts, limits)
    seqs, tokens, answers = bench.naive(engine, prompts, limits)
    assert seqs == len(prompts) and answers == [g[0].response for g in out]
    assert tokens == sum(g[0].n_new_tokens for g in out)
