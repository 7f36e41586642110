"""Every concept-injection fit (per model) through the convergence gate, and the frequentist cross-check."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.bayes as M
from analysis.injection.design import CELL, COLUMNS, check_table
from analysis.injection.detection import detection_model, detection_summary
from analysis.injection.identification import identification_model, identification_summary
from analysis.injection.intention import intention_model, intention_summary
from analysis.injection.prefill import prefill_model, prefill_summary
from analysis.injection.yes_bias import yes_bias_model, yes_bias_summary


#: the result tables of :func:`fit_all`
RESULTS = ("detection_cells", "fp_rate", "yes_bias", "identification_cells", "prefill_conditions",
           "prefill_contrasts", "intention_layers")


def fit_all(tables: dict[str, pd.DataFrame], settings: M.SamplerSettings) -> dict:
    """Every model's fits of every non-empty table in ``tables`` (keys among ``detection``,
    ``identification``, ``prefill``, ``intention``), each through the convergence gate (a failing fit raises
    :class:`analysis.self_prediction.hierarchical.ConvergenceError`). Returns the tables :data:`RESULTS` (each with a ``model``
    column first; empty where its input is absent) and ``diagnostics``: a list of ``{"model", "fit",
    "diagnostics"}``. The detection table gives two fits, ``detection`` and (where it has yes_bias rows)
    ``yes_bias``."""
    unknown = sorted(set(tables) - set(COLUMNS))
    if unknown:
        raise DataError(f"unknown injection table(s) {unknown}: expected keys among {sorted(COLUMNS)}")
    parts: dict[str, list[pd.DataFrame]] = {r: [] for r in RESULTS}
    diags: list[dict] = []

    def run(name: str, build, rows: pd.DataFrame, model_name: str):
        idata, d = M.sample_gated(build(rows), settings, f"{name} ({model_name})")
        diags.append({"model": model_name, "fit": name, "diagnostics": d})
        return idata

    for table in ("detection", "identification", "prefill", "intention"):
        rows = tables.get(table)
        if rows is None or rows.empty:
            continue
        rows = check_table(rows, table)
        for m in sorted(rows["model"].astype(str).unique()):
            r = rows[rows["model"].astype(str) == m]
            tag = lambda df: df.assign(model=m)[["model", *df.columns]]  # noqa: E731
            if table == "detection":
                s = detection_summary(run("detection", detection_model, r, m), r)
                parts["detection_cells"].append(tag(s["cells"]))
                parts["fp_rate"].append(tag(s["fp_rate"]))
                if (r["question"] == "yes_bias").any():
                    parts["yes_bias"].append(tag(yes_bias_summary(run("yes_bias", yes_bias_model, r, m), r)))
            elif table == "identification":
                parts["identification_cells"].append(
                    tag(identification_summary(run("identification", identification_model, r, m), r)))
            elif table == "prefill":
                s = prefill_summary(run("prefill", prefill_model, r, m), r)
                parts["prefill_conditions"].append(tag(s["conditions"]))
                parts["prefill_contrasts"].append(tag(s["contrasts"]))
            else:
                parts["intention_layers"].append(tag(intention_summary(run("intention", intention_model, r, m), r)))
    out: dict = {k: (pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=["model", "mean", "low", "high"]))
                 for k, v in parts.items()}
    out["diagnostics"] = diags
    return out


# ------------------------------------------------------------------------------------ frequentist
def frequentist_summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The raw rates per model and cell with Wilson 95% intervals (statsmodels ``proportion_confint``,
    ``method="wilson"``, through :func:`analysis.self_prediction.frequentist.wilson`): a cross-check of the Bayesian cell
    rates that assumes independent trials. Columns: ``model, table, outcome, condition, layer_fraction,
    strength, n, k, rate, low, high``; ``table`` is detection (``detect`` questions), yes_bias,
    identification or prefill, and control rows form one row each (layer_fraction NaN, strength 0)."""
    from analysis.intervals import wilson

    specs = [("detection", "detection", "detected", lambda r: r["question"] == "detect"),
             ("yes_bias", "detection", "detected", lambda r: r["question"] == "yes_bias"),
             ("identification", "identification", "correct", None),
             ("prefill", "prefill", "accident", None)]
    for table, rows in tables.items():  # every table given is checked, the intention table included
        if table not in COLUMNS:
            raise DataError(f"unknown injection table {table!r}: expected keys among {sorted(COLUMNS)}")
        if rows is not None and not rows.empty:
            check_table(rows, table)
    parts = []
    for name, table, outcome, pick in specs:
        rows = tables.get(table)
        if rows is None or rows.empty:
            continue
        rows = check_table(rows, table)
        if pick is not None:
            rows = rows[pick(rows)]
        if rows.empty:
            continue
        rows = rows.assign(layer_fraction=rows["layer_fraction"].where(rows["condition"] != "control", np.nan),
                           strength=rows["strength"].where(rows["condition"] != "control", 0.0))
        g = (rows.groupby(["model", "condition", *CELL], sort=True, dropna=False)[outcome]
             .agg(n="size", k="sum").reset_index())
        parts.append(g.assign(table=name, outcome=outcome))
    cols = ["model", "table", "outcome", "condition", *CELL, "n", "k", "rate", "low", "high"]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    out["k"] = out["k"].astype(int)
    out["rate"] = out["k"] / out["n"]
    out["low"], out["high"] = wilson(out["k"].to_numpy(), out["n"].to_numpy())
    return out[cols]
