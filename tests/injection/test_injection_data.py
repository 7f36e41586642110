"""The concept-injection dataset: content counts, a byte-stable round trip, refusal of hand edits, the
rehash path for deliberate edits, and each validation error."""

import json
import re
from pathlib import Path

import pytest

import reproduce.injection.content as content
from reproduce.citation import release_sha256
from reproduce.datasets import DATA_RAW, DatasetError
from reproduce.injection.data import (FILES, NAME, content_prompts, load_injection_dataset, mentions,
                                      rehash_injection_dataset, write_injection_dataset)
from reproduce.io import sha256_bytes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_injection_dataset(tmp_path)
    return tmp_path


def _edit(root: Path, name: str, change) -> None:
    """Apply ``change`` to one file's text and re-record its hash by hand, so that only the loader's
    validation (not the hash check) stands between the edit and a load."""
    folder = root / NAME
    path = folder / name
    path.write_text(change(path.read_text()))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["file_sha256"][name] = sha256_bytes(path.read_bytes())
    manifest["release_sha256"] = release_sha256(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))


def _edit_prompts(root: Path, **changes) -> None:
    def change(text: str) -> str:
        return json.dumps({**json.loads(text), **changes}, indent=2)

    _edit(root, "prompts.json", change)


def _edit_rows(root: Path, name: str, row_change) -> None:
    def change(text: str) -> str:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return "".join(json.dumps(r) + "\n" for r in row_change(rows))

    _edit(root, name, change)


# ------------------------------------------------------------------------------------------------ content
def test_content_meets_the_stated_counts_and_forms():
    assert len(content.CONCEPTS) == len(set(content.CONCEPTS)) == 50
    assert len(content.BASELINES) == len(set(content.BASELINES)) >= 100
    assert not set(content.CONCEPTS) & set(content.BASELINES)
    for w in content.CONCEPTS + content.BASELINES:
        assert re.fullmatch(r"[a-z]+", w), w
    assert all(3 <= len(w) <= 12 for w in content.CONCEPTS)
    assert len(content.YES_BIAS) >= 24 and len(content.PREFILL_PAIRS) >= 60
    assert len(content.INTENTION_SENTENCES) >= 24
    assert not hasattr(content, "N_TRIALS") and content.INJECTION_DATASET_VERSION == "1.4.0"
    assert 60 <= len(content.PREAMBLE.split()) <= 100
    assert not content.IDENTIFY_PREFILL.endswith(" ")
    assert content.PREFILL_OPTIONS == ("intended", "accident")
    for q in content.YES_BIAS:
        assert q["question"].endswith('Answer with only "yes" or "no".')
    for pairs, lo, hi in ((content.PREFILL_PAIRS, 8, 20), (content.INTENTION_SENTENCES, 6, 14)):
        for p in pairs:
            assert lo <= len(p["sentence"].split()) <= hi, p
            assert p["word"] in content.CONCEPTS and not mentions(p["sentence"], p["word"]), p
    ids = [x["id"] for x in content.YES_BIAS + content.PREFILL_PAIRS + content.INTENTION_SENTENCES]
    assert len(ids) == len(set(ids))


# ------------------------------------------------------------------------------------------------ round trip
def test_round_trip_equals_the_constants(root):
    data = load_injection_dataset(root)
    assert data.concepts == content.CONCEPTS and data.baselines == content.BASELINES
    assert data.prompts == content_prompts()
    assert data.prompts["trial"] == content.TRIAL and "n_trials" not in data.prompts
    assert tuple(data.prompts["prefill_options"]) == content.PREFILL_OPTIONS
    assert data.yes_bias == content.YES_BIAS
    assert data.prefill == content.PREFILL_PAIRS
    assert data.intention == content.INTENTION_SENTENCES
    m = data.manifest
    assert m["name"] == NAME and m["version"] == data.version == "1.4.0" and m["licence"] == "CC-BY-4.0"
    assert m["release_sha256"] == release_sha256(m) == data.release_sha256
    assert m["files"] == list(FILES) and m["counts"]["concepts"] == 50
    assert m["file_lines"]["concepts.jsonl"] == len(content.CONCEPTS) + len(content.BASELINES)
    card = (root / NAME / "README.md").read_text()
    for needle in (m["version"], m["release_sha256"], *m["file_sha256"].values(), "Intended use",
                   "Known limitations", "rehash"):
        assert needle in card


def test_two_writes_give_identical_bytes(tmp_path):
    write_injection_dataset(tmp_path / "a")
    write_injection_dataset(tmp_path / "b")
    for name in (*FILES, "manifest.json", "README.md"):
        assert (tmp_path / "a" / NAME / name).read_bytes() == (tmp_path / "b" / NAME / name).read_bytes(), name


def test_concept_index_names_the_list_for_an_unknown_word(root):
    data = load_injection_dataset(root)
    assert data.concept_index(content.CONCEPTS[3]) == 3
    with pytest.raises(DatasetError, match=r"concept 'spoon' is not in the concept list \(50 words in "
                                           r"data_raw/concept_injection/concepts.jsonl\)"):
        data.concept_index("spoon")


# ------------------------------------------------------------------------------------------------ edits
def test_a_hand_edited_file_is_refused_naming_the_file(root):
    path = root / NAME / "prefill.jsonl"
    path.write_text(path.read_text().replace("lantern", "compass", 1))
    with pytest.raises(DatasetError, match=r"prefill\.jsonl does not match the sha256.*rehash"):
        load_injection_dataset(root)


def test_rehash_makes_a_deliberate_edit_loadable_under_a_new_version(root):
    path = root / NAME / "prompts.json"
    prompts = json.loads(path.read_text())
    prompts["trial"] = "Trial {n}: do you notice an injected thought? If so, what is it about?"
    path.write_text(json.dumps(prompts, indent=2) + "\n")
    with pytest.raises(DatasetError, match="changed but the version is still 1.4.0"):
        rehash_injection_dataset(root)
    m = rehash_injection_dataset(root, version="1.5.0")
    data = load_injection_dataset(root)
    assert data.prompts["trial"] == prompts["trial"] and data.version == "1.5.0"
    assert m["release_sha256"] == data.release_sha256 and "edited by hand" in m["generator"]
    assert "1.5.0" in (root / NAME / "README.md").read_text()


def test_a_version_bumped_by_hand_in_the_manifest_is_enough_for_rehash(root):
    path = root / NAME / "yes_bias.jsonl"
    path.write_text(path.read_text().replace("Is seven an even number?", "Is nine an even number?"))
    mpath = root / NAME / "manifest.json"
    mpath.write_text(mpath.read_text().replace('"version": "1.4.0"', '"version": "2.0.0"'))
    rehash_injection_dataset(root)
    assert load_injection_dataset(root).version == "2.0.0"


def test_rehash_of_an_untouched_dataset_changes_no_byte(root):
    before = {n: (root / NAME / n).read_bytes() for n in ("manifest.json", "README.md")}
    rehash_injection_dataset(root)
    assert before == {n: (root / NAME / n).read_bytes() for n in ("manifest.json", "README.md")}


def test_rehash_refuses_invalid_content(root):
    path = root / NAME / "concepts.jsonl"
    path.write_text(path.read_text() + '{"role": "concept", "word": "lantern"}\n')
    with pytest.raises(DatasetError, match="duplicate concept word 'lantern'"):
        rehash_injection_dataset(root, version="1.0.1")


# ------------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("key, text, needle", [
    ("trial", "This is a trial. Do you notice an injected thought?", r"'trial' lacks the placeholder \{n\}"),
    ("think", "Write \"{sentence}\" and nothing else.", r"'think' lacks the placeholder \{word\}"),
    ("concept_prompt", "Tell me about {word} in {language}.",
     r"'concept_prompt' has the unknown placeholder \{language\}"),
    ("preamble", "I study {word}.", r"'preamble' has the unknown placeholder \{word\}"),
])
def test_a_template_with_a_missing_or_unknown_placeholder_is_refused(root, key, text, needle):
    _edit_prompts(root, **{key: text})
    with pytest.raises(DatasetError, match=needle):
        load_injection_dataset(root)


def test_the_detection_question_comes_in_at_least_eight_distinct_wordings():
    words = content_prompts()["trial_forced"]
    assert len(words) >= 8 and len(set(words)) == len(words)
    assert all("{n}" in w and w.endswith('Answer with only "yes" or "no".') for w in words)


@pytest.mark.parametrize("wordings, needle", [
    (["Trial {n}. Any injected thought? Answer yes or no."] * 1, "at least 8 wordings"),
    ("Trial {n}. Any injected thought?", "at least 8 wordings.*got str"),
    ([f"Trial {{n}}, wording {i}." for i in range(7)] + ["Is there an injected thought?"],
     r"wording 8 must have exactly the placeholder \{n\}"),
    (["Trial {n}. Same words."] * 8, "repeats a wording"),
])
def test_too_few_repeated_or_unnumbered_wordings_are_refused(root, wordings, needle):
    _edit_prompts(root, trial_forced=wordings)
    with pytest.raises(DatasetError, match=needle):
        load_injection_dataset(root)


def test_an_identify_prefill_ending_in_a_space_is_refused(root):
    _edit_prompts(root, identify_prefill="Yes. It is about the word ")
    with pytest.raises(DatasetError, match="must not end with a space"):
        load_injection_dataset(root)


def test_a_prefill_word_outside_the_concepts_is_refused(root):
    _edit_rows(root, "prefill.jsonl", lambda rows: [{**rows[0], "word": "spoon"}, *rows[1:]])
    with pytest.raises(DatasetError, match=r"prefill\.jsonl: pf-00: word 'spoon' is not in the concept list"):
        load_injection_dataset(root)


def test_an_intention_word_outside_the_concepts_is_refused(root):
    _edit_rows(root, "intention.jsonl", lambda rows: [*rows[:-1], {**rows[-1], "word": "banana"}])
    with pytest.raises(DatasetError, match=r"intention\.jsonl: ic-\d+: word 'banana' is not in the concept"):
        load_injection_dataset(root)


def test_a_prefill_word_present_in_its_sentence_is_refused(root):
    _edit_rows(root, "prefill.jsonl",
               lambda rows: [{**rows[0], "sentence": "Two lanterns hung over the door of the small shop."},
                             *rows[1:]])
    with pytest.raises(DatasetError, match=r"pf-00: word 'lantern' occurs in its sentence"):
        load_injection_dataset(root)


def test_a_duplicate_concept_is_refused(root):
    _edit(root, "concepts.jsonl", lambda text: '{"role": "concept", "word": "violin"}\n' + text)
    with pytest.raises(DatasetError, match=r"concepts\.jsonl: duplicate concept word 'violin'"):
        load_injection_dataset(root)


def test_a_baseline_overlapping_the_concepts_is_refused(root):
    _edit(root, "concepts.jsonl", lambda text: text + '{"role": "baseline", "word": "copper"}\n')
    with pytest.raises(DatasetError, match=r"baseline words must not be concepts, but \['copper'\]"):
        load_injection_dataset(root)


def test_too_few_words_and_duplicate_ids_are_refused(root, tmp_path):
    _edit_rows(root, "concepts.jsonl", lambda rows: [r for r in rows if r["role"] == "baseline"][:9]
               + [r for r in rows if r["role"] == "concept"])
    with pytest.raises(DatasetError, match="9 baseline words; at least 10"):
        load_injection_dataset(root)
    write_injection_dataset(tmp_path / "ids")
    _edit_rows(tmp_path / "ids", "yes_bias.jsonl", lambda rows: [*rows, rows[0]])
    with pytest.raises(DatasetError, match="duplicate id 'yb-00'"):
        load_injection_dataset(tmp_path / "ids")


def test_a_missing_manifest_or_file_names_the_fix(tmp_path, root):
    with pytest.raises(DatasetError, match="manifest.json is missing.*injection.data write"):
        load_injection_dataset(tmp_path / "nowhere")
    (root / NAME / "intention.jsonl").unlink()
    with pytest.raises(DatasetError, match="intention.jsonl is missing"):
        load_injection_dataset(root)


def test_the_committed_dataset_matches_the_content_module():
    data = load_injection_dataset()
    assert data.concepts == content.CONCEPTS and data.prompts == content_prompts()
    assert data.version == content.INJECTION_DATASET_VERSION


# ------------------------------------------------------------------------------------------------ presets
def test_the_published_protocol_variants_carry_lindseys_words_and_wording(tmp_path):
    import reproduce.injection.lindsey_content as L
    from reproduce.injection.lindsey_data import LINDSEY, LINDSEY_INFO, write_variants

    from reproduce.injection.catalog import load_dataset

    write_variants(tmp_path)
    lind, info = (load_dataset(tmp_path, n) for n in (LINDSEY, LINDSEY_INFO))
    for d in (lind, info):
        assert d.concepts == L.LINDSEY_CONCEPTS and len(d.concepts) == 50
        assert d.baselines == tuple(dict.fromkeys(L.LINDSEY_BASELINES)) and len(d.baselines) == 99  # one duplicate
        assert d.prompts["concept_prompt"] == "Tell me about {word}"
        assert d.prompts["acknowledgement"] == "Ok."
        assert d.prompts["trial"].format(n=1) == ("Ok, let's get started.\n\nTrial 1: Do you detect an injected thought? "
                                                  "If so, what is the injected thought about?")
        assert d.prompts["trial_forced"] == content_prompts()["trial_forced"]  # the project's own forced choice
        # the project's prefill and intention items, each word re-keyed to Lindsey's word at the same position
        assert [p["word"] for p in d.prefill] == [L.LINDSEY_CONCEPTS[content.CONCEPTS.index(p["word"])]
                                                 for p in content.PREFILL_PAIRS]
        assert [p["sentence"] for p in d.intention] == [p["sentence"] for p in content.INTENTION_SENTENCES]
    assert lind.prompts["preamble"] == L.LINDSEY_PREAMBLE
    assert info.prompts["preamble"] == L.LINDSEY_PREAMBLE + "\n\n" + L.PEARSON_VOGEL_INFORMATION_PROMPT
    assert "information" in lind.concepts  # the paper's word 20, where several replications have "happiness"
    # the two-turn trial as Pearson-Vogel et al.'s rendered prompt has it (inject_info-*_fmt-yes-no.json): the first
    # user turn is "\n\n".join([preamble, information, notice]) (no information document in the plain variant)
    from reproduce.injection.two_turn import two_turn_conversation

    for d, parts in ((lind, [L.LINDSEY_PREAMBLE]), (info, [L.LINDSEY_PREAMBLE, L.PEARSON_VOGEL_INFORMATION_PROMPT])):
        conv = two_turn_conversation(d)
        assert conv[0]["content"] == "\n\n".join([*parts, "A concept has been injected into this message and the "
                                                             "next, prefilled message."])
        assert [m["content"] for m in conv[1:]] == ["{ }", L.PEARSON_VOGEL_TURN_2, "The answer is"]
        assert [m["role"] for m in conv] == ["user", "assistant", "user", "assistant"]
    with pytest.raises(DatasetError, match="unknown concept-injection dataset 'lindsey'"):
        load_dataset(tmp_path, "lindsey")


def test_the_committed_variants_match_their_content_module(tmp_path):
    from reproduce.injection.lindsey_data import SPECS, write_variants

    write_variants(tmp_path)
    for name in SPECS:
        for f in (*FILES, "manifest.json", "README.md"):
            assert (tmp_path / name / f).read_bytes() == (DATA_RAW / name / f).read_bytes(), (name, f)
