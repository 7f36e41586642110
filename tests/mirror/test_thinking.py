"""Thinking sections (reproduce/lm/thinking.py): which chat templates have one, how a generated text splits into
the trace and the visible reply, and the mirror stage keeping and grading the trace apart, on the embedded model
with a small fake template."""

import pytest

from reproduce.lm.thinking import markers, model_markers, split

THINK = ("<think>", "</think>", False)
OPENED = ("<think>", "</think>", True)


def test_the_recognised_templates_are_those_that_write_both_markers():
    assert markers("{{ '<think>' }}...{{ '</think>' }}") == ("<think>", "</think>")
    assert markers("<thinking> x </thinking>") == ("<thinking>", "</thinking>")
    assert markers("{% for m in messages %}{{ m.content }}{% endfor %}") is None and markers(None) is None
    assert markers("only <think> here") is None


@pytest.mark.parametrize("text, marks, want", [
    ("<think>the g became sg, odd</think> Here is the recipe.", THINK, ("the g became sg, odd", "Here is the recipe.")),
    ("the g became sg, odd</think>\nHere is the recipe.", OPENED, ("the g became sg, odd", "Here is the recipe.")),
    ("still thinking about it", OPENED, ("still thinking about it", "")),  # ran out of tokens inside the span
    ("Sure. <think>half a thought", THINK, ("half a thought", "Sure.")),
    ("No trace at all.", THINK, (None, "No trace at all.")),
    ("<think>x</think> y", None, (None, "<think>x</think> y")),  # a template without the section: left as it is
])
def test_a_generated_text_splits_into_its_trace_and_its_visible_reply(text, marks, want):
    assert split(text, marks) == want


FAKE = ("{# a reasoning template: the reply reasons in <think> ... </think> first #}"
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")


@pytest.mark.slow
def test_the_mirror_stage_keeps_a_trace_and_grades_it_apart_with_a_fake_thinking_template(models, monkeypatch,
                                                                                          tmp_path):
    from reproduce.mirror.data import load_mirror_dataset
    from reproduce.mirror.experiment import SCHEMAS, MirrorRunner, reply_parts
    from reproduce.mirror.graders import self_references
    from reproduce.shards import ShardStore
    from tests.conftest import tiny_profile

    lm, engine = models["smollm2-135m"]
    assert model_markers(lm) is None  # the embedded model's own template has no thinking section
    monkeypatch.setattr(lm.tokenizer, "chat_template", FAKE)
    assert model_markers(lm) == OPENED  # the fake one opens the span in the generation prompt
    assert reply_parts(lm, "Odd letters in my last reply.</think> Anyway, boil the pasta.") == \
        ("Odd letters in my last reply.", "Anyway, boil the pasta.")
    profile = tiny_profile(mirror=dict(scripts=1, kinds=["insertion"], levels=[1.0], turns=[2], max_new_tokens=8))
    runner = MirrorRunner(profile, load_mirror_dataset(), lm, engine, ShardStore(tmp_path, {"fake": 1}), [lm.name])
    out = runner.run({})
    turns = out["turns"]
    assert turns["thinking"].notna().all()  # every reply began inside the span the prompt opened
    for _, r in turns.iterrows():  # the trace and the reply are the generated text split at the closing marker
        assert ("</think>" in r["thinking"]) is False and r["notices_thinking"] in (True, False)
        # self-references counted in the trace apart from the reply
        assert (r["first_person_thinking"], r["third_person_thinking"]) == self_references(r["thinking"])
        assert (r["first_person"], r["third_person"]) == self_references(r["reply"])
    assert SCHEMAS["turns"].problems(turns.assign(model=lm.name)) == []
    # the clean history later turns see holds no trace
    assert not out["conversations"]["reply"].str.contains("<think>|</think>").any()
