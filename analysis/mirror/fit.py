"""Every mirror-test fit through the convergence gate, and the frequentist cross-check of the cell rates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.bayes as M
from analysis.mirror.binary import binary_design, binary_summary, noticing_model, recognition_model
from analysis.mirror.design import CELL, COLUMNS, _cells, altered_only, check_table
from analysis.mirror.imitation import (_imitation_cells, imitation_design, imitation_model, imitation_rows,
                                       imitation_summary)
from analysis.mirror.surprise import surprise_design, surprise_model, surprise_summary

if TYPE_CHECKING:
    import pymc as pm


#: the result tables of :func:`fit_all`
RESULTS = ("noticing_cells", "noticing_contrasts", "noticing_turn", "recognition_cells", "recognition_contrasts",
           "recognition_turn", "imitation_cells", "imitation_copied_cells", "imitation_adopted_cells", "surprise_cells",
           "judge_noticing_cells", "judge_noticing_contrasts", "judge_noticing_turn")
#: the imitation split: pattern words the shown history held (copied), and new ones in its pattern (adopted)
SPLIT = ("copied", "adopted")


def imitation_split(turns: pd.DataFrame, part: str) -> pd.DataFrame:
    """``turns`` with each kind's pattern count replaced by its ``part``: ``copied`` (the pattern words that the
    shown history held as corrupted words) or ``adopted`` (the others), for the imitation model."""
    from analysis.mirror.design import KINDS

    out = turns.copy()
    for k in KINDS:
        copied = out[f"pattern_copied_{k}"]
        out[f"pattern_k_{k}"] = copied if part == "copied" else out[f"pattern_k_{k}"] - copied
        out[f"pattern_copied_{k}"] = copied if part == "copied" else 0  # the part's own copied words
    return out


def has_judge(turns: pd.DataFrame | None) -> bool:
    """Whether the turns table carries the optional judge's grades (a stage run with ``mirror.judge`` set)."""
    return turns is not None and "judge_notices" in turns and bool(turns["judge_notices"].notna().any())


def fit_all(tables: dict[str, pd.DataFrame], settings: M.SamplerSettings) -> dict:
    """Every mirror-test fit of the non-empty tables in ``tables`` (keys ``turns``, ``surprise``), all models
    jointly, each through the convergence gate (a failing fit raises
    :class:`analysis.self_prediction.hierarchical.ConvergenceError`). Every table given is checked before anything is sampled.
    Returns the tables :data:`RESULTS` (each with ``model``, the cell keys ``condition, kind, level`` where
    they apply, and ``mean, low, high``; empty where its input is absent) and ``diagnostics``: a list of
    ``{"model": "all", "fit", "diagnostics"}``. The turns table gives the fits ``noticing``, ``recognition``,
    (where it has corrupted rows) ``imitation`` and (where a judge graded it) ``judge_noticing``, the same
    model as ``noticing`` on the judge's grade; the surprise table the fit ``surprise``."""
    unknown = sorted(set(tables) - set(COLUMNS))
    if unknown:
        raise DataError(f"unknown mirror table(s) {unknown}: expected keys among {sorted(COLUMNS)}")
    present = {k: v for k, v in tables.items() if v is not None and not v.empty}
    turns, surprise = present.get("turns"), present.get("surprise")
    if turns is not None:  # check (and build) every design before the first fit
        binary_design(turns, "notices")
        if (check_table(turns, "turns")["condition"] == "corrupted").any():
            imitation_design(turns)
    if surprise is not None:
        surprise_design(surprise)
    out: dict = {r: pd.DataFrame(columns=["model", "mean", "low", "high"]) for r in RESULTS}
    diags: list[dict] = []

    def run(name: str, model: pm.Model):
        idata, d = M.sample_gated(model, settings, f"mirror {name}")
        diags.append({"model": "all", "fit": name, "diagnostics": d})
        return idata

    if turns is not None:
        fits = [("noticing", noticing_model, "notices"), ("recognition", recognition_model, "says_yes")]
        if has_judge(turns):
            fits.append(("judge_noticing", lambda t: noticing_model(t, "judge_notices"), "judge_notices"))
        for name, build, outcome in fits:
            s = binary_summary(run(name, build(turns)), turns, outcome)
            out[f"{name}_cells"], out[f"{name}_contrasts"], out[f"{name}_turn"] = s["cells"], s["contrasts"], s["turn"]
        if (check_table(turns, "turns")["condition"] == "corrupted").any():
            out["imitation_cells"] = imitation_summary(run("imitation", imitation_model(turns)), turns)
            for part in SPLIT:  # each part of the imitation against the control, by the same model
                split = imitation_split(turns, part)
                out[f"imitation_{part}_cells"] = imitation_summary(run(f"imitation {part}", imitation_model(split)),
                                                                   split)
    if surprise is not None:
        out["surprise_cells"] = surprise_summary(run("surprise", surprise_model(surprise)), surprise)
    out["diagnostics"] = diags
    return out


# ------------------------------------------------------------------------------------ frequentist
def frequentist_summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The raw rates per model and cell with Wilson 95% intervals (:func:`analysis.self_prediction.frequentist.wilson`): a
    cross-check of the Bayesian cell rates that assumes independent trials. Columns: ``model, outcome,
    condition, kind, level, n, k, rate, low, high``; ``outcome`` is ``notices``, ``judge_notices`` (where a judge
    graded the replies; P(yes) > 0.5) and ``says_yes`` (trials:
    replies) and ``imitation`` (trials: eligible words, the own kind's for corrupted rows; control rows give
    one row per kind, the baseline). Words of one reply are not independent, so the imitation intervals are
    too narrow where replies differ (the Bayesian model's observation-level effect allows for it)."""
    from analysis.intervals import wilson

    unknown = sorted(set(tables) - set(COLUMNS))
    if unknown:
        raise DataError(f"unknown mirror table(s) {unknown}: expected keys among {sorted(COLUMNS)}")
    for name, rows in tables.items():
        if rows is not None and not rows.empty:
            check_table(rows, name)
    cols = ["model", "outcome", *CELL, "n", "k", "rate", "low", "high"]
    turns = tables.get("turns")
    if turns is None or turns.empty:
        return pd.DataFrame(columns=cols)
    rows = altered_only(check_table(turns, "turns"))  # as the models count them
    parts = []
    outcomes = [("notices", rows, rows["notices"].to_numpy(bool)), ("says_yes", rows, rows["p_yes"].to_numpy(float) > 0.5)]
    if has_judge(rows):
        judged = rows[rows["judge_notices"].notna()]
        outcomes.append(("judge_notices", judged, judged["judge_notices"].to_numpy(float) > 0.5))
    for outcome, rows_o, y in outcomes:
        cells, cell = _cells(rows_o)
        cells["n"] = np.bincount(cell, minlength=len(cells))
        cells["k"] = np.bincount(cell, weights=y.astype(float), minlength=len(cells)).astype(int)
        parts.append(cells.assign(outcome=outcome))
    obs = imitation_rows(turns)
    if not obs.empty:
        cells, cell = _imitation_cells(obs)
        cells["n"] = np.bincount(cell, weights=obs["n"].to_numpy(float), minlength=len(cells)).astype(int)
        cells["k"] = np.bincount(cell, weights=obs["k"].to_numpy(float), minlength=len(cells)).astype(int)
        parts.append(cells.assign(outcome="imitation"))
    out = pd.concat(parts, ignore_index=True)
    out["rate"] = out["k"] / out["n"]
    out["low"], out["high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out[cols]
