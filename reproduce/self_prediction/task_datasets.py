"""The ``datasets`` stage: the versioned task datasets of experiments 1-3 under ``data_raw/``, each with its
manifest and card."""

from __future__ import annotations

from pathlib import Path

from tqdm.auto import tqdm

from reproduce.citation import generator_name
from reproduce.datasets import DATA_RAW
from reproduce.self_prediction.task_data import write_task
from reproduce.self_prediction.tasks import (DATASET_LICENCE, DATASET_SEED, generate_items, GENERATOR_VERSION,
                                             MAX_NEW_TOKENS, TASKS)


def run_datasets(root: Path = DATA_RAW, seed: int = DATASET_SEED) -> list[dict]:
    manifests = []
    for spec in tqdm(TASKS.values(), desc="datasets", unit="task"):
        items = generate_items(spec, seed)
        manifest = {
            "name": spec.name,
            "version": GENERATOR_VERSION,
            "split": spec.split,
            "family": spec.family,
            "description": spec.description,
            "properties": list(spec.fitting_properties()),
            "max_new_tokens": MAX_NEW_TOKENS[spec.family],
            "stance_question": spec.stance_question,
            "licence": DATASET_LICENCE,
            "generator": generator_name("tasks", GENERATOR_VERSION),
            "seed": seed,
        }
        manifests.append(write_task(root, manifest, items))
    return manifests

