"""Every concept-injection dataset by name: the project's own (:mod:`reproduce.injection.data`) and the
published-protocol variants (:mod:`reproduce.injection.lindsey_data`); ``injection.dataset`` names the one a run
uses."""

from __future__ import annotations

from pathlib import Path

from reproduce.datasets import DATA_RAW, DatasetError
from reproduce.experiment_data import FileDataset
from reproduce.injection.data import NAME, SPEC, InjectionData
from reproduce.injection.lindsey_data import SPECS


def dataset_specs() -> dict[str, FileDataset]:
    """Every concept-injection dataset, by name."""
    return {NAME: SPEC, **SPECS}


def load_dataset(root: Path = DATA_RAW, name: str = NAME) -> InjectionData:
    """Read the dataset ``name``, refusing any file whose sha256 differs from its manifest and any content that
    fails :func:`reproduce.injection.data.validate_content`."""
    specs = dataset_specs()
    if name not in specs:
        raise DatasetError(f"unknown concept-injection dataset {name!r}; `injection.dataset` is one of {sorted(specs)}")
    manifest, parts = specs[name].load(root)
    return InjectionData(manifest=manifest, **parts)
