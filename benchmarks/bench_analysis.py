"""Wall time of the ``analysis`` stage end to end on synthetic tables in the ``default`` profile's shape, with
where the time goes, and (``--compare``) the advantage model on counts vs rows and numpyro vs PyMC's NUTS.

    python benchmarks/bench_analysis.py [--profile default] [--seed 0] [--keep DIR]
    python benchmarks/bench_analysis.py --compare [--items 60] [--draws 1000]

The tables come from :func:`analysis.self_prediction.simulate.simulate_stage_tables` in the profile's shape (its test tasks
with every property, its test items, seeds, training-set and scaling sizes and calibration subset; 2 models,
self/cross runs both ways plus the scaling runs, calibration and behaviour change), and
:func:`analysis.self_prediction.stage.run_analysis` runs on them unmodified with the profile's ``analysis`` settings (draws,
tune, chains, target_accept, bootstrap). The breakdown times the stage's calls into :mod:`analysis.self_prediction.hierarchical`
and :mod:`analysis.self_prediction.frequentist` (sampling includes JAX compilation); "other" is everything else (reading and
tidying the tables, accuracy tables, writing). ``--report-gate`` prints a failed convergence gate instead of
stopping, to time the whole stage on tables whose fits do not pass it. Each line shows wall seconds and the process's CPU seconds
(all threads): on a busy machine wall time is inflated, so the 1-minute load average before the run is
printed too.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import tempfile
import time
from pathlib import Path

import analysis.bayes as B
import analysis.self_prediction.frequentist as F
import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.predictive as P

TIMED = {M: ["contrast_model", "calibration_model", "behaviour_model", "cell_probabilities", "marginal_effects",
             "accuracy_draws"],
         B: ["sample", "check_convergence"],
         P: ["prior_predictive_accuracy", "posterior_predictive_check"],
         F: ["cluster_bootstrap_difference", "glm_cluster"]}


def machine() -> str:
    """CPU model, cores this process may use, and the 1-minute load average."""
    model = "unknown CPU"
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or model
    from reproduce.hardware import usable_cpus

    return f"{model}, {usable_cpus()} cores, load average {os.getloadavg()[0]:.2f} (1 min)"


def _timed(records: dict, name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if records.get("_depth"):  # a timed call inside another one (marginal_effects -> cell_probabilities)
            return fn(*args, **kwargs)
        records["_depth"] = 1
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            records["_depth"] = 0
            w, c = records.setdefault(name, [0.0, 0.0, 0])[:2]
            records[name] = [w + time.perf_counter() - wall, c + time.process_time() - cpu, records[name][2] + 1]
    return wrapper


def stage(profile_name: str, seed: int, keep: Path | None, report_gate: bool = False) -> None:
    import analysis.self_prediction.stage as S
    from analysis.self_prediction.simulate import simulate_stage_tables, write_stage_tables
    from reproduce.config import load_params

    _, profile = load_params(profile=profile_name)
    a = profile.analysis
    print(machine())
    print(f"profile {profile_name}: {a.sampler} NUTS, {a.chains} chains x ({a.tune} tune + {a.draws} draws), "
          f"target_accept {a.target_accept}, {a.bootstrap} bootstrap resamples")
    root = keep or Path(tempfile.mkdtemp(prefix="bench_analysis_"))
    ft = profile.finetune
    shape = dict(tasks=tuple(profile.tasks.test), items=profile.items_per_task.test,
                 calibration_items=profile.sampling.items_per_task, n_samples=profile.sampling.n_samples)
    if ft is not None:
        shape.update(full_examples=ft.max_examples or 480, scaling_sizes=tuple(ft.scaling_sizes), seeds=tuple(ft.seeds))
    print("tables shaped as the profile: " + ", ".join(f"{k} {v}" for k, v in shape.items()))
    data = write_stage_tables(simulate_stage_tables(seed=seed, **shape), root / "data")
    records: dict = {}
    originals = {(mod, n): getattr(mod, n) for mod, names in TIMED.items() for n in names}
    for (mod, n), fn in originals.items():
        setattr(mod, n, _timed(records, n, fn))
    if report_gate:  # time the whole stage even on tables whose fits have, say, a divergent transition
        gate = B.check_convergence

        def reporting_gate(idata, name, **kwargs):
            try:
                return gate(idata, name, **kwargs)
            except M.ConvergenceError as e:
                print(f"GATE (reported, not raised): {e}")
                return M.diagnostics(idata)
        B.check_convergence = _timed(records, "check_convergence", reporting_gate)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        metrics = S.run_analysis(profile, data, root / "analysis")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        for (mod, n), fn in originals.items():
            setattr(mod, n, fn)
    records.pop("_depth", None)
    print(f"\nrun_analysis end to end: {wall:.1f} s wall, {cpu:.1f} s CPU  (outputs in {root / 'analysis'})")
    print(f"{'part':<30} {'calls':>5} {'wall s':>8} {'CPU s':>8}")
    for name, (w, c, n) in sorted(records.items(), key=lambda kv: -kv[1][0]):
        print(f"{name:<30} {n:>5} {w:8.1f} {c:8.1f}")
    rest_w, rest_c = wall - sum(v[0] for v in records.values()), cpu - sum(v[1] for v in records.values())
    print(f"{'other':<30} {'':>5} {rest_w:8.1f} {rest_c:8.1f}")
    for name in ("advantage", "training_effect"):
        d = metrics[name]["diagnostics"]
        print(f"{name}: r_hat {d['r_hat_max']:.2f}, bulk ESS {d['ess_bulk_min']:.0f}, {d['divergences']} divergences")


def timed(data, sampler: str, draws: int, seed: int):
    settings = M.SamplerSettings(sampler=sampler, draws=draws, tune=draws, chains=4, seed=seed)
    t = time.perf_counter()
    idata = M.sample(M.contrast_model(data), settings)
    elapsed = time.perf_counter() - t
    eff = M.marginal_effects(idata, data).iloc[0]
    d = M.diagnostics(idata)
    print(f"  {sampler:<8} {len(data.cells):>6} cells  {elapsed:7.1f} s  advantage {100 * eff['mean']:+.2f} points  "
          f"r_hat {d['r_hat_max']:.3f}  ESS {d['ess_bulk_min']:.0f}  divergences {d['divergences']}")
    return elapsed


def compare(items: int, draws: int) -> None:
    """The advantage model without the per-unit intercept (random intercepts and self slopes for target, task
    and property), which is exactly the model that aggregates to counts, on simulated data in the default
    profile's shape (2 targets x 6 tasks x 4 properties x items). Each fit includes compilation."""
    from analysis.self_prediction.simulate import simulate_predictions

    print(machine())
    df, truth = simulate_predictions(seed=0, tasks=6, properties=4, items=items)
    groups = ["target", "task", "property"]
    counts = M.to_cells(df, "self", groups)
    rows = M.to_cells(df, "self", groups, aggregate=False)
    print(f"{len(df)} observations; true advantage {100 * truth:+.2f} points; 4 chains x {draws} + {draws}")
    t_counts = timed(counts, "numpyro", draws, 1)
    t_rows = timed(rows, "numpyro", draws, 1)
    t_pymc = timed(counts, "pymc", draws, 1)
    print(f"counts vs rows (numpyro):        {t_rows / t_counts:5.1f}x faster")
    print(f"numpyro vs PyMC NUTS (counts):   {t_pymc / t_counts:5.1f}x faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default", help="profile (profiles/NAME.yaml) whose analysis settings run (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic tables (default: %(default)s)")
    ap.add_argument("--keep", type=Path, help="write the tables and outputs here instead of a temporary folder")
    ap.add_argument("--report-gate", action="store_true",
                    help="print a failed convergence gate and go on (the stage itself stops there); for timing only")
    ap.add_argument("--compare", action="store_true", help="instead: counts vs rows, numpyro vs PyMC's NUTS")
    ap.add_argument("--items", type=int, default=60, help="--compare: items per target x task (default: %(default)s)")
    ap.add_argument("--draws", type=int, default=1000, help="--compare: draws and tuning steps per chain (default: %(default)s)")
    args = ap.parse_args()
    if args.compare:
        compare(args.items, args.draws)
    else:
        stage(args.profile, args.seed, args.keep, args.report_gate)


if __name__ == "__main__":
    main()
