"""Checks of the advantage model and its verdict rule on simulated data (``looking-inward check-models``).

* **Simulation-based calibration** (Talts et al. 2018): parameters drawn from the priors, data from the model,
  a fit to each simulated dataset; the rank of each true scalar parameter among ``thin`` posterior draws is
  uniform on 0..thin when the sampler and the model's implementation are right. Uniformity is tested per
  parameter with a chi-square test over equal-width rank bins.
* **Scenarios** with a known truth (:func:`analysis.self_prediction.simulate.simulate_directions`): a *null* (delta = 0, with
  unequal skill and unequal target weights), in which the share of replicates that the verdict rule calls an
  advantage is its false-positive rate; and an *effect with skill difference* (delta != 0, gamma != 0, unequal
  weights), in which the bias of the delta estimate and the coverage of its interval are measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from dataclasses import replace

import numpy as np
import pandas as pd

from reproduce.errors import MissingInput, DataError
from reproduce.io import atomic_path

import analysis.self_prediction.hierarchical as M
from analysis.bayes import release_compiled
from analysis.self_prediction.simulate import simulate_directions
from analysis.self_prediction.tidy import CELL, with_cell
from analysis.verdicts import POSITIVE, headline, verdict

#: the scalar parameters whose ranks SBC checks (every element of each)
SBC_PARAMETERS = ("alpha", "beta", "gamma", "f", "sigma", "tau", "sigma_unit")


def _release() -> None:
    """Free the compiled log densities of finished fits: each fit JIT-compiles its own model, and the
    compiled code's memory mappings are kept until the caches are cleared; a few hundred fits in one process
    otherwise exhaust the kernel's limit on mappings (``vm.max_map_count``) and the process aborts."""
    import gc

    import jax

    jax.clear_caches()
    gc.collect()


def _data(df: pd.DataFrame) -> M.ContrastData:
    """The published advantage model's structure: task, property and target x task x property cell (one
    finetune seed, so no self-trained-model factor)."""
    return M.advantage_data(with_cell(df), ["task", "property", CELL])


def _flat(da) -> tuple[list[str], np.ndarray]:
    """Labels and values (elements x samples) of a variable with dims (chain, draw, ...)."""
    stacked = da.stack(sample=("chain", "draw"))
    other = [d for d in stacked.dims if d != "sample"]
    if not other:
        return [da.name], stacked.to_numpy()[None, :]
    values = stacked.transpose(*other, "sample").to_numpy().reshape(-1, stacked.sizes["sample"])
    labels = [f"{da.name}[{', '.join(str(x) for x in ix)}]"
              for ix in np.ndindex(*[stacked.sizes[d] for d in other])]
    if len(other) == 1:
        labels = [f"{da.name}[{v}]" for v in stacked[other[0]].to_numpy()]
    return labels, values


def sbc(reps: int = 100, seed: int = 0, settings: M.SamplerSettings | None = None, items: int = 6,
        tasks: int = 2, properties: int = 2, thin: int = 99, progress=None) -> pd.DataFrame:
    """SBC ranks of the advantage model on a small two-model design: one row per replicate and scalar
    parameter, with ``rank`` in 0..``thin`` and the replicate's divergences."""
    import pymc as pm

    settings = settings or M.SamplerSettings(draws=500, tune=500, chains=2, target_accept=0.95)
    df, _ = simulate_directions(seed=seed, items=items, tasks=tasks, properties=properties)
    design = _data(df)
    with M.advantage_model(design):
        prior = pm.sample_prior_predictive(draws=reps, random_seed=seed)
    rows = []
    for r in range(reps):
        release_compiled()  # the previous replicate's compiled model
        k = prior.prior_predictive["y"].isel(chain=0, draw=r).to_numpy()
        data = replace(design, cells=design.cells.assign(k=k))
        idata = M.sample(M.advantage_model(data), replace(settings, seed=seed + 1 + r))
        div = int(idata.sample_stats["diverging"].sum())
        for name in SBC_PARAMETERS:
            labels, post = _flat(idata.posterior[name])
            _, true = _flat(prior.prior[name].isel(draw=[r]))
            step = max(1, post.shape[1] // thin)
            kept = post[:, ::step][:, :thin]
            for lab, t, d in zip(labels, true[:, 0], kept):
                rows.append({"rep": r, "parameter": lab, "rank": int((d < t).sum()), "thin": kept.shape[1],
                             "divergences": div})
        del idata
        _release()
        if progress:
            progress(r + 1, reps)
    return pd.DataFrame(rows)


def rank_uniformity(ranks: pd.DataFrame, bins: int | None = None) -> pd.DataFrame:
    """Per parameter: a chi-square test that the SBC ranks are uniform over ``bins`` equal-width bins
    (default: about reps / 10, between 4 and 20), its p-value, and the largest deviation of the ranks' ECDF
    from the uniform one."""
    from scipy import stats

    out = []
    for name, g in ranks.groupby("parameter", sort=True):
        n, L = len(g), int(g["thin"].iloc[0])
        b = bins or int(np.clip(n // 10, 4, 20))
        counts = np.histogram(g["rank"], bins=b, range=(0, L + 1))[0]
        chi2, p = stats.chisquare(counts)
        u = np.sort((g["rank"].to_numpy() + 0.5) / (L + 1))
        ecdf = np.arange(1, n + 1) / n
        out.append({"parameter": name, "reps": n, "bins": b, "chi2": float(chi2), "p_value": float(p),
                    "ecdf_max_deviation": float(np.max(np.abs(ecdf - u)))})
    return pd.DataFrame(out)


def scenario(reps: int, delta: float, skill: tuple[float, ...], weights: tuple[float, ...] | None, rope: float,
             seed: int = 0, settings: M.SamplerSettings | None = None, items: int = 20, tasks: int = 3,
             properties: int = 3, progress=None) -> pd.DataFrame:
    """Fit ``reps`` simulated datasets with a known delta and skill; one row per replicate with the truth,
    the delta estimate and interval (points), its verdict and the headline verdict."""
    settings = settings or M.SamplerSettings(draws=500, tune=500, chains=2, target_accept=0.95)
    rows = []
    for r in range(reps):
        release_compiled()  # the previous replicate's compiled model
        df, truth = simulate_directions(seed=seed + r, delta=delta, skill=skill, weights=weights, items=items,
                                        tasks=tasks, properties=properties)
        data = _data(df)
        idata = M.sample(M.advantage_model(data), replace(settings, seed=seed + r))
        q = M.advantage_quantities(idata, data)
        d = M.summarise_draws(q["delta"])
        dirs = [M.summarise_draws(v) for v in q["directions"].values()]
        dv = verdict(d["low"], d["high"], rope)
        rows.append({"rep": r, "true_delta": 100 * truth["delta"], "true_trial_weighted": 100 * truth["trial_weighted"],
                     "delta": d["mean"], "low": d["low"], "high": d["high"], "verdict": dv,
                     "headline": headline(dv, [verdict(x["low"], x["high"], rope) for x in dirs]),
                     "covered": d["low"] <= 100 * truth["delta"] <= d["high"],
                     "divergences": int(idata.sample_stats["diverging"].sum())})
        del idata
        _release()
        if progress:
            progress(r + 1, reps)
    return pd.DataFrame(rows)


def summarise_scenario(rows: pd.DataFrame, rope: float) -> dict:
    """The verdict rule's rates, bias and coverage of delta. delta is the advantage over the simulated design,
    so a replicate's true delta varies around the population value (task and property slopes); a verdict
    'positive' is false when that true delta is at most the ROPE: ``false_positive_rate`` is the share of
    such replicates called positive. ``positive_rate`` counts every replicate."""
    null = rows["true_delta"] <= rope
    fp = (rows.loc[null, "verdict"] == POSITIVE)
    return {"reps": len(rows), "positive_rate": float((rows["verdict"] == POSITIVE).mean()),
            "false_positive_rate": float(fp.mean()) if null.any() else None,
            "reps_true_within_rope": int(null.sum()),
            "every_direction_rate": float((rows["headline"] == "advantage in every direction").mean()),
            "bias": float((rows["delta"] - rows["true_delta"]).mean()),
            "trial_weighted_bias": float((rows["true_trial_weighted"] - rows["true_delta"]).mean()),
            "coverage": float(rows["covered"].mean()), "divergent_reps": int((rows["divergences"] > 0).sum())}


def plot_ranks(ranks: pd.DataFrame, path, bins: int | None = None) -> None:
    """SBC rank histograms, one facet per parameter (seaborn's FacetGrid over the long rank table), with the
    99% band of a uniform histogram's counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from scipy import stats

    n_reps = ranks["rep"].nunique()
    grid = sns.FacetGrid(ranks.sort_values("parameter"), col="parameter", col_wrap=4, height=1.9, aspect=1.37,
                         sharex=False, sharey=False, despine=False)

    def facet(rank, thin, **_):
        ax, n, L = plt.gca(), len(rank), int(thin.iloc[0])
        b = bins or int(np.clip(n // 10, 4, 20))
        lo, hi = stats.binom.ppf([0.005, 0.995], n, 1 / b)
        ax.axhspan(lo, hi, color="0.88", lw=0)
        sns.histplot(x=rank, bins=b, binrange=(0, L + 1), color="#0072B2", edgecolor="white", alpha=1, ax=ax)
        ax.set_yticks([])
        ax.set_xticks([0, L])

    grid.map(facet, "rank", "thin")
    grid.set_axis_labels("", "")
    grid.set_titles("{col_name}", size=8)
    grid.figure.suptitle(f"SBC ranks of the advantage model ({n_reps} replicates; grey: 99% band of a uniform "
                         "histogram)", fontsize=9)
    grid.figure.tight_layout()
    with atomic_path(path) as tmp:
        grid.figure.savefig(tmp, dpi=110, format="png")
    plt.close(grid.figure)


# ------------------------------------------------------------------------------- leave one task out
def _predict_new_task(idata, data: M.ContrastData, rows: pd.DataFrame, rng: np.random.Generator,
                      new: tuple[str, ...] = ("task", "cell")) -> np.ndarray:
    """Replicated 0/1 outcomes (rows x draws) of a held-out task's predictions under a fit without that task:
    the fitted fixed effects, the effects of observed levels (a property seen in other tasks keeps its
    own), and, per draw, new levels drawn from their fitted scales for the factors in ``new``, for levels not
    seen in the fit, and for answer units."""
    post = idata.posterior
    alpha = M._draws(idata, "alpha")
    S = alpha.shape[0]
    eta = np.broadcast_to(alpha, (len(rows), S)).copy()
    slope = np.broadcast_to(M._draws(idata, "beta"), (len(rows), S)).copy()
    for f in data.fixed:
        eta += M._level_draws(idata, f"f_{f}", f, rows[f])
    slope += M._level_draws(idata, f"s_{data.slope_by}", data.slope_by, rows[data.slope_by])
    factors = [str(f) for f in post["sigma"].coords["factor"].to_numpy()]
    sigma, tau = M._draws(idata, "sigma"), M._draws(idata, "tau")
    for j, g in enumerate(factors):
        seen = set(post[f"a_{g}"].coords[g].to_numpy())
        codes, levels = pd.factorize(rows[g], sort=True)
        fresh_a = sigma[j] * rng.standard_normal((len(levels), S))
        fresh_b = tau[j] * rng.standard_normal((len(levels), S))
        for i, level in enumerate(levels):
            if g not in new and level in seen:
                fresh_a[i] = M._level_draws(idata, f"a_{g}", g, [level])[0]
                fresh_b[i] = M._level_draws(idata, f"b_{g}", g, [level])[0]
        eta += fresh_a[codes]
        slope += fresh_b[codes]
    codes, levels = pd.factorize(rows[data.unit], sort=True)
    eta += (M._draws(idata, "sigma_unit") * rng.standard_normal((len(levels), S)))[codes]
    x = rows[data.x].to_numpy(float)[:, None] - (0.5 if data.centered else 0.0)
    return (rng.random(eta.shape) < M._sigmoid(eta + slope * x)).astype(int)


def leave_one_task_out(trained: pd.DataFrame, groups: list[str], settings: M.SamplerSettings, seed: int = 0,
                       progress=None, only: list[str] | None = None) -> pd.DataFrame:
    """Refit the advantage model without each held-out task in turn and predict that task's self and cross
    accuracy (a posterior-predictive interval that includes the new task's effects and the binomial noise);
    one row per task x arm with the observed accuracy, the predictive mean and 94% interval, and whether the
    interval covers the observation. ``trained``: the trained predictions with a ``cell`` column; ``only``:
    hold out just these tasks (each fit seeded as in the whole loop)."""
    tasks = sorted(trained["task"].unique())
    if len(tasks) < 3:
        raise DataError(f"leave-one-task-out needs at least 3 held-out tasks, the run has {len(tasks)}")
    rng = np.random.default_rng(seed)
    rows = []
    for i, task in enumerate(tasks):
        if only is not None and task not in only:
            continue
        fit_rows, out = trained[trained["task"] != task], trained[trained["task"] == task].reset_index(drop=True)
        data = M.advantage_data(fit_rows, groups)
        idata = M.sample(M.advantage_model(data), replace(settings, seed=settings.seed + i))
        rep = _predict_new_task(idata, data, out, rng)
        for arm, level in (("self", 1), ("cross", 0)):
            m = (out["self"] == level).to_numpy()
            acc = rep[m].mean(axis=0)
            obs = float(out.loc[m, "correct"].mean())
            lo, hi = np.quantile(acc, [M.Q_LOW, M.Q_HIGH])
            rows.append({"task": task, "arm": arm, "n": int(m.sum()), "observed": obs, "predicted": float(acc.mean()),
                         "low": float(lo), "high": float(hi), "covered": bool(lo <= obs <= hi),
                         "p_value": float((acc >= obs).mean())})
        del idata
        _release()
        if progress:
            progress(i + 1, len(tasks))
    return pd.DataFrame(rows)


def run_checks(profile, out: Path, draws: int, sbc_reps: int, scenario_reps: int, loto: bool,
               analysis: Path) -> dict:
    """``looking-inward check-models``: simulation-based calibration (``sbc_reps`` simulated data sets), the
    null and skill-gap scenarios (``scenario_reps`` each) and leave-one-task-out on the run's predictions, at
    ``draws`` draws per chain; each result into ``out`` (``checks.json`` keeps the earlier runs' others)."""
    from tqdm.auto import tqdm

    from reproduce.io import atomic_write_json, atomic_write_parquet

    rope = profile.analysis.rope
    settings = M.SamplerSettings(draws=draws, tune=draws, chains=2, target_accept=0.95,
                                 seed=profile.seed)
    out = Path(out)
    summary = {"rope": rope, "settings": {"draws": draws, "tune": draws, "chains": 2}}

    def bar(desc, total):
        b = tqdm(total=total, desc=desc, unit="fit")
        return b, lambda done, _total: b.update(done - b.n)

    if sbc_reps:
        b, cb = bar("SBC", sbc_reps)
        ranks = sbc(sbc_reps, seed=profile.seed, settings=settings, progress=cb)
        b.close()
        uni = rank_uniformity(ranks)
        atomic_write_parquet(out / "sbc_ranks.parquet", ranks)
        atomic_write_parquet(out / "sbc_uniformity.parquet", uni)
        plot_ranks(ranks, out / "sbc_ranks.png")
        summary["sbc"] = {"reps": sbc_reps, "parameters": len(uni), "min_p_value": float(uni["p_value"].min()),
                          "rejected_at_1pct": int((uni["p_value"] < 0.01).sum()),
                          "divergent_reps": int(ranks.groupby("rep")["divergences"].first().gt(0).sum())}
        print(uni.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for name, delta, skill, weights in (("null", 0.0, (0.5, -0.5), (1.5, 0.5)),
                                        ("skill_gap", 0.4, (0.5, -0.5), (1.5, 0.5))):
        if not scenario_reps:
            break
        b, cb = bar(f"scenario {name}", scenario_reps)
        rows = scenario(scenario_reps, delta, skill, weights, rope, seed=profile.seed,
                               settings=settings, progress=cb)
        b.close()
        atomic_write_parquet(out / f"scenario_{name}.parquet", rows)
        summary[f"scenario_{name}"] = {"delta_logit": delta, "skill_logit": list(skill), "weights": list(weights),
                                       **summarise_scenario(rows, rope)}
    if loto:
        import pandas as pd

        from analysis.self_prediction.fits import advantage_groups
        from analysis.self_prediction.tidy import main_trained, with_cell

        pred_path = Path(analysis) / "tidy" / "predictions.parquet"
        if not pred_path.exists():
            raise MissingInput(f"{pred_path} is missing: run the analysis stage first (`dvc repro analysis`)")
        pred = pd.read_parquet(pred_path)
        trained = with_cell(main_trained(pred))
        loto_settings = M.SamplerSettings(draws=profile.analysis.draws, tune=profile.analysis.tune,
                                          chains=profile.analysis.chains, target_accept=profile.analysis.target_accept,
                                          seed=profile.seed)
        b, cb = bar("leave one task out", trained["task"].nunique())
        loto = leave_one_task_out(trained, advantage_groups(trained), loto_settings, seed=profile.seed,
                                         progress=cb)
        b.close()
        atomic_write_parquet(out / "leave_one_task_out.parquet", loto)
        summary["leave_one_task_out"] = {"tasks": int(loto["task"].nunique()), "coverage": float(loto["covered"].mean()),
                                         "missed": [f"{r.task}/{r.arm}" for r in loto.itertuples() if not r.covered]}
        print(loto.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    # a run of some checks keeps the results of the others from an earlier run
    previous = json.loads((out / "checks.json").read_text()) if (out / "checks.json").exists() else {}
    atomic_write_json(out / "checks.json", {**previous, **summary})
    return summary
