"""The mirror test's surprise model: how much less probable an altered earlier reply is than the clean one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from analysis.bayes import category_codes as _codes
from analysis.bayes import draws as _draws
from analysis.mirror.design import (CELL, MEAN_SD, _cells, _conversation_codes, _conversation_effects, _label, _summary,
                     _zero_sum_effect, check_table)

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class SurpriseDesign:
    """The coding of :func:`surprise_model`: the model cells (corrupted and other; with rows ``n`` and the
    raw mean surprise), the scripts, the scored replies (model, script, turn: the clean reply every altered
    version of it is compared with) with each reply's script and model, and the surprises on one grid per
    model of its cells by its replies: ``blocks`` holds each model's (cells, replies) positions, ``y`` the
    grids raveled one after another, divided by ``scale`` (the standard deviation of the surprises; 0 stays
    0), and ``mask`` 1 where a row was observed, 0 where not (such entries add nothing to the likelihood)."""

    cells: pd.DataFrame
    scripts: list[str]
    model_scripts: list[str]
    pair_model: np.ndarray
    pair_script: np.ndarray
    replies: list[str]
    reply_pair: np.ndarray  # the (model, script) pair of each reply
    blocks: list[tuple[np.ndarray, np.ndarray]]
    y: np.ndarray
    mask: np.ndarray
    scale: float
    dropped: int  # rows without a surprise (no clean reference to compare with)


def unchanged_reply(rows: pd.DataFrame) -> pd.Series:
    """Per row of a (checked) surprise table: a corrupted reply whose text the corruption did not change
    (``changed == 0``: ``round(level * eligible)`` came to no word, as for a short reply at a low level or one
    without a ``g`` under insertion). It is the clean reply itself, so its score says nothing about how the model
    reads its reply altered; yet it need not score as the clean one (the history before it can be altered, and
    the same text scored in another batch moves by float rounding), so it is recognised by the corruption's
    count of changed words, not by its score."""
    return (rows["condition"] == "corrupted") & (rows["changed"] == 0)


def surprise_design(surprise: pd.DataFrame) -> SurpriseDesign:
    rows = check_table(surprise, "surprise")
    rows = rows[rows["condition"] != "control"]
    # corrupted replies that the corruption left as they were are no altered replies (:func:`unchanged_reply`);
    # kept, a pile of near-zero surprises would also collapse a cell's noise scale
    rows = rows[~unchanged_reply(rows)]
    finite = np.isfinite(rows["surprise"].to_numpy(dtype=float))
    dropped = int((~finite).sum())
    rows = rows[finite]
    if rows.empty:
        raise DataError("the mirror surprise table has no corrupted or other rows with a surprise value: run the "
                        "mirror stage with corrupted levels (or other_model)")
    cells, cell = _cells(rows)
    y = rows["surprise"].to_numpy(dtype=float)
    cells["n"] = np.bincount(cell, minlength=len(cells))
    cells["raw_mean"] = np.bincount(cell, weights=y, minlength=len(cells)) / cells["n"]
    scripts, models = sorted(rows["script_id"].unique()), sorted(rows["model"].unique())
    frame = pd.DataFrame({"model": rows["model"].to_numpy(), "script": rows["script_id"].to_numpy(),
                          "turn": rows["turn"].to_numpy()}).drop_duplicates().sort_values(["model", "script", "turn"])
    replies = [f"{m}|{s}|{t}" for m, s, t in frame.itertuples(index=False)]
    _, pairs, _, pair_model, pair_script = _conversation_codes(rows)
    reply_pair = _codes(frame["model"] + "|" + frame["script"], pairs)
    reply_model = pair_model[reply_pair]
    rid = (rows["model"] + "|" + rows["script_id"] + "|" + rows["turn"].astype(str)).to_numpy()
    reply = _codes(pd.Series(rid), replies)
    if (pd.DataFrame({"c": cell, "r": reply}).duplicated()).any():
        raise DataError("the mirror surprise table has more than one row for a (model, condition, kind, level, "
                        "script_id, turn): each altered reply is scored once; drop the duplicates")
    scale = float(y.std()) or 1.0
    grid = np.zeros((len(cells), len(replies)))
    seen = np.zeros((len(cells), len(replies)))
    grid[cell, reply], seen[cell, reply] = y / scale, 1.0
    cell_model = _codes(cells["model"], models)
    blocks = [(np.flatnonzero(cell_model == j), np.flatnonzero(reply_model == j)) for j in range(len(models))]
    return SurpriseDesign(cells, scripts, pairs, pair_model, pair_script, replies, reply_pair, blocks,
                          np.concatenate([grid[np.ix_(c, r)].ravel() for c, r in blocks]),
                          np.concatenate([seen[np.ix_(c, r)].ravel() for c, r in blocks]), scale, dropped)


def _student_t(name: str, y: np.ndarray, mask: np.ndarray, loc, log_sigma, nu):
    """``y ~ StudentT(nu, loc, exp(log_sigma))`` at the entries where ``mask`` is 1 (the others add 0), observed,
    with ``loc`` and ``log_sigma`` given per entry; written out so that the log-gamma terms of ``nu`` are
    computed once, not once per entry."""
    import pymc as pm
    import pytensor.tensor as pt

    def logp(value, mask, loc, log_sigma, nu):
        const = pt.gammaln((nu + 1.0) / 2.0) - pt.gammaln(nu / 2.0) - 0.5 * pt.log(np.pi * nu)
        r = (value - loc) * pt.exp(-log_sigma)
        return mask * (const - log_sigma - (nu + 1.0) / 2.0 * pt.log1p(r * r / nu))

    return pm.CustomDist(name, mask, loc, log_sigma, nu, logp=logp, observed=y)


#: the surprise model's intercepts are centred from this many conversations on; with fewer (the ``default``
#: profile's 6), few replies pin each intercept down and the centred form is a funnel (the sampler failed the
#: gate with r_hat 4.4 on the model x script effect), so they are non-centred there
CENTRED_MIN_SCRIPTS = 20


def surprise_model(surprise: pd.DataFrame) -> pm.Model:
    """Surprise: how much less probable an altered earlier reply is to the model than its own clean reply, in
    nats per token. A hierarchical Student-t regression of ``surprise = logprob_clean - logprob`` (each the
    mean log-probability per token of the reply given the history before it) over the corrupted and other
    rows of every model, jointly; divided by its standard deviation ``c`` over these rows::

        surprise_i / c ~ StudentT(nu, theta[m_i, c_i] + u[s_i] + w[m_i, s_i] + v[m_i, s_i, t_i], sigma[m_i, c_i])
        u = B_s a_s,  w = B_ms a_ms,  v = B_r a_r       (zero-sum, as in noticing_model; v: over the turns
                                                         of each (model, script))
        a_s ~ Normal(0, sigma_script),  a_ms ~ Normal(0, sigma_ms),  a_r ~ Normal(0, sigma_reply)
        log sigma[m, c] = lambda[m] + tau z[m, c],  lambda ~ Normal(0, 1),  tau ~ HalfNormal(0.5),  z ~ Normal(0, 1)
        theta ~ Normal(0, 1);  sigma_script, sigma_ms, sigma_reply ~ HalfNormal(1);  nu ~ Gamma(2, 0.1)

    ``c`` = cell (other, or a corrupted (kind, level)), ``s`` = script, ``t`` = the assistant turn scored.
    Every altered version of one clean reply is compared with the same ``logprob_clean``, so the rows of one
    (model, script, turn) share that reference's noise: the reply intercept ``v`` carries it; ``u`` and ``w``
    are the conversation effects of :func:`noticing_model` (what a script does to both models, and to one).
    The intercepts are *centred* (``a ~ Normal(0, sigma)``, not ``sigma * z``) from
    :data:`CENTRED_MIN_SCRIPTS` conversations on: each reply is scored in every cell, so the data pin every
    intercept down, where the centred form samples well (the non-centred one left the script scale near the
    ESS gate); with fewer conversations they are non-centred. The noise scale is per model cell
    (heavier corruption varies more), partially pooled within each model (a cell with few changed replies,
    such as insertion at a low level, borrows strength; with independent HalfNormal scales the ``default``
    profile's 8 conversations left that cell's scale just under the ESS gate), and the Student-t likelihood keeps a few replies whose score jumps (a
    corrupted word that the tokenizer splits badly) from moving the means. Control rows (surprise 0 by
    construction) are not modelled; corrupted replies whose text the corruption did not change
    (:func:`unchanged_reply`) and rows without a surprise (no clean reference) are left out. Quantity
    (:func:`surprise_summary`): ``c * theta`` per model cell, the mean surprise at the average conversation
    and reply, in nats per token: standardised to all the model's scored replies, including those a cell has
    no row for (replies insertion could not alter, having no ``g``), so it can differ from the cell's raw mean
    over the replies it did alter."""
    import pymc as pm
    import pytensor.tensor as pt

    des = surprise_design(surprise)
    coords = {"cell": [_label(r) for _, r in des.cells.iterrows()], "script": des.scripts,
              "model_script": des.model_scripts, "reply": des.replies}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("mu", 0.0, MEAN_SD, dims="cell")
        # noise scales partially pooled within a model: a cell with few changed replies (insertion at a low
        # level) borrows from the model's other cells instead of leaving its scale to the prior alone
        cell_model = _codes(des.cells["model"], sorted(des.cells["model"].unique()))
        log_sigma_model = pm.Normal("log_sigma_model", 0.0, 1.0, shape=int(cell_model.max()) + 1)
        tau_sigma = pm.HalfNormal("tau_sigma", 0.5)
        z_sigma = pm.Normal("z_sigma", 0.0, 1.0, dims="cell")
        log_sigma = log_sigma_model[cell_model] + tau_sigma * z_sigma
        pm.Deterministic("sigma_y", pt.exp(log_sigma), dims="cell")
        nu = pm.Gamma("nu", 2.0, 0.1)
        centred = len(des.scripts) >= CENTRED_MIN_SCRIPTS
        conv = _conversation_effects(des.pair_model, des.pair_script, centred=centred)
        reply = conv[des.reply_pair] + _zero_sum_effect("reply", "reply", [des.reply_pair], centred=centred)
        loc = pt.concatenate([(theta[c][:, None] + reply[r][None, :]).ravel() for c, r in des.blocks])
        ls = pt.concatenate([pt.repeat(log_sigma[c], len(r)) for c, r in des.blocks])
        _student_t("y", des.y, des.mask, loc, ls, nu)
    return model


def surprise_summary(idata: az.InferenceData, surprise: pd.DataFrame) -> pd.DataFrame:
    """Per model cell: ``n`` rows, ``raw_mean`` (the mean surprise), and the posterior mean surprise at the
    average conversation and reply, ``mean, low, high`` (nats per token), with ``p_positive`` (P(the altered
    text is less probable than the clean one))."""
    des = surprise_design(surprise)
    d = des.scale * _draws(idata, "mu")
    out = [{**{c: r[c] for c in ["model", *CELL]}, "n": int(r["n"]), "raw_mean": r["raw_mean"], **_summary(d[i]),
            "p_positive": float((d[i] > 0).mean())} for i, r in des.cells.iterrows()]
    return pd.DataFrame(out)
