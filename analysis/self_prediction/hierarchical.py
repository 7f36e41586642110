"""The Bayesian hierarchical models of experiments 1-3 (PyMC); sampling and the convergence gate are
:mod:`analysis.bayes`.

All models are non-centered. Priors (logit scale unless stated), chosen to be weakly informative for
accuracies between a few percent and ~95%:

* intercept ``alpha ~ Normal(0, 1.5)``; population contrast ``beta ~ Normal(0, 1)`` (a 1-logit shift is
  ~20 accuracy points near 50%);
* random intercepts ``a_g = sigma_g * z`` with ``sigma_g ~ HalfNormal(1)``, random contrast slopes
  ``b_g = tau_g * w`` with ``tau_g ~ HalfNormal(0.5)``, ``z, w ~ Normal(0, 1)``, independent across
  grouping factors (target model, task, property, and in the stage their target x task x property cell);
  intercepts and slopes are uncorrelated;
* an intercept per answer unit (``sigma_unit ~ HalfNormal(1)``) for item-level dependence: one target
  answers; the advantage model adds one per answer unit x arm (``sigma_pair``, one scale per arm), and has
  its own scales (:data:`analysis.self_prediction.priors.ADVANTAGE_PRIORS`).

Derived quantities are *average marginal effects* in accuracy points: for every posterior draw, the mean
over the observed design (cells weighted by their trials) of ``P(correct | contrast = 1) - P(correct |
contrast = 0)``. Intervals are equal-tailed 94% posterior intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from analysis.bayes import (ConvergenceError, SamplerSettings, binomial_logit as _binomial_logit,  # noqa: F401
                            check_convergence, diagnostics, draws as _draws, free_variables,
                            level_draws as _level_draws, sample, sample_gated, sigmoid as _sigmoid,
                            summarise_draws)  # (re-exported for the self-prediction modules)
from analysis.constants import (BFMI_MIN, ESS_MIN, INTERVAL, PRIOR_CELL_EXTREME, Q_HIGH, Q_LOW,  # noqa: F401
                                RHAT_MAX)  # (re-exported)
from analysis.self_prediction.priors import (ADVANTAGE_PRIORS, VARIANCE_COMPONENTS, Priors,  # noqa: F401 (re-exported)
                                             scale_prior)


# ------------------------------------------------------------------------------- the contrast model
@dataclass
class ContrastData:
    """Binomial cells: ``k`` successes of ``n`` trials, one row per distinct (groups, fixed, unit, x).

    ``fixed``: factors with a fixed effect per level (treatment-coded: the first level is the reference),
    e.g. target and predictor in the advantage model. ``centered``: the contrast enters the linear predictor
    as ``x - 1/2`` (so both arms get the same prior variance), else as ``x``. ``pair``: an intercept per answer
    unit x arm (``sigma_pair``) beside the unit's shared one (the advantage model)."""

    cells: pd.DataFrame
    x: str
    groups: list[str]
    unit: str | None
    fixed: list[str] = field(default_factory=list)
    centered: bool = False
    priors: Priors = Priors()
    slope_by: str | None = None  # a factor whose levels get fixed contrast-slope deviations (sum to zero)
    pair: bool = False


def _fixed_factors(fixed: list[str], slope_by: str | None) -> list[str]:
    """The factors with fixed parameters: the ``fixed`` intercept factors and the slope factor, once each."""
    return [*fixed, *([slope_by] if slope_by and slope_by not in fixed else [])]


def slope_contrasts(levels: int) -> np.ndarray:
    """The coding of fixed slope deviations per level (levels x free parameters), summing to zero over the
    levels: with two levels one parameter, coded +1/2 and -1/2 (so it is the difference between the two
    levels' slopes); with more, effects coding (the last level is minus the sum of the others)."""
    if levels == 2:
        return np.array([[0.5], [-0.5]])
    return np.vstack([np.eye(levels - 1), -np.ones((1, levels - 1))])


def to_cells(rows: pd.DataFrame, x: str, groups: list[str], unit: str | None = None, y: str = "correct",
             aggregate: bool = True, fixed: list[str] | None = None, centered: bool = False,
             priors: Priors = Priors(), slope_by: str | None = None, keep: list[str] | None = None,
             pair: bool = False) -> ContrastData:
    """Aggregate 0/1 observations to binomial counts per distinct linear predictor (``aggregate=False``
    keeps one Bernoulli cell per observation: the same model, slower; for the benchmark). ``keep``: columns
    carried into the cells that the linear predictor does not use (each a function of the other keys)."""
    fixed = list(fixed or [])
    keys = groups + _fixed_factors(fixed, slope_by) + ([unit] if unit else []) + [x]
    keys += [k for k in (keep or []) if k not in keys]  # carried along (a function of the other keys)
    if not aggregate:
        cells = rows[keys].assign(k=rows[y].astype(int).to_numpy(), n=1).reset_index(drop=True)
    else:
        cells = rows.groupby(keys, sort=True, observed=True)[y].agg(k="sum", n="size").reset_index()
    if pair and not unit:
        raise ValueError("an answer unit x arm intercept (pair) needs answer units")
    return ContrastData(cells, x, groups, unit, fixed, centered, priors, slope_by, pair)


def _coords(frame: pd.DataFrame, groups: list[str], unit: str | None, fixed: list[str] = ()) -> dict[str, list]:
    coords = {g: sorted(frame[g].unique()) for g in [*groups, *fixed]}
    if unit:
        coords["unit"] = sorted(frame[unit].unique())
    return coords


def _fixed_levels(fixed: list[str], coords: dict) -> list[str]:
    """The free fixed-effect parameters: every level of every fixed factor but its first (the reference)."""
    return [f"{f}={v}" for f in fixed for v in coords[f][1:]]


def _design_matrix(frame: pd.DataFrame, x: str, groups: list[str], coords: dict, fixed: list[str] = (),
                   centered: bool = False, slope_by: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-plus-random-effects part of the linear predictor as a dense design over the *distinct*
    (groups, fixed, x) combinations of ``frame``: ``X`` (combinations x parameters), with columns in the
    order ``alpha, beta, a_<g>..., b_<g>..., f_<fixed>...`` (levels in ``coords`` order; the fixed factors'
    reference levels have no column), and the combination of every row. The contrast column is ``x - 1/2``
    when ``centered``.

    Why: the same ``eta`` written as one gather per grouping factor (``a_g[idx] + b_g[idx] * x``) costs a
    scatter-add per factor in the gradient, over thousands of rows into a handful of levels, which is slow
    on a CPU; a small matrix product on the few distinct combinations followed by one gather is not."""
    factors = [*groups, *_fixed_factors(fixed, slope_by)]
    xs = frame[x].to_numpy(dtype=float)
    codes = [pd.Categorical(frame[g], categories=coords[g]).codes for g in factors]
    combo, uniq = pd.factorize(pd.MultiIndex.from_arrays(codes + [xs]), sort=True)
    levels = np.array(list(uniq), dtype=float).reshape(len(uniq), len(factors) + 1)
    cx = levels[:, -1] - (0.5 if centered else 0.0)
    blocks = [np.ones((len(uniq), 1)), cx[:, None]]
    onehots = [np.eye(len(coords[g]))[levels[:, j].astype(int)] for j, g in enumerate(groups)]
    fixed_hots = [np.eye(len(coords[f]))[levels[:, len(groups) + j].astype(int)][:, 1:] for j, f in enumerate(fixed)]
    slope_cols = []
    if slope_by:
        C = slope_contrasts(len(coords[slope_by]))
        slope_cols = [C[levels[:, factors.index(slope_by)].astype(int)] * cx[:, None]]
    X = np.concatenate(blocks + onehots + [h * cx[:, None] for h in onehots] + fixed_hots + slope_cols, axis=1)
    return X, combo


def _linear_predictor(frame: pd.DataFrame, x: str, groups: list[str], unit: str | None, coords: dict,
                      fixed: list[str] = (), centered: bool = False, priors: Priors = Priors(),
                      slope_by: str | None = None, pair: bool = False):
    """``alpha + beta * x`` plus, per grouping factor, a random intercept and a random ``x`` slope, an
    intercept per unit (and with ``pair`` one per unit and level of ``x``, :func:`_pair_index`), and a fixed effect per non-reference level of each ``fixed`` factor (``f``, with
    ``f_<factor>`` deterministics that hold 0 for the reference); created inside the caller's model, with
    ``priors`` (the defaults are the scales of the module docstring).

    The scales of all factors are one vector each (``sigma``, ``tau`` over ``factor``) and the standardised
    effects of all their levels too (``z``, ``w`` over ``level``); ``a_<g> = sigma[g] * z[levels of g]`` and
    ``b_<g>`` are kept as deterministics. The same independent priors as one variable per factor, but NUTS
    on a CPU pays a fixed cost per array and per operation of the log density at every leapfrog step (it
    grew about 3 us per extra array in a benchmark), which for these small models was most of the time.
    ``eta`` is computed through :func:`_design_matrix` for the same reason."""
    import pymc as pm
    import pytensor.tensor as pt

    model = pm.modelcontext(None)
    model.add_coord("factor", groups)
    model.add_coord("level", [f"{g}={v}" for g in groups for v in coords[g]])
    owner = np.repeat(np.arange(len(groups)), [len(coords[g]) for g in groups])
    bounds = np.cumsum([0] + [len(coords[g]) for g in groups])
    alpha, beta = pm.Normal("alpha", 0.0, priors.alpha), pm.Normal("beta", 0.0, priors.beta)
    sigma = scale_prior("sigma", priors.sigma, priors.nu, dims="factor")
    tau = scale_prior("tau", priors.tau, priors.nu, dims="factor")
    a = sigma[owner] * pm.Normal("z", 0.0, 1.0, dims="level")
    b = tau[owner] * pm.Normal("w", 0.0, 1.0, dims="level")
    for j, g in enumerate(groups):
        pm.Deterministic(f"a_{g}", a[bounds[j]:bounds[j + 1]], dims=g)
        pm.Deterministic(f"b_{g}", b[bounds[j]:bounds[j + 1]], dims=g)
    parts = [pt.stack([alpha, beta]), a, b]
    if fixed:
        model.add_coord("fixed_level", _fixed_levels(fixed, coords))
        f = pm.Normal("f", 0.0, priors.fixed, dims="fixed_level")
        parts.append(f)
        start = 0
        for g in fixed:
            m = len(coords[g]) - 1
            pm.Deterministic(f"f_{g}", pt.concatenate([pt.zeros(1), f[start:start + m]]), dims=g)
            start += m
    if slope_by:
        C = slope_contrasts(len(coords[slope_by]))
        model.add_coord("slope_level", [f"{slope_by}:{j}" for j in range(C.shape[1])])
        gamma = pm.Normal("gamma", 0.0, priors.gamma, dims="slope_level")
        parts.append(gamma)
        pm.Deterministic(f"s_{slope_by}", pt.dot(C, gamma), dims=slope_by)
    X, combo = _design_matrix(frame, x, groups, coords, fixed, centered, slope_by)
    eta = pt.dot(X, pt.concatenate(parts))[combo]
    if unit:
        idx = pd.Categorical(frame[unit], categories=coords["unit"]).codes
        sigma_u = scale_prior("sigma_unit", priors.unit, priors.nu)
        eta = eta + sigma_u * pm.Normal("z_unit", 0.0, 1.0, dims="unit")[idx]
        if pair:
            model.add_coord("arm", [0, 1])
            z_pair = pm.Normal("z_pair", 0.0, 1.0, dims=("unit", "arm"))
            arm = frame[x].to_numpy().astype(int)
            eta = eta + (scale_prior("sigma_pair", priors.pair, priors.nu, dims="arm")[None, :] * z_pair)[idx, arm]
    return eta


def _pair_draws(idata, data: ContrastData, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The fitted answer unit x arm intercepts of ``frame``'s units, at ``x = 0`` and ``x = 1``: arrays (rows,
    samples), ``sigma_pair * z_pair``. The advantage model's self and cross predictions of one answer share
    the unit intercept, and each predictor's properties of that answer share one more, its arm's: the data
    show both (the answer-level posterior-predictive check, :func:`analysis.self_prediction.predictive.unit_level_check`)."""
    levels = list(idata.posterior["z_pair"].coords["unit"].to_numpy())
    zz = _draws(idata, "z_pair")[pd.Categorical(frame[data.unit], categories=levels).codes]  # (rows, arm, samples)
    s = _draws(idata, "sigma_pair")  # (arm, samples)
    return zz[:, 0] * s[0], zz[:, 1] * s[1]


def contrast_model(data: ContrastData):
    """Hierarchical logistic regression of accuracy on a 0/1 contrast (self vs cross, trained vs untrained),
    with random intercepts and random contrast slopes for each grouping factor and, when ``data.unit`` is
    set, an intercept per answer unit."""
    import pymc as pm

    c = data.cells
    coords = _coords(c, data.groups, data.unit, _fixed_factors(data.fixed, data.slope_by))
    with pm.Model(coords=coords) as model:
        eta = _linear_predictor(c, data.x, data.groups, data.unit, coords, data.fixed, data.centered, data.priors,
                                data.slope_by, data.pair)
        _binomial_logit("y", c["n"].to_numpy(), eta, c["k"].to_numpy())
    return model


def _linear_draws(idata, data: ContrastData, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Posterior draws of the linear predictor of every row of ``frame`` (its groups, the fixed factors it
    has columns for [+ unit]) at contrast 0 (``x = 0``, whatever the coding), and of its contrast slope:
    arrays (rows, samples), from the posterior's ``alpha, beta, a_<g>, b_<g>, f_<fixed>, z_unit,
    sigma_unit`` (and with ``data.pair`` the unit's arm intercepts: the one at ``x = 0`` in the linear predictor,
    the difference between the two in the slope, so that ``eta + x * slope`` is either arm's log-odds)."""
    alpha = _draws(idata, "alpha")
    eta = np.broadcast_to(alpha, (len(frame), alpha.shape[-1])).copy()
    slope = np.broadcast_to(_draws(idata, "beta"), eta.shape).copy()
    for g in data.groups:
        eta += _level_draws(idata, f"a_{g}", g, frame[g])
        slope += _level_draws(idata, f"b_{g}", g, frame[g])
    for g in data.fixed:
        if g in frame:
            eta += _level_draws(idata, f"f_{g}", g, frame[g])
    if data.slope_by:
        slope += _level_draws(idata, f"s_{data.slope_by}", data.slope_by, frame[data.slope_by])
    if data.unit:
        eta += _level_draws(idata, "z_unit", "unit", frame[data.unit]) * _draws(idata, "sigma_unit")
    if data.centered:
        eta -= 0.5 * slope
    if data.pair:  # each arm's unit intercept: in eta at x = 0, their difference in the slope
        p0, p1 = _pair_draws(idata, data, frame)
        eta += p0
        slope += p1 - p0
    return eta, slope


def cell_probabilities(idata, data: ContrastData) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """P(correct) of every design cell under contrast 1 and 0: arrays (cells, samples), and the design
    (distinct groups [+ unit], with ``n`` = the trials of both contrast levels)."""
    keys = data.groups + ([data.unit] if data.unit else [])
    design = data.cells.groupby(keys, sort=True, observed=True)["n"].sum().reset_index()
    eta, slope = _linear_draws(idata, data, design)
    return _sigmoid(eta + slope), _sigmoid(eta), design


def common_support(data: ContrastData, probs: tuple, by: str) -> tuple[tuple, dict]:
    """:func:`cell_probabilities` restricted to the design rows whose ``by`` level (a cell) has trials at both
    levels of the contrast, and what was left out. Where the two arms are scored against different behaviours
    (before training the base model, after it M1'), a cell can have scorable answers in one arm only; the
    other arm's accuracy there would be the model's extrapolation to answers that do not exist, so the
    average marginal effect is taken over the common cells only."""
    p1, p0, design = probs
    arms = data.cells.groupby(by, observed=True)[data.x].nunique()
    both = set(arms.index[arms == 2])
    keep = design[by].isin(both).to_numpy()
    trials = data.cells.assign(_out=~data.cells[by].isin(both)).groupby(["_out", data.x])["n"].sum()
    left = {"cells": int(len(both)), "cells_total": int(len(arms)),
            "cells_left_out": sorted(map(str, set(arms.index) - both)),
            "trials_left_out": {str(int(x)): int(trials.get((True, x), 0)) for x in (0, 1)},
            "trials": {str(int(x)): int(trials.get((False, x), 0) + trials.get((True, x), 0)) for x in (0, 1)}}
    if not keep.any():
        raise DataError(f"no {by} has trials at both levels of {data.x!r}: the two arms share no cell, so their "
                        "difference is not estimable from these tables")
    return (p1[keep], p0[keep], design[keep].reset_index(drop=True)), left


def _groups(design: pd.DataFrame, by: list[str] | None):
    """``(key, mask, weights)`` per group of ``by`` (one group, key ``()``, when empty): the design rows of
    the group and their trials normalised to sum to one."""
    parts = [((), design.index)] if not by else design.groupby(by, sort=True).groups.items()
    w = design["n"].to_numpy(dtype=float)
    for key, ix in parts:
        mask = design.index.isin(ix)
        yield (key if isinstance(key, tuple) else (key,)), mask, w[mask] / w[mask].sum()


def marginal_effects(idata, data: ContrastData, by: list[str] | None = None, probs: tuple | None = None) -> pd.DataFrame:
    """Average marginal effect of the contrast in accuracy points, overall (``by`` empty) or per group:
    ``mean, low, high`` (94%), ``p_positive``, and the accuracies at contrast 1 and 0 (posterior means).
    ``probs``: :func:`cell_probabilities` of the same fit, computed once for several ``by``."""
    p1, p0, design = probs or cell_probabilities(idata, data)
    rows = []
    for key, mask, ww in _groups(design, by):
        a1, a0 = ww @ p1[mask], ww @ p0[mask]
        d = a1 - a0
        rows.append({**dict(zip(by or [], key)), **summarise_draws(d, 1.0),
                     "accuracy_1": a1.mean(), "accuracy_1_low": np.quantile(a1, Q_LOW),
                     "accuracy_1_high": np.quantile(a1, Q_HIGH), "accuracy_0": a0.mean(),
                     "accuracy_0_low": np.quantile(a0, Q_LOW), "accuracy_0_high": np.quantile(a0, Q_HIGH),
                     "n": int(design["n"][mask].sum())})
    return pd.DataFrame(rows)


def advantage_data(rows: pd.DataFrame, groups: list[str], unit: str | None = "unit", y: str = "correct",
                   pair: bool = True, priors: Priors = ADVANTAGE_PRIORS,
                   predictor_effects: bool | None = None) -> ContrastData:
    """The cells of :func:`advantage_model`: fixed target effects and fixed per-target self-slope deviations
    (``slope_by="target"``), plus fixed predictor effects when there are three or more models (with two
    they are the same parameter as the slope deviation), the self contrast coded -1/2, +1/2, and
    :data:`ADVANTAGE_PRIORS`, and (``pair``, with units) an intercept per answer unit x arm beside the unit's
    shared one: the self- and cross-predictor score the same answers, and each predictor's properties of one
    answer go together more than the shared intercept carries. ``y``: the 0/1 outcome (``meta_compliant`` for
    the compliance part of the non-compliance sensitivity). ``predictor_effects``: None: with three or more
    models; False for the sibling's contrasts, where a predictor effect would be the contrast itself."""
    models = sorted(set(rows["target"]) | set(rows["predictor"]))
    fixed = ["target"] + (["predictor"] if (len(models) >= 3 if predictor_effects is None else predictor_effects) else [])
    return to_cells(rows, "self", groups, unit, y=y, fixed=fixed, centered=True, priors=priors,
                    slope_by="target", keep=["predictor"], pair=pair and unit is not None)


def advantage_model(data: ContrastData):
    """The self-prediction advantage with an identified estimand (cells from :func:`advantage_data`).

    The log-odds of a correct prediction of target ``t``'s behaviour by predictor ``p`` is ``alpha + f_t
    [+ g_p] + (self - 1/2) * (delta + s_t + slopes) + random effects``, with the fixed per-target self-slope
    deviations ``s_t`` summing to zero and random intercepts and self slopes (task, property, cell, ...)
    that vary around them. The self-minus-cross log-odds in direction (target ``t``, cross-predictor ``p``)
    is ``delta + s_t [+ g_t - g_p]``.

    With two models this is the parametrisation ``delta + s_t * gamma``, ``s_t = +/- 1/2``: ``gamma`` is the
    difference between the two directions, which is twice the difference in the models' general predicting
    skill if predicting skill does not depend on the target (the two cannot be told apart with two models).
    Because ``s_t`` is fixed, the random slopes of one target's cells are not shrunk towards the other
    target's, so delta (the mean of the two directions' log-odds) does not lean towards the target with more
    trials. With three or more models every ordered pair is a direction, and the predictor effects ``g_p``
    (general predicting skill) are identified from the cross-predictions alongside the ``s_t``."""
    if "target" not in data.fixed or data.slope_by != "target" or not data.centered:
        raise ValueError("the advantage model needs target fixed effects, per-target self slopes "
                         "(slope_by='target') and centred coding: build its cells with advantage_data")
    return contrast_model(data)


def advantage_quantities(idata, data: ContrastData) -> dict:
    """Per posterior draw, from :func:`advantage_model`'s fit:

    * ``probs``: (P(correct) of the self-predictor, of the cross-predictor(s) averaged, design) per design row
      (groups + target + unit), the triple :func:`marginal_effects` takes (trial-weighted, observed design);
      each arm at its fitted unit x arm intercept where the model has them (conditional on the observed
      answers, as on every other fitted effect);
    * ``directions``: per (target, cross-predictor) the advantage in points, self minus that cross-predictor,
      on the target's design rows (trial-weighted);
    * ``delta``: the advantage without the fixed per-target slope deviations and, with three or more models,
      with both arms at the mean predicting skill: the AME of delta on each target's rows, averaged over the
      directions with equal weights, in points; ``delta_logit`` is the log-odds ``beta``;
    * two models: ``gamma_logit`` (the difference between the directions' self slopes) and ``gamma`` (points,
      the first direction's advantage minus the second's); three or more: ``skill``, each predictor's effect
      ``g_p`` centred over predictors (log-odds)."""
    c = data.cells
    keys = data.groups + ["target"] + ([data.unit] if data.unit else [])
    design = c.groupby(keys, sort=True, observed=True)["n"].sum().reset_index()
    eta0, slope = _linear_draws(idata, data, design)  # target effect and slope deviation in, predictor not
    mid = eta0 + 0.5 * slope
    post = idata.posterior
    t_levels = [str(v) for v in post["s_target"].coords["target"].to_numpy()]
    dev = _level_draws(idata, "s_target", "target", design["target"])
    if "predictor" in data.fixed:
        preds = [str(v) for v in post["f_predictor"].coords["predictor"].to_numpy()]
        # the predictor effects as fitted (the reference predictor's is 0): the arms' log-odds are the model's
        g = _draws(idata, "f_predictor")
    else:
        preds = sorted(c["predictor"].unique())
        g = np.zeros((len(preds), mid.shape[1]))
    mean_skill = g.mean(axis=0)  # delta puts both arms at the mean predicting skill
    at = {p: i for i, p in enumerate(preds)}
    targets = sorted(design["target"].unique())
    cross = {t: sorted(c.loc[(c["target"] == t) & (c[data.x] == 0), "predictor"].unique()) for t in targets}
    p_self = _sigmoid(mid + g[[at[t] for t in design["target"]]] + 0.5 * slope)
    p_cross = np.empty_like(p_self)
    w = design["n"].to_numpy(dtype=float)
    directions, delta_parts = {}, []
    for t in targets:
        m = (design["target"] == t).to_numpy()
        ww = w[m] / w[m].sum()
        pc = {p: _sigmoid(mid[m] + g[at[p]] - 0.5 * slope[m]) for p in cross[t]}
        p_cross[m] = np.mean(list(pc.values()), axis=0)
        for p, q in pc.items():
            directions[(t, p)] = ww @ (p_self[m] - q)
        s_eq = slope[m] - dev[m]
        d_equal = ww @ (_sigmoid(mid[m] + mean_skill + 0.5 * s_eq) - _sigmoid(mid[m] + mean_skill - 0.5 * s_eq))
        delta_parts += [d_equal] * len(pc)
    out = {"probs": (p_self, p_cross, design), "directions": directions,
           "delta": np.mean(delta_parts, axis=0), "delta_logit": _draws(idata, "beta")}
    if "predictor" in data.fixed:
        out["skill"] = dict(zip(preds, g - mean_skill))  # centred over predictors
    if len(t_levels) == 2 and len(directions) == 2:
        (d1, a1), (d2, a2) = sorted(directions.items())
        out["gamma_logit"] = _draws(idata, "gamma")[0] * (1 if t_levels[0] == d1[0] else -1)
        out["gamma"] = a1 - a2
        out["gamma_order"] = (d1[0], d2[0])
    return out


def new_task_delta(idata, data: ContrastData, new: tuple[str, ...] = ("task", "cell"), samples: int = 200,
                   seed: int = 0) -> np.ndarray:
    """The advantage at equal predicting skill on a *new* task, in points, per posterior draw: the
    predictive average marginal effect of :func:`advantage_model`, integrating over the random effects a
    new task brings. For every draw, ``samples`` new levels of each factor in ``new`` (a new task, and new
    target x task x property cells) are drawn from their fitted scales (intercept ``sigma_g * z``, self slope
    ``tau_g * w``), together with new answer units (``sigma_unit``); the factors not in ``new`` (property,
    and the self-trained model with several seeds) keep their observed levels, each equally weighted, as do
    the targets (whose fixed effects are averaged, the per-target slope deviations set aside, as in delta).
    A new answer's unit x arm intercepts (``sigma_pair``, where the model has them) are drawn independently
    per arm.

    Its interval carries the spread between tasks, which the average marginal effect on the observed tasks
    (``delta``) does not: it is the estimate for a claim about held-out tasks in general. With ``new`` naming
    the self-trained model's factor (``object_model``, several finetuning seeds), a new finetuning run is
    drawn the same way, from the fitted spread between the runs, instead of one of the observed runs."""
    post = idata.posterior
    rng = np.random.default_rng(seed)
    alpha, beta = _draws(idata, "alpha"), _draws(idata, "beta")
    n_draws = alpha.shape[0]
    sigma, tau = _draws(idata, "sigma"), _draws(idata, "tau")  # (factor, samples)
    factors = [str(f) for f in post["sigma"].coords["factor"].to_numpy()]
    eta = np.broadcast_to(alpha, (samples, n_draws)).copy()
    slope = np.broadcast_to(beta, (samples, n_draws)).copy()
    eta += _draws(idata, "f_target").mean(axis=0)  # targets weighted equally
    if "f_predictor" in post:
        eta += _draws(idata, "f_predictor").mean(axis=0)  # both arms at the mean predicting skill
    for j, g in enumerate(factors):
        if g in new:
            eta += sigma[j] * rng.standard_normal((samples, n_draws))
            slope += tau[j] * rng.standard_normal((samples, n_draws))
        else:  # an observed level, drawn uniformly
            a, b = _draws(idata, f"a_{g}"), _draws(idata, f"b_{g}")
            pick = rng.integers(0, a.shape[0], (samples, n_draws))
            eta += np.take_along_axis(a, pick, axis=0)
            slope += np.take_along_axis(b, pick, axis=0)
    if data.unit:
        eta += _draws(idata, "sigma_unit") * rng.standard_normal((samples, n_draws))
    e_self, e_cross = new_pair_draws(idata, data, rng, (samples, n_draws))
    return (_sigmoid(eta + 0.5 * slope + e_self) - _sigmoid(eta - 0.5 * slope + e_cross)).mean(axis=0)


def new_pair_draws(idata, data: ContrastData, rng: np.random.Generator, shape: tuple[int, int]
                   ) -> tuple[np.ndarray | float, np.ndarray | float]:
    """A new answer unit's intercepts in the self and the cross arm (``sigma_pair`` times independent standard
    normals, ``shape`` = (samples, posterior draws)), or zeros where the model has no unit x arm term: what
    every predictive estimand over new answers adds to each arm's log-odds beside the shared ``sigma_unit``."""
    if not data.pair:
        return 0.0, 0.0
    s = _draws(idata, "sigma_pair")  # (arm, samples)
    return s[1] * rng.standard_normal(shape), s[0] * rng.standard_normal(shape)


def accuracy_draws(idata, data: ContrastData, level: int, by: list[str], probs: tuple | None = None
                   ) -> dict[tuple, np.ndarray]:
    """Posterior draws of the design-weighted accuracy at contrast ``level``, per group of ``by``."""
    p1, p0, design = probs or cell_probabilities(idata, data)
    p = p1 if level else p0
    return {key: ww @ p[mask] for key, mask, ww in _groups(design, by)}


def calibration_model(errors: pd.DataFrame, groups: list[str], unit: str | None = "unit"):
    """Beta regression of item-level calibration error (total variation, in (0, 1)) on ``self``, with the
    same hierarchical structure as :func:`contrast_model`; errors are clipped to [0.001, 0.999].
    Precision ``phi ~ Gamma(2, 0.1)`` (mean 20)."""
    import pymc as pm

    coords = _coords(errors, groups, unit)
    y = np.clip(errors["error"].to_numpy(dtype=float), 1e-3, 1 - 1e-3)
    with pm.Model(coords=coords) as model:
        eta = _linear_predictor(errors, "self", groups, unit, coords)
        phi = pm.Gamma("phi", 2.0, 0.1)
        _beta_mean_precision("y", pm.math.sigmoid(eta), phi, y)
    return model


#: priors of :func:`log_score_model`, on the standardised log-score, and the scale of its residual SDs' prior
LOG_SCORE_PRIORS = Priors(alpha=1.0, beta=1.0, sigma=0.5, tau=0.5, unit=0.5)
LOG_SCORE_RESIDUAL = 1.0
#: the training-effect model's priors (:func:`to_cells`' default)
TRAINING_PRIORS = Priors()


def log_score_model(errors: pd.DataFrame, groups: list[str], unit: str | None = "unit", scale_by: list[str] | None = None):
    """Hierarchical normal regression of the item-level log-score (``log_score``, nats per sample) on
    ``self``, with the structure of :func:`contrast_model` (random intercepts and self slopes per grouping
    factor, an intercept per answer unit) on an identity link, and a residual standard deviation per group of
    ``scale_by`` (default: target x self; the log-scores of an over-confident predictor spread far more).
    The likelihood is normal, not heavy-tailed, on purpose: the log-score is proper *in expectation*, so the
    estimand is the mean score, and a heavy-tailed likelihood would estimate a location that discounts the
    very items (a confident prediction the samples contradict) a scoring rule exists to penalise. The
    outcome is standardised (its mean and standard deviation over the rows; returned as ``scale``) and the
    priors (:data:`LOG_SCORE_PRIORS`, ``sigma_obs ~ HalfNormal(1)``) are on that scale. Nothing is clipped.
    Returns ``(model, (mean, sd))``."""
    import pymc as pm

    y = errors["log_score"].to_numpy(dtype=float)
    if not np.isfinite(y).all():
        raise ValueError("the log-score model needs finite log-scores for every row")
    mean, sd = float(y.mean()), float(y.std()) or 1.0
    scale_by = scale_by or ["target", "self"]
    coords = _coords(errors, groups, unit)
    codes, levels = pd.factorize(pd.MultiIndex.from_frame(errors[scale_by].astype(str)), sort=True)
    coords["scale_group"] = ["|".join(v) for v in levels]
    with pm.Model(coords=coords) as model:
        eta = _linear_predictor(errors, "self", groups, unit, coords, priors=LOG_SCORE_PRIORS)
        sigma_obs = pm.HalfNormal("sigma_obs", LOG_SCORE_RESIDUAL, dims="scale_group")
        pm.Normal("y", mu=eta, sigma=sigma_obs[codes], observed=(y - mean) / sd)
    return model, (mean, sd)


def log_score_effects(idata, data: ContrastData, scale: tuple[float, float], by: list[list[str]]) -> pd.DataFrame:
    """The expected log-score (nats per sample) of the self- and the cross-predictor and their difference
    (self minus cross: positive when self-prediction is better calibrated), averaged over the observed items
    (each once), overall (``[]``) and per group of ``by``; posterior means, 94% intervals, P(> 0)."""
    mean, sd = scale
    keys = data.groups + ([data.unit] if data.unit else [])
    design = data.cells.groupby(keys, sort=True, observed=True)["n"].sum().reset_index().assign(n=1)
    eta, slope = _linear_draws(idata, data, design)
    ls1, ls0 = mean + sd * (eta + slope), mean + sd * eta
    rows = []
    for grouping in by:
        for key, mask, ww in _groups(design, grouping):
            s1, s0 = summarise_draws(ww @ ls1[mask], 1.0), summarise_draws(ww @ ls0[mask], 1.0)
            rows.append({"by": "+".join(grouping) or "overall", **dict(zip(grouping, key)),
                         **summarise_draws(ww @ (ls1[mask] - ls0[mask]), 1.0),
                         "self": s1["mean"], "self_low": s1["low"], "self_high": s1["high"],
                         "cross": s0["mean"], "cross_low": s0["low"], "cross_high": s0["high"],
                         "n": int(mask.sum())})
    return pd.DataFrame(rows)


def _beta_mean_precision(name: str, mu, phi, observed: np.ndarray):
    """``Beta(mu * phi, (1 - mu) * phi)``, observed: exactly PyMC's ``pm.Beta`` with those parameters, with the
    log density written for a data vector ``y`` as ``(a - 1) log y + (b - 1) log(1 - y) - lgamma(a) -
    lgamma(b) + lgamma(phi)``: ``log y`` and ``log(1 - y)`` are constants, and ``lgamma(a + b)`` is one scalar
    (``a + b = phi``). PyMC's graph evaluated all three log-gammas (and their digammas in the gradient) on
    every row, the bulk of this model's cost per leapfrog step."""
    import pymc as pm
    import pytensor.tensor as pt

    log_y, log_1my = np.log(observed), np.log1p(-observed)

    def logp(value, mu, phi):
        a, b = mu * phi, (1 - mu) * phi
        return (a - 1) * log_y + (b - 1) * log_1my - pt.gammaln(a) - pt.gammaln(b) + pt.gammaln(phi)

    def random(mu, phi, rng=None, size=None):
        return rng.beta(mu * phi, (1 - mu) * phi, size=size)

    return pm.CustomDist(name, mu, phi, logp=logp, random=random, observed=observed)


# ------------------------------------------------------------------------------------ behaviour model
OUTCOMES = ["new", "old", "neither"]
#: the behaviour-change model's priors (logit): each model x outcome ``mu ~ Normal(0, mu)``, the task, property
#: and answer-unit scales ``~ HalfNormal``
BEHAVIOUR_PRIORS = {"mu": 1.5, "task": 1.0, "property": 1.0, "unit": 0.5}


def behaviour_model(rows: pd.DataFrame):
    """Categorical logit of each changed item's prediction: it matches the ``new`` behaviour, the ``old``
    one, or ``neither`` (the reference), one row per changed item x property (``rows``: model, task,
    property, unit, outcome; :func:`analysis.self_prediction.tidy.behaviour_outcomes`). For ``new`` and ``old``::

        theta = mu_model + sigma_task * z_task + sigma_property * z_property + sigma_unit * z_unit

    with a fixed ``mu`` per model and outcome (two models give too few levels for a scale), ``mu ~
    Normal(0, 1.5)``, and random effects per task, property and answer unit (one changed response moves
    several of its properties together: the unit effect is the overdispersion), scales HalfNormal(1) for
    task and property and HalfNormal(0.5) for units, independent per outcome. ``p`` (rows x outcome):
    each row's probabilities."""
    import pymc as pm

    coords = {"outcome": OUTCOMES[:2]}
    idx = {}
    for g in ("model", "task", "property", "unit"):
        coords[g] = sorted(rows[g].unique())
        idx[g] = pd.Categorical(rows[g], categories=coords[g]).codes
    y = pd.Categorical(rows["outcome"], categories=OUTCOMES).codes
    if (y < 0).any():
        raise ValueError(f"outcomes must be one of {OUTCOMES}")
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("mu", 0.0, BEHAVIOUR_PRIORS["mu"], dims=("model", "outcome"))[idx["model"]]
        for g in ("task", "property", "unit"):
            sg = pm.HalfNormal(f"sigma_{g}", BEHAVIOUR_PRIORS[g], dims="outcome")
            theta = theta + sg * pm.Normal(f"z_{g}", 0.0, 1.0, dims=(g, "outcome"))[idx[g]]
        logits = pm.math.concatenate([theta, pm.math.zeros((len(rows), 1))], axis=1)
        p = pm.Deterministic("p", pm.math.softmax(logits, axis=1))
        pm.Categorical("y", p=p, observed=y)
    return model


# --------------------------------------------------------------------------------- sampling and gate
