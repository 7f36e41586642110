"""The manuscript's abstract, generated from the run: the question, what was run, and one sentence per finding
of experiments 1-3 (and the sibling control), each with its estimate, interval and verdict, and one each for
concept injection and the mirror test (counts, no verdict word); the verdicts of
experiment 1 and the sibling control with the false-positive rate measured for their rule. The qualifications
stay in the results; the abstract is at most :data:`MAX_WORDS` words."""

from __future__ import annotations

from report.formatting import fmt, interval_text
from report.self_prediction.numbers import headline_allowed
from report.self_prediction.sentences import _verdict

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


def _rate(r: dict | None, simulated: bool = False) -> str:
    """A simulated false-positive rate with its count: "3.4%, 1 of 29 null worlds" ("... simulated null worlds"
    where the sentence has not said how the rate was measured)."""
    return (f"{fmt(100 * r['rate'])}%, {r['positives']} of {r['reps']} " + ("simulated " if simulated else "")
            + "null worlds" if r and r.get("reps") else "not measured")


def _headline(a: dict, null: dict | None, rope: str, level: str) -> str:
    pop = a["population"]
    head = (null or {}).get("rates", {}).get("headline")
    where = ("a new held-out task from a new finetuning run" if pop["estimand"] == "new_task_and_run"
             else "a new held-out task")
    verdict = HEADLINE[a["headline"]] if headline_allowed(null) else "no verdict"
    return (f"Experiment 1: on {where}, self- minus cross-prediction accuracy at equal predicting skill is "
            f"{interval_text(pop)} points ({level}% interval; equivalence region ±{rope}): {verdict} (false-positive rate "
            f"{_rate(head, simulated=True)}).")


def _sibling(sib: dict | None, null: dict | None) -> str:
    if not sib:
        return ""
    from report.self_prediction.sibling import _allowed, _rule_rate

    c = sib["contrasts"]["self_minus_sibling"]
    ok, _ = _allowed("self_minus_sibling", null)
    r, _ = _rule_rate("self_minus_sibling", null)
    verdict = SIBLING.get(c["population"]["verdict"], "inconclusive") if ok else "no verdict"
    return (f"Self minus sibling (a second copy of the model trained on the cross-predictor's data): "
            f"{interval_text(c['population'])} points, {verdict} (false-positive rate {_rate(r)}).")


def _tracking(metrics: dict, rope: str) -> str:
    """Experiment 3's tracking verdict, short: the main text's rule (the unrounded interval against the region
    of practical equivalence) in the abstract's words."""
    d = metrics["behaviour"]["excess"]["pooled_excess_new_minus_old"]
    return _verdict(d["low"], d["high"], float(rope), "they track the new behaviour", "they track the old behaviour",
                    "practically no difference", f"inconclusive (not clear of the ±{rope}-point equivalence region)")


def _calibration(metrics: dict, rope: str) -> str:
    """Experiment 2's verdict, short: the main text's rule (the MAD difference's interval against the region of
    practical equivalence) in the abstract's words."""
    d = metrics["calibration"]["mad_difference"]["pooled"]
    return _verdict(d["low"], d["high"], float(rope), "cross-prediction is better calibrated",
                    "self-prediction is better calibrated", "practically equal", "inconclusive")


def _injection(numbers: dict) -> str:
    """Concept injection in one sentence: the steering cells whose detection rate lies above the control trials'
    (by each cell's 95% interval), and whether that rate sat at its ceiling (every control trial answered yes)."""
    models = numbers.get("models", {})
    ms = {m: d for m, d in models.items() if "detection_best" in d}
    cells = sum(d.get("detection_cells", 0) for d in ms.values())
    if not cells:
        return ""
    above = sum(d.get("detection_cells_above_fp", 0) for d in ms.values())
    # the ceiling over every model with control trials, whether or not any of its cells could be counted
    ctl = {m: c for m, d in models.items() if (c := d.get("detection_observed", {}).get("control")) and c["n"]}
    full = [m for m, c in ctl.items() if c["k"] == c["n"]]
    who = (("both models" if len(ctl) == 2 else "every model") if len(full) == len(ctl) else " and ".join(full))
    steer = "steering cells" if all("steering" in d for d in ms.values()) else "cells"  # counted after the check
    return (f"Concept injection: detection's 95% interval lay above the control rate in {above} of {cells} "
            f"{steer}" + (f"; {who} put P(yes) above P(no) on every control trial (the ceiling)" if full else "")
            + ".")


def _mirror(numbers: dict) -> str:
    """The mirror test in one sentence: the replies that remarked unprompted on the form of the earlier text."""
    ms = [d["noticing_observed"] for d in numbers.get("models", {}).values() if "noticing_observed" in d]
    if not ms:
        return ""
    k, n = sum(o["k"] for o in ms), sum(o["n"] for o in ms)
    return f"Mirror test: {k} of {n} replies remarked on the form of earlier replies shown as the model's."


def abstract_text(meta: dict, metrics: dict, null: dict | None, injection: dict | bool | None,
                  mirror: dict | bool | None) -> str:
    """The abstract from the built numbers (``meta``: ``n``, ``run``, ``text``) and the analysis's metrics;
    ``injection`` and ``mirror``: whether those experiments ran, or the ``numbers.json`` of their analyses, whose
    findings then get a sentence each."""
    text = _abstract(meta, metrics, null, injection, mirror)
    if len(text.split()) > MAX_WORDS:  # the side experiments' findings give way to naming them
        text = _abstract(meta, metrics, null, bool(injection), bool(mirror))
    return text


def _abstract(meta: dict, metrics: dict, null: dict | None, injection: dict | bool | None,
              mirror: dict | bool | None) -> str:
    n, run, text = meta["n"], meta["run"], meta["text"]
    a = metrics["advantage"]
    side = {name: (sentence(x) if isinstance(x, dict) else "") for name, x, sentence in
            (("injection", injection, _injection), ("mirror", mirror, _mirror))}
    # the side experiments are named here only where their findings get no sentence of their own below
    inj, mir = bool(injection) and not side["injection"], bool(mirror) and not side["mirror"]
    added = [w for w, ran in (("add a sibling control", bool(metrics.get("sibling"))),
                              ("run concept injection" + (" and a mirror test" if mir else ""), inj),
                              ("run a mirror test", mir and not inj)) if ran]
    parts = [
        "Binder et al. (2024) report that a language model finetuned to predict its own behaviour predicts it "
        "better than other models trained on the same data.",
        f"We repeat their experiments with {run['models']} ({run['n_seeds']} finetuning "
        f"{'seed' if run['n_seeds'] == '1' else 'seeds'})"
        + ("" if not added else f" and {added[0]}" if len(added) == 1 else
           f", {', '.join(added[:-1])}, and {added[-1]}") + ".",
        _headline(a, null, text["rope"], run["interval"]),
        _sibling(metrics.get("sibling"), null),
    ]
    if "calibration_mad_difference_pooled_difference" in n and "mad_difference_verdict" in text:
        parts.append(f"Experiment 2: calibration error (MAD), self minus cross: "
                     f"{n['calibration_mad_difference_pooled_difference']} "
                     f"[{n['calibration_mad_difference_pooled_low']}, {n['calibration_mad_difference_pooled_high']}] "
                     f"(95% bootstrap): {_calibration(metrics, text['rope'])}.")
    key = "behaviour_excess_pooled_excess_new_minus_old"
    if f"{key}_estimate" in n and "behaviour_tracking_verdict" in text:
        parts.append(f"Experiment 3: after a behaviour change, predictions match the new behaviour "
                     f"{n[f'{key}_estimate']} points [{n[f'{key}_low']}, {n[f'{key}_high']}] (95% bootstrap) more "
                     f"than the old beyond chance: {_tracking(metrics, text['rope'])}.")
    parts += [side["injection"], side["mirror"]]
    return " ".join(p for p in parts if p)
