"""The manuscript's abstract, generated from the run: the question, what was run, and one sentence per finding
of experiments 1-3 (and the sibling control), each with its estimate, interval and verdict; the verdicts of
experiment 1 and the sibling control with the false-positive rate measured for their rule. The qualifications
stay in the results; the abstract is at most :data:`MAX_WORDS` words."""

from __future__ import annotations

from report.formatting import fmt, interval_text
from report.self_prediction.numbers import headline_allowed

#: the abstract's length limit, in words separated by white space
MAX_WORDS = 200

#: the headline's verdict, short
HEADLINE = {
    "advantage in every direction": "self-prediction is better in every direction",
    "advantage on average, not in every direction": "self-prediction is better on average, not in every direction",
    "reverse advantage": "cross-prediction is better",
    "practically null": "practically no difference",
    "inconclusive": "inconclusive",
}
#: a sibling contrast's verdict, short
SIBLING = {"positive": "the self-predictor is better", "negative": "the sibling is better",
           "practically null": "practically no difference", "inconclusive": "inconclusive"}


def _rate(r: dict | None) -> str:
    """A simulated false-positive rate with its count: "3.4%, 1 of 29 null worlds"."""
    return (f"{fmt(100 * r['rate'])}%, {r['positives']} of {r['reps']} null worlds" if r and r.get("reps")
            else "not measured")


def _headline(a: dict, null: dict | None, rope: str, level: str) -> str:
    pop = a["population"]
    head = (null or {}).get("rates", {}).get("headline")
    where = ("a new held-out task from a new finetuning run" if pop["estimand"] == "new_task_and_run"
             else "a new held-out task")
    verdict = HEADLINE[a["headline"]] if headline_allowed(null) else "no verdict"
    return (f"Experiment 1: on {where}, self- minus cross-prediction accuracy at equal predicting skill is "
            f"{interval_text(pop)} points ({level}% interval; practical-equivalence region ±{rope}): {verdict} (false-positive rate, in "
            f"null worlds simulated from this run: {_rate(head)}).")


def _sibling(sib: dict | None, null: dict | None) -> str:
    if not sib:
        return ""
    from report.self_prediction.sibling import _allowed, _rule_rate

    c = sib["contrasts"]["self_minus_sibling"]
    ok, _ = _allowed("self_minus_sibling", null)
    r, _ = _rule_rate("self_minus_sibling", null)
    verdict = SIBLING.get(c["population"]["verdict"], "inconclusive") if ok else "no verdict"
    return (f"Against a sibling, a second copy of the model's own weights trained on the cross-predictor's data, "
            f"self-prediction differs by {interval_text(c['population'])} points: {verdict} (false-positive rate "
            f"{_rate(r)}).")


def _tracking(metrics: dict, rope: str) -> str:
    """Experiment 3's tracking verdict, short: the main text's rule (the unrounded interval against the region
    of practical equivalence) in the abstract's words."""
    from analysis.verdicts import NEGATIVE, NULL, POSITIVE, verdict

    d = metrics["behaviour"]["excess"]["pooled_excess_new_minus_old"]
    v = verdict(d["low"], d["high"], float(rope))
    return {POSITIVE: "they track the new behaviour", NEGATIVE: "they track the old behaviour",
            NULL: "practically no difference"}.get(
        v, f"inconclusive (the interval is not clear of the ±{rope}-point region of practical equivalence)")


def abstract_text(meta: dict, metrics: dict, null: dict | None, injection: bool, mirror: bool) -> str:
    """The abstract from the built numbers (``meta``: ``n``, ``run``, ``text``) and the analysis's metrics."""
    n, run, text = meta["n"], meta["run"], meta["text"]
    a = metrics["advantage"]
    added = [w for w, ran in (("add a sibling control", bool(metrics.get("sibling"))),
                              ("run concept injection" + (" and a mirror test" if mirror else ""), injection),
                              ("run a mirror test", mirror and not injection)) if ran]
    parts = [
        "Binder et al. (2024) report that language models finetuned to predict their own behaviour predict it "
        "better than other models trained on the same data do.",
        f"We repeat their experiments with {run['models']} ({run['n_seeds']} finetuning "
        f"{'seed' if run['n_seeds'] == '1' else 'seeds'})"
        + ("" if not added else f" and {added[0]}" if len(added) == 1 else
           f", {', '.join(added[:-1])}, and {added[-1]}") + ".",
        _headline(a, null, text["rope"], run["interval"]),
        _sibling(metrics.get("sibling"), null),
    ]
    if "calibration_mad_difference_pooled_difference" in n and "mad_difference_verdict" in text:
        parts.append(f"Experiment 2: self- minus cross-prediction calibration error (MAD) is "
                     f"{n['calibration_mad_difference_pooled_difference']} "
                     f"[{n['calibration_mad_difference_pooled_low']}, {n['calibration_mad_difference_pooled_high']}] "
                     f"(95% bootstrap interval): "
                     f"{text['mad_difference_verdict']}.")
    key = "behaviour_excess_pooled_excess_new_minus_old"
    if f"{key}_estimate" in n and "behaviour_tracking_verdict" in text:
        parts.append(f"Experiment 3: after a behaviour change, predictions match the new behaviour more than the old "
                     f"by {n[f'{key}_estimate']} points [{n[f'{key}_low']}, {n[f'{key}_high']}] (95% bootstrap "
                     f"interval) beyond chance pairing: {_tracking(metrics, text['rope'])}.")
    return " ".join(p for p in parts if p)
