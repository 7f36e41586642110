"""The manuscript's numbers and sentences (``paper/_generated/numbers.yml``), every qualitative one derived
from an interval by the verdict rules."""

from __future__ import annotations

import re

from reproduce import __version__
from reproduce.config import Profile
from report.formatting import ci_text, count_text, fmt, format_numbers, interval_text, join_words
from report.self_prediction.sentences import (_arms_text, _baseline_text, _behaviour_overlap, _calibration_cells_text,
                                              _compliance_text, _finetune_data_text, IV, _method_constants,
                                              _outside_text, _pairs_counts, _plural, _power_text, _prior_scales,
                                              _prior_sensitivity_text, _log_score_text, _scaling_text, _subset_phrase,
                                              _system_prompt_text, _tasks_sentence, _verdict)


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
            "funnel-shaped posteriors the package always samples with the smaller steps, `analysis.self_prediction.fits.CAREFUL`)")



#: what each answer of the headline rule (:func:`analysis.verdicts.headline`, taken on the population estimand) says,
#: in the results and in the conclusion; ``{on}`` is the estimand ("on a new held-out task from a new finetuning run")
HEADLINES = {
    "advantage in every direction": (
        "self-prediction beats cross-prediction {on} in every direction, the original study's criterion (each "
        f"direction's {IV}% interval lies above the region of practical equivalence)",
        "evidence for the self-prediction advantage the original study reports, by its own criterion"),
    "advantage on average, not in every direction": (
        "self-prediction beats cross-prediction {on} at equal predicting skill on average, but not in every "
        "direction",
        "evidence for a self-prediction advantage on average, short of the original study's criterion of an "
        "advantage in every direction"),
    "reverse advantage": (
        f"cross-prediction beats self-prediction {{on}} (the {IV}% interval of the advantage at equal skill lies "
        "below the region of practical equivalence)",
        "evidence against the self-prediction advantage the original study reports"),
    "practically null": (
        f"the self-prediction advantage at equal skill {{on}} is practically null (its {IV}% interval lies inside "
        "the region of practical equivalence)",
        "evidence that the self-prediction advantage the original study reports is practically absent here"),
    "inconclusive": (
        f"the data do not decide whether self-prediction beats cross-prediction {{on}} (the {IV}% interval of the "
        "advantage at equal skill reaches beyond the region of practical equivalence without clearing it)",
        "no decisive evidence for or against the self-prediction advantage the original study reports"),
}
#: the population estimand of the headline, in words, by its key in ``metrics["advantage"]``
ESTIMAND_WORDS = {"new_task_and_run": "on a new held-out task from a new finetuning run",
                  "new_task": "on a new held-out task"}


def _rate_text(r: dict) -> str:
    """A false-positive rate as the manuscript prints it: percent, Wilson interval, positives of replicates."""
    return (f"{fmt(100 * r['rate'])}% [{fmt(100 * r['low'])}, {fmt(100 * r['high'])}] "
            f"({r['positives']} of {r['reps']} null worlds)")


def worst_rate(positives: int, passed: int, failed: int) -> float:
    """A simulated false-positive rate, in percent, were every fit that failed the convergence gate a positive."""
    return 100 * (positives + failed) / (passed + failed)


def _gate_text(rates: dict) -> str:
    """How the null population world's fits fared at the analysis's convergence gate, as a clause: those that
    passed are the rates' replicates; those that failed get no verdict, as the analysis would publish none."""
    g = rates.get("gate", {}).get("population_null")
    if not g:
        return ""
    failed = ""
    if g["failed"]:
        head = rates.get("headline") or {"positives": 0}
        worst = worst_rate(head["positives"], g["passed"], g["failed"])
        one = g["failed"] == 1
        failed = (f"; {g['failed']} more failed it even after the cures and {'carries' if one else 'carry'} no "
                  f"verdict, as the analysis would publish none (were {'it' if one else 'each of them'} a false "
                  f"positive, the headline rule's rate would be {fmt(worst)}%)")
    return f" that passed the analysis's convergence gate, {g['resampled']} of them after its cures{failed}"


def headline_allowed(null: dict | None) -> bool:
    """Whether the headline's verdict word may stand: its rule's false-positive rate was measured on this run's
    null worlds (some fit passed the gate) and is at most the limit."""
    head = (null or {}).get("rates", {}).get("headline")
    return bool(head and head["reps"] and head["within"])


def headline_text(a: dict, null: dict | None) -> dict:
    """The headline's sentences: the verdict (:data:`HEADLINES`) on the population estimand, only where the
    rule's false-positive rate was measured on this run's null worlds and is at most the limit; else the
    estimate without a verdict word. Beside it, the measured rates of the headline rule and of the conditional
    verdict on delta (the observed tasks and runs), which stays a labelled secondary result."""
    pop = a["population"]
    on = ESTIMAND_WORDS[pop["estimand"]]
    rates = (null or {}).get("rates", {})
    head, cond, every = rates.get("headline"), rates.get("conditional"), rates.get("every_direction")
    estimate = f"{interval_text(pop)} points"
    if headline_allowed(null):
        verdict_text, conclusion = (t.format(on=on) for t in HEADLINES[a["headline"]])
    else:
        why = ("was not measured (`analysis.null_reps` is 0)" if not head and not (null or {}).get("reps") else
               "was not measured: no null world's fit passed the convergence gate" if not head or not head["reps"]
               else f"is {_rate_text(head)}, above the {100 * null['max_rate']:g}% limit")
        verdict_text = (f"the self-prediction advantage at equal skill {on} is {estimate}, with no verdict: the "
                        f"headline rule's false-positive rate on this run's null worlds {why}")
        conclusion = "no verdict on the self-prediction advantage the original study reports"
    fpr = ("The headline rule's false-positive rate was not measured." if not head or not head["reps"] else
           f"Applied to null worlds simulated from this run's own fitted heterogeneity (no population advantage, "
           f"this run's design, trials and skill gap; {head['reps']} Bayesian fits{_gate_text(rates)}), the "
           f"headline rule calls an "
           f"advantage in {_rate_text(head)}"
           + (f", the every-direction rule in {_rate_text(every)} of worlds where the weakest direction has none"
              if every else "")
           + (f"; the same verdict taken on the observed tasks and runs (delta) would call one in "
              f"{_rate_text(cond)}, which is why it is a secondary result" if cond else "") + ".")
    return {"advantage_verdict": verdict_text, "conclusion": conclusion, "headline_estimand": on,
            "headline_estimate": estimate, "headline_fpr_sentence": fpr}


def _criterion_clause(a: dict) -> str:
    """Where the headline leaves the original study's own criterion (an advantage in every direction) unstated
    but the data settle it: a direction in which cross-prediction is credibly better on a new task (its
    population interval lies below the region of practical equivalence)."""
    if a.get("headline") == "advantage in every direction":
        return ""
    worse = [d["target"] for d in a.get("directions", []) if d.get("population_verdict") == "negative"]
    if not worse:
        return ""
    on = ESTIMAND_WORDS[a["population"]["estimand"]]
    return (f"By the original study's criterion, an advantage in every direction, self-prediction does not beat "
            f"cross-prediction {on}: predicting {join_words(worse)}, cross-prediction is credibly better.")


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
    # the pooled cluster-bootstrap difference weights the directions by their trials and so mixes the two models'
    # predicting skill into the comparison: it is described by where its interval lies, with no verdict word
    verdict = lambda d: ("above zero" if d["low"] > 0 else "below zero" if d["high"] < 0  # noqa: E731
                         else "across zero")
    same = verdict(a) == verdict(b)

    def sign_note(x: dict, y: dict) -> str:
        """Where two intervals lie on the same side but the estimates differ in sign."""
        return (", though the two point estimates have opposite signs"
                if x["estimate"] * y["estimate"] < 0 else "")

    out = {"sensitivity_verdict": (
        f"its interval lies {verdict(a)} whichever behaviour is the ground truth{sign_note(a, b)} (a trial-weighted "
        f"difference, which mixes the models' predicting skill into the comparison and so carries no verdict)"
        if same else
        f"where its interval lies depends on which behaviour is the ground truth: {verdict(a)} against M1', "
        f"{verdict(b)} against the base model (a trial-weighted difference, which mixes the models' predicting "
        f"skill into the comparison and so carries no verdict)")}
    main = sens["trained"]

    def scored(m: dict, beside: str = "") -> str:
        """'the self-predictor is right on ...% ... (cluster bootstrap), its interval <side>' for one scoring,
        with ``beside`` after its mode baseline."""
        o = m["advantage"]
        return (f"the self-predictor is right on {fmt(m['self'])}% and the cross-predictor on {fmt(m['cross'])}% "
                f"against a mode baseline of {fmt(m['mode_baseline'])}%{beside}, and the pooled self-minus-cross "
                f"difference is {fmt(o['estimate'])} points [{fmt(o['low'])}, {fmt(o['high'])}] (cluster bootstrap, "
                f"trial-weighted), its interval {verdict(o)}")

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
               else f", where the main analysis's lies {verdict(a)}."))
    nums = sens.get("trained_without_numbers")
    out["without_numbers_sentence"] = ""  # no number task held out: nothing to say
    if nums:
        out["without_numbers_sentence"] = (
            f"Without the held-out number task, which has no counterpart in the original's experiment 1 "
            f"({nums['n']:,} of the {main['n']:,} trained observations left), " + scored(nums)
            + (f", as with it{sign_note(nums['advantage'], a)}." if verdict(nums["advantage"]) == verdict(a)
               else f", where with it it lies {verdict(a)}."))
    return out


def _run_scale_text(rs: dict | None, ps: dict | None, word: dict) -> str:
    """Where the run factor's scales sit against their priors, and the new-run advantage under each prior
    scale of the sensitivity refits (empty with one finetune seed, where there is no run factor)."""
    if not rs:
        return ""
    parts = [f"{name} = {fmt(v['median'], 2)} [{fmt(v['low'], 2)}, {fmt(v['high'], 2)}] for the {what}, against "
             f"a {v['prior']} prior whose 95th percentile is {fmt(v['prior_q95'], 2)}"
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
            f"{interval_text(v)} points ({word[v['verdict']]}) with every prior scale multiplied by {fmt(f, 1)}"
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
    """Experiment 3's verdicts: the tracking contrast (the pooled new - old match rate beyond its permutation
    expectation, whose null is 0), and each match rate beside its leave-one-out mode baseline (descriptive)
    and its permutation null."""
    out = {}
    pooled = behaviour.get("tracking", {}).get("pooled")
    perm = behaviour.get("permutation", {})
    if pooled:
        for side in ("new", "old"):
            r = perm.get(f"pooled_p_{side}", {})
            p, n_inf = r.get("p_value"), r.get("n_informative")
            d = behaviour.get("vs_loo_mode", {}).get(side)
            known = d and d.get("low") is not None and d["low"] == d["low"]
            against = _verdict(d["low"], d["high"], rope, "above its leave-one-out mode baseline",
                               "below its leave-one-out mode baseline",
                               "practically at its leave-one-out mode baseline",
                               "not distinguishable from its leave-one-out mode baseline") if known else \
                "not compared with a leave-one-out mode baseline (no changed item has another in its pool)"
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
    d = behaviour.get("excess", {}).get("pooled_excess_new_minus_old")
    if d:
        out["behaviour_tracking_verdict"] = _verdict(
            d["low"], d["high"], rope, "track the new behaviour more than the old",
            "track the old behaviour more than the new",
            "track neither behaviour more than the other (practically zero)",
            "leave open whether they track the new behaviour more than the old (the interval is not clear of the "
            f"region of practical equivalence, ±{rope:g} points)")
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
                  counts: dict | None = None, null: dict | None = None) -> dict:
    """Everything the manuscript's text quotes: ``n`` (each ``numbers.json`` entry formatted), ``run`` (the
    settings of the run that produced them) and ``text`` (qualitative statements derived from the numbers,
    so that no sentence can contradict them). ``counts``: the ``counts`` of the experiment datasets'
    manifests, by dataset name (how many concept words and conversation scripts there are to choose from).
    ``null``: the null stage's ``null.json`` (the verdict rules' false-positive rates)."""
    a = metrics["advantage"]
    rope = a.get("rope", 0.0)
    # one number of decimals per interval; the advantage's bounds against the ends of the ROPE its verdicts read
    n = format_numbers(numbers, lambda stem: (-rope, rope) if stem.startswith("advantage_") and "_logit" not in stem
                       else ())
    tr = metrics["training_effect"]["overall"]
    text = {
        **headline_text(a, null),
        "criterion_sentence": _criterion_clause(a),
        "rope": fmt(rope),
        "training_verdict": _verdict(tr["low"], tr["high"], rope, "raised", "lowered", "left practically unchanged",
                                     "changed, by an uncertain amount,"),
    }
    text["training_target_shift"] = _target_shift(numbers)
    word = {"positive": "self better", "negative": "cross better", "practically null": "practically equal",
            "inconclusive": "inconclusive"}
    dirs = a.get("directions", [])
    text["advantage_by_direction"] = "; ".join(
        f"predicting {d['target']} (cross-predictor {d['cross_predictor']}): {interval_text(d)} points "
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
        f"skill is {interval_text(nr)} points ({word[nr['verdict']]}), and on a new task with a new run "
        f"{interval_text(ntr)} points ({word[ntr['verdict']]}): these intervals carry the uncertainty about that "
        f"spread, estimated from {nr['runs']} runs, and delta's does not." if nr and ntr else
        "With one finetuning seed the variation between finetuning runs is not estimated: every interval here "
        "is conditional on the one run made.")
    text["run_scale_sentence"] = _run_scale_text(a.get("run_scale"), metrics.get("prior_sensitivity"), word)
    g = a.get("gamma")
    gl = a.get("gamma_logit")
    logit = (f" The model's skill term itself, gamma on the log-odds scale, is {ci_text(gl['mean'], gl['low'], gl['high'], digits=2)}; "
             f"the figure in points also carries each direction's own cell effects." if gl else "")
    text["gamma_sentence"] = (
        f"The two directions differ by gamma = {interval_text(g)} points (the advantage predicting {g['first']} minus "
        f"the advantage predicting {g['second']}), which is twice the two models' difference in general "
        f"predicting skill if that skill does not depend on the target, and which the pooled trial-weighted "
        f"difference ({interval_text(a['trial_weighted'])} points) mixes into its estimate.{logit}" if g else
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
    if cal.get("log_score", {}).get("self_minus_cross"):
        text.update(_log_score_text(cal["log_score"]))
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
        # the fits that started at the retry's target acceptance (analysis.self_prediction.fits.CAREFUL), read from the run
        "first_sampling": _first_sampling(diag, profile),
        "bootstrap": f"{profile.analysis.bootstrap:,}",
        "sampler": profile.analysis.sampler,
        "r_hat_max": f"{max(d['r_hat_max'] for d in diag.values()):.2f}" if diag else "n/a",
        "ess_min": count_text(min(d["ess_bulk_min"] for d in diag.values())) if diag else "n/a",
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
    run["null_draws"] = str(profile.analysis.null_draws)
    run["null_reps"] = str(profile.analysis.null_reps)
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
    # the dataset the run used (the project's own, or a published-protocol variant)
    inj_name = profile.injection.dataset if profile.injection else "concept_injection"
    inj = counts.get(inj_name, {})
    run["injection_dataset"] = inj_name
    run["injection_dataset_phrase"] = {
        "concept_injection": "the project's own list, `data_raw/concept_injection`",
        "concept_injection_lindsey": "Lindsey's list and trial wording, `data_raw/concept_injection_lindsey`",
        "concept_injection_lindsey_info": ("Lindsey's list and trial wording, with Pearson-Vogel et al.'s information "
                                           "prompt after the preamble, `data_raw/concept_injection_lindsey_info`"),
    }.get(inj_name, f"`data_raw/{inj_name}`")
    run["injection_concept_prompt"] = ("Tell me about {word}" if inj_name.startswith("concept_injection_lindsey")
                                       else "Say a few words about {word}.")
    # a skipped stage's methods still describe the dataset: 'the 50'
    run["injection_concepts_phrase"] = _subset_phrase(
        profile.injection.concepts if profile.injection else None, inj.get("concepts"),
        skipped=profile.injection is None)
    run["injection_baselines"] = str(inj.get("baselines", "the"))
    n_concepts = (profile.injection.concepts if profile.injection else None) or inj.get("concepts")
    n_words = inj.get("wordings")
    used = min(n_words, n_concepts) if n_words and n_concepts else n_words
    run["injection_wordings"] = ("several" if not n_words else str(n_words) if used == n_words
                                 else f"{used} (of the dataset's {n_words}: one per concept slot)")
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
