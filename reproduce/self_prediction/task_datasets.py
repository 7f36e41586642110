"""The ``datasets`` stage: the versioned task datasets (and the concept-injection and mirror-test data)
under ``data_raw/``."""

from __future__ import annotations

from pathlib import Path

from tqdm.auto import tqdm

from reproduce import __version__
from reproduce.datasets import DATA_RAW, write_task
from reproduce.self_prediction.tasks import DATASET_LICENCE, DATASET_SEED, GENERATOR_VERSION, MAX_NEW_TOKENS, TASKS, generate_items


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
            "generator": f"reproduce.self_prediction.tasks (looking-inward-local {__version__}), generator {GENERATOR_VERSION}",
            "seed": seed,
        }
        manifests.append(write_task(root, manifest, items))
    from reproduce.injection.data import write_injection_dataset
    from reproduce.mirror.data import write_mirror_dataset

    manifests.append(write_injection_dataset(root))
    manifests.append(write_mirror_dataset(root))
    return manifests

