"""The sentences of the self-prediction sections of the manuscript, each generated from the run's outputs and
settings (:func:`report.self_prediction.numbers.build_numbers` collects them)."""

from __future__ import annotations

import analysis.constants as K
from report.formatting import ci_text, fmt, interval_text, join_words, known


def _verdict(low: float, high: float, rope: float, positive: str, negative: str, null: str,
             inconclusive: str) -> str:
    """One of four phrases, chosen by :func:`analysis.verdicts.verdict` from the interval and the ROPE."""
    from analysis.verdicts import NEGATIVE, NULL, POSITIVE, verdict

    return {POSITIVE: positive, NEGATIVE: negative, NULL: null}.get(verdict(low, high, rope), inconclusive)


IV = K.INTERVAL_PERCENT



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
        s = (f"On {join_words(missing)}, no self-trained model gave an answer in the requested form, so no trained "
             f"prediction there could be scored: experiment 1's trained comparison covers "
             f"{len(held_out) - len(missing)} of the {len(held_out)} held-out tasks")
    lacking = {t: [x for x in scored if x not in tasks] for t, tasks in sorted((by_target or {}).items())}
    lacking = {t: x for t, x in lacking.items() if x}
    if not lacking:
        return s + (", predicting each target." if by_target and not missing else ".")
    parts = [f"predicting {t} there are none on {join_words(x)} ({t}'s self-trained models gave no answer there in the "
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
                                    "cannot be told apart from the mode baseline") + f" ({interval_text(d)} points)"

    counts = arms.get("cells_verdicts", {}).get("self_minus_mode", {})
    below = counts.get("negative", 0)
    return {"arms_sentence": (
        f"With the mode baseline as a third arm of one model, pooled over targets, {against('self_minus_mode', 'the self-predictor')} "
        f"and {against('cross_minus_mode', 'the cross-predictor')}; as a share of the headroom above the mode "
        f"(normalised lift) that is {interval_text(p['lift_self'])}% for self-prediction and "
        f"{interval_text(p['lift_cross'])}% for cross-prediction. Of the {arms['cells']} target x task x property "
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
    s = ("Not every trained hypothetical answer was in the requested form. The self-predictor's compliance rate "
         f"minus the cross-predictor's is {interval_text(c)} points; among compliant answers the self-minus-"
         f"cross difference is {interval_text(k)} points, and the two parts together imply "
         f"{interval_text(cs['two_part_advantage'])} points. At equal compliance the trial-weighted difference "
         f"would be {interval_text(e)} points (these trial-weighted figures mix the models' predicting skill into "
         f"the comparison and carry no verdict)")
    dc = cs.get("delta_compliant")  # the identified estimand on compliant answers (absent from older runs)
    if dc:
        s += (f"; the advantage at equal predicting skill on compliant answers, the identified estimand, is "
              f"{interval_text(dc)} points ("
              + _verdict(dc["low"], dc["high"], rope, "positive", "negative", "practically null", "inconclusive")
              + ", conditional on the observed tasks and runs)")
    part = cs.get("compliance_part")  # absent from the metrics of older runs
    if part is None:
        return s + "."
    # how much of the advantage is compliance: the part the different compliance makes, judged on its own
    return s + (f", and the part due to the self-predictor's different compliance rate is {interval_text(part)} points, "
                f"so " + _verdict(
        part["low"], part["high"], rope, "part of the self-minus-cross difference is that the self-predictor complied more often",
        "the self-predictor's lower compliance lowers the self-minus-cross difference",
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
    text = (f"Refitting the advantage model with every prior scale multiplied by {scaled} moves delta by at most "
            f"{pts(move)} points from the main fit's (the {len(deltas)} fits span {pts(spread)} points), and {verdict}.")
    comps = ps.get("by_component")
    if comps:  # one variance component at a time: the headline estimand's interval under each
        head = [v["headline"] for c in comps.values() for v in c.values()] + [ps["headline"]]
        agree = ("its verdict is the same under each" if ps["headline_verdicts_agree"]
                 else "its verdict changes with one of them")
        factors = " and by ".join(fmt(f, 1) for f in ps.get("component_factors", [0.5, 2.0]))
        text += (f" Multiplying one variance component's prior scale at a time ({', '.join(comps)}) by {factors} puts "
                 f"the headline advantage between {pts(min(h['mean'] for h in head))} and "
                 f"{pts(max(h['mean'] for h in head))} points (the main fit's interval "
                 f"{pts(ps['headline']['low'])} to {pts(ps['headline']['high'])}), and {agree}.")
    return text


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
        return f" (mode baseline {m[0]}%)" if len(set(m)) == 1 else f" (mode baselines {join_words([x + '%' for x in m])})"

    parts = [f"{who}, {join_words(v)}{baseline(who)}" for who, v in by.items() if len(v) >= 2]
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
                                                                         "fixed", "gamma", "pair")})
        out[f"prior_{prefix}_scale_family"] = "HalfNormal" if p.nu is None else f"HalfStudentT({p.nu:g})"
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
        before = (f"; before training, {ci_text(untrained['mad'], untrained['low'], untrained['high'])}"
                  if known(untrained["mad"]) else "")
        head = (f"On that cell (pooled over targets, {d['items']} items) the MAD after training is "
                f"{ci_text(o['trained_self']['mad'], o['trained_self']['low'], o['trained_self']['high'])} for self- and "
                f"{ci_text(o['trained_cross']['mad'], o['trained_cross']['low'], o['trained_cross']['high'])} for "
                f"cross-prediction{before}; self minus cross is {ci_text(d['difference'], d['low'], d['high'])} "
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


def _log_score_text(ls: dict) -> dict[str, str]:
    """The log-score comparison (``metrics["calibration"]["log_score"]``) in words: where the self-minus-cross
    interval lies against the ROPE, pooled and by target, without a verdict word. The pooled difference
    weights the items, and so the directions by their items, and its false-positive rate has not been
    measured by simulation: it is described, not judged (an exploratory result)."""
    rope = ls["rope"]

    def where(v: dict, pooled: bool) -> str:
        if pooled:
            words = ("the self-minus-cross difference lies above the region of practical equivalence (self-predictions "
                     "score higher)", "the self-minus-cross difference lies below the region of practical equivalence "
                     "(cross-predictions score higher)", "the self-minus-cross difference lies within the region of "
                     "practical equivalence", "the self-minus-cross difference's interval spans the edge of the region "
                     "of practical equivalence")
        else:
            words = ("above the ROPE", "below the ROPE", "within the ROPE", "across the ROPE's edge")
        return _verdict(v["low"], v["high"], rope, *words)

    e, by = ls["self_minus_cross"], ls.get("by_target", {})
    return {"calibration_log_score_verdict": where(e, True), "rope_log_score": fmt(rope, 2),
            "calibration_log_score_by_target": (
                "By target (the direction-specific differences, which the pooled one averages by items): " + "; ".join(
                    f"predicting {t}, {ci_text(v['mean'], v['low'], v['high'], digits=2)} ({where(v, False)})"
                    for t, v in sorted(by.items())) + "." if by else "")}


def _power_text(power: dict | None) -> str:
    """The power analysis of this run's design (``looking-inward power``) as a sentence."""
    if not power:
        return "The power analysis was not run."
    d = power["design"]

    def mda(v):
        return f"{fmt(v)} points" if known(v) else "more than the largest advantage simulated"

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
    if "mda_population" in power:  # absent from the power results of older runs
        run = " and a new finetuning run" if seeds >= 2 else ""
        s += (f" For the headline estimand (a new task{run}) the minimum detectable advantage is "
              f"{mda(power['mda_population'])}.")
    p = power.get("paper")
    if p:
        pd_ = p["design"]
        s += (f" At the `paper` profile's sizes ({pd_['tasks']} held-out tasks, {pd_['items']} scored {power['items_unit']}, "
              f"{pd_['seeds']} finetuning seeds) and this run's heterogeneity it is {mda(p['mda_population'])} for the "
              f"headline and {mda(p['mda_observed_tasks'])} on the observed tasks.")
    f = power.get("designs_for")
    if f:
        best, rows = f["smallest"], f["rows"]
        gap = (f"an advantage of {fmt(f['effect'], 0)} points (the size of Llama-3-70B's self-prediction advantage in "
               f"Binder et al. 2024, {fmt(f['paper_self'])}% against about {fmt(f['paper_cross'], 0)}%)")
        if best:
            s += (f" The smallest design searched that detects {gap} with {100 * K.POWER_TARGET:g}% power on the headline "
                  f"estimand has {best['tasks']:.0f} held-out tasks, {best['seeds']:.0f} finetuning seeds and "
                  f"{best['items']:.0f} scored items per task, target and seed (power "
                  f"{fmt(100 * best['power_population'], 0)}%; {f['reps']} replicates per design).")
        else:
            s += (f" No design searched (up to {max(r['tasks'] for r in rows)} held-out tasks, "
                  f"{max(r['seeds'] for r in rows)} finetuning seeds and {max(r['items'] for r in rows)} scored items per "
                  f"task, target and seed) detects {gap} with {100 * K.POWER_TARGET:g}% power on the headline estimand "
                  f"at this run's heterogeneity (at most {fmt(100 * max(r['power_population'] for r in rows), 0)}%).")
    v = power.get("validation")
    if v:
        fits = (f"{v['gate_passed']} Bayesian fits that passed the analysis's convergence gate (of {v['reps']})"
                if "gate_passed" in v else f"{v['reps']} Bayesian fits")
        s += (f" At {fmt(v['advantage'])} points, {fits} gave power {fmt(100 * v['power_bayes'], 0)}% "
              f"against {fmt(100 * v['power_approximation'], 0)}% for the approximation on the observed tasks, and the "
              f"same verdict in {fmt(100 * v['agreement'], 0)}% of replicates")
        if "agreement_population" in v:
            s += (f"; for the headline estimand, power {fmt(100 * v['power_bayes_population'], 0)}% against "
                  f"{fmt(100 * v['power_approximation_population'], 0)}%, the same verdict in "
                  f"{fmt(100 * v['agreement_population'], 0)}%")
        s += "."
        if "agreement_population" in v:
            gap = v["power_bayes_population"] - v["power_approximation_population"]
            if gap > 0.1:
                s += (" The approximation is conservative for the headline (the Bayesian rule called the advantage "
                      "more often), so its minimum detectable advantages and the designs above are upper bounds for "
                      "the Bayesian rule.")
            elif gap < -0.1:
                s += (" The approximation is optimistic for the headline (the Bayesian rule called the advantage "
                      "less often), so its minimum detectable advantages and the designs above are lower bounds for "
                      "the Bayesian rule.")
    return s




def dataset_source_text(manifests: list[dict]) -> dict[str, str]:
    """Where the run's task datasets come from, from their manifests (an imported dataset names its ``source``;
    the package's own have none): the methods' sentences on the items and the number tasks, and the limitation
    on synthetic items. ``manifests``: the run's train and held-out tasks."""
    own = sorted(m["name"] for m in manifests if not m.get("source"))
    imported = sorted(m["name"] for m in manifests if m.get("source"))
    numbers_own = sorted(m["name"] for m in manifests if m.get("family") == "number_sequence" and not m.get("source"))
    numbers_imp = sorted(m["name"] for m in manifests if m.get("family") == "number_sequence" and m.get("source"))
    licences = lambda names: join_words(sorted({m["licence"] for m in manifests if m["name"] in names}))  # noqa: E731
    gen = "generated by the package from templates and fixed vocabularies"
    if own and not imported:
        items = f"The items themselves are ours, {gen} (licence {licences(own)})."
    elif imported and not own:
        items = (f"The items themselves are the original study's, imported from its dataset release (licence "
                 f"{licences(imported)}).")
    else:
        items = (f"The items of {join_words(own)} are ours, {gen} (licence {licences(own)}); those of "
                 f"{join_words(imported)} are the original study's, imported from its dataset release (licence "
                 f"{licences(imported)}).")
    number = []
    if numbers_own:
        number.append(f"The number {'task' if len(numbers_own) == 1 else 'tasks'} ({join_words(numbers_own)}) "
                      f"{'is' if len(numbers_own) == 1 else 'are'} ours (the original's experiment 1 has none), worded "
                      "in the same style.")
    if numbers_imp:
        number.append(f"The number {'task' if len(numbers_imp) == 1 else 'tasks'} ({join_words(numbers_imp)}) "
                      f"{'comes' if len(numbers_imp) == 1 else 'come'} from the original's release; its experiment 1 "
                      "uses none.")
    if own:
        limitation = (f"The package's datasets ({join_words(own)}) are generated from templates and fixed "
                      "vocabularies, not the original study's Wikipedia, MMLU or human-written stance questions"
                      + (f"; {join_words(imported)} come from the original's release" if imported else "") + ".")
    else:
        limitation = "The datasets are the original study's release, imported with its items."
    return {"items_source_sentence": items, "number_tasks_sentence": " ".join(number),
            "datasets_limitation": limitation, "datasets_limitation_head": ", synthetic tasks" if own else ""}
