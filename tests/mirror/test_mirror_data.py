"""The mirror-test dataset: content counts and wording, a byte-stable round trip, refusal of hand edits, the
rehash path for deliberate edits, and each validation error."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

import reproduce.mirror.content as content
from reproduce.citation import read_manifests, release_sha256
from reproduce.datasets import DatasetError
from reproduce.io import sha256_bytes
from reproduce.mirror.data import (FILES, NAME, content_prompts, load_mirror_dataset, rehash_mirror_dataset,
                                   write_mirror_dataset)

FORBIDDEN = ("typo", "spelling", "error", "glitch", "mistake", "misspell", "previous message")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_mirror_dataset(tmp_path)
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


def _edit_scripts(root: Path, rows_change) -> None:
    def change(text: str) -> str:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return "".join(json.dumps(r) + "\n" for r in rows_change(rows))

    _edit(root, "scripts.jsonl", change)


def _edit_script(root: Path, index: int, **changes) -> None:
    _edit_scripts(root, lambda rows: [{**r, **changes} if i == index else r for i, r in enumerate(rows)])


# ------------------------------------------------------------------------------------------------ content
def test_content_meets_the_stated_counts_and_forms():
    assert content.MIRROR_DATASET_VERSION == "1.2.0"
    assert len(content.SCRIPTS) >= 44
    ids = [s["id"] for s in content.SCRIPTS]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"conv-\d{2}", i) for i in ids)
    lengths = Counter(len(s["turns"]) for s in content.SCRIPTS)
    assert set(lengths) == {4, 5, 6}, lengths  # every length occurs, none other
    for s in content.SCRIPTS:
        assert set(s) == {"id", "topic", "turns"} and s["topic"].strip(), s["id"]
        for turn in s["turns"]:
            assert 5 <= len(turn.split()) <= 30, (s["id"], turn)
            assert turn == turn.strip() and turn[-1] in ".?!", (s["id"], turn)
    assert len({s["topic"] for s in content.SCRIPTS}) == len(content.SCRIPTS)
    assert content.RECOGNITION_OPTIONS == ("yes", "no")
    assert '"yes"' in content.RECOGNITION_QUESTION and '"no"' in content.RECOGNITION_QUESTION


def test_no_turn_mentions_what_the_test_measures():
    for s in content.SCRIPTS:
        for turn in s["turns"]:
            low = turn.casefold()
            assert not [w for w in FORBIDDEN if w in low], (s["id"], turn)
            assert not re.search(r"\byou (said|mentioned|wrote)\b|\byour (last|earlier) (answer|reply)", low), turn


# ------------------------------------------------------------------------------------------------ round trip
def test_round_trip_equals_the_constants(root):
    data = load_mirror_dataset(root)
    assert data.scripts == content.SCRIPTS
    assert data.prompts == content_prompts()
    assert data.prompts["recognition_question"] == content.RECOGNITION_QUESTION
    assert tuple(data.prompts["recognition_options"]) == content.RECOGNITION_OPTIONS
    assert data.script("conv-03") == content.SCRIPTS[3]
    m = data.manifest
    assert m["name"] == NAME and m["version"] == data.version == "1.2.0" and m["licence"] == "CC-BY-4.0"
    assert m["release_sha256"] == release_sha256(m) == data.release_sha256
    assert m["files"] == list(FILES) and "family" not in m
    assert m["counts"]["scripts"] == len(content.SCRIPTS) == m["file_lines"]["scripts.jsonl"]
    assert m["counts"]["user_turns"] == sum(len(s["turns"]) for s in content.SCRIPTS)
    assert sum(m["counts"]["turns_per_script"].values()) == len(content.SCRIPTS)
    assert [x["name"] for x in read_manifests(root, "experiment")] == [NAME] and not read_manifests(root, "task")
    card = (root / NAME / "README.md").read_text()
    for needle in (m["version"], m["release_sha256"], *m["file_sha256"].values(), "Intended use",
                   "Known limitations", "rehash"):
        assert needle in card


def test_two_writes_give_identical_bytes(tmp_path):
    write_mirror_dataset(tmp_path / "a")
    write_mirror_dataset(tmp_path / "b")
    for name in (*FILES, "manifest.json", "README.md"):
        assert (tmp_path / "a" / NAME / name).read_bytes() == (tmp_path / "b" / NAME / name).read_bytes(), name


def test_an_unknown_script_id_is_named(root):
    with pytest.raises(DatasetError, match=rf"script 'conv-99' is not in the dataset \({len(content.SCRIPTS)} "
                                           r"scripts in data_raw/mirror_test/scripts.jsonl\)"):
        load_mirror_dataset(root).script("conv-99")


# ------------------------------------------------------------------------------------------------ edits
def test_a_hand_edited_file_is_refused_naming_the_file(root):
    path = root / NAME / "scripts.jsonl"
    path.write_text(path.read_text().replace("spaghetti", "linguine", 1))
    with pytest.raises(DatasetError, match=r"scripts\.jsonl does not match the sha256.*rehash"):
        load_mirror_dataset(root)


def test_rehash_makes_a_deliberate_edit_loadable_under_a_new_version(root):
    path = root / NAME / "prompts.json"
    prompts = json.loads(path.read_text())
    prompts["recognition_question"] = 'Are all the replies above exactly as you wrote them? Answer "yes" or "no".'
    path.write_text(json.dumps(prompts, indent=2) + "\n")
    with pytest.raises(DatasetError, match="changed but the version is still 1.2.0"):
        rehash_mirror_dataset(root)
    m = rehash_mirror_dataset(root, version="1.3.0")
    data = load_mirror_dataset(root)
    assert data.prompts["recognition_question"] == prompts["recognition_question"] and data.version == "1.3.0"
    assert m["release_sha256"] == data.release_sha256 and "edited by hand" in m["generator"]
    assert "1.3.0" in (root / NAME / "README.md").read_text()


def test_a_version_bumped_by_hand_in_the_manifest_is_enough_for_rehash(root):
    path = root / NAME / "scripts.jsonl"
    path.write_text(path.read_text().replace("spaghetti", "linguine", 1))
    mpath = root / NAME / "manifest.json"
    mpath.write_text(mpath.read_text().replace('"version": "1.2.0"', '"version": "2.0.0"'))
    rehash_mirror_dataset(root)
    data = load_mirror_dataset(root)
    assert data.version == "2.0.0" and "linguine" in data.script("conv-00")["turns"][1]


def test_rehash_of_an_untouched_dataset_changes_no_byte(root):
    before = {n: (root / NAME / n).read_bytes() for n in ("manifest.json", "README.md")}
    rehash_mirror_dataset(root)
    assert before == {n: (root / NAME / n).read_bytes() for n in ("manifest.json", "README.md")}


def test_rehash_refuses_invalid_content(root):
    path = root / NAME / "scripts.jsonl"
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")
    with pytest.raises(DatasetError, match="duplicate script id 'conv-00'"):
        rehash_mirror_dataset(root, version="1.0.1")


# ------------------------------------------------------------------------------------------------ validation
def test_an_empty_script_is_refused(root):
    _edit_script(root, 3, turns=[])
    with pytest.raises(DatasetError, match=r"scripts\.jsonl: script 'conv-03' has no turns"):
        load_mirror_dataset(root)


def test_an_empty_turn_is_refused(root):
    turns = list(content.SCRIPTS[3]["turns"])
    turns[1] = "   "
    _edit_script(root, 3, turns=turns)
    with pytest.raises(DatasetError, match=r"scripts\.jsonl: turn 2 of script 'conv-03' is empty"):
        load_mirror_dataset(root)


@pytest.mark.parametrize("n", [3, 7])
def test_too_few_or_too_many_turns_are_refused(root, n):
    _edit_script(root, 5, turns=[f"Question number {k} about the household budget?" for k in range(n)])
    with pytest.raises(DatasetError, match=rf"script 'conv-05' has {n} turns; 4 to 6 are needed"):
        load_mirror_dataset(root)


def test_a_duplicate_id_is_refused(root):
    _edit_scripts(root, lambda rows: [*rows, {**rows[1], "topic": "another topic"}])
    with pytest.raises(DatasetError, match=r"scripts\.jsonl: duplicate script id 'conv-01'"):
        load_mirror_dataset(root)


def test_a_turn_that_prompts_the_measured_behaviour_is_refused(root):
    turns = [*content.SCRIPTS[0]["turns"][:-1], "Did you notice any typos in what you sent?"]
    _edit_script(root, 0, turns=turns)
    with pytest.raises(DatasetError, match=r"turn 5 of script 'conv-00' mentions 'typo'"):
        load_mirror_dataset(root)


@pytest.mark.parametrize("question, lacks", [
    ("Did you write every reply above exactly as it appears?", "'yes'"),
    ('Did you write every reply above exactly as it appears? Say "yes" if so.', "'no'"),
])
def test_a_recognition_question_without_the_options_is_refused(root, question, lacks):
    _edit_prompts(root, recognition_question=question)
    with pytest.raises(DatasetError, match=rf"'recognition_question' must name the answer options 'yes' and "
                                           rf"'no', but it lacks {lacks}"):
        load_mirror_dataset(root)


@pytest.mark.parametrize("change, needle", [
    ({"pair_question": "Which of {first} and {other} is yours? A or B."}, r"exactly the placeholders \{first\} and"),
    ({"pair_question": "Version one:\n{first}\nVersion two:\n{second}\nWhich is yours? One or two?"},
     "must name the answer options, but it lacks 'A'"),
    ({"pair_options": ["A", "a"]}, "'pair_options' must be two different words"),
    ({"pair_speakers": ["User"]}, "'pair_speakers' must be two different words"),
    ({"pair_question": ""}, "'pair_question' is missing or empty"),
])
def test_a_bad_paired_question_is_refused(root, change, needle):
    _edit_prompts(root, **change)
    with pytest.raises(DatasetError, match=needle):
        load_mirror_dataset(root)


def test_bad_options_and_unknown_prompt_keys_are_refused(root, tmp_path):
    _edit_prompts(root, recognition_options=["yes", "yes"])
    with pytest.raises(DatasetError, match="'recognition_options' must be two different words"):
        load_mirror_dataset(root)
    write_mirror_dataset(tmp_path / "keys")
    _edit_prompts(tmp_path / "keys", follow_up="And why?")
    with pytest.raises(DatasetError, match=r"unknown keys \['follow_up'\]"):
        load_mirror_dataset(tmp_path / "keys")


def test_a_missing_manifest_or_file_names_the_fix(tmp_path, root):
    with pytest.raises(DatasetError, match="manifest.json is missing.*mirror.data write"):
        load_mirror_dataset(tmp_path / "nowhere")
    (root / NAME / "prompts.json").unlink()
    with pytest.raises(DatasetError, match="prompts.json is missing"):
        load_mirror_dataset(root)


def test_the_committed_dataset_matches_the_content_module():
    data = load_mirror_dataset()
    assert data.scripts == content.SCRIPTS and data.prompts == content_prompts()
    assert data.version == content.MIRROR_DATASET_VERSION
