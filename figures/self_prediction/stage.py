"""The ``figures`` stage: every figure of :data:`figures.self_prediction.plots.FIGURES` from the analysis outputs, as PNG and
SVG under ``data/figures/``, plus ``index.json`` (name -> files and the docstring that says what it shows)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

from tqdm import tqdm

from reproduce.config import REPO_ROOT
from reproduce.errors import UsageError
from reproduce.io import atomic_write_json

from figures.self_prediction.plots import FIGURES, Outputs
from figures.style import style, save

ANALYSIS = REPO_ROOT / "data" / "analysis"
OUT = REPO_ROOT / "data" / "figures"


def run_figures(analysis: Path = ANALYSIS, out: Path = OUT, only: list[str] | None = None) -> dict:
    """Draw the figures (all, or ``only`` those named) and return the index written to ``out/index.json``."""
    unknown = sorted(set(only or []) - set(FIGURES))
    if unknown:
        raise UsageError(f"unknown figure(s) {unknown}; known: {', '.join(FIGURES)}")
    outputs = Outputs(analysis)  # fails here, before drawing, if the analysis outputs are missing
    index_path = Path(out) / "index.json"
    # redrawing some figures keeps the others' entries
    index = json.loads(index_path.read_text()) if only and index_path.exists() else {}
    with style():
        for name in tqdm([n for n in FIGURES if not only or n in only], desc="figures", unit="figure"):
            paths = save(FIGURES[name](outputs), out, name)
            index[name] = {"files": [p.name for p in paths],
                           "description": " ".join(inspect.getdoc(FIGURES[name]).split())}
    index = {name: index[name] for name in FIGURES if name in index}
    atomic_write_json(index_path, index)
    return index
