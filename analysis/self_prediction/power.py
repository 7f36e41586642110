"""Power of Experiment 1's advantage verdict for a design (``looking-inward power``, the ``power`` stage).

The design is the run's: the number of held-out tasks, the finetuning seeds, the answer units scored per
task, target and seed, and the properties per task; the heterogeneity (random-intercept and self-slope scales
of task, property, cell and, with two or more seeds, the self-trained model of each seed; the answer-unit
scale, the intercept and gamma) is the fitted advantage model's posterior median, or a stated prior when
there is no fit. For a grid of true advantages, replicated datasets are drawn from the advantage
model's generative structure (two models, each predicting the other) and two verdicts are taken from each:

* **on the observed tasks**, the verdict the manuscript gives delta: delta estimated with the directions
  weighted equally, an interval from the answer units (the cluster), conditional on the tasks and the
  finetuning runs made (the seeds' effects are part of the true advantage of a replicate, as delta averages
  over the observed seeds at their fitted effects);
* **for new tasks**: the same estimate with an interval from the spread between tasks (t with T - 1 degrees
  of freedom), the uncertainty a claim about held-out tasks in general carries.

A verdict is "advantage" when the 94% interval lies above the ROPE (``analysis.rope``). Power is the share of
replicates called an advantage; the *minimum detectable advantage* is the smallest true advantage with 80%
power (interpolated on the grid). The curves repeat this for other numbers of items per task and of tasks.

The intervals are normal (and t) approximations of the Bayesian intervals, so that thousands of replicates
take seconds; ``--validate N`` fits the Bayesian advantage model to N replicates at one grid point and
reports how often its verdict agrees with the approximation's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from reproduce.errors import DataError, MissingInput

from analysis.constants import POWER_TARGET, Q_HIGH
from analysis.self_prediction.tidy import CELL, main_trained, with_cell

Z_HIGH = stats.norm.ppf(Q_HIGH)  # the normal quantile of the verdict's interval's upper end


@dataclass(frozen=True)
class Design:
    tasks: int
    items: int  # scored answer units per task, target and seed
    properties: int  # per task
    alpha: float = 0.0  # intercept (log-odds at the midpoint of the two arms)
    sigma_task: float = 0.3
    sigma_property: float = 0.3
    sigma_cell: float = 0.3
    tau_task: float = 0.3  # self-slope scales
    tau_property: float = 0.3
    tau_cell: float = 0.3
    sigma_unit: float = 0.3
    gamma: float = 0.0  # log-odds difference between the two directions
    seeds: int = 1  # finetuning seeds: a self-trained model per target and seed, each with its own answers
    sigma_seed: float = 0.0  # intercept and self-slope scales of the self-trained model (seeds >= 2)
    tau_seed: float = 0.0


#: heterogeneity used when no fitted run is available: the scales' prior medians of the advantage model
#: (HalfNormal(0.35) intercepts and the answer unit, HalfNormal(0.5) slopes: median = 0.674 * scale)
PRIOR_HETEROGENEITY = {"sigma_task": 0.24, "sigma_property": 0.24, "sigma_cell": 0.24, "tau_task": 0.34,
                       "tau_property": 0.34, "tau_cell": 0.34, "sigma_unit": 0.24, "alpha": 0.0, "gamma": 0.0}


def items_unit(seeds: int) -> str:
    """What the design's ``items`` count, in words (the power figure's axis and the manuscript's sentence)."""
    return "items per task, target and seed" if seeds >= 2 else "items per task and target"


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def simulate(design: Design, delta: float, reps: int, rng: np.random.Generator):
    """``reps`` replicated datasets as arrays (reps, 2 directions, tasks, units, properties) of 0/1 outcomes
    for the self- and the cross-predictor, and the true delta per replicate in points (the advantage at
    equal skill on the simulated design, directions weighted equally). The units are ``seeds x items``
    answer units, seed by seed (unit ``u`` is seed ``u // items``'s); with two or more seeds each direction's
    self-trained model of each seed adds its intercept and self slope to its units."""
    d = design
    units = d.seeds * d.items
    shape = (reps, 2, d.tasks, units, d.properties)
    a = (rng.normal(0, d.sigma_task, (reps, 1, d.tasks, 1, 1)) + rng.normal(0, d.sigma_property, (reps, 1, d.tasks, 1, d.properties))
         + rng.normal(0, d.sigma_cell, (reps, 2, d.tasks, 1, d.properties)) + rng.normal(0, d.sigma_unit, (reps, 2, d.tasks, units, 1)))
    b = (rng.normal(0, d.tau_task, (reps, 1, d.tasks, 1, 1)) + rng.normal(0, d.tau_property, (reps, 1, d.tasks, 1, d.properties))
         + rng.normal(0, d.tau_cell, (reps, 2, d.tasks, 1, d.properties)))
    if d.seeds >= 2:  # the self-trained model of each direction and seed, repeated over its units
        a = a + np.repeat(rng.normal(0, d.sigma_seed, (reps, 2, 1, d.seeds, 1)), d.items, axis=3)
        b = b + np.repeat(rng.normal(0, d.tau_seed, (reps, 2, 1, d.seeds, 1)), d.items, axis=3)
    mid = d.alpha + a
    slope = delta + b
    s = np.array([0.5, -0.5]).reshape(1, 2, 1, 1, 1) * d.gamma  # each direction's fixed deviation
    y_self = rng.random(shape) < _sig(mid + 0.5 * (slope + s))
    y_cross = rng.random(shape) < _sig(mid - 0.5 * (slope + s))
    truth = 100 * (_sig(mid + 0.5 * slope) - _sig(mid - 0.5 * slope)).mean(axis=(1, 2, 3, 4))
    return y_self, y_cross, truth


def verdicts(y_self: np.ndarray, y_cross: np.ndarray, rope: float) -> dict[str, np.ndarray]:
    """Per replicate: the estimate (points) and whether each approximate interval lies above ``rope``."""
    diff = (y_self.astype(float) - y_cross).mean(axis=4)  # per answer unit: (reps, 2, tasks, items)
    reps, _, tasks, items = diff.shape
    est = 100 * diff.mean(axis=(1, 2, 3))
    per_dir = diff.reshape(reps, 2, tasks * items)
    se_obs = 100 * np.sqrt((per_dir.var(axis=2, ddof=1) / (tasks * items)).sum(axis=1)) / 2
    per_task = diff.mean(axis=(1, 3))  # (reps, tasks)
    se_new = 100 * per_task.std(axis=1, ddof=1) / np.sqrt(tasks)
    t = stats.t.ppf(Q_HIGH, tasks - 1)
    return {"estimate": est, "observed_tasks": est - Z_HIGH * se_obs > rope, "new_tasks": est - t * se_new > rope}


def power_curve(design: Design, deltas, reps: int, rope: float, seed: int) -> pd.DataFrame:
    """Power of both verdicts at each true ``delta`` (log-odds) on ``design``: one row per delta with the
    mean true advantage in points."""
    rows = []
    for i, delta in enumerate(deltas):
        rng = np.random.default_rng([seed, i, design.tasks, design.items])
        ys, yc, truth = simulate(design, float(delta), reps, rng)
        v = verdicts(ys, yc, rope)
        rows.append({"delta_logit": float(delta), "advantage": float(truth.mean()),
                     "power_observed_tasks": float(v["observed_tasks"].mean()),
                     "power_new_tasks": float(v["new_tasks"].mean()), "reps": reps})
    return pd.DataFrame(rows)


def minimum_detectable(curve: pd.DataFrame, column: str, target: float = POWER_TARGET) -> float:
    """The smallest true advantage (points) with power >= ``target``, interpolated between grid points; NaN
    when no grid point reaches it."""
    c = curve.sort_values("advantage")
    p, x = c[column].to_numpy(), c["advantage"].to_numpy()
    above = np.flatnonzero(p >= target)
    if not len(above):
        return float("nan")
    j = above[0]
    if j == 0:
        return float(x[0])
    return float(x[j - 1] + (target - p[j - 1]) * (x[j] - x[j - 1]) / (p[j] - p[j - 1]))


DELTAS = np.linspace(0.0, 1.6, 17)
ITEMS = (10, 20, 40, 80, 160, 320)
TASKS = (3, 6, 12, 24)


def analyse(design: Design, rope: float, reps: int = 400, seed: int = 0, deltas=DELTAS, items=ITEMS,
            tasks=TASKS, progress=None) -> dict:
    """The design's power curve and minimum detectable advantages, and the curves of the minimum detectable
    advantage against items per task (at the design's tasks) and against tasks (at its items). Both grids
    include the design's own size, so each curve passes through the run's design (that point reuses its curve)."""
    items, tasks = sorted({*items, design.items}), sorted({*tasks, design.tasks})
    curve = power_curve(design, deltas, reps, rope, seed)
    out = {"design": asdict(design), "items_unit": items_unit(design.seeds), "rope": rope, "reps": reps,
           "mda_observed_tasks": minimum_detectable(curve, "power_observed_tasks"),
           "mda_new_tasks": minimum_detectable(curve, "power_new_tasks")}
    rows = []
    variants = [("items", n, replace(design, items=n)) for n in items] + [("tasks", k, replace(design, tasks=k)) for k in tasks]
    for j, (axis, value, d) in enumerate(variants):
        c = curve if d == design else power_curve(d, deltas, reps, rope, seed)
        rows.append({"axis": axis, "value": value,
                     "mda_observed_tasks": minimum_detectable(c, "power_observed_tasks"),
                     "mda_new_tasks": minimum_detectable(c, "power_new_tasks"),
                     "power_at_max_observed_tasks": float(c["power_observed_tasks"].max()),
                     "power_at_max_new_tasks": float(c["power_new_tasks"].max())})
        if progress:
            progress(j + 1, len(variants))
    return {**out, "curve": curve, "by_size": pd.DataFrame(rows)}


def observations_per_direction(predictions: pd.DataFrame) -> float:
    """Experiment 1's scored trained observations per direction (one target and one predictor), on average:
    each target's self-predictions are one direction, and every cross direction scores the same target
    answers, so the self arm's count over the targets is the average over every direction too."""
    t = main_trained(predictions)
    return float((t["kind"] == "self").sum() / max(t["target"].nunique(), 1))


def simulated_observations(design: Design) -> int:
    """The scored observations of one direction of ``design`` (the simulation has two, each target predicted
    by itself and by the other model): tasks x items x seeds x properties."""
    return design.tasks * design.items * design.seeds * design.properties


def design_from_run(predictions: pd.DataFrame, posterior=None) -> tuple[Design, str]:
    """The run's design from its trained predictions (tasks, finetuning seeds, mean properties per task, and
    the answer units per task, target and seed that give a balanced design as many scored observations per
    direction as the run has on average; the simulation has two directions, whatever the run's number of
    models) and its heterogeneity from the advantage model's posterior
    (medians; the seed scales where the model has the self-trained model as a factor), or
    :data:`PRIOR_HETEROGENEITY` without one. Returns the design and where the heterogeneity came from."""
    t = main_trained(predictions)
    if not len(t):
        raise DataError("the predictions table has no trained rows: run the pipeline through meta_trained first")
    seeds = max(int(t["seed"].nunique()), 1)
    tasks = int(t["task"].nunique())
    props = int(round(t.groupby("task")["property"].nunique().mean()))
    # balanced, and as large as the run: as many scored observations per direction (a target and a predictor) as
    # the run has on average, whose directions need not all have every task, nor every cell every item
    items = max(1, int(round(observations_per_direction(t) / (tasks * seeds * props))))
    if posterior is None:
        # the seed level's scales have the same priors as every other factor's (task's stand for them)
        seed_level = {"sigma_seed": PRIOR_HETEROGENEITY["sigma_task"], "tau_seed": PRIOR_HETEROGENEITY["tau_task"]}
        prior = {**PRIOR_HETEROGENEITY, **(seed_level if seeds >= 2 else {})}
        return Design(tasks, items, props, seeds=seeds, **prior), "prior medians of the advantage model's scales"
    post = posterior.posterior
    med = lambda name, **sel: float(post[name].sel(**sel).median())  # noqa: E731
    het = {"alpha": med("alpha"), "sigma_unit": med("sigma_unit")}
    for f in ("task", "property", "cell"):
        het[f"sigma_{f}"] = med("sigma", factor=f)
        het[f"tau_{f}"] = med("tau", factor=f)
    het["gamma"] = med("gamma") if "gamma" in post else 0.0
    if seeds >= 2 and "object_model" in post["sigma"].coords["factor"].values:
        het["sigma_seed"], het["tau_seed"] = med("sigma", factor="object_model"), med("tau", factor="object_model")
    return Design(tasks, items, props, seeds=seeds, **het), "posterior medians of the fitted advantage model"


def validate(design: Design, delta: float, reps: int, rope: float, seed: int, settings, progress=None) -> dict:
    """Fit the Bayesian advantage model to ``reps`` replicates at ``delta`` and compare its delta verdict
    (interval above the ROPE) with the approximation's verdict on the observed tasks, replicate by replicate."""
    import analysis.self_prediction.hierarchical as M

    rng = np.random.default_rng([seed, 99])
    ys, yc, truth = simulate(design, delta, reps, rng)
    fast = verdicts(ys, yc, rope)["observed_tasks"]
    bayes = []
    for r in range(reps):
        df = _rows(ys[r], yc[r], design.items)
        data = M.advantage_data(df, ["task", "property", CELL] + (["object_model"] if design.seeds >= 2 else []))
        idata = M.sample(M.advantage_model(data), settings)
        q = M.advantage_quantities(idata, data)
        bayes.append(float(np.quantile(100 * q["delta"], M.Q_LOW)) > rope)
        if progress:
            progress(r + 1, reps)
    bayes = np.array(bayes)
    return {"delta_logit": delta, "reps": reps, "advantage": float(truth.mean()),
            "power_bayes": float(bayes.mean()), "power_approximation": float(fast.mean()),
            "agreement": float((bayes == fast).mean())}


def _rows(y_self: np.ndarray, y_cross: np.ndarray, items: int) -> pd.DataFrame:
    """One replicate's arrays (2, tasks, units, properties) as prediction rows (targets m0, m1; unit ``u`` of
    seed ``u // items``, whose self-trained model is ``<target>+self-s<seed>``)."""
    idx = np.indices(y_self.shape).reshape(4, -1)
    names = np.array(["m0", "m1"])
    base = pd.DataFrame({"target": names[idx[0]], "task": [f"task{k}" for k in idx[1]],
                         "unit": [f"{names[d]}/task{k}/item{i}" for d, k, i in zip(idx[0], idx[1], idx[2])],
                         "object_model": [f"{names[d]}+self-s{i // items}" for d, i in zip(idx[0], idx[2])],
                         "property": [f"task{k}-prop{p}" for k, p in zip(idx[1], idx[3])]})
    s = base.assign(predictor=base["target"], correct=y_self.reshape(-1).astype(int))
    c = base.assign(predictor=np.where(base["target"] == "m0", "m1", "m0"), correct=y_cross.reshape(-1).astype(int))
    s["self"], c["self"] = 1, 0  # (not through assign, whose first parameter is called self)
    return with_cell(pd.concat([s, c], ignore_index=True))


def run_power(analysis_dir, rope: float, seed: int, reps: int = 400, validate_reps: int = 0, use_prior: bool = False,
              settings=None, out=None) -> dict:
    """The ``power`` stage: read the run's trained predictions (``tidy/predictions.parquet``) and, unless
    ``use_prior``, the advantage model's posterior (``posterior/advantage.nc``) under ``analysis_dir``; write
    ``power.json``, ``curve.parquet`` and ``by_size.parquet`` under ``out`` (``analysis_dir/power``)."""
    from pathlib import Path

    from tqdm.auto import tqdm

    from reproduce.io import atomic_write_json, atomic_write_parquet

    analysis_dir = Path(analysis_dir)
    out = Path(out) if out else analysis_dir / "power"
    pred_path, post_path = analysis_dir / "tidy" / "predictions.parquet", analysis_dir / "posterior" / "advantage.nc"
    if not pred_path.exists():
        raise MissingInput(f"{pred_path} is missing: run the analysis stage first (`dvc repro analysis`)")
    posterior = None
    if not use_prior:
        if not post_path.exists():
            raise MissingInput(f"{post_path} is missing: run the analysis stage first, or pass --prior to "
                                    "use the prior medians of the heterogeneity")
        import arviz as az

        posterior = az.from_netcdf(str(post_path))
    predictions = pd.read_parquet(pred_path)
    design, source = design_from_run(predictions, posterior)
    bar = tqdm(total=len(ITEMS) + len(TASKS), desc="power curves", unit="design")
    result = analyse(design, rope, reps=reps, seed=seed, progress=lambda done, _t: bar.update(done - bar.n))
    bar.close()
    curve, by_size = result.pop("curve"), result.pop("by_size")
    result["heterogeneity_source"] = source
    result["observations_per_direction"] = {"run": observations_per_direction(predictions),
                                            "simulated": simulated_observations(design)}
    if validate_reps:
        import analysis.self_prediction.hierarchical as M

        # the grid point nearest the minimum detectable advantage: where the verdicts are most often split
        target = result["mda_observed_tasks"]
        row = curve.iloc[int(np.nanargmin(np.abs(curve["advantage"] - target)))] if np.isfinite(target) else curve.iloc[-1]
        vbar = tqdm(total=validate_reps, desc="validation fits", unit="fit")
        result["validation"] = validate(design, float(row["delta_logit"]), validate_reps, rope, seed,
                                        settings or M.SamplerSettings(draws=500, tune=500, chains=2, seed=seed),
                                        progress=lambda done, _t: vbar.update(done - vbar.n))
        vbar.close()
    atomic_write_parquet(out / "curve.parquet", curve)
    atomic_write_parquet(out / "by_size.parquet", by_size)
    atomic_write_json(out / "power.json", result)
    return {**result, "curve": curve, "by_size": by_size}


def _points(v) -> str:
    return f"{v:.1f} points" if v is not None and v == v else "more than the largest advantage simulated"


def power_text(r: dict) -> str:
    """What ``looking-inward power`` prints: the design, the minimum detectable advantages, power by size."""
    d = r["design"]
    lines = [f"design: {d['tasks']} held-out tasks, {d['items']} scored items per task and target, "
             f"{d['properties']} properties per task; heterogeneity: {r['heterogeneity_source']}",
             f"minimum advantage detected with 80% power (interval above +/- {r['rope']:g} points): "
             f"{_points(r['mda_observed_tasks'])} on the observed tasks, {_points(r['mda_new_tasks'])} for new tasks",
             r["by_size"].to_string(index=False, float_format=lambda x: f"{x:.2f}")]
    if "validation" in r:
        v = r["validation"]
        lines.append(f"validation at {v['advantage']:.1f} points ({v['reps']} Bayesian fits): "
                     f"power {v['power_bayes']:.2f} (approximation {v['power_approximation']:.2f}), verdicts agree in {100 * v['agreement']:.0f}%")
    return "\n".join(lines)
