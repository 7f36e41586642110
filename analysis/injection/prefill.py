"""Prefill "accidents": does the model disavow a word put in its mouth, with and without an injection?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

import analysis.bayes as M
from analysis.injection.design import CELL, LOGIT_SD, _cell_codes, _cell_label, _injected_cells, check_table
from analysis.bayes import category_codes as _codes
from analysis.injection.likelihood import _effect_draws, _observed_average, _random_effect, _summary, simultaneous_band
from analysis.bayes import aggregate_binomial as _aggregate, draws as _draws, sigmoid as _sigmoid

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class PrefillDesign:
    levels: pd.DataFrame  # condition, layer_fraction, strength, layer, n, k; the control level first
    pairs: list[str]
    combo_level: np.ndarray
    combo_pair: np.ndarray
    k: np.ndarray
    n: np.ndarray


def prefill_design(rows: pd.DataFrame) -> PrefillDesign:
    """The coding of :func:`prefill_model` for one model's rows: one level for all control rows (no
    injection, so no layer or strength), then one per (injected condition, layer fraction, strength)."""
    rows = check_table(rows, "prefill")
    if rows["model"].nunique() > 1:
        raise DataError("prefill_model fits one model's rows at a time: filter the table by `model` first")
    ctl, inj = rows[rows["condition"] == "control"], rows[rows["condition"] != "control"]
    if ctl.empty or not (inj["condition"] == "matching").any():
        raise DataError("the prefill analysis compares matching injection with no injection: the table needs "
                        f"control and matching rows (it has {len(ctl)} control, "
                        f"{int((inj['condition'] == 'matching').sum())} matching)")
    cells = _injected_cells(inj, ["condition", *CELL])
    cells["k"] = inj.groupby(["condition", *CELL], sort=True)["accident"].sum().to_numpy().astype(int)
    control = pd.DataFrame([{"condition": "control", "layer_fraction": np.nan, "strength": 0.0, "layer": -1,
                             "n": len(ctl), "k": int(ctl["accident"].sum())}])
    levels = pd.concat([control, cells.drop(columns="cell")], ignore_index=True)
    pairs = sorted(rows["pair_id"].astype(str).unique())
    level = np.r_[np.zeros(len(ctl), dtype=np.int64), 1 + _cell_codes(inj, cells, ["condition", *CELL])]
    pair = np.r_[_codes(ctl["pair_id"].astype(str), pairs), _codes(inj["pair_id"].astype(str), pairs)]
    y = np.r_[ctl["accident"].to_numpy(), inj["accident"].to_numpy()]
    combos, k, n = _aggregate({"level": level, "pair": pair}, y)
    return PrefillDesign(levels, pairs, combos["level"], combos["pair"], k, n)


def prefill_model(rows: pd.DataFrame) -> pm.Model:
    """Prefill "accidents": after a word is put in the model's mouth, does it disavow it (``accident``,
    ``p_accident > 0.5``)? A logistic regression on one model's rows::

        accident_i ~ Bernoulli(p_i)
        logit p_i = kappa[level_i] + sigma_pair * z[pair_i]
        kappa[level] ~ Normal(0, 1.5);  sigma_pair ~ HalfNormal(1);  z ~ Normal(0, 1)

    ``level`` = control (no injection: one level) or (matching | random, layer fraction, strength): the
    prefilled word's own concept injected, or an unrelated one. A pair (sentence + prefilled word) is seen
    in every condition, so its intercept makes the contrasts within pair. Quantities
    (:func:`prefill_summary`): P(accident) per level at the average pair, and per injected cell the contrasts
    matching - control and matching - random (the published finding: matching injection lowers the rate)."""
    import pymc as pm

    des = prefill_design(rows)
    coords = {"level": [_cell_label(r, ["condition", *CELL]) for _, r in des.levels.iterrows()],
              "pair": des.pairs}
    with pm.Model(coords=coords) as model:
        kappa = pm.Normal("kappa", 0.0, LOGIT_SD, dims="level")
        eta = kappa[des.combo_level] + _random_effect("pair", "pair", des.combo_pair)
        M.binomial_logit("y", des.n, eta, des.k)
    return model


def prefill_summary(idata: az.InferenceData, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``conditions``: per level (control; matching / random per cell) the raw ``n, k, rate`` and
    P(accident) at the average pair (``mean, low, high``) and averaged over its pairs (``obs_*``).
    ``contrasts``: per injected cell, ``matching - control`` and (where random rows exist) ``matching -
    random``, as ``mean, low, high`` (differences of probabilities), ``p_positive``, ``obs_*``, and
    ``sim_low, sim_high``, the simultaneous 95% band over the contrast's cells (:func:`simultaneous_band`)."""
    des = prefill_design(rows)
    kappa = _draws(idata, "kappa")
    p0 = _sigmoid(kappa)
    eff = _effect_draws(idata, "pair", des.combo_pair)
    pobs = _observed_average(kappa, des.combo_level, eff, des.n)
    lv = des.levels
    conds = [{**{c: r[c] for c in ("condition", "layer_fraction", "strength", "layer", "n", "k")},
              "rate": r["k"] / r["n"], **_summary(p0[i]), **_summary(pobs[i], "obs_")} for i, r in lv.iterrows()]
    contrasts, draws = [], []
    for i, r in lv[lv["condition"] == "matching"].iterrows():
        others = [("control", 0)]
        same = lv.index[(lv["condition"] == "random") & (lv["layer_fraction"] == r["layer_fraction"])
                        & (lv["strength"] == r["strength"])]
        others += [("random", int(j)) for j in same]
        for name, j in others:
            d, dobs = p0[i] - p0[j], pobs[i] - pobs[j]
            contrasts.append({"contrast": f"matching - {name}", "layer_fraction": r["layer_fraction"],
                              "strength": r["strength"], "layer": r["layer"], **_summary(d),
                              "p_positive": float((d > 0).mean()), **_summary(dobs, "obs_")})
            draws.append(d)
    out = pd.DataFrame(contrasts)
    if len(out):
        # the strongest cell of a contrast is chosen among its cells: its verdict reads the simultaneous band over them
        d = np.stack(draws)
        out["sim_low"], out["sim_high"] = np.nan, np.nan
        for idx in out.groupby("contrast").groups.values():
            idx = np.asarray(list(idx))
            lo, hi = simultaneous_band(d[idx])
            out.loc[idx, "sim_low"], out.loc[idx, "sim_high"] = lo, hi
    return {"conditions": pd.DataFrame(conds), "contrasts": out}
