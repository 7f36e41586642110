"""How often experiment 1's verdict rules call an advantage where there is none, measured by simulation from the
run's own fitted heterogeneity (``looking-inward null``, the ``null`` stage).

A *null world* is the run's design with the outcomes drawn again from the advantage model
(:func:`analysis.self_prediction.hierarchical.advantage_model`) at the posterior medians of the run's fit: the
intercept, the target effects, the per-target self-slope deviations (the two directions' difference: the run's
skill gap) and every scale (task, property, cell, finetuning run, answer unit), with new random effects drawn
for every replicate. The design is the run's own table of trained predictions: its held-out tasks, properties,
answer units, finetuning seeds and unequal trials per target. Each replicate is fitted as the analysis fits the
run: the Bayesian model, the analysis's chains, tuning steps and target acceptances (``analysis.null_draws`` draws
per chain), its own sampler seed, and the same convergence gate with the same cures
(:func:`analysis.bayes.sample_gated`); the verdict rules are then applied as the analysis applies them. A replicate
whose fit still fails the gate gets no verdict, as the analysis would publish none: the rates are over the
replicates that passed, and ``gate`` counts both.

Two worlds:

* ``population_null``: the population advantage at equal skill is 0 (``beta = 0``): on a new task from a new
  finetuning run, self- and cross-prediction are equally good on average, while the directions keep the run's
  skill gap. A positive headline here is a false positive of the paper's claim. The verdict on the observed
  tasks and runs (``delta``, the secondary, conditional verdict) is applied too, to show its rate.
* ``direction_null``: the least favourable world for the rule "an advantage in every direction": every
  direction but the weakest has the run's gap as an advantage, the weakest has none (its population advantage
  is 0). The rule's false positives are the replicates where it still calls every direction an advantage.

The sibling control's contrasts (:mod:`analysis.self_prediction.sibling`) get null worlds of their own, fitted
from their own posteriors and drawn on their own rows:

* ``equal_null`` for self minus sibling: the sibling predicts as well as the self-predictor in every direction
  (``beta = 0`` and every per-target deviation 0); a positive population verdict, or a positive verdict for any
  target, is a false positive;
* ``population_null`` for sibling minus cross, as for self minus cross: no population advantage, the run's gap
  between the directions kept.

Each rate comes with a Wilson interval (95%) and its number of replicates. The replicates are shards under
``data/.work/null``: a stage that is stopped resumes where it was.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reproduce.errors import MissingInput
from reproduce.versioning import code_version

import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.population as population
import analysis.self_prediction.sibling as S
from analysis.bayes import release_compiled, sigmoid
from analysis.intervals import wilson
from analysis.verdicts import POSITIVE

WORLDS = ("population_null", "direction_null", "equal_null")
#: the contrasts whose verdicts are simulated, and their null worlds: experiment 1's advantage (its rows and
#: posterior: the analysis's advantage model) and the sibling control's two
#: (``data/analysis/tidy/sibling_arms.parquet``, ``posterior/sibling_<contrast>.nc``)
CONTRAST_WORLDS = {"self_minus_cross": ("population_null", "direction_null"),
                   "self_minus_sibling": ("equal_null",), "sibling_minus_cross": ("population_null",)}
#: the modules whose code decides a replicate's row (the shards' key holds their source)
REPLICATE_MODULES = ("analysis.self_prediction.null", "analysis.self_prediction.population",
                     "analysis.self_prediction.hierarchical", "analysis.self_prediction.priors", "analysis.bayes",
                     "analysis.verdicts", "analysis.self_prediction.sibling")
#: the headline's answers that claim an advantage
ADVANTAGE = ("advantage in every direction", "advantage on average, not in every direction")
#: a replicate's row where its fit failed the convergence gate: no verdict, none positive
NO_VERDICT = {"population_low": float("nan"), "population_mean": float("nan"), "population_verdict": "",
              "every_direction": False, "any_direction": False, "headline": "", "headline_advantage": False,
              "conditional_low": float("nan"), "conditional_mean": float("nan"), "conditional_positive": False,
              "conditional_every_direction": False}
#: the largest false-positive rate a verdict rule may have for its verdict word to be used
MAX_RATE = 0.05


def fitted_world(posterior, groups: list[str]) -> dict:
    """The posterior medians of the advantage model's parameters that a null world keeps: ``alpha``,
    ``f_target`` and ``s_target`` per target, ``f_predictor`` per predictor (three or more models), the
    intercept and self-slope scales per grouping factor (``sigma``, ``tau``), ``sigma_unit`` and, where the
    model has it, ``sigma_pair`` per arm."""
    post = posterior.posterior
    med = lambda v: float(np.median(np.asarray(v)))  # noqa: E731
    by = lambda name, dim: {str(k): med(post[name].sel({dim: k})) for k in post[name].coords[dim].to_numpy()}  # noqa: E731
    w = {"alpha": med(post["alpha"]), "f_target": by("f_target", "target"), "s_target": by("s_target", "target"),
         "sigma": {g: med(post["sigma"].sel(factor=g)) for g in groups},
         "tau": {g: med(post["tau"].sel(factor=g)) for g in groups}, "sigma_unit": med(post["sigma_unit"])}
    if "f_predictor" in post:
        w["f_predictor"] = by("f_predictor", "predictor")
    if "sigma_pair" in post:  # an intercept per answer unit x arm, one scale per arm (0: cross, 1: self)
        w["sigma_pair"] = {int(k): med(post["sigma_pair"].sel(arm=k)) for k in post["sigma_pair"].coords["arm"].to_numpy()}
    return w


def world_beta(world: dict, name: str) -> float:
    """The population self slope (log-odds) of the null world ``name``: 0, or the value that puts the weakest
    direction's population slope at 0 (``direction_null``). With three or more models a direction's slope is
    ``beta + s_t`` and its skill difference enters its arms, so the weakest is taken over the slopes only."""
    if name in ("population_null", "equal_null"):
        return 0.0
    if name == "direction_null":
        return -min(world["s_target"].values())
    raise ValueError(f"unknown null world {name!r}: one of {WORLDS}")


def simulate(skeleton: pd.DataFrame, world: dict, beta: float, groups: list[str], rng: np.random.Generator
             ) -> pd.DataFrame:
    """``skeleton`` (the run's trained predictions: target, predictor, self and every grouping factor and unit)
    with ``correct`` drawn again: ``logit P(correct) = alpha + f_target + [f_predictor] + sum_g a_g + unit +
    [unit x arm] + (self - 1/2) (beta + s_target + sum_g b_g)``, new random effects from the world's scales."""
    eta = world["alpha"] + skeleton["target"].map(world["f_target"]).to_numpy(float)
    if "f_predictor" in world:
        eta = eta + skeleton["predictor"].map(world["f_predictor"]).fillna(0.0).to_numpy(float)
    slope = beta + skeleton["target"].map(world["s_target"]).to_numpy(float)
    for g in groups:
        codes, levels = pd.factorize(skeleton[g], sort=True)
        eta = eta + rng.normal(0.0, world["sigma"][g], len(levels))[codes]
        slope = slope + rng.normal(0.0, world["tau"][g], len(levels))[codes]
    codes, levels = pd.factorize(skeleton["unit"], sort=True)
    eta = eta + rng.normal(0.0, world["sigma_unit"], len(levels))[codes]
    if "sigma_pair" in world:
        arm = skeleton["self"].to_numpy(int)
        scales = np.array([world["sigma_pair"][0], world["sigma_pair"][1]])
        eta = eta + (rng.standard_normal((len(levels), 2)) * scales)[codes, arm]
    p = sigmoid(eta + (skeleton["self"].to_numpy(float) - 0.5) * slope)
    return skeleton.assign(correct=(rng.random(len(skeleton)) < p).astype(int))


def rules(idata, data: M.ContrastData, rope: float, seed: int) -> dict:
    """The verdicts the analysis takes from one fit (:func:`analysis.self_prediction.population.rule_verdicts`,
    as :func:`analysis.self_prediction.fits._advantage` takes them): the population estimand's and its
    directions', the headline, and the conditional delta's and directions'."""
    r = population.rule_verdicts(idata, data, rope, seed)
    pop, cond = r["population"], r["conditional"]
    return {"population_low": pop["low"], "population_mean": pop["mean"], "population_verdict": pop["verdict"],
            "every_direction": all(v["verdict"] == POSITIVE for v in r["population_directions"].values()),
            "any_direction": any(v["verdict"] == POSITIVE for v in r["population_directions"].values()),
            "headline": r["headline"], "headline_advantage": r["headline"] in ADVANTAGE,
            "conditional_low": cond["low"], "conditional_mean": cond["mean"],
            "conditional_positive": cond["verdict"] == POSITIVE,
            "conditional_every_direction": all(v["verdict"] == POSITIVE for v in r["directions"].values())}


def sample_gated_record(model, settings, name: str) -> tuple:
    """:func:`analysis.bayes.sample_gated` for the simulations (the null worlds, the power check), where a fit that
    fails the gate is an outcome to count, not an error: ``(idata, record)``, with ``idata`` None when the last
    fit failed. ``record``: ``gate_passed``, the passing fit's r_hat (max), bulk and tail ESS (min), divergences
    and target acceptance (NaN and -1 when it failed), ``samplings`` (1 to 3) and ``gate_problems`` (what the
    last failing fit missed; empty when it passed)."""
    import analysis.bayes as B

    try:
        idata, d = B.sample_gated(model, settings, name)
    except B.ConvergenceError as err:
        nan = float("nan")
        return None, {"gate_passed": False, "r_hat_max": nan, "ess_bulk_min": nan, "ess_tail_min": nan,
                      "divergences": -1, "target_accept": nan, "samplings": err.samplings,
                      "gate_problems": err.problems}
    return idata, {"gate_passed": True, "r_hat_max": float(d["r_hat_max"]), "ess_bulk_min": float(d["ess_bulk_min"]),
                   "ess_tail_min": float(d["ess_tail_min"]), "divergences": int(d["divergences"]),
                   "target_accept": float(d["target_accept"]),
                   "samplings": 1 + ("diverged" in d) + ("refit" in d), "gate_problems": ""}


def _stream(seed: int, name: str, rep: int, contrast: str) -> list[int]:
    """The random stream of a replicate: experiment 1's as it always was, the sibling contrasts' apart."""
    key = [seed, WORLDS.index(name), rep]
    return key if contrast == "self_minus_cross" else key + [100 + list(CONTRAST_WORLDS).index(contrast)]


def replicate_seed(seed: int, name: str, rep: int, contrast: str = "self_minus_cross") -> int:
    """The sampler seed of replicate ``rep`` of the world ``name``: its own, so that no two fits share chains."""
    return int(np.random.default_rng(_stream(seed, name, rep, contrast) + [1]).integers(2**31 - 1))


def replicate(skeleton: pd.DataFrame, world: dict, name: str, groups: list[str], rep: int, rope: float, settings,
              seed: int, contrast: str = "self_minus_cross") -> dict:
    """One replicate of the null world ``name`` of ``contrast``: simulate (``equal_null``: every per-target
    deviation at 0 too), fit through the convergence gate (sampler seed :func:`replicate_seed`; the sibling
    contrasts without predictor effects, as the analysis fits them), apply the rules (:data:`NO_VERDICT` when the
    fit failed the gate), and record the fit's diagnostics."""
    from dataclasses import replace

    rng = np.random.default_rng(_stream(seed, name, rep, contrast))
    if name == "equal_null":
        world = {**world, "s_target": {t: 0.0 for t in world["s_target"]}}
    rows = simulate(skeleton, world, world_beta(world, name), groups, rng)
    data = M.advantage_data(rows, groups, predictor_effects=None if contrast == "self_minus_cross" else False)
    idata, record = sample_gated_record(
        M.advantage_model(data), replace(settings, seed=replicate_seed(seed, name, rep, contrast)),
        f"null-{contrast}-{name}-{rep}")
    verdicts = rules(idata, data, rope, seed + rep) if idata is not None else NO_VERDICT
    del idata
    release_compiled()  # hundreds of fits run in one process
    return {"contrast": contrast, "world": name, "rep": rep, **verdicts, **record}


def rate(hits: np.ndarray) -> dict:
    """A false-positive rate with its Wilson 95% interval and replicates (none: the rate is NaN, not within)."""
    k, n = int(np.sum(hits)), int(len(hits))
    low, high = wilson(k, n)
    return {"rate": k / n if n else float("nan"), "low": low, "high": high, "positives": k, "reps": n,
            "within": bool(n and k / n <= MAX_RATE)}


def summarise(reps: pd.DataFrame) -> dict:
    """The rates of every rule in every world, over the replicates whose fit passed the convergence gate: the
    headline rule and the population verdict in the population null (with the conditional verdict's rate beside
    them), the every-direction rule in the direction null; and ``gate``: per world, the replicates that passed
    and failed the gate, and those that needed a second or third sampling to pass."""
    if "contrast" in reps:
        sibling = reps[reps["contrast"] != "self_minus_cross"]
        reps = reps[reps["contrast"] == "self_minus_cross"]
    else:
        sibling = reps.iloc[0:0]
    passed = reps[reps["gate_passed"]]
    p = passed[passed["world"] == "population_null"]
    d = passed[passed["world"] == "direction_null"]
    out = {}
    if (reps["world"] == "population_null").any():  # rates over the passing fits: NaN of 0 when none passed
        out["headline"] = rate(p["headline_advantage"].to_numpy())
        out["population"] = rate((p["population_verdict"] == POSITIVE).to_numpy())
        out["conditional"] = rate(p["conditional_positive"].to_numpy())
    if (reps["world"] == "direction_null").any():
        out["every_direction"] = rate(d["every_direction"].to_numpy())
        out["every_direction_conditional"] = rate(d["conditional_every_direction"].to_numpy())
    out["gate"] = {w: _gate_counts(g) for w, g in reps.groupby("world", sort=False)}
    if len(sibling):
        out["sibling"] = {c: _contrast_rates(g) for c, g in sibling.groupby("contrast", sort=False)}
    return out


def _contrast_rates(reps: pd.DataFrame) -> dict:
    """A sibling contrast's rates in its null world, over the fits that passed the gate: its population verdict
    (positive) and, where the world has every direction at 0 (``equal_null``), a positive population verdict
    for any target."""
    ok = reps[reps["gate_passed"]]
    world = str(reps["world"].iloc[0])
    return {"world": world, "population": rate((ok["population_verdict"] == POSITIVE).to_numpy()),
            **({"any_direction": rate(ok["any_direction"].to_numpy())} if world == "equal_null" else {}),
            "gate": _gate_counts(reps)}


def _gate_counts(reps: pd.DataFrame) -> dict:
    """How replicates' fits fared at the gate: passed, failed, and passed only after a cure (resampled)."""
    ok = reps["gate_passed"]
    return {"passed": int(ok.sum()), "failed": int((~ok).sum()), "resampled": int((ok & (reps["samplings"] > 1)).sum())}


def shard_fingerprint(world: dict, groups: list[str], rope: float, settings, skeleton: pd.DataFrame) -> dict:
    """The key of the null simulation's shards: the fitted world, the design (its skeleton's hash), the rule's
    ROPE, the sampler settings and the source of the code that simulates, fits and judges a replicate
    (:data:`REPLICATE_MODULES`), so that an edit to that code starts fresh shards."""
    return {"world": world, "groups": groups, "rope": rope, "settings": repr(settings),
            "skeleton": pd.util.hash_pandas_object(skeleton, index=False).sum().item(), "version": 2,
            "code": code_version(*REPLICATE_MODULES)}


def run_null(analysis_dir, profile, reps: int | None = None, out=None, work=None, progress=None) -> dict:
    """The ``null`` stage: read the run's trained predictions and the advantage model's posterior under
    ``analysis_dir``, simulate ``reps`` replicates of each world (resumable shards under ``work``), and write
    ``null.json`` and ``replicates.parquet`` under ``out`` (``analysis_dir/null``). ``reps``: the profile's
    ``analysis.null_reps`` unless given."""
    from dataclasses import replace

    import arviz as az

    import analysis.self_prediction.tidy as tidy
    from analysis.bayes import sampler_settings
    from reproduce.io import atomic_write_json, atomic_write_parquet
    from reproduce.shards import ShardStore

    analysis_dir = Path(analysis_dir)
    out = Path(out) if out else analysis_dir / "null"
    pred_path, post_path = analysis_dir / "tidy" / "predictions.parquet", analysis_dir / "posterior" / "advantage.nc"
    for p in (pred_path, post_path):
        if not p.exists():
            raise MissingInput(f"{p} is missing: run the analysis stage first (`dvc repro analysis`)")
    trained = tidy.with_cell(tidy.main_trained(pd.read_parquet(pred_path)))
    groups = population.advantage_groups(trained)
    world = fitted_world(az.from_netcdf(str(post_path)), groups)
    skeleton = trained[["target", "predictor", "self", "unit", *groups]].reset_index(drop=True)
    settings = replace(sampler_settings(profile, 20), draws=profile.analysis.null_draws)
    rope = profile.analysis.rope
    reps = profile.analysis.null_reps if reps is None else reps
    sibling_reps = reps if profile.analysis.null_reps_sibling is None else min(reps, profile.analysis.null_reps_sibling)
    fingerprint = shard_fingerprint(world, groups, rope, settings, skeleton)
    store = ShardStore(Path(work) if work else analysis_dir.parent / ".work" / "null", fingerprint)
    # the sibling control's contrasts, where the analysis fitted them: their rows, worlds and stores
    designs = {"self_minus_cross": (skeleton, world, store)}
    arms_path = analysis_dir / "tidy" / "sibling_arms.parquet"
    arms = pd.read_parquet(arms_path) if arms_path.exists() else None
    for contrast, (first, second) in S.CONTRASTS.items():
        post = analysis_dir / "posterior" / f"sibling_{contrast}.nc"
        if arms is None or not len(arms) or not post.exists():
            continue
        sk = S.pair_rows(arms, first, second)[["target", "predictor", "self", "unit", *groups]]
        w = fitted_world(az.from_netcdf(str(post)), groups)
        designs[contrast] = (sk, w, ShardStore((Path(work) if work else analysis_dir.parent / ".work" / "null")
                                               / contrast, {**shard_fingerprint(w, groups, rope, settings, sk),
                                                            "contrast": contrast}))
    rows, done = [], 0
    reps_of = {c: reps if c == "self_minus_cross" else sibling_reps for c in designs}
    total = sum(reps_of[c] * len(CONTRAST_WORLDS[c]) for c in designs)
    for contrast, (sk, w, st) in designs.items():
        for name in CONTRAST_WORLDS[contrast]:
            for r in range(reps_of[contrast]):
                rows.append(st.cached(f"{name}-{r:04d}", lambda: pd.DataFrame([replicate(
                    sk, w, name, groups, r, rope, settings, profile.seed, contrast)])))
                done += 1
                if progress:
                    progress(done, total)
    table = pd.concat(rows, ignore_index=True)
    result = {"rates": summarise(table), "world": world, "groups": groups, "reps": reps,
              "reps_by_contrast": {c: n for c, n in reps_of.items()}, "rope": rope,
              "contrast_worlds": {c: {"worlds": list(CONTRAST_WORLDS[c]), "world": w}
                                  for c, (_, w, _) in designs.items() if c != "self_minus_cross"},
              "max_rate": MAX_RATE, "sampler": {"draws": settings.draws, "tune": settings.tune,
                                                "chains": settings.chains, "target_accept": settings.target_accept,
                                                "target_accept_retry": settings.target_accept_retry}}
    atomic_write_parquet(out / "replicates.parquet", table)
    atomic_write_json(out / "null.json", result)
    return result


def null_text(r: dict) -> str:
    """What ``looking-inward null`` prints: each rule's false-positive rate."""
    names = {"headline": "headline (population estimand), population null",
             "population": "population verdict, population null",
             "conditional": "conditional delta (observed tasks and runs), population null",
             "every_direction": "every direction (population), least favourable null",
             "every_direction_conditional": "every direction (observed tasks and runs), least favourable null"}
    gate = "; ".join(f"{w}: {g['passed']} passed, {g['failed']} failed" for w, g in r["rates"].get("gate", {}).items())
    lines = [f"false-positive rates ({r['reps']} replicates per world, over the fits that passed the convergence "
             f"gate ({gate}); Wilson 95% intervals; limit {100 * r['max_rate']:g}%):"]
    for key, label in names.items():
        if key in r["rates"]:
            x = r["rates"][key]
            lines.append(f"  {label}: {_rate_line(x)}")
    for contrast, x in r["rates"].get("sibling", {}).items():
        any_target = f", any target {_rate_line(x['any_direction'])}" if "any_direction" in x else ""
        lines.append(f"  {contrast.replace('_', ' ')} ({x['world']}; {x['gate']['passed']} fits passed the gate, "
                     f"{x['gate']['failed']} failed): population verdict {_rate_line(x['population'])}{any_target}")
    return "\n".join(lines)


def _rate_line(x: dict) -> str:
    return f"{100 * x['rate']:.1f}% [{100 * x['low']:.1f}, {100 * x['high']:.1f}] ({x['positives']} of {x['reps']})"
