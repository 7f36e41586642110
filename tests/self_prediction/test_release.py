"""The importer for the Looking Inward dataset release: a fixture written here, and the shared sample."""

import json
from pathlib import Path

import pytest

from reproduce.config import REPO_ROOT
from reproduce.datasets import DatasetError
from reproduce.self_prediction.task_data import load_task
from reproduce.self_prediction.original_release import import_release

SAMPLE = REPO_ROOT.parent / "shared" / "reference" / "looking_inward_release_sample"


def _row(dataset, prop, question, stance=None, obj_suffix="\n"):
    obj = f"Continue: {question}{obj_suffix}"
    return {
        "original_question": question, "original_dataset": dataset,
        "object_level_prompt": [{"role": "user", "content": obj}],
        "hypothetical_prompt": [{"role": "user", "content": f'Previously, you were asked the following question: "{obj}" Q about {prop}'}],
        "behavioral_property": prop, "option_matching_ethical_stance": stance,
    }


def _write(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def release(tmp_path):
    root = tmp_path / "release"
    qs = ["red blue", "green teal", "pink gold"]
    _write(root / "train" / "hues_first_word.jsonl", [_row("hues", "first_word", q) for q in qs])
    _write(root / "train" / "hues_starts_with_vowel.jsonl", [_row("hues", "starts_with_vowel", q) for q in qs])
    _write(root / "train" / "hues_identity.jsonl", [_row("hues", "identity", q) for q in qs])
    _write(root / "test" / "shutdown_ethical_stance.jsonl",
           [_row("shutdown", "ethical_stance", "Shut down?\u2029lease answer now", stance="A")])
    return root


def test_fixture_release_imports_into_the_project_format(release, tmp_path):
    out = tmp_path / "data_raw"
    manifests = {m["name"]: m for m in import_release(release, out)}
    assert set(manifests) == {"li_hues", "li_shutdown"}
    hues = load_task("li_hues", out)
    assert hues.split == "train" and hues.family == "word_sequence"
    assert hues.manifest["properties"] == ["first_word", "starts_with_vowel"]
    assert hues.manifest["skipped_properties"] == {"identity": 3}
    assert len(hues.items) == 3  # one item per question, with a hypothetical prompt per property
    assert set(hues.items[0]["hypothetical_prompts"]) == {"first_word", "starts_with_vowel"}
    shut = load_task("li_shutdown", out)
    assert shut.family == "ab_choice" and shut.items[0]["option_matching_ethical_stance"] == "A"
    assert "\nPlease answer now" in shut.items[0]["object_prompt"]
    assert shut.manifest["fixes_applied"] == ["u2029_please"]


def test_flaws_are_kept_verbatim_when_asked(release, tmp_path):
    import_release(release, tmp_path / "raw", fix_known_flaws=False)
    assert "\u2029" in load_task("li_shutdown", tmp_path / "raw").items[0]["object_prompt"]


@pytest.mark.parametrize("content,match", [
    ("{not json\n", "not valid JSON"),
    (json.dumps({"original_question": "x"}) + "\n", "missing keys"),
    ("", "no rows"),
    (json.dumps({**_row("d", "ethical_stance", "q"), "option_matching_ethical_stance": None}) + "\n",
     "option_matching_ethical_stance"),
    (json.dumps({**_row("d", "first_word", "q"), "object_level_prompt": "text"}) + "\n", "chat messages"),
])
def test_malformed_release_files_are_clear_errors(tmp_path, content, match):
    (tmp_path / "r" / "train").mkdir(parents=True)
    (tmp_path / "r" / "train" / "d_x.jsonl").write_text(content)
    with pytest.raises(DatasetError, match=match):
        import_release(tmp_path / "r", tmp_path / "out")


def test_missing_release_folder(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        import_release(tmp_path / "nope", tmp_path / "out")


@pytest.mark.skipif(not SAMPLE.exists(), reason="the shared release sample is not beside this checkout")
def test_shared_release_sample_imports(tmp_path):
    manifests = {m["name"]: m for m in import_release(SAMPLE, tmp_path)}
    assert {"li_animals_long", "li_survival_instinct", "li_arc_challenge_non_cot", "li_wealth_seeking"} <= set(manifests)
    animals = load_task("li_animals_long", tmp_path)
    assert animals.split == "test" and len(animals.items) == 12 and len(animals.manifest["properties"]) == 7
    assert "starts_with_vowel_quote" in animals.manifest["fixes_applied"]
    vowel = animals.items[0]["hypothetical_prompts"]["starts_with_vowel"]
    assert vowel.endswith("'false' for no.\n")
    assert load_task("li_arc_challenge_non_cot", tmp_path).family == "multiple_choice"
    wealth = load_task("li_wealth_seeking", tmp_path)
    assert all("\u2029" not in it["object_prompt"] for it in wealth.items)
