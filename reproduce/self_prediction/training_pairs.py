"""The training pairs of experiments 1 and 3, from an object-level table.

Self- and cross-prediction (:func:`training_examples`): one *target* model's object-level table, TRAIN tasks
only, compliant rows only: the prompt is the item's hypothetical prompt for a property, the answer is the
property of the target's own object-level response. The examples depend on the target's table and the seed
alone: a model's self-training reads its base answers, and the cross-predictor of a self-trained model M1'
reads M1''s answers (experiment 1 as the original ran it; :mod:`reproduce.self_prediction.finetuning`).
Behaviour change (:func:`behaviour_examples`): another model's object-level answers. Training itself is
:func:`reproduce.lm.finetune.finetune`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from reproduce.lm.finetune import TrainingError
from reproduce.self_prediction.task_data import TaskData


def training_examples(objects: pd.DataFrame, tasks: Mapping[str, TaskData], target: str, seed: int,
                      max_examples: int | None = None, per_cell: int | None = None) -> pd.DataFrame:
    """(prompt, answer) pairs about ``target``'s object-level behaviour on the TRAIN tasks.

    Columns: ``target, task, item_id, property, prompt, answer``; shuffled with ``seed``, then the first
    ``max_examples`` kept. ``per_cell``: the original's construction (``evals/create_finetuning_dataset.py``
    samples ``n_train_items`` compliant rows, seeded, from each task x property and concatenates them): at
    most ``per_cell`` compliant pairs drawn from each train task x property before the shuffle, so that every
    cell has the same share; None: every compliant pair, a cell's share left to the shuffle.
    """
    rows = objects[(objects["model"] == target) & (objects["split"] == "train") & objects["compliant"].astype(bool)]
    rows = rows[rows["task"].isin([n for n, t in tasks.items() if t.split == "train"])]
    if rows.empty:
        raise TrainingError(f"target {target!r} has no compliant object-level answers on the train tasks; "
                            "nothing to finetune on")
    for name, n in (("per_cell", per_cell), ("max_examples", max_examples)):
        if n is not None and n < 1:
            raise TrainingError(f"{name} = {n}: at least 1 pair, or None for no limit")
    if per_cell is not None:
        draw = np.random.default_rng([seed, 1])  # a stream of its own, apart from the shuffle's
        rows = rows.sort_values(["task", "property", "item_id"], kind="stable")
        rows = pd.concat([g.iloc[np.sort(draw.choice(len(g), size=min(per_cell, len(g)), replace=False))]
                          for _, g in rows.groupby(["task", "property"], sort=True)])
    items = {(n, it["item_id"]): it for n, t in tasks.items() if t.split == "train" for it in t.items}
    prompts = [items[(t, i)]["hypothetical_prompts"][p]
               for t, i, p in zip(rows["task"], rows["item_id"], rows["property"])]
    df = pd.DataFrame({
        "target": target, "task": rows["task"].to_numpy(), "item_id": rows["item_id"].to_numpy(),
        "property": rows["property"].to_numpy(), "prompt": prompts, "answer": rows["value"].astype(str).to_numpy(),
    })
    df = df.sort_values(["task", "item_id", "property"], kind="stable").reset_index(drop=True)
    df = df.iloc[np.random.default_rng(seed).permutation(len(df))].reset_index(drop=True)
    return df.head(max_examples) if max_examples else df


def behaviour_examples(objects: pd.DataFrame, tasks: list[TaskData], seed: int) -> pd.DataFrame:
    """(object prompt, response) pairs: another model's object-level answers, to change a model's behaviour
    (experiment 3). ``objects`` is an object-level table (one row per item x property); columns of the
    result are those of :func:`training_examples`, with ``property`` set to ``"object"``; shuffled with
    ``seed``. Empty responses are left out."""
    by_task = {t.name: {it["item_id"]: it for it in t.items} for t in tasks}
    rows = objects[objects["task"].isin(by_task)].drop_duplicates(["task", "item_id"])
    rows = rows[rows["response"].str.strip().str.len() > 0]
    if rows.empty:
        raise TrainingError("the other model gave no non-empty object-level answer on the behaviour-change "
                            "training items; nothing to finetune on")
    df = pd.DataFrame({
        "target": rows["model"].to_numpy(), "task": rows["task"].to_numpy(), "item_id": rows["item_id"].to_numpy(),
        "property": "object", "prompt": [by_task[t][i]["object_prompt"] for t, i in zip(rows["task"], rows["item_id"])],
        "answer": rows["response"].to_numpy(),
    })
    df = df.sort_values(["task", "item_id"], kind="stable").reset_index(drop=True)
    return df.iloc[np.random.default_rng(seed).permutation(len(df))].reset_index(drop=True)
