"""The batched engine on the real embedded models."""

import numpy as np
import pytest

from reproduce.self_prediction.task_data import load_task
from reproduce.lm.engine import Group, cut_response, derive_seed, pack_batches, plan_groups
from reproduce.self_prediction.properties import get_property

CHARS = tuple("abcdefghijklmnopqrstuvwxyz0123456789")


@pytest.mark.parametrize("text,expected", [
    ("  cat dog\nmore", ("cat dog", True)), ("\n\nAnswer: A\nB", ("Answer: A", True)), (" 42 ", ("42", False)),
    ("", ("", False)),
])
def test_cut_response(text, expected):
    assert cut_response(text) == expected


def test_derive_seed_is_stable():
    assert derive_seed(0, "a", 1) == derive_seed(0, "a", 1) != derive_seed(0, "a", 2)


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_option_tokens_are_disjoint_single_tokens(models, spec):
    _, engine = models[spec]
    for options in (("true", "false"), CHARS):
        groups = engine.option_token_ids(options)
        flat = [i for g in groups for i in g]
        assert len(flat) == len(set(flat)) and all(groups)
        for o, g in zip(options, groups):
            for i in g:
                assert engine.lm.tokenizer.decode([i]).strip().lower() == o


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_greedy_batched_equals_one_at_a_time_and_options_are_a_distribution(models, spec):
    _, engine = models[spec]
    items = load_task("animals").items[:3]
    prompts = [it["hypothetical_prompts"]["starts_with_vowel"] for it in items]
    batched = engine.generate(prompts, 6, options=[("true", "false")] * 3)
    single = [engine.generate([p], 6, options=[("true", "false")])[0] for p in prompts]
    for b, s in zip(batched, single):
        assert b[0].response == s[0].response  # fp32 greedy: padding does not change the answer
        assert np.isclose(sum(b[0].option_probs), 1.0) and 0.0 <= b[0].p_outside <= 1.0
        assert np.allclose(b[0].option_probs, s[0].option_probs, atol=1e-4)
    assert all(g[0].n_new_tokens <= 6 and g[0].finish in {"eos", "newline", "length"} for g in batched)


def test_sampling_is_seeded(models):
    _, engine = models["smollm2-135m"]
    prompts = [it["object_prompt"] for it in load_task("animals").items[:2]]
    a = engine.generate(prompts, 8, n=3, temperature=1.0, seed=7)
    b = engine.generate(prompts, 8, n=3, temperature=1.0, seed=7)
    c = engine.generate(prompts, 8, n=3, temperature=1.0, seed=8)
    texts = lambda r: [[g.response for g in x] for x in r]  # noqa: E731
    assert texts(a) == texts(b) != texts(c)
    assert all(len(x) == 3 for x in a)
    assert len({g.response for x in a for g in x}) > 1  # temperature 1 gives varied answers


def test_a_second_load_shares_the_tokenizer_and_the_vocabularys_token_classes(models):
    """The tokenizer and the per-token classes (newline, content, opening) are read once per process; what is
    kept equals what a fresh tokenizer and a fresh decode of the vocabulary give."""
    from transformers import AutoTokenizer

    import reproduce.lm.engine as E
    from reproduce.lm.models import load, tokenizer_dir

    lm, engine = models["smollm2-135m"]
    again = load("smollm2-135m", dtype="float32", device="cpu")
    assert again.tokenizer is lm.tokenizer
    fresh = AutoTokenizer.from_pretrained(tokenizer_dir(lm.ref), local_files_only=True)
    n = lm.model.get_output_embeddings().weight.shape[0]
    kept = E._token_classes(lm.tokenizer, n)
    assert kept is E._token_classes(again.tokenizer, n)  # not decoded again
    assert kept == E._token_classes(fresh, n) and fresh is not lm.tokenizer  # computed anew for another object
    assert (engine.vocab_size, engine._newline, engine._content, engine._opening) == kept
    assert sum(kept[1]) > 0 and sum(kept[3]) > 0


def test_engine_rejects_bad_arguments(models):
    _, engine = models["smollm2-135m"]
    with pytest.raises(ValueError, match="max_new_tokens"):
        engine.generate(["x"], 0)
    with pytest.raises(ValueError, match="greedy"):
        engine.generate(["x"], 2, temperature=1.0, options=[("true", "false")])


def test_plan_groups_puts_identical_rows_together_and_saves_the_most_tokens():
    a, b = list(range(100, 130)), list(range(200, 212))
    rest = [a + [1], b + [5], a + [2, 3], b + [6], a + [4], [7] * 3]
    groups = plan_groups(rest, min_shared=8, max_rows=8)
    assert sorted(r for g in groups for r in g.rows) == list(range(6))  # every row exactly once
    by_rows = {frozenset(g.rows): g.prefix for g in groups}
    assert by_rows == {frozenset({0, 2, 4}): 30, frozenset({1, 3}): 12, frozenset({5}): 0}
    for g in groups:  # every member keeps at least one token of its own after the shared prefix
        assert all(len(rest[r]) > g.prefix for r in g.rows)
    # the n copies of one prompt form one group with all but its last token shared
    groups = plan_groups([a] * 5, min_shared=8, max_rows=5)
    assert groups == [Group((0, 1, 2, 3, 4), len(a) - 1)]
    # a group never holds more rows than a batch, and a short common prefix is not shared
    assert all(len(g.rows) <= 2 for g in plan_groups([a] * 5, 8, 2))
    assert all(g.prefix == 0 for g in plan_groups([list(range(5)) + [9], list(range(5)) + [8]], 8, 8))


def test_plan_groups_prefers_the_long_prefix_over_one_big_group():
    """Two items whose prompts share 10 tokens, each with three prompts sharing 40: two groups of 40 save
    more (2 x 2 x 40) than one group of six sharing 10 (5 x 10)."""
    head = list(range(10))
    x, y = head + list(range(50, 80)), head + list(range(80, 110))
    rest = [x + [1], x + [2], x + [3], y + [1], y + [2], y + [3]]
    groups = plan_groups(rest, min_shared=8, max_rows=32)
    assert sorted((sorted(g.rows), g.prefix) for g in groups) == [([0, 1, 2], 40), ([3, 4, 5], 40)]


def test_pack_batches_keeps_groups_whole():
    groups = [Group((0, 1, 2), 10), Group((3,), 0), Group((4, 5), 5), Group((6, 7, 8), 10)]
    batches = pack_batches(groups, [20] * 9, max_rows=4)
    assert all(sum(len(g.rows) for g in b) <= 4 for b in batches)
    assert sorted((g for b in batches for g in b), key=lambda g: g.rows) == groups


def test_plan_chunks_puts_similar_lengths_together_and_weighs_the_extra_pass():
    from reproduce.lm.engine import plan_chunks

    lengths = [10, 40, 11, 41, 10, 39]
    # a pass costs 5 positions: two chunks (33 + 5 and 123 + 5 positions) beat one (246 + 5) and six (151 + 30)
    assert plan_chunks(lengths, 5) == [[0, 4, 2], [5, 1, 3]]
    assert plan_chunks(lengths, 1000) == [[0, 4, 2, 5, 1, 3]]  # a pass dearer than all the padding: one
    assert plan_chunks(lengths, 0.5) == [[0, 4], [2], [5], [1], [3]]  # no padding left at all
    assert plan_chunks([], 5) == []


def test_chunked_prompt_pass_equals_one_pass_and_full_recompute():
    """Rows of very different lengths after their shared prefix (as the meta level's property questions are):
    the prompt pass split into chunks of similar length, whose caches are joined front-padded for decoding,
    gives the log-probabilities, option distributions, greedy answers and seeded samples of one padded pass
    and of computing every prompt in full (a random-weight model, float32), and computes fewer positions."""
    from reproduce.lm.engine import Engine
    from reproduce.lm.models import load

    lm = load("random:tiny", dtype="float32", device="cpu")
    head = "You will be asked a question about the following list of words: energy button paddle bottle. "
    tails = ["Why?", "What is the first character of the first word of that list? Answer with it only.", "How?",
             "What is the second word of the list? For example, for the list one two three, the answer is two."]
    prompts = [head + t + x for t in tails for x in ("", " Be brief.")]
    engines = {"chunks": Engine(lm, batch_size=16), "one pass": Engine(lm, batch_size=16),
               "full": Engine(lm, batch_size=16, share_prefix=False)}
    engines["chunks"].chunk_cost, engines["one pass"].chunk_cost = 0, None
    opts = [("a", "b", "c")] * len(prompts)
    greedy = {k: e.generate(prompts, 5, options=opts) for k, e in engines.items()}
    sampled = {k: e.generate(prompts, 4, n=3, temperature=1.0, seed=5) for k, e in engines.items()}
    scored = {k: e.score(prompts, [" yes"] * len(prompts)) for k, e in engines.items()}
    for k in ("one pass", "full"):
        assert [x[0].response for x in greedy[k]] == [x[0].response for x in greedy["chunks"]]
        assert np.allclose([x[0].option_probs for x in greedy[k]], [x[0].option_probs for x in greedy["chunks"]],
                           atol=1e-5)
        assert np.allclose([x[0].p_outside for x in greedy[k]], [x[0].p_outside for x in greedy["chunks"]], atol=1e-5)
        assert [[g.raw for g in x] for x in sampled[k]] == [[g.raw for g in x] for x in sampled["chunks"]]
        assert np.allclose(np.concatenate(scored[k]), np.concatenate(scored["chunks"]), atol=1e-5)
    chunks, one = engines["chunks"].stats, engines["one pass"].stats
    assert chunks.computed_tokens == one.computed_tokens < engines["full"].stats.computed_tokens
    assert chunks.padded_tokens < one.padded_tokens


def test_chunks_are_not_joined_where_a_sliding_window_would_be_reached():
    """A front-padded row would lose other positions to a sliding attention window than the same row padded
    in the middle, so caches with sliding layers are joined only while the window is not reached."""
    import torch
    from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

    from reproduce.lm.engine import cache_rows, merge_rows
    from reproduce.lm.split_cache import mergeable

    def filled(layer, length, rows=2):
        layer.update(torch.randn(rows, 2, length, 4), torch.randn(rows, 2, length, 4))
        return layer

    cache = DynamicCache()
    cache.layers = [filled(DynamicLayer(), 6), filled(DynamicSlidingWindowLayer(sliding_window=16), 6)]
    assert mergeable(cache, 14) and not mergeable(cache, 15)
    assert not mergeable(object(), 1)  # an unknown cache: one pass
    a, b = cache_rows(cache, [1, 1, 0]), cache_rows(cache, [0])
    for layer in b.layers:
        layer.update(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4))
    b_values = [layer.values.clone() for layer in b.layers]
    joined = merge_rows([a, b], [6, 9])
    for i, layer in enumerate(joined.layers):
        assert layer.keys.shape == (4, 2, 9, 4)
        assert torch.equal(layer.keys[:3, :, :3], torch.zeros(3, 2, 3, 4))  # front padding
        assert torch.equal(layer.keys[:3, :, 3:], cache.layers[i].keys[[1, 1, 0]])
        assert torch.equal(layer.values[3], b_values[i][0])
        assert torch.equal(layer.values[3, :, :6], cache.layers[i].values[0])
        assert b.layers[i].keys is None  # joined caches are emptied as they go
    assert joined.layers[1].cumulative_length == 9
    assert cache.layers[0].keys.shape == (2, 2, 6, 4)  # the source cache is left as it was


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_prefix_sharing_across_properties_equals_full_recompute(models, spec):
    """All properties of several items in one call (as the meta level runs them): the shared path computes
    each item's common prefix once and gives the same greedy answers and option distributions as computing
    every prompt in full, in float32."""
    from reproduce.lm.engine import Engine

    lm, _ = models[spec]
    task = load_task("animals")
    props = task.manifest["properties"]
    pairs = [(it, p) for it in task.items[:2] for p in props]
    prompts = [it["hypothetical_prompts"][p] for it, p in pairs]
    options = [get_property(p).options for _, p in pairs]
    limits = [6 if get_property(p).closed else 10 for _, p in pairs]
    shared, full = Engine(lm, batch_size=8), Engine(lm, batch_size=8, share_prefix=False)
    chunked = Engine(lm, batch_size=8)
    chunked.chunk_cost = 0  # every length its own chunk of the prompt pass
    a = shared.generate(prompts, limits, options=options)
    b = full.generate(prompts, limits, options=options)
    c = chunked.generate(prompts, limits, options=options)
    assert chunked.stats.padded_tokens < shared.stats.padded_tokens or shared.chunk_cost is None
    for x, y in zip(c, b):
        assert (x[0].response, x[0].n_new_tokens, x[0].finish) == (y[0].response, y[0].n_new_tokens, y[0].finish)
        if x[0].option_probs:
            assert np.allclose(x[0].option_probs, y[0].option_probs, atol=1e-4)
    assert [x[0].response for x in a] == [x[0].response for x in b]
    assert [(x[0].n_new_tokens, x[0].finish) for x in a] == [(x[0].n_new_tokens, x[0].finish) for x in b]
    for x, y in zip(a, b):
        assert (x[0].option_probs is None) == (y[0].option_probs is None)
        if x[0].option_probs:
            assert np.allclose(x[0].option_probs, y[0].option_probs, atol=1e-4)
            assert abs(x[0].p_outside - y[0].p_outside) < 1e-4
    assert all(g[0].n_new_tokens <= m for g, m in zip(a, limits))
    assert full.stats.computed_tokens == full.stats.prompt_tokens  # the reference computes everything
    assert shared.stats.prompt_tokens == full.stats.prompt_tokens
    assert shared.stats.saved_fraction > 0.5  # seven prompts per item share most of their tokens


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_sampling_prefills_each_prompt_once_and_matches_the_model_distribution(models, spec):
    """n samples of a prompt share one prefill (prompt tokens computed once, not n times); their first tokens
    follow the model's exact next-token distribution (from a plain forward pass) within sampling error."""
    import torch

    lm, _ = models[spec]
    from reproduce.lm.engine import Engine

    engine = Engine(lm, batch_size=4)  # smaller than n: the samples of a prompt still share one batch
    prompt = load_task("animals").items[0]["object_prompt"]
    n = 400
    gens = engine.generate([prompt], 1, n=n, temperature=1.0, seed=3)[0]
    # the prompt once, plus each sample's last prompt token (the cost of one decoding step), not n prompts
    assert engine.stats.rows == n and engine.stats.computed_tokens == engine.stats.prompt_tokens // n - 1 + n
    ids = engine.tokenize([prompt])[0]
    with torch.inference_mode():
        logits = lm.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        logits[engine.suppress_ids] = float("-inf")
        exact = torch.softmax(logits, -1)
    counts: dict[str, int] = {}
    for g in gens:
        counts[g.raw] = counts.get(g.raw, 0) + 1
    top = torch.topk(exact, 5)
    for p, t in zip(top.values.tolist(), top.indices.tolist()):
        text = lm.tokenizer.decode([t], skip_special_tokens=True)
        if t in engine.eos_ids or not text:
            continue
        observed = sum(c for raw, c in counts.items() if raw == text) / n
        assert abs(observed - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-3, (text, observed, p)


def test_samples_are_identical_under_a_fixed_seed_whatever_else_is_in_the_call(models):
    _, engine = models["smollm2-135m"]
    prompts = [it["object_prompt"] for it in load_task("animals").items[:3]]
    a = engine.generate(prompts, 8, n=5, temperature=1.0, seed=11)
    b = engine.generate(prompts[::-1], 8, n=5, temperature=1.0, seed=11)[::-1]
    c = engine.generate(prompts[1:2], 8, n=5, temperature=1.0, seed=11)
    texts = lambda r: [[g.response for g in x] for x in r]  # noqa: E731
    assert texts(a) == texts(b) and texts(c) == texts(a[1:2])


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_shared_prefix_cache_gives_the_same_answers_as_full_recompute(models, spec):
    from reproduce.lm.engine import Engine

    lm, shared = models[spec]
    full = Engine(lm, batch_size=4, share_prefix=False)
    prompts = [it["hypothetical_prompts"]["second_character"] for it in load_task("animals").items[:6]]
    ids = lm.tokenizer(shared.render(prompts), add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    assert shared._shared_prefix(ids) >= shared.MIN_SHARED_PREFIX  # the cache is really used here
    a = shared.generate(prompts, 6, options=[CHARS] * 6)
    b = full.generate(prompts, 6, options=[CHARS] * 6)
    assert [x[0].response for x in a] == [x[0].response for x in b]
    assert np.allclose([x[0].option_probs for x in a], [x[0].option_probs for x in b], atol=1e-4)


@pytest.mark.parametrize("text,opening", [
    ('"', True), (' "', True), ("\n", True), ("(", True), ("**", True), ("`", True), (" \u201c", True), ("", True),
    ("b", False), (' "b', False), ("The", False), ("-", False), ("1", False),
])
def test_is_opening_skips_quotes_space_brackets_and_emphasis_only(text, opening):
    from reproduce.lm.engine import is_opening

    assert is_opening(text) is opening


def test_option_mass_is_read_after_an_opening_quote(models):
    """SmolLM2 answers english_words-000's second-character question with ``"b"`` (as in the committed run's
    meta_untrained table): the option distribution is read at
    the ``b`` (position 1), and equals a softmax over the next-token logits of the prompt plus the quote,
    computed here by a plain forward pass; the greedy answer is unchanged by where the options are read."""
    import torch

    lm, engine = models["smollm2-135m"]
    prompt = load_task("english_words").items[0]["hypothetical_prompts"]["second_character"]
    g = engine.generate([prompt], 6, options=[CHARS])[0][0]
    plain = engine.generate([prompt], 6)[0][0]
    assert g.raw.startswith('"') and get_property("second_character").parse_meta(g.response) == "b"
    assert (g.response, g.raw, g.n_new_tokens) == (plain.response, plain.raw, plain.n_new_tokens)
    assert g.option_position == 1
    ids = engine.tokenize([prompt])[0]
    quote = lm.tokenizer.encode(g.raw, add_special_tokens=False)[0]
    assert lm.tokenizer.decode([quote]) == '"'
    with torch.inference_mode():
        probs = torch.softmax(lm.model(input_ids=torch.tensor([ids + [quote]])).logits[0, -1].float(), -1)
    mass = np.array([float(probs[t].sum()) for t in engine.option_token_ids(CHARS)])
    assert abs(g.p_outside - (1 - mass.sum())) < 1e-4
    assert np.allclose(g.option_probs, mass / mass.sum(), atol=1e-4)
    # the greedy letter leads the options, and less mass falls outside them than at the quote's position
    at_quote = engine.generate([prompt], 1, options=[CHARS])[0][0]
    assert CHARS[int(np.argmax(g.option_probs))] == "b" and g.p_outside < at_quote.p_outside


def test_option_position_falls_back_to_the_first_step_without_content(models):
    """An answer cut before any content token (one new token, an opening quote) is scored at the first step,
    flagged -1; an answer that opens with content is read at position 0, as before."""
    _, engine = models["smollm2-135m"]
    item = load_task("colors").items[0]
    quoted = engine.generate([item["hypothetical_prompts"]["second_character"]], 1, options=[CHARS])[0][0]
    assert quoted.raw == '"' and quoted.option_position == -1 and quoted.p_outside > 0.5
    prompt = load_task("animals").items[0]["hypothetical_prompts"]["starts_with_vowel"]
    plain = engine.generate([prompt], 6, options=[("true", "false")])[0][0]
    assert plain.raw[:1].isalnum() and plain.option_position == 0
    assert engine.generate([prompt], 6)[0][0].option_position is None  # no options asked, none read


def test_inverse_cdf_draws_as_the_whole_vocabulary_cumulative_sum_and_never_an_excluded_token():
    """Blocks of the vocabulary (several, and a vocabulary that is not a multiple of the block) give the
    token that a float64 cumulative sum of the whole softmax gives, for the same uniforms, and so does
    :func:`full_cdf` (the GPU's draw); uniforms at 0 and just below 1 never land on an excluded (-inf) token,
    at either end of the vocabulary or of a block."""
    import torch
    from reproduce.lm.engine import full_cdf, inverse_cdf

    g = torch.Generator().manual_seed(0)
    for vocab, block in ((1000, 64), (5000, 4096), (4096, 4096), (300, 512)):
        logits = torch.randn(400, vocab, generator=g) * 3
        logits[:, :5] = logits[:, -7:] = float("-inf")
        logits[:, block - 3:block + 2] = float("-inf")  # a block's end and the next one's start
        u = torch.rand(400, generator=g, dtype=torch.float64)
        cdf = torch.softmax(logits, -1).double().cumsum(-1)
        ref = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1), right=True).squeeze(-1)
        assert torch.equal(inverse_cdf(logits, u, block=block), ref)
        assert torch.equal(full_cdf(logits, u), ref)
        for edge in (0.0, 1 - 2 ** -53):
            t = inverse_cdf(logits, torch.full((400,), edge, dtype=torch.float64), block=block)
            assert torch.isfinite(logits[torch.arange(400), t]).all()
            t = full_cdf(logits, torch.full((400,), edge, dtype=torch.float64))
            assert torch.isfinite(logits[torch.arange(400), t]).all()
    one = torch.full((2, 10), float("-inf"))
    one[:, 7] = 0.0
    assert inverse_cdf(one, torch.tensor([0.0, 0.999]), block=4).tolist() == [7, 7]
    assert full_cdf(one, torch.tensor([0.0, 0.999])).tolist() == [7, 7]


def test_decoding_defaults_follow_the_device():
    """On a CPU the engine samples on the split cache with the blocked draw; on a GPU, where both were
    measured slower, on one cache with the whole-vocabulary draw; ``split_decode`` given wins."""
    import dataclasses

    import torch
    from reproduce.lm.engine import Engine, full_cdf, inverse_cdf
    from reproduce.lm.models import load

    lm = load("random:tiny", dtype="float32")
    cpu = Engine(lm)
    assert cpu.split_decode and cpu.draw is inverse_cdf and cpu.chunk_cost == Engine.CPU_CHUNK_COST
    # any device but the CPU decides as a GPU; PyTorch's meta device stands in for one here (nothing runs)
    other = dataclasses.replace(lm, device=torch.device("meta"))
    gpu = Engine(other)
    assert not gpu.split_decode and gpu.draw is full_cdf and gpu.chunk_cost is None
    assert not Engine(lm, split_decode=False).split_decode
    assert Engine(other, split_decode=True).split_decode


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_split_cache_attention_equals_sdpa_over_the_whole_cache(dtype):
    """Attention over a base shared by uneven groups of rows (padding inside the base, a base no row uses any
    more after rows are dropped) and each row's own tail equals SDPA over each row's whole cache: in float32 to
    float32 rounding; in bfloat16 (the base held in float32, the arithmetic float32) it returns bfloat16 within
    bfloat16 rounding of exact attention on the same inputs, and no further from it than SDPA in bfloat16 is."""
    import math
    from types import SimpleNamespace

    import torch
    from reproduce.lm.split_cache import SplitCache

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(1)
    kv, heads, d, width = 2, 6, 16, 9
    keys = torch.randn(3, kv, width, d, generator=g).to(dt)
    values = torch.randn(3, kv, width, d, generator=g).to(dt)
    mask = torch.ones(3, width, dtype=torch.long)
    mask[1, :4] = 0  # front padding
    mask[2, 2:5] = 0  # padding in the middle
    owner = [0, 0, 0, 1, 2, 2]

    class Tail:  # a one-layer growing cache, as transformers' DynamicLayer
        def __init__(self):
            self.k = self.v = None

        def update(self, k, v):
            self.k = k if self.k is None else torch.cat([self.k, k], -2)
            self.v = v if self.v is None else torch.cat([self.v, v], -2)
            return self.k, self.v

        def batch_select_indices(self, idx):
            self.k, self.v = self.k[idx], self.v[idx]

    cache = SimpleNamespace(layers=[SimpleNamespace(keys=keys, values=values)])
    split = SplitCache(cache, mask, owner, Tail)
    module = SimpleNamespace(layer_idx=0)
    rows = list(range(len(owner)))  # original row of each active row
    for step in range(5):
        if step == 2:  # rows 3 (base 1's only row) and 0 stop: base 1 stays, unused
            keep = [1, 2, 4, 5]
            split.select(keep)
            rows = [rows[i] for i in keep]
            assert split.keys[0].shape[0] == 3
        if step == 3:  # only base 2's rows go on: the base shrinks to that row
            keep = [2, 3]
            split.select(keep)
            rows = [rows[i] for i in keep]
            assert split.keys[0].shape[0] == 1
        n = len(rows)
        q = torch.randn(n, heads, 1, d, generator=g).to(dt)
        k, v = torch.randn(n, kv, 1, d, generator=g).to(dt), torch.randn(n, kv, 1, d, generator=g).to(dt)
        tk, tv = split.tail.update(k, v)
        got = split.attend(module, q, tk, tv, None)  # [rows, 1, heads, d]
        assert got.dtype == dt
        base = [owner[r] for r in rows]
        full_k = torch.cat([keys[base], tk], -2).repeat_interleave(heads // kv, 1)
        full_v = torch.cat([values[base], tv], -2).repeat_interleave(heads // kv, 1)
        allowed = torch.cat([mask[base].bool(), torch.ones(n, tk.shape[-2], dtype=torch.bool)], -1)

        def sdpa(*x):
            return torch.nn.functional.scaled_dot_product_attention(*x, attn_mask=allowed[:, None, None, :],
                                                                    scale=1 / math.sqrt(d)).transpose(1, 2)

        want = sdpa(q.float(), full_k.float(), full_v.float())  # exact attention on these inputs, in float32
        if dt == torch.float32:
            assert torch.allclose(got, want, atol=1e-5), step
        else:
            err = (got.float() - want).abs().max().item()
            assert err <= 2 ** -8 * want.abs().max().item(), (step, err)  # bfloat16's rounding: 8 bits
            assert err <= (sdpa(q, full_k, full_v).float() - want).abs().max().item() + 1e-6, step


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_split_decoding_equals_one_cache_decoding(models, spec):
    """Sampling decodes on the split cache (each prompt's cache once, beside each row's own tokens); at a
    temperature so low that every draw is the argmax, its samples equal those of decoding on one cache per row,
    through rows stopping at different steps. At temperature 1 most samples are equal too (the two differ at
    float32 rounding, which moves a draw only where it falls on a token boundary)."""
    from reproduce.lm.engine import Engine

    lm, _ = models[spec]
    prompts = [it["object_prompt"] for it in load_task("animals").items[:3]]
    split, one = Engine(lm, batch_size=8), Engine(lm, batch_size=8, split_decode=False)
    for t, least in ((1e-4, 1.0), (1.0, 0.75)):
        a = split.generate(prompts, 10, n=4, temperature=t, seed=2)
        b = one.generate(prompts, 10, n=4, temperature=t, seed=2)
        same = [x.raw == y.raw for xs, ys in zip(a, b) for x, y in zip(xs, ys)]
        assert sum(same) >= least * len(same), (t, sum(same))
    assert split.stats.extra["split_batches"] >= 1 and one.stats.extra["split_batches"] == 0
    assert split.stats.computed_tokens == one.stats.computed_tokens


@pytest.mark.slow
def test_split_decoding_in_bfloat16_follows_one_cache_decoding():
    """A bfloat16 model samples on the split cache too (its base held in float32). At a temperature so low that
    every draw is the argmax, its samples follow those of decoding on one cache: the two paths round the
    attention differently (see reproduce.lm.split_cache), which may move a greedy token only where two logits tie
    to bfloat16 precision, so most, not all, must be equal."""
    from reproduce.lm.engine import Engine
    from reproduce.lm.models import load

    lm = load("smollm2-135m", dtype="bfloat16", device="cpu")
    prompts = [it["object_prompt"] for it in load_task("animals").items[:2]]
    split, one = Engine(lm, batch_size=8), Engine(lm, batch_size=8, split_decode=False)
    a = split.generate(prompts, 6, n=3, temperature=1e-4, seed=2)
    b = one.generate(prompts, 6, n=3, temperature=1e-4, seed=2)
    same = [x.raw == y.raw for xs, ys in zip(a, b) for x, y in zip(xs, ys)]
    assert sum(same) >= 4, same
    assert split.stats.extra["split_batches"] >= 1 and one.stats.extra["split_batches"] == 0
