"""The manuscript's sibling control: ``paper/_generated/sibling.md``, written from the analysis's ``metrics.json``
(``sibling``) and the null simulation's ``null.json`` (the sibling contrasts' false-positive rates). A verdict
word stands only where its rule's false-positive rate was measured on this run's null worlds and is at most the
limit; otherwise the estimate is printed with no verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from report.formatting import fmt, interval_text, md_table, write_parts
from report.self_prediction.numbers import _rate_text, worst_rate

#: the figures each part of the section places, by label (see report.injection.section.FIGURE_LABELS)
FIGURE_LABELS = {"main": (), "supplement": ("fig-similarity",)}

#: the contrasts in the order the manuscript gives them, with their names in prose
NAMES = {"self_minus_sibling": "self minus sibling", "sibling_minus_cross": "sibling minus cross",
         "self_minus_cross": "self minus cross"}
#: each contrast's verdicts in words
WORDS = {
    "self_minus_sibling": {"positive": "the self-predictor beats its sibling",
                           "negative": "the sibling beats the self-predictor",
                           "practically null": "the self-predictor and its sibling are practically equal"},
    "sibling_minus_cross": {"positive": "the sibling beats the cross-predictor",
                            "negative": "the cross-predictor beats the sibling",
                            "practically null": "the sibling and the cross-predictor are practically equal"},
    "self_minus_cross": {"positive": "self-prediction beats cross-prediction",
                         "negative": "cross-prediction beats self-prediction",
                         "practically null": "self- and cross-prediction are practically equal"},
}
#: what each contrast would mean, as the manuscript says it
MEANING = (
    "Self minus sibling compares two copies of the same weights trained on the same kind of pairs: only the "
    "self-predictor was trained on its own behaviour and predicts a model it is. A positive difference is "
    "knowledge of its own behaviour that identical weights do not explain (privileged access); a difference "
    "near zero means the sibling does as well, so whatever self beats cross by comes with the network. Sibling "
    "minus cross is what sharing the target's network buys over another model's; like self minus cross, it is an "
    "advantage at equal predicting skill only if that skill does not depend on the target. Self about equal to "
    "sibling, and both above cross, points to similarity rather than introspection.")


def _rule_rate(contrast: str, null: dict | None, which: str = "population") -> tuple[dict | None, dict | None]:
    """The simulated false-positive rate of ``contrast``'s ``which`` rule and its null fits' convergence-gate
    counts, from ``null.json`` (each None where not measured)."""
    rates = (null or {}).get("rates", {})
    if contrast == "self_minus_cross":
        return rates.get("population"), rates.get("gate", {}).get("population_null")
    x = (rates.get("sibling") or {}).get(contrast, {})
    return x.get(which), x.get("gate")


def _allowed(contrast: str, null: dict | None, which: str = "population") -> tuple[bool, str]:
    """Whether the verdict word of ``contrast``'s ``which`` rule (``population``: the pooled population
    verdict; ``any_direction``: every target's) may stand, and the clause that gives its measured rate."""
    if which != "population" and contrast != "self_minus_sibling":
        # only self minus sibling's null world has every direction at 0 (equal_null); the others keep the gap
        return False, "its per-direction verdicts' rates are not simulated one by one"
    r, gate = _rule_rate(contrast, null, which)
    if not r or not r["reps"]:
        return False, "its false-positive rate was not measured"
    limit = 100 * (null or {}).get("max_rate", 0.05)
    worst = ""
    if gate and gate["failed"]:
        bound = worst_rate(r["positives"], r["reps"], gate["failed"])
        one = gate["failed"] == 1
        worst = (f"; {gate['failed']} null {'fit' if one else 'fits'} failed the convergence gate, and were "
                 f"{'it' if one else 'each'} a false positive the rate would be {fmt(bound)}%")
    if not r["within"]:
        return False, f"its false-positive rate is {_rate_text(r)}, above the {limit:g}% limit{worst}"
    return True, f"false-positive rate {_rate_text(r)}{worst}"


def _verdict_text(contrast: str, verdict: str, allowed: bool) -> str:
    if not allowed:
        return "no verdict"
    return WORDS[contrast].get(verdict, "the verdict is inconclusive")


def _cell(verdict: str, allowed: bool) -> str:
    """A verdict as the table prints it: the rule's word, or "no verdict" where its rate does not allow one."""
    return verdict if allowed else "no verdict"


def contrast_sentences(sib: dict, null: dict | None) -> list[str]:
    """One sentence per contrast: its population estimate, the verdict where its rate allows one, and the rate."""
    out = []
    for key, name in NAMES.items():
        c = sib["contrasts"][key]
        ok, why = _allowed(key, null)
        verdict = _verdict_text(key, c["population"]["verdict"], ok)
        out.append(f"{name.capitalize()}: {interval_text(c['population'])} points on a new held-out task"
                   f"{' from a new finetuning run' if c['estimand'] == 'new_task_and_run' else ''}, "
                   f"{'so ' + verdict if ok else 'with no verdict'} ({why}).")
    return out


def interpretation(sib: dict, null: dict | None) -> str:
    """What the verdicts that may stand say together, in one sentence."""
    v = {k: sib["contrasts"][k]["population"]["verdict"] if _allowed(k, null)[0] else None for k in NAMES}
    if v["self_minus_sibling"] == "positive":
        return ("Together: the self-predictor knows something of its own behaviour that the same weights, trained "
                "on the same kind of pairs, do not learn.")
    if v["self_minus_sibling"] == "practically null" and v["sibling_minus_cross"] == "positive":
        return ("Together: the self-predictor is no better than its sibling, and both beat the cross-predictor, "
                "which points to similarity rather than introspection.")
    if v["self_minus_sibling"] == "practically null":
        return ("Together: the self-predictor is no better than its sibling, so this run shows no knowledge of "
                "its own behaviour beyond what its weights bring.")
    return ("Together: at this run's size the data do not separate privileged access from similarity (the self-"
            "minus-sibling verdict is not decisive, or could not be given).")


def contrast_table(sib: dict, null: dict | None) -> pd.DataFrame:
    """Per contrast, pooled and per target (and second-arm predictor): the population estimate and the
    conditional one (on the observed tasks and runs), and the verdict where its rate allows one."""
    rows = []
    for key, name in NAMES.items():
        c = sib["contrasts"][key]
        ok, _ = _allowed(key, null)
        rows.append({"Contrast": name, "Target": "pooled", "Against": "-",
                     "New task": interval_text(c["population"]), "Observed tasks": interval_text(c["conditional"]),
                     "Verdict (new task)": _cell(c["population"]["verdict"], ok)})
        ok_t, _ = _allowed(key, null, "any_direction")
        for d in c["by_target"]:
            pop = {"mean": d["population_mean"], "low": d["population_low"], "high": d["population_high"]}
            cond = {"mean": d["conditional_mean"], "low": d["conditional_low"], "high": d["conditional_high"]}
            rows.append({"Contrast": name, "Target": d["target"], "Against": d["other"],
                         "New task": interval_text(pop), "Observed tasks": interval_text(cond),
                         "Verdict (new task)": _cell(d["population_verdict"], ok_t)})
    return pd.DataFrame(rows)


def similarity_sentences(sib: dict) -> str:
    """Each arm's accuracy beside its object-level agreement, and the agreement model."""
    if "agreement" not in sib:
        return "The base models' object-level answers were not available, so behavioural similarity was not computed."
    acc = {(r["target"], r["arm"]): r["accuracy"] for r in sib["accuracy"]}
    parts = []
    for r in sib["agreement"]:
        parts.append(f"{r['arm']} predicting {r['target']}: accuracy {fmt(acc[(r['target'], r['arm'])])}%, "
                     f"agreement {fmt(r['agreement'])}%")
    m = sib["agreement_model"]
    level = 100 * (1 - m["alpha"])

    def lo(d):
        return f"{fmt(d['log_odds'], 2)} [{fmt(d['low'], 2)}, {fmt(d['high'], 2)}]"

    text = (f"Accuracy beside object-level agreement (how often the predictor's own base model gives the target's "
            f"property value): {'; '.join(parts)}. In a binomial GLM of every arm's answers with fixed effects for "
            f"target, task and property and standard errors clustered by item ({m['rows']} answers, "
            f"{m['clusters']} items), the self arm's log-odds over the cross arm is {lo(m['unadjusted']['self'])} "
            f"without the cell's agreement and {lo(m['adjusted']['self'])} with it ({fmt(level, 0)}% intervals); "
            f"the agreement's slope (per unit of its log-odds) is {lo(m['adjusted']['agreement_logit'])}.")
    text += (" These are descriptive: their false-positive rates were not simulated, so they carry no verdict. The "
             "self-predictor and its sibling share their base model and so their agreement: a self-minus-sibling "
             "difference is not explained by this similarity.")
    return text


def sections(metrics: dict, null: dict | None) -> tuple[str, str]:
    """The main text's markdown (the contrasts, their verdicts and what they mean) and the supplement's (the
    per-target table and behavioural similarity); where the run trained no sibling, a sentence that says so."""
    sib = metrics.get("sibling")
    if not sib:
        none = ("This run trained no sibling predictor (`finetune.sibling: false`), so the self-prediction "
                "advantage cannot be separated from similarity here.\n")
        return none, none
    main = [" ".join(contrast_sentences(sib, null)) + " " + interpretation(sib, null)
            + " The three contrasts are drawn in the introduction's first figure; per target, and beside the "
              "models' behavioural similarity, they are in the supplement (@sec-supp-sibling).", "", MEANING, ""]
    supplement = [
        md_table(contrast_table(sib, null),
                 "The sibling control: each contrast in accuracy points with its 94% posterior interval, on a "
                 "new held-out task (the headline's population estimand) and on the observed tasks and runs, "
                 "pooled and per target (Against: the second arm's predictor). A verdict stands only where its "
                 "rule's false-positive rate was measured on this run's null worlds and is at most 5%.",
                 "tbl-sibling"), "",
        similarity_sentences(sib), "",
        "![Meta-level accuracy against object-level agreement, one point per predictor-target pair and cell; "
        "the dashed line is accuracy equal to agreement.](_generated/figures/similarity.png){#fig-similarity}", ""]
    return "\n".join(main), "\n".join(supplement)


def section(metrics: dict, null: dict | None) -> str:
    """:func:`sections`, the main text's part and the supplement's, as one."""
    main, supplement = sections(metrics, null)
    return main if main == supplement else main + "\n" + supplement


def write_section(gen: Path, metrics: dict, null: dict | None) -> None:
    """Write ``gen/sibling.md`` and ``gen/sibling_supplement.md``."""
    write_parts(gen, "sibling", *sections(metrics, null))
