"""The steering check: does a cell's injection steer the model towards the concept at all?

Per model, cell (layer fraction, layer, strength) and concept, the rise in the concept word's log-probability after
a neutral question with the concept vector injected, over the same without injection (the ``steering`` table of
:mod:`reproduce.injection.experiment`). A cell *steers* when the mean rise over its concepts has a 95% t interval
above zero; a cell that does not is marked and left out of the cells the detection and identification results
count and choose among (a detection rate at a cell that does not move the model towards the concept says
nothing about noticing the concept).
"""

from __future__ import annotations

import pandas as pd

from reproduce.errors import DataError

from analysis.injection.design import INTERVAL
from analysis.intervals import t_interval
COLUMNS = ["model", "layer_fraction", "layer", "strength", "n", "rising", "mean", "low", "high", "steers"]
CELL = ["layer_fraction", "strength"]


def steering_cells(rows: pd.DataFrame | None) -> pd.DataFrame:
    """Per model and cell: the concepts ``n``, those whose log-probability rose (``rising``), the mean rise in
    nats with its 95% t interval over concepts (``low, high``; NaN for one concept), and ``steers`` (``low > 0``;
    for a single concept, a rise)."""
    if rows is None or not len(rows):
        return pd.DataFrame(columns=COLUMNS)
    missing = sorted({"model", "condition", "concept", "layer", "layer_fraction", "strength", "logprob"}
                     - set(rows.columns))
    if missing:
        raise DataError(f"the injection steering table lacks the column(s) {missing}; rerun the concept_injection "
                        "stage")
    out = []
    for m, g in rows.groupby("model", sort=True):
        base = g[g["condition"] == "control"].set_index("concept")["logprob"]
        inj = g[g["condition"] == "concept"]
        for (f, s), c in inj.groupby(CELL, sort=True):
            rise = (c.set_index("concept")["logprob"] - base.reindex(c["concept"]).to_numpy()).dropna().to_numpy()
            n = len(rise)
            mean, low, high = t_interval(rise, INTERVAL)
            out.append({"model": m, "layer_fraction": float(f), "layer": int(c["layer"].iloc[0]), "strength": float(s),
                        "n": n, "rising": int((rise > 0).sum()), "mean": mean, "low": float(low), "high": float(high),
                        "steers": bool(low > 0) if n >= 2 else bool(n == 1 and mean > 0)})
    return pd.DataFrame(out, columns=COLUMNS)


def steering_cell_keys(cells: pd.DataFrame, model: str) -> set[tuple[float, float]] | None:
    """The (layer fraction, strength) cells of ``model`` that steer, rounded as the stage rounds them; None where
    the check did not run for it (every cell then counts)."""
    g = cells[cells["model"] == model] if len(cells) else cells
    if not len(g):
        return None
    return {(round(float(r["layer_fraction"]), 6), float(r["strength"])) for _, r in g[g["steers"]].iterrows()}
