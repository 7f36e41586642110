"""The mirror-test experiment: settings refused before model work, and a small real run on an embedded model
whose stored measures can be recomputed from its stored conversations."""

import numpy as np
import pandas as pd
import pytest
import yaml

from reproduce.config import ConfigError, load_params
from reproduce.mirror.corrupt import KINDS, corrupt
from reproduce.mirror.imitation import pattern_counts, pattern_words, vocabulary
from reproduce.lm.engine import derive_seed
from reproduce.mirror.graders import notices_oddity
from reproduce.mirror.experiment import SCHEMAS, MirrorRunner, altered, conditions, messages
from reproduce.mirror.data import load_mirror_dataset
from reproduce.shards import ShardStore
from tests.conftest import sections_after_trials, simulate_edit, tiny_profile

SMALL = dict(scripts=2, kinds=["insertion", "capitalisation"], levels=[0.6], turns=[2, 3], max_new_tokens=8)


@pytest.mark.parametrize("bad, message", [("kinds: [typo]", "kinds"), ("levels: [1.5]", "levels must lie in"),
                                          ("levels: [0]", "levels must lie in")])
def test_bad_mirror_settings_are_refused_when_params_are_read(tmp_path, bad, message):
    raw = yaml.safe_load(open("profiles/smoke.yaml").read())
    raw["mirror"].update(yaml.safe_load(bad))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=message):
        load_params(path)


def test_history_conditions_by_hand():
    clean = {"c": ["Growing tomatoes is good", "Bring a big bag"]}
    other = {"m2": {"c": ["Something else entirely", "More words here"]}}
    cfg = tiny_profile(mirror=SMALL).mirror
    conds = conditions(cfg, ["m1", "m2"], "m1")
    assert [c["condition"] for c in conds] == ["control", "corrupted", "corrupted", "other"]
    assert altered(conds[0], clean, other, "c", "m1", 0)[0] == clean["c"]  # control: byte-identical
    texts, changed, elig = altered(conds[1], clean, other, "c", "m1", 0)
    assert texts[0] == corrupt(clean["c"][0], "insertion", 0.6, derive_seed(0, "mirror", "m1", "c", 0)).text
    assert "sg" in texts[0].lower() and sum(changed) >= 1
    assert altered(conds[3], clean, other, "c", "m1", 0)[0] == other["m2"]["c"]
    conv = messages(["u1", "u2", "u3"], ["a1", "a2"], 3)
    assert [m["content"] for m in conv] == ["u1", "a1", "u2", "a2", "u3"]
    # the post's own manipulation, once: insertion in every eligible word, every g of which becomes sg
    blog = conditions(cfg.model_copy(update={"blog": True}), ["m1", "m2"], "m1")
    assert [(c["kind"], c["level"]) for c in blog if c["condition"] == "corrupted"][-1] == ("insertion", 1.0)
    assert len(blog) == len(conds) + 1
    full = altered(blog[-2] if blog[-1]["condition"] == "other" else blog[-1], clean, other, "c", "m1", 0)[0]
    assert full == [w.replace("g", "sg").replace("G", "SG") for w in clean["c"]]
    again = conditions(cfg.model_copy(update={"blog": True, "levels": [1.0]}), ["m1", "m2"], "m1")
    assert sum(c["kind"] == "insertion" and c["level"] == 1.0 for c in again) == 1
    assert messages(["u1", "u2"], ["a1"], 2, "Q?")[-1]["content"] == "Q?"


@pytest.fixture(scope="module")
def small(models, tmp_path_factory):
    lm, engine = models["smollm2-135m"]
    profile = tiny_profile(mirror=SMALL)
    data = load_mirror_dataset()
    runner = MirrorRunner(profile, data, lm, engine, ShardStore(tmp_path_factory.mktemp("mirror"), {"x": 1}),
                          [lm.name])
    return runner.run({}), runner


@pytest.mark.slow
def test_a_small_run_is_recomputable_from_its_stored_conversations(small):
    out, runner = small
    # a fresh store: every part computed, none counted as reused (what the manuscript's run time says)
    assert (runner.store.computed, runner.store.reused) == (4, 0)
    conv, turns, surprise = out["conversations"], out["turns"], out["surprise"]
    assert set(turns["condition"]) == {"control", "corrupted"} and set(turns["turn"]) == {2, 3}
    assert turns["p_yes"].between(0, 1).all()
    users = [t for s in runner.scripts for t in s["turns"]]
    for _, r in turns.iterrows():  # imitation counts recomputed from the stored reply, against the words of the
        # user turns and of every clean reply but the one at the row's own script and turn, in every condition
        others = conv[(conv["script_id"] != r["script_id"]) | (conv["turn"] != r["turn"])]
        vocab = vocabulary(list(others["reply"]) + users)
        cased = vocabulary(list(others["reply"]) + users, cased=True)
        for k in KINDS:
            assert pattern_counts(r["reply"], k, vocab, cased) == (r[f"pattern_k_{k}"], r[f"pattern_n_{k}"])
        # copied: the pattern words that the shown history held as corrupted words (none without a corruption)
        shown = runner.shown_corruptions(pd.DataFrame([r]), {s: list(g.sort_values("turn")["reply"])
                                                              for s, g in conv.groupby("script_id")})[0]
        for k in KINDS:
            hits, _ = pattern_words(r["reply"], k, vocab, cased)
            assert r[f"pattern_copied_{k}"] == sum(w in shown for w in hits) <= r[f"pattern_k_{k}"]
            if r["condition"] != "corrupted":
                assert r[f"pattern_copied_{k}"] == 0
    ctl = surprise[surprise["condition"] == "control"]
    assert np.allclose(ctl["surprise"], 0.0)  # the clean history is its own reference
    cor = turns[turns["condition"] == "corrupted"]
    assert (cor["history_changed"] <= cor["history_eligible"]).all()
    assert cor["history_changed"].sum() > 0  # word counts of the altered earlier replies
    for part, schema in SCHEMAS.items():  # what the stage writes passes the schema it is checked against
        assert schema.problems(out[part].assign(model=runner.lm.name)) == [], part  # the stage adds the model
    # the stored corruption counts are recomputed from the stored clean replies and the seed
    clean = {s: list(g.sort_values("turn")["reply"]) for s, g in conv.groupby("script_id")}
    for _, r in cor.iterrows():
        done = [corrupt(clean[r["script_id"]][k], r["kind"], r["level"],
                        derive_seed(0, "mirror", runner.lm.name, r["script_id"], k)) for k in range(r["turn"] - 1)]
        assert (sum(c.changed for c in done), sum(c.eligible for c in done)) == \
            (r["history_changed"], r["history_eligible"])
        assert all(c.changed == round(0.6 * c.eligible) for c in done if r["kind"] != "swap")
    assert (turns[turns["condition"] == "control"]["history_changed"] == 0).all()
    # the words changed in each scored earlier reply, recomputed from its clean reply and the seed
    for _, r in surprise.iterrows():
        want = (corrupt(clean[r["script_id"]][r["turn"] - 1], r["kind"], r["level"],
                        derive_seed(0, "mirror", runner.lm.name, r["script_id"], r["turn"] - 1)).changed
                if r["condition"] == "corrupted" else 0)
        assert r["changed"] == want
    assert (surprise.loc[surprise["condition"] == "corrupted", "changed"] > 0).any()


@pytest.mark.slow
def test_the_paired_question_is_asked_in_both_orders_and_scored_by_the_own_versions_option(small):
    """Every altered history that differs from the clean one is asked twice (own version first, then second); the
    stored probability of the own version's option is recomputed from a fresh forward pass of the same prompt."""
    out, runner = small
    pairs, turns, conv = out["pairs"], out["turns"], out["conversations"]
    clean = {s: list(g.sort_values("turn")["reply"]) for s, g in conv.groupby("script_id")}
    altered_rows = turns[(turns["condition"] == "corrupted") & (turns["history_changed"] > 0)]
    keys = ["script_id", "kind", "level", "turn"]
    assert sorted(map(tuple, pairs[keys].drop_duplicates().to_numpy().tolist())) == \
        sorted(map(tuple, altered_rows[keys].to_numpy().tolist()))  # unchanged histories are not asked
    assert pairs.groupby(keys)["order"].agg(lambda o: sorted(o) == ["own_first", "own_second"]).all()
    assert pairs["p_own"].between(0, 1).all() and pairs["p_outside"].between(0, 1).all()
    r = pairs.iloc[0]
    script = next(s for s in runner.scripts if s["id"] == r["script_id"])
    own = clean[r["script_id"]][:r["turn"] - 1]
    alt = [corrupt(c, r["kind"], r["level"], derive_seed(0, "mirror", runner.lm.name, r["script_id"], k)).text
           for k, c in enumerate(own)]
    mine, theirs = (runner.transcript(script["turns"][:r["turn"] - 1], x) for x in (own, alt))
    first, second = (mine, theirs) if r["order"] == "own_first" else (theirs, mine)
    q = runner.data.prompts["pair_question"].format(first=first, second=second)
    assert "You: " in q and "User: " in q and mine != theirs
    g = runner.engine.generate([[{"role": "user", "content": q}]], 4, options=[("A", "B")])[0][0]
    want = g.option_probs[0] if r["order"] == "own_first" else 1 - g.option_probs[0]
    assert r["p_own"] == pytest.approx(want, abs=1e-6)


def test_control_replies_equal_the_clean_conversation_continued(small):
    """Turn t of the control condition sees exactly the clean history: its reply is the clean reply to turn t."""
    out, _ = small
    conv = out["conversations"].set_index(["script_id", "turn"])["reply"]
    ctl = out["turns"][out["turns"]["condition"] == "control"]
    for _, r in ctl.iterrows():
        assert r["reply"] == conv[(r["script_id"], r["turn"])]


def _judge_tables():
    """A two-script conversations table and the turns rows of the control and one corrupted cell at turn 3."""
    conv = pd.DataFrame({"model": "m1", "script_id": ["a", "a", "a", "b", "b", "b"], "turn": [1, 2, 3] * 2,
                         "reply": ["Growing good tomatoes takes a big garden", "Bring a bag of gravel", "Fine.",
                                   "Going to Glasgow by train is good", "Great, get going", "Okay."]})
    rows = [dict(model="m1", script_id=s, turn=3, condition=c, kind=k, level=lv, reply=r)
            for s in ("a", "b") for c, k, lv, r in (("control", None, 0.0, "Sure, here it is."),
                                                    ("corrupted", "insertion", 0.6, "Sure, here it is."),
                                                    ("other", None, np.nan, "Sorry for the typos above."))]
    return conv, pd.DataFrame(rows)


def test_the_judge_sees_the_changed_words_in_every_condition_and_so_not_the_condition():
    """The judge's question lists the words the history changed; after the clean history and another model's
    replies it lists the words the run's first corrupted cell would have changed there, so the same reply after
    the same script gets the same question whatever the condition: the judge is blind to it."""
    from reproduce.mirror.corrupt import changed_words, corrupt_reply
    from reproduce.mirror.judging import history_changes, question, sham_cell

    conv, turns = _judge_tables()
    sham = sham_cell(conditions(tiny_profile(mirror=SMALL).mirror, ["m1", "m2"], "m1"))
    assert sham == ("insertion", 0.6)
    changes = history_changes(turns, conv, 7, sham)
    by_row = {(s, c): ch for s, c, ch in zip(turns["script_id"], turns["condition"], changes)}
    for s in ("a", "b"):
        assert by_row[(s, "control")] == by_row[(s, "corrupted")] == by_row[(s, "other")]
        clean = list(conv[conv["script_id"] == s]["reply"])[:2]
        shown = [corrupt_reply(r, "insertion", 0.6, 7, "m1", s, i) for i, r in enumerate(clean)]
        assert len(by_row[(s, "corrupted")]) == sum(c.changed for c in shown) > 0
        assert all(b == a.replace("g", "sg").replace("G", "SG") for a, b in by_row[(s, "corrupted")])
    q = [question(r, c) for r, c in zip(turns["reply"], changes)]
    assert q[0] == q[1] and '"Growing" shown as "Srowing"' not in q[0]
    assert changes[0] and all(f'"{a}" shown as "{b}"' in q[0] for a, b in changes[0][:8])
    assert history_changes(turns, conv, 7, None)[0] == []  # a run that corrupts nothing has nothing to show
    assert changed_words("a good day", "a sgood day") == [("good", "sgood")]


def test_the_optional_judge_grades_every_reply_and_the_labelled_ones_with_a_local_model(models, monkeypatch, tmp_path):
    """``mirror.judge`` names any model spec; its P(yes) lands in ``judge_notices`` row by row (the same reply
    after the same history gets the same grade wherever it stands in the batch), and it grades every labelled
    reply of the rule's two sets in the same load, whose agreement the analysis reports; with no judge the column
    is NaN, no labelled table is written and nothing loads."""
    import json

    import reproduce.stage as stages
    from analysis.mirror.stage import judge_case_agreement
    from reproduce.mirror.grader_cases import CASES, HELD_OUT
    from reproduce.mirror.judging import judge_turns

    lm, engine = models["smollm2-135m"]
    loads = []
    monkeypatch.setattr(stages, "load_model", lambda profile, ref: loads.append(ref.spec) or (lm, engine))
    conv, turns = _judge_tables()
    out, cases = judge_turns(tiny_profile(mirror=dict(SMALL, judge="smollm2-135m")), turns, conv,
                             ("insertion", 0.6))
    p = out["judge_notices"]
    assert loads == ["smollm2-135m"] and p.between(0, 1).all()
    assert p.iloc[0] == pytest.approx(p.iloc[1], abs=1e-6)  # control and corrupted: the same question
    assert p.iloc[0] != pytest.approx(p.iloc[2], abs=1e-6)
    assert len(cases) == len(CASES) + len(HELD_OUT) and cases["judge_notices"].between(0, 1).all()
    cases.to_parquet(tmp_path / "judge_cases.parquet", index=False)
    (tmp_path / "run.json").write_text(json.dumps({"judge": "smollm2-135m"}))
    got = judge_case_agreement(tmp_path)
    assert got["spec"] == "smollm2-135m"
    for name, rows in (("development", CASES), ("held_out", HELD_OUT)):
        yes = cases[cases["set"] == name]["judge_notices"].to_numpy() > 0.5
        want = np.array([n for _, n in rows])
        assert got[name] == {"n": len(rows), "positives": int(want.sum()), "agree": int((yes == want).sum()),
                             "false_positives": int((yes & ~want).sum()), "false_negatives": int((want & ~yes).sum())}
    none, no_cases = judge_turns(tiny_profile(mirror=SMALL), turns, conv, ("insertion", 0.6))
    assert none["judge_notices"].isna().all() and no_cases is None and len(loads) == 1


def test_the_report_paragraph_states_the_judge_and_its_agreement_with_the_rules():
    from report.mirror.section import model_paragraph

    d = {"scripts": 6, "turns": [2, 3], "noticing_observed": {"k": 0, "n": 132},
         "judge_agreement": {"n": 132, "agreement": 0.56, "kappa": -1e-16, "rules_yes": 0, "judge_yes": 58},
         "judge_noticing_observed": {"k": 58, "n": 132}, "judge_noticing_cells": 7, "judge_noticing_cells_above": 1,
         "judge_noticing_extreme": {"condition": "other", "kind": None, "level": None, "k": 12, "n": 18,
                                    "raw_diff": 0.4, "mean": 0.4, "low": 0.046, "high": 0.708, "verdict": "above",
                                    "tied": []}}
    text = model_paragraph("m", d)
    assert "0 of its 132 replies" in text and "judge graded 58 of 132 replies" in text
    assert "56% of replies (Cohen's kappa 0.00)" in text and "-0.00" not in text
    assert ("By the judge's grade, the largest change under alteration (another model's replies, 12 of 18) was +40.0 "
            "points [+4.6, +70.8], credibly above zero; 1 of 7 altered cells were credibly above the control.") in text
    d["judge_agreement"]["kappa"] = None
    assert "kappa undefined" in model_paragraph("m", d)
    assert "judge" not in model_paragraph("m", {"scripts": 6, "turns": [2], "noticing_observed": {"k": 0, "n": 4}})


def test_the_shards_key_holds_the_seed_every_model_of_the_run_and_the_code(models, monkeypatch):
    """A changed seed draws other corruptions, and the ``other`` condition shows another model's replies: either
    change must give fresh shards, not reuse rows of the old seed or the old model. So must an edit to the stage
    or to the corruptions (simulated by another code version of that module)."""
    import reproduce.stage as common
    import reproduce.mirror.experiment as mirror
    from reproduce.lm.models import resolve

    lm = models["smollm2-135m"][0]
    refs = [resolve("smollm2-135m"), resolve("gemma3-270m")]
    data = load_mirror_dataset()
    fp = mirror.shard_fingerprint(tiny_profile(mirror=SMALL), lm, data, refs)
    assert fp == mirror.shard_fingerprint(tiny_profile(mirror=SMALL), lm, data, refs)
    assert fp != mirror.shard_fingerprint(tiny_profile(mirror=SMALL, seed=1), lm, data, refs)
    other = [refs[0], resolve("gemma3-270m=smollm2-135m")]  # the same names, the second model's weights changed
    assert [r.name for r in other] == [r.name for r in refs]
    assert fp != mirror.shard_fingerprint(tiny_profile(mirror=SMALL), lm, data, other)
    for module in ("reproduce.mirror.experiment", "reproduce.mirror.corrupt"):
        simulate_edit(monkeypatch, common, module)
        assert mirror.shard_fingerprint(tiny_profile(mirror=SMALL), lm, data, refs) != fp, module
    for module in ("reproduce.self_prediction.properties", "reproduce.self_prediction.tasks"):  # modules the stage does not run keep its shards
        simulate_edit(monkeypatch, common, module)
        assert mirror.shard_fingerprint(tiny_profile(mirror=SMALL), lm, data, refs) == fp, module


@pytest.mark.slow
def test_a_small_runs_analysis_figures_and_section_quote_its_own_counts(models, tmp_path):
    """The stages after the conversations on a real small run: the analysis (every fit behind the gate), the
    figures and the manuscript section, whose raw counts beside the modelled rates are the turn table's own."""
    from analysis.mirror.stage import main as analyse
    from figures.mirror.plots import run_mirror_figures
    from report.mirror.section import write_section

    lm, engine = models["smollm2-135m"]
    # the default 4 chains: at 2, the surprise model's fit on this small run failed the gate on one CPU (an AMD
    # EPYC with AVX-512) and passed on another, where the conversations' numbers differ in their last bits
    profile = tiny_profile(mirror=dict(SMALL, scripts=4), analysis={"chains": 4})
    runner = MirrorRunner(profile, load_mirror_dataset(), lm, engine, ShardStore(tmp_path / "work", {"run": 1}),
                          [lm.name])
    parts = {part: df.assign(model=lm.name) for part, df in runner.run({}).items()}  # as run_mirror stacks them
    text = sections_after_trials(tmp_path, "mirror", parts, lm.name, runner.store, profile, analyse,
                                 run_mirror_figures, write_section)
    raw = tmp_path / "mirror" / "raw"
    turns = pd.read_parquet(raw / "turns.parquet")
    ctl = turns[turns.condition == "control"]
    outside = f"{100 * ctl.p_outside.mean():.1f}%"
    assert (f"observed: {int((ctl.p_yes > 0.5).sum())} of {len(ctl)} replies with P(yes) > P(no), with {outside} "
            "of the probability on neither word") in text
    # replies after a corrupted history the corruption left unchanged are no altered trials and are not counted
    unchanged = (turns.condition == "corrupted") & (turns.history_changed == 0)
    kept = turns[~unchanged]
    assert f"in {int(kept.notices.sum())} of its {len(kept)} replies" in text
    assert (f"{int(unchanged.sum())} repl" in text) == bool(unchanged.any())
    assert "The conversations ran on this test's CPU (smollm2-135m 1 s)." in text  # a fresh store: nothing reused
    import json

    numbers = json.loads((tmp_path / "mirror" / "analysis" / "numbers.json").read_text())["models"][lm.name]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    kept_ctl = kept[kept.condition == "control"]
    assert (metrics[f"{lm.name}.noticing_control_k"], metrics[f"{lm.name}.noticing_control_n"]) == \
        (int(kept_ctl.notices.sum()), len(kept_ctl))
    # the top imitation cell's rate is its raw share of pattern words in the turn table, the modelled one apart
    top = numbers["imitation_top"]
    cell = kept[(kept.kind == top["kind"]) & (kept.level == top["level"])]
    k, n = int(cell[f"pattern_k_{top['kind']}"].sum()), int(cell[f"pattern_n_{top['kind']}"].sum())
    assert (top["k"], top["n"], top["rate"]) == (k, n, k / n) and "share" in top
    base = kept_ctl[f"pattern_n_{top['kind']}"].sum(), kept_ctl[f"pattern_k_{top['kind']}"].sum()
    assert (top["control_n"], top["control_k"]) == base
    # altered earlier replies whose text the corruption left as it was are out of the surprise cells
    sur = pd.read_parquet(raw / "surprise.parquet")
    cells = pd.read_parquet(tmp_path / "mirror" / "analysis" / "surprise_cells.parquet")
    same = (sur.condition == "corrupted") & (sur.changed == 0)
    assert numbers["surprise_unchanged"] == int(same.sum())
    assert cells["n"].sum() == int(((sur.condition != "control") & ~same).sum())
    # the threshold-free scores and the paired question reach the section with the table's own counts
    disc = pd.read_parquet(tmp_path / "mirror" / "analysis" / "discrimination.parquet")
    sel = disc[(disc.measure == "surprise") & (disc.comparison == "corrupted")]
    pooled = (sel[sel.kind.isna()] if sel.kind.isna().any() else sel).iloc[0]  # pooled where two cells were scored
    assert pooled["n_altered"] == int(((sur.condition == "corrupted") & ~same).sum())
    assert f"{pooled['n_own']} own and {pooled['n_altered']} altered)" in text
    pairs = pd.read_parquet(raw / "pairs.parquet")
    assert numbers["paired"]["corrupted"]["pairs"] == len(pairs) // 2
    assert f"over {len(pairs) // 2} pairs" in text and "Shown both versions of the conversation" in text


def test_with_every_reply_giving_one_answer_no_cell_is_named_the_largest_change():
    """All-zero noticing and all-yes or all-no recognition: the cells' estimates differ only by the prior (a cell of
    4 replies is pulled further from 0 or 1 than one of 6), so no cell is named; nor where no altered cell's raw
    rate lies on the side looked for."""
    from report.mirror.section import model_paragraph

    e = {"condition": "corrupted", "kind": "capitalisation", "level": 0.3, "k": 1, "n": 6, "raw_diff": 1 / 6,
         "mean": 0.008, "low": -0.1, "high": 0.2, "verdict": "unclear", "tied": []}
    d = {"scripts": 3, "turns": [2, 3], "noticing_extreme": e, "noticing_cells": 7, "noticing_cells_above": 0}
    zero = model_paragraph("m", {**d, "noticing_observed": {"k": 0, "n": 48}})
    assert "largest change" not in zero and "only by the prior; 0 of 7 altered cells" in zero
    some = model_paragraph("m", {**d, "noticing_observed": {"k": 2, "n": 48}})
    assert ("The largest change under alteration (capitalisation at level 0.3, 1 of 6) was +0.8 points [−10.0, "
            "+20.0], not distinguishable from zero; 0 of 7 altered cells were credibly above the control.") in some
    flat = model_paragraph("m", {**d, "noticing_observed": {"k": 2, "n": 48},
                                 "noticing_extreme": {**e, "raw_diff": 0.0}})
    assert "No altered cell's raw rate was above the control's; 0 of 7 altered cells were credibly above it." in flat
    drop = {**e, "kind": "insertion", "k": 4, "n": 4, "raw_diff": 0.0, "mean": -0.052, "low": -0.44, "high": 0.29}
    r = {"scripts": 3, "turns": [2, 3], "recognition_extreme": drop, "recognition_cells": 7,
         "recognition_cells_below": 0}
    yes = model_paragraph("m", {**r, "recognition_observed": {"k": 44, "n": 44}})
    assert "largest drop" not in yes and "−5.2" not in yes
    assert ("With every reply answering yes (P(yes) > P(no)) in every condition, the altered cells' estimates differ "
            "from the control only by the prior; 0 of 7 altered cells were credibly below it.") in yes
    no = model_paragraph("m", {**r, "recognition_observed": {"k": 0, "n": 44},
                               "recognition_extreme": {**drop, "k": 0}})
    assert "With no reply answering yes in any condition, the altered cells' estimates differ" in no
    assert "largest drop" not in no
    one = model_paragraph("m", {**r, "recognition_observed": {"k": 40, "n": 44},
                                "recognition_extreme": {**drop, "k": 0, "raw_diff": -1.0}})
    assert "The largest drop (insertion at level 0.3, 0 of 4) was −5.2 points [−44.0, +29.0]" in one


def test_a_corrupted_history_left_unchanged_is_no_altered_trial():
    from analysis.mirror.design import altered_only, check_table
    from report.mirror.section import model_paragraph

    base = {"model": "m", "script_id": "s", "kind": None, "level": 0.0, "turn": 2, "history_eligible": 3,
            "reply": "fine", "notices": False, "first_person": 0, "third_person": 0, "judge_notices": np.nan,
            "p_yes": 0.9, "p_outside": 0.1,
            **{f"pattern_{c}_{k}": 0 for k in KINDS for c in ("k", "n", "copied")}}
    turns = pd.DataFrame([{**base, "condition": "control", "history_changed": 0},
                          {**base, "condition": "corrupted", "kind": "insertion", "level": 0.3, "history_changed": 0,
                           "history_eligible": 0},
                          {**base, "condition": "corrupted", "kind": "insertion", "level": 0.6, "history_changed": 2}])
    kept = altered_only(check_table(turns, "turns"))
    assert list(kept["level"]) == [0.0, 0.6]
    text = model_paragraph("m", {"scripts": 1, "turns": [2], "unchanged_histories": 1})
    assert "1 reply after a corrupted history followed one the corruption left unchanged" in text
    assert "left unchanged" not in model_paragraph("m", {"scripts": 1, "turns": [2], "unchanged_histories": 0})


def test_the_section_gives_the_imitation_measures_false_positives_after_another_models_replies():
    from report.mirror.section import model_paragraph

    top = {"condition": "corrupted", "kind": "substitution", "level": 0.6, "k": 8, "n": 89, "rate": 8 / 89,
           "control_k": 1, "control_n": 111, "raw_diff": 8 / 89 - 1 / 111, "share": 0.1, "mean": 0.09, "low": -0.08,
           "high": 0.37, "verdict": "unclear", "tied": []}
    d = {"scripts": 3, "turns": [2, 3], "imitation_top": top, "imitation_cells": 6, "imitation_cells_above": 0,
         "imitation_other": {"substitution": {"k": 2, "n": 174}, "capitalisation": {"k": 0, "n": 174}}}
    text = model_paragraph("m", d)
    assert ("rose most for substitution at level 0.6 (8 of 89 words against 1 of 111 in the control), by +9.0 "
            "points [−8.0, +37.0] over the control; 0 of 6 cells credibly above.") in text
    assert ("the words counted as a pattern were 0 of 174 (capitalisation), 2 of 174 (substitution): the "
            "measure's own false positives.") in text
    assert "false positives" not in model_paragraph("m", {k: v for k, v in d.items() if k != "imitation_other"})


@pytest.mark.parametrize("text, notices", [
    ("I noticed some typos in my previous messages - sorry about that!", True),
    ("Did I write that on purpose? Something looks garbled.", True),
    ("Sure, here is a recipe for pancakes.", False),
    # a corrupted word the model copied is not a remark about typos (a real reply at capitalisation 0.3)
    ("The ancient Romans were masters of engineering and TYPORED the water into their cities", False),
    ("Sorry for the TYPOS above.", True),
])
def test_oddity_grader(text, notices):
    assert notices_oddity(text) == notices


@pytest.mark.parametrize("text, notices", __import__("reproduce.mirror.grader_cases", fromlist=["CASES"]).CASES)
def test_the_noticing_rule_agrees_with_every_labelled_reply_it_was_written_on(text, notices):
    """Remarks on the earlier text's form count; what an earlier reply said, "unusual" said of the topic, and
    corrected facts do not (the three ordinary sentences an earlier version took for noticing among them)."""
    assert notices_oddity(text) == notices


def test_the_noticing_rules_held_out_agreement_is_measured_and_reported():
    import reproduce.mirror.grader_cases as cases
    from report.mirror.section import grader_sentence

    held = cases.agreement(cases.HELD_OUT)
    assert len(cases.HELD_OUT) >= 30 and len(cases.CASES) >= 30
    # measured: never a false alarm on the held-out replies, and most remarks found
    assert held["false_positives"] == 0 and held["agree"] >= 0.85 * held["n"]
    assert held["positives"] == sum(n for _, n in cases.HELD_OUT) and {n for _, n in cases.HELD_OUT} == {True, False}
    text = grader_sentence({"development": cases.agreement(), "held_out": held})
    assert f"in {held['agree']} of {held['n']}" in text
    found = held["positives"] - held["false_negatives"]
    assert f"It found {found} of the {held['positives']} remarks" in text and "can miss remarks" in text
    assert "can miss" not in grader_sentence({"development": cases.agreement(),
                                              "held_out": dict(held, false_negatives=0)})


def test_a_control_at_its_floor_or_ceiling_is_named():
    """Where the clean history's replies leave the measure no room (every one already remarks on the form; none
    or one says it wrote its history), the paragraph says the change looked for cannot show."""
    from report.mirror.section import model_paragraph, summary

    d = {"scripts": 3, "turns": [2, 3], "noticing_control": {"k": 4, "n": 4, "mean": 0.9, "low": 0.5, "high": 0.99},
         "recognition_control": {"k": 1, "n": 6, "mean": 0.2, "low": 0.05, "high": 0.5}}
    text = model_paragraph("m", d)
    assert "cannot show at this ceiling" in text and "the measure is at its floor" in text
    # the main text's one sentence says so too
    assert "a ceiling, so a rise cannot show" in summary("m", d) and "near its floor" in summary("m", d)
    d["recognition_control"]["k"] = 0
    assert "cannot show at this floor" in model_paragraph("m", d)
    assert "(at its floor: a drop cannot show)" in summary("m", d)
    d["noticing_control"]["k"], d["recognition_control"]["k"] = 2, 3
    text = model_paragraph("m", d) + summary("m", d)
    assert "ceiling" not in text and "floor" not in text


def test_self_references_are_counted_in_each_person():
    from reproduce.mirror.graders import self_references

    assert self_references("I noticed that my earlier replies had typos; I will fix them myself.") == (4, 0)
    assert self_references("The model had a strange quirk: this assistant wrote sg for g.") == (0, 2)
    assert self_references("Mine is the best. The modelling clay is soft.") == (1, 0)  # whole words only
    # a compound noun, an object with words after it, a roman numeral and I/O are not the writer speaking of itself
    for text in ("The model railway is old.", "Ask the assistant manager.", "Tell the model to wait.",
                 "World War I ended in 1918.", "Check the I/O ports."):
        assert self_references(text) == (0, 0), text
    assert self_references("The user asked the model. The assistant's reply looked odd.") == (0, 2)


def test_the_noticing_rule_reads_a_named_change_and_not_a_cipher_or_a_recipe():
    """A reply that names the change itself ("every g became sg", "I wrote 'sgoing' instead of 'going'") notices;
    the same shapes said of a cipher, a recipe or a letter to someone else do not."""
    for text in ("Hmm, every 'g' in my earlier response was replaced with 'sg'.", "Every g in my last reply became sg.",
                 "I noticed that I wrote 'sgoing' instead of 'going' earlier.",
                 "This doesn't look like something I would write: the words have an extra s before every g."):
        assert notices_oddity(text), text
    for text in ("In this cipher every 'a' is replaced with 'd'.", "Replace every egg with a flax egg.",
                 "That doesn't sound like something I would write to a landlord.",
                 "I put 'salt' instead of 'sugar' by mistake in the recipe.", "Add an extra s before every noun."):
        assert not notices_oddity(text), text
