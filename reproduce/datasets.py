"""Where the versioned datasets live (``data_raw/``, one folder each, committed and citable) and the error every
dataset loader raises. Each experiment family reads and writes its own datasets:
:mod:`reproduce.self_prediction.task_data` (the task datasets of experiments 1-3) and
:mod:`reproduce.experiment_data` (the file datasets of concept injection and the mirror test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reproduce.config import REPO_ROOT
from reproduce.errors import ProjectError

DATA_RAW = REPO_ROOT / "data_raw"


class DatasetError(ProjectError, ValueError):
    """A missing, empty, corrupted or inconsistent dataset."""


def read_manifest(path: Path, fix: str) -> dict[str, Any]:
    """A dataset's ``manifest.json``, or one line that names the file, what is wrong and ``fix``."""
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"{path}:{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(path)
        raise DatasetError(f"{where}: not a valid manifest ({getattr(exc, 'msg', 'not UTF-8 text')}); {fix}") from None
    if not isinstance(manifest, dict):
        raise DatasetError(f"{path}: a manifest is a JSON object; {fix}")
    return manifest


def parse_json_lines(path: Path, data: bytes, fix: str) -> list[dict[str, Any]]:
    """The JSON objects of a jsonl file's bytes, one a line; a bad line is one error naming ``path:line`` and ``fix``."""
    rows = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DatasetError(f"{path}:{n}: not a JSON line ({getattr(exc, 'msg', 'not UTF-8 text')}); {fix}") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{n}: each line is a JSON object; {fix}")
        rows.append(row)
    return rows
