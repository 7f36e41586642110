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


def verdicts(y_self: np.ndarray, y_cross: np.ndarray, rope: float, seeds: int = 1) -> dict[str, np.ndarray]:
    """Per replicate: the estimate (points) and whether each approximate interval lies above ``rope``: on the
    observed tasks, for new tasks, and for the headline's population (a new task and, with ``seeds`` >= 2
    finetuning seeds, a new finetuning run; the same as for new tasks with one seed).

    The population interval adds the spread between finetuning runs to the spread between tasks: the run
    effects are the self-trained models (one per direction and seed), whose deviations from their direction's
    mean give a pooled between-run variance on ``2 (seeds - 1)`` degrees of freedom; its share of the
    estimate's variance is that over ``2 seeds``, the task share is the tasks' means' variance over ``tasks``,
    and the t quantile takes the Welch-Satterthwaite degrees of freedom of the sum. Each sample variance also
    holds the other's noise, so the interval is a little wide (conservative)."""
    diff = (y_self.astype(float) - y_cross).mean(axis=4)  # per answer unit: (reps, 2, tasks, units)
    reps, _, tasks, units = diff.shape
    est = 100 * diff.mean(axis=(1, 2, 3))
    per_dir = diff.reshape(reps, 2, tasks * units)
    se_obs = 100 * np.sqrt((per_dir.var(axis=2, ddof=1) / (tasks * units)).sum(axis=1)) / 2
    per_task = diff.mean(axis=(1, 3))  # (reps, tasks)
    v_task = per_task.var(axis=1, ddof=1) / tasks
    se_new = 100 * np.sqrt(v_task)
    t = stats.t.ppf(Q_HIGH, tasks - 1)
    out = {"estimate": est, "observed_tasks": est - Z_HIGH * se_obs > rope, "new_tasks": est - t * se_new > rope}
    if seeds >= 2:
        runs = diff.reshape(reps, 2, tasks, seeds, units // seeds).mean(axis=(2, 4))  # (reps, 2, seeds)
        dev = runs - runs.mean(axis=2, keepdims=True)
        df_run = 2 * (seeds - 1)
        v_run = (dev ** 2).sum(axis=(1, 2)) / df_run / (2 * seeds)
        v = v_task + v_run
        with np.errstate(divide="ignore", invalid="ignore"):
            df = v ** 2 / (v_task ** 2 / (tasks - 1) + v_run ** 2 / df_run)
        df = np.where(np.isfinite(df), df, min(tasks - 1, df_run))
        out["population"] = est - stats.t.ppf(Q_HIGH, df) * 100 * np.sqrt(v) > rope
    else:
        out["population"] = out["new_tasks"]
    return out


def power_curve(design: Design, deltas, reps: int, rope: float, seed: int) -> pd.DataFrame:
    """Power of both verdicts at each true ``delta`` (log-odds) on ``design``: one row per delta with the
    mean true advantage in points."""
    rows = []
    # replicates in chunks of at most CHUNK simulated outcomes per arm (a design-only rule: the same chunks, and
    # so the same draws, on every machine), so that large designs fit in memory
    cell = 2 * design.tasks * design.seeds * design.items * design.properties
    size = max(1, min(reps, CHUNK // cell))
    for i, delta in enumerate(deltas):
        rng = np.random.default_rng([seed, i, design.tasks, design.items])
        truth, hits = [], {v: [] for v in VERDICTS}
        for start in range(0, reps, size):
            ys, yc, t = simulate(design, float(delta), min(size, reps - start), rng)
            v = verdicts(ys, yc, rope, design.seeds)
            truth.append(t)
            for k in VERDICTS:
                hits[k].append(v[k])
        rows.append({"delta_logit": float(delta), "advantage": float(np.concatenate(truth).mean()),
                     **{f"power_{k}": float(np.concatenate(hits[k]).mean()) for k in VERDICTS}, "reps": reps})
    return pd.DataFrame(rows)


CHUNK = 4_000_000


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


DELTAS = np.linspace(0.0, 3.2, 33)  # to about 30 points: the headline's minimum detectable advantage at the run's spread
ITEMS = (10, 20, 40, 80, 160, 320)
TASKS = (3, 6, 12, 24)
SEEDS = (2, 3, 5)  # the finetuning seeds of the designs searched for an effect's size (:func:`designs_for`)
SEARCH_TASKS = (6, 12, 24)  # the held-out tasks of the designs searched for an effect's size
#: the columns of a power curve and the keys of the minimum detectable advantages, per verdict
VERDICTS = ("observed_tasks", "new_tasks", "population")


def analyse(design: Design, rope: float, reps: int = 400, seed: int = 0, deltas=DELTAS, items=ITEMS,
            tasks=TASKS, progress=None) -> dict:
    """The design's power curve and minimum detectable advantages, and the curves of the minimum detectable
    advantage against items per task (at the design's tasks) and against tasks (at its items). Both grids
    include the design's own size, so each curve passes through the run's design (that point reuses its curve)."""
    items, tasks = sorted({*items, design.items}), sorted({*tasks, design.tasks})
    curve = power_curve(design, deltas, reps, rope, seed)
    out = {"design": asdict(design), "items_unit": items_unit(design.seeds), "rope": rope, "reps": reps,
           **mdas(curve)}
    rows = []
    variants = [("items", n, replace(design, items=n)) for n in items] + [("tasks", k, replace(design, tasks=k)) for k in tasks]
    for j, (axis, value, d) in enumerate(variants):
        c = curve if d == design else power_curve(d, deltas, reps, rope, seed)
        rows.append({"axis": axis, "value": value, **mdas(c),
                     **{f"power_at_max_{v}": float(c[f"power_{v}"].max()) for v in VERDICTS}})
        if progress:
            progress(j + 1, len(variants))
    return {**out, "curve": curve, "by_size": pd.DataFrame(rows)}


def mdas(curve: pd.DataFrame) -> dict[str, float]:
    """The minimum detectable advantage of each verdict on one power curve."""
    return {f"mda_{v}": minimum_detectable(curve, f"power_{v}") for v in VERDICTS}


def scaled_design(design: Design, tasks: float, items: float, seeds: int) -> Design:
    """``design`` at other sizes: its tasks and scored items multiplied by ``tasks`` and ``items`` (ratios of the
    configured sizes, so the run's share of scored items carries over) and ``seeds`` finetuning seeds; the
    fitted heterogeneity unchanged (the seed scales are the task's where the run had one seed)."""
    seed_level = {}
    if seeds >= 2 and design.seeds < 2:
        seed_level = {"sigma_seed": design.sigma_task, "tau_seed": design.tau_task}
    return replace(design, tasks=max(2, int(round(design.tasks * tasks))), items=max(1, int(round(design.items * items))),
                   seeds=seeds, **seed_level)


def delta_for(curve: pd.DataFrame, effect: float) -> float:
    """The true log-odds advantage whose mean advantage in points is ``effect`` on ``curve``'s design
    (interpolated; the grid's end where ``effect`` lies beyond it)."""
    c = curve.sort_values("delta_logit")
    return float(np.interp(effect, c["advantage"], c["delta_logit"]))


def designs_for(design: Design, effect: float, rope: float, reps: int, seed: int, tasks=SEARCH_TASKS, seeds=SEEDS,
                items=ITEMS, progress=None) -> pd.DataFrame:
    """The headline verdict's power (the population estimand) against a true advantage of ``effect`` points for
    each number of held-out tasks, finetuning seeds and scored items per task, target and seed, with the run's
    fitted heterogeneity: one row per design with its power at the effect, whether that reaches
    :data:`analysis.constants.POWER_TARGET` (``detects``) and its scored answer units per target
    (tasks x seeds x items). The true log-odds advantage is the one whose mean advantage is ``effect`` points on
    the run's design with that many seeds (the seeds' spread changes the points a log-odds advantage is worth)."""
    rows, combos = [], [(k, s, n) for k in tasks for s in seeds for n in sorted(items)]
    at = {}
    for j, (k, s, n) in enumerate(combos):
        if s not in at:  # the log-odds advantage worth ``effect`` points at this many seeds
            at[s] = delta_for(power_curve(scaled_design(design, 1.0, 1.0, s), DELTAS, reps, rope, seed), effect)
        d = scaled_design(replace(design, tasks=k, items=n), 1.0, 1.0, s)
        p = float(power_curve(d, [at[s]], reps, rope, seed)["power_population"].iloc[0])
        rows.append({"tasks": k, "seeds": s, "items": n, "delta_logit": at[s], "power_population": p,
                     "detects": bool(p >= POWER_TARGET), "units": k * s * n})
        if progress:
            progress(j + 1, len(combos))
    return pd.DataFrame(rows)


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
    """Fit the Bayesian advantage model to ``reps`` replicates at ``delta`` and compare, replicate by replicate, its
    verdicts (:func:`analysis.self_prediction.population.rule_verdicts`: positive, the interval above the ROPE)
    with the approximation's: delta on the observed tasks, and the headline's population estimand (a new task
    and, with several seeds, a new finetuning run). Each fit goes through the analysis's convergence gate
    (:func:`analysis.self_prediction.null.sample_gated_record`, its own sampler seed); the powers and agreements
    are over the fits that passed (``gate_passed``; ``gate_failed``: the others, which the analysis would not
    publish)."""
    from dataclasses import replace

    import analysis.self_prediction.hierarchical as M
    from analysis.bayes import release_compiled
    from analysis.self_prediction.null import sample_gated_record
    from analysis.self_prediction.population import rule_verdicts
    from analysis.verdicts import POSITIVE

    rng = np.random.default_rng([seed, 99])
    ys, yc, truth = simulate(design, delta, reps, rng)
    fast = verdicts(ys, yc, rope, design.seeds)
    groups = ["task", "property", CELL] + (["object_model"] if design.seeds >= 2 else [])
    bayes = {"observed_tasks": [], "population": []}
    passed = []
    for r in range(reps):
        df = _rows(ys[r], yc[r], design.items)
        data = M.advantage_data(df, groups)
        fit_seed = int(np.random.default_rng([seed, 99, r]).integers(2**31 - 1))
        idata, record = sample_gated_record(M.advantage_model(data), replace(settings, seed=fit_seed), f"power-{r}")
        passed.append(record["gate_passed"])
        if idata is not None:
            v = rule_verdicts(idata, data, rope, seed + r)
            bayes["observed_tasks"].append(v["conditional"]["verdict"] == POSITIVE)
            bayes["population"].append(v["population"]["verdict"] == POSITIVE)
        del idata
        release_compiled()
        if progress:
            progress(r + 1, reps)
    ok = np.array(passed, dtype=bool)
    out = {"delta_logit": delta, "reps": reps, "advantage": float(truth.mean()), "draws": settings.draws,
           "chains": settings.chains, "gate_passed": int(ok.sum()), "gate_failed": int((~ok).sum())}
    for k, b in bayes.items():
        b, f = np.array(b, dtype=bool), fast[k][ok]
        name = "" if k == "observed_tasks" else "_population"
        nan = float("nan")
        out.update({f"power_bayes{name}": float(b.mean()) if len(b) else nan,
                    f"power_approximation{name}": float(f.mean()) if len(f) else nan,
                    f"agreement{name}": float((b == f).mean()) if len(b) else nan})
    return out


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


def paper_sizes(profile, paper) -> dict:
    """The ``paper`` profile's sizes against the run's ``profile``: its held-out tasks and evaluated items per
    task as ratios of the run's configured ones, and its finetuning seeds (:func:`scaled_design`). The paper
    profile's settings are read unrecorded: they are a dependency of the stage (``profiles/paper.yaml``), not
    settings of the run."""
    from reproduce.config import unrecorded

    run_tasks, run_items = len(profile.tasks.test), profile.items_per_task.test
    with unrecorded():
        tasks, items, seeds = len(paper.tasks.test), paper.items_per_task.test, len(paper.finetune.seeds)
    return {"tasks": tasks / run_tasks, "items": items / run_items, "seeds": seeds}


#: the self-prediction advantage the paper reports for its strongest open model, in points: Llama-3-70B predicting
#: itself at 48.5% against GPT-4o predicting it at about 35% (Binder et al. 2024, experiment 1a); the effect the
#: design search (:func:`designs_for`) sizes a design to detect
PAPER_SELF, PAPER_CROSS = 48.5, 35.0
PAPER_GAP = PAPER_SELF - PAPER_CROSS


def run_power_stage(profile, analysis_dir, paper_profile, reps: int = 400, validate_reps: int | None = None,
                    use_prior: bool = False) -> dict:
    """The ``power`` stage for ``profile``: :func:`run_power` with the validation fits as the null simulation fits
    its replicates (``analysis.null_reps`` of them unless ``validate_reps`` says otherwise; the analysis's chains,
    tuning and gate at ``analysis.null_draws`` draws per chain) and ``paper_profile``'s sizes against the run's."""
    from analysis.bayes import sampler_settings

    fits = profile.analysis.null_reps if validate_reps is None else validate_reps
    settings = replace(sampler_settings(profile, 30), draws=profile.analysis.null_draws)
    return run_power(analysis_dir, profile.analysis.rope, profile.seed, reps=reps, validate_reps=fits,
                     use_prior=use_prior, settings=settings, paper=paper_sizes(profile, paper_profile))


def run_power(analysis_dir, rope: float, seed: int, reps: int = 400, validate_reps: int = 0, use_prior: bool = False,
              settings=None, out=None, paper: dict | None = None, effect: float | None = PAPER_GAP,
              search_reps: int = 200) -> dict:
    """The ``power`` stage: read the run's trained predictions (``tidy/predictions.parquet``) and, unless
    ``use_prior``, the advantage model's posterior (``posterior/advantage.nc``) under ``analysis_dir``; write
    ``power.json``, ``curve.parquet`` and ``by_size.parquet`` under ``out`` (``analysis_dir/power``).

    ``paper``: the ``paper`` profile's sizes against the run's (``{"tasks": ratio, "items": ratio, "seeds": n}``),
    whose design's minimum detectable advantages go in ``power.json`` as ``paper``; ``effect`` (points): the
    designs that detect it (:func:`designs_for`, ``search_reps`` replicates per grid point) as ``designs_for``;
    ``validate_reps``: Bayesian fits at the grid point nearest the headline's minimum detectable advantage,
    compared with the approximation (``validation``; ``settings``: their sampler settings)."""
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
    if paper:
        d = scaled_design(design, paper["tasks"], paper["items"], int(paper["seeds"]))
        result["paper"] = {"design": asdict(d), "sizes": dict(paper), **mdas(power_curve(d, DELTAS, reps, rope, seed))}
    if effect is not None:
        sbar = tqdm(total=len(SEEDS) * len(SEARCH_TASKS) * len(ITEMS), desc="designs for the effect", unit="design")
        table = designs_for(design, effect, rope, search_reps, seed, progress=lambda done, _t: sbar.update(done - sbar.n))
        sbar.close()
        hit = table[table["detects"]]
        result["designs_for"] = {"effect": effect, "paper_self": PAPER_SELF, "paper_cross": PAPER_CROSS,
                                 "reps": search_reps, "rows": table.to_dict("records"),
                                 "smallest": hit.sort_values(["units", "seeds", "tasks"]).iloc[0].to_dict() if len(hit) else None}
    if validate_reps:
        import analysis.self_prediction.hierarchical as M

        # the grid point nearest the headline's minimum detectable advantage: where its verdicts are most often split
        target = result["mda_population"]
        row = curve.iloc[int(np.nanargmin(np.abs(curve["advantage"] - target)))] if np.isfinite(target) else curve.iloc[-1]
        vbar = tqdm(total=validate_reps, desc="validation fits", unit="fit")
        result["validation"] = validate(design, float(row["delta_logit"]), validate_reps, rope, seed,
                                        settings or M.SamplerSettings(draws=500, tune=500, chains=4, seed=seed,
                                                                      target_accept=0.9, target_accept_retry=0.99),
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
