"""One style for every figure: the Okabe-Ito colour-blind-safe palette, a fixed font size, and writers
that make byte-stable PNG and SVG files (no timestamps, a fixed SVG id salt)."""

from __future__ import annotations

import inspect
import json
from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from reproduce.errors import DataError  # noqa: E402
from reproduce.io import atomic_path, atomic_write_json  # noqa: E402

# Okabe & Ito (2008), distinguishable under the common colour-vision deficiencies.
OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000", "grey": "#999999"}
# one meaning per colour, everywhere
COLOURS = {"self": OKABE_ITO["blue"], "cross": OKABE_ITO["orange"], "untrained": OKABE_ITO["grey"],
           "trained": OKABE_ITO["blue"], "baseline": OKABE_ITO["black"], "new": OKABE_ITO["green"],
           "old": OKABE_ITO["vermillion"], "neither": OKABE_ITO["grey"], "object": OKABE_ITO["purple"],
           "sibling": OKABE_ITO["green"]}
MARKERS = {"self": "o", "cross": "s", "untrained": "D", "trained": "o", "sibling": "^"}
RC = {
    "figure.dpi": 100, "savefig.dpi": 150, "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9,
    "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.6,
    "font.family": "DejaVu Sans", "svg.hashsalt": "looking-inward-local", "svg.fonttype": "path",
    "path.simplify": False,
}
FORMATS = ("png", "svg")


@contextmanager
def style():
    with plt.rc_context(RC):
        yield


class StageInputs:
    """The analysis outputs of one experiment's stage (``numbers.json`` and tables) and the hardware its
    model runs were made on (``run.json`` beside the raw tables), for that experiment's figures."""

    def __init__(self, analysis: Path, raw: Path, stage: str, ran: str):
        self.dir = Path(analysis)
        if not (self.dir / "numbers.json").exists():
            raise DataError(f"{self.dir}/numbers.json is missing; run `dvc repro {stage}` first")
        run = Path(raw) / "run.json"
        self.hardware = json.loads(run.read_text()).get("hardware", "") if run.exists() else ""
        self.ran = ran

    def table(self, name: str) -> pd.DataFrame:
        return pd.read_parquet(self.dir / f"{name}.parquet")

    def footer(self, fig) -> None:
        if self.hardware:
            below = 0.75 / fig.get_figheight()  # about three quarters of an inch under the axes, whatever the height
            fig.text(0.0, -below, f"{self.ran} on: {self.hardware}", fontsize=6.5, color="#555555", ha="left",
                     va="top")


def draw_all(figures: dict, inputs, out: Path) -> dict:
    """Every figure of ``figures`` (name -> function of ``inputs``) as PNG and SVG under ``out``, and
    ``index.json`` (name -> files and the docstring that says what it shows)."""
    index = {}
    with style():
        for name, draw in figures.items():
            paths = save(draw(inputs), out, name)
            index[name] = {"files": [p.name for p in paths], "description": " ".join(inspect.getdoc(draw).split())}
    atomic_write_json(Path(out) / "index.json", index)
    return index


def save(fig, out: Path, name: str) -> list[Path]:
    """Write ``name.png`` and ``name.svg`` under ``out`` atomically, without run-dependent metadata."""
    out = Path(out)
    paths = []
    for fmt in FORMATS:
        path = out / f"{name}.{fmt}"
        meta = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, metadata=meta, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def interval(ax, x, low, high, colour, horizontal=False):
    """Intervals drawn from their own bounds, never as estimate +/- offsets: a percentile bootstrap of a biased
    statistic (MAD) can legitimately exclude its point estimate, and must be shown as it is."""
    x, low, high = np.asarray(x, float), np.asarray(low, float), np.asarray(high, float)
    if horizontal:
        ax.hlines(x, low, high, color=colour, lw=1)
        ax.plot(np.r_[low, high], np.r_[x, x], "|", color=colour, ms=4, mew=1)
    else:
        ax.vlines(x, low, high, color=colour, lw=1)
        ax.plot(np.r_[x, x], np.r_[low, high], "_", color=colour, ms=4, mew=1)


def errorbar(ax, x, y, low, high, colour, marker, label, horizontal=False, **kw):
    """A point with its interval; ``horizontal`` puts the value on the x axis."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    interval(ax, x, low, high, colour, horizontal)
    px, py = (y, x) if horizontal else (x, y)
    ax.plot(px, py, marker, color=colour, label=label, linestyle="none", **{"ms": 4, **kw})
