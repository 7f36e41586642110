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
