"""The prior scales of the self-prediction models (:mod:`analysis.self_prediction.hierarchical`), and the
variance components whose priors the sensitivity refits vary one at a time."""

from __future__ import annotations

from dataclasses import dataclass, replace

#: the variance components of the advantage model, as :class:`Priors` fields: the random-intercept scales
#: ``sigma``, the random self-slope scales ``tau``, the answer-unit scale ``unit`` and the answer unit x arm
#: (self/cross) scale ``pair``; each is refitted at half and twice its scale with the others at their defaults
VARIANCE_COMPONENTS = ("sigma", "tau", "unit", "pair")


@dataclass(frozen=True)
class Priors:
    """Prior scales (logit): ``alpha ~ Normal(0, alpha)``, ``beta ~ Normal(0, beta)``, ``sigma_g ~
    HalfNormal(sigma)``, ``tau_g ~ HalfNormal(tau)``, ``sigma_unit ~ HalfNormal(unit)``, ``sigma_pair ~
    HalfNormal(pair)`` per arm (only in a model with the unit x arm term), each of the four scale priors a
    ``HalfStudentT(nu, scale)`` instead when ``nu`` is set (:func:`scale_prior`), each fixed effect ``~ Normal(0, fixed)``,
    each fixed slope deviation ``~ Normal(0, gamma)`` (wide: a slope deviation enters a cell's log-odds times
    1/4, and a tight prior on it would pull the directions' difference towards zero and, where one target has
    more trials, delta towards that target's direction). :meth:`scaled` multiplies every scale, :meth:`scaled_component`
    one variance component's (the prior-sensitivity refits)."""

    alpha: float = 1.5
    beta: float = 1.0
    sigma: float = 1.0
    tau: float = 0.5
    unit: float = 1.0
    fixed: float = 1.0
    gamma: float = 2.5
    pair: float = 1.0
    nu: float | None = None

    def scaled(self, factor: float) -> "Priors":
        return replace(self, **{f: factor * getattr(self, f) for f in ("alpha", "beta", "sigma", "tau", "unit", "fixed",
                                                                         "gamma", "pair")})

    def scaled_component(self, component: str, factor: float) -> "Priors":
        """These priors with one variance component's scale (:data:`VARIANCE_COMPONENTS`) times ``factor``."""
        if component not in VARIANCE_COMPONENTS:
            raise ValueError(f"{component!r} is not a variance component; one of {VARIANCE_COMPONENTS}")
        return replace(self, **{component: factor * getattr(self, component)})


def scale_prior(name: str, scale: float, nu: float | None, **kwargs):
    """The prior of a variance component (inside a PyMC model): ``HalfNormal(scale)``, or with ``nu``
    ``HalfStudentT(nu, scale)``, whose tail leaves room for a large component without widening the bulk
    (and with it the prior of every cell's accuracy)."""
    import pymc as pm

    if nu is None:
        return pm.HalfNormal(name, scale, **kwargs)
    return pm.HalfStudentT(name, nu=nu, sigma=scale, **kwargs)


def scale_quantile(q: float, scale: float, nu: float | None) -> float:
    """The ``q`` quantile of :func:`scale_prior`'s distribution."""
    from scipy.stats import halfnorm, t

    return float(halfnorm.ppf(q, scale=scale) if nu is None else t.ppf(0.5 + q / 2, nu) * scale)


#: the advantage model's priors, chosen with the prior-predictive check of the cell accuracies
#: (:func:`analysis.self_prediction.predictive.prior_cell_accuracy`; docs/statistics.md, "Priors"): at most
#: :data:`PRIOR_EXTREME_MAX` of the implied cell accuracies below 2% or above 98%, and room in each scale prior's
#: bulk (below its 95th percentile) for the scales the data fit. HalfNormal(0.35) scales kept the cell accuracies a
#: hump but put the fitted property, cell and unit scales (1.0-2.1) beyond their 95th percentile (0.69); scales of
#: 1 put 17% of the cell accuracies at the extremes. HalfStudentT(3) scales keep the bulk near 0.5 and the tail
#: wide (95th percentile 1.59 for scale 0.5)
ADVANTAGE_PRIORS = Priors(alpha=0.75, beta=1.5, sigma=0.5, tau=0.35, unit=0.5, fixed=1.0, gamma=2.5, pair=0.35, nu=3.0)
#: the compliance part of the non-compliance sensitivity: an outcome that is nearly always 1 (compliance near 100%
#: in most cells: separation), where the heavy-tailed scales let the sampler wander into the funnel (128
#: divergent transitions and r_hat 1.11 on the `default` tables); it keeps the half-normal scales it had
COMPLIANCE_PRIORS = Priors(alpha=0.75, beta=1.5, sigma=0.35, tau=0.5, unit=0.35, fixed=1.0, gamma=2.5)
#: the largest share of prior-predictive cell accuracies below 2% or above 98% the advantage priors may give
PRIOR_EXTREME_MAX = 0.15
