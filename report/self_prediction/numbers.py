"""The manuscript's numbers and sentences (``paper/_generated/numbers.yml``), every qualitative one derived
from an interval by the verdict rules."""

from __future__ import annotations

import re

import analysis.constants as K
from reproduce import __version__
from reproduce.config import Profile
from report.formatting import _ci, _count, _interval, fmt, format_key, known


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


def _first_sampling(diag: dict[str, dict], profile: Profile) -> str:
    """"first sampling", with a parenthesis on the fits sampled at the retry's target acceptance from their
    first sampling (their diagnostics: that target acceptance, and no divergences that led to it) if any."""
    a = profile.analysis
    names = [n for n, d in diag.items() if a.target_accept_retry > a.target_accept
             and d.get("target_accept") == a.target_accept_retry and "diverged" not in d]
    if not names:
        return "first sampling"
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    models = "models" if len(names) > 1 else "model"
    return (f"first sampling ({a.target_accept_retry:g} from the start for the {listed} {models}, whose "
            "funnel-shaped posteriors the package always samples with the smaller steps, `analysis.self_prediction.stage.CAREFUL`)")


def _verdict(low: float, high: float, rope: float, positive: str, negative: str, null: str,
             inconclusive: str) -> str:
    """One of four phrases, chosen by :func:`analysis.verdicts.verdict` from the interval and the ROPE."""
    from analysis.verdicts import NEGATIVE, NULL, POSITIVE, verdict

    return {POSITIVE: positive, NEGATIVE: negative, NULL: null}.get(verdict(low, high, rope), inconclusive)


IV = K.INTERVAL_PERCENT

HEADLINES = {
    "advantage in every direction": (
        "self-prediction beats cross-prediction in every direction, the original study's criterion (each "
        f"direction's {IV}% interval lies above the region of practical equivalence)",
        "evidence for the self-prediction advantage the original study reports, by its own criterion"),
    "advantage on average, not in every direction": (
        "self-prediction beats cross-prediction at equal predicting skill on average, but not in every "
        "direction",
        "evidence for a self-prediction advantage on average, short of the original study's criterion of an "
        "advantage in every direction"),
    "reverse advantage": (
        f"cross-prediction beats self-prediction (the {IV}% interval of the advantage at equal skill lies below "
        "the region of practical equivalence)",
        "evidence against the self-prediction advantage the original study reports"),
    "practically null": (
        f"the self-prediction advantage at equal skill is practically null (its {IV}% interval lies inside the "
        "region of practical equivalence)",
        "evidence that the self-prediction advantage the original study reports is practically absent here"),
    "inconclusive": (
        f"the data do not decide whether self-prediction beats cross-prediction (the {IV}% interval of the "
        "advantage at equal skill reaches beyond the region of practical equivalence without clearing it)",
        "no decisive evidence for or against the self-prediction advantage the original study reports"),
}


def _criterion_clause(a: dict) -> str:
    """Where the verdict on delta leaves the original study's own criterion (an advantage in every direction)
    unstated but the data settle it: a direction in which cross-prediction is credibly better."""
    if a.get("headline") == "advantage in every direction":
        return ""
    worse = [d["target"] for d in a.get("directions", []) if d.get("verdict") == "negative"]
    if not worse:
        return ""
    return (f"By the original study's criterion, an advantage in every direction, self-prediction does not beat "
            f"cross-prediction here: predicting {_join(worse)}, cross-prediction is credibly better.")


def _by_model(values: dict) -> str:
    """``{model: setting}`` as text: the one setting when every model shares it, else each model's."""
    if not values:
        return "n/a"
    if len(set(values.values())) == 1:
        return f"{next(iter(values.values()))} (every model)"
    return "; ".join(f"{m}: {v}" for m, v in sorted(values.items()))


def _sensitivity_text(metrics: dict) -> dict:
    """The sentences that set the main result (scored against M1') beside the sensitivity variant (scored
    against the base model), beside the labelled variant scored as the original's code scores it, and beside
    the main scoring without the number task (no counterpart in the original)."""
    sens = metrics.get("sensitivity_ground_truth", {})
    if "trained" not in sens or "base" not in sens:
        return {}
    a, b = sens["trained"]["advantage"], sens["base"]["advantage"]
    rope = metrics["advantage"].get("rope", 0.0)
    verdict = lambda d: _verdict(d["low"], d["high"], rope, "positive", "negative", "practically null",  # noqa: E731
                                 "inconclusive")
    same = verdict(a) == verdict(b)

    def sign_note(x: dict, y: dict) -> str:
        """Where two estimates share a verdict but not a sign: the verdict is all they share."""
        return (", though the two point estimates have opposite signs"
                if x["estimate"] * y["estimate"] < 0 else "")

    out = {"sensitivity_verdict": (
        f"the verdict does not depend on which behaviour is the ground truth (the advantage is "
        f"{verdict(a)} either way){sign_note(a, b)}" if same else
        f"the conclusion depends on which behaviour is the ground truth: the advantage is {verdict(a)} against "
        f"M1' but {verdict(b)} against the base model")}
    main = sens["trained"]

    def scored(m: dict, beside: str = "") -> str:
        """'the self-predictor is right on ...% ... (cluster bootstrap): <verdict>' for one scoring, with
        ``beside`` after its mode baseline."""
        o = m["advantage"]
        return (f"the self-predictor is right on {fmt(m['self'])}% and the cross-predictor on {fmt(m['cross'])}% "
                f"against a mode baseline of {fmt(m['mode_baseline'])}%{beside}, and the advantage is "
                f"{fmt(o['estimate'])} points [{fmt(o['low'])}, {fmt(o['high'])}] (cluster bootstrap): {verdict(o)}")

    orig = sens.get("trained_original")
    out["original_scoring_sentence"] = ""  # no object-level answers given: no such variant
    if orig:
        out["original_scoring_sentence"] = (
            f"Scored as the original's analysis code scores experiment 1 (its property functions applied to "
            f"M1''s stored answers, every answer kept, with the missing value \"nan\" where a function finds none, and "
            f"the whole cleaned hypothetical answer compared with that value; {orig['n']:,} trained observations "
            f"against the main analysis's {main['n']:,}), "
            + scored(orig, f" (in the main analysis {fmt(main['self'])}%, {fmt(main['cross'])}% and "
                           f"{fmt(main['mode_baseline'])}%)")
            + (f", as in the main analysis{sign_note(orig['advantage'], a)}." if verdict(orig["advantage"]) == verdict(a)
               else f", where the main analysis's is {verdict(a)}."))
    nums = sens.get("trained_without_numbers")
    out["without_numbers_sentence"] = ""  # no number task held out: nothing to say
    if nums:
        out["without_numbers_sentence"] = (
            f"Without the held-out number task, which has no counterpart in the original's experiment 1 "
            f"({nums['n']:,} of the {main['n']:,} trained observations left), " + scored(nums)
            + (f", as with it{sign_note(nums['advantage'], a)}." if verdict(nums["advantage"]) == verdict(a)
               else f", where with it it is {verdict(a)}."))
    return out


def _run_scale_text(rs: dict | None, ps: dict | None, word: dict) -> str:
    """Where the run factor's scales sit against their priors, and the new-run advantage under each prior
    scale of the sensitivity refits (empty with one finetune seed, where there is no run factor)."""
    if not rs:
        return ""
    parts = [f"{name} = {fmt(v['median'], 2)} [{fmt(v['low'], 2)}, {fmt(v['high'], 2)}] for the {what}, against "
             f"a HalfNormal({fmt(v['prior_scale'], 2)}) prior whose 95th percentile is {fmt(v['prior_q95'], 2)}"
             for name, what, v in (("sigma", "intercept", rs["sigma"]), ("tau", "self slope", rs["tau"]))]
    tail = [name for name in ("sigma", "tau") if rs[name]["median"] > rs[name]["prior_q95"]]
    out = (f"The run factor's scales are estimated (posterior median, {IV}% interval, log-odds) at {parts[0]}, and at "
           f"{parts[1]}")
    where = "their priors' upper tails" if len(tail) > 1 else "its prior's upper tail"
    out += (f": the data place {' and '.join(tail)} in {where}, so the prior pulls {'them' if len(tail) > 1 else 'it'} "
            f"down, and the new-run intervals, which widen with the scales, would be wider under a wider prior."
            if tail else ".")
    by = (ps or {}).get("by_factor", {})
    runs = [(float(f), v["new_run"]) for f, v in by.items() if "new_run" in v and float(f) != 1.0]
    if runs:
        out += " The new-run advantage is " + "; ".join(
            f"{_interval(v)} points ({word[v['verdict']]}) with every prior scale multiplied by {fmt(f, 1)}"
            for f, v in sorted(runs)) + "."
    return out


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
            r = perm.get(f"pooled_p_{side}", {})
            p, n_inf = r.get("p_value"), r.get("n_informative")
            d = behaviour.get("vs_mode", {}).get(side)
            against = _verdict(d["low"], d["high"], rope, "above its mode baseline", "below its mode baseline",
                               "practically at its mode baseline",
                               "not distinguishable from its mode baseline") if d else "not compared with its mode baseline"
            if p is None or p != p:  # a one-point null: no shuffle within any cell changes the count
                null = ("the permutation null cannot test it: no shuffle of the predictions within a model x task "
                        f"x property cell changes how many equal the {side} behaviour (as where every changed item "
                        "of a cell holds the same value)")
            else:
                null = ("beyond" if p < 0.05 else "within") + " the permutation null at the one-sided 5% level"
                if n_inf is not None and n_inf < pooled["n"]:
                    null += (f" (only {int(n_inf):,} of the {int(pooled['n']):,} changed item x property pairs sit "
                             "in cells where a shuffle can change the count)")
            out[f"behaviour_{side}_verdict"] = against + " on the changed items (paired interval), and " + null
    by = behaviour.get("new_matches_by_property") or {}
    if by:
        prop, k = max(sorted(by.items()), key=lambda kv: kv[1])  # the most matches; ties: the first by name
        total = sum(by.values())
        out["behaviour_new_concentration"] = (
            f"Of the {total:,} predictions that equal the new behaviour, {k:,} are on one property, {prop} "
            f"({len(by)} {'property has' if len(by) == 1 else 'properties have'} any)")
    else:
        out["behaviour_new_concentration"] = "No prediction equals the new behaviour"
    d = behaviour.get("did", {}).get("did")
    if d:
        out["behaviour_did_verdict"] = _verdict(
            d["low"], d["high"], rope, "moved towards the new behaviour more than towards the old",
            "moved towards the old behaviour more than towards the new",
            "moved towards the new and the old behaviour practically equally",
            "moved towards the new and the old behaviour by amounts the data cannot tell apart")
    return out


def _target_shift(numbers: dict) -> str:
    """How self-training changed the predictability of each model's own behaviour: the mode baseline of its
    self-prediction rows, scored against the base model before training and against M1' after."""
    parts = []
    for key in sorted(numbers):
        m = re.fullmatch(r"mode_baseline_untrained_(.+)_on_(.+)", key)
        if m and m.group(1) == m.group(2) and f"mode_baseline_trained_{m.group(1)}_on_{m.group(1)}" in numbers:
            after = numbers[f"mode_baseline_trained_{m.group(1)}_on_{m.group(1)}"]
            parts.append(f"from {fmt(numbers[key])}% to {fmt(after)}% for {m.group(1)}")
    return ("the mode baseline of a model's own behaviour moved " + " and ".join(parts)) if parts else "n/a"


def build_numbers(numbers: dict, metrics: dict, profile: Profile, profile_name: str, power: dict | None = None,
                  counts: dict | None = None) -> dict:
    """Everything the manuscript's text quotes: ``n`` (each ``numbers.json`` entry formatted), ``run`` (the
    settings of the run that produced them) and ``text`` (qualitative statements derived from the numbers,
    so that no sentence can contradict them). ``counts``: the ``counts`` of the experiment datasets'
    manifests, by dataset name (how many concept words and conversation scripts there are to choose from)."""
    n = {k: format_key(k, v) for k, v in numbers.items()}
    a = metrics["advantage"]
    rope = a.get("rope", 0.0)
    tr = metrics["training_effect"]["overall"]
    text = {
        "advantage_verdict": HEADLINES[a["headline"]][0],
        "criterion_sentence": _criterion_clause(a),
        "conclusion": HEADLINES[a["headline"]][1],
        "rope": fmt(rope),
        "training_verdict": _verdict(tr["low"], tr["high"], rope, "raised", "lowered", "left practically unchanged",
                                     "changed, by an uncertain amount,"),
    }
    text["training_target_shift"] = _target_shift(numbers)
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
    nr, ntr = a.get("new_run"), a.get("new_task_and_run")
    text["new_run_sentence"] = (
        f"For a new finetuning run on these tasks (a new seed's self-trained model and predictors, drawn from the "
        f"spread between runs that the model fits; the observed tasks', properties' and cells' effects each drawn "
        f"uniformly and independently, not as the observed combinations), the predictive advantage at equal "
        f"skill is {_interval(nr)} points ({word[nr['verdict']]}), and on a new task with a new run "
        f"{_interval(ntr)} points ({word[ntr['verdict']]}): these intervals carry the uncertainty about that "
        f"spread, estimated from {nr['runs']} runs, and delta's does not." if nr and ntr else
        "With one finetuning seed the variation between finetuning runs is not estimated: every interval here "
        "is conditional on the one run made.")
    text["run_scale_sentence"] = _run_scale_text(a.get("run_scale"), metrics.get("prior_sensitivity"), word)
    g = a.get("gamma")
    gl = a.get("gamma_logit")
    logit = (f" The model's skill term itself, gamma on the log-odds scale, is {_ci(gl['mean'], gl['low'], gl['high'], digits=2)}; "
             f"the figure in points also carries each direction's own cell effects." if gl else "")
    text["gamma_sentence"] = (
        f"The two directions differ by gamma = {_interval(g)} points (the advantage predicting {g['first']} minus "
        f"the advantage predicting {g['second']}), which is twice the two models' difference in general "
        f"predicting skill if that skill does not depend on the target, and which the pooled trial-weighted "
        f"difference ({_interval(a['trial_weighted'])} points) mixes into its estimate.{logit}" if g else
        "With more than two models every ordered pair is a direction and each model's general predicting "
        "skill is a separate term of the model.")
    # delta in points is the model's equal-skill effect, not the plain mean of the direction rows: delta +/- gamma/2
    # holds on the log-odds scale, and each direction's figure in points averages over its own target's rows
    if len(dirs) == 2 and a.get("overall"):
        plain = (dirs[0]["mean"] + dirs[1]["mean"]) / 2
        text["delta_vs_directions"] = (
            f"The plain mean of the two directions' advantages is {fmt(plain)} points, not delta's "
            f"{fmt(a['overall']['mean'])}: delta \u00b1 gamma/2 holds on the log-odds scale, while each figure in "
            f"points averages the model's effect over its own rows (its target's tasks, properties and items); "
            f"the two frequentist estimates below weight the directions equally and so estimate the plain mean.")
    else:
        text["delta_vs_directions"] = ""
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
        "; ".join(f"the share of {labels[k]} ({fmt(100 * v['observed'])}% observed, replicated {IV}% interval "
                  f"{fmt(100 * v['low'])}-{fmt(100 * v['high'])}%)" for k, v in units.items()
                  if (k in missed) == bool(missed)) + "." if units else "")
    ps = metrics.get("prior_sensitivity")
    text["prior_sensitivity_sentence"] = _prior_sensitivity_text(ps)
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
        by = cal["log_score"].get("by_target", {})
        text["calibration_log_score_by_target"] = (
            "By target (the direction-specific differences, which the pooled one averages): " + "; ".join(
                f"predicting {t}, {_ci(v['mean'], v['low'], v['high'], digits=2)} ({_verdict(v['low'], v['high'], cal['log_score']['rope'], 'self better calibrated', 'cross better calibrated', 'practically equal', 'inconclusive')})"
                for t, v in sorted(by.items())) + "." if by else "")
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
    text["calibration_outside_sentence"] = _outside_text(metrics.get("calibration", {}))
    text["calibration_cells_sentence"] = _calibration_cells_text(metrics.get("calibration", {}), rope)
    text["scaling_sentence"] = _scaling_text(metrics)
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
        **_method_constants(),
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
        "epochs_phrase": _plural(ft.epochs, "epoch") if ft else "n/a epochs",
        # the sizes trained (metrics), else the configured ones (metrics of older runs)
        "scaling_sizes": ", ".join(str(s) for s in metrics.get("run", {}).get(
            "scaling_sizes", ft.scaling_sizes if ft else [])) or "none",
        "draws": str(profile.analysis.draws),
        "tune": str(profile.analysis.tune),
        "chains": str(profile.analysis.chains),
        "target_accept": f"{profile.analysis.target_accept:g}",
        "target_accept_retry": f"{profile.analysis.target_accept_retry:g}",
        # the fits that started at the retry's target acceptance (analysis.self_prediction.stage.CAREFUL), read from the run
        "first_sampling": _first_sampling(diag, profile),
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
    run["seeds_phrase"] = _plural(len(seeds), "seed")
    precision = metrics.get("run", {})
    run["dtype"] = _by_model(precision.get("dtype", {}))
    run["mixed_precision"] = _by_model(precision.get("mixed_precision", {}))
    run["dtype_setting"] = profile.dtype
    run.update(_prior_scales())
    factors = [f"{f:g}" for f in profile.analysis.prior_sensitivity]
    run["prior_sensitivity_phrase"] = (
        f"The advantage model is refitted with every prior scale multiplied by {' and by '.join(factors)} "
        "(`analysis.prior_sensitivity`), and delta, gamma and the verdict are reported for each." if factors else
        "The prior-sensitivity refits are off in this run (`analysis.prior_sensitivity` is empty).")
    run["system_prompt_phrase"], text["system_prompt_difference"] = _system_prompt_text(profile.system_prompt, profile.models)
    run["pairs_phrase"], text["finetune_data_difference"] = _finetune_data_text(ft)
    run["pairs_counts"] = _pairs_counts(metrics.get("pairs", []))
    run["base_dtype"] = _by_model(precision.get("base_dtype", {}))
    counts = counts or {}
    # a skipped stage's methods still describe the dataset: 'the 50'
    run["injection_concepts_phrase"] = _subset_phrase(
        profile.injection.concepts if profile.injection else None, counts.get("concept_injection", {}).get("concepts"),
        skipped=profile.injection is None)
    run["injection_baselines"] = str(counts.get("concept_injection", {}).get("baselines", "the"))
    n_concepts = (profile.injection.concepts if profile.injection else None) or counts.get("concept_injection", {}).get("concepts")
    run["identification_set"] = (f"the {n_concepts} concept words of the run (chance 1/{n_concepts})" if n_concepts
                                 else "the run's concept words")
    run["freetext_temperature"] = fmt(profile.injection.free_text.temperature, 1) if profile.injection else "n/a"
    run["mirror_kinds"] = ", ".join(profile.mirror.kinds) if profile.mirror else "none (the stage was skipped)"
    run["mirror_scripts_phrase"] = _subset_phrase(profile.mirror.scripts if profile.mirror else None,
                                                  counts.get("mirror_test", {}).get("scripts"), skipped=profile.mirror is None)
    text["exp1_tasks_sentence"] = _tasks_sentence(a.get("tasks"), list(profile.tasks.test), a.get("tasks_by_target"))
    if profile.behaviour_change:
        bc = profile.behaviour_change
        n_eval = profile.behaviour_change_eval_items()
        run.update(bc_train_items=str(bc.train_items), bc_eval_items=str(n_eval),
                   bc_overlap_phrase=_behaviour_overlap(n_eval, bc.train_items, profile.items_per_task.test,
                                                        len(profile.behaviour_change_tasks())),
                   bc_learning_rate=f"{bc.learning_rate:g}",
                   bc_epochs=f"{bc.epochs:g}", bc_epochs_phrase=_plural(bc.epochs, "epoch"))
    return {"n": n, "run": run, "text": text}


def _behaviour_overlap(n_eval: int, n_train: int, n_test: int, n_tasks: int) -> str:
    """Which of experiment 3's training items experiment 1 evaluates too: experiment 3 trains on items
    ``n_eval + 1 .. n_eval + n_train`` of each of its ``n_tasks`` held-out tasks and experiment 1 evaluates the
    first ``n_test``."""
    first, last = n_eval + 1, min(n_test, n_eval + n_train)
    if last < first:
        return "none of those is among the items experiment 1 evaluates"
    k = last - first + 1
    span = f"item {first}" if k == 1 else f"items {first}-{last}"
    where = "of its one task" if n_tasks == 1 else f"of each of its {n_tasks} tasks"
    total = "" if k * n_tasks == 1 else f" ({k * n_tasks} in all)"
    verb = "is" if k * n_tasks == 1 else "are"
    return f"{span} {where}{total}, which it trains on, {verb} among the first {n_test} that experiment 1 evaluates"


def _method_constants() -> dict[str, str]:
    """The method's constants (:mod:`analysis.constants`), for the methods, tables and figures to quote."""
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    return {
        "interval": fmt(100 * K.INTERVAL, 0),
        "gate_rhat": f"{K.RHAT_MAX:g}",
        # ArviZ's summary rounds r_hat to two decimals, so a fit passes below the threshold plus half a unit
        "gate_rhat_unrounded": f"{K.RHAT_MAX + 0.005:.3f}",
        "gate_ess": f"{K.ESS_MIN:,}",
        "gate_bfmi": f"{K.BFMI_MIN:g}",
        "mad_bins": str(K.MAD_BINS),
        "top_behaviours": words.get(K.TOP_BEHAVIOURS, str(K.TOP_BEHAVIOURS)),
        "separated_se": f"{K.SEPARATED_SE:g}",
        "cell_extreme_low": fmt(100 * K.PRIOR_CELL_EXTREME, 0),
        "cell_extreme_high": fmt(100 * (1 - K.PRIOR_CELL_EXTREME), 0),
        "power_target": fmt(100 * K.POWER_TARGET, 0),
    }


def _tasks_sentence(scored: list[str] | None, held_out: list[str], by_target: dict | None = None) -> str:
    """Which held-out tasks experiment 1's trained comparison could score (``scored``: the tasks of the
    advantage model's rows; None in metrics of older runs, where nothing is said), and, where the targets
    differ (``by_target``: target -> its scored tasks), which tasks each direction lacks: directions scored on
    different tasks make gamma and the equal-task weighting mix task with direction."""
    if scored is None:
        return ""
    missing = [t for t in held_out if t not in scored]
    if not missing:
        s = "Every held-out task has scored trained predictions"
    else:
        s = (f"On {_join(missing)}, no self-trained model gave an answer in the requested form, so no trained "
             f"prediction there could be scored: experiment 1's trained comparison covers "
             f"{len(held_out) - len(missing)} of the {len(held_out)} held-out tasks")
    lacking = {t: [x for x in scored if x not in tasks] for t, tasks in sorted((by_target or {}).items())}
    lacking = {t: x for t, x in lacking.items() if x}
    if not lacking:
        return s + (", predicting each target." if by_target and not missing else ".")
    parts = [f"predicting {t} there are none on {_join(x)} ({t}'s self-trained models gave no answer there in the "
             f"requested form)" for t, x in lacking.items()]
    return (s + " when the targets are pooled, but " + "; ".join(parts) + ". So the directions are scored on "
            "different tasks, and gamma and the equal-task weighting below mix a difference between tasks into the "
            "difference between directions.")


def _subset_phrase(wanted, available: int | None, skipped: bool = False) -> str:
    """How many of a dataset's entries a setting selects, to stand before a plural noun: ``None`` all, ``n`` the
    first n, a list those ('the 48', 'the first 24 of the 50', '3 chosen of the 50'); a stage the run
    ``skipped`` is described by its dataset ('the 50'). Without the dataset's count: 'the', 'the first 24'."""
    of = "" if available is None else f" of the {available}"
    if skipped or wanted is None:
        return "the" if available is None else f"the {available}"
    if isinstance(wanted, int):
        return f"the first {wanted}{of}"
    return f"{len(wanted)} chosen{of}"


def _finetune_data_text(ft) -> tuple[str, str]:
    """How a run's training pairs are drawn (``finetune.examples_per_cell`` and ``max_examples``), for the
    methods, and its sentence in the differences section: the original draws a fixed number of compliant
    pairs from each task and property (``evals/create_finetuning_dataset.py``, ``n_train_items``)."""
    if ft is None:
        return "no pairs (finetuning is off in this run)", "Finetuning is off in this run."
    if ft.examples_per_cell:
        cap = f", the first {ft.max_examples} kept" if ft.max_examples else ""
        return (f"at most {ft.examples_per_cell} compliant pairs drawn from each training task and property, as the "
                f"original draws them, then shuffled together{cap}",
                f"As in the original, the training pairs are drawn per task and property (at most "
                f"{ft.examples_per_cell} from each, `finetune.examples_per_cell`), then shuffled together"
                + (f" and capped at {ft.max_examples} (`finetune.max_examples`)" if ft.max_examples else "")
                + "; where a self-trained target answers fewer cells compliantly, its cross-predictors train on "
                  "fewer pairs than the self-predictors (the counts are in the methods).")
    original = "the original draws a fixed number from each task and property (`finetune.examples_per_cell`, unset in this run"
    if ft.max_examples:
        return (f"the compliant pairs, shuffled, the first {ft.max_examples} kept",
                f"The compliant training pairs of the train tasks are shuffled and the first {ft.max_examples} kept "
                f"(`finetune.max_examples`), so a task and property's share is random; {original}: with few items "
                "per task and property, a self-trained target answers fewer of them compliantly, and such a draw "
                "would give its cross-predictors fewer pairs than the self-predictors; pooled and capped, both "
                "train on the same number wherever the target has that many compliant pairs).")
    return ("every compliant pair, shuffled",
            "Every compliant training pair of the train tasks is used (`finetune.max_examples` unset), so a task "
            f"and property's share follows how many of its answers are compliant; {original}).")


def _pairs_counts(pairs: list[dict]) -> str:
    """How many pairs the self- and the cross-predictors trained on (metrics ``pairs``): 'the self-predictors
    trained on 64 pairs and the cross-predictors on 64' (a range where the runs differ)."""
    def span(kind: str) -> str | None:
        n = sorted({p["n_examples"] for p in pairs if p["kind"] == kind})
        return None if not n else str(n[0]) if len(n) == 1 else f"{n[0]}-{n[-1]}"

    own, other = span("self"), span("cross")
    if own is None or other is None:
        return "the pair counts are in `data/finetuned/*/runs.json`"
    return f"in this run the self-predictors trained on {own} pairs and the cross-predictors on {other}"


def _system_prompt_text(system_prompt: str | None, models: list[str]) -> tuple[str, str]:
    """What a chat model reads before each prompt (``system_prompt`` of the settings), for the methods, and how
    that differs from the original, whose prompt configurations (``object_level/minimal``,
    ``meta_level/minimal``) send an empty system message: the sentence of the differences section."""
    original = ("The original sends every prompt after an empty system message (its `minimal` prompt "
                "configurations); ")
    if system_prompt is None:
        smollm2 = " (SmolLM2's names the assistant)" if any(m.split("=")[-1] == "smollm2-135m" for m in models) else ""
        return ("the template's own default system prompt, where it has one",
                original + f"this run keeps each chat template's own default system prompt{smollm2}. The setting "
                "`system_prompt: \"\"` sends an empty one, as the original does.")
    if system_prompt == "":
        return ("an empty system message, as the original sends",
                "As in the original (its `minimal` prompt configurations), a chat model reads every prompt after "
                "an empty system message.")
    return (f"the system prompt \"{system_prompt}\"", original + "this run sends the system prompt named in the methods.")


def _join(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _plural(count: float, noun: str) -> str:
    """'1 epoch', '2 epochs', '0.5 epochs'."""
    return f"{count:g} {noun}{'' if count == 1 else 's'}"


def _baseline_text(rows: list[dict], rope: float) -> str:
    """How many trained predictors are above, below or indistinguishable from the mode baseline: the counts
    of the verdicts the analysis gave their 94% intervals against the ROPE."""
    if not rows:
        return "the mode-baseline comparison is not available"
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    present = [(k, label) for k, label in (("positive", "above"), ("negative", "below"),
                                          ("practically null", "practically at"),
                                          ("inconclusive", "not distinguishable from")) if counts.get(k)]
    # the first verdict names the baseline, the later ones refer back to it
    parts = [f"{counts[k]} {'is' if counts[k] == 1 else 'are'} {label} {'the mode baseline' if i == 0 else 'it'}"
             for i, (k, label) in enumerate(present)]
    return f"of the {len(rows)} trained predictor-target pairs, " + ", ".join(parts) + f" ({IV}% intervals against +/- {fmt(rope)} points)"


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
    at_equal = _verdict(e["low"], e["high"], rope, "an advantage", "a disadvantage", "practically none",
                        "inconclusive")
    s = ("Not every trained hypothetical answer was in the requested form. The self-predictor's compliance rate "
         f"minus the cross-predictor's is {_interval(c)} points; among compliant answers the self-minus-"
         f"cross difference is {_interval(k)} points, and the two parts together imply "
         f"{_interval(cs['two_part_advantage'])} points. At equal compliance the advantage would be "
         f"{_interval(e)} points ({at_equal})")
    part = cs.get("compliance_part")  # absent from the metrics of older runs
    if part is None:
        return s + "."
    # how much of the advantage is compliance: the part the different compliance makes, judged on its own
    return s + (f", and the part due to the self-predictor's different compliance rate is {_interval(part)} points, "
                f"so " + _verdict(
        part["low"], part["high"], rope, "part of the self-predictor's advantage is that it complied more often",
        "the self-predictor's lower compliance takes part of its advantage away",
        "compliance accounts for practically none of the difference",
        "the data cannot tell how much of the difference is compliance") + ".")


def _prior_sensitivity_text(ps: dict | None) -> str:
    """How far the refits with scaled priors move delta from the main fit's (the largest absolute move, with the
    spread of all fits beside it), and whether its verdict holds."""
    if not ps or len(ps.get("factors", [])) < 2:
        return "The prior-sensitivity refits were not run (`analysis.prior_sensitivity` is empty)."
    deltas = {float(f): v["delta"] for f, v in ps["by_factor"].items()}
    move = max(abs(d - deltas[1.0]) for d in deltas.values())
    spread = ps["delta_spread"]

    def pts(x: float) -> str:
        return fmt(x, 2 if abs(x) < 0.1 else 1)

    scaled = " and by ".join(fmt(f, 1) for f in ps["factors"] if f != 1.0)
    verdict = ("the verdict on delta is the same under every prior" if ps["verdicts_agree"]
               else "the verdict on delta changes with the prior")
    return (f"Refitting the advantage model with every prior scale multiplied by {scaled} moves delta by at most "
            f"{pts(move)} points from the main fit's (the {len(deltas)} fits span {pts(spread)} points), and {verdict}.")


def _scaling_text(metrics: dict) -> str:
    """The data-scaling sweep's cross-prediction accuracies per predictor, target and size, beside how much the
    full runs of different finetuning seeds differ (with two or more seeds): each size is one run, so a
    difference between sizes can be the run-to-run variation. Empty where the run has no sweep (or its
    metrics are older)."""
    rows = metrics.get("scaling") or []
    by, modes = {}, {}
    for r in sorted(rows, key=lambda r: (r["target"], r.get("predictor", ""), r["n_examples"])):
        who = f"{r['predictor']} predicting {r['target']}" if "predictor" in r else f"predicting {r['target']}"
        by.setdefault(who, []).append(f"{fmt(r['accuracy'])}% [{fmt(r['low'])}, {fmt(r['high'])}] with "
                                      f"{r['n_examples']} pairs")
        if "mode_baseline" in r:
            modes.setdefault(who, []).append(fmt(r["mode_baseline"]))

    def baseline(who: str) -> str:
        # the mode baseline of the target's own answers on the scored items: a predictor that answers one value
        # everywhere can score high where the target's behaviour is concentrated (older metrics lack it)
        m = modes.get(who, [])
        if not m:
            return ""
        return f" (mode baseline {m[0]}%)" if len(set(m)) == 1 else f" (mode baselines {_join([x + '%' for x in m])})"

    parts = [f"{who}, {_join(v)}{baseline(who)}" for who, v in by.items() if len(v) >= 2]
    if not parts:
        return ""
    s = "Cross-prediction, first seed: " + "; ".join(parts) + "."
    seeds = metrics.get("seeds", {})
    spreads = [v["cross_spread"] for v in seeds.get("by_target", {}).values() if "cross_spread" in v]
    if spreads and len(seeds.get("seeds", [])) >= 2:
        s += (f" Each size is one finetuning run, and the full runs of different seeds differ in cross-prediction "
              f"accuracy by up to {fmt(max(spreads))} points, so a difference between sizes can be run-to-run "
              f"variation as much as the amount of data.")
    return s


def _outside_text(cal: dict) -> str:
    """The probability mass outside the options, before and after training, beside the MAD without it: the
    paper's MAD counts that mass as error, so a fall in the MAD from before to after training can be the mass
    moving onto the options. Empty where the run's metrics lack either (older runs, a skipped condition)."""
    out, ren = cal.get("p_outside", {}), cal.get("mad_renormalised", {})
    cells = [f"{c}_{k}" for c in ("untrained", "trained") for k in ("self", "cross")]
    if not all(c in out and c in ren for c in cells):
        return ""
    before = (f"{fmt(out['untrained_self'])}% (self) and {fmt(out['untrained_cross'])}% (cross)"
              if fmt(out["untrained_self"]) != fmt(out["untrained_cross"]) else
              f"{fmt(out['untrained_self'])}% (self and cross alike: before training both kinds pool the same "
              f"untrained predictors' answers)")
    return (f"Before training the predictors put on average {before} of their probability outside the options, after it "
            f"{fmt(out['trained_self'])}% and {fmt(out['trained_cross'])}%, and the MAD counts that mass as "
            f"error. With each distribution renormalised over the options (the sensitivity variant of the table) the "
            f"MAD is {fmt(ren['untrained_self']['mad'])} before and {fmt(ren['trained_self']['mad'])} after "
            f"training for self-prediction, and {fmt(ren['untrained_cross']['mad'])} and "
            f"{fmt(ren['trained_cross']['mad'])} for cross-prediction.")


#: below this many items per cell the per-cell MAD intervals are called rough and no cell count is given by them
CELL_ITEMS_FOR_INTERVALS = 10


def _prior_scales() -> dict[str, str]:
    """The Bayesian models' prior scales, as the methods quote them, from the constants the models use
    (``analysis.self_prediction.hierarchical``), so the manuscript cannot state other priors than the ones fitted."""
    import analysis.self_prediction.hierarchical as M

    out = {}
    for prefix, p in (("adv", M.ADVANTAGE_PRIORS), ("te", M.TRAINING_PRIORS), ("ls", M.LOG_SCORE_PRIORS)):
        out.update({f"prior_{prefix}_{k}": f"{getattr(p, k):g}" for k in ("alpha", "beta", "sigma", "tau", "unit",
                                                                         "fixed", "gamma")})
    out["prior_ls_residual"] = f"{M.LOG_SCORE_RESIDUAL:g}"
    out.update({f"prior_bc_{k}": f"{v:g}" for k, v in M.BEHAVIOUR_PRIORS.items()})
    return out


def _calibration_cells_text(cal: dict, rope: float) -> str:
    """The MAD on the original's scope (one task and one property at a time): its headline cell after and
    before training, and how the task x property cells of this run fall. Empty for older metrics. (No
    cross-reference inside: citeproc reads the numbers' metadata, where "@tbl-..." is an unknown citation; the
    manuscript names the table after the sentence.)"""
    cells = cal.get("mad_cells")
    if not cells:
        return ""
    cell = f"the {cells['task']} task's {cells['property'].replace('_', ' ')}"
    o = cells["original"].get("pooled")
    opening = ("The original computes the MAD on one task and one property at a time; its headline calibration "
               f"figure is {cell} (from a prompt asking for one animal, where ours asks for five). ")
    if not o or not known(o["difference"]["difference"]):
        points = o["trained_self"]["points"] if o else 0
        head = (f"This run has too few points on that cell for a MAD ({points} after training, where a MAD needs "
                "at least 10). ")
    else:
        d = o["difference"]
        untrained = o["untrained_self"]
        before = (f"; before training, {_ci(untrained['mad'], untrained['low'], untrained['high'])}"
                  if known(untrained["mad"]) else "")
        head = (f"On that cell (pooled over targets, {d['items']} items) the MAD after training is "
                f"{_ci(o['trained_self']['mad'], o['trained_self']['low'], o['trained_self']['high'])} for self- and "
                f"{_ci(o['trained_cross']['mad'], o['trained_cross']['low'], o['trained_cross']['high'])} for "
                f"cross-prediction{before}; self minus cross is {_ci(d['difference'], d['low'], d['high'])} "
                "(paired bootstrap): " + (_verdict(
                    d["low"], d["high"], rope, "cross-prediction is better calibrated there",
                    "self-prediction is better calibrated there", "practically equal there",
                    "the data cannot tell which is better calibrated there")
                    if d["items"] >= CELL_ITEMS_FOR_INTERVALS else
                    f"too few items for a verdict (fewer than {CELL_ITEMS_FOR_INTERVALS})") + ". ")
    spread = (f"Of the {cells['cells_total']} task x property cells of the held-out tasks, {cells['cells']} have "
              f"enough points for both trained predictors; in {cells['self_lower']} of them self-prediction has the "
              "lower MAD")
    few = cells.get("items_min", 0) < CELL_ITEMS_FOR_INTERVALS
    spread += (f". A cell holds as few as {cells.get('items_min', 0)} items (the "
               "calibration subset), and a bootstrap over so few items has few distinct resamples, so the cells' "
               "intervals are rough and the cells describe rather than test; the pooled MAD is the comparison." if few
               else f", and the paired interval lies below 0 in {cells['self_credibly_better']} and above 0 in "
               f"{cells['cross_credibly_better']}.")
    spread += (" The pooled MAD bins the points of every cell together, where a cell's bins hold its own points "
               "only, so it is not an average of the cells' MADs.")
    return opening + head + spread


def _power_text(power: dict | None) -> str:
    """The power analysis of this run's design (``looking-inward power``) as a sentence."""
    if not power:
        return "The power analysis was not run."
    d = power["design"]

    def mda(v):
        return f"{fmt(v)} points" if v == v else "more than the largest advantage simulated"

    seeds = d.get("seeds", 1)
    per = power["items_unit"] + (f" ({seeds} finetuning seeds)" if seeds >= 2 else "")
    obs = power.get("observations_per_direction")  # absent from the power results of older runs
    size = (f": {obs['simulated']:,} scored observations per direction, a target and its predictor, against the "
            f"run's {fmt(obs['run'], 0)} on average" if obs else "")
    s = (f"For this run's design, simulated as a balanced one of the same size ({d['tasks']} held-out tasks, "
         f"{d['items']} scored {per} and {d['properties']} properties per task{size}), and the fitted heterogeneity ({power['heterogeneity_source']}), "
         f"an advantage is declared with {100 * K.POWER_TARGET:g}% power when it is at least {mda(power['mda_observed_tasks'])} on the "
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

