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
    assert load_task("li_shutdown", out).manifest["skipped_properties"] == {}  # counted per dataset
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


@pytest.mark.parametrize("field,value,match", [
    ("original_dataset", None, "original_dataset must be non-empty text"),
    ("original_dataset", "  ", "original_dataset must be non-empty text"),
    ("original_question", 7, "original_question must be non-empty text"),
])
def test_wrongly_typed_fields_name_the_file_and_line(tmp_path, field, value, match):
    rows = [_row("d", "first_word", "q1"), {**_row("d", "first_word", "q2"), field: value}]
    _write(tmp_path / "r" / "train" / "d_first_word.jsonl", rows)
    with pytest.raises(DatasetError, match=rf"d_first_word.jsonl:2: {match}"):
        import_release(tmp_path / "r", tmp_path / "out")
    assert not (tmp_path / "out" / "li_None").exists() and not list((tmp_path / "out").glob("li_*"))


def test_a_non_utf8_byte_names_the_file_and_line(tmp_path):
    path = tmp_path / "r" / "train" / "d_first_word.jsonl"
    _write(path, [_row("d", "first_word", "q1")])
    path.write_bytes(path.read_bytes() + b'{"original_question": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"d_first_word.jsonl:2: not UTF-8"):
        import_release(tmp_path / "r", tmp_path / "out")


def test_a_failure_in_a_later_dataset_writes_nothing(release, tmp_path):
    """The datasets are staged and moved into place only when every one imported."""
    _write(release / "test" / "zz_first_word.jsonl",
           [{**_row("zz", "first_word", "q"), "object_level_prompt": "not messages"}])
    out = tmp_path / "data_raw"
    out.mkdir()
    with pytest.raises(DatasetError, match="chat messages"):
        import_release(release, out)
    assert list(out.iterdir()) == []


def test_an_existing_dataset_is_replaced_only_when_forced(release, tmp_path):
    out = tmp_path / "data_raw"
    import_release(release, out)
    before = (out / "li_hues" / "items.jsonl").read_bytes()
    (out / "li_hues" / "items.jsonl").write_bytes(b"kept\n")
    with pytest.raises(DatasetError, match=r"2 dataset\(s\) already in .*li_hues, li_shutdown.*--force"):
        import_release(release, out)
    assert (out / "li_hues" / "items.jsonl").read_bytes() == b"kept\n"  # untouched
    import_release(release, out, force=True)
    assert (out / "li_hues" / "items.jsonl").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["li_hues", "li_shutdown"]  # no staging folder left


def test_the_project_datasets_cannot_be_overwritten_by_an_import_without_force(tmp_path):
    """`--prefix ""` with the default --out would have replaced power_seeking and the others."""
    root = tmp_path / "release"
    _write(root / "train" / "power_seeking_ethical_stance.jsonl",
           [_row("power_seeking", "ethical_stance", "Take power?", stance="A")])
    with pytest.raises(DatasetError, match="power_seeking"):
        import_release(root, REPO_ROOT / "data_raw", prefix="")


def test_an_imported_card_describes_the_import(release, tmp_path):
    out = tmp_path / "data_raw"
    import_release(release, out)
    card = (out / "li_hues" / "README.md").read_text()
    assert "Imported from the dataset release of Binder et al. (2024)" in card and "MIT" in card
    assert "`identity` (3 rows)" in card and "Synthetic" not in card and "seed" not in card
    assert "u2029_please" in (out / "li_shutdown" / "README.md").read_text()


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
