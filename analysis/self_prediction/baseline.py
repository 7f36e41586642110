"""The mode baseline as an arm of the model: self-prediction, cross-prediction and the mode baseline in one
hierarchical logistic regression, so that self - mode, cross - mode and self - cross come with joint
uncertainty, per cell and pooled.

The *mode arm* is the baseline the paper compares with: always guessing the most common value of the
property among the answers of the behaviour being predicted (M1', per target x task x property). Its
observations are ``mode_correct``, one per answer unit and property, the same units the predictors are
scored on. Its accuracy is the share of the mode in the cell: the model treats it as a random quantity like
the predictors' accuracies, so a cell with few items carries the uncertainty of its baseline.

The log-odds of a correct guess by arm ``r`` on target ``t``'s answer unit ``u`` (cell ``c``, task, property)::

    alpha + f_t + sum_g a_g + u_u + C[r] . (B_t + sum_g b_g)

* ``C`` (:data:`ARM_CODING`) codes the three arms summing to zero, scaled so that the difference between
  any two arms is one unit: every pairwise difference has the same prior, and equal to the prior of the
  self - cross contrast in :data:`analysis.self_prediction.hierarchical.ADVANTAGE_PRIORS` (``beta`` for the fixed differences,
  ``tau`` for the random ones);
* ``B_t``: fixed arm effects per target (two free parameters per target);
* per grouping factor ``g`` (task, property, cell [, object model]): random intercepts ``a_g`` and random arm
  effects ``b_g`` (two per level), scales ``sigma_g`` and ``tau_g``;
* ``u_u``: an intercept per answer unit shared by the three arms (the self- and cross-predictor are scored
  on the same answers, and the mode is right on the same answers whatever predicts them).

Derived per posterior draw on the observed design (each unit x property once): the accuracy of each arm,
the three differences in points and the normalised lift ``(acc - base) / (1 - base)`` of each predictor arm
over the mode arm, overall and per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

import analysis.self_prediction.hierarchical as M

ARMS = ("self", "cross", "mode")
#: rows: arms (self, cross, mode); columns: the two free arm parameters. Orthonormal sum-to-zero contrasts
#: divided by sqrt(2): each row difference has unit length
ARM_CODING = np.array([[0.5, 0.5 / np.sqrt(3)], [-0.5, 0.5 / np.sqrt(3)], [0.0, -1.0 / np.sqrt(3)]])
#: the comparisons reported: (name, arm, reference arm)
COMPARISONS = (("self_minus_mode", "self", "mode"), ("cross_minus_mode", "cross", "mode"),
               ("self_minus_cross", "self", "cross"))


@dataclass
class ArmsData:
    """Binomial cells (``k`` of ``n``) per distinct (groups, target, unit, arm)."""

    cells: pd.DataFrame
    groups: list[str]
    unit: str
    priors: M.Priors = M.ADVANTAGE_PRIORS


def arms_data(trained: pd.DataFrame, groups: list[str], unit: str = "unit") -> ArmsData:
    """The cells of :func:`arms_model` from Experiment 1's trained predictions (:func:`analysis.self_prediction.tidy.predictions`,
    one row per predictor x object model x item x property): the predictors' rows as arms ``self`` and
    ``cross`` (with three or more models the cross-predictors of a target are pooled into one arm), and one
    ``mode`` row per object model x item x property with ``mode_correct`` as its outcome."""
    missing = {"self", "correct", "mode_correct", "target", unit, *groups} - set(trained.columns)
    if missing:
        raise ValueError(f"the arms model needs the columns {sorted(missing)} of the predictions table")
    pred = trained.assign(arm=np.where(trained["self"] == 1, "self", "cross"), y=trained["correct"].astype(int))
    key = [c for c in ("object_model", "task", "item_id", "property") if c in trained] or [unit, "property"]
    mode = trained.drop_duplicates(key).assign(arm="mode", y=lambda d: d["mode_correct"].astype(int))
    rows = pd.concat([pred, mode], ignore_index=True)
    keys = groups + ["target", unit, "arm"]
    cells = rows.groupby(keys, sort=True, observed=True)["y"].agg(k="sum", n="size").reset_index()
    return ArmsData(cells, list(groups), unit)


def _design(frame: pd.DataFrame, data: ArmsData, coords: dict) -> tuple[np.ndarray, np.ndarray]:
    """The linear predictor without the unit intercepts as a dense design over the distinct (groups, target,
    arm) combinations of ``frame`` (the same device as :func:`analysis.self_prediction.hierarchical._design_matrix`): columns
    ``alpha, f (targets but the first), B (target x 2), a (levels), b (levels x 2)``, and the combination of
    every row."""
    factors = [*data.groups, "target", "arm"]
    codes = [pd.Categorical(frame[g], categories=coords[g]).codes for g in factors]
    combo, uniq = pd.factorize(pd.MultiIndex.from_arrays(codes), sort=True)
    lv = np.array(list(uniq), dtype=int).reshape(len(uniq), len(factors))
    arm = ARM_CODING[lv[:, -1]]
    t = np.eye(len(coords["target"]))[lv[:, -2]]
    hots = [np.eye(len(coords[g]))[lv[:, j]] for j, g in enumerate(data.groups)]
    a = np.concatenate(hots, axis=1)
    X = np.concatenate([np.ones((len(uniq), 1)), t[:, 1:], (t[:, :, None] * arm[:, None, :]).reshape(len(uniq), -1),
                        a, (a[:, :, None] * arm[:, None, :]).reshape(len(uniq), -1)], axis=1)
    return X, combo


def _coords(data: ArmsData) -> dict:
    c = data.cells
    coords = {g: sorted(c[g].unique()) for g in data.groups}
    coords.update(target=sorted(c["target"].unique()), arm=list(ARMS), unit=sorted(c[data.unit].unique()),
                  arm_contrast=["self-cross", "predictors-mode"],
                  factor=list(data.groups), level=[f"{g}={v}" for g in data.groups for v in coords[g]])
    return coords


def arms_model(data: ArmsData):
    """The three-arm model of the module docstring, with ``data.priors`` (:data:`analysis.self_prediction.hierarchical.ADVANTAGE_PRIORS`
    by default: ``alpha``, ``fixed`` for the target effects, ``beta`` for the fixed arm effects, ``sigma`` and
    ``tau`` for the random ones, ``unit``)."""
    import pymc as pm
    import pytensor.tensor as pt

    c, p = data.cells, data.priors
    coords = _coords(data)
    owner = np.repeat(np.arange(len(data.groups)), [len(coords[g]) for g in data.groups])
    bounds = np.cumsum([0] + [len(coords[g]) for g in data.groups])
    with pm.Model(coords={**coords, "target_free": coords["target"][1:]}) as model:
        alpha = pm.Normal("alpha", 0.0, p.alpha)
        f = pm.Normal("f", 0.0, p.fixed, dims="target_free")
        pm.Deterministic("f_target", pt.concatenate([pt.zeros(1), f]), dims="target")
        B = pm.Normal("beta_arm", 0.0, p.beta, dims=("target", "arm_contrast"))
        sigma = pm.HalfNormal("sigma", p.sigma, dims="factor")
        tau = pm.HalfNormal("tau", p.tau, dims="factor")
        a = sigma[owner] * pm.Normal("z", 0.0, 1.0, dims="level")
        b = tau[owner][:, None] * pm.Normal("w", 0.0, 1.0, dims=("level", "arm_contrast"))
        for j, g in enumerate(data.groups):
            pm.Deterministic(f"a_{g}", a[bounds[j]:bounds[j + 1]], dims=g)
            pm.Deterministic(f"b_{g}", b[bounds[j]:bounds[j + 1]], dims=(g, "arm_contrast"))
        X, combo = _design(c, data, coords)
        eta = pt.dot(X, pt.concatenate([pt.stack([alpha]), f, B.flatten(), a, b.flatten()]))[combo]
        idx = pd.Categorical(c[data.unit], categories=coords["unit"]).codes
        eta = eta + pm.HalfNormal("sigma_unit", p.unit) * pm.Normal("z_unit", 0.0, 1.0, dims="unit")[idx]
        M._binomial_logit("y", c["n"].to_numpy(), eta, c["k"].to_numpy())
    return model


def arm_probabilities(idata, data: ArmsData) -> tuple[dict[str, np.ndarray], pd.DataFrame]:
    """P(correct) of each arm on every design row (groups, target, unit: one answer unit x property):
    ``{arm: (rows, samples)}``, and the design with ``n`` = 1 per row (each unit x property counts once)."""
    design = (data.cells[data.cells["arm"] == "mode"][data.groups + ["target", data.unit]]
              .drop_duplicates().reset_index(drop=True).assign(n=1))
    base = M._draws(idata, "alpha") + M._level_draws(idata, "f_target", "target", design["target"])
    arm_eff = M._level_draws(idata, "beta_arm", "target", design["target"])  # (rows, 2, samples)
    for g in data.groups:
        base = base + M._level_draws(idata, f"a_{g}", g, design[g])
        arm_eff = arm_eff + M._level_draws(idata, f"b_{g}", g, design[g])
    base = base + M._level_draws(idata, "z_unit", "unit", design[data.unit]) * M._draws(idata, "sigma_unit")
    probs = {r: M._sigmoid(base + np.einsum("c,ncs->ns", ARM_CODING[i], arm_eff)) for i, r in enumerate(ARMS)}
    return probs, design


def arm_effects(idata, data: ArmsData, by: list[list[str]], rope: float, probs=None) -> pd.DataFrame:
    """Per group (``by``: a list of groupings, ``[]`` for the pooled row): each arm's accuracy, the three
    differences (points, 94% interval, P(> 0), verdict against ``rope``) and each predictor arm's
    normalised lift over the mode arm (percent of the headroom ``1 - base``), from the same draws."""
    from analysis.verdicts import verdict

    probs, design = probs or arm_probabilities(idata, data)
    rows = []
    for grouping in by:
        for key, mask, ww in M._groups(design, grouping):
            acc = {r: ww @ probs[r][mask] for r in ARMS}
            row = {"by": "+".join(grouping) or "overall", **dict(zip(grouping, key)), "n": int(mask.sum())}
            for r in ARMS:
                s = M.summarise_draws(acc[r])
                row.update({f"accuracy_{r}": s["mean"], f"accuracy_{r}_low": s["low"], f"accuracy_{r}_high": s["high"]})
            for name, r, ref in COMPARISONS:
                s = M.summarise_draws(acc[r] - acc[ref])
                row.update({name: s["mean"], f"{name}_low": s["low"], f"{name}_high": s["high"],
                            f"{name}_p_positive": s["p_positive"], f"{name}_verdict": verdict(s["low"], s["high"], rope)})
            for r in ("self", "cross"):
                s = M.summarise_draws((acc[r] - acc["mode"]) / (1 - acc["mode"]))
                row.update({f"lift_{r}": s["mean"], f"lift_{r}_low": s["low"], f"lift_{r}_high": s["high"]})
            rows.append(row)
    return pd.DataFrame(rows)
