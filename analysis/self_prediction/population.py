"""Experiment 1's population estimands: the self-prediction advantage on a *new* held-out task (and, with several
finetuning seeds, from a *new* finetuning run), overall and in every direction, and the headline verdict taken
on them.

The paper's claim is about self-knowledge in general, not about the held-out tasks and the finetuning runs this
run happened to make. The advantage on the observed tasks and runs (``delta``) conditions on them, so its
interval leaves out what another task or another finetuning run would bring; under a null world whose tasks and
runs vary as much as this run's fitted scales say, a verdict on it comes out positive far more often than its
interval's level suggests (``analysis.self_prediction.null`` measures it). The estimands here integrate over new
levels of those factors, drawn from their fitted scales, and the headline verdict is taken on them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.bayes import draws, sigmoid
from analysis.self_prediction.hierarchical import new_pair_draws
from analysis.self_prediction.tidy import CELL

#: the factors a new held-out task brings (the task, and its target x task x property cells)
NEW_TASK = ("task", "cell")
#: with a factor per finetuning run: a new task from a new finetuning run
NEW_TASK_AND_RUN = ("task", "cell", "object_model")


def advantage_groups(trained: pd.DataFrame) -> list[str]:
    """The advantage model's random grouping factors (target and predictor are its fixed effects): task,
    property and the target x task x property cell, plus, with two or more finetune seeds, the self-trained
    object model (``<target>+self-s<seed>``): one finetune run of a target, whose intercept and self slope
    carry the seed-to-seed variation of M1''s behaviour and of the advantage."""
    groups = ["task", "property", CELL]
    if trained["seed"].nunique() >= 2:
        groups.append("object_model")
    return groups


def headline_factors(groups: list[str]) -> tuple[str, ...]:
    """The new levels of the headline estimand: a new task, and a new finetuning run where the model has a
    factor for the run (two or more finetuning seeds)."""
    return NEW_TASK_AND_RUN if "object_model" in groups else NEW_TASK


def headline_key(groups: list[str]) -> str:
    """The key of the headline estimand in ``metrics["advantage"]``."""
    return "new_task_and_run" if "object_model" in groups else "new_task"


def direction_draws(idata, data, new: tuple[str, ...] = NEW_TASK, samples: int = 200, seed: int = 0
                    ) -> dict[tuple[str, str], np.ndarray]:
    """The advantage of every direction (target ``t`` predicted by itself minus by cross-predictor ``p``) on a
    new held-out task, in shares per posterior draw: the predictive average marginal effect of
    :func:`analysis.self_prediction.hierarchical.advantage_model` for that direction, integrating over the random
    effects the levels named in ``new`` bring, drawn from their fitted scales (intercept ``sigma_g * z``, self
    slope ``tau_g * w``), and over new answer units (``sigma_unit``).

    Unlike delta, a direction keeps its fixed per-target self-slope deviation and the two predictors' fitted
    skill (their fixed effects, three or more models): it is what that predictor pair would show on a new task.
    A factor not in ``new`` keeps its observed levels, drawn uniformly among those the target has (a cell or a
    finetuning run belongs to one target; a property is shared)."""
    post = idata.posterior
    rng = np.random.default_rng(seed)
    alpha, beta = draws(idata, "alpha"), draws(idata, "beta")
    n = alpha.shape[0]
    sigma, tau = draws(idata, "sigma"), draws(idata, "tau")
    factors = [str(f) for f in post["sigma"].coords["factor"].to_numpy()]
    targets = [str(v) for v in post["f_target"].coords["target"].to_numpy()]
    f_target = dict(zip(targets, draws(idata, "f_target")))
    s_target = dict(zip(targets, draws(idata, "s_target")))
    if "f_predictor" in post:
        preds = [str(v) for v in post["f_predictor"].coords["predictor"].to_numpy()]
        skill = dict(zip(preds, draws(idata, "f_predictor")))
    else:
        skill = {}
    c = data.cells
    out = {}
    for t in targets:
        mine = c[c["target"] == t]
        eta = np.broadcast_to(alpha + f_target[t], (samples, n)).copy()
        slope = np.broadcast_to(beta + s_target[t], (samples, n)).copy()
        for j, g in enumerate(factors):
            if g in new:
                eta += sigma[j] * rng.standard_normal((samples, n))
                slope += tau[j] * rng.standard_normal((samples, n))
            else:  # one of the target's observed levels, drawn uniformly
                levels = [str(v) for v in post[f"a_{g}"].coords[g].to_numpy()]
                own = np.flatnonzero(np.isin(levels, mine[g].astype(str).unique()))
                a, b = draws(idata, f"a_{g}")[own], draws(idata, f"b_{g}")[own]
                pick = rng.integers(0, len(own), (samples, n))
                eta += np.take_along_axis(a, pick, axis=0)
                slope += np.take_along_axis(b, pick, axis=0)
        if data.unit:
            eta += draws(idata, "sigma_unit") * rng.standard_normal((samples, n))
        e_self, e_cross = new_pair_draws(idata, data, rng, (samples, n))  # a new answer's arm intercepts
        for p in sorted(mine.loc[mine[data.x] == 0, "predictor"].unique()):
            g_self, g_cross = skill.get(t, 0.0), skill.get(p, 0.0)
            d = sigmoid(eta + e_self + g_self + 0.5 * slope) - sigmoid(eta + e_cross + g_cross - 0.5 * slope)
            out[(t, str(p))] = d.mean(axis=0)
    return out


def p_every_direction(directions: dict, rope: float) -> float:
    """The posterior probability that every direction's advantage lies above the region of practical
    equivalence (``rope`` in points; the directions' draws in shares)."""
    return float(np.all(np.stack(list(directions.values())) > rope / 100, axis=0).mean())


def rule_verdicts(idata, data, rope: float, seed: int, q: dict | None = None) -> dict:
    """Every verdict experiment 1's rules take from one fit of the advantage model, in one place for the
    analysis (:func:`analysis.self_prediction.fits._advantage`) and the null simulation
    (:func:`analysis.self_prediction.null.rules`): the headline's population estimand (:func:`headline_factors`)
    overall and per direction, the conditional delta and its directions (``q``:
    :func:`analysis.self_prediction.hierarchical.advantage_quantities`, computed unless given), the two
    P(every direction above the ROPE) and the headline rule on each (:func:`analysis.verdicts.headline`).
    Directions are keyed ``(target, cross_predictor)``; each summary carries its ``verdict``."""
    import analysis.self_prediction.hierarchical as M
    from analysis.verdicts import headline, verdict

    q = q if q is not None else M.advantage_quantities(idata, data)
    new = headline_factors(data.groups)

    def judged(d):
        s = M.summarise_draws(d)
        return {**s, "verdict": verdict(s["low"], s["high"], rope)}

    pop_dirs = direction_draws(idata, data, new=new, seed=seed)
    out = {"population": judged(M.new_task_delta(idata, data, new=new, seed=seed)),
           "population_directions": {k: judged(v) for k, v in sorted(pop_dirs.items())},
           "p_every_direction_population": p_every_direction(pop_dirs, rope),
           "conditional": judged(q["delta"]),
           "directions": {k: judged(v) for k, v in sorted(q["directions"].items())},
           "p_every_direction": p_every_direction(q["directions"], rope)}
    out["headline"] = headline(out["population"]["verdict"],
                               [v["verdict"] for v in out["population_directions"].values()])
    out["headline_conditional"] = headline(out["conditional"]["verdict"],
                                           [v["verdict"] for v in out["directions"].values()])
    return out
