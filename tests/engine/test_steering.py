"""Concept vectors and the injection hook, checked against computations by hand on the embedded models."""

import numpy as np
import pytest
import torch

from reproduce.lm.engine import Engine
from reproduce.lm.steering import (Injection, Steer, SteeringError, check_fraction, check_strength, concept_vectors,
                                decoder_layers, last_token_residuals, layer_at, token_span)

LONG = " calm" * 10  # longer than Engine.TRIE_MAX_TOKENS: one row per pair, the whole sequence in one pass
CONVO = [{"role": "user", "content": "Please describe your day."}, {"role": "assistant", "content": "It was calm."},
         {"role": "user", "content": "Trial 3: do you notice anything unusual right now?"}]


def _record(lm, layer):
    """A hook after the steering hook: the block's output as the next block sees it."""
    seen = []
    h = decoder_layers(lm.model)[layer].register_forward_hook(lambda m, a, o: seen.append(
        (o[0] if isinstance(o, tuple) else o).detach().clone()))
    return seen, h


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_hook_adds_exactly_the_vector_at_the_chosen_positions_and_nowhere_else(models, spec):
    """Teacher forcing one sequence with and without an injection: the block's output differs by exactly the
    vector at positions start..end-1 (prompt and continuation tokens) and is bit-identical elsewhere."""
    lm, _ = models[spec]
    layer = layer_at(0.5, len(decoder_layers(lm.model)))
    engine = Engine(lm, batch_size=4, share_prefix=False)
    ids = engine.tokenize([CONVO])[0]
    start, end = len(ids) - 6, len(ids) + 2  # ends inside the continuation
    vec = torch.randn(lm.model.config.hidden_size, generator=torch.Generator().manual_seed(0)) * 3
    seen, h = _record(lm, layer)
    engine.score([CONVO], [LONG])
    h.remove()
    with Steer(lm, layer, [Injection(vec, start, end)]) as steer:
        seen2, h = _record(lm, layer)  # registered after the steering hook: sees its output
        engine.score([CONVO], [LONG], steer=steer)
        h.remove()
    plain, steered = seen[0][0], seen2[0][0]
    n = plain.shape[0]
    assert n == len(ids) + len(lm.tokenizer.encode(LONG, add_special_tokens=False))
    diff = steered - plain
    inside = torch.zeros(n, dtype=torch.bool)
    inside[start:end] = True
    assert torch.equal(diff[~inside], torch.zeros_like(diff[~inside]))
    # (h + v) - h in float32 equals v up to the rounding of h's magnitude
    assert torch.allclose(diff[inside], vec.expand(int(inside.sum()), -1), rtol=0,
                          atol=1e-6 * float(plain.abs().max()) + 1e-6)


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_steered_greedy_generation_under_the_cache_equals_full_recompute_with_manual_addition(models, spec):
    """Generated tokens are injected too: the engine (shared prefixes, key-value cache, several prompts with
    different injections in one batch) gives the tokens of a reference that recomputes the whole sequence at
    every step and adds the vector by hand at every position >= start."""
    lm, _ = models[spec]
    layer = layer_at(0.6, len(decoder_layers(lm.model)))
    engine = Engine(lm, batch_size=8)
    prompts = [CONVO, CONVO, CONVO[:1], CONVO]
    ids = engine.tokenize(prompts)
    g = torch.Generator().manual_seed(1)
    norm = 4 * float(last_token_residuals(lm, [CONVO], [layer])[0, 0].norm())
    vecs = [torch.randn(lm.model.config.hidden_size, generator=g) for _ in prompts]
    vecs = [v / v.norm() * norm for v in vecs]
    injections = [Injection(vecs[0], len(ids[0]) - 5, key="a"), None, Injection(vecs[2], 3, key="b"),
                  Injection(vecs[0], len(ids[3]) - 5, key="a")]
    with Steer(lm, layer, injections) as steer:
        got = [x[0].raw for x in engine.generate(prompts, 12, steer=steer, stop_at_newline=False)]
    assert got[0] == got[3]  # the same injection on the same prompt

    block = decoder_layers(lm.model)[layer]
    want = []
    for p, inj in zip(ids, injections):
        seq = list(p)

        def add(m, a, o, inj=inj):
            if inj is None:
                return None
            h = o[0] if isinstance(o, tuple) else o
            h = h.clone()
            h[:, inj.start:] += inj.vector.to(h.dtype)
            return (h, *o[1:]) if isinstance(o, tuple) else h

        hook = block.register_forward_hook(add)
        try:
            with torch.inference_mode():
                for _ in range(12):
                    logits = lm.model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
                    logits[engine.suppress_ids] = float("-inf")
                    t = int(logits.argmax())
                    if t in engine.eos_ids:
                        break
                    seq.append(t)
        finally:
            hook.remove()
        want.append(lm.tokenizer.decode(seq[len(p):], skip_special_tokens=True))
    assert got == want
    assert got[0] != got[1]  # the injection changed the answer: the check above is not vacuous


@pytest.mark.parametrize("spec", ["smollm2-135m"])
def test_a_control_run_is_identical_to_no_hook(models, spec):
    lm, _ = models[spec]
    engine = Engine(lm, batch_size=4)
    prompts = [CONVO, CONVO[:1]]
    a = engine.generate(prompts, 8, options=[("yes", "no")] * 2)
    with Steer(lm, 5, [None, None]) as steer:
        b = engine.generate(prompts, 8, options=[("yes", "no")] * 2, steer=steer)
        assert steer.calls == 0
    assert a == b
    s1 = engine.score(prompts, [" yes", " no"])
    with Steer(lm, 5, [None, None]) as steer:
        s2 = engine.score(prompts, [" yes", " no"], steer=steer)
    assert all(np.array_equal(x, y) for x, y in zip(s1, s2))


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_score_equals_log_softmax_of_one_full_forward_pass(models, spec):
    """Teacher forcing with shared prefixes and several candidates per prompt gives the log-probabilities of
    a plain forward pass over prompt + continuation."""
    lm, _ = models[spec]
    engine = Engine(lm, batch_size=3)
    prefill = CONVO + [{"role": "assistant", "content": "I think it is about"}]
    words = [" apples", " the ocean", " x", " volcanoes erupting"]
    got = engine.score([prefill] * len(words), words)
    rendered = lm.format.render(prefill)
    base = lm.tokenizer(rendered, add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    for w, lp in zip(words, got):
        cont = lm.tokenizer.encode(w, add_special_tokens=False)
        with torch.inference_mode():
            logits = lm.model(input_ids=torch.tensor([base + cont])).logits[0].float()
        ref = torch.log_softmax(logits, -1)[len(base) - 1 + torch.arange(len(cont)), torch.tensor(cont)]
        assert lp.shape == (len(cont),)
        assert np.allclose(lp, ref.numpy(), atol=2e-4)
    assert engine.stats.computed_tokens < engine.stats.prompt_tokens  # the prompt was shared
    rows = engine._score_rows([prefill] * len(words), [lm.tokenizer.encode(w, add_special_tokens=False) for w in words],
                              None, None)
    assert all(np.allclose(a, b, atol=2e-4) for a, b in zip(got, rows))  # the trie and one row per pair agree


def test_concept_vector_is_the_mean_difference_computed_by_hand(models):
    lm, _ = models["smollm2-135m"]
    layers = [3, 20]
    cv = concept_vectors(lm, ["ocean", "violin"], ["table", "window", "pencil"], "Tell me about {word}.", layers)
    by_hand = []
    for w in ["ocean", "violin", "table", "window", "pencil"]:
        ids = lm.tokenizer(lm.format.render(f"Tell me about {w}."), add_special_tokens=False, return_tensors="pt")
        with torch.inference_mode():
            hs = lm.model(**ids, output_hidden_states=True).hidden_states
        by_hand.append(torch.stack([hs[l + 1][0, -1] for l in layers]))  # hidden_states[l + 1]: block l's output
    by_hand = torch.stack(by_hand)
    want = by_hand[:2] - by_hand[2:].mean(0)
    assert torch.allclose(cv.vectors, want, atol=1e-4)
    assert torch.allclose(cv.norms, by_hand[2:].norm(dim=-1).mean(0), atol=1e-4)
    inj = cv.injection("violin", 20, 2.0)
    assert abs(float(inj.norm()) - 2.0 * float(cv.norms[1])) < 1e-3
    assert torch.allclose(cv.injection("violin", 20, 2.0, sign=-1.0), -inj)
    # raw units: a multiple of the vector as computed, and a random direction of the concept vectors' mean norm
    assert torch.allclose(cv.injection("violin", 20, 2.0, units="raw"), 2.0 * cv.vectors[1, 1])
    rnd = cv.random_injection(20, 2.0, seed=3, units="raw")
    assert abs(float(rnd.norm()) - 2.0 * float(cv.vectors[:, 1].norm(dim=-1).mean())) < 1e-3
    assert abs(float(cv.random_injection(20, 2.0, seed=3).norm()) - 2.0 * float(cv.norms[1])) < 1e-3


def test_token_span_finds_the_trial_question(models):
    lm, _ = models["smollm2-135m"]
    rendered = lm.format.render(CONVO)
    text = CONVO[-1]["content"]
    a = rendered.rindex(text)
    s, e = token_span(lm, rendered, a, a + len(text))
    ids = lm.tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert lm.tokenizer.decode(ids[s:e]).strip() == text


@pytest.mark.parametrize("bad", [1.5, -0.1, "0.5", None, True])
def test_bad_layer_fraction_is_refused(bad):
    with pytest.raises(SteeringError, match="layer fraction"):
        check_fraction(bad)


@pytest.mark.parametrize("bad", ["4", float("nan"), -1, None])
def test_bad_strength_is_refused(bad):
    with pytest.raises(SteeringError, match="strength"):
        check_strength(bad)


def test_a_model_without_decoder_blocks_is_refused_clearly():
    class Odd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(2, 2)

    with pytest.raises(SteeringError, match="no list of decoder blocks"):
        decoder_layers(Odd())


def test_out_of_range_layer_and_wrong_vector_shape_are_refused(models):
    lm, _ = models["smollm2-135m"]
    with pytest.raises(SteeringError, match="outside"):
        Steer(lm, 99, [None])
    with pytest.raises(SteeringError, match="shape"):
        Steer(lm, 3, [Injection(torch.zeros(7), 0)])


@pytest.mark.parametrize("spec", ["smollm2-135m"])
def test_injections_at_several_layers_in_one_call_equal_one_call_per_layer(models, spec):
    """Prompts steered at different blocks in one call (one steering, one decoding loop) get what each gets in a
    call of its own layer: the same greedy tokens, and option distributions equal to float32 rounding; a control
    row beside them gets what it gets unsteered."""
    lm, _ = models[spec]
    n = len(decoder_layers(lm.model))
    layers = [layer_at(0.3, n), layer_at(0.7, n)]
    engine = Engine(lm, batch_size=8)
    ids = engine.tokenize([CONVO])[0]
    start = len(ids) - 6
    g = torch.Generator().manual_seed(3)
    norm = 4 * float(last_token_residuals(lm, [CONVO], [layers[0]])[0, 0].norm())
    vecs = [torch.randn(lm.model.config.hidden_size, generator=g) for _ in layers]
    vecs = [v / v.norm() * norm for v in vecs]
    injections = [Injection(v, start, key=("v", k), layer=at) for k, (v, at) in enumerate(zip(vecs, layers))]
    prompts, opts = [CONVO] * 3, [("yes", "no")] * 3
    with Steer(lm, None, [*injections, None]) as steer:  # every injection names its block
        both = engine.generate(prompts, 8, options=opts, steer=steer)
    alone = []
    for inj, at in zip(injections, layers):
        with Steer(lm, at, [Injection(inj.vector, start, key=inj.key)]) as steer:
            alone.append(engine.generate(prompts[:1], 8, options=opts[:1], steer=steer)[0])
    plain = engine.generate(prompts[:1], 8, options=opts[:1])[0]
    for got, want in zip(both, [*alone, plain]):  # equal to float32 rounding (other rows, other matmul blocking)
        assert got[0].raw == want[0].raw
        assert np.allclose(got[0].option_probs, want[0].option_probs, rtol=0, atol=1e-5)
        assert abs(got[0].p_outside - want[0].p_outside) < 1e-5
    assert both[0] != both[2] or both[1] != both[2]  # an injection changed something: the check is not vacuous
    with pytest.raises(SteeringError, match="outside"):
        Steer(lm, None, [Injection(vecs[0], start, layer=n)])
    with pytest.raises(SteeringError, match="without a layer of its own"):
        Steer(lm, None, [injections[0], Injection(vecs[0], start)])
