"""Where the versioned datasets live (``data_raw/``, one folder each, committed and citable) and the error every
dataset loader raises. Each experiment family reads and writes its own datasets:
:mod:`reproduce.self_prediction.task_data` (the task datasets of experiments 1-3) and
:mod:`reproduce.experiment_data` (the file datasets of concept injection and the mirror test)."""

from __future__ import annotations

from reproduce.config import REPO_ROOT
from reproduce.errors import ProjectError

DATA_RAW = REPO_ROOT / "data_raw"


class DatasetError(ProjectError, ValueError):
    """A missing, empty, corrupted or inconsistent dataset."""
