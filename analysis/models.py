"""Bayesian hierarchical models (PyMC), sampled with a fast NUTS backend, and the convergence gate.

All models are non-centered. Priors (logit scale unless stated), chosen to be weakly informative for
accuracies between a few percent and ~95%:

* intercept ``alpha ~ Normal(0, 1.5)``; population contrast ``beta ~ Normal(0, 1)`` (a 1-logit shift is
  ~20 accuracy points near 50%);
* random intercepts ``a_g = sigma_g * z`` with ``sigma_g ~ HalfNormal(1)``, random contrast slopes
  ``b_g = tau_g * w`` with ``tau_g ~ HalfNormal(0.5)``, ``z, w ~ Normal(0, 1)``, independent across
  grouping factors (target model, task, property, and in the stage their target x task x property cell);
  intercepts and slopes are uncorrelated;
* an intercept per answer unit (``sigma_unit ~ HalfNormal(1)``) for item-level dependence: one target
  answer to one item defines several properties, and the self- and cross-predictor are scored on the same
  answers.

Derived quantities are *average marginal effects* in accuracy points: for every posterior draw, the mean
over the observed design (cells weighted by their trials) of ``P(correct | contrast = 1) - P(correct |
contrast = 0)``. Intervals are equal-tailed 94% posterior intervals.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")  # one device per chain

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

RHAT_MAX = 1.01
ESS_MIN = 400
INTERVAL = 0.94
Q_LOW, Q_HIGH = (1 - INTERVAL) / 2, 1 - (1 - INTERVAL) / 2


class ConvergenceError(RuntimeError):
    """A posterior that fails the convergence gate: not published."""


@dataclass(frozen=True)
class SamplerSettings:
    sampler: str = "numpyro"  # numpyro | nutpie | pymc
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    target_accept: float = 0.98
    seed: int = 0
    progressbar: bool = False


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ------------------------------------------------------------------------------- the contrast model
@dataclass
class ContrastData:
    """Binomial cells: ``k`` successes of ``n`` trials, one row per distinct (groups, unit, x)."""

    cells: pd.DataFrame
    x: str
    groups: list[str]
    unit: str | None


def to_cells(rows: pd.DataFrame, x: str, groups: list[str], unit: str | None = None, y: str = "correct",
             aggregate: bool = True) -> ContrastData:
    """Aggregate 0/1 observations to binomial counts per distinct linear predictor (``aggregate=False``
    keeps one Bernoulli cell per observation: the same model, slower; for the benchmark)."""
    keys = groups + ([unit] if unit else []) + [x]
    if not aggregate:
        cells = rows[keys].assign(k=rows[y].astype(int).to_numpy(), n=1).reset_index(drop=True)
        return ContrastData(cells, x, groups, unit)
    cells = rows.groupby(keys, sort=True, observed=True)[y].agg(k="sum", n="size").reset_index()
    return ContrastData(cells, x, groups, unit)


def _coords(frame: pd.DataFrame, groups: list[str], unit: str | None) -> dict[str, list]:
    coords = {g: sorted(frame[g].unique()) for g in groups}
    if unit:
        coords["unit"] = sorted(frame[unit].unique())
    return coords


def _design_matrix(frame: pd.DataFrame, x: str, groups: list[str], coords: dict) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-plus-random-effects part of the linear predictor as a dense design over the *distinct*
    (groups, x) combinations of ``frame``: ``X`` (combinations x parameters), with columns in the order
    ``alpha, beta, a_<g>..., b_<g>...`` (levels in ``coords`` order), and the combination of every row.

    Why: the same ``eta`` written as one gather per grouping factor (``a_g[idx] + b_g[idx] * x``) costs a
    scatter-add per factor in the gradient, over thousands of rows into a handful of levels, which is slow
    on a CPU; a small matrix product on the few distinct combinations followed by one gather is not."""
    xs = frame[x].to_numpy(dtype=float)
    codes = [pd.Categorical(frame[g], categories=coords[g]).codes for g in groups]
    combo, uniq = pd.factorize(pd.MultiIndex.from_arrays(codes + [xs]), sort=True)
    levels = np.array(list(uniq), dtype=float).reshape(len(uniq), len(groups) + 1)
    cx = levels[:, -1]
    blocks = [np.ones((len(uniq), 1)), cx[:, None]]
    onehots = [np.eye(len(coords[g]))[levels[:, j].astype(int)] for j, g in enumerate(groups)]
    X = np.concatenate(blocks + onehots + [h * cx[:, None] for h in onehots], axis=1)
    return X, combo


def _linear_predictor(frame: pd.DataFrame, x: str, groups: list[str], unit: str | None, coords: dict):
    """``alpha + beta * x`` plus, per grouping factor, a random intercept and a random ``x`` slope, and an
    intercept per unit; created inside the caller's model (the priors of the module docstring).

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
    alpha, beta = pm.Normal("alpha", 0.0, 1.5), pm.Normal("beta", 0.0, 1.0)
    sigma, tau = pm.HalfNormal("sigma", 1.0, dims="factor"), pm.HalfNormal("tau", 0.5, dims="factor")
    a = sigma[owner] * pm.Normal("z", 0.0, 1.0, dims="level")
    b = tau[owner] * pm.Normal("w", 0.0, 1.0, dims="level")
    for j, g in enumerate(groups):
        pm.Deterministic(f"a_{g}", a[bounds[j]:bounds[j + 1]], dims=g)
        pm.Deterministic(f"b_{g}", b[bounds[j]:bounds[j + 1]], dims=g)
    X, combo = _design_matrix(frame, x, groups, coords)
    eta = pt.dot(X, pt.concatenate([pt.stack([alpha, beta]), a, b]))[combo]
    if unit:
        idx = pd.Categorical(frame[unit], categories=coords["unit"]).codes
        sigma_u = pm.HalfNormal("sigma_unit", 1.0)
        eta = eta + sigma_u * pm.Normal("z_unit", 0.0, 1.0, dims="unit")[idx]
    return eta


def _binomial_logit(name: str, n: np.ndarray, eta, observed: np.ndarray):
    """``Binomial(n, p = sigmoid(eta))``, observed: exactly PyMC's ``pm.Binomial(n, logit_p=eta)``, with its
    log-likelihood written as ``k * eta - n * softplus(eta) + log C(n, k)``. PyMC's own graph evaluates
    ``log(p)`` and ``log(1 - p)`` as two softplus terms plus a sigmoid for its parameter checks; on
    thousands of Bernoulli cells in float64 those transcendental functions were most of the gradient."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.distributions.dist_math import binomln

    def logp(value, n, eta):
        return value * eta - n * pt.softplus(eta) + binomln(n, value)

    def random(n, eta, rng=None, size=None):
        return rng.binomial(n, _sigmoid(eta), size=size)

    return pm.CustomDist(name, n, eta, logp=logp, random=random, dtype="int64", observed=observed)


def contrast_model(data: ContrastData):
    """Hierarchical logistic regression of accuracy on a 0/1 contrast (self vs cross, trained vs untrained),
    with random intercepts and random contrast slopes for each grouping factor and, when ``data.unit`` is
    set, an intercept per answer unit."""
    import pymc as pm

    c = data.cells
    coords = _coords(c, data.groups, data.unit)
    with pm.Model(coords=coords) as model:
        eta = _linear_predictor(c, data.x, data.groups, data.unit, coords)
        _binomial_logit("y", c["n"].to_numpy(), eta, c["k"].to_numpy())
    return model


def _draws(idata, name: str) -> np.ndarray:
    """Posterior draws with the sample axis last: (..., chains * draws)."""
    v = idata.posterior[name]
    return v.stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()


def _linear_draws(idata, data: ContrastData, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Posterior draws of the linear predictor of every row of ``frame`` (its groups [+ unit]) at contrast 0,
    and of its contrast slope: arrays (rows, samples), from the posterior's ``alpha, beta, a_<g>, b_<g>,
    z_unit, sigma_unit``."""
    alpha = _draws(idata, "alpha")
    eta = np.broadcast_to(alpha, (len(frame), alpha.shape[-1])).copy()
    slope = np.broadcast_to(_draws(idata, "beta"), eta.shape).copy()
    post = idata.posterior
    for g in data.groups:
        levels = list(post[f"a_{g}"].coords[g].to_numpy())
        idx = pd.Categorical(frame[g], categories=levels).codes
        eta += _draws(idata, f"a_{g}")[idx]
        slope += _draws(idata, f"b_{g}")[idx]
    if data.unit:
        levels = list(post["z_unit"].coords["unit"].to_numpy())
        idx = pd.Categorical(frame[data.unit], categories=levels).codes
        eta += _draws(idata, "z_unit")[idx] * _draws(idata, "sigma_unit")
    return eta, slope


def cell_probabilities(idata, data: ContrastData) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """P(correct) of every design cell under contrast 1 and 0: arrays (cells, samples), and the design
    (distinct groups [+ unit], with ``n`` = the trials of both contrast levels)."""
    keys = data.groups + ([data.unit] if data.unit else [])
    design = data.cells.groupby(keys, sort=True, observed=True)["n"].sum().reset_index()
    eta, slope = _linear_draws(idata, data, design)
    return _sigmoid(eta + slope), _sigmoid(eta), design


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
        rows.append({**dict(zip(by or [], key)), "mean": d.mean(), "low": np.quantile(d, Q_LOW),
                     "high": np.quantile(d, Q_HIGH), "p_positive": float((d > 0).mean()),
                     "accuracy_1": a1.mean(), "accuracy_1_low": np.quantile(a1, Q_LOW),
                     "accuracy_1_high": np.quantile(a1, Q_HIGH), "accuracy_0": a0.mean(),
                     "accuracy_0_low": np.quantile(a0, Q_LOW), "accuracy_0_high": np.quantile(a0, Q_HIGH),
                     "n": int(design["n"][mask].sum())})
    return pd.DataFrame(rows)


def accuracy_draws(idata, data: ContrastData, level: int, by: list[str], probs: tuple | None = None
                   ) -> dict[tuple, np.ndarray]:
    """Posterior draws of the design-weighted accuracy at contrast ``level``, per group of ``by``."""
    p1, p0, design = probs or cell_probabilities(idata, data)
    p = p1 if level else p0
    return {key: ww @ p[mask] for key, mask, ww in _groups(design, by)}


# ---------------------------------------------------------------------------------- calibration model
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


def behaviour_model(counts: pd.DataFrame):
    """Multinomial logit of a changed item's prediction: matches the ``new`` behaviour, the ``old`` one, or
    ``neither``, per model x property cell. For ``new`` and ``old`` (``neither`` is the reference):
    ``theta = mu + sigma_property * z + sigma_model * z'``, ``mu ~ Normal(0, 1.5)``, sigmas HalfNormal(1)."""
    import pymc as pm

    coords = {"outcome": OUTCOMES[:2], "property": sorted(counts["property"].unique()),
              "model": sorted(counts["model"].unique())}
    ip = pd.Categorical(counts["property"], categories=coords["property"]).codes
    im = pd.Categorical(counts["model"], categories=coords["model"]).codes
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, 1.5, dims="outcome")
        sp = pm.HalfNormal("sigma_property", 1.0, dims="outcome")
        sm = pm.HalfNormal("sigma_model", 1.0, dims="outcome")
        zp = pm.Normal("z_property", 0, 1, dims=("property", "outcome"))
        zm = pm.Normal("z_model", 0, 1, dims=("model", "outcome"))
        theta = mu + sp * zp[ip] + sm * zm[im]
        logits = pm.math.concatenate([theta, pm.math.zeros((len(counts), 1))], axis=1)
        p = pm.Deterministic("p", pm.math.softmax(logits, axis=1))
        pm.Multinomial("y", n=counts[OUTCOMES].sum(axis=1).to_numpy(), p=p, observed=counts[OUTCOMES].to_numpy())
    return model


# --------------------------------------------------------------------------------- sampling and gate
def sample(model, settings: SamplerSettings):
    """NUTS with the configured backend; returns InferenceData (posterior with deterministics, sample_stats,
    observed data). numpyro runs through :func:`_sample_numpyro`; the others through ``pm.sample``. PyMC's own
    convergence warnings are skipped: :func:`check_convergence` is the gate."""
    if settings.sampler == "numpyro":
        return _sample_numpyro(model, settings)
    import pymc as pm

    with model:
        return pm.sample(draws=settings.draws, tune=settings.tune, chains=settings.chains,
                         target_accept=settings.target_accept, random_seed=settings.seed,
                         nuts_sampler=settings.sampler, progressbar=settings.progressbar,
                         compute_convergence_checks=False)


def _sample_numpyro(model, settings: SamplerSettings):
    """numpyro's NUTS (diagonal mass matrix, step size adapted to ``target_accept``) on PyMC's log density, as
    ``pm.sample(nuts_sampler="numpyro")`` runs it, with two differences that only change the speed: the
    sampler sees ONE flat parameter vector (numpyro's leapfrog and tree updates then cost one operation per
    step instead of one per model variable; the unravelling happens inside the log density), and chains run
    in parallel, one per host device (``XLA_FLAGS``, set at import), when there are enough devices, else one
    after another. Starting points are PyMC's: the initial point, jittered uniformly in [-1, 1] on the
    unconstrained scale, one seed per chain from ``settings.seed``."""
    import arviz as az
    import jax
    from jax.flatten_util import ravel_pytree
    from numpyro.infer import MCMC, NUTS
    from pymc.backends.arviz import coords_and_dims_for_inferencedata, find_constants, find_observations
    from pymc.initial_point import make_initial_point_fns_per_chain
    from pymc.sampling.jax import get_jaxified_graph, get_jaxified_logp
    from pymc.util import get_default_varnames

    names = [v.name for v in model.value_vars]
    minus_logp = get_jaxified_logp(model, negative_logp=False)  # PyMC's naming: this is -log p
    seeds = np.random.default_rng(settings.seed).integers(2**31 - 1, size=settings.chains)
    fns = make_initial_point_fns_per_chain(model=model, overrides=None, jitter_rvs=set(model.free_RVs),
                                           chains=settings.chains)
    starts = [[np.asarray(fn(int(seed))[n]) for n in names] for fn, seed in zip(fns, seeds)]
    unravel = ravel_pytree(starts[0])[1]
    init = np.stack([np.asarray(ravel_pytree(p)[0]) for p in starts])
    bad = [c for c, q in enumerate(init) if not np.isfinite(float(minus_logp(unravel(q))))]
    if bad:
        raise RuntimeError(f"chains {bad} start where the log density is not finite; check the model's data")
    parallel = jax.local_device_count() >= settings.chains
    mcmc = MCMC(NUTS(potential_fn=lambda q: minus_logp(unravel(q)), target_accept_prob=settings.target_accept),
                num_warmup=settings.tune, num_samples=settings.draws, num_chains=settings.chains,
                chain_method="parallel" if parallel else "sequential", progress_bar=settings.progressbar)
    mcmc.run(jax.random.split(jax.random.PRNGKey(settings.seed), settings.chains), init_params=init,
             extra_fields=("num_steps", "potential_energy", "energy", "adapt_state.step_size", "accept_prob",
                           "diverging"))
    values = jax.vmap(jax.vmap(unravel))(mcmc.get_samples(group_by_chain=True))
    outputs = list(get_default_varnames(model.unobserved_value_vars, include_transformed=False))
    draws = jax.jit(jax.vmap(jax.vmap(get_jaxified_graph(inputs=model.value_vars, outputs=outputs))))(*values)
    rename = {"potential_energy": "lp", "adapt_state.step_size": "step_size", "num_steps": "n_steps",
              "accept_prob": "acceptance_rate"}
    stats = {rename.get(k, k): np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    stats["lp"] = -stats["lp"]
    coords, dims = coords_and_dims_for_inferencedata(model)
    return az.from_dict(posterior={v.name: np.asarray(d) for v, d in zip(outputs, draws)}, sample_stats=stats,
                        observed_data=find_observations(model), constant_data=find_constants(model),
                        coords=coords, dims=dims)


def diagnostics(idata) -> dict:
    """r_hat (max), bulk ESS (min) over every free parameter, and the number of divergences.

    The values are ArviZ's rank-normalised split r_hat and bulk ESS, rounded as ``az.summary`` rounds them
    (r_hat to 2 decimals, ESS to an integer), so the gate reads the numbers a summary table shows; computed
    directly because ``az.summary`` also computes MCSEs and tail ESS for ~900 parameters, which the gate
    does not use."""
    import arviz as az

    free = [v for v in idata.posterior.data_vars if not v.startswith(("a_", "b_", "p"))]
    post = idata.posterior[free]
    r_hat, ess = _worst(az.rhat(post).round(2), max), _worst(az.ess(post, method="bulk").round(0), min)
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    return {"r_hat_max": r_hat[0], "ess_bulk_min": ess[0], "divergences": div,
            "worst_r_hat": r_hat[1], "worst_ess": ess[1],
            "draws": int(idata.posterior.sizes["draw"]), "chains": int(idata.posterior.sizes["chain"])}


def _worst(stats, pick) -> tuple[float, str]:
    """The extreme (``pick`` = max or min) of a per-parameter statistic over every variable and element,
    and its label as ``az.summary`` writes it (``name[coord, ...]``)."""
    best = None
    for name, da in stats.data_vars.items():
        flat = da.to_numpy().ravel()
        if not flat.size or np.isnan(flat).all():
            continue
        i = int(np.nanargmax(flat) if pick is max else np.nanargmin(flat))
        value = float(flat[i])
        if best is None or pick(value, best[0]) != best[0]:
            where = np.unravel_index(i, da.shape)
            label = name if not da.dims else f"{name}[{', '.join(str(da[d].values[j]) for d, j in zip(da.dims, where))}]"
            best = (value, label)
    return best or (float("nan"), "")


def check_convergence(idata, name: str, rhat_max: float = RHAT_MAX, ess_min: float = ESS_MIN) -> dict:
    """The convergence gate: r_hat <= 1.01, bulk ESS >= 400 and no divergences, or a ConvergenceError that
    says what failed and what to change. Returns the diagnostics when the fit passes."""
    d = diagnostics(idata)
    problems = []
    if not d["r_hat_max"] <= rhat_max:
        problems.append(f"r_hat {d['r_hat_max']:.3f} > {rhat_max} (worst: {d['worst_r_hat']})")
    if not d["ess_bulk_min"] >= ess_min:
        problems.append(f"bulk ESS {d['ess_bulk_min']:.0f} < {ess_min} (worst: {d['worst_ess']})")
    if d["divergences"]:
        problems.append(f"{d['divergences']} divergent transitions")
    if problems:
        raise ConvergenceError(
            f"the {name} model failed the convergence gate: {'; '.join(problems)} "
            f"({d['chains']} chains x {d['draws']} draws). Its results are not published. Raise analysis.draws "
            "and analysis.tune, or analysis.target_accept (e.g. 0.99), in params.yaml and re-run the stage.")
    return d


def prior_predictive_accuracy(model, data: ContrastData, samples: int = 500, seed: int = 0) -> dict:
    """The overall accuracy the priors imply before seeing data (quantiles), and the share of prior draws
    with an overall accuracy below 1% or above 99% (a prior that piles up at the extremes is not weak)."""
    import pymc as pm

    with model:
        prior = pm.sample_prior_predictive(draws=samples, random_seed=seed)
    y = prior.prior_predictive["y"].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
    acc = y.sum(axis=0) / data.cells["n"].sum()
    return {"q05": float(np.quantile(acc, 0.05)), "q50": float(np.quantile(acc, 0.5)),
            "q95": float(np.quantile(acc, 0.95)), "extreme_share": float(((acc < 0.01) | (acc > 0.99)).mean())}


def posterior_predictive_check(idata, data: ContrastData, seed: int = 0, chunk: int = 500) -> pd.DataFrame:
    """Replicated successes per group x contrast cell (summed over units), with the observed count, the
    94% predictive interval and the posterior predictive p-value P(replicated >= observed).

    The replicates are ``Binomial(n, sigmoid(eta))`` of every observed cell for every posterior draw, drawn in
    numpy from the posterior's linear predictor (:func:`_linear_draws`), ``chunk`` draws at a time; PyMC's
    ``sample_posterior_predictive`` compiled a PyTensor graph (no BLAS with a pip-installed PyTensor) for
    the same draws."""
    keys = data.groups + [data.x]
    c = data.cells.reset_index(drop=True)
    eta, slope = _linear_draws(idata, data, c)
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(c[keys]), sort=True)
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    x, n = c[data.x].to_numpy(float)[order, None], c["n"].to_numpy()[order, None]
    eta, slope = eta[order], slope[order]
    rng = np.random.default_rng(seed)
    rep = np.concatenate([np.add.reduceat(rng.binomial(n, _sigmoid(eta[:, s:s + chunk] + slope[:, s:s + chunk] * x)),
                                          starts, axis=0) for s in range(0, eta.shape[1], chunk)], axis=1)
    k = np.add.reduceat(c["k"].to_numpy()[order], starts)
    trials = np.add.reduceat(c["n"].to_numpy()[order], starts)
    out = pd.DataFrame(list(uniq), columns=keys)
    out = out.assign(observed=k.astype(int), n=trials.astype(int), rep_mean=rep.mean(axis=1),
                     rep_low=np.quantile(rep, Q_LOW, axis=1), rep_high=np.quantile(rep, Q_HIGH, axis=1),
                     p_value=(rep >= k[:, None]).mean(axis=1))
    out["covered"] = (out["observed"] >= out["rep_low"]) & (out["observed"] <= out["rep_high"])
    return out
