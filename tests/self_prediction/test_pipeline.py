"""The foundation stages end to end on the real embedded models (tiny profile): tables, determinism,
resume after an interrupted run, and bad input rejected before any model is loaded."""

import shutil

import pandas as pd
import pytest

from conftest import run_all, simulate_edit, tiny_profile
from test_release import SAMPLE
from reproduce.datasets import DATA_RAW, DatasetError
from reproduce.self_prediction.task_data import load_task
from reproduce.io import short_hash
from reproduce.lm.models import ModelError
from reproduce.self_prediction.original_release import import_release
from reproduce.self_prediction.properties import PropertyError, get_property
from reproduce.self_prediction import Plan, run_meta_untrained, run_object_level


def test_object_level_tables_hold_real_responses_and_their_properties(run):
    for model, df in run["object"].items():
        assert set(df["task"]) == {"numbers", "animals", "survival_instinct"}
        assert (df["model"] == model).all()
        per_item = df.drop_duplicates(["task", "item_id"])
        assert len(per_item) == 9 and per_item["response_raw"].str.len().gt(0).all()
        assert df.groupby(["task", "item_id"])["property"].nunique().max() == 7
        items = {it["item_id"]: it for t in ("numbers", "animals", "survival_instinct") for it in load_task(t).items}
        for row in df.itertuples():  # every value is the property of the stored response
            expected = get_property(row.property).extract(row.response, items[row.item_id])
            assert (pd.isna(row.value) and expected is None) or row.value == expected
            assert row.compliant == (expected is not None)


def test_samples_cover_the_calibration_subset(run):
    for df in run["samples"].values():
        assert set(df["task"]) == {"animals", "survival_instinct"}  # test tasks only
        counts = df.groupby(["task", "item_id"])["sample"].nunique()
        assert len(counts) == 4 and (counts == 3).all()
        assert not df.duplicated(["task", "item_id", "sample", "property"]).any()


def test_meta_untrained_pairs_every_predictor_with_every_target(run):
    meta = run["meta"]
    pairs = set(zip(meta["predictor"], meta["target"]))
    assert pairs == {(a, b) for a in ("smollm2-135m", "gemma3-270m") for b in ("smollm2-135m", "gemma3-270m")}
    assert set(meta.loc[meta.predictor == meta.target, "kind"]) == {"self"}
    assert set(meta.loc[meta.predictor != meta.target, "kind"]) == {"cross"}
    assert set(meta["task"]) == {"animals", "survival_instinct"}  # held-out tasks only
    closed = meta[meta["options"].map(len) > 0]
    assert len(closed) and all(abs(sum(p) - 1) < 1e-5 for p in closed["option_probs"])
    assert closed["p_outside"].between(0, 1).all()
    assert (meta.loc[meta["options"].map(len) == 0, "property"].str.endswith("_word")).all()
    # the object value joined in is the target's own
    for target, obj in run["object"].items():
        m = meta[meta.target == target].merge(obj, on=["task", "item_id", "property"])
        assert (m["object_value"].fillna("-") == m["value"].fillna("-")).all() and len(m) == (meta.target == target).sum()
    expected = meta["object_compliant"] & meta["meta_compliant"] & (meta["meta_value"] == meta["object_value"])
    assert (meta["correct"] == expected).all()


def test_two_fp32_runs_give_identical_tables(run, tmp_path):
    again = run_all(tiny_profile(), tmp_path)
    for m in run["object"]:
        pd.testing.assert_frame_equal(run["object"][m], again["object"][m])
        pd.testing.assert_frame_equal(run["samples"][m], again["samples"][m])
    pd.testing.assert_frame_equal(run["meta"], again["meta"])


def test_an_interrupted_stage_resumes_without_lost_or_duplicated_rows(run, tmp_path, monkeypatch):
    import reproduce.lm.engine as engine_mod

    profile = tiny_profile(models=["smollm2-135m"], tasks={"train": ["numbers"], "test": ["animals"]},
                           items_per_task={"train": 70, "test": 3})  # numbers spans two shards (64 + 6)
    real = engine_mod.Engine.generate
    calls = {"n": 0}

    def dies_on_second_shard(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed")
        return real(self, *a, **k)

    monkeypatch.setattr(engine_mod.Engine, "generate", dies_on_second_shard)
    plan = Plan(profile)
    with pytest.raises(KeyboardInterrupt):
        run_object_level(plan, tmp_path / "obj", tmp_path / "smp", tmp_path / "work")
    assert not (tmp_path / "obj" / "smollm2-135m.parquet").exists()  # no partial final table
    shards = list((tmp_path / "work").rglob("*.parquet"))
    assert len(shards) == 1 and not list((tmp_path / "work").rglob("*.tmp"))
    monkeypatch.setattr(engine_mod.Engine, "generate", real)
    calls["resumed"] = 0

    def counting(self, prompts, *a, **k):
        calls["resumed"] += len(prompts)
        return real(self, prompts, *a, **k)

    monkeypatch.setattr(engine_mod.Engine, "generate", counting)
    run_object_level(plan, tmp_path / "obj", tmp_path / "smp", tmp_path / "work")
    assert calls["resumed"] == 6 + 3 + 2  # the rest of numbers, animals, animals' samples: shard 0 not redone
    df = pd.read_parquet(tmp_path / "obj" / "smollm2-135m.parquet")
    per_item = df.drop_duplicates(["task", "item_id"])
    assert len(per_item) == 73 and not df.duplicated(["task", "item_id", "property"]).any()
    first3 = df[df.item_id.isin(["numbers-000", "numbers-001", "numbers-002"])]
    ref = run["object"]["smollm2-135m"]
    ref = ref[ref.item_id.isin(first3.item_id)]
    assert sorted(first3["response"]) == sorted(ref["response"])  # resumed rows equal uninterrupted ones


def test_a_changed_item_selection_gets_its_own_rows_from_the_same_work_folder(models, tmp_path):
    """Shards are keyed by the items they hold: evaluating other items (e.g. a changed
    behaviour_change.eval_items) in the same work folder never returns rows of the items evaluated before."""
    from reproduce.self_prediction import object_behaviour

    lm, engine = models["smollm2-135m"]
    plan = Plan(tiny_profile(models=["smollm2-135m"], tasks={"train": ["numbers"], "test": ["animals"]}))
    task = plan.tasks["animals"]
    first = object_behaviour(plan, lm, engine, task, task.items[0:3], "behaviour_eval", tmp_path / "work")
    shifted = object_behaviour(plan, lm, engine, task, task.items[2:5], "behaviour_eval", tmp_path / "work")
    fresh = object_behaviour(plan, lm, engine, task, task.items[2:5], "behaviour_eval", tmp_path / "fresh")
    assert list(dict.fromkeys(first["item_id"])) == [it["item_id"] for it in task.items[0:3]]
    assert list(dict.fromkeys(shifted["item_id"])) == [it["item_id"] for it in task.items[2:5]]
    pd.testing.assert_frame_equal(shifted, fresh)


def _counted_smollm2(models, monkeypatch) -> tuple:
    """SmolLM2 and its engine, whose ``generate`` calls are counted in the returned list, and a plan with one
    train task (numbers) and one test task (animals): the set-up of the shard-key tests."""
    lm, engine = models["smollm2-135m"]
    plan = Plan(tiny_profile(models=["smollm2-135m"], tasks={"train": ["numbers"], "test": ["animals"]}))
    calls = []
    real_generate = engine.generate
    monkeypatch.setattr(engine, "generate", lambda *a, **k: calls.append(1) or real_generate(*a, **k))
    return lm, engine, plan, calls


@pytest.mark.parametrize("module", ["reproduce.self_prediction.object_level", "reproduce.lm.formats", "reproduce.lm.engine"])
def test_an_edit_to_the_code_that_builds_the_rows_starts_fresh_shards(module, models, tmp_path, monkeypatch):
    """The shard key hashes the source of the stage's own module, of the prompt rendering and of the engine:
    finished shards are reused as long as none changed, and recomputed once one did (an edit simulated by
    another code version of that module)."""
    import reproduce.stage as common
    from reproduce.self_prediction import object_behaviour

    lm, engine, plan, calls = _counted_smollm2(models, monkeypatch)
    task = plan.tasks["animals"]
    first = object_behaviour(plan, lm, engine, task, task.items[:2], "object_level", tmp_path)
    again = object_behaviour(plan, lm, engine, task, task.items[:2], "object_level", tmp_path)
    assert len(calls) == 1
    simulate_edit(monkeypatch, common, module)
    edited = object_behaviour(plan, lm, engine, task, task.items[:2], "object_level", tmp_path)
    assert len(calls) == 2
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(first, edited)


def test_an_edit_to_a_module_a_stage_does_not_run_keeps_its_shards(models, tmp_path, monkeypatch):
    """The object level reads no property and no task generator (its prompts are the released dataset's, keyed by
    hash): an edit to either keeps its finished shards."""
    import reproduce.stage as common
    from reproduce.self_prediction import object_behaviour

    lm, engine, plan, calls = _counted_smollm2(models, monkeypatch)
    task = plan.tasks["animals"]
    first = object_behaviour(plan, lm, engine, task, task.items[:2], "object_level", tmp_path)
    for module in ("reproduce.self_prediction.properties", "reproduce.self_prediction.tasks"):
        simulate_edit(monkeypatch, common, module)
        pd.testing.assert_frame_equal(first, object_behaviour(plan, lm, engine, task, task.items[:2], "object_level",
                                                              tmp_path))
    assert len(calls) == 1


@pytest.mark.parametrize("module", ["reproduce.self_prediction.meta_level", "reproduce.self_prediction.properties"])
def test_an_edit_to_the_meta_level_stage_starts_fresh_shards(module, models, tmp_path, monkeypatch):
    """The meta-level shards hash their stage's module and the property registry, which gives the answer
    options whose mass is read (an edit simulated by another code version)."""
    import reproduce.stage as common
    from reproduce.self_prediction import meta_predictions

    lm, engine, plan, calls = _counted_smollm2(models, monkeypatch)
    first = meta_predictions(plan, lm, engine, "meta_untrained", tmp_path, n_items=1)
    meta_predictions(plan, lm, engine, "meta_untrained", tmp_path, n_items=1)
    assert len(calls) == 1
    simulate_edit(monkeypatch, common, module)
    edited = meta_predictions(plan, lm, engine, "meta_untrained", tmp_path, n_items=1)
    assert len(calls) == 2
    pd.testing.assert_frame_equal(first, edited)


@pytest.mark.parametrize("overrides,error,match", [
    ({"models": ["smollm2-135m", "no-org/no-model"]}, ModelError, "not in the local Hugging Face cache"),
    ({"properties": ["second_letter"]}, PropertyError, "unknown response property"),
    ({"properties": ["is_even"], "tasks": {"train": ["numbers"], "test": ["animals"]}}, PropertyError,
     "none of the properties \\['is_even'\\] fits task 'animals'"),
    ({"tasks": {"train": ["animals"], "test": ["years"]}}, ValueError, "is a test task but params lists it under tasks.train"),
    ({"tasks": {"train": ["colours"], "test": ["years"]}}, DatasetError, "unknown task 'colours'"),
])
def test_bad_input_fails_before_any_model_is_loaded(overrides, error, match, monkeypatch):
    import reproduce.stage as stages

    monkeypatch.setattr(stages, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(error, match=match):
        Plan(tiny_profile(**overrides))


def test_empty_dataset_fails_before_any_model_is_loaded(tmp_path):
    for name in ("numbers", "years"):
        shutil.copytree(DATA_RAW / name, tmp_path / name)
    (tmp_path / "years" / "items.jsonl").write_text("")
    with pytest.raises(DatasetError, match="is empty"):
        Plan(tiny_profile(tasks={"train": ["numbers"], "test": ["years"]}), data_raw=tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not SAMPLE.exists(), reason="the shared release sample is not beside this checkout")
def test_the_papers_own_tasks_run_through_the_same_stages(tmp_path):
    raw = tmp_path / "data_raw"
    import_release(SAMPLE, raw)
    profile = tiny_profile(models=["smollm2-135m"], tasks={"train": ["li_power_seeking"],
                                                           "test": ["li_animals_long", "li_survival_instinct"]},
                           items_per_task={"train": 2, "test": 2}, sampling={"n_samples": 2, "items_per_task": 1,
                                                                              "temperature": 1.0})
    plan = Plan(profile, data_raw=raw)
    run_object_level(plan, tmp_path / "obj", tmp_path / "smp", tmp_path / "work")
    run_meta_untrained(plan, tmp_path / "obj", tmp_path / "meta.parquet", tmp_path / "work")
    meta = pd.read_parquet(tmp_path / "meta.parquet")
    assert set(meta["task"]) == {"li_animals_long", "li_survival_instinct"}
    assert len(meta) == 2 * 7 + 2 * 1 and set(meta["kind"]) == {"self"}
    hashes = {short_hash(it["hypothetical_prompts"]["ethical_stance"]) for it in load_task("li_survival_instinct", raw).items}
    assert set(meta.loc[meta.property == "ethical_stance", "meta_prompt_hash"]) <= hashes  # the release's own prompts
