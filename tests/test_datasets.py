"""The project's task datasets: deterministic, citable, and validated on load."""

import json
import shutil

import pytest

from reproduce.datasets import DATA_RAW, DatasetError, available_tasks, encode_items, load_task
from reproduce.io import sha256_bytes
from reproduce.properties import PROPERTIES
from reproduce.tasks import TASKS, generate_items


def test_generation_is_deterministic_and_matches_the_committed_datasets():
    for spec in TASKS.values():
        data = encode_items(generate_items(spec))
        assert data == encode_items(generate_items(spec))
        committed = json.loads((DATA_RAW / spec.name / "manifest.json").read_text())
        assert sha256_bytes(data) == committed["sha256"], f"{spec.name}: regenerate data_raw and bump its version"


def test_every_property_family_appears_in_both_splits():
    families = {split: {t.family for t in TASKS.values() if t.split == split} for split in ("train", "test")}
    assert families["train"] == families["test"] == {"word_sequence", "number_sequence", "multiple_choice", "ab_choice"}
    for name in PROPERTIES:
        splits = {t.split for t in TASKS.values() if name in t.fitting_properties()}
        assert splits == {"train", "test"}, name


def test_committed_datasets_load_with_manifests():
    assert set(available_tasks()) >= set(TASKS)
    for name in TASKS:
        task = load_task(name)
        m = task.manifest
        assert {"name", "version", "split", "n_items", "sha256", "licence", "generator", "seed"} <= set(m)
        assert m["n_items"] == len(task.items) > 0
        assert len({it["item_id"] for it in task.items}) == len(task.items)
        for it in task.items:
            assert set(it["hypothetical_prompts"]) == set(m["properties"])
            for p in m["properties"]:
                assert it["object_prompt"] in it["hypothetical_prompts"][p]


def test_ab_tasks_balance_the_behaviour_option_and_mc_tasks_record_the_answer():
    for name in ("power_seeking", "survival_instinct"):
        letters = [it["option_matching_ethical_stance"] for it in load_task(name).items]
        assert abs(letters.count("A") - letters.count("B")) <= 1
    assert all(it["correct_answer"] in "ABCD" for it in load_task("arithmetic").items)


@pytest.fixture
def copy_of(tmp_path):
    def make(name):
        shutil.copytree(DATA_RAW / name, tmp_path / name)
        return tmp_path
    return make


def test_edited_dataset_is_refused(copy_of):
    root = copy_of("animals")
    path = root / "animals" / "items.jsonl"
    path.write_bytes(path.read_bytes().replace(b"tiger", b"tigre", 1) + b"\n")
    with pytest.raises(DatasetError, match="does not match the sha256"):
        load_task("animals", root)


def test_empty_dataset_is_refused(copy_of):
    root = copy_of("years")
    (root / "years" / "items.jsonl").write_text("")
    with pytest.raises(DatasetError, match="is empty"):
        load_task("years", root)


def test_unknown_task_names_the_available_ones(copy_of):
    root = copy_of("years")
    with pytest.raises(DatasetError, match="unknown task 'yeers'.*available: years"):
        load_task("yeers", root)
