"""Command line: the DVC stage entry points and a few helpers. ``looking-inward --help`` lists them.

The composition root: it sits outside the layers it composes (``reproduce`` -> ``analysis`` -> ``figures`` ->
``report``), so no layer imports a later one. It parses arguments and dispatches, and is no DVC stage's
dependency (:mod:`reproduce.pipeline`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _root_from_argv(argv: list[str]) -> str | None:
    """``--root DIR`` (before the command), read before the settings module fixes the project root."""
    for i, a in enumerate(argv):
        if a == "--root" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--root="):
            return a.split("=", 1)[1]
    return None


if (_root := _root_from_argv(sys.argv[1:])) is not None:
    os.environ["LOOKING_INWARD_ROOT"] = _root

from reproduce.config import DEFAULT_PARAMS, REPO_ROOT, load_params, record_reads  # noqa: E402
from reproduce.errors import MissingInput, ProjectError, UsageError  # noqa: E402

#: every stage command records its wall time here (not a DVC output: it survives re-runs of other stages)
PROFILE_HELP = "run profiles/PROFILE.yaml as written instead of the params file (e.g. smoke, paper)"


def _profile(args):
    name, profile = load_params(args.params, args.profile)
    print(f"profile: {name}", file=sys.stderr)
    return profile


def _print_manifests(manifests: list[dict]) -> None:
    for m in manifests:
        size = f"{m['split']:<5} {m['n_items']:>4} items" if "split" in m else \
            f"{sum(m['file_lines'].values()):>10} lines"
        print(f"{m['name']:<18} {m['version']:<6} {size}  release sha256 {m['release_sha256'][:12]}")


def cmd_check(args) -> None:
    from reproduce.config import check_params

    print(f"{args.params}: valid ({check_params(Path(args.params))})")


def cmd_datasets(args) -> None:
    from reproduce.self_prediction.policy_data import write_policy_dataset
    from reproduce.self_prediction.task_datasets import run_datasets

    _print_manifests(run_datasets(Path(args.out)) + [write_policy_dataset(Path(args.out))])


def cmd_injection_datasets(args) -> None:
    from reproduce.injection.data import write_injection_dataset
    from reproduce.injection.lindsey_data import write_variants

    _print_manifests([write_injection_dataset(Path(args.out)), *write_variants(Path(args.out))])


def cmd_mirror_datasets(args) -> None:
    from reproduce.mirror.data import write_mirror_dataset

    _print_manifests([write_mirror_dataset(Path(args.out))])


def cmd_citation(args) -> None:
    from reproduce.citation import read_manifests, write_citation

    print(f"wrote {write_citation(read_manifests(Path(args.data_raw), 'all'), Path(args.out))}")


def _only_these(written: dict, folders: tuple[str, ...]) -> None:
    """Each folder of ``folders`` (under data/) keeps exactly the tables this run wrote (one per written name)."""
    from reproduce.io import keep_only
    from reproduce.stage import DATA

    for folder in folders:
        for gone in keep_only(DATA / folder, {f"{name}.parquet" for name in written}):
            print(f"removed {folder}/{gone}: not a model of these settings")


def cmd_object_level(args) -> None:
    from reproduce.self_prediction.runs import Plan
    from reproduce.self_prediction.object_level import run_object_level

    written = run_object_level(Plan(_profile(args)))
    for name, path in written.items():
        print(f"{name}: {path}")
    _only_these(written, ("object_level", "object_samples"))


def cmd_meta_untrained(args) -> None:
    from reproduce.self_prediction.runs import Plan
    from reproduce.self_prediction.meta_level import run_meta_untrained

    print(run_meta_untrained(Plan(_profile(args))))


def _print_runs(runs: list[dict]) -> None:
    for run in runs:
        print(f"{run['run']:<48} {run['kind']:<5} {run['n_examples']:>5} pairs  loss {run['first_loss']:.3f} -> "
              f"{run['final_loss']:.3f}")


def cmd_finetune_self(args) -> None:
    from reproduce.self_prediction.runs import Plan
    from reproduce.self_prediction.finetuning import run_finetune_self

    _print_runs(run_finetune_self(Plan(_profile(args))))


def cmd_object_level_trained(args) -> None:
    from reproduce.self_prediction.runs import Plan
    from reproduce.self_prediction.object_level import run_object_level_trained

    written = run_object_level_trained(Plan(_profile(args)))
    for name, path in written.items():
        print(f"{name}: {path}")
    _only_these(written, ("object_level_trained", "object_samples_trained"))


def cmd_finetune_cross(args) -> None:
    from reproduce.self_prediction.runs import Plan
    from reproduce.self_prediction.finetuning import run_finetune_cross

    _print_runs(run_finetune_cross(Plan(_profile(args))))


def cmd_meta_trained(args) -> None:
    from reproduce.self_prediction.runs import Plan
    from reproduce.self_prediction.meta_level import run_meta_trained

    print(run_meta_trained(Plan(_profile(args))))


def cmd_calibration(args) -> None:
    from reproduce.self_prediction.calibration import run_calibration
    from reproduce.self_prediction.runs import Plan

    print(run_calibration(Plan(_profile(args))))


def cmd_behaviour_change(args) -> None:
    from reproduce.self_prediction.behaviour_change import run_behaviour_change
    from reproduce.self_prediction.runs import Plan

    print(run_behaviour_change(Plan(_profile(args))))


def cmd_policy_reports(args) -> None:
    from reproduce.self_prediction.policy_reports import run_policy_reports
    from reproduce.self_prediction.runs import Plan

    print(run_policy_reports(Plan(_profile(args))))


def cmd_concept_injection(args) -> None:
    from reproduce.injection.experiment import run_concept_injection
    from reproduce.stage import DATA, WORK, StagePlan

    for part, path in run_concept_injection(StagePlan(_profile(args)), DATA / "injection" / "raw", WORK).items():
        print(f"{part}: {path}")


def cmd_mirror(args) -> None:
    from reproduce.mirror.experiment import run_mirror
    from reproduce.stage import DATA, WORK, StagePlan

    for part, path in run_mirror(StagePlan(_profile(args)), DATA / "mirror" / "raw", WORK).items():
        print(f"{part}: {path}")


def cmd_mirror_analysis(args) -> None:
    from analysis.mirror.stage import main

    main(_profile(args))


def cmd_mirror_figures(args) -> None:
    from figures.mirror.plots import run_mirror_figures

    for name, entry in run_mirror_figures().items():
        print(f"{name}: {', '.join(entry['files'])}")


def cmd_injection_analysis(args) -> None:
    from analysis.injection.stage import main

    main(_profile(args))


def cmd_injection_figures(args) -> None:
    from figures.injection.plots import run_injection_figures

    for name, entry in run_injection_figures().items():
        print(f"{name}: {', '.join(entry['files'])}")


def cmd_analysis(args) -> None:
    from analysis.self_prediction.stage import main

    main(_profile(args))


def cmd_check_models(args) -> None:
    import json

    from analysis.self_prediction.recovery import run_checks

    summary = run_checks(_profile(args), Path(args.out), args.draws, args.sbc, args.scenario_reps, args.loto,
                         Path(args.analysis))
    print(json.dumps(summary, indent=1))


def cmd_power(args) -> None:
    from analysis.self_prediction.power import power_text, run_power_stage

    print(power_text(run_power_stage(_profile(args), Path(args.analysis), load_params(args.params, "paper")[1],
                                     reps=args.reps, validate_reps=args.validate, use_prior=args.prior)))


def _analysis_args(s) -> None:
    """The settings (``--params``, ``--profile``) and the analysis outputs (``--analysis``) of a command that reads
    a finished analysis (``power``, ``null-simulation``)."""
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
    s.add_argument("--profile", default=None, help=PROFILE_HELP)
    s.add_argument("--analysis", default=str(REPO_ROOT / "data/analysis"),
                   help="analysis outputs (default: %(default)s)")


def cmd_null_simulation(args) -> None:
    from tqdm.auto import tqdm

    from analysis.self_prediction.null import null_text, run_null

    bar = tqdm(desc="null replicates", unit="fit")

    def progress(done, total):
        bar.total = total
        bar.update(done - bar.n)

    result = run_null(Path(args.analysis), _profile(args), reps=args.reps, progress=progress)
    bar.close()
    print(null_text(result))


def cmd_figures(args) -> None:
    from figures.self_prediction.stage import run_figures

    for name, entry in run_figures(Path(args.analysis), Path(args.out), args.only or None).items():
        print(f"{name:<22} {' '.join(entry['files'])}")


def cmd_report(args) -> None:
    from reproduce.config import edits
    from report.provenance import write_page
    from report.stage import provenance_inputs, run_report

    name, profile = load_params(args.params, args.profile)
    if args.profile is None:  # a configuration edited since it was written from its profile says so
        changed = edits(args.params)[1]
        if changed:
            name += f", edited: {', '.join(changed)}"
    for kind, path in run_report(profile, name, Path(args.analysis), Path(args.figures), out=Path(args.out),
                                 engine=args.engine).items():
        print(f"{kind}: {path}")
    print(f"figure provenance: {write_page(*provenance_inputs())}")


def cmd_release(args) -> None:
    from reproduce.self_prediction.release import write_cards

    for name, path in write_cards(params=Path(args.params)).items():
        print(f"{name}: {path}")


def cmd_artifacts(args) -> None:
    from reproduce.cards import artifacts
    from reproduce.self_prediction.release import BEHAVIOUR

    for line in artifacts(Path(args.data_raw), BEHAVIOUR, tag=args.tag, check=args.check):
        print(line)


def cmd_dvc_deps(args) -> None:
    from reproduce.errors import DataError
    from reproduce.pipeline import sync_code_deps

    changed = sync_code_deps(write=not args.check)
    if changed and args.check:
        raise DataError(f"dvc.yaml's code deps are out of step for {', '.join(changed)}; run `looking-inward "
                        f"dvc-deps` to rewrite them")
    print(f"rewrote the code deps of {', '.join(changed)}" if changed else "dvc.yaml's code deps are exact")


def cmd_screenshot(args) -> None:
    from report import blank_fraction, screenshot

    png = screenshot(Path(args.html), Path(args.out), args.width, args.height, args.chromium)
    blank = blank_fraction(png)
    print(f"{png}: {100 * (1 - blank):.1f}% of the page is not white")
    if blank > 0.99:
        raise ProjectError(f"the screenshot {png} is blank: the page did not render")


def cmd_import_release(args) -> None:
    from reproduce.self_prediction.original_release import import_release

    for m in import_release(Path(args.release_dir), Path(args.out), split=args.split, prefix=args.prefix,
                            force=args.force):
        skipped = ", ".join(f"{p} ({n} rows)" for p, n in m["skipped_properties"].items())
        print(f"{m['name']:<36} {m['split']:<5} {m['n_items']:>5} items  {', '.join(m['properties'])}"
              + (f"  skipped: {skipped}" if skipped else ""))


def cmd_models(args) -> None:
    from reproduce.lm.model_check import check_specs

    check_specs(args.specs, load_weights=args.load, report=print)


def cmd_timings(args) -> None:
    from reproduce.time_estimate import save_reference
    from reproduce.timings import timings_text

    path = Path(args.file)
    if not path.exists():
        raise MissingInput(f"{path} does not exist yet; it is written by each stage of `dvc repro`")
    print(f"wrote {save_reference(path, Path(args.save_reference))}" if args.save_reference
          else timings_text(path, every_run=args.all))


def cmd_plan(args) -> None:
    from reproduce.lm.memory_plan import main_plan
    from reproduce.time_estimate import time_estimate_text
    from reproduce.self_prediction.runs import Plan

    profile = _profile(args)
    print(main_plan(Plan(profile), args.device, args.memory_gib, extra=_experiments_plan(profile)))
    print()
    print(time_estimate_text(profile, args.device))


def _experiments_plan(profile):
    """A plan without task datasets carrying the concept-injection and mirror stages' bounds, for the sections the
    profile sets (None without either)."""
    import reproduce.injection.experiment as injection
    import reproduce.mirror.experiment as mirror
    from reproduce.stage import StagePlan

    if profile.injection is None and profile.mirror is None:
        return None
    plan = StagePlan(profile)
    if profile.injection is not None:
        injection.register_bound(plan)
    if profile.mirror is not None:
        mirror.register_bound(plan)
    return plan


def cmd_hardware(args) -> None:
    import torch

    from reproduce.hardware import describe, forget_probe, resolve_dtype

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.measure:
        forget_probe()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    c = resolve_dtype("auto", device)
    print(f"{describe(device)}\ndtype auto -> {c.dtype}: {c.reason}")


def cmd_use_profile(args) -> None:
    from reproduce.config import use_profile

    print(f"{use_profile(args.name, args.params, force=args.force)}: written from profiles/{args.name}.yaml")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="looking-inward",
        description="Reproduce 'Looking Inward' (Binder et al. 2024) with local models. The pipeline runs with "
                    "`dvc repro`; these commands are its stages and helpers.",
    )
    p.add_argument("--root", default=None,
                   help="the project to work on: its params.yaml, profiles/, data_raw/ and data/ (default: the "
                        "nearest folder at or above the working directory with dvc.yaml and params.yaml; "
                        "$LOOKING_INWARD_ROOT sets it too)")
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of expected errors too (bad params, missing inputs); unexpected "
                        "errors always show theirs")
    sub = p.add_subparsers(dest="command", required=True)
    add_parser = sub.add_parser

    def sentence(summary: str) -> str:
        return summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else ".")

    def stage_sentence(name: str) -> str:
        return (f"Stage `{name.replace('-', '_')}` of dvc.yaml, which lists its inputs, outputs and the settings it "
                "reads; `dvc repro` runs it when one of them has changed.")

    def command(name: str, **kwargs) -> argparse.ArgumentParser:
        """A subcommand whose ``--help`` opens with its one-line summary where it has no longer description."""
        if kwargs.get("description") is None and kwargs.get("help"):
            kwargs["description"] = sentence(kwargs["help"])
        return add_parser(name, **kwargs)

    sub.add_parser = command

    def stage(name: str, func, help: str) -> None:
        """A pipeline stage's command: reads params.yaml (or --params FILE, or --profile NAME)."""
        sp = sub.add_parser(name, help=help, description=(
            f"{sentence(help)} {stage_sentence(name)} Run alone, it reads params.yaml (or --params FILE, or "
            "--profile NAME) and writes the outputs dvc.yaml names."))
        sp.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
        sp.add_argument("--profile", default=None, help=PROFILE_HELP)
        sp.set_defaults(func=func, timed=name)

    s = sub.add_parser("check", help="check params.yaml: every setting known and in range, every setting a stage "
                                     "reads present (the pipeline's first stage)")
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
    s.set_defaults(func=cmd_check, timed="check")
    for name, func, what in (("datasets", cmd_datasets, "the task datasets of experiments 1-3 and experiment 4's questions"),
                             ("injection-datasets", cmd_injection_datasets, "the concept-injection dataset"),
                             ("mirror-datasets", cmd_mirror_datasets, "the mirror-test dataset")):
        s = sub.add_parser(name, help=f"generate {what} into data_raw/, each with its manifest and card")
        s.add_argument("--out", default=str(REPO_ROOT / "data_raw"), help="output folder (default: %(default)s)")
        s.set_defaults(func=func, timed=name)
    s = sub.add_parser("citation", help="write CITATION.cff: the software, the original study and every dataset "
                                        "version under data_raw/ with its release hash")
    s.add_argument("--data-raw", default=str(REPO_ROOT / "data_raw"), help="datasets folder (default: %(default)s)")
    s.add_argument("--out", default=str(REPO_ROOT / "CITATION.cff"), help="output file (default: %(default)s)")
    s.set_defaults(func=cmd_citation, timed="citation")

    stage("object-level", cmd_object_level,
          "greedy object-level answers of every model (and T=1 samples on the calibration subset)")
    stage("meta-untrained", cmd_meta_untrained,
          "hypothetical answers and option distributions of every untrained predictor")
    stage("finetune-self", cmd_finetune_self,
          "LoRA-finetune every model on its own train-task behaviour (self-prediction), once per finetuning seed")
    stage("object-level-trained", cmd_object_level_trained,
          "object-level answers (greedy, and T=1 samples) of every self-trained model: experiment 1's ground truth")
    stage("finetune-cross", cmd_finetune_cross,
          "LoRA-finetune every other model on each self-trained model's train-task behaviour (cross-prediction), "
          "and the data-scaling sweep")
    stage("meta-trained", cmd_meta_trained,
          "hypothetical answers of every finetuned predictor on the held-out test tasks")
    stage("calibration", cmd_calibration,
          "experiment 2: object-level T=1 distributions next to every predictor's option distribution")
    stage("behaviour-change", cmd_behaviour_change,
          "experiment 3: finetune each self-trained model on another model's answers, then record its old and new "
          "behaviour and its new predictions")
    stage("policy-reports", cmd_policy_reports,
          "experiment 4: each model of experiment 3 reports its own tendency on the A/B tasks before and after the "
          "change, an observer reports it from the model's answers, and the behaviour is measured by the same "
          "option probabilities")
    stage("concept-injection", cmd_concept_injection,
          "concept injection (Lindsey 2025): concept vectors, then detection, identification, free text, prefill "
          "detection and intentional control at every layer fraction x strength of params `injection:`")
    stage("injection-analysis", cmd_injection_analysis,
          "the concept-injection statistics: hierarchical logistic models (behind the convergence gate), raw "
          "rates with Wilson intervals, grader agreement, and the numbers the manuscript quotes")
    sub.add_parser("injection-figures", help="draw the concept-injection figures from its analysis outputs") \
        .set_defaults(func=cmd_injection_figures, timed="injection-figures")
    stage("mirror", cmd_mirror,
          "the mirror test: each model answers conversation scripts itself, then its earlier replies are "
          "corrupted (or another model's are shown as its own); noticing, recognition, imitation and surprise")
    stage("mirror-analysis", cmd_mirror_analysis,
          "the mirror-test statistics: hierarchical models of noticing, recognition, imitation and surprise by "
          "corruption kind, level and turn, with conversation and model effects, behind the convergence gate")
    sub.add_parser("mirror-figures", help="draw the mirror-test figures from its analysis outputs") \
        .set_defaults(func=cmd_mirror_figures, timed="mirror-figures")
    stage("analysis", cmd_analysis,
          "Bayesian hierarchical models (behind a convergence gate), frequentist cross-checks, metrics and the "
          "numbers the manuscript quotes")

    s = sub.add_parser(
        "check-models",
        help="check the advantage model and its verdict rule on simulated data: simulation-based calibration, "
             "the false-positive rate under a null, and the bias of delta when the models' skill differs",
        description="Simulation-based calibration (ranks of prior draws among posterior draws; uniform when the "
                    "model and sampler are right) and two scenarios with a known truth: a null (delta = 0, "
                    "unequal skill and target weights), whose rate of 'positive' verdicts is the verdict rule's "
                    "false-positive rate, and an effect with a skill gap, where delta's bias and interval "
                    "coverage are measured. Writes data/checks/ (checks.json, parquet tables, sbc_ranks.png). About 7 s per "
                    "fit on 2 AVX-512 CPU cores, 12 s without AVX-512: the defaults (100 SBC fits, 2 x 40 scenario "
                    "fits) take 25 to 40 minutes.")
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
    s.add_argument("--profile", default=None, help=PROFILE_HELP)
    s.add_argument("--sbc", type=int, default=100, help="SBC replicates (0: skip; default %(default)s)")
    s.add_argument("--scenario-reps", type=int, default=40,
                   help="replicates per scenario (0: skip; default %(default)s)")
    s.add_argument("--draws", type=int, default=500,
                   help="kept draws (and tuning steps) per chain, 2 chains (default %(default)s)")
    s.add_argument("--loto", action="store_true",
                   help="also refit the advantage model on the run's own tables without each held-out task in turn "
                        "and check that the predictive interval covers that task's accuracy (one fit per task, "
                        "at the profile's sampler settings)")
    s.add_argument("--analysis", default=str(REPO_ROOT / "data/analysis"),
                   help="analysis outputs for --loto (default: %(default)s)")
    s.add_argument("--out", default=str(REPO_ROOT / "data/checks"), help="output folder (default: %(default)s)")
    s.set_defaults(func=cmd_check_models)

    s = sub.add_parser(
        "power",
        help="power of the advantage verdict for the run's design: the minimum detectable advantage and curves "
             "against items per task and number of tasks",
        description="Simulates the run's design (held-out tasks, seeds, properties per task, and as many scored "
                    "observations per direction as the run has on average, as a balanced two-model design) "
                    "with the heterogeneity of its fitted advantage model (posterior medians; --prior: the "
                    "priors' medians) at a grid of true advantages, and reports how often the verdict rule "
                    "calls an advantage: on the observed tasks (the manuscript's verdict on delta) and for new "
                    "tasks (an interval from the spread between tasks). The intervals are normal/t "
                    "approximations of the Bayesian ones (seconds for thousands of replicates); --validate N "
                    "fits the Bayesian model to N replicates and reports the agreement. Writes "
                    "data/analysis/power/ (power.json, curve.parquet, by_size.parquet).")
    _analysis_args(s)
    s.add_argument("--reps", type=int, default=400, help="replicates per grid point (default %(default)s)")
    s.add_argument("--validate", type=int, default=None,
                   help="Bayesian fits to compare with the approximation at the headline's minimum detectable "
                        "advantage (default: analysis.null_reps; 0: none)")
    s.add_argument("--prior", action="store_true", help="heterogeneity from the priors, not the fitted run")
    s.set_defaults(func=cmd_power, timed="power")

    s = sub.add_parser(
        "null-simulation",
        help="false-positive rates of experiment 1's verdict rules, by simulation from the run's fitted heterogeneity",
        description="Draws the run's design again from the fitted advantage model (posterior medians: intercept, "
                    "target effects, the directions' skill gap and every scale) with no population advantage "
                    "(and, for the every-direction rule, with the weakest direction at none), fits each replicate "
                    "with the Bayesian model and applies the verdict rules as the analysis does. Writes "
                    "data/analysis/null/ (null.json, replicates.parquet); replicates are resumable shards under "
                    "data/.work/null.")
    _analysis_args(s)
    s.add_argument("--reps", type=int, default=None,
                   help="replicates per null world (default: the profile's analysis.null_reps)")
    s.set_defaults(func=cmd_null_simulation, timed="null-simulation")

    s = sub.add_parser("figures", help="draw every figure from the analysis outputs (PNG and SVG)")
    s.add_argument("--analysis", default=str(REPO_ROOT / "data/analysis"),
                   help="analysis outputs (default: %(default)s)")
    s.add_argument("--out", default=str(REPO_ROOT / "data/figures"), help="output folder (default: %(default)s)")
    s.add_argument("--only", nargs="*", help="draw only these figures (names: see figures/self_prediction/plots.py FIGURES)")
    s.set_defaults(func=cmd_figures, timed="figures")

    s = sub.add_parser("report", help="render the manuscript paper/index.qmd to self-contained HTML and PDF "
                                      "(Quarto when installed, else pandoc + the project's Lua filter)")
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
    s.add_argument("--profile", default=None, help=PROFILE_HELP)
    s.add_argument("--analysis", default=str(REPO_ROOT / "data/analysis"),
                   help="analysis outputs (default: %(default)s)")
    s.add_argument("--figures", default=str(REPO_ROOT / "data/figures"), help="figures (default: %(default)s)")
    s.add_argument("--out", default=str(REPO_ROOT / "data/report"), help="output folder (default: %(default)s)")
    s.add_argument("--engine", choices=["auto", "quarto", "pandoc"], default="auto",
                   help="auto: quarto if on the PATH, else pandoc (default: %(default)s)")
    s.set_defaults(func=cmd_report, timed="report")

    s = sub.add_parser("screenshot", help="open the rendered report in headless Chromium and save a PNG; "
                                          "fails if the page is blank")
    s.add_argument("--html", default=str(REPO_ROOT / "data/report/index.html"),
                   help="page to open (default: %(default)s)")
    s.add_argument("--out", default=str(REPO_ROOT / "data/report/screenshot.png"),
                   help="PNG to write (default: %(default)s)")
    s.add_argument("--width", type=int, default=1280, help="window width in pixels (default: %(default)s)")
    s.add_argument("--height", type=int, default=2400, help="window height in pixels (default: %(default)s)")
    s.add_argument("--chromium", default=None, help="browser executable (default: chromium from the PATH)")
    s.set_defaults(func=cmd_screenshot)

    s = sub.add_parser("import-release", help="convert the Looking Inward dataset release (jsonl) into data_raw/ tasks")
    s.add_argument("release_dir", help="folder of the release, with train/ and test/ (or jsonl files directly)")
    s.add_argument("--out", default=str(REPO_ROOT / "data_raw"), help="output folder (default: %(default)s)")
    s.add_argument("--split", choices=["train", "test"], default=None,
                   help="split for files not under train/ or test/")
    s.add_argument("--prefix", default="li_", help="prefix for imported task names (default: %(default)s)")
    s.add_argument("--force", action="store_true", help="replace datasets of the same name already in --out "
                                                        "(without it, the import stops and names them)")
    s.set_defaults(func=cmd_import_release)

    s = sub.add_parser(
        "models", help="resolve model specs offline (and optionally load them)",
        description="Resolves each model spec offline and says where its weights are; nothing is ever downloaded, "
                    "and a spec whose weights are not on disk fails with what to do. A spec is one of: an embedded "
                    "model (smollm2-135m, gemma3-270m); a Hugging Face id already in the local cache (org/name); a "
                    "local model directory; a .gguf file; NAME=SPEC, which names the model NAME in every table; "
                    "random:SHAPE[@TOKENIZER], a model of a real architecture with random weights (SHAPE: tiny, "
                    "qwen2-0.5b, llama-1b, llama-3b, qwen2-7b, llama-8b, llama-70b, or a directory or cached id "
                    "with a config.json). Example: looking-inward models --load "
                    "llama8b=meta-llama/Llama-3.1-8B-Instruct")
    s.add_argument("specs", nargs="*", help="model specs (default: the embedded models)")
    s.add_argument("--load", action="store_true", help="also load each model and report its prompt format")
    s.set_defaults(func=cmd_models)

    s = sub.add_parser("timings", help="the wall time of each pipeline stage in the last complete run, and the hardware it ran on")
    from reproduce.timings import TIMINGS

    s.add_argument("--file", default=str(TIMINGS), help="timings file (default: %(default)s)")
    s.add_argument("--all", action="store_true", help="list every recorded run first (complete or partial)")
    s.add_argument("--save-reference", metavar="JSON", default=None,
                   help="after a whole `dvc repro`, write the run (stage times, settings, this machine's matmul rate "
                        "and workload probe) "
                        "as the reference that `looking-inward plan` scales its time estimate from; run it on the "
                        "run's machine, in its environment (the package's own: reproduce/reference_run.json from a "
                        "float32 run, reproduce/reference_run_bf16.json from a run where bf16 is fast)")
    s.set_defaults(func=cmd_timings)

    s = sub.add_parser("hardware", help="the hardware, and the dtype `auto` picks on it (bf16 only where a timed "
                                        "matmul shows it fast); the measurement is cached per machine")
    s.add_argument("--measure", action="store_true", help="forget the cached measurement and time it again")
    s.add_argument("--threads", type=int, default=None, help="thread count to measure at (default: all cores)")
    s.set_defaults(func=cmd_hardware)

    s = sub.add_parser(
        "plan", help="before running: each model stage's work (prompts, tokens) and estimated peak memory, and "
                     "each stage's time on this machine; fails when a model cannot fit the device",
        description="Reads only configs and tokenizers (no weights): parameter counts from the architecture, token "
                    "counts from the profile's own prompts, and an estimate of each stage's peak memory (weights, "
                    "key/value cache, activations, logits; LoRA training with its base dtype and gradient "
                    "checkpointing). Exits with status 2, naming the stage and the fix, when a model cannot fit. "
                    "Then each stage's time on this CPU: the reference run's (reproduce/reference_run.json, or "
                    "reference_run_bf16.json where bf16 is fast) scaled by a workload probe timed here and on the "
                    "reference's machine (a small model's inference and training step, and small numpy "
                    "operations; about 10 s), for the stages whose settings equal the reference's. "
                    "Example, planning the paper profile for one 80 GB GPU on a machine without one: "
                    "looking-inward plan --profile paper --device cuda --memory-gib 80")
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
    s.add_argument("--profile", default=None, help=PROFILE_HELP)
    s.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="plan for this device (default: the profile's device on this machine)")
    s.add_argument("--memory-gib", type=float, default=None,
                   help="the device's memory, to plan for one that is not here (default: measured)")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("release", help="a card (models, profile, dtype, hardware, code version, rows, sha256) for "
                                      "every behaviour table of the run, in data/release/")
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file (default: %(default)s)")
    s.set_defaults(func=cmd_release, timed="release")

    s = sub.add_parser("artifacts", help="write dvc.yaml's artifacts section (the datasets and behaviour tables, "
                                        "each with its version and hashes) from the dataset manifests")
    s.add_argument("--data-raw", default=str(REPO_ROOT / "data_raw"), help="datasets folder (default: %(default)s)")
    s.add_argument("--check", action="store_true", help="only check; exit 2 when the section is out of step")
    s.add_argument("--tag", action="store_true",
                   help="tag each dataset version in git (dataset-<task>@v<version>, annotated, at HEAD), so that "
                        "`dvc artifacts get <repo> dataset-<task>` finds it")
    s.set_defaults(func=cmd_artifacts)

    s = sub.add_parser("dvc-deps", help="rewrite each dvc.yaml stage's code deps as exactly the project modules "
                                       "its command imports (followed statically, imports inside functions too)")
    s.add_argument("--check", action="store_true", help="only check; exit 2 when a stage's list is out of step")
    s.set_defaults(func=cmd_dvc_deps)

    s = sub.add_parser("use-profile", help="write a profile (profiles/NAME.yaml: smoke, default or paper) to "
                                          "params.yaml, the configuration `dvc repro` runs",
                       description="Copies profiles/NAME.yaml, comments included, to params.yaml. Settings you "
                                   "edited in params.yaml since it was written from its profile are kept: the "
                                   "command stops and names them, unless --force.")
    s.add_argument("name", help="a profile: the stem of a file in profiles/")
    s.add_argument("--params", default=str(DEFAULT_PARAMS), help="params file to write (default: %(default)s)")
    s.add_argument("--force", action="store_true", help="replace params.yaml even where it has edits")
    s.set_defaults(func=cmd_use_profile)
    for sp in sub.choices.values():  # every stage command says which stage of dvc.yaml it is
        name = sp.get_default("timed")
        if name and "Stage `" not in sp.description:
            sp.description += " " + stage_sentence(name)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.perf_counter()
    try:
        if args.root is not None and Path(args.root).expanduser().resolve() != REPO_ROOT:
            raise UsageError(f"--root {args.root} came too late: this process already works on {REPO_ROOT}; "
                             f"give --root on the command line, or set LOOKING_INWARD_ROOT before starting")
        timed = getattr(args, "timed", None)
        reads = record_reads() if timed else None
        args.func(args)
        if timed:
            import reproduce.dist as dist
            from reproduce.pipeline import check_stage
            from reproduce.timings import record_timing

            check_stage(timed, reads)  # dvc.yaml declares every setting and module the stage used

            dist.barrier()  # under a launcher, the stage ends when every process has finished its share
            if dist.is_main():
                record_timing(args.timed, time.perf_counter() - start, processes=dist.world_size())
    except ProjectError as exc:  # an expected failure: one line with its fix; anything else shows its traceback
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
