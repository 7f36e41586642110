"""The mirror test's imitation model: does a model take up the pattern of the corruption in its own replies?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from analysis.bayes import draws as _draws, sigmoid as _sigmoid
from analysis.mirror.design import (KINDS, LOGIT_SD, SCALE_SD, _binomial_logit, _cell_key, _cells, _conversation_codes,
                     _conversation_effects, _summary, altered_only, check_table)

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class ImitationDesign:
    """The coding of :func:`imitation_model`: the model cells (control baselines per (model, kind) with
    ``condition = control, level = 0``, then (model, kind, level) of the corrupted rows; with ``replies``,
    words ``n`` and pattern words ``k``), the conversation levels, and one binomial observation per reply and
    kind (its cell and (model, script) pair, ``k`` of ``n``)."""

    cells: pd.DataFrame
    scripts: list[str]
    model_scripts: list[str]
    pair_model: np.ndarray
    pair_script: np.ndarray
    cell: np.ndarray
    pair: np.ndarray
    k: np.ndarray
    n: np.ndarray


def imitation_rows(turns: pd.DataFrame) -> pd.DataFrame:
    """The observations of the imitation model: every corrupted row with its own kind's pattern counts
    (``k``, ``n``), and every control row once per kind with that kind's counts; replies without an eligible
    word for the kind (``n = 0``) carry no information and are left out, as are replies after a corrupted history
    the corruption left unchanged (:func:`analysis.mirror.design.altered_only`). Columns ``model, script_id, turn,
    condition, kind, level, k, n``."""
    rows = altered_only(check_table(turns, "turns"))
    keep = ["model", "script_id", "turn", "condition", "kind", "level"]
    parts = []
    cor = rows[rows["condition"] == "corrupted"]
    for kind in KINDS:
        c = cor[cor["kind"] == kind]
        parts.append(c[keep].assign(k=c[f"pattern_k_{kind}"], n=c[f"pattern_n_{kind}"]))
    ctl = rows[rows["condition"] == "control"]
    for kind in KINDS:
        parts.append(ctl[keep].assign(kind=kind, k=ctl[f"pattern_k_{kind}"], n=ctl[f"pattern_n_{kind}"]))
    out = pd.concat(parts, ignore_index=True)
    out["kind"] = out["kind"].astype(object)
    return out[out["n"] > 0].reset_index(drop=True)


def _imitation_cells(obs: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The model cells of the imitation observations: control cells are per (model, kind)."""
    key = np.where(obs["condition"].to_numpy() == "control",
                   np.char.add("control@", obs["kind"].astype(str).to_numpy().astype(str)), _cell_key(obs))
    cells, cell = _cells(obs.assign(_key=key), extra=["_key"])
    return cells.drop(columns="_key"), cell


def imitation_design(turns: pd.DataFrame) -> ImitationDesign:
    obs = imitation_rows(turns)
    cor = obs[obs["condition"] == "corrupted"]
    if cor.empty:
        raise DataError("the imitation model needs corrupted rows with eligible words for their kind; the mirror "
                        "turns table has none")
    base = set(map(tuple, obs.loc[obs["condition"] == "control", ["model", "kind"]].to_numpy()))
    lacking = sorted(set(map(tuple, cor[["model", "kind"]].to_numpy())) - base)
    if lacking:
        raise DataError(f"the imitation model compares each kind's pattern with its rate in clean conversations, "
                        f"but (model, kind) {lacking} have no control rows with eligible words for the kind: run "
                        "the control condition (it always runs) or drop those rows")
    cells, cell = _imitation_cells(obs)
    cells["replies"] = np.bincount(cell, minlength=len(cells))
    cells["n"] = np.bincount(cell, weights=obs["n"].to_numpy(float), minlength=len(cells)).astype(int)
    cells["k"] = np.bincount(cell, weights=obs["k"].to_numpy(float), minlength=len(cells)).astype(int)
    scripts, pairs, pair, pair_model, pair_script = _conversation_codes(obs)
    return ImitationDesign(cells, scripts, pairs, pair_model, pair_script, cell, pair, obs["k"].to_numpy(np.int64),
                           obs["n"].to_numpy(np.int64))


def imitation_model(turns: pd.DataFrame) -> pm.Model:
    """Imitation: does a model take up the pattern of the corruption in its own next reply? A binomial
    logistic regression of the reply's pattern words, for every corrupted row with its own kind's counts and
    for every control row once per kind (the baseline rate of each pattern in clean conversations), on every
    model's rows jointly::

        k_i ~ Binomial(n_i, p_i)
        corrupted rows (kind j = the row's kind):  logit p_i = lambda[m_i, j, level_i] + c_i + sigma_obs * e_i
        control rows (each kind j):                logit p_i = lambda0[m_i, j]        + c_i + sigma_obs * e_i
        c_i = u[s_i] + w[m_i, s_i]   (the conversation effect, as in :func:`noticing_model`)
        lambda, lambda0 ~ Normal(0, 1.5);  sigma_*, sigma_obs ~ HalfNormal(1);  e ~ Normal(0, 1)

    ``k_i`` of ``n_i``: the words of the reply that show kind ``j``'s pattern, of its eligible words
    (:func:`reproduce.mirror.imitation.pattern_counts`); replies with no eligible word are left out. ``e_i`` is an
    observation-level effect (one per reply and kind): the words of one reply are not independent trials (a
    reply that takes up the pattern does so in many of its words), and a plain binomial would count them as
    such and give too narrow intervals; with ``e`` the reply, not the word, is the unit of replication. (A
    beta-binomial says the same, but its log-gamma terms made every step of the sampler ten times as
    costly.) A control reply enters once per kind, each time with another measurement of it; the conversation
    effects tie its entries together and to the same script's corrupted replies, so the comparison with the
    baseline is largely within conversation. There is no turn effect: the cells are averaged over the
    measured turns, which every cell has alike.

    Quantities (:func:`imitation_summary`): ``sigmoid(lambda)``, the share of pattern words of the typical
    reply (``e = 0``) at the average conversation, per (model, kind, level); the baseline
    ``sigmoid(lambda0)`` per (model, kind); their difference per draw (imitation above the clean-conversation
    rate); and the expected share over replies, ``E_e sigmoid(lambda + sigma_obs * e)``."""
    import pymc as pm

    des = imitation_design(turns)
    coords = {"cell": [f"{r['model']}|{r['condition']}|{r['kind']}|{r['level']:g}" for _, r in des.cells.iterrows()],
              "script": des.scripts, "model_script": des.model_scripts, "obs": np.arange(len(des.k))}
    with pm.Model(coords=coords) as model:
        lam = pm.Normal("mu", 0.0, LOGIT_SD, dims="cell")
        conv = _conversation_effects(des.pair_model, des.pair_script)
        e = pm.HalfNormal("sigma_obs", SCALE_SD) * pm.Normal("z_obs", 0.0, 1.0, dims="obs")
        _binomial_logit("y", des.n, lam[des.cell] + conv[des.pair] + e, des.k)
    return model


#: Gauss-Hermite nodes and weights for expectations over a standard normal
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(32)
_GH_W = _GH_W / _GH_W.sum()


def imitation_summary(idata: az.InferenceData, turns: pd.DataFrame) -> pd.DataFrame:
    """Per model cell (the control baselines, ``condition = control`` with their ``kind`` and level 0, and the
    corrupted cells): ``replies``, pattern words ``k`` of eligible words ``n`` and their ``rate``; ``mean,
    low, high`` = the share of pattern words of the typical reply at the average conversation; ``share_*`` =
    the expected share over replies (comparable with ``rate``); on corrupted cells ``diff_*`` = the typical
    reply's share minus the same model's baseline for the kind, and ``p_positive`` = P(diff > 0)."""
    des = imitation_design(turns)
    lam, sd = _draws(idata, "mu"), _draws(idata, "sigma_obs")
    p = _sigmoid(lam)
    share = np.einsum("g,cgs->cs", _GH_W, _sigmoid(lam[:, None, :] + _GH_X[None, :, None] * sd[None, None, :]))
    cells = des.cells
    base = {(r["model"], r["kind"]): i for i, r in cells[cells["condition"] == "control"].iterrows()}
    nan = {f"diff_{s}": np.nan for s in ("mean", "low", "high")} | {"p_positive": np.nan}
    out = []
    for i, r in cells.iterrows():
        row = {"model": r["model"], "condition": r["condition"], "kind": r["kind"], "level": r["level"],
               "replies": int(r["replies"]), "n": int(r["n"]), "k": int(r["k"]), "rate": r["k"] / r["n"],
               **_summary(p[i]), **_summary(share[i], "share_")}
        if r["condition"] == "corrupted":
            d = p[i] - p[base[(r["model"], r["kind"])]]
            row |= {**_summary(d, "diff_"), "p_positive": float((d > 0).mean())}
        else:
            row |= nan
        out.append(row)
    return pd.DataFrame(out)
