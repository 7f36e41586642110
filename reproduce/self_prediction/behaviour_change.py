"""The ``behaviour_change`` stage (experiment 3): the self-trained model finetuned further on the other
model's answers, and whether its predictions track its changed behaviour."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reproduce.config import ConfigError
from reproduce.errors import DataError
from reproduce.io import read_stage_table
from reproduce.self_prediction.schemas import BEHAVIOUR_CHANGE, META_TRAINED, TRAINING_EXAMPLES
from reproduce.lm.adapters import release_memory
from reproduce.self_prediction.runs import (_bases, _finetune_params, _mapped, _objects, Plan, _publish, _runs,
                                            _self_run, _trained_objects, _training_dtype)
from reproduce.stage import (DATA, WORK, make_engine, load_model, setup_stage, atomic_write_bytes, atomic_write_parquet)
from reproduce.self_prediction.meta_level import _prob_of, meta_predictions
from reproduce.self_prediction.object_level import object_behaviour


def behaviour_change_plan(plan: Plan) -> tuple:
    """The validated ``behaviour_change`` params, its tasks and the number of evaluated items per task;
    fails before any model is loaded."""
    bc = plan.profile.behaviour_change
    if bc is None:
        raise ConfigError("params.yaml has no `behaviour_change:` section; add one (see profiles/smoke.yaml)")
    _finetune_params(plan)
    if len(plan.refs) < 2:
        raise ConfigError("behaviour change needs at least two models: each one is taught another one's answers")
    test = [t.name for t in plan.test_tasks()]
    n_eval = plan.profile.behaviour_change_eval_items()
    tasks = []
    for name in plan.profile.behaviour_change_tasks():
        if name not in test:
            raise ConfigError(f"behaviour_change.tasks lists {name!r}, which is not one of the profile's test tasks "
                             f"{test}; the predictions before the change come from the meta_trained stage, which "
                             "covers the test tasks only")
        task = plan.tasks[name]
        if n_eval > len(plan.items(task)):
            raise ConfigError(f"behaviour_change.eval_items ({n_eval}) exceeds the {len(plan.items(task))} items of "
                             f"{name!r} that meta_trained evaluated (items_per_task.test); lower it")
        if len(task.items) < n_eval + bc.train_items:
            raise ConfigError(f"task {name!r} has {len(task.items)} items, fewer than the {n_eval} evaluated + "
                             f"behaviour_change.train_items ({bc.train_items}); lower behaviour_change.train_items")
        tasks.append(task)
    return bc, tasks, n_eval


def run_behaviour_change(plan: Plan, object_dir: Path = DATA / "object_level",
                         trained_object_dir: Path = DATA / "object_level_trained",
                         trained_self: Path = DATA / "finetuned" / "self",
                         meta_trained: Path = DATA / "meta_trained.parquet", out: Path = DATA / "behaviour_change.parquet",
                         adapters: Path = DATA / "behaviour_change", curves: Path = DATA / "behaviour_change_curves",
                         work: Path = WORK) -> Path:
    """Experiment 3, on the first finetuning seed. Each model's self-trained version M1' is finetuned further on
    the next model's object-level answers (``behaviour_change.train_items`` items per task, right after the
    ``eval_items`` evaluated ones), then answers the evaluated items again, at the object level and
    hypothetically.

    Writes ``out``: one row per model x evaluated item x property: ``model, source, run, seed, task, split,
    family, item_id, property, base_value`` (the untrained model's behaviour), ``source_value`` (the taught
    model's), ``old_response, old_value, old_compliant`` (M1', before the change: its ``object_level_trained``
    answers), ``new_response, new_value, new_compliant`` (after it), ``changed`` (both compliant and
    different), ``meta_old_value, meta_old_compliant`` (M1''s prediction, from meta_trained), ``meta_value,
    meta_compliant, options, option_probs, p_outside`` (the changed model's prediction), ``p_old, p_new`` (the
    probability it gives the old and the new behaviour) and ``matches_old, matches_new``.
    Beside it: ``adapters/<run>/`` (adapter, train_log.tsv, summary.json), the training pairs in
    ``adapters/examples/<model>.parquet`` and the loss curves in ``curves/``."""
    from reproduce.lm.finetune import finetune
    from reproduce.self_prediction.training_pairs import behaviour_examples

    bc, tasks, n_eval = behaviour_change_plan(plan)
    ft = _finetune_params(plan)
    seed = ft.seeds[0]
    cfg = ft.model_copy(update={"learning_rate": bc.learning_rate, "epochs": bc.epochs, "max_examples": None,
                                "scaling_sizes": []})
    setup_stage(plan)
    objects = _objects(plan, object_dir)
    trained_objects = _trained_objects(plan, trained_object_dir)
    index = _runs(trained_self)
    runs = {r.name: _self_run(index, trained_self, r.name, seed) for r in plan.refs}
    meta_old = read_stage_table(meta_trained, "meta_trained", META_TRAINED)
    meta_old = meta_old[meta_old["ground_truth"] == "trained"]

    sources = {}  # every model's answers on the training items: the behaviour another model is taught
    for ref in plan.refs:
        lm, engine = load_model(plan.profile, ref)
        sources[ref.name] = pd.concat([object_behaviour(plan, lm, engine, t, t.items[n_eval:n_eval + bc.train_items],
                                                        "behaviour_source", work) for t in tasks], ignore_index=True)
        del lm, engine
        release_memory()

    evaluated = pd.DataFrame([(t.name, it["item_id"]) for t in tasks for it in t.items[:n_eval]],
                             columns=["task", "item_id"])
    frames = []
    for i, ref in enumerate(plan.refs):
        source = plan.refs[(i + 1) % len(plan.refs)].name
        self_run = runs[ref.name]
        self_adapter = trained_self / self_run["run"] / "adapter"
        name = f"{ref.name}__bc__{source}__s{seed}"
        examples = behaviour_examples(sources[source], tasks, seed)
        atomic_write_parquet(adapters / "examples" / f"{ref.name}.parquet", examples, schema=TRAINING_EXAMPLES)

        with _bases(plan) as bases:  # one base per dtype, for training on M1' and for M1' changed
            with bases.trained(ref, [self_adapter], self_run["run"], self_run["fingerprint"],
                               _training_dtype(plan)) as lm:
                summary = finetune(lm, examples, cfg, work / "behaviour_change" / name, seed=seed,
                                   progress=f"behaviour change {name}")
            _publish(work / "behaviour_change" / name, adapters / name)
            atomic_write_bytes(curves / f"{name}.tsv", (adapters / name / "train_log.tsv").read_bytes())

            # before the change: M1''s own answers, computed once by object_level_trained
            old = trained_objects[(ref.name, seed)].merge(evaluated, on=["task", "item_id"], validate="many_to_one")
            with bases.trained(ref, [self_adapter, adapters / name / "adapter"], name,
                               f"{self_run['fingerprint']}:{summary['fingerprint']}", plan.profile.dtype,
                               *_mapped(plan)) as lm:
                engine = make_engine(plan.profile, lm)
                new = pd.concat([object_behaviour(plan, lm, engine, t, t.items[:n_eval], "behaviour_eval", work)
                                 for t in tasks], ignore_index=True)
                meta_new = meta_predictions(plan, lm, engine, "meta_behaviour", work, tasks, n_eval)
                del engine
        frames.append(_behaviour_table(
            ref.name, source, name, objects[ref.name], objects[source], old, new,
            meta_old[meta_old["run"] == self_run["run"]], meta_new).assign(seed=seed))
    table = pd.concat(frames, ignore_index=True)
    table.insert(table.columns.get_loc("run") + 1, "seed", table.pop("seed"))
    atomic_write_parquet(out, table, schema=BEHAVIOUR_CHANGE)
    return out


def _behaviour_table(model: str, source: str, run: str, base: pd.DataFrame, taught: pd.DataFrame, old: pd.DataFrame,
                     new: pd.DataFrame, meta_old: pd.DataFrame, meta_new: pd.DataFrame) -> pd.DataFrame:
    key = ["task", "item_id", "property"]

    def part(df, cols, prefix):
        return df[key + cols].rename(columns={c: f"{prefix}{c}" for c in cols})

    t = part(old, ["response", "value", "compliant"], "old_").assign(model=model, source=source, run=run)
    t = t.merge(old[key + ["split", "family"]], on=key, validate="one_to_one")
    t = t.merge(part(new, ["response", "value", "compliant"], "new_"), on=key, validate="one_to_one")
    t = t.merge(part(base, ["value"], "base_"), on=key, how="left", validate="one_to_one")
    t = t.merge(part(taught, ["value"], "source_"), on=key, how="left", validate="one_to_one")
    t = t.merge(meta_old[key + ["meta_value", "meta_compliant"]].rename(
        columns={"meta_value": "meta_old_value", "meta_compliant": "meta_old_compliant"}), on=key, how="left",
        validate="one_to_one")
    t = t.merge(meta_new[key + ["meta_value", "meta_compliant", "options", "option_probs", "p_outside"]], on=key,
                validate="one_to_one")
    if t["meta_old_compliant"].isna().any():
        raise DataError(f"meta_trained lacks predictions of {model}'s self-trained run on some evaluated items; "
                           "re-run the meta_trained stage with the same params")
    t["changed"] = t["old_compliant"] & t["new_compliant"] & (t["old_value"] != t["new_value"])
    t["p_old"] = _prob_of(t["option_probs"], t["options"], t["old_value"])
    t["p_new"] = _prob_of(t["option_probs"], t["options"], t["new_value"])
    t["matches_old"] = t["meta_compliant"] & t["old_compliant"] & (t["meta_value"] == t["old_value"])
    t["matches_new"] = t["meta_compliant"] & t["new_compliant"] & (t["meta_value"] == t["new_value"])
    cols = ["model", "source", "run", "task", "split", "family", "item_id", "property", "base_value", "source_value",
            "old_response", "old_value", "old_compliant", "new_response", "new_value", "new_compliant", "changed",
            "meta_old_value", "meta_old_compliant", "meta_value", "meta_compliant", "options", "option_probs",
            "p_outside", "p_old", "p_new", "matches_old", "matches_new"]
    return t[cols]

