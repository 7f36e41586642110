"""The ``report`` stage: the manuscript in ``paper/`` rendered to self-contained HTML and PDF.

1. :func:`prepare` turns the analysis outputs into the manuscript's inputs under ``paper/_generated/``:
   ``numbers.yml`` (every number the text quotes, formatted, read by ``{{< meta n.KEY >}}`` shortcodes) and
   one markdown table per key table (``{{< include _generated/tables/NAME.md >}}``). Nothing in
   ``index.qmd`` is a typed result.
2. :func:`render` uses ``quarto render`` when Quarto is on the PATH; otherwise pandoc 3 from
   ``pypandoc-binary`` with the project's Lua filter (``paper/filters/quarto-compat.lua``: includes, meta
   shortcodes, cross-references, callouts) and citeproc gives ``index.html`` (self-contained: figures,
   styles and MathML inline) and, through pandoc's typst writer and the ``typst`` package, ``index.pdf``.
3. :func:`check_html` lists what a reader must never see: an unresolved cross-reference, citation or
   shortcode, or a figure that is not embedded. The stage fails on any.

:func:`screenshot` (the ``screenshot`` command) opens the HTML in headless Chromium and saves a PNG.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from reproduce import __version__
from reproduce.citation import read_manifests
from reproduce.config import REPO_ROOT, Profile
from reproduce.errors import ProjectError, UsageError
from reproduce.io import atomic_path, atomic_write_bytes

PAPER = REPO_ROOT / "paper"
ANALYSIS = REPO_ROOT / "data" / "analysis"
FIGURES = REPO_ROOT / "data" / "figures"
REPORT = REPO_ROOT / "data" / "report"
DATA_RAW = REPO_ROOT / "data_raw"
FILTER = "filters/quarto-compat.lua"
MINUS = "\u2212"


class ReportError(ProjectError, RuntimeError):
    """The report cannot be built or failed its checks; the message says what to run or fix."""


# ------------------------------------------------------------------------------------------------ numbers
def fmt(value: float, digits: int = 1) -> str:
    """A number as the manuscript prints it: fixed decimals, a true minus sign, no '-0.0'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    s = f"{value:.{digits}f}"
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", MINUS)


def fmt_prob(p: float) -> str:
    """A posterior probability: two decimals, with the ends stated as bounds (never '1.00'); 'n/a' when the
    analysis had nothing to compute it from (a missing value)."""
    from analysis.verdicts import probability_text

    return "n/a" if p is None or p != p else probability_text(p)


def _count(v) -> str:
    return f"{int(round(v)):,}"


def format_key(key: str, value: Any) -> str:
    """Format one entry of ``numbers.json`` by the convention of its name: probabilities (``p_positive``,
    ``p_value``, ``model_p_*``) as probabilities, counts (``_k``, ``_n``, ``n_*``, ``evaluated``, ``changed``) as integers,
    shares (``_share``/``_low``/``_high`` of a share) as percentages, everything else (already percentage points)
    with one decimal."""
    if key.endswith(("p_positive", "p_value", "p_every_direction")):
        return fmt_prob(value)
    if key.startswith("calibration_log_score_"):  # nats per sample
        return fmt(value, 2)
    if key.startswith("behaviour_model_p_"):
        return fmt(100 * value)
    if (key.endswith(("_k", "_n")) or key.startswith("n_")
            or key in ("behaviour_evaluated", "behaviour_changed")):
        return _count(value)
    if key.startswith("behaviour_share_") or key == "behaviour_changed_share":
        return fmt(100 * value)
    return fmt(value)


def _ci(estimate: float, low: float, high: float, scale: float = 1.0) -> str:
    """An estimate with its interval, ``"4.2 [3.0, 5.8]"``; ``scale=100`` turns shares into percentages."""
    def scaled(v):  # a missing value (a cross-check that could not be computed) stays missing: fmt says n/a
        return None if v is None else scale * v

    return f"{fmt(scaled(estimate))} [{fmt(scaled(low))}, {fmt(scaled(high))}]"


def _interval(d: dict, key: str = "mean", scale: float = 1.0) -> str:
    """:func:`_ci` of a summary dict with ``key``, ``low`` and ``high``."""
    return _ci(d[key], d["low"], d["high"], scale)


# the Bayesian models of the analysis stage: (name in the manuscript, key in metrics.json)
BAYESIAN_MODELS = (("advantage", "advantage"), ("mode-baseline arms", "baseline_arms"),
                   ("training effect", "training_effect"),
                   ("calibration log-score", "calibration"), ("behaviour tracking", "behaviour"))


def _diagnostics(metrics: dict) -> dict[str, dict]:
    """Sampler diagnostics of every Bayesian model that was fitted, by manuscript name."""
    out = {name: metrics[key]["diagnostics"] for name, key in BAYESIAN_MODELS
           if "diagnostics" in metrics.get(key, {})}
    for part, d in metrics.get("compliance_sensitivity", {}).get("diagnostics", {}).items():
        out[f"non-compliance sensitivity: {part}"] = d
    return out


def _verdict(low: float, high: float, rope: float, positive: str, negative: str, null: str,
             inconclusive: str) -> str:
    """One of four phrases, chosen by :func:`analysis.verdicts.verdict` from the interval and the ROPE."""
    from analysis.verdicts import NEGATIVE, NULL, POSITIVE, verdict

    return {POSITIVE: positive, NEGATIVE: negative, NULL: null}.get(verdict(low, high, rope), inconclusive)


#: the headline verdict (:func:`analysis.verdicts.headline`) as the abstract and results state it
HEADLINES = {
    "advantage in every direction": (
        "self-prediction beats cross-prediction in every direction, the original study's criterion (each "
        "direction's 94% interval lies above the region of practical equivalence)",
        "evidence for the self-prediction advantage the original study reports, by its own criterion"),
    "advantage on average, not in every direction": (
        "self-prediction beats cross-prediction at equal predicting skill on average, but not in every "
        "direction",
        "evidence for a self-prediction advantage on average, short of the original study's criterion of an "
        "advantage in every direction"),
    "reverse advantage": (
        "cross-prediction beats self-prediction (the 94% interval of the advantage at equal skill lies below "
        "the region of practical equivalence)",
        "evidence against the self-prediction advantage the original study reports"),
    "practically null": (
        "the self-prediction advantage at equal skill is practically null (its 94% interval lies inside the "
        "region of practical equivalence)",
        "evidence that the self-prediction advantage the original study reports is practically absent here"),
    "inconclusive": (
        "the data do not decide whether self-prediction beats cross-prediction (the 94% interval of the "
        "advantage at equal skill reaches beyond the region of practical equivalence without clearing it)",
        "no decisive evidence for or against the self-prediction advantage the original study reports"),
}


def _by_model(values: dict) -> str:
    """``{model: setting}`` as text: the one setting when every model shares it, else each model's."""
    if not values:
        return "n/a"
    if len(set(values.values())) == 1:
        return f"{next(iter(values.values()))} (every model)"
    return "; ".join(f"{m}: {v}" for m, v in sorted(values.items()))


def _sensitivity_text(metrics: dict) -> dict:
    """The sentence that sets the main result (scored against M1') beside the sensitivity variant (scored
    against the base model)."""
    sens = metrics.get("sensitivity_ground_truth", {})
    if "trained" not in sens or "base" not in sens:
        return {}
    a, b = sens["trained"]["advantage"], sens["base"]["advantage"]
    rope = metrics["advantage"].get("rope", 0.0)
    verdict = lambda d: _verdict(d["low"], d["high"], rope, "positive", "negative", "practically null",  # noqa: E731
                                 "inconclusive")
    same = verdict(a) == verdict(b)
    return {"sensitivity_verdict": (
        f"the sign of the conclusion does not depend on which behaviour is the ground truth (the advantage is "
        f"{verdict(a)} either way)" if same else
        f"the conclusion depends on which behaviour is the ground truth: the advantage is {verdict(a)} against "
        f"M1' but {verdict(b)} against the base model")}


def _seed_text(metrics: dict) -> dict:
    """Per target, the range of self and cross accuracy over finetune seeds."""
    by = metrics.get("seeds", {}).get("by_target", {})
    parts = []
    for t, v in sorted(by.items()):
        if "self_by_seed" not in v or "cross_by_seed" not in v:
            continue
        rng = lambda d: f"{fmt(min(d.values()))}-{fmt(max(d.values()))}%"  # noqa: E731
        parts.append(f"predicting {t}: self {rng(v['self_by_seed'])}, cross {rng(v['cross_by_seed'])}, "
                     f"advantage spread {fmt(v.get('advantage_spread', float('nan')))} points")
    return {"seed_spread": "; ".join(parts) or "n/a"}


def _behaviour_text(behaviour: dict, rope: float) -> dict:
    """Experiment 3's verdicts against the baselines: the pooled match rates beside their mode baselines and
    the permutation null, and the difference in differences."""
    out = {}
    pooled = behaviour.get("tracking", {}).get("pooled")
    perm = behaviour.get("permutation", {})
    if pooled:
        for side in ("new", "old"):
            p = perm.get(f"pooled_p_{side}", {}).get("p_value")
            beyond = p is not None and p < 0.05
            d = behaviour.get("vs_mode", {}).get(side)
            against = _verdict(d["low"], d["high"], rope, "above its mode baseline", "below its mode baseline",
                               "practically at its mode baseline",
                               "not distinguishable from its mode baseline") if d else "not compared with its mode baseline"
            out[f"behaviour_{side}_verdict"] = (
                against + " on the changed items (paired interval), and "
                + ("beyond" if beyond else "within") + " the permutation null at the one-sided 5% level")
    d = behaviour.get("did", {}).get("did")
    if d:
        out["behaviour_did_verdict"] = _verdict(
            d["low"], d["high"], rope, "moved towards the new behaviour more than towards the old",
            "moved towards the old behaviour more than towards the new",
            "moved towards the new and the old behaviour practically equally",
            "moved towards the new and the old behaviour by amounts the data cannot tell apart")
    return out


def build_numbers(numbers: dict, metrics: dict, profile: Profile, profile_name: str, power: dict | None = None) -> dict:
    """Everything the manuscript's text quotes: ``n`` (each ``numbers.json`` entry formatted), ``run`` (the
    settings of the run that produced them) and ``text`` (qualitative statements derived from the numbers,
    so that no sentence can contradict them)."""
    n = {k: format_key(k, v) for k, v in numbers.items()}
    a = metrics["advantage"]
    rope = a.get("rope", 0.0)
    tr = metrics["training_effect"]["overall"]
    text = {
        "advantage_verdict": HEADLINES[a["headline"]][0],
        "conclusion": HEADLINES[a["headline"]][1],
        "rope": fmt(rope),
        "training_verdict": _verdict(tr["low"], tr["high"], rope, "raised", "lowered", "left practically unchanged",
                                     "changed, by an uncertain amount,"),
    }
    word = {"positive": "self better", "negative": "cross better", "practically null": "practically equal",
            "inconclusive": "inconclusive"}
    dirs = a.get("directions", [])
    text["advantage_by_direction"] = "; ".join(
        f"predicting {d['target']} (cross-predictor {d['cross_predictor']}): {_interval(d)} points "
        f"({word[d['verdict']]})" for d in dirs) or "n/a"
    kinds = {d["verdict"] for d in dirs}
    text["direction_pattern"] = (
        "opposite effects in the two directions" if {"positive", "negative"} <= kinds else
        "the same verdict in every direction" if len(kinds) == 1 else "different verdicts by direction")
    nt = a.get("new_task")
    text["new_task_verdict"] = _verdict(
        nt["low"], nt["high"], rope, "an advantage is expected on a new task as well",
        "a reverse advantage is expected on a new task", "the advantage expected on a new task is practically null",
        "the data cannot tell whether a new task would show an advantage") if nt else "n/a"
    g = a.get("gamma")
    text["gamma_sentence"] = (
        f"The two directions differ by gamma = {_interval(g)} points (the advantage predicting {g['first']} minus "
        f"the advantage predicting {g['second']}), which is twice the two models' difference in general "
        f"predicting skill if that skill does not depend on the target, and which the pooled trial-weighted "
        f"difference ({_interval(a['trial_weighted'])} points) mixes into its estimate." if g else
        "With more than two models every ordered pair is a direction and each model's general predicting "
        "skill is a separate term of the model.")
    # the frequentist checks against the Bayesian trial-weighted estimate: same verdict or not
    from analysis.verdicts import verdict

    tw = a["trial_weighted"]
    boot = metrics["advantage_frequentist"]["bootstrap"]
    same = verdict(100 * boot["low"], 100 * boot["high"], rope) == verdict(tw["low"], tw["high"], rope)
    text["frequentist_agreement"] = "reaches the same verdict as" if same else "reaches a different verdict from"
    text["baseline_verdict"] = _baseline_text(metrics.get("vs_baseline", []), rope)
    text.update(_arms_text(metrics.get("baseline_arms"), rope))
    text["compliance_sentence"] = _compliance_text(metrics.get("compliance_sensitivity"), rope)
    text["power_sentence"] = _power_text(power)
    units = a.get("ppc_units", {})
    labels = {"all_correct_self": "answers whose properties the self-predictor gets all right",
              "none_correct_self": "answers it gets all wrong",
              "all_correct_cross": "answers the cross-predictor gets all right",
              "none_correct_cross": "answers it gets all wrong",
              "disagreement": "properties the two predictors score differently"}
    missed = [k for k, v in units.items() if not v["covered"]]
    text["ppc_units_sentence"] = (
        "Below the cells, the replicated data " + ("reproduce" if not missed else "miss") + " " +
        "; ".join(f"the share of {labels[k]} ({fmt(100 * v['observed'])}% observed, replicated 94% interval "
                  f"{fmt(100 * v['low'])}-{fmt(100 * v['high'])}%)" for k, v in units.items()
                  if (k in missed) == bool(missed)) + "." if units else "")
    ps = metrics.get("prior_sensitivity")
    text["prior_sensitivity_sentence"] = (
        f"Refitting the advantage model with every prior scale multiplied by "
        f"{' and by '.join(fmt(f, 1) for f in ps['factors'] if f != 1.0)} moves delta by at most "
        f"{fmt(ps['delta_spread'])} points, and " + ("the verdict on delta is the same under every prior"
                                                    if ps["verdicts_agree"] else "the verdict on delta changes with the prior")
        + "." if ps and len(ps.get("factors", [])) > 1 else
        "The prior-sensitivity refits were not run (`analysis.prior_sensitivity` is empty).")
    untrained = [v for k, v in metrics.get("compliance", {}).items() if k.startswith("untrained_")]
    text["untrained_compliance_range"] = (f"{fmt(100 * min(untrained), 0)}-{fmt(100 * max(untrained), 0)}"
                                          if untrained else "n/a")
    cal = metrics.get("calibration", {})
    e = cal.get("log_score", {}).get("self_minus_cross")
    if e:
        text["calibration_log_score_verdict"] = _verdict(
            e["low"], e["high"], cal["log_score"]["rope"], "self-prediction is better calibrated",
            "cross-prediction is better calibrated", "self- and cross-prediction are practically equally calibrated",
            "the data cannot tell whether self- or cross-prediction is better calibrated")
        text["rope_log_score"] = fmt(cal["log_score"]["rope"], 2)
    dif = cal.get("mad_difference", {}).get("pooled")
    if dif:
        text["mad_difference_verdict"] = _verdict(
            dif["low"], dif["high"], rope, "cross-prediction is better calibrated than self-prediction",
            "self-prediction is better calibrated than cross-prediction",
            "self- and cross-prediction are practically equally calibrated",
            "the data cannot tell whether self- or cross-prediction is better calibrated")
        text["mad_verdict"] = text["mad_difference_verdict"]
    text["mad_by_target"] = "; ".join(
        f"{t}: self {fmt(v['trained_self']['mad'])}, cross {fmt(v['trained_cross']['mad'])}"
        for t, v in sorted(cal.get("mad_by_target", {}).items()) if "trained_self" in v and "trained_cross" in v) or "n/a"
    text.update(_sensitivity_text(metrics))
    text.update(_seed_text(metrics))
    behaviour = metrics.get("behaviour", {})
    b = behaviour.get("model")
    if b:
        d = b["new_minus_old"]
        text["behaviour_verdict"] = _verdict(d["low"], d["high"], rope, "the new behaviour more often than the old",
                                             "the old behaviour more often than the new",
                                             "the new and the old behaviour practically equally often",
                                             "the new and the old behaviour at rates the data cannot tell apart")
    text.update(_behaviour_text(behaviour, rope))
    diag = _diagnostics(metrics)
    ft = profile.finetune
    run = {
        "profile": profile_name,
        "package_version": __version__,
        "models": " and ".join(profile.models),
        "train_tasks": ", ".join(profile.tasks.train),
        "test_tasks": ", ".join(profile.tasks.test),
        "n_test_tasks": str(len(profile.tasks.test)),
        "items_train": str(profile.items_per_task.train),
        "items_test": str(profile.items_per_task.test),
        "n_samples": str(profile.sampling.n_samples),
        "calibration_items": str(profile.sampling.items_per_task),
        "max_examples": str(ft.max_examples) if ft and ft.max_examples else "all",
        "temperature": fmt(profile.sampling.temperature, 1),
        "lora_rank": str(ft.lora_rank) if ft else "n/a",
        "learning_rate": f"{ft.learning_rate:g}" if ft else "n/a",
        "epochs": f"{ft.epochs:g}" if ft else "n/a",
        "scaling_sizes": ", ".join(str(s) for s in ft.scaling_sizes) if ft and ft.scaling_sizes else "none",
        "draws": str(profile.analysis.draws),
        "tune": str(profile.analysis.tune),
        "chains": str(profile.analysis.chains),
        "target_accept": f"{profile.analysis.target_accept:g}",
        "bootstrap": f"{profile.analysis.bootstrap:,}",
        "sampler": profile.analysis.sampler,
        "r_hat_max": f"{max(d['r_hat_max'] for d in diag.values()):.2f}" if diag else "n/a",
        "ess_min": _count(min(d["ess_bulk_min"] for d in diag.values())) if diag else "n/a",
        "divergences": str(sum(d["divergences"] for d in diag.values())) if diag else "n/a",
        "ppc_coverage": fmt(100 * metrics["advantage"].get("ppc_coverage", float("nan")), 0),
        "prior_q05": fmt(100 * metrics["advantage"]["prior_predictive_accuracy"]["q05"], 0),
        "prior_q95": fmt(100 * metrics["advantage"]["prior_predictive_accuracy"]["q95"], 0),
        "prior_cell_extreme": fmt(100 * metrics["advantage"]["prior_predictive_accuracy"].get("cell", {}).get(
            "extreme_share", float("nan")), 1),
    }
    seeds = metrics.get("seeds", {}).get("seeds", [])
    run["seeds"] = ", ".join(str(x) for x in seeds) or "n/a"
    run["n_seeds"] = str(len(seeds))
    precision = metrics.get("run", {})
    run["dtype"] = _by_model(precision.get("dtype", {}))
    run["mixed_precision"] = _by_model(precision.get("mixed_precision", {}))
    run["dtype_setting"] = profile.dtype
    if profile.behaviour_change:
        bc = profile.behaviour_change
        run.update(bc_train_items=str(bc.train_items), bc_learning_rate=f"{bc.learning_rate:g}",
                   bc_epochs=f"{bc.epochs:g}")
    return {"n": n, "run": run, "text": text}


def _baseline_text(rows: list[dict], rope: float) -> str:
    """How many trained predictors are above, below or indistinguishable from the mode baseline: the counts
    of the verdicts the analysis gave their 94% intervals against the ROPE."""
    if not rows:
        return "the mode-baseline comparison is not available"
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    parts = [f"{counts[k]} {'is' if counts[k] == 1 else 'are'} {label}"
             for k, label in (("positive", "above the mode baseline"), ("negative", "below it"),
                              ("practically null", "practically at it"), ("inconclusive", "inconclusive"))
             if counts.get(k)]
    return f"of the {len(rows)} trained predictor-target pairs, " + ", ".join(parts) + f" (94% intervals against +/- {fmt(rope)} points)"


def _arms_text(arms: dict | None, rope: float) -> dict:
    """The mode baseline as an arm of the model: each predictor arm against the mode, pooled, as verdicts."""
    if not arms:
        return {"arms_sentence": "The model with the mode baseline as an arm was not fitted."}
    p = arms["pooled"]

    def against(name, who):
        d = p[name]
        return who + " " + _verdict(d["low"], d["high"], rope, "is above the mode baseline", "is below the mode baseline",
                                    "is practically at the mode baseline",
                                    "cannot be told apart from the mode baseline") + f" ({_interval(d)} points)"

    counts = arms.get("cells_verdicts", {}).get("self_minus_mode", {})
    below = counts.get("negative", 0)
    return {"arms_sentence": (
        f"With the mode baseline as a third arm of one model, pooled over targets, {against('self_minus_mode', 'the self-predictor')} "
        f"and {against('cross_minus_mode', 'the cross-predictor')}; as a share of the headroom above the mode "
        f"(normalised lift) that is {_interval(p['lift_self'])}% for self-prediction and "
        f"{_interval(p['lift_cross'])}% for cross-prediction. Of the {arms['cells']} target x task x property "
        f"cells, the self-predictor is below the mode in {below} and neither predictor is above it in "
        f"{arms['cells_both_not_above']}.")}


def _compliance_text(cs: dict | None, rope: float) -> str:
    """The non-compliance sensitivity as a sentence: nothing to explain when every answer complied."""
    if not cs:
        return "The non-compliance sensitivity was not computed."
    if cs["all_compliant"]:
        return ("Every trained hypothetical answer was in the requested form, so the difference between self- "
                "and cross-prediction is not a difference in compliance, and the accuracy among compliant answers "
                "(the original's other setting) is the accuracy reported above.")
    c, k, e = cs["compliance_difference"], cs["conditional_difference"], cs["advantage_at_equal_compliance"]
    return ("Not every trained hypothetical answer was in the requested form. The self-predictor complied "
            f"{_interval(c)} points more often than the cross-predictor; among compliant answers the self-minus-"
            f"cross difference is {_interval(k)} points, and the two parts together imply "
            f"{_interval(cs['two_part_advantage'])} points. At equal compliance the advantage would be "
            f"{_interval(e)} points, so " + _verdict(
                e["low"], e["high"], rope, "the advantage is not only compliance",
                "the self-predictor is worse once compliance is set aside",
                "the advantage is practically all compliance",
                "the data cannot tell how much of the advantage is compliance") + ".")


def _power_text(power: dict | None) -> str:
    """The power analysis of this run's design (``looking-inward power``) as a sentence."""
    if not power:
        return "The power analysis was not run."
    d = power["design"]

    def mda(v):
        return f"{fmt(v)} points" if v == v else "more than the largest advantage simulated"

    s = (f"For this run's design ({d['tasks']} held-out tasks, {d['items']} scored items per task and target, "
         f"{d['properties']} properties per task) and the fitted heterogeneity ({power['heterogeneity_source']}), "
         f"an advantage is declared with 80% power when it is at least {mda(power['mda_observed_tasks'])} on the "
         f"observed tasks, and at least {mda(power['mda_new_tasks'])} for a claim about new tasks "
         f"({power['reps']} simulated replicates per point).")
    v = power.get("validation")
    if v:
        s += (f" At {fmt(v['advantage'])} points, {v['reps']} Bayesian fits gave power {fmt(100 * v['power_bayes'], 0)}% "
              f"against {fmt(100 * v['power_approximation'], 0)}% for the approximation, and the same verdict in "
              f"{fmt(100 * v['agreement'], 0)}% of replicates.")
    return s


def _markdown_safe(meta):
    """Metadata values are read as Markdown (by Quarto and by pandoc's ``--metadata-file``): a value that
    starts with ``>`` (``"> 0.99"``) would become a block quote and lose its sign, so it is escaped."""
    if isinstance(meta, dict):
        return {k: _markdown_safe(v) for k, v in meta.items()}
    if isinstance(meta, str) and meta.startswith((">", "<")):
        return "\\" + meta
    return meta


# ------------------------------------------------------------------------------------------------ tables
def _md_table(df: pd.DataFrame, caption: str, label: str) -> str:
    """A pipe table with a Quarto caption and label; cells are strings already. Column widths are relative
    to the longest word and cell of each column (the dashes of the separator line say so to pandoc, which
    then wraps cells to the page width in HTML and PDF alike)."""
    cols = list(df.columns)
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    weight = [max([len(w) for w in str(c).split()] + [len(str(v)) ** 0.5 * 3 + max(map(len, str(v).split() or [""]))
                                                     for v in df[c]]) for c in cols]
    dashes = [max(3, round(100 * w / sum(weight))) for w in weight]
    lines = ["| " + " | ".join(esc(c) for c in cols) + " |", "|" + "|".join("-" * d for d in dashes) + "|"]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + f"\n\n: {caption} {{#{label}}}\n"


def build_tables(analysis: Path, metrics: dict, manifests: list[dict], reference: dict) -> dict[str, str]:
    """The manuscript's tables as markdown, each from an analysis table or the dataset manifests."""
    t = lambda name: pd.read_parquet(Path(analysis) / "tables" / f"{name}.parquet")  # noqa: E731
    out = {}

    acc = t("accuracy_by_target").sort_values(["condition", "target", "kind"], ascending=[False, True, False])
    out["accuracy"] = _md_table(pd.DataFrame({
        "condition": acc["condition"], "predictor": acc["predictor"], "target": acc["target"], "kind": acc["kind"],
        "scored against": acc["condition"].map({"untrained": "base model", "trained": "M1' (every seed)"}),
        "scored": acc["n"].map(_count),
        "accuracy % [95% Wilson]": [_ci(*r, scale=100) for r in acc[["accuracy", "wilson_low", "wilson_high"]].to_numpy()],
        "mode baseline %": acc["mode_baseline"].map(lambda v: fmt(100 * v)),
        "compliance %": acc["compliance"].map(lambda v: fmt(100 * v))}),
        "Raw accuracy on the held-out tasks by predictor and target, before and after training. Before training "
        "a prediction is scored against the base model's answers; after training against the self-trained "
        "target M1' of the same finetune seed, whose answers also define the mode baseline. Scored "
        "observations are those whose object-level answer has the property; a non-compliant hypothetical "
        "answer counts as wrong.", "tbl-accuracy")

    seeds = t("accuracy_by_seed").sort_values(["target", "seed", "kind"], ascending=[True, True, False])
    out["seeds"] = _md_table(pd.DataFrame({
        "target": seeds["target"], "seed": seeds["seed"].map(lambda v: str(int(v))), "kind": seeds["kind"],
        "predictor": seeds["predictor"], "scored": seeds["n"].map(_count),
        "accuracy % [95% Wilson]": [_ci(*r, scale=100) for r in seeds[["accuracy", "wilson_low", "wilson_high"]].to_numpy()],
        "mode baseline (M1') %": seeds["mode_baseline"].map(lambda v: fmt(100 * v)),
        "compliance %": seeds["compliance"].map(lambda v: fmt(100 * v))}),
        "Experiment 1 per finetune seed: each seed self-trains the target again (M1'), and the cross-predictor "
        "is trained on that M1''s answers; both are scored against it.", "tbl-seeds")

    sens = t("sensitivity_ground_truth")
    sens = sens.assign(order=sens["ground_truth"].map({"trained": 0, "base": 1}), overall=sens["target"] == "all")
    sens = sens.sort_values(["order", "overall", "target", "kind"], ascending=[True, True, True, False])
    label = {"trained": "M1' (main)", "base": "base model (sensitivity)"}
    rows = [{"scored against": label[r.ground_truth], "predictor": r.predictor, "target": r.target, "kind": r.kind,
             "accuracy % [95% Wilson]": _ci(r.accuracy, r.wilson_low, r.wilson_high, 100),
             "mode baseline %": fmt(100 * r.mode_baseline)} for r in sens.itertuples()]
    for truth, m in metrics.get("sensitivity_ground_truth", {}).items():
        rows.append({"scored against": label[truth], "predictor": "self minus cross", "target": "all",
                     "kind": "advantage (points, cluster bootstrap 95%)",
                     "accuracy % [95% Wilson]": _interval(m["advantage"], "estimate"), "mode baseline %": ""})
    out["sensitivity"] = _md_table(pd.DataFrame(rows),
                                   "Sensitivity of experiment 1 to the ground truth: the same trained predictions "
                                   "scored against the self-trained target M1' (the original study's protocol, "
                                   "the main result) and against the untrained base model.", "tbl-sensitivity")

    a = metrics["advantage"]
    word = {"positive": "advantage", "negative": "reverse", "practically null": "practically null",
            "inconclusive": "inconclusive"}
    rows = [{"estimate": "Bayesian, delta: equal predicting skill, directions weighted equally",
             "self %": "", "cross %": "", "advantage (points)": _interval(a["overall"]),
             "P(advantage > 0)": fmt_prob(a["overall"]["p_positive"]), "verdict": word[a["overall"]["verdict"]]}]
    by_dir = {(d["target"], d["cross_predictor"]): d for d in a.get("directions", [])}
    adv = t("advantage")
    per_target = adv[adv["by"] == "target"].set_index("target")
    for (tg, cp), d in sorted(by_dir.items()):
        r = per_target.loc[tg] if tg in per_target.index and len(by_dir) == per_target.shape[0] else None
        rows.append({"estimate": f"Bayesian, direction: predicting {tg}, cross-predictor {cp}",
                     "self %": fmt(100 * r["accuracy_1"]) if r is not None else "",
                     "cross %": fmt(100 * r["accuracy_0"]) if r is not None else "",
                     "advantage (points)": _interval(d), "P(advantage > 0)": fmt_prob(d["p_positive"]),
                     "verdict": word[d["verdict"]]})
    if "gamma" in a:
        g0 = a["gamma"]
        rows.append({"estimate": f"Bayesian, gamma: direction {g0['first']} minus direction {g0['second']}",
                     "self %": "", "cross %": "", "advantage (points)": _interval(g0), "P(advantage > 0)": "",
                     "verdict": ""})
    overall = adv[adv["by"] == "overall"].iloc[0]
    rows.append({"estimate": "Bayesian, pooled and trial-weighted (confounded with skill)",
                 "self %": fmt(100 * overall["accuracy_1"]), "cross %": fmt(100 * overall["accuracy_0"]),
                 "advantage (points)": _interval(a["trial_weighted"]),
                 "P(advantage > 0)": fmt_prob(a["trial_weighted"]["p_positive"]), "verdict": ""})
    rows.append({"estimate": "Bayesian, every held-out task weighted equally", "self %": "", "cross %": "",
                 "advantage (points)": _interval(a["equal_task"]),
                 "P(advantage > 0)": fmt_prob(a["equal_task"]["p_positive"]), "verdict": ""})
    if "new_task" in a:
        rows.append({"estimate": "Bayesian, a new task (predictive, at equal skill)", "self %": "", "cross %": "",
                     "advantage (points)": _interval(a["new_task"]),
                     "P(advantage > 0)": fmt_prob(a["new_task"]["p_positive"]), "verdict": word[a["new_task"]["verdict"]]})
    if "equal_cell" in a:
        rows.append({"estimate": "Bayesian, every target x task x property cell weighted equally", "self %": "",
                     "cross %": "", "advantage (points)": _interval(a["equal_cell"]),
                     "P(advantage > 0)": fmt_prob(a["equal_cell"]["p_positive"]), "verdict": ""})
    boot, g = metrics["advantage_frequentist"]["bootstrap"], metrics["advantage_frequentist"]["glm_cluster"]
    rows.append({"estimate": f"cluster bootstrap ({boot['n_boot']:,} resamples), pooled",
                 "self %": "", "cross %": "", "advantage (points)": _interval(boot, "estimate", 100),
                 "P(advantage > 0)": "", "verdict": ""})
    rows.append({"estimate": "GLM, cluster-robust, average marginal effect, pooled", "self %": "", "cross %": "",
                 "advantage (points)": _ci(g["ame"], g["ame_low"], g["ame_high"], 100),
                 "P(advantage > 0)": (f"p = {g['p_value']:.2f} (two-sided)" if g['p_value'] is not None else "n/a (not estimable)"),
                 "verdict": ""})
    from analysis.verdicts import verdict

    fr = metrics["advantage_frequentist"]
    if "paired" in fr:
        for name, label in (("paired", "paired (McNemar-style), directions weighted equally"),
                            ("glm_cell", "GLM, cell fixed effects and a self slope per target, targets weighted equally")):
            d = fr[name]["delta"]
            rows.append({"estimate": label, "self %": "", "cross %": "", "advantage (points)": _ci(d["estimate"], d["low"], d["high"], 100),
                         "P(advantage > 0)": "", "verdict": word[verdict(100 * d["low"], 100 * d["high"], a.get("rope", 0.0))]})
    out["advantage"] = _md_table(pd.DataFrame(rows),
                                 "Self-prediction advantage after training (self minus cross accuracy, points). "
                                 "Bayesian rows: posterior mean and 94% interval; frequentist rows: 95% intervals. "
                                 f"Verdicts: the interval against +/- {fmt(a.get('rope', 0.0))} points of "
                                 "practical equivalence.", "tbl-advantage")

    ps = t("prior_sensitivity")
    if len(ps) > 1:
        rows_ps = []
        for r in ps.itertuples():
            row = {"prior scales": "x " + fmt(r.prior_scale, 1) + (" (main)" if r.prior_scale == 1.0 else ""),
                   "delta (points)": _ci(r.delta_mean, r.delta_low, r.delta_high),
                   "verdict": word[r.verdict],
                   "new task (points)": _ci(r.new_task_mean, r.new_task_low, r.new_task_high)}
            if "gamma_mean" in ps:
                row["gamma (points)"] = _ci(r.gamma_mean, r.gamma_low, r.gamma_high)
            row["P(every direction)"] = fmt_prob(r.p_every_direction)
            rows_ps.append(row)
        out["prior_sensitivity"] = _md_table(pd.DataFrame(rows_ps),
            "Prior sensitivity of the advantage model: the main fit and refits with every prior scale multiplied "
            "by the factor shown (posterior means and 94% intervals; each refit passed the same gate).",
            "tbl-prior-sensitivity")
    else:  # the refits were not run: the sentence says so, and there is no table to show
        out["prior_sensitivity"] = "\n"
    arms = t("arms")
    top = arms[arms["by"].isin(["overall", "target", "task"])]
    out["arms"] = _md_table(pd.DataFrame({
        "scope": [("pooled" if r.by == "overall" else f"{r.by}: {getattr(r, r.by)}") for r in top.itertuples()],
        "self %": [_ci(r.accuracy_self, r.accuracy_self_low, r.accuracy_self_high) for r in top.itertuples()],
        "cross %": [_ci(r.accuracy_cross, r.accuracy_cross_low, r.accuracy_cross_high) for r in top.itertuples()],
        "mode %": [_ci(r.accuracy_mode, r.accuracy_mode_low, r.accuracy_mode_high) for r in top.itertuples()],
        "self - mode": [_ci(r.self_minus_mode, r.self_minus_mode_low, r.self_minus_mode_high) for r in top.itertuples()],
        "cross - mode": [_ci(r.cross_minus_mode, r.cross_minus_mode_low, r.cross_minus_mode_high) for r in top.itertuples()],
        "self - cross": [_ci(r.self_minus_cross, r.self_minus_cross_low, r.self_minus_cross_high) for r in top.itertuples()],
        "lift self %": [_ci(r.lift_self, r.lift_self_low, r.lift_self_high) for r in top.itertuples()],
        "lift cross %": [_ci(r.lift_cross, r.lift_cross_low, r.lift_cross_high) for r in top.itertuples()]}),
        "The mode baseline as an arm of the model: posterior accuracy of the self-predictor, the cross-predictor "
        "and the mode baseline from one fit, their differences (points) and the normalised lift over the mode, "
        "(accuracy - mode) / (100 - mode), with 94% intervals; each answer unit and property counts once. Where the "
        "mode is near 100% there is little headroom and the lift is unstable (large and wide). The "
        "self - cross row here weights the targets by their trials, like the pooled row of @tbl-advantage.",
        "tbl-arms")

    mad = t("mad")
    keys = ["target", "condition", "kind"]
    raw = mad[mad["variant"] == "raw"].set_index(keys)
    ren = mad[mad["variant"] == "renormalised"].set_index(keys)
    order = sorted(raw.index, key=lambda k: (k[0] == "pooled", k[0], k[1] != "trained", k[2] != "self"))
    out["calibration"] = _md_table(pd.DataFrame([{
        "target": k[0], "condition": k[1], "kind": k[2],
        "MAD [95% bootstrap]": _ci(raw.loc[k, "mad"], raw.loc[k, "low"], raw.loc[k, "high"]),
        "MAD, renormalised meta": (_ci(ren.loc[k, "mad"], ren.loc[k, "low"], ren.loc[k, "high"]) if k in ren.index
                                   else "n/a"),
        "bins": str(int(raw.loc[k, "bins"])), "points": _count(raw.loc[k, "points"]),
        "items": _count(raw.loc[k, "items"])} for k in order]),
        "Calibration as the original study measures it: mean absolute difference (x100) between binned "
        "object-level and meta-level probabilities (10 equal-frequency bins with tied probabilities kept "
        "together, so possibly fewer; top-3 sampled behaviours), per target model and pooled. The meta-level "
        "probabilities keep the mass the predictor puts outside the options (the paper's); the renormalised "
        "column is the sensitivity variant. Intervals: bootstrap over items.", "tbl-calibration")
    dif = t("mad_difference") if (Path(analysis) / "tables" / "mad_difference.parquet").exists() else pd.DataFrame()
    if len(dif):
        d_raw, d_ren = (dif[dif["variant"] == v].set_index("target") for v in ("raw", "renormalised"))
        targets = sorted(d_raw.index, key=lambda x: (x == "pooled", x))
        out["calibration_difference"] = _md_table(pd.DataFrame([{
            "target": tg, "MAD self": fmt(d_raw.loc[tg, "mad_self"]), "MAD cross": fmt(d_raw.loc[tg, "mad_cross"]),
            "self minus cross [95% paired bootstrap]": _ci(d_raw.loc[tg, "difference"], d_raw.loc[tg, "low"],
                                                           d_raw.loc[tg, "high"]),
            "renormalised meta": (_ci(d_ren.loc[tg, "difference"], d_ren.loc[tg, "low"], d_ren.loc[tg, "high"])
                                  if tg in d_ren.index else "n/a")} for tg in targets]),
            "Calibration after training, self minus cross MAD (negative: self-prediction better calibrated). Each "
            "bootstrap resample draws the items once and takes both predictors' points on them.",
            "tbl-calibration-difference")

    track_path = Path(analysis) / "tables" / "behaviour_tracking.parquet"
    if track_path.exists():
        tr = pd.read_parquet(track_path)
        n_perm = int(t("behaviour_permutation")["n_perm"].iloc[0])
        out["behaviour"] = _md_table(pd.DataFrame([{
            "model": r.model, "changed items": _count(r.n),
            "P(pred = new) %": fmt(100 * r.p_new), "mode baseline (new) %": fmt(100 * r.baseline_new),
            "p (new)": fmt_prob(r.p_value_new),
            "P(pred = old) %": fmt(100 * r.p_old), "mode baseline (old) %": fmt(100 * r.baseline_old),
            "p (old)": fmt_prob(r.p_value_old),
            "before: new / old %": f"{fmt(100 * r.before_new)} / {fmt(100 * r.before_old)}"}
            for r in tr.itertuples()]),
            "Behaviour change, on the items whose property changed (old and new answers compliant and different): "
            "how often the changed model's prediction equals its new and its old behaviour, each beside the mode "
            "baseline recomputed on the same items, and the permutation p-value (predictions shuffled within "
            f"model x task x property, {n_perm:,} shuffles; one-sided). 'Before': "
            "the prediction of M1' before the change.", "tbl-behaviour")

    diag_rows = [{"model": name, "max r_hat": f"{d['r_hat_max']:.2f}", "min bulk ESS": _count(d["ess_bulk_min"]),
                  "min tail ESS": _count(d["ess_tail_min"]) if "ess_tail_min" in d else "n/a",
                  "min E-BFMI": f"{d['bfmi_min']:.2f}" if d.get("bfmi_min") is not None else "n/a",
                  "divergences": str(d["divergences"]), "draws x chains": f"{d['draws']} x {d['chains']}"}
                 for name, d in _diagnostics(metrics).items()]
    out["diagnostics"] = _md_table(pd.DataFrame(diag_rows),
                                   "Sampler diagnostics of every Bayesian model, over every free variable (the "
                                   "stage refuses to publish a fit with r_hat > 1.01, bulk or tail ESS < 400, "
                                   "E-BFMI < 0.3 in a chain, or any divergence).", "tbl-diagnostics")

    out["comparison"] = _md_table(_comparison(acc, t("training"), metrics, reference),
                                  f"The original study's reported results ({reference['source']}; models: "
                                  f"{reference['models']}) beside this run's. Ours: posterior means with 94% "
                                  "intervals, or raw accuracies with 95% Wilson intervals.", "tbl-comparison")

    manifests = sorted(manifests, key=lambda m: (m["split"], m["name"]))
    ds = pd.DataFrame([{"dataset": m["name"], "version": m["version"], "split": m["split"],
                        "items": _count(m["n_items"]), "family": m["family"].replace("_", " "),
                        "licence": m["licence"]} for m in manifests])
    hashes = "\n".join(f"- {m['name']} {m['version']}: `{m['release_sha256']}`" for m in manifests)
    out["datasets"] = (_md_table(ds, "The task datasets this run used. Each is cited by its version and its "
                                     "release sha256 (listed below the table), which covers the version, the "
                                     "licence and every byte of the items.", "tbl-datasets")
                       + "\nRelease sha256 of each dataset:\n\n" + hashes + "\n")
    return out


def _comparison(acc: pd.DataFrame, tr: pd.DataFrame, metrics: dict, ref: dict) -> pd.DataFrame:
    """Our side of the comparison table, from ``accuracy_by_target`` and ``training``."""
    tr = tr[tr["by"] == "target"].set_index("target")
    trained = acc[acc["condition"] == "trained"]

    def accs(kind):
        d = trained[trained["kind"] == kind].sort_values("target")
        return "; ".join(f"{r.predictor} on {r.target}: {_ci(r.accuracy, r.wilson_low, r.wilson_high, 100)}%"
                         for r in d.itertuples())

    ours = {
        "self_after": accs("self"),
        "cross_after": accs("cross"),
        "training": "; ".join(f"{tg}: {fmt(100 * r.accuracy_0)}% -> {fmt(100 * r.accuracy_1)}%"
                              for tg, r in tr.iterrows()),
        "advantage": "overall " + _interval(metrics["advantage"]["overall"]) + " points; " + "; ".join(
            f"predicting {tg}: {_interval(v)}" for tg, v in sorted(metrics["advantage"]["by_target"].items())),
    }
    mad = metrics.get("calibration", {}).get("mad", {})
    if "trained_self" in mad and "trained_cross" in mad:
        ours["calibration"] = (f"MAD self {_interval(mad['trained_self'], 'mad')}, cross "
                               f"{_interval(mad['trained_cross'], 'mad')} (pooled over targets)")
        dif = metrics["calibration"].get("mad_difference", {}).get("pooled")
        if dif:
            ours["calibration"] += f"; self minus cross {_interval(dif, 'difference')} (paired)"
    b = metrics.get("behaviour", {}).get("model")
    pooled = metrics.get("behaviour", {}).get("tracking", {}).get("pooled")
    if b:
        ours["behaviour"] = (f"new {fmt(100 * b['p_new'])}% vs old {fmt(100 * b['p_old'])}% of changed items; "
                             f"difference {_interval(b['new_minus_old'])} points")
        if pooled:
            ours["behaviour"] += (f"; mode baselines on the same items: new {fmt(pooled['baseline_new'])}%, "
                                  f"old {fmt(pooled['baseline_old'])}%")
    rows = [{"quantity": r["quantity"], "original study": r["paper"], "this run": ours.get(key, "not run")}
            for key, r in ref["rows"].items()]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ prepare
def _read_json(path: Path, what: str) -> dict:
    if not path.exists():
        raise ReportError(f"{path} is missing: run the {what} stage first (`dvc repro {what}`)")
    return json.loads(path.read_text())


def fig_id(name: str) -> str:
    """The manuscript's label of a figure of :data:`figures.plots.FIGURES` (``self_vs_cross`` ->
    ``fig-self-vs-cross``)."""
    return "fig-" + name.replace("_", "-")


def prepare(profile: Profile, profile_name: str, analysis: Path = ANALYSIS, figures: Path = FIGURES,
            paper: Path = PAPER, data_raw: Path = DATA_RAW, injection: Path | None = None) -> dict:
    """Write ``paper/_generated/`` (numbers.yml, tables/*.md, figures/*.png) from the pipeline's outputs;
    returns the figures' index (``data/figures/index.json``)."""
    numbers = _read_json(Path(analysis) / "numbers.json", "analysis")
    metrics = _read_json(Path(analysis) / "metrics.json", "analysis")
    index = _read_json(Path(figures) / "index.json", "figures")
    missing = [f"{name}.png" for name in index if not (Path(figures) / f"{name}.png").exists()]
    if missing:
        raise ReportError(f"figures missing under {figures}: {', '.join(missing)}; run `dvc repro figures`")
    manifests = read_manifests(data_raw)
    used = set(profile.tasks.train) | set(profile.tasks.test)
    manifests = [m for m in manifests if m["name"] in used]
    reference = yaml.safe_load((Path(paper) / "reference_results.yml").read_text())
    gen = Path(paper) / "_generated"
    power = _read_json(Path(analysis) / "power" / "power.json", "power")
    meta = build_numbers(numbers, metrics, profile, profile_name, power)
    atomic_write_bytes(gen / "numbers.yml", yaml.safe_dump(_markdown_safe(meta), sort_keys=True,
                                                           allow_unicode=True).encode())
    for name in index:  # the figures travel with the manuscript, so that it renders from paper/ alone
        atomic_write_bytes(gen / "figures" / f"{name}.png", (Path(figures) / f"{name}.png").read_bytes())
    for name, md in build_tables(analysis, metrics, manifests, reference).items():
        atomic_write_bytes(gen / "tables" / f"{name}.md", md.encode())
    from .injection import INJECTION, write_section

    write_section(gen, injection if injection is not None else Path(analysis).parent / INJECTION.name, Path(paper))
    from .mirror import write_section as write_mirror

    write_mirror(gen, Path(analysis).parent / "mirror")
    return index


# ------------------------------------------------------------------------------------------------ render
def pandoc_path() -> str:
    """pandoc from PATH if it is version 3+, else the binary inside ``pypandoc-binary``."""
    exe = shutil.which("pandoc")
    if exe:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        m = re.match(r"pandoc\S* (\d+)", out)
        if m and int(m.group(1)) >= 3:
            return exe
    try:
        import pypandoc

        return pypandoc.get_pandoc_path()
    except (ImportError, OSError) as e:
        raise ReportError("pandoc 3 is needed to render the report without Quarto: "
                          "`pip install pypandoc-binary` (scripts/setup.sh does) or install Quarto") from e


def _pandoc(args: list[str], cwd: Path) -> str:
    proc = subprocess.run([pandoc_path(), *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReportError(f"pandoc failed ({proc.returncode}):\n{proc.stderr.strip()}")
    bad = [line for line in proc.stderr.splitlines() if "not found" in line or "Could not" in line]
    if bad:
        raise ReportError("pandoc could not resolve: " + "; ".join(bad))
    return proc.stderr


def render_pandoc(paper: Path = PAPER, out: Path = REPORT, pdf: bool = True) -> dict[str, Path]:
    """The fallback renderer: pandoc + the project's Lua filter + citeproc -> HTML; -> typst -> PDF."""
    paper, out = Path(paper).resolve(), Path(out).resolve()
    common = ["index.qmd", "--from", "markdown", "--metadata-file", "_generated/numbers.yml",
              "--lua-filter", FILTER, "--citeproc", "--bibliography", "references.bib",
              "--resource-path", str(paper), "--number-sections"]
    paths = {}
    with atomic_path(out / "index.html") as tmp:
        _pandoc(common + ["--to", "html5", "--standalone", "--embed-resources", "--mathml", "--toc",
                          "--css", "style.css", "--metadata", "lang=en", "--output", str(tmp)], paper)
    paths["html"] = out / "index.html"
    if pdf:
        import typst

        # the .typ lives in paper/ because its image paths are relative to it (figures are in paper/_generated)
        fd, typ = tempfile.mkstemp(dir=paper, prefix=".index-", suffix=".typ")
        os.close(fd)
        try:
            _pandoc(common + ["--to", "typst", "--standalone", "--include-in-header", "typst-header.typ",
                              "--output", typ], paper)
            with atomic_path(out / "index.pdf") as tmp:
                typst.compile(typ, output=str(tmp), root=str(paper), timestamp=0)
        finally:
            Path(typ).unlink(missing_ok=True)
        paths["pdf"] = out / "index.pdf"
    return paths


def render_quarto(paper: Path = PAPER, out: Path = REPORT) -> dict[str, Path]:
    """``quarto render`` (HTML and typst PDF, as ``_quarto.yml`` says), then the results copied to ``out``."""
    proc = subprocess.run(["quarto", "render", str(paper)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReportError(f"quarto render failed:\n{proc.stderr.strip()[-4000:]}")
    paths = {}
    for kind, name in (("html", "index.html"), ("pdf", "index.pdf")):
        src = Path(paper) / "_output" / name
        if src.exists():
            with atomic_path(Path(out) / name) as tmp:
                shutil.copyfile(src, tmp)
            paths[kind] = Path(out) / name
    return paths


def render(paper: Path = PAPER, out: Path = REPORT, engine: str = "auto") -> dict[str, Path]:
    if engine not in ("auto", "quarto", "pandoc"):
        raise UsageError(f"engine must be auto, quarto or pandoc, got {engine!r}")
    if engine == "quarto" or (engine == "auto" and shutil.which("quarto")):
        return render_quarto(paper, out)
    return render_pandoc(paper, out)


# ------------------------------------------------------------------------------------------------ checks
UNRESOLVED = [
    (re.compile(r"\{\{&lt;|\{\{<"), "an unexpanded shortcode"),
    (re.compile(r"\?\?"), "an unresolved cross-reference or citation ('??')"),
    (re.compile(r"@(fig|tbl|sec)-[\w-]+"), "a raw cross-reference"),
    (re.compile(r'class="citation"[^>]*>[^<]*<strong>\?'), "a citation citeproc could not find"),
]


def embedded_images(html: str) -> list[str]:
    """The ``src`` of every ``<img>`` (embedded ones start with ``data:``)."""
    return re.findall(r'<img[^>]*\ssrc="([^"]+)"', html)


def check_html(html_path: Path, figures: list[str]) -> list[str]:
    """Problems a reader would see; empty when the report is clean. ``figures``: names of the figures that
    must be present and embedded (labelled by :func:`fig_id`)."""
    html = Path(html_path).read_text(encoding="utf-8")
    body = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    body = re.sub(r'src="data:[^"]+"', 'src="data:"', body)
    problems = [f"{what}: ...{body[max(0, m.start() - 60):m.end() + 20]}..."
                for rx, what in UNRESOLVED for m in [rx.search(body)] if m]
    srcs = embedded_images(html)
    problems += [f"an image is not embedded: {s[:80]}" for s in srcs if not s.startswith("data:")]
    for label in map(fig_id, figures):
        segment = _figure_segment(html, label)
        if segment is None:
            problems.append(f"figure {label} is not in the report")
        elif 'src="data:image/' not in segment:
            problems.append(f"figure {label} has no embedded image")
    return problems


def _figure_segment(html: str, fig_id: str) -> str | None:
    """The HTML from the element with ``id=fig_id`` to the next figure (pandoc writes ``<figure id=...>``,
    Quarto a ``<div id=...>`` around it), or None when there is no such element."""
    start = html.find(f'id="{fig_id}"')
    if start < 0:
        return None
    end = html.find('id="fig-', start + len(fig_id) + 5)
    return html[start:end if end > 0 else len(html)]


# ------------------------------------------------------------------------------------------------ stage
def run_report(profile: Profile, profile_name: str, analysis: Path = ANALYSIS, figures: Path = FIGURES,
               paper: Path = PAPER, out: Path = REPORT, engine: str = "auto") -> dict[str, Path]:
    index = prepare(profile, profile_name, analysis, figures, paper)
    paths = render(paper, out, engine)
    problems = check_html(paths["html"], list(index))
    if problems:
        raise ReportError("the rendered report has problems:\n  " + "\n  ".join(problems))
    return paths


# ------------------------------------------------------------------------------------------------ screenshot
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def screenshot(html: Path, png: Path, width: int = 1280, height: int = 2400, chromium: str | None = None) -> Path:
    """Open ``html`` in headless Chromium (offline: every resource is embedded) and save a PNG of the page."""
    exe = chromium or find_chromium()
    if not exe:
        raise ReportError("no Chromium found: install Debian's `chromium` (apt-get install chromium) or pass "
                          "--chromium PATH")
    html, png = Path(html).resolve(), Path(png).resolve()
    if not html.exists():
        raise ReportError(f"{html} does not exist: render the report first (`dvc repro report`)")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        shot = Path(work) / "shot.png"  # chromium picks the format from the extension
        proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={work}/profile",
                               f"--window-size={width},{height}", f"--screenshot={shot}", html.as_uri()],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or not shot.exists() or not shot.stat().st_size:
            raise ReportError(f"chromium failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        with atomic_path(png) as tmp:
            shutil.copyfile(shot, tmp)
    return png


def blank_fraction(png: Path) -> float:
    """The share of (near-)white pixels in a screenshot; 1.0 is a blank page."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(png).convert("L"), dtype=float)
    return float((a > 245).mean())
