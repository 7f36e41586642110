"""Intentional control of an internal representation: the intention model and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from analysis.injection.design import SCALE_SD, check_table
from analysis.bayes import category_codes as _codes
from analysis.injection.likelihood import _summary, simultaneous_band
from analysis.bayes import draws as _draws

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm


@dataclass
class IntentionDesign:
    layers: pd.DataFrame  # layer, layer_fraction, n (sentences)
    sentences: list[str]
    layer: np.ndarray
    sentence: np.ndarray
    y: np.ndarray  # paired difference think - dont_think, divided by scale
    scale: float


def intention_design(rows: pd.DataFrame) -> IntentionDesign:
    """The coding of :func:`intention_model` for one model's rows: one paired difference per sentence and layer,
    ``cosine(think) - cosine(dont_think)`` (the same sentence, word and layer under both instructions), divided
    by the differences' standard deviation so that the priors are on a known scale (0 stays 0)."""
    rows = check_table(rows, "intention")
    if rows["model"].nunique() > 1:
        raise DataError("intention_model fits one model's rows at a time: filter the table by `model` first")
    if rows["instruction"].nunique() < 2:
        raise DataError("the intention table needs both instructions, think and dont_think")
    wide = rows.assign(sentence_id=rows["sentence_id"].astype(str)).pivot_table(
        index=["sentence_id", "layer", "layer_fraction"], columns="instruction", values="cosine", aggfunc="mean")
    wide = wide.dropna().reset_index()
    if wide.empty:
        raise DataError("the intention table has no (sentence, layer) seen under both instructions")
    d = (wide["think"] - wide["dont_think"]).to_numpy(dtype=float)
    layers = wide.groupby("layer", sort=True).agg(layer_fraction=("layer_fraction", "first"),
                                                  n=("think", "size")).reset_index()
    sentences = sorted(wide["sentence_id"].unique())
    scale = float(d.std()) or 1.0
    return IntentionDesign(layers, sentences, _codes(wide["layer"], list(layers["layer"])),
                           _codes(wide["sentence_id"], sentences), d / scale, scale)


def intention_model(rows: pd.DataFrame) -> pm.Model:
    """Intentional control: does the instruction "think about {word}" (against "do not think about {word}")
    move the residual stream, while the model writes a sentence, toward the word's concept vector? On the
    paired difference ``d[s, l] = cosine(think) - cosine(dont_think)`` of sentence ``s`` at layer ``l`` (the
    same sentence, word and layer under both instructions; divided by its standard deviation ``c``)::

        d[s, l] / c ~ StudentT(nu, delta[l] + tau * u[s], sigma[l])
        delta ~ Normal(0, 1);  tau, sigma ~ HalfNormal(1);  u ~ Normal(0, 1);  nu ~ Gamma(2, 0.1)

    Pairing removes everything the two instructions share: which word's vector the cosine is taken with
    (the cosine itself varies across words and layers far more than the instruction moves it), the sentence
    and the layer. ``delta[l]`` is the population-level difference at layer ``l``; each sentence's own shift
    ``tau * u[s]`` is shared by its layers, so the layers of one sentence are not counted as independent
    replicates; the noise scale ``sigma[l]`` is per layer (differences are much smaller in early layers); the
    Student-t likelihood keeps a few outlying sentences from moving the means. Quantity
    (:func:`intention_summary`): ``c * delta[l]`` per layer, in cosine units."""
    import pymc as pm

    des = intention_design(rows)
    coords = {"layer": [int(v) for v in des.layers["layer"]], "sentence": des.sentences}
    with pm.Model(coords=coords) as model:
        delta = pm.Normal("delta", 0.0, 1.0, dims="layer")
        tau = pm.HalfNormal("tau_sentence", SCALE_SD)
        u = pm.Normal("u_sentence", 0.0, 1.0, dims="sentence")
        sigma = pm.HalfNormal("sigma_y", SCALE_SD, dims="layer")
        nu = pm.Gamma("nu", 2.0, 0.1)
        pm.StudentT("y", nu=nu, mu=delta[des.layer] + tau * u[des.sentence], sigma=sigma[des.layer], observed=des.y)
    return model


def intention_summary(idata: az.InferenceData, rows: pd.DataFrame) -> pd.DataFrame:
    """Per layer: ``layer_fraction``, ``n`` (sentences), the raw mean cosines ``raw_think, raw_dont_think`` and
    their difference ``raw_diff`` (also as ``think_mean, dont_think_mean``), and the posterior think -
    don't-think difference (cosine units) as ``mean, low, high``, its simultaneous 95% band over the layers
    ``sim_low, sim_high`` (the interval of a layer chosen among them), ``p_positive``, and ``obs_*`` (including the
    observed sentences' average shift)."""
    des = intention_design(rows)
    delta = _draws(idata, "delta")  # (layer, samples)
    shift = (_draws(idata, "tau_sentence")[None, :] * _draws(idata, "u_sentence")).mean(axis=0)
    diff = des.scale * delta
    raw = rows.assign(y=rows["cosine"].astype(float)).pivot_table(index="layer", columns="instruction", values="y",
                                                                   aggfunc="mean")
    sim_low, sim_high = simultaneous_band(diff)  # a layer chosen among them keeps the band's coverage
    out = []
    for j, r in des.layers.iterrows():
        rt, rd = raw.loc[r["layer"], "think"], raw.loc[r["layer"], "dont_think"]
        out.append({"layer": int(r["layer"]), "layer_fraction": r["layer_fraction"], "n": int(r["n"]),
                    "raw_think": rt, "raw_dont_think": rd, "raw_diff": rt - rd, "think_mean": rt, "dont_think_mean": rd,
                    **_summary(diff[j]), "sim_low": float(sim_low[j]), "sim_high": float(sim_high[j]),
                    "p_positive": float((diff[j] > 0).mean()),
                    **_summary(diff[j] + des.scale * shift, "obs_")})
    return pd.DataFrame(out)
