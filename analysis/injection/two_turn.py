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

Beside the yes/no log-odds, the shift in logit P(yes) over the whole vocabulary (``shift_full``, the probability
Pearson-Vogel et al. compare) is kept as a labelled variant (the cell table's ``measure``).

The lens gives, per model, cell and read layer, the mean over concepts of the injected minus control
log-probability of the concept word's first token, and the same for the yes/no log-odds; and, where the random
direction ran, the concept's own vector minus the random direction, paired by concept, with a t interval. The
largest of those is reported with its own interval and the number of cell and read-layer pairs it was the
largest of.

None of these carries a verdict word: their false-positive rates have not been simulated. They are
measurements, reported with their intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.injection.design import CELL, INTERVAL
from analysis.injection.paired import halves
from analysis.intervals import t_interval

#: the fewest concepts a split-half choice needs (half choose, half estimate, each at least two)
MIN_CONCEPTS = 4
CELL_COLUMNS = ["model", "condition", *CELL, "n", "mean", "low", "high"]
#: the cell table's measures: the yes/no log-odds (this package's), and logit P(yes) over the whole vocabulary
#: (the probability Pearson-Vogel et al. compare)
MEASURES = ("yes_vs_no", "yes_full")


def _logit_of_log(lp) -> np.ndarray:
    """logit(p) from log p, kept finite."""
    p = np.clip(np.exp(np.asarray(lp, dtype=float)), 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def shifts(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per model, injected condition (``concept``, ``random``), concept and cell: ``shift``, the yes/no
    log-odds shift from the model's control trial, and ``shift_full``, the shift in logit P(yes) over the whole
    vocabulary (Pearson-Vogel et al.'s probability), where the table has it."""
    from reproduce.errors import DataError

    out = []
    for model, g in trials.groupby("model", sort=True):
        ctl = g[g["condition"] == "control"]
        if ctl.empty:
            continue
        if ctl["logodds"].nunique() > 1:
            raise DataError(f"{model}'s two-turn control trials differ ({ctl['logodds'].nunique()} values); they are "
                            "one conversation without injection and must be equal: run the concept_injection stage again")
        inj = g[g["condition"] != "control"]
        inj = inj.assign(shift=inj["logodds"] - float(ctl["logodds"].iloc[0]))
        full = "lp_yes" in g.columns and g["lp_yes"].notna().all()
        inj = inj.assign(shift_full=_logit_of_log(inj["lp_yes"]) - float(_logit_of_log(ctl["lp_yes"].iloc[:1])[0])
                         if full else np.nan)
        out.append(inj[["model", "condition", "concept", *CELL, "shift", "shift_full", "p_outside"]])
    cols = ["model", "condition", "concept", *CELL, "shift", "shift_full", "p_outside"]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)


def cell_table(sh: pd.DataFrame, measure: str = "shift") -> pd.DataFrame:
    """Per model, condition and cell: the concepts, the mean of ``measure`` (``shift``: yes/no log-odds;
    ``shift_full``: logit P(yes) over the vocabulary) and its interval; and per model and cell with the random
    control, the paired ``concept - random`` contrast (condition ``concept - random``)."""
    rows = []
    for (model, cond, f, s), g in sh.groupby(["model", "condition", *CELL], sort=True):
        m, lo, hi = t_interval(g[measure], INTERVAL)
        rows.append(dict(model=model, condition=cond, layer_fraction=f, strength=s, n=len(g), mean=m, low=lo, high=hi))
    for (model, f, s), g in sh.groupby(["model", *CELL], sort=True):
        wide = g.pivot_table(index="concept", columns="condition", values=measure)
        if {"concept", "random"} <= set(wide.columns):
            d = (wide["concept"] - wide["random"]).dropna()
            m, lo, hi = t_interval(d, INTERVAL)
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
        m, lo, hi = t_interval(held["shift"], INTERVAL)
        mf, lof, hif = t_interval(held["shift_full"], INTERVAL)
        out[model] = {"layer_fraction": float(f), "strength": float(s), "choosing_half_mean": float(raw.max()),
                      "held_out": {"mean": m, "low": lo, "high": hi, "n": int(len(held))},
                      "held_out_full": {"mean": mf, "low": lof, "high": hif},
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


def lens_vs_random(lens: pd.DataFrame) -> pd.DataFrame:
    """Per model, cell with the random direction, and read layer: the concept's lens log-probability under its
    own vector minus under the random direction of the same norm at the same cell (the control cancels), paired
    by concept: mean and t interval over concepts."""
    cols = ["model", *CELL, "read_layer", "read_fraction", "n", "mean", "low", "high"]
    keys = ["model", "concept", *CELL, "read_layer", "read_fraction"]
    inj = lens[lens["condition"] == "concept"].set_index(keys)["lp_concept"]
    rnd = lens[lens["condition"] == "random"].set_index(keys)["lp_concept"]
    d = (inj - rnd).dropna().rename("d").reset_index()
    rows = []
    for (model, f, s, rl, rf), g in d.groupby(["model", *CELL, "read_layer", "read_fraction"], sort=True):
        m, lo, hi = t_interval(g["d"], INTERVAL)
        rows.append(dict(model=model, layer_fraction=f, strength=s, read_layer=rl, read_fraction=rf, n=len(g),
                         mean=m, low=lo, high=hi))
    return pd.DataFrame(rows, columns=cols)


def analyse(trials: pd.DataFrame, lens: pd.DataFrame, seed: int) -> dict:
    """``{"shifts", "cells", "lens", "numbers"}``: the per-concept shifts, the cell table, the lens table, and per
    model the control's P(yes), the cells whose interval lies above / below zero, the split-half best cell and
    the lens's largest concept rise at the answer position (with its read layer and cell)."""
    sh = shifts(trials)
    cells = pd.concat([cell_table(sh).assign(measure="yes_vs_no"),
                       cell_table(sh, "shift_full").assign(measure="yes_full")], ignore_index=True)
    lt = lens_table(lens)
    lr = lens_vs_random(lens)
    best = best_cell(sh, seed)
    numbers = {}
    for model, g in trials.groupby("model", sort=True):
        ours = cells[(cells["model"] == model) & (cells["measure"] == "yes_vs_no")]
        c, r = ours[ours["condition"] == "concept"], ours[ours["condition"] == "concept - random"]
        ctl = g[g["condition"] == "control"]
        d = {"control_p_yes": float(ctl["p_yes"].iloc[0]) if len(ctl) else None,
             "control_p_outside": float(ctl["p_outside"].iloc[0]) if len(ctl) else None,
             "concepts": int(g.loc[g["condition"] == "concept", "concept"].nunique()),
             "cells": int(len(c)), "cells_above": int((c["low"] > 0).sum()), "cells_below": int((c["high"] < 0).sum()),
             "vs_random_cells": int(len(r)), "vs_random_above": int((r["low"] > 0).sum()),
             "vs_random_below": int((r["high"] < 0).sum())}
        if model in best:
            d["best"] = best[model]
        ll = lr[lr["model"] == model]
        if len(ll):  # the largest of many (cells x read layers), with its own interval, not corrected for them
            top = ll.loc[ll["mean"].idxmax()]
            d["lens_vs_random_top"] = {"read_layer": int(top["read_layer"]), "read_fraction": float(top["read_fraction"]),
                                       "layer_fraction": float(top["layer_fraction"]),
                                       "strength": float(top["strength"]), "n": int(top["n"]),
                                       "mean": float(top["mean"]), "low": float(top["low"]), "high": float(top["high"]),
                                       "among": int(len(ll))}
        numbers[model] = d
    return {"shifts": sh, "cells": cells, "lens": lt, "lens_vs_random": lr, "numbers": numbers}
