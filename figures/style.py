"""One style for every figure: the Okabe-Ito colour-blind-safe palette, a fixed font size, and writers
that make byte-stable PNG and SVG files (no timestamps, a fixed SVG id salt)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from reproduce.io import atomic_path  # noqa: E402

# Okabe & Ito (2008), distinguishable under the common colour-vision deficiencies.
OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000", "grey": "#999999"}
# one meaning per colour, everywhere
COLOURS = {"self": OKABE_ITO["blue"], "cross": OKABE_ITO["orange"], "untrained": OKABE_ITO["grey"],
           "trained": OKABE_ITO["blue"], "baseline": OKABE_ITO["black"], "new": OKABE_ITO["green"],
           "old": OKABE_ITO["vermillion"], "neither": OKABE_ITO["grey"], "object": OKABE_ITO["purple"]}
MARKERS = {"self": "o", "cross": "s", "untrained": "D", "trained": "o"}
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
