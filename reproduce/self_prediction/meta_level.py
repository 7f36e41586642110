"""The ``meta_untrained`` and ``meta_trained`` stages: the predictors' hypothetical (meta-level) answers,
joined with the behaviour they are scored against."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from reproduce.self_prediction.task_data import TaskData
from reproduce.lm.engine import Engine
from reproduce.errors import DataError
from reproduce.io import short_hash
from reproduce.self_prediction.properties import META_MAX_NEW_TOKENS, get_property, is_correct
from reproduce.shards import ShardStore
from reproduce.self_prediction.schemas import META_TRAINED, META_UNTRAINED
from reproduce.self_prediction.runs import (_bases, _finetune_params, _grouped, _mapped, _objects, Plan, _runs,
                                            trained_model_name, _trained_objects)
from reproduce.stage import (DATA, WORK, make_engine, fingerprint, load_model, setup_stage, atomic_write_parquet)



def meta_predictions(plan: Plan, lm, engine: Engine, stage: str, work: Path = WORK,
                     tasks: list[TaskData] | None = None, n_items: int | None = None) -> pd.DataFrame:
    """A predictor's hypothetical answers on every item x property of the test tasks (or of ``tasks``, first
    ``n_items`` items); target-independent."""
    profile = plan.profile
    frames = []
    for task in plan.test_tasks() if tasks is None else tasks:
        items = plan.items(task)[:n_items]
        props = plan.properties[task.name]
        limits = {p: META_MAX_NEW_TOKENS["closed" if get_property(p).closed else "open"] for p in props}
        # the properties module gives the answer options whose mass is read
        store = ShardStore(work / stage / lm.name, fingerprint(
            stage, profile, lm, (__name__, "reproduce.self_prediction.properties"), task=task.name,
            task_sha256=task.manifest["sha256"], properties=props, max_new_tokens=limits))

        # one call for every property of a chunk's items: an item's hypothetical prompts differ only in their
        # last sentence, so the engine computes the part they share once
        def compute(k: int, chunk: list[dict]) -> pd.DataFrame:
            pairs = [(it, p) for it in chunk for p in props]
            prompts = [it["hypothetical_prompts"][p] for it, p in pairs]
            gens = engine.generate(prompts, [limits[p] for _, p in pairs],
                                   options=[get_property(p).options for _, p in pairs],
                                   progress=f"{lm.name} meta {task.name} [{k + 1}]")
            return pd.DataFrame({
                "item_id": [it["item_id"] for it, _ in pairs],
                "property": [p for _, p in pairs],
                "meta_prompt_hash": [short_hash(x) for x in prompts],
                "meta_response": [g[0].response for g in gens],
                "option_probs": [list(g[0].option_probs) if g[0].option_probs else [] for g in gens],
                "p_outside": [g[0].p_outside for g in gens],
                # where the option mass was read: the first generated token that carries content (-1: none did)
                "option_position": [g[0].option_position for g in gens],
            })

        df = store.map(task.name, items, compute)
        values = [get_property(p).parse_meta(r) for p, r in zip(df["property"], df["meta_response"])]
        frames.append(df.assign(
            predictor=lm.name, dtype=lm.dtype_name, task=task.name, split=task.split, family=task.family,
            meta_value=values, meta_compliant=[v is not None for v in values],
            options=[list(get_property(p).options or []) for p in df["property"]],
        ))
    return pd.concat(frames, ignore_index=True)


def join_targets(meta: pd.DataFrame, objects: dict[str, pd.DataFrame], ground_truth: str = "base",
                 object_models: dict[str, str] | None = None, seed: int | None = None) -> pd.DataFrame:
    """Pair one predictor's meta answers with each target's object-level values.

    ``objects`` maps a target (a base model's name) to the object-level table the answers are scored against;
    ``object_models`` names that behaviour exactly (default: the target itself, i.e. the untrained model) and
    ``ground_truth`` labels it: ``base`` (the untrained target) or ``trained`` (the self-trained target);
    ``seed`` is the finetuning seed of a trained predictor (missing before training)."""
    frames = []
    for target, obj in objects.items():
        o = obj[["task", "item_id", "property", "value", "compliant"]].rename(
            columns={"value": "object_value", "compliant": "object_compliant"})
        j = meta.merge(o, on=["task", "item_id", "property"], how="left", validate="one_to_one")
        if j["object_compliant"].isna().any():
            missing = j.loc[j["object_compliant"].isna(), ["task", "item_id"]].drop_duplicates()
            raise DataError(f"object level of {target!r} lacks {len(missing)} items the meta level asked about; "
                            "re-run the object_level stage with the same params")
        j["target"] = target
        j["object_model"] = (object_models or {}).get(target, target)
        j["ground_truth"] = ground_truth
        j["seed"] = pd.array([seed] * len(j), dtype="Int64")
        j["kind"] = ["self" if p == target else "cross" for p in j["predictor"]]
        j["p_object_value"] = _prob_of(j["option_probs"], j["options"], j["object_value"])
        j["correct"] = is_correct(j)
        frames.append(j)
    cols = ["predictor", "dtype", "target", "object_model", "ground_truth", "seed", "kind", "task", "split", "family", "item_id",
            "property", "meta_prompt_hash",
            "meta_response", "meta_value", "meta_compliant", "options", "option_probs", "p_outside", "option_position",
            "object_value", "object_compliant", "p_object_value", "correct"]
    return pd.concat(frames, ignore_index=True)[cols]


def _prob_of(probs: Iterable, options: Iterable, values: Iterable) -> list[float | None]:
    """The normalised probability each option distribution gives a value (None when the value is missing or
    outside the options)."""
    return [p[list(o).index(v)] if len(o) and v is not None and v in list(o) else None
            for p, o, v in zip(probs, options, values)]


def run_meta_untrained(plan: Plan, object_dir: Path = DATA / "object_level",
                       out: Path = DATA / "meta_untrained.parquet", work: Path = WORK) -> Path:
    setup_stage(plan)
    objects = _objects(plan, object_dir)
    frames = []
    for ref in plan.refs:
        lm, engine = load_model(plan.profile, ref)
        frames.append(join_targets(meta_predictions(plan, lm, engine, "meta_untrained", work), objects))
        del lm, engine
    atomic_write_parquet(out, pd.concat(frames, ignore_index=True), schema=META_UNTRAINED)
    return out


def run_meta_trained(plan: Plan, object_dir: Path = DATA / "object_level",
                     trained_object_dir: Path = DATA / "object_level_trained",
                     trained_self: Path = DATA / "finetuned" / "self", trained_cross: Path = DATA / "finetuned" / "cross",
                     out: Path = DATA / "meta_trained.parquet", work: Path = WORK) -> Path:
    """Every trained predictor's hypothetical answers on the held-out test tasks, about its own target: the
    self-, cross- and sibling predictors (``kind``; a sibling's ``predictor`` is :func:`reproduce.self_prediction.runs.sibling_name` of
    its base).

    Each run's answers are scored twice: against the self-trained target of the run's seed (``ground_truth =
    trained``, the original study's protocol and the main result) and against the untrained target
    (``ground_truth = base``, a sensitivity variant)."""
    _finetune_params(plan)
    setup_stage(plan)
    objects = _objects(plan, object_dir)
    trained_objects = _trained_objects(plan, trained_object_dir)
    refs = {r.name: r for r in plan.refs}
    runs = [(trained_self, r) for r in _runs(trained_self)] + \
           [(trained_cross, r) for r in _runs(trained_cross, "finetune_cross")]
    frames: dict[int, list[pd.DataFrame]] = {}
    with _bases(plan) as bases:
        for i in _grouped(runs, lambda r: r[1].get("base", r[1]["predictor"]), bases):
            trained, run = runs[i]
            base = run.get("base", run["predictor"])  # a sibling's predictor is named apart from its base weights
            with bases.trained(refs[base], [trained / run["run"] / "adapter"], run["run"],
                               run["fingerprint"], plan.profile.dtype, *_mapped(plan)) as lm:
                meta = meta_predictions(plan, lm, make_engine(plan.profile, lm), "meta_trained", work)
            meta = meta.assign(predictor=run["predictor"])
            t, seed = run["target"], run["seed"]
            frames[i] = [joined.assign(kind=run["kind"], run=run["run"], trained_on=run["trained_on"],
                                       n_examples=run["n_examples"],
                                       scaling=run["scaling"], mixed_precision=run["mixed_precision"],
                                       base_dtype=run.get("base_dtype"))
                         for joined in (join_targets(meta, {t: trained_objects[(t, seed)]}, "trained",
                                                     {t: trained_model_name(t, seed)}, seed),
                                        join_targets(meta, {t: objects[t]}, "base", seed=seed))]
    atomic_write_parquet(out, pd.concat([f for i in range(len(runs)) for f in frames[i]], ignore_index=True),
                         schema=META_TRAINED)
    return out

