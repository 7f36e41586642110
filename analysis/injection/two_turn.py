"""The two-turn trial (the design of Pearson-Vogel et al. 2026) and the logit lens at its answer position.

The injection steers the first exchange only; the question, in a second turn, reads it through the key-value
cache (:meth:`reproduce.injection.experiment.Runner.run_two_turn`). The measure is the yes/no log-odds of the
answer's next token after the prefill "The answer is". Per model, concept and injected cell:

- ``shift`` = log-odds(injected) - log-odds(no injection). The conversation without injection is the same for
  every concept, so the model's control is one number, not a sample.
- Per cell, the mean shift over concepts with a t interval over concepts (:data:`INTERVAL`). Concepts are the
  unit: each is one deterministic forward pass.
- Where the random direction ran (the control fractions), ``concept - random`` pairs each concept's shift with
  the shift from a random direction of the same norm at the same cell. This is how far the shift is specific to
  the concept rather than to any push of that size.
- The best cell is chosen on one half of the concepts and its shift reported on the other half. The split is
  :func:`analysis.injection.paired.halves`, the one the introspection score uses.

The lens gives, per model, cell and read layer, the mean over concepts of the injected minus control
log-probability of the concept word's first token, and the same for the yes/no log-odds.

None of these carries a verdict word: their false-positive rates have not been simulated. They are
measurements, reported with their intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.injection.design import CELL, INTERVAL
from analysis.injection.paired import halves

#: the fewest concepts a split-half choice needs (half choose, half estimate, each at least two)
MIN_CONCEPTS = 4
CELL_COLUMNS = ["model", "condition", *CELL, "n", "mean", "low", "high"]


def _t_interval(x: np.ndarray) -> tuple[float, float, float]:
    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + INTERVAL / 2, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))
    return m, m - half, m + half


def shifts(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per model, injected condition (``concept``, ``random``), concept and cell: the log-odds shift from
    the model's control trial."""
    out = []
    for model, g in trials.groupby("model", sort=True):
        ctl = g.loc[g["condition"] == "control", "logodds"]
        if ctl.empty:
            continue
        base = float(ctl.iloc[0])
        inj = g[g["condition"] != "control"]
        out.append(inj.assign(shift=inj["logodds"] - base)[["model", "condition", "concept", *CELL, "shift",
                                                            "p_outside"]])
    cols = ["model", "condition", "concept", *CELL, "shift", "p_outside"]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)


def cell_table(sh: pd.DataFrame) -> pd.DataFrame:
    """Per model, condition and cell: the concepts, the mean shift and its interval; and per model and cell
    with the random control, the paired ``concept - random`` contrast (condition ``concept - random``)."""
    rows = []
    for (model, cond, f, s), g in sh.groupby(["model", "condition", *CELL], sort=True):
        m, lo, hi = _t_interval(g["shift"])
        rows.append(dict(model=model, condition=cond, layer_fraction=f, strength=s, n=len(g), mean=m, low=lo, high=hi))
    for (model, f, s), g in sh.groupby(["model", *CELL], sort=True):
        wide = g.pivot_table(index="concept", columns="condition", values="shift")
        if {"concept", "random"} <= set(wide.columns):
            d = (wide["concept"] - wide["random"]).dropna()
            m, lo, hi = _t_interval(d)
            rows.append(dict(model=model, condition="concept - random", layer_fraction=f, strength=s, n=len(d),
                             mean=m, low=lo, high=hi))
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def best_cell(sh: pd.DataFrame, seed: int) -> dict:
    """Per model with at least :data:`MIN_CONCEPTS` concepts: the concept cell with the largest mean shift on the
    choosing half, and its shift on the estimating half (mean and interval over those concepts)."""
    out = {}
    inj = sh[sh["condition"] == "concept"]
    for model, g in inj.groupby("model", sort=True):
        if g["concept"].nunique() < MIN_CONCEPTS:
            continue
        choose, estimate = halves(g["concept"], seed)
        raw = g[g["concept"].isin(choose)].groupby(CELL)["shift"].mean()
        f, s = raw.idxmax()
        held = g[g["concept"].isin(estimate) & np.isclose(g["layer_fraction"], f) & np.isclose(g["strength"], s)]
        m, lo, hi = _t_interval(held["shift"])
        out[model] = {"layer_fraction": float(f), "strength": float(s), "choosing_half_mean": float(raw.max()),
                      "held_out": {"mean": m, "low": lo, "high": hi, "n": int(len(held))},
                      "split": {"choose": choose, "estimate": estimate, "seed": int(seed)}}
    return out


def lens_table(lens: pd.DataFrame) -> pd.DataFrame:
    """Per model, injected condition, cell and read layer: the mean over concepts of the injected minus the
    control readout, for the concept word's first token (``d_lp_concept``, log-probability) and for the yes/no
    log-odds (``d_logodds_yes``)."""
    cols = ["model", "condition", *CELL, "read_layer", "read_fraction", "n", "d_lp_concept", "d_logodds_yes"]
    if lens.empty:
        return pd.DataFrame(columns=cols)
    ctl = lens[lens["condition"] == "control"].set_index(["model", "concept", "read_layer"])[["lp_concept",
                                                                                              "logodds_yes"]]
    inj = lens[lens["condition"] != "control"].join(ctl, on=["model", "concept", "read_layer"], rsuffix="_ctl")
    inj = inj.assign(d_lp_concept=inj["lp_concept"] - inj["lp_concept_ctl"],
                     d_logodds_yes=inj["logodds_yes"] - inj["logodds_yes_ctl"])
    g = inj.groupby(["model", "condition", *CELL, "read_layer", "read_fraction"], sort=True)
    out = g.agg(n=("concept", "size"), d_lp_concept=("d_lp_concept", "mean"),
                d_logodds_yes=("d_logodds_yes", "mean")).reset_index()
    return out[cols]


def analyse(trials: pd.DataFrame, lens: pd.DataFrame, seed: int) -> dict:
    """``{"shifts", "cells", "lens", "numbers"}``: the per-concept shifts, the cell table, the lens table, and per
    model the control's P(yes), the cells whose interval lies above / below zero, the split-half best cell and
    the lens's largest concept rise at the answer position (with its read layer and cell)."""
    sh = shifts(trials)
    cells = cell_table(sh)
    lt = lens_table(lens)
    best = best_cell(sh, seed)
    numbers = {}
    for model, g in trials.groupby("model", sort=True):
        c = cells[(cells["model"] == model) & (cells["condition"] == "concept")]
        r = cells[(cells["model"] == model) & (cells["condition"] == "concept - random")]
        ctl = g[g["condition"] == "control"]
        d = {"control_p_yes": float(ctl["p_yes"].iloc[0]) if len(ctl) else None,
             "control_p_outside": float(ctl["p_outside"].iloc[0]) if len(ctl) else None,
             "concepts": int(g.loc[g["condition"] == "concept", "concept"].nunique()),
             "cells": int(len(c)), "cells_above": int((c["low"] > 0).sum()), "cells_below": int((c["high"] < 0).sum()),
             "vs_random_cells": int(len(r)), "vs_random_above": int((r["low"] > 0).sum()),
             "vs_random_below": int((r["high"] < 0).sum())}
        if model in best:
            d["best"] = best[model]
        ll = lt[(lt["model"] == model) & (lt["condition"] == "concept")]
        if len(ll):
            top = ll.loc[ll["d_lp_concept"].idxmax()]
            d["lens_top"] = {"read_layer": int(top["read_layer"]), "read_fraction": float(top["read_fraction"]),
                             "layer_fraction": float(top["layer_fraction"]), "strength": float(top["strength"]),
                             "d_lp_concept": float(top["d_lp_concept"])}
        numbers[model] = d
    return {"shifts": sh, "cells": cells, "lens": lt, "numbers": numbers}
