"""Which cell a result names: the one with the highest (or lowest) raw value, its ties named beside it, never
picked among by the modelled estimates, whose differences between equal counts are Monte Carlo noise. A light
module (pandas and numpy only), so the manuscript's text can use it without the analysis's model code."""

from __future__ import annotations

import numpy as np
import pandas as pd


def top_cell(cells: pd.DataFrame, raw: pd.Series, lowest: bool = False) -> tuple[pd.Series, list[dict]]:
    """The cell of ``cells`` with the highest (``lowest``: the lowest) raw value ``raw`` (a rate k / n, or a
    difference of two), and the other cells that tie with it on that value. Tied cells are taken in a fixed
    order (layer fraction, then strength), so the modelled estimates' Monte Carlo noise never picks among equal
    counts; a reader is told of the tie (``[{"layer_fraction", "strength"}, ...]``)."""
    # rounded, so that equal counts compare equal: a difference of two rates (1/6 - 3/6 against 0/6 - 2/6) can
    # differ in its last bit, which would otherwise decide the order
    order = cells.assign(_raw=np.round(raw.to_numpy(dtype=float), 12)).sort_values(
        ["_raw", "layer_fraction", "strength"], ascending=[lowest, True, True], kind="stable")
    best = order.iloc[0]
    tied = order.iloc[1:][order["_raw"].iloc[1:] == best["_raw"]]
    return best.drop("_raw"), [{"layer_fraction": float(r["layer_fraction"]), "strength": float(r["strength"])}
                               for _, r in tied.iterrows()]


def raw_rate(cells: pd.DataFrame) -> pd.Series:
    """Each cell's raw rate k / n, the value :func:`top_cell` ranks rates by."""
    return cells["k"] / cells["n"]
