"""The Bayesian machinery every experiment family shares: sampler settings, sampling with a fast NUTS backend
(numpyro by default), the convergence gate that keeps an unconverged posterior out of every table, its
diagnostics, and small helpers on posterior draws and binomial likelihoods. Each family writes its own models
(:mod:`analysis.self_prediction.hierarchical`, :mod:`analysis.injection`, :mod:`analysis.mirror`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace

#: one host device per chain (numpyro runs chains in parallel only with enough devices); added to any XLA_FLAGS
#: already set (an instruction-set limit, say) rather than skipped because the variable exists
_XLA_DEVICES = "--xla_force_host_platform_device_count"
if _XLA_DEVICES not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_XLA_DEVICES}=4".strip()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from reproduce.errors import ProjectError  # noqa: E402

from analysis.constants import BFMI_MIN, ESS_MIN, Q_HIGH, Q_LOW, RHAT_MAX  # noqa: E402


class ConvergenceError(ProjectError, RuntimeError):
    """A posterior that fails the convergence gate: not published. ``problems``: what it missed."""

    def __init__(self, message: str, problems: str = "", length_only: bool = False, divergent: bool = False,
                 samplings: int = 1):
        super().__init__(message)
        self.problems = problems
        self.length_only = length_only  # only r_hat or ESS missed: longer chains can pass
        self.divergent = divergent  # divergent transitions and an E-BFMI that passed: smaller steps can pass
        self.samplings = samplings  # how many samplings failed before it was raised (sample_gated's cures)


@dataclass(frozen=True)
class SamplerSettings:
    sampler: str = "numpyro"  # numpyro | nutpie | pymc
    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    target_accept: float = 0.98
    seed: int = 0
    progressbar: bool = False
    #: a fit with divergent transitions is sampled once more at this target acceptance (None: it stops)
    target_accept_retry: float | None = None


def sampler_settings(profile, seed_offset: int, careful: bool = False) -> SamplerSettings:
    """The profile's NUTS settings (``analysis:`` of params.yaml), seeded ``profile.seed + seed_offset``;
    ``careful``: starting at the retry's target acceptance (for fits known to need small steps)."""
    a = profile.analysis
    return SamplerSettings(sampler=a.sampler, draws=a.draws, tune=a.tune, chains=a.chains,
                           target_accept=a.target_accept_retry if careful else a.target_accept,
                           target_accept_retry=a.target_accept_retry, seed=profile.seed + seed_offset)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def binomial_logit(name: str, n: np.ndarray, eta, observed: np.ndarray):
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
        return rng.binomial(n, sigmoid(eta), size=size)

    return pm.CustomDist(name, n, eta, logp=logp, random=random, dtype="int64", observed=observed)


def draws(idata, name: str) -> np.ndarray:
    """Posterior draws with the sample axis last: (..., chains * draws)."""
    v = idata.posterior[name]
    return v.stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()


def level_draws(idata, name: str, dim: str, values) -> np.ndarray:
    """Draws of the variable ``name`` (with dimension ``dim``) at each of ``values``' levels: (rows, samples)."""
    levels = list(idata.posterior[name].coords[dim].to_numpy())
    return draws(idata, name)[pd.Categorical(values, categories=levels).codes]


def summarise_draws(d: np.ndarray, scale: float = 100.0) -> dict:
    """Posterior mean, 94% interval (times ``scale``: accuracy points by default) and P(> 0) of draws ``d``."""
    return {"mean": scale * float(d.mean()), "low": scale * float(np.quantile(d, Q_LOW)),
            "high": scale * float(np.quantile(d, Q_HIGH)), "p_positive": float((d > 0).mean())}


def sample(model, settings: SamplerSettings):
    """NUTS with the configured backend; returns InferenceData (posterior with deterministics, sample_stats,
    observed data). numpyro runs through :func:`_sample_numpyro`; the others through ``pm.sample``. PyMC's own
    convergence warnings are skipped: :func:`check_convergence` is the gate."""
    if settings.sampler == "numpyro":
        return _sample_numpyro(model, settings)
    if settings.sampler == "nutpie":
        import importlib.util

        if importlib.util.find_spec("nutpie") is None:
            from reproduce.config import ConfigError

            raise ConfigError("analysis.sampler is 'nutpie', which is not installed: install the extra "
                              "(`pip install -e '.[nutpie]'`) or set analysis.sampler: numpyro in params.yaml")
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

    def potential(q):
        return minus_logp(unravel(q))

    # one compiled call for every chain (the log density run eagerly compiles each of its operations apart)
    bad = [c for c, v in enumerate(np.asarray(jax.jit(jax.vmap(potential))(init))) if not np.isfinite(v)]
    if bad:
        raise RuntimeError(f"chains {bad} start where the log density is not finite; check the model's data")
    parallel = jax.local_device_count() >= settings.chains
    mcmc = MCMC(NUTS(potential_fn=potential, target_accept_prob=settings.target_accept,
                     max_tree_depth=MAX_TREE_DEPTH),
                num_warmup=settings.tune, num_samples=settings.draws, num_chains=settings.chains,
                chain_method="parallel" if parallel else "sequential", progress_bar=settings.progressbar)
    mcmc.run(jax.random.split(jax.random.PRNGKey(settings.seed), settings.chains), init_params=init,
             extra_fields=("num_steps", "potential_energy", "energy", "adapt_state.step_size", "accept_prob",
                           "diverging"))
    outputs = list(get_default_varnames(model.unobserved_value_vars, include_transformed=False))
    graph = get_jaxified_graph(inputs=model.value_vars, outputs=outputs)
    draws = jax.jit(jax.vmap(jax.vmap(lambda q: graph(*unravel(q)))))(mcmc.get_samples(group_by_chain=True))
    rename = {"potential_energy": "lp", "adapt_state.step_size": "step_size", "num_steps": "n_steps",
              "accept_prob": "acceptance_rate"}
    stats = {rename.get(k, k): np.asarray(v) for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    stats["lp"] = -stats["lp"]
    coords, dims = coords_and_dims_for_inferencedata(model)
    return az.from_dict(posterior={v.name: np.asarray(d) for v, d in zip(outputs, draws)}, sample_stats=stats,
                        observed_data=find_observations(model), constant_data=find_constants(model),
                        coords=coords, dims=dims)


#: deterministic quantities of the models (functions of the free variables, not checked on their own)
DETERMINISTIC = ("a_", "b_", "f_", "s_")
DETERMINISTIC_NAMES = ("p",)
#: NUTS's maximum tree depth (numpyro's, PyMC's and nutpie's default) and the leapfrog steps of a draw that reached it
MAX_TREE_DEPTH = 10
MAX_TREE_STEPS = 2**MAX_TREE_DEPTH - 1


def free_variables(idata) -> list[str]:
    """Every free random variable of a posterior: all but the deterministics (:data:`DETERMINISTIC`)."""
    return [v for v in idata.posterior.data_vars
            if not v.startswith(DETERMINISTIC) and v not in DETERMINISTIC_NAMES]


def diagnostics(idata) -> dict:
    """r_hat (max), bulk and tail ESS (min) over every free variable (:func:`free_variables`, precision
    parameters such as ``phi`` included), the number of divergences and the smallest E-BFMI of a chain; and,
    reported but not gated, the mean leapfrog steps per draw and the share of draws whose trajectory reached the
    maximum tree depth (an efficiency warning: the sampler stays valid, each draw costs up to 1023 gradients).

    The values are ArviZ's rank-normalised split r_hat and bulk / tail ESS, rounded as ``az.summary`` rounds
    them (r_hat to 2 decimals, ESS to an integer), so the gate reads the numbers a summary table shows;
    computed by :func:`analysis.convergence.rank_diagnostics`, which evaluates ArviZ's definitions on every
    element at once (ArviZ loops over the elements in Python: seconds per fit with thousands of unit effects)."""
    import arviz as az

    from analysis.convergence import rank_diagnostics

    post = idata.posterior[free_variables(idata)].transpose("chain", "draw", ...)
    # (r_hat, bulk ESS, tail ESS) of every element of each variable
    per_variable = {v: rank_diagnostics(da.to_numpy().reshape(da.shape[0], da.shape[1], -1))
                    for v, da in post.data_vars.items()}

    def dataset(which: int, decimals: int):
        """The posterior's variables without chain and draw, holding one diagnostic per element."""
        return post.isel(chain=0, draw=0, drop=True).copy(
            data={v: d[which].reshape(post[v].shape[2:]) for v, d in per_variable.items()}).round(decimals)

    r_hat, ess, tail = _worst(dataset(0, 2), max), _worst(dataset(1, 0), min), _worst(dataset(2, 0), min)
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    bfmi = float(np.min(az.bfmi(idata))) if "energy" in idata.sample_stats else float("nan")
    saturated = steps_mean = float("nan")
    if "n_steps" in idata.sample_stats:
        steps = idata.sample_stats["n_steps"].values
        saturated, steps_mean = round(float(np.mean(steps >= MAX_TREE_STEPS)), 3), round(float(steps.mean()), 1)
    return {"r_hat_max": r_hat[0], "ess_bulk_min": ess[0], "ess_tail_min": tail[0], "divergences": div,
            "bfmi_min": round(bfmi, 3), "tree_depth_max_share": saturated, "max_tree_depth": MAX_TREE_DEPTH,
            "leapfrog_steps_mean": steps_mean,
            "worst_r_hat": r_hat[1], "worst_ess": ess[1], "worst_ess_tail": tail[1],
            "draws": int(idata.posterior.sizes["draw"]), "chains": int(idata.posterior.sizes["chain"])}


def release_compiled() -> None:
    """Free the compiled log densities and samplers of the fits so far. Every fit builds and compiles its own
    (each model is a new graph, so JAX's caches never reuse them); a loop of many fits in one process (the null
    simulation, the power check) otherwise grows until the compiler cannot allocate memory."""
    import gc

    import jax

    jax.clear_caches()
    gc.collect()


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
    """The convergence gate: r_hat <= 1.01, bulk and tail ESS >= 400, no divergences and E-BFMI >= 0.3 in
    every chain, over every free variable, or a ConvergenceError that says what failed and what to change.
    Returns the diagnostics when the fit passes."""
    d = diagnostics(idata)
    problems = []  # r_hat and ESS first: longer chains can cure those, not the sampler's geometry after them
    if not d["r_hat_max"] <= rhat_max:
        problems.append(f"r_hat {d['r_hat_max']:.3f} > {rhat_max} (worst: {d['worst_r_hat']})")
    if not d["ess_bulk_min"] >= ess_min:
        problems.append(f"bulk ESS {d['ess_bulk_min']:.0f} < {ess_min} (worst: {d['worst_ess']})")
    if not d["ess_tail_min"] >= ess_min:
        problems.append(f"tail ESS {d['ess_tail_min']:.0f} < {ess_min} (worst: {d['worst_ess_tail']})")
    length = len(problems)
    low_bfmi = d["bfmi_min"] < BFMI_MIN  # NaN (no energy recorded) passes: nothing to check
    if low_bfmi:
        problems.append(f"E-BFMI {d['bfmi_min']:.2f} < {BFMI_MIN} in at least one chain")
    if d["divergences"]:
        problems.append(f"{d['divergences']} divergent transitions")
    if problems:
        raise ConvergenceError(
            f"the {name} model failed the convergence gate: {'; '.join(problems)} "
            f"({d['chains']} chains x {d['draws']} draws). Its results are not published. Raise analysis.draws "
            "and analysis.tune, or analysis.target_accept_retry (e.g. 0.995), in params.yaml and re-run the stage.",
            "; ".join(problems), length_only=len(problems) == length,
            divergent=bool(d["divergences"]) and not low_bfmi)
    return d


def sample_gated(model, settings: SamplerSettings, name: str) -> tuple:
    """:func:`sample` through the gate (:func:`check_convergence`): ``(idata, diagnostics)``, whose
    ``target_accept`` is the target acceptance of the fit that passed.

    A fit that misses the gate is sampled again, from the same seed, with each cure below tried at most once (so
    at most three samplings: a divergence cured, then longer chains, or the other way round), and the last fit
    must pass the whole gate, or the :class:`ConvergenceError` names every fit:

    - with divergent transitions, once at ``settings.target_accept_retry`` when that is higher (smaller steps,
      the usual cure for a divergence); the diagnostics then record ``diverged``: what the first fit missed;
    - on r_hat or ESS alone, once with twice the draws and tuning steps (an ESS grows with the chains' length,
      and r_hat settles); the diagnostics then record ``refit``: what the shorter fit missed.

    A low E-BFMI, or divergences with no higher target acceptance left, stop at once: neither longer chains
    nor smaller steps are known to cure them."""
    current, missed, again = settings, [], {}  # again: what each second sampling answered ("diverged", "refit")
    while True:
        idata = sample(model, current)
        try:
            diag = check_convergence(idata, name)
        except ConvergenceError as err:
            retry = current.target_accept_retry
            if err.divergent and retry is not None and retry > current.target_accept:
                again["diverged"] = f"{err.problems} at target acceptance {current.target_accept:g}"
                missed.append((current, err.problems))
                current = replace(current, target_accept=retry)
            elif err.length_only and current.draws == settings.draws:
                again["refit"] = err.problems
                missed.append((current, err.problems))
                current = replace(current, draws=2 * settings.draws, tune=2 * settings.tune)
            elif not missed:
                raise
            else:
                fits = ", then ".join(f"with {s.draws} draws at target acceptance {s.target_accept:g} ({p})"
                                      for s, p in missed + [(current, err.problems)])
                times = {2: "twice", 3: "three times"}[len(missed) + 1]
                raise ConvergenceError(
                    f"the {name} model failed the convergence gate {times}, from the same seed: "
                    f"{fits}. Its results are not published. Set analysis.draws and analysis.tune above "
                    f"{current.draws} and {current.tune}, or analysis.target_accept_retry closer to 1, in "
                    "params.yaml and re-run the stage.", err.problems, err.length_only, err.divergent,
                    samplings=len(missed) + 1) from err
            print(f"the {name} model missed the convergence gate ({err.problems}); sampling it again with "
                  f"{current.draws} draws and {current.tune} tuning steps at target acceptance "
                  f"{current.target_accept:g}", file=sys.stderr)
            continue
        return idata, {**diag, "target_accept": current.target_accept, **again}


def category_codes(values: pd.Series, levels: list) -> np.ndarray:
    """Each value's position in ``levels`` (-1 where it is not one of them), as int64 codes for indexing."""
    return pd.Categorical(values, categories=levels).codes.astype(np.int64)


def aggregate_binomial(codes: dict[str, np.ndarray], y: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Bernoulli rows to binomial counts per distinct combination of integer ``codes`` (the same likelihood,
    fewer terms): the combinations' codes, successes ``k`` and trials ``n``."""
    frame = pd.DataFrame(codes).assign(y=y.astype(int))
    g = frame.groupby(list(codes), sort=True)["y"].agg(k="sum", n="size").reset_index()
    return {c: g[c].to_numpy() for c in codes}, g["k"].to_numpy(), g["n"].to_numpy()


def logit(p):
    return np.log(p) - np.log1p(-p)


def latent_probability(rng: np.random.Generator, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For simulations: a continuous probability whose thresholding at 0.5 is Bernoulli(sigmoid(eta)),
    ``sigmoid(eta + e)`` with logistic noise ``e`` (P(eta + e > 0) = sigmoid(eta)). Returns (probability,
    outcome)."""
    latent = eta + rng.logistic(size=np.shape(eta))
    return sigmoid(latent), latent > 0
