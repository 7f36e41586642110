"""Continuous, paired detection: the introspection score, and a best cell chosen on one half of the concepts
and estimated on the other.

The forced-choice detection question is read as P(yes) over yes/no at the answer's first content token; a
threshold at 0.5 throws away the shift in the yes/no log-odds, which can move while the answer stays "no". An
injection can also push a model towards "yes" on any question. So, per model, concept and injected cell (layer
fraction x strength):

- ``detect`` = logit P(yes | detect, concept injected at the cell) - mean logit P(yes | detect, no injection);
- ``yes_bias`` = the mean, over the yes-bias (factual yes/no) questions asked under the same concept's injection
  at the same cell, of logit P(yes | injected) - logit P(yes | the same question without injection);
- the *introspection score* ``detect - yes_bias``: how much more the injection raises "yes" to "do you detect an
  injected thought?" than to a factual question.

A Normal model with a mean per cell and a concept effect (PyMC, behind the gate) gives each cell's mean score
with an interval. Selection is honest: the concepts are split in two by a seeded permutation (fixed by the run's
seed); the cell with the highest mean score on the first half is chosen, and its score is estimated from a fit to
the second half alone, which took no part in choosing it. The scores carry no verdict word: their false-positive
rates have not been simulated.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

import analysis.bayes as B
from analysis.injection.design import CELL

#: probabilities are kept this far from 0 and 1 before their log-odds are taken
CLIP = 1e-6
SEED_OFFSET = 70
#: the fewest concepts the score is estimated from (half of them choose the cell, half estimate it)
MIN_CONCEPTS = 6
#: a detection answer with more than this share of its first-token mass on neither yes nor no
OUTSIDE = 0.99


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), CLIP, 1 - CLIP)
    return np.log(p / (1 - p))


def paired_scores(detection: pd.DataFrame) -> pd.DataFrame:
    """One row per model x concept x injected cell (``concept`` condition): ``detect``, ``yes_bias`` (with the
    number of yes-bias questions paired, ``n_yes_bias``) and ``score = detect - yes_bias``, in log-odds, and the
    detection trial's mass on neither yes nor no (``p_outside``). A concept and cell with no yes-bias question is
    left out."""
    d = detection.assign(logit=_logit(detection["p_yes"]))
    out = []
    for model, g in d.groupby("model", sort=True):
        det, yb = g[g["question"] == "detect"], g[g["question"] == "yes_bias"]
        base_detect = det.loc[det["condition"] == "control", "logit"].mean()
        yb_control = yb[yb["condition"] == "control"].set_index("question_id")["logit"]
        inj = det[det["condition"] == "concept"]
        yb_inj = yb[yb["condition"] == "concept"]
        yb_inj = yb_inj.assign(shift=yb_inj["logit"].to_numpy(float)
                               - yb_inj["question_id"].map(yb_control).to_numpy(float))
        for (concept, *cell), rows in inj.groupby(["concept", *CELL], sort=True):
            same = yb_inj[(yb_inj["concept"] == concept) & np.isclose(yb_inj["layer_fraction"], cell[0])
                          & np.isclose(yb_inj["strength"], cell[1])]["shift"].dropna()
            if same.empty or np.isnan(base_detect):
                continue
            detect = float(rows["logit"].mean() - base_detect)
            out.append({"model": model, "concept": concept, "layer_fraction": cell[0], "strength": cell[1],
                        "detect": detect, "yes_bias": float(same.mean()), "n_yes_bias": int(len(same)),
                        "score": detect - float(same.mean()), "p_outside": float(rows["p_outside"].mean())})
    return pd.DataFrame(out, columns=["model", "concept", *CELL, "detect", "yes_bias", "n_yes_bias", "score",
                                      "p_outside"])


def halves(concepts, seed: int) -> tuple[list[str], list[str]]:
    """The concepts split in two by a permutation seeded with ``seed``: (choosing half, estimating half)."""
    order = sorted(set(concepts))
    perm = np.random.default_rng(seed).permutation(len(order))
    cut = len(order) // 2
    return sorted(order[i] for i in perm[:cut]), sorted(order[i] for i in perm[cut:])


def score_model(scores: pd.DataFrame):
    """score[c, cell] ~ Normal(mu[cell] + u[c], sigma), mu ~ Normal(0, 2.5), u ~ Normal(0, tau) (non-centred),
    tau ~ HalfNormal(1), sigma ~ HalfNormal(2)."""
    import pymc as pm

    cells = sorted(set(zip(scores["layer_fraction"], scores["strength"])))
    concepts = sorted(scores["concept"].unique())
    ci = np.array([cells.index((a, b)) for a, b in zip(scores["layer_fraction"], scores["strength"])])
    ki = np.array([concepts.index(c) for c in scores["concept"]])
    coords = {"cell": [f"{a:g}/{b:g}" for a, b in cells], "concept": concepts}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, 2.5, dims="cell")
        tau = pm.HalfNormal("tau", 1.0)
        u = pm.Deterministic("u", tau * pm.Normal("u_z", 0.0, 1.0, dims="concept"), dims="concept")
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("score", mu[ci] + u[ki], sigma, observed=scores["score"].to_numpy())
    return model, cells


def fit_scores(scores: pd.DataFrame, settings: B.SamplerSettings, name: str) -> tuple[pd.DataFrame, dict]:
    """Each cell's mean score with its 94% interval (log-odds) from :func:`score_model`, and the diagnostics."""
    model, cells = score_model(scores)
    idata, diag = B.sample_gated(model, settings, name)
    mu = B.draws(idata, "mu")
    rows = [{"layer_fraction": a, "strength": b, **{f"score_{k}": v for k, v in B.summarise_draws(mu[i], 1.0).items()}}
            for i, (a, b) in enumerate(cells)]
    return pd.DataFrame(rows), diag


def analyse(detection: pd.DataFrame, profile) -> dict:
    """Per model with at least :data:`MIN_CONCEPTS` concepts: the paired scores, every cell's mean score, and the
    split-half best cell. Returns ``{"scores", "cells", "numbers"}`` (a model with fewer concepts has scores but
    no fit, and the manuscript says nothing of it)."""
    scores = paired_scores(detection)
    cell_frames, numbers = [], {}
    settings = B.sampler_settings(profile, SEED_OFFSET, careful=True)
    # a half of the concepts is few for the concept scale (a funnel near tau = 0): one retry at smaller steps
    # still, where a divergence remains at the careful start
    settings = replace(settings, target_accept_retry=max(settings.target_accept_retry or 0.0, 0.995))
    for model, s in scores.groupby("model", sort=True):
        if s["concept"].nunique() < MIN_CONCEPTS:  # too few to split in two and still estimate
            continue
        cells, diag = fit_scores(s, settings, f"{model} introspection score")
        cells.insert(0, "model", model)
        cell_frames.append(cells)
        choose, estimate = halves(s["concept"], profile.seed)
        raw = s[s["concept"].isin(choose)].groupby(CELL)["score"].mean()
        best = raw.idxmax()
        held = s[s["concept"].isin(estimate)]
        held_cells, held_diag = fit_scores(held, settings, f"{model} introspection score, held-out half")
        chosen = held_cells[np.isclose(held_cells["layer_fraction"], best[0])
                            & np.isclose(held_cells["strength"], best[1])].iloc[0]
        numbers[model] = {
            "pairs": int(len(s)), "concepts": int(s["concept"].nunique()), "cells": int(len(cells)),
            "yes_bias_per_pair": float(s["n_yes_bias"].mean()),
            # pairs whose detection answer put almost no mass on yes or no: their normalised P(yes) is near noise
            "pairs_outside_99": int((s["p_outside"] > OUTSIDE).sum()), "clip": CLIP,
            "cells_low_above_0": int((cells["score_low"] > 0).sum()),
            "cells_high_below_0": int((cells["score_high"] < 0).sum()),
            "split": {"choose": choose, "estimate": estimate, "seed": int(profile.seed)},
            "best": {"layer_fraction": float(best[0]), "strength": float(best[1]),
                     "choosing_half_mean": float(raw.max()),
                     "held_out": {k: float(chosen[f"score_{k}"]) for k in ("mean", "low", "high")}},
            "diagnostics": diag, "held_out_diagnostics": held_diag}
    cells = pd.concat(cell_frames, ignore_index=True) if cell_frames else pd.DataFrame()
    return {"scores": scores, "cells": cells, "numbers": numbers}
