"""The task loader on malformed datasets, fuzzed: whatever JSON a manifest or an item holds, validation either
accepts it or fails with the package's one-line DatasetError (rc 2 at the command line), never a TypeError,
KeyError or AttributeError traceback."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from reproduce.datasets import DatasetError  # noqa: E402
from reproduce.errors import ProjectError  # noqa: E402
from reproduce.self_prediction.task_data import validate_task  # noqa: E402

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                           max_leaves=8)
GOOD_ITEM = {"task": "animals", "item_id": "animals-000", "split": "test", "object_prompt": "Name an animal.",
             "hypothetical_prompts": {"first_character": "What would the first letter of your answer be?"}}
GOOD_MANIFEST = {"name": "animals", "family": "word_sequence", "split": "test", "properties": ["first_character"]}


def _check(manifest, items):
    try:
        validate_task(manifest, items)
    except ProjectError:  # DatasetError, PropertyError: one clear line
        pass


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(GOOD_ITEM)), value=json_values)
def test_an_item_with_any_value_in_any_field_fails_cleanly(key, value):
    _check(GOOD_MANIFEST, [{**GOOD_ITEM, key: value}])


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(GOOD_MANIFEST)), value=json_values)
def test_a_manifest_with_any_value_in_any_field_fails_cleanly(key, value):
    _check({**GOOD_MANIFEST, key: value}, [GOOD_ITEM])


@settings(max_examples=100, deadline=None)
@given(items=st.lists(json_values, max_size=3))
def test_items_that_are_not_objects_fail_cleanly(items):
    _check(GOOD_MANIFEST, items)


def test_the_named_cases():
    for manifest, items, match in (
            ({**GOOD_MANIFEST, "properties": "first_character"}, [GOOD_ITEM], "must be a list"),
            (GOOD_MANIFEST, [{**GOOD_ITEM, "hypothetical_prompts": ["x"]}], "must map each property"),
            (GOOD_MANIFEST, [{**GOOD_ITEM, "item_id": ["a"]}], "item_id must be a string"),
            (GOOD_MANIFEST, ["not an object"], "is not a JSON object")):
        with pytest.raises(DatasetError, match=match):
            validate_task(manifest, items)
    validate_task(GOOD_MANIFEST, [GOOD_ITEM])


# ------------------------------------------------------------------ params.yaml, manifest.json, items.jsonl, release
def _leaves(d, prefix=()):
    for k, v in d.items():
        if isinstance(v, dict) and v:
            yield from _leaves(v, prefix + (k,))
        else:
            yield prefix + (k,)


def _params():
    import yaml

    from reproduce.config import REPO_ROOT

    return yaml.safe_load((REPO_ROOT / "params.yaml").read_text())


PARAMS = _params()
LEAVES = sorted(_leaves(PARAMS))


@settings(max_examples=400, deadline=None)
@given(where=st.sampled_from(LEAVES), value=json_values)
def test_params_with_any_value_at_any_setting_fail_with_one_line(where, value, tmp_path_factory):
    """400 params.yaml files, each the committed one with one setting (of every nested key) replaced by an
    arbitrary YAML value: each loads, or fails with the package's ConfigError (rc 2, one line)."""
    import copy

    import yaml

    from reproduce.config import load_params

    raw = copy.deepcopy(PARAMS)
    d = raw
    for k in where[:-1]:
        d = d[k]
    d[where[-1]] = value
    path = tmp_path_factory.mktemp("params") / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    try:
        load_params(path)
    except ProjectError as err:
        assert str(err).strip() and "Traceback" not in str(err)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_as_params_manifest_or_items_fail_with_one_line(data, tmp_path_factory):
    """200 arbitrary byte strings, each read as params.yaml, as a manifest and as an items.jsonl."""
    from reproduce.config import read_params
    from reproduce.datasets import parse_json_lines, read_manifest

    folder = tmp_path_factory.mktemp("bytes")
    (folder / "params.yaml").write_bytes(data)
    (folder / "manifest.json").write_bytes(data)
    for call in (lambda: read_params(folder / "params.yaml"),
                 lambda: read_manifest(folder / "manifest.json", "restore it"),
                 lambda: parse_json_lines(folder / "items.jsonl", data, "restore it")):
        try:
            call()
        except ProjectError:
            pass


def _release_row(**over):
    row = {"original_dataset": "animals", "behavioral_property": "first_character", "original_question": "Name one.",
           "object_level_prompt": "Name an animal.", "hypothetical_prompt": "What is its first letter?",
           "behavioral_property_option": None, "split": "test"}
    return {**row, **over}


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from(sorted(_release_row())), value=json_values)
def test_release_rows_with_any_value_fail_with_one_line_and_write_nothing(key, value, tmp_path_factory):
    """200 release files whose first row has one field replaced by an arbitrary JSON value: the import
    succeeds or fails with one DatasetError, and a failure writes no dataset."""
    import json

    from reproduce.self_prediction.original_release import import_release

    root = tmp_path_factory.mktemp("release")
    (root / "test").mkdir()
    rows = [_release_row(**{key: value}), _release_row(original_question="Name another.")]
    (root / "test" / "x.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = root / "out"
    try:
        import_release(root, out)
    except ProjectError:
        assert not out.exists() or not any(out.iterdir())
