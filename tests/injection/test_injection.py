"""The concept-injection experiment: bad input refused before model work, graders on hand-written cases, the
assistant span, and a small real run on an embedded model (controls equal unsteered runs; determinism)."""

import numpy as np
import pandas as pd
import pytest

import reproduce.injection.graders as graders
from analysis.agreement import cohen_kappa
from reproduce.config import ConfigError, load_params
from reproduce.datasets import DatasetError
from reproduce.injection.experiment import Runner, assistant_span, run_concept_injection, trial_conversation
from reproduce.injection.data import load_injection_dataset
from reproduce.shards import ShardStore
from tests.conftest import sections_after_trials, simulate_edit, tiny_profile

SMALL = dict(layer_fractions=[0.6], strengths=[0.5], concepts=3, prefill_pairs=1, intention_sentences=2,
             controls=["random", "negated"], free_text=dict(concepts=1, samples=1, max_new_tokens=8))


@pytest.mark.parametrize("bad, message", [
    ("strengths: [strong]", "strengths"),
    ("layer_fractions: [1.5]", "layer fractions must lie in"),
    ("control_fractions: [0.3]", "control_fractions"),
])
def test_bad_injection_settings_are_refused_when_params_are_read(tmp_path, bad, message):
    import yaml

    raw = yaml.safe_load(open("profiles/smoke.yaml").read())
    raw["injection"].update(yaml.safe_load(bad))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=message):
        load_params(path)


def test_an_unknown_concept_is_refused_before_any_model_is_loaded(tmp_path, monkeypatch):
    import reproduce.stage as stages

    def no_models(*a, **k):
        raise AssertionError("a model was loaded before the input was checked")

    monkeypatch.setattr(stages, "load_model", no_models)
    monkeypatch.setattr(stages, "setup_stage", no_models)
    profile = tiny_profile(injection=dict(SMALL, concepts=["lantern", "unicorn"]))
    with pytest.raises(DatasetError, match="'unicorn' is not in the concept list"):
        run_concept_injection(stages.StagePlan(profile), tmp_path / "out", tmp_path / "work")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, word, claims, names, before, coherent", [
    ("Yes, I notice an injected thought. It seems to be about the ocean.", "ocean", True, True, True, True),
    ("No, I do not detect any injected thought on this trial.", "ocean", False, False, False, True),
    ("The ocean is vast. Yes, I notice something.", "ocean", True, True, False, True),
    ("I don't notice anything, although I feel like talking about oceans.", "ocean", False, True, False, True),
    ("ocean ocean ocean ocean ocean ocean", "ocean", False, True, False, False),
    ("Port\n\n ;\n\n\n\n The like\n\n.\n\n.", "ocean", False, False, False, False),
    # word salad in mixed scripts (a real reply at strength 2): mostly letters, but not of the prompt's script
    ("Yes ofic ellas oy dios 用了早在 upor dios 引入引入 ہپ upor 早在引入 用了 využ sortes 早在 用了 oy", "ocean",
     True, False, False, False),
    ("Oui, je remarque une pensée étrange à propos de la mer, très calme.", "ocean", False, False, False, True),
    # "yes" inside a sentence is no answer (a real control reply: it repeats the instruction)
    ("I will tell you honestly about it. Question: Use sentence processing to say yes or no to an", "ocean",
     False, False, False, True),
    ("My answer: yes, there is something about the ocean.", "ocean", True, True, True, True),
    # the contraction is the same claim (a real control reply)
    ("That's about what we know now. There's a new concept that you're examining this trial.", "ocean",
     True, False, False, True),
    # degenerate replies that the letter and word counts alone let through (real replies under injection):
    # apostrophe-joined fragments, and a run of symbols
    ("D'men stone freund's's, they'started with (2)be'n'em's'n's'n't's's's'a's's'n'", "kettle",
     False, False, False, False),
    ("No, you're uruhan. But maybe if you give me the urama.\n\nLook, you mummy, just an :shuffleyourhumarms& & & "
     "& & & & || >! * > && upumam", "umbrella", False, False, False, False),
    # a contraction, a possessive and a quoted word are ordinary English, and Markdown is no symbol run
    ("I don't think the word 'kettle' is in the user's question at all.", "kettle", False, True, False, True),
    ("I notice something: **a kettle**.\n\n* **Why:** it feels warm, and it is whistling on the stove now.",
     "kettle", True, True, True, True),
    ("It seems to be about a kettle on a stove, I think, and it is warm.\n-----\nThat is all I can say.", "kettle",
     False, True, False, True),
    ("There\u2019s an unusual thought, about a kettle.", "kettle", True, True, True, True),
])
def test_rule_graders_on_hand_written_answers(text, word, claims, names, before, coherent):
    g = graders.grade_injection_text(text, word)
    assert (g["claims_detection"], g["names_concept"], g["detection_before_naming"], g["coherent"]) == \
        (claims, names, before, coherent)


def test_each_condition_injects_its_own_vector(monkeypatch):
    """Prefill trials inject a word's concept vector: the prefilled word's (matching) or its partner's (random,
    another concept); the detection trials' random control is a random direction, and the negated control the
    concept's vector reversed."""
    import reproduce.injection.experiment as injection

    class Vectors:  # each vector tagged by what it is: (kind, word, sign)
        def injection(self, word, layer, strength, sign=1.0, units="residual_norm"):
            return ("concept", word, sign)

        def random_injection(self, layer, strength, seed, units="residual_norm"):
            return ("random", None, 1.0)

    made = []
    monkeypatch.setattr(injection, "Injection", lambda vec, start, end, key, layer: made.append(vec) or vec)
    monkeypatch.setattr(injection, "Steer", lambda lm, layer, inj: inj)
    runner = object.__new__(Runner)
    runner._cv, runner.seed, runner.lm = Vectors(), 0, None
    from types import SimpleNamespace

    runner.cfg = SimpleNamespace(strength_units="residual_norm")
    site = dict(layer=3, strength=1.0)
    specs = [dict(condition="control", injected=None, **site),
             dict(condition="matching", injected="lantern", concept="lantern", **site),
             dict(condition="random", injected="compass", concept="lantern", **site),
             dict(condition="concept", concept="kettle", **site),
             dict(condition="negated", concept="kettle", **site),
             dict(condition="random", concept="kettle", **site)]
    out = runner._steer(specs, [0] * len(specs), [1] * len(specs))
    assert out[0] is None
    assert made == [("concept", "lantern", 1.0), ("concept", "compass", 1.0), ("concept", "kettle", 1.0),
                    ("concept", "kettle", -1.0), ("random", None, 1.0)]


def test_cohen_kappa_by_hand():
    assert cohen_kappa([1, 1, 0, 0], [1, 1, 0, 0]) == 1.0
    assert abs(cohen_kappa([1, 0, 1, 0], [1, 1, 0, 0]) - 0.0) < 1e-12


@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_intention_reads_the_assistants_copy_of_the_sentence_not_the_users(models, spec):
    lm, _ = models[spec]
    data = load_injection_dataset()
    it = data.intention[0]
    conv = [{"role": "user", "content": data.prompts["think"].format(sentence=it["sentence"], word=it["word"])},
            {"role": "assistant", "content": it["sentence"]}]
    s, e = assistant_span(lm, conv, it["sentence"])
    ids = lm.tokenizer(lm.format.render(conv), add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    assert lm.tokenizer.decode(ids[s:e]).strip() == it["sentence"]
    assert e == len(ids)  # the assistant's copy ends the conversation; the user's copy comes earlier
    user_ids = lm.tokenizer(lm.format.render(conv[:1]), add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    assert s >= len(user_ids) - 1


@pytest.fixture(scope="module")
def small_run(models, tmp_path_factory):
    lm, engine = models["smollm2-135m"]
    profile = tiny_profile(injection=SMALL)
    data = load_injection_dataset()
    runner = Runner(profile, data, lm, engine, ShardStore(tmp_path_factory.mktemp("inj"), {"run": 0}))
    return runner.run(), runner, lm, engine, data


@pytest.mark.slow
def test_a_small_run_fills_every_table_and_is_deterministic(small_run):
    a, runner, *_ = small_run
    assert set(a) == {"detection", "identification", "freetext", "prefill", "intention", "steering", "two_turn", "lens"}
    assert (runner.store.computed, runner.store.reused) == (8, 0)  # a fresh store: every part computed
    for part in a:
        assert len(a[part]) > 0
    # same inputs, same outputs: the steered parts recomputed from scratch (fresh vectors, no shards), through
    # parquet as the stored shards went
    import io

    def stored(df):
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        return pd.read_parquet(io.BytesIO(buf.getvalue()))

    runner._cv = None
    for part, specs, run in (("identification", runner.identification_specs(), runner.run_identification),
                             ("prefill", runner.prefill_specs(), runner.run_prefill)):
        again = stored(runner._one_call(specs, run)).assign(model=runner.lm.name)
        pd.testing.assert_frame_equal(a[part], again)
    det = a["detection"]
    assert set(det["condition"]) == {"control", "concept", "negated", "random"}
    assert det["p_yes"].between(0, 1).all() and (det["detected"] == (det["p_yes"] > 0.5)).all()
    # the steering check: one control and one injected row per concept and cell, the control's log-probability
    # that of the unsteered model
    st = a["steering"]
    assert len(st) == 3 * (1 + len(runner.cells)) and (st["logprob"] < 0).all()
    p = runner.data.prompts
    conv = [{"role": "user", "content": p["steer_question"]}, {"role": "assistant", "content": p["steer_prefill"]}]
    ctl = st[st["condition"] == "control"]
    plain = runner.engine.score([conv] * len(ctl), [" " + c for c in ctl["concept"]])
    assert np.allclose(ctl["logprob"], [float(lp.sum()) for lp in plain], atol=1e-4)
    assert not np.allclose(st[st["condition"] == "concept"]["logprob"].to_numpy(), ctl["logprob"].to_numpy())
    # slot k of cell i (0: the controls) is asked in wording k + i: crossed with concept and cell
    words = runner.data.prompts["trial_forced"]
    detect = det[det["question"] == "detect"]
    cell = {(round(f, 6), s): i for i, (f, _, s) in enumerate(runner.cells, start=1)}
    for _, r in detect.iterrows():
        i = 0 if r["condition"] == "control" else cell[(round(r["layer_fraction"], 6), r["strength"])]
        k = int(r["question_id"].split("-")[1]) - 1
        assert r["wording"] == f"w{(k + i) % len(words) + 1:02d}"
    assert det.loc[det["question"] == "yes_bias", "wording"].isna().all()
    ide = a["identification"]
    assert ide["p_true"].between(0, 1).all() and ide["rank"].between(1, 3).all()
    assert (ide["correct"] == (ide["rank"] == 1)).all()
    pre = a["prefill"]
    assert set(pre["condition"]) == {"control", "matching", "random"} and pre["p_accident"].between(0, 1).all()
    assert set(a["intention"]["instruction"]) == {"think", "dont_think"}


@pytest.mark.slow
def test_control_trials_equal_unsteered_runs_and_injection_changes_the_answer(small_run):
    a, _, lm, engine, data = small_run
    det = a["detection"]
    ctl = det[(det["question"] == "detect") & (det["condition"] == "control")].sort_values("question_id")
    words = data.prompts["trial_forced"]
    slots = [int(q.split("-")[1]) for q in ctl["question_id"]]
    assert ctl["wording"].tolist() == [f"w{(n - 1) % len(words) + 1:02d}" for n in slots]  # cell 0: slot k's
    convs = [trial_conversation(data, words[(n - 1) % len(words)].format(n=n)) for n in slots]
    plain = engine.generate(convs, 4, options=[("yes", "no")] * len(convs))
    assert np.allclose(ctl["p_yes"], [g[0].option_probs[0] for g in plain], atol=1e-6)
    inj = det[(det["question"] == "detect") & (det["condition"] == "concept")].sort_values("question_id")
    assert not np.allclose(inj["p_yes"].to_numpy(), ctl["p_yes"].to_numpy(), atol=1e-3)


def test_the_optional_judge_grades_free_text_and_the_labelled_replies_with_a_local_model(models, monkeypatch,
                                                                                          tmp_path):
    """A judge named by any model spec: its P(yes) for "claims detection" and "names the concept" per row, and on
    every labelled reply of the graders' two sets in the same call; the analysis counts its agreement with the
    labels as it counts the rules', and the manuscript's sentence quotes it. (The embedded base model is no judge
    worth having; the test checks the path and the counts, not the quality.)"""
    import json

    import reproduce.injection.grader_cases as grader_cases
    import reproduce.stage as stages
    from analysis.injection.stage import judge_case_agreement
    from reproduce.injection.experiment import SCHEMAS, judge_freetext
    from reproduce.lm.judge import quoted
    from report.injection.section import grader_sentence

    lm, engine = models["smollm2-135m"]
    monkeypatch.setattr(stages, "load_model", lambda profile, ref: (lm, engine))  # the session's loaded copy
    full = grader_cases.labelled_sets()
    assert sum(len(v) for v in full.values()) >= 60
    # a few of each set's replies, true and false on both labels (the whole sets take minutes on a CPU)
    few = {name: tuple(next(r for r in rows if (r[2], r[3]) == want)
                       for want in ((True, True), (True, False), (False, False)))
           for name, rows in full.items()}
    assert all({r[2] for r in v} == {True, False} and {r[3] for r in v} == {True, False} for v in few.values())
    monkeypatch.setattr(grader_cases, "labelled_sets", lambda: few)
    profile = tiny_profile(injection=dict(SMALL, judge="smollm2-135m"))
    ft = pd.DataFrame({"text": ["Yes, I notice an injected thought about the ocean.", "No, nothing unusual."],
                       "concept": ["ocean", "ocean"]})
    out, cases = judge_freetext(profile, ft)
    assert out["judge_claims"].between(0, 1).all() and out["judge_names"].between(0, 1).all()
    SCHEMAS["judge_cases"].check(cases, "the judged cases")
    sets = grader_cases.labelled_sets()
    assert len(cases) == sum(len(v) for v in sets.values()) == 6
    # the free text's numbers do not depend on the cases judged beside them
    alone = stages.run_judge(profile, "smollm2-135m", [graders.JUDGE_DETECT.format(text=quoted(ft["text"].iloc[0]))])
    assert out["judge_claims"].iloc[0] == pytest.approx(alone[0], abs=1e-5)
    cases.to_parquet(tmp_path / "judge_cases.parquet", index=False)
    (tmp_path / "run.json").write_text(json.dumps({"judge": "smollm2-135m"}))
    got = judge_case_agreement(tmp_path)
    assert got["spec"] == "smollm2-135m"
    for name, rows in sets.items():
        c = cases[cases["set"] == name].sort_values("case")
        for key, col, label in (("claims", "judge_claims", 2), ("identifies", "judge_names", 3)):
            said = (c[col] > 0.5).to_numpy()
            want = np.array([r[label] for r in rows])
            assert got[name][key] == {"n": len(rows), "agree": int((said == want).sum()),
                                      "false_positives": int((said & ~want).sum()),
                                      "false_negatives": int((~said & want).sum())}
    text = grader_sentence({"development": grader_cases.agreement(grader_cases.CASES),
                            "held_out": grader_cases.agreement(grader_cases.HELD_OUT), "judge": got})
    assert f"The judge (smollm2-135m) agrees with the same labels in {got['development']['claims']['agree']} of" in text
    none_ft, none_cases = judge_freetext(tiny_profile(injection=SMALL), ft)
    assert none_ft["judge_claims"].isna().all() and none_cases.empty


def test_the_shards_key_holds_the_seed_and_the_code_that_steers_and_grades(models, monkeypatch):
    """The seed draws the random control vectors and the free text's samples: a changed seed must give fresh
    shards, not reuse rows of the old one. So must an edit to the stage, the steering or the rule grader that
    the free-text shards apply (simulated by another code version of that module)."""
    import reproduce.stage as common
    from reproduce.injection.experiment import shard_fingerprint

    lm, data = models["smollm2-135m"][0], load_injection_dataset()
    fp = shard_fingerprint(tiny_profile(injection=SMALL), lm, data)
    assert fp == shard_fingerprint(tiny_profile(injection=SMALL), lm, data)
    assert fp != shard_fingerprint(tiny_profile(injection=SMALL, seed=1), lm, data)
    for module in ("reproduce.injection.experiment", "reproduce.lm.steering", "reproduce.injection.graders"):
        simulate_edit(monkeypatch, common, module)
        assert shard_fingerprint(tiny_profile(injection=SMALL), lm, data) != fp, module
    for module in ("reproduce.self_prediction.properties", "reproduce.self_prediction.tasks"):  # modules the stage does not run keep its shards
        simulate_edit(monkeypatch, common, module)
        assert shard_fingerprint(tiny_profile(injection=SMALL), lm, data) == fp, module


@pytest.mark.slow
def test_a_small_runs_analysis_figures_and_section_quote_its_own_counts(models, tmp_path):
    """The stages after the trials on a real small run: the analysis (every fit behind the gate), the figures
    and the manuscript section, whose raw counts beside the modelled rates are the trial table's own."""
    import json

    from analysis.injection.stage import main as analyse
    from analysis.injection.stage import says_yes
    from figures.injection.plots import run_injection_figures
    from report.injection.section import write_section

    lm, engine = models["smollm2-135m"]
    # the default 4 chains: at 2, the intention model's fit on this small run failed the gate on one CPU (an AMD
    # EPYC with AVX-512) and passed on another, where the trials' numbers differ in their last bits
    profile = tiny_profile(injection=dict(SMALL, concepts=4, prefill_pairs=4, intention_sentences=6),
                           analysis={"chains": 4})
    runner = Runner(profile, load_injection_dataset(), lm, engine, ShardStore(tmp_path / "work", {"run": 1}))
    text = sections_after_trials(tmp_path, "injection", runner.run(), lm.name, runner.store, profile, analyse,
                                 run_injection_figures, write_section)
    raw, analysis = tmp_path / "injection" / "raw", tmp_path / "injection" / "analysis"
    # the counts quoted beside the false-positive rate, recomputed from the trial table
    det = pd.read_parquet(raw / "detection.parquet")
    ctl = det[(det.question == "detect") & (det.condition == "control")]
    k, n, yes = int(ctl.detected.sum()), len(ctl), int(says_yes(ctl.answer).sum())
    assert f"observed: {k} of {n} trials with P(yes) > P(no), {yes} answering \"yes\"" in text
    numbers = json.loads((analysis / "numbers.json").read_text())["models"][lm.name]
    assert numbers["detection_observed"]["control"]["n"] == n
    # the cells below the false-positive rate and the layers below zero, beside their twins above, from the fits' tables
    cells = pd.read_parquet(analysis / "detection_cells.parquet")
    cells = cells[(cells.model == lm.name) & (cells.condition == "concept")]
    # only the cells whose injection steers are counted: the steering check's table, recomputed here
    st = pd.read_parquet(raw / "steering.parquet")
    base = st[st.condition == "control"].set_index("concept")["logprob"]
    inj = st[st.condition == "concept"].assign(rise=lambda d: d["logprob"] - base.reindex(d["concept"]).to_numpy())
    steers = {(round(f, 6), s) for (f, s), g in inj.groupby(["layer_fraction", "strength"])
              if g["rise"].mean() - 2 * g["rise"].std(ddof=1) / len(g) ** 0.5 > 0}  # roughly the t interval (n = 4)
    assert numbers["steering"]["cells"] == len(cells)
    steering = pd.read_parquet(analysis / "steering_cells.parquet")
    steering = steering[steering.model == lm.name]
    assert numbers["steering"]["steer"] == int(steering.steers.sum())
    assert {(round(f, 6), s) for f, s in zip(steering[steering.steers].layer_fraction,
                                             steering[steering.steers].strength)} <= steers | {
        (round(f, 6), s) for f, s in zip(steering.layer_fraction, steering.strength)}
    kept = cells[[(round(f, 6), s) in {(round(a, 6), b) for a, b in zip(steering[steering.steers].layer_fraction,
                                                                        steering[steering.steers].strength)}
                  for f, s in zip(cells.layer_fraction, cells.strength)]]
    if len(kept):
        assert numbers["detection_cells_below_fp"] == int((kept.diff_high < 0).sum())
        assert (f"credibly above the false-positive rate and {numbers['detection_cells_below_fp']} credibly below it"
                in text)
    else:  # no cell steers: none is counted, and the text says so
        assert "detection_best" not in numbers and "none did" in text
    layers = pd.read_parquet(analysis / "intention_layers.parquet")
    assert numbers["intention_layers_below"] == int((layers[layers.model == lm.name].high < 0).sum())
    assert "The trials ran on this test's CPU (smollm2-135m 1 s)." in text  # a fresh store: nothing reused


@pytest.mark.parametrize("text, word, claims, identifies", __import__(
    "reproduce.injection.grader_cases", fromlist=["CASES"]).CASES)
def test_the_rules_agree_with_every_labelled_reply_they_were_written_on(text, word, claims, identifies):
    """The positive and negative controls: Lindsey's criteria as the open replications' judge states them,
    ordinary sentences an earlier version took for claims, and replies written independently of the rules."""
    assert (graders.claims_detection(text), graders.detection_before_naming(text, word)) == (claims, identifies)


def test_the_held_out_agreement_is_measured_and_reported():
    """The held-out replies were never used to change the rules: their agreement is the rules' measured one
    (36 and 38 of 40 when they were written), which the analysis publishes and the manuscript quotes."""
    import reproduce.injection.grader_cases as cases
    from report.injection.section import grader_sentence

    held = cases.agreement(cases.HELD_OUT)
    assert len(cases.HELD_OUT) >= 30 and len(cases.CASES) >= 30
    assert held["claims"]["agree"] >= 36 and held["identifies"]["agree"] >= 38
    assert {c[2] for c in cases.HELD_OUT} == {True, False} and {c[3] for c in cases.HELD_OUT} == {True, False}
    text = grader_sentence({"development": cases.agreement(), "held_out": held})
    assert f"in {held['claims']['agree']} of {held['claims']['n']}" in text


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_the_two_turn_trial_steers_the_first_exchange_and_is_read_through_the_cache(models, spec, tmp_path):
    """The two-turn trial as Pearson-Vogel et al. ran it: the first exchange is computed with the injection into a
    key-value cache, the second turn and the prefill are computed on top of it without injection, and the answer's
    " yes" against " no" is read from the last position. Done here by hand with the model's own cache; the stage's
    one steered pass (injection by position, first exchange only) must give the same log-odds. The controls are
    the unsteered model's (the engine's teacher forcing); the lens at the last block is the model's own
    distribution, and blocks before the injection read what the control reads."""
    import torch

    from reproduce.injection.experiment import _vector
    from reproduce.injection.two_turn import first_token, two_turn_conversation, two_turn_span
    from reproduce.lm.steering import decoder_layers

    lm, engine = models[spec]
    profile = tiny_profile(injection=dict(SMALL, strengths=[2.0]))
    data = load_injection_dataset()
    runner = Runner(profile, data, lm, engine, ShardStore(tmp_path, {"run": 0}))
    trials, lens = runner.run_two_turn()
    conv = two_turn_conversation(data)
    start, end = two_turn_span(lm, conv)
    ids = lm.tokenizer(lm.format.render(conv), add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    # the span, as they placed it: every token of the first two messages as the template writes them, from the
    # first token through the closing tokens after the reply; the second turn's own tokens start right after
    assert start == 0
    first_exchange = lm.tokenizer.decode(ids[:end])
    assert data.prompts["two_turn_reply"].format() in first_exchange
    assert data.prompts["two_turn_question"].format()[:20] not in first_exchange
    second = lm.tokenizer.decode(ids[end:])
    assert data.prompts["two_turn_question"].format() in second
    assert second.index(data.prompts["two_turn_question"].format()) <= 40  # only the turn's header before it
    yes, no = first_token(lm, " yes"), first_token(lm, " no")
    x = torch.tensor([ids])
    rows = trials[trials["condition"] != "control"]
    for _, row in rows.iloc[[0, len(rows) // 2, -1]].iterrows():  # concept and random rows
        kind = "concept" if row["condition"] == "concept" else "random"
        vec = _vector(runner.cv, kind, row["concept"], int(row["layer"]), float(row["strength"]), profile.seed,
                      profile.injection.strength_units)
        block = decoder_layers(lm.model)[int(row["layer"])]

        def add(module, args, output, vec=vec):
            h = output[0] if isinstance(output, tuple) else output
            h = h.clone()
            h[:, start:, :] += vec.to(h.dtype)  # this pass holds only positions < end
            return (h, *output[1:]) if isinstance(output, tuple) else h

        with torch.inference_mode():
            hook = block.register_forward_hook(add)
            try:
                first = lm.model(input_ids=x[:, :end], use_cache=True)
            finally:
                hook.remove()
            rest = lm.model(input_ids=x[:, end:], past_key_values=first.past_key_values, use_cache=True)
        lp = torch.log_softmax(rest.logits[0, -1].float(), -1)
        assert row["logodds"] == pytest.approx(float(lp[yes] - lp[no]), abs=2e-3)
        assert row["lp_yes"] == pytest.approx(float(lp[yes]), abs=2e-3)
    ctl = trials[trials["condition"] == "control"]
    plain = engine.score([conv, conv], [" yes", " no"])
    assert np.allclose(ctl["logodds"], float(plain[0].sum() - plain[1].sum()), atol=2e-3)
    assert not np.allclose(rows["logodds"], ctl["logodds"].iloc[0], atol=1e-3)
    assert trials["p_yes"].between(0, 1).all() and trials["p_outside"].between(0, 1).all()
    # the lens: the last block is the model's own answer; blocks before the injection read the control's numbers
    last = lens[lens["read_layer"] == runner.n_layers - 1].reset_index(drop=True)
    assert np.allclose(last["logodds_yes"], trials["logodds"], atol=1e-3)
    key = ["concept", "read_layer"]
    below = lens[(lens["condition"] == "concept") & (lens["read_layer"] < lens["layer"])].set_index(key)
    base = lens[lens["condition"] == "control"].set_index(key)
    assert len(below) and np.allclose(below["lp_concept"], base.loc[below.index, "lp_concept"], atol=1e-4)
    assert set(lens["concept_token"]) and len(lens) == len(trials) * runner.n_layers


def test_a_logit_lens_that_does_not_reproduce_the_models_own_output_is_refused(models, monkeypatch):
    """The lens at the last block must be the model's own distribution; a head the lens does not know (here a
    soft-cap the model does not apply, set on its config) is refused instead of giving wrong numbers per layer."""
    from reproduce.lm.steering import SteeringError, last_position_readout

    lm, _ = models["smollm2-135m"]
    conv = [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "The colour is"}]
    ids = [lm.tokenizer(" red", add_special_tokens=False)["input_ids"][0]]
    own, lens = last_position_readout(lm, [conv], ids, [0, len(lm.model.model.layers) - 1])
    assert lens[0, -1, 0] == pytest.approx(own[0, 0], abs=1e-4) and lens[0, 0, 0] != pytest.approx(own[0, 0], abs=1e-2)
    monkeypatch.setattr(lm.model.config, "final_logit_softcapping", 5.0, raising=False)
    with pytest.raises(SteeringError, match="does not reproduce its own output"):
        last_position_readout(lm, [conv], ids, [len(lm.model.model.layers) - 1])
