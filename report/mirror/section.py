"""The manuscript's mirror-test results: ``paper/_generated/mirror.md``, written from ``data/mirror/analysis``
(numbers, figures and the example transcripts; nothing typed by hand), and included by ``paper/index.qmd``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from reproduce.config import REPO_ROOT
from reproduce.io import atomic_write_bytes

from report.formatting import (fmt, gate_sentence, kappa_text, known, labelled_agreement_text, md_table, model_text,
                               percent_interval, points_interval, run_seconds, write_parts)

#: the figures each part of the section places, by label (see report.injection.section.FIGURE_LABELS)
FIGURE_LABELS = {"main": ("fig-mirror-outcomes",), "supplement": ("fig-mirror-surprise",)}

MIRROR = REPO_ROOT / "data" / "mirror"
WORDS = {"above": "credibly above", "below": "credibly below", "unclear": "not distinguishable from"}


def _cell(d: dict) -> str:
    if d.get("condition") == "other":
        return "another model's replies"
    if d.get("kind") == "insertion" and d.get("level") == 1.0:
        return "insertion at level 1 (the post's own manipulation)"
    return f"{d['kind']} at level {d['level']:g}"


def _change(d: dict, name: str, every: str, none: str, side: str, what: str, grade: str = "") -> str:
    """The sentence on the altered cells of the binary outcome ``name`` (noticing, judge_noticing, recognition)
    against the control, whose largest ``what`` (change, drop) is looked for to the ``side`` (above, below) of
    it; ``grade`` opens the sentence where the outcome is not the rules' (the judge's).

    Where every reply of the model gave the same answer in every condition (``every`` / ``none`` says which),
    the cells' estimates differ only by the prior (it pulls a cell of fewer trials further from 0 or 1), so no
    cell is named; nor is one where no altered cell's raw rate lies to that side of the control's. Else the
    cell of the largest raw change, or every cell that ties there on its counts, each with its counts and
    modelled contrast: which of tied cells the posterior puts furthest is the sampler's noise, not the data."""
    o, e = d[f"{name}_observed"], d[f"{name}_extreme"]
    credibly = f"{d[f'{name}_cells_{side}']} of {d[f'{name}_cells']} altered cells were credibly {side}"
    if o["k"] in (0, o["n"]):
        return (f"With {every if o['k'] else none}, the altered cells' estimates differ from the control only by "
                f"the prior; {credibly} it.")
    if (e["raw_diff"] <= 0) if side == "above" else (e["raw_diff"] >= 0):
        text = f"no altered cell's raw rate was {side} the control's; {credibly} it."
    elif not e["tied"]:
        text = (f"the largest {what} ({_cell(e)}, {e['k']} of {e['n']}) was {points_interval(e)}, {WORDS[e['verdict']]} zero; "
                f"{credibly} the control.")
    else:
        cells = [e, *e["tied"]]
        listed = "; ".join(f"{_cell(c)}, {c['k']} of {c['n']}: {points_interval(c)}" for c in cells)
        text = (f"the largest {what} was shared by {len(cells)} cells with the same raw rate ({listed}); {credibly} "
                "the control.")
    text = grade + text
    return text[0].upper() + text[1:]


def _imitation(d: dict) -> str:
    """The sentence on the corrupted cell whose raw share of pattern words rose most over the control's share for
    its kind (or every cell that ties there; none where no cell's raw share rose), with the raw counts beside the
    modelled difference of the typical reply's share."""
    e = d["imitation_top"]
    credibly = f"{d['imitation_cells_above']} of {d['imitation_cells']} cells credibly above"
    if e["raw_diff"] <= 0:
        return (f"Imitation: in no corrupted cell was the raw share of words showing the pattern above the "
                f"control's share for its kind; {credibly}.")
    counts = [f"{c['k']} of {c['n']} words against {c['control_k']} of {c['control_n']} in the control"
              for c in [e, *e["tied"]]]
    if not e["tied"]:
        return (f"Imitation: the share of words of its next reply showing the pattern rose most for {_cell(e)} "
                f"({counts[0]}), by {points_interval(e)} over the control; {credibly}.")
    listed = "; ".join(f"{_cell(c)}, {n}: {points_interval(c)}" for c, n in zip([e, *e["tied"]], counts))
    return (f"Imitation: the share of words of its next reply showing the pattern rose most, by the same raw "
            f"amount, in {len(counts)} cells ({listed}); {credibly}.")


def _split(d: dict) -> str:
    """The imitation split: the pattern words that were corrupted words of the shown history written again
    (copied), and new words in the corruption's pattern (adopted), each with its largest modelled rise over the
    control (the same model as imitation's, on that part of the counts)."""
    parts = []
    for part, what in (("copied", "corrupted words of the shown history written again"),
                       ("adopted", "new words in the corruption's pattern")):
        if f"imitation_{part}_top" not in d:
            continue
        e, words = d[f"imitation_{part}_top"], d[f"imitation_{part}_words"]
        counted = ", ".join(f"{n} ({k})" for k, n in words.items())
        rise = (f"its largest rise over the control, {_cell(e)} ({e['k']} of {e['n']} words against "
                f"{e['control_k']} of {e['control_n']}), was {points_interval(e)}" if e["raw_diff"] > 0
                else "in no cell was its raw share above the control's")
        above = d[f"imitation_{part}_cells_above"]
        parts.append(f"{what} (*{part}*): {counted} words; {rise}; {above} {'cell' if above == 1 else 'cells'} "
                     "credibly above")
    return ("Split in two: " + "; ".join(parts) + ".") if parts else ""


def _noted(head: str, notes: list[str], sep: str) -> str:
    """``head`` with its non-empty ``notes`` in one bracket after it."""
    notes = [n for n in notes if n]
    return head + (f" ({sep.join(notes)})" if notes else "")


def _third_person(refs: dict, names: dict) -> str:
    """Per condition, the self-references in the third person out of all (``refs``: condition -> first and third
    counts), each condition named as ``names`` says."""
    return "; ".join(f"{r['third']} of {r['first'] + r['third']} {names.get(c, c)}" for c, r in refs.items())


def summary(m: str, d: dict) -> str:
    """The main text's sentence for one model: noticing, recognition and imitation, each as its raw count or
    rate and how many altered cells differ credibly from the control (with a floor or ceiling said where the
    change looked for has no room); the full paragraph is :func:`model_parts`' second part."""
    bits = []
    o, c = d.get("noticing_observed"), d.get("noticing_control")
    if o or c:
        counts = f"in {o['k']} of {o['n']} replies" if o else f"in {c['k']} of {c['n']} replies with its clean history"
        notes = [f"{c['k']} of {c['n']} with its clean history" if o and c else "",
                 "every clean-history reply did: a ceiling, so a rise cannot show" if c and c["n"] and c["k"] == c["n"]
                 else "",
                 f"{d['noticing_cells_above']} of {d['noticing_cells']} altered cells credibly above the control"
                 if "noticing_cells" in d else ""]
        bits.append(_noted(f"it remarked unprompted on the form of the earlier text {counts}", notes, ", "))
    if "recognition_control" in d:
        r = d["recognition_control"]
        notes = ["at its floor: a drop cannot show" if "k" in r and r["n"] and r["k"] == 0 else
                 "one clean-history reply said yes: near its floor" if "k" in r and r["n"] and r["k"] == 1 else "",
                 f"{d['recognition_cells_below']} of {d['recognition_cells']} altered cells credibly below"
                 if "recognition_cells" in d else ""]
        bits.append(_noted(f"it said it wrote its clean history at {percent_interval(r)}", notes, "; "))
    if "imitation_top" in d:
        bits.append(f"{d['imitation_cells_above']} of {d['imitation_cells']} corrupted cells showed imitation "
                    "credibly above the control")
    left = d.get("unchanged_histories")
    return (f"**{m}**: " + ("; ".join(bits) if bits else "no replies were analysed")
            + (f" ({left} {'reply' if left == 1 else 'replies'} after a history the corruption left unchanged "
               "not counted)" if left else "") + ".")


def model_parts(m: str, d: dict) -> tuple[str, str]:
    """The results for one model in two parts: the main text's summary (:func:`summary`) and the supplement's
    two paragraphs (noticing, recognition and imitation with their cells; then the judge, copied and adopted
    pattern words, self-references, surprise, a thinking trace, paired recognition and the discrimination
    score)."""
    detail: list[str] = []
    parts = [f"**{m}** ({d['scripts']} conversations, turns {', '.join(map(str, d['turns']))})."]
    if d.get("unchanged_histories"):
        n = d["unchanged_histories"]
        parts.append(f"{n} {'reply' if n == 1 else 'replies'} after a corrupted history followed one the corruption "
                     "left unchanged (in every earlier reply the share came to no word once rounded) and "
                     f"{'is' if n == 1 else 'are'} left out of the noticing, recognition and imitation counts below.")
    if "noticing_observed" in d:
        o = d["noticing_observed"]
        parts.append(f"It remarked unprompted on the form of the earlier text (typos, misspellings, odd letters, "
                     f"garbled words) in {o['k']} of its {o['n']} replies.")
    if "noticing_control" in d:
        c = d["noticing_control"]
        parts.append(f"With its clean history ({c['k']} of {c['n']}) the posterior rate is {percent_interval(c)}" + (
            " (the prior keeps an all-zero cell's interval off zero; read it by its upper bound)." if c["k"] == 0
            else "."))
        if c["n"] and c["k"] == c["n"]:  # a ceiling: the rise the measure looks for has no room
            parts.append("Every clean-history reply already remarked on the form, so a rise under alteration "
                         "cannot show at this ceiling.")
    if "noticing_extreme" in d:
        parts.append(_change(d, "noticing", "every reply remarking on an oddity in every condition",
                             "no reply remarking on anything in any condition", "above", "change under alteration"))
    if "judge_agreement" in d:
        a = d["judge_agreement"]
        kappa = kappa_text(a["kappa"], "undefined: one grader said no throughout")
        detail.append(f"The judge graded {a['judge_yes']} of {a['n']} replies as remarking on an oddity (the rules: "
                     f"{a['rules_yes']}); the two agreed on {100 * a['agreement']:.0f}% of replies (Cohen's kappa "
                     f"{kappa}).")
    if "judge_noticing_extreme" in d:
        detail.append(_change(d, "judge_noticing", "the judge grading every reply as remarking on an oddity in every "
                             "condition", "the judge grading no reply as remarking on anything in any condition",
                             "above", "change under alteration", grade="by the judge's grade, "))
    if "recognition_control" in d:
        r = d["recognition_control"]
        po = r.get("p_outside")  # absent from older numbers; NaN where no probability was recorded
        neither = f", with {fmt(po)}% of the probability on neither word on average" if known(po) else ""
        raw = f"; observed: {r['k']} of {r['n']} replies with P(yes) > P(no){neither}" if "k" in r else ""
        parts.append(f"Asked whether it wrote its previous messages exactly as shown, it said yes at a rate of "
                     f"{percent_interval(r)} with the clean history (the model's estimate at the average conversation{raw}).")
        if "k" in r and r["n"] and r["k"] <= 1:  # a floor: the drop the measure looks for has no room
            parts.append(f"With {'no' if r['k'] == 0 else 'only one'} clean-history reply saying yes, a drop under "
                         "alteration " + ("cannot show at this floor." if r["k"] == 0 else
                                          "has one reply to show in: the measure is at its floor."))
    if "recognition_extreme" in d:
        parts.append(_change(d, "recognition", "every reply answering yes (P(yes) > P(no)) in every condition",
                             "no reply answering yes in any condition", "below", "drop"))
    if "imitation_top" in d:
        parts.append(_imitation(d))
        split = _split(d)
        if split:
            detail.append(split)
        if d.get("imitation_other"):  # the measure on replies after a history without any corruption
            detail.append("After another model's replies, which hold none of the corruptions, the words counted as a "
                         "pattern were " + ", ".join(f"{v['k']} of {v['n']} ({k})"
                                                     for k, v in sorted(d["imitation_other"].items()))
                         + ": the measure's own false positives.")
    if d.get("self_references"):
        names = {"control": "with its clean history", "corrupted": "after a corrupted history",
                 "other": "after another model's replies"}
        detail.append("Of its references to itself in its visible replies, those in the third person (\"the model\", "
                     "\"the assistant\" followed by a verb, a possessive or the clause's end: the shift the post saw in a thinking "
                     "trace): " + _third_person(d["self_references"], names) + " (raw counts).")
    if "surprise" in d:
        top = max(d["surprise"], key=lambda r: r["mean"])
        n = d["surprise_unchanged"]
        left = (f"leaving out the {n} corrupted earlier {'reply' if n == 1 else 'replies'} whose text the corruption "
                "did not change, " if n else "")
        detail.append(f"Surprise: {left}{d['surprise_cells_above']} of {d['surprise_cells']} altered cells made its "
                     f"earlier replies credibly less probable to it; the largest, {_cell(top)}, by "
                     f"{fmt(top['mean'], 2)} nats per token [{fmt(top['low'], 2)}, {fmt(top['high'], 2)}] (the "
                     "model's estimate at the average conversation and reply).")
    if d.get("thinking_noticing"):
        names = {"control": "after the clean history", "corrupted": "after a corrupted one",
                 "other": "after another model's replies"}
        detail.append(f"Its chat template has a thinking section, graded apart from the visible reply by the same "
                     f"rules: {d['thinking_traces']} replies held a trace, and the trace remarked on the form of the "
                     "earlier text in " + "; ".join(f"{r['k']} of {r['n']} {names.get(c, c)}"
                                                     for c, r in d["thinking_noticing"].items()) + " (raw counts)."
                     + (" In the traces, its references to itself in the third person: "
                        + _third_person(d["thinking_self_references"], names) + " (raw counts)."
                        if d.get("thinking_self_references") else ""))
    if d.get("paired"):
        detail.append(paired_text(d["paired"]))
    if "discrimination" in d:
        detail.append(discrimination_text(d["discrimination"]))
    return summary(m, d), "\n\n".join(p for p in (" ".join(parts), " ".join(detail)) if p)


def model_paragraph(m: str, d: dict) -> str:
    """The whole paragraph for one model (the supplement's part of :func:`model_parts`)."""
    return model_parts(m, d)[1]


def paired_text(p: dict) -> str:
    """The paired recognition (:mod:`analysis.mirror.pairs`) in one sentence: the mean probability of the own version
    against altered and against another model's replies, each asked in both orders, and the position preference."""
    bits = []
    for key, what in (("corrupted", "altered replies"), ("other", "another model's replies")):
        if key in p:
            c = p[key]
            cell = "" if key == "other" or c.get("kind") is None else f" ({_cell(c)})"
            bits.append(f"against {what}{cell} {fmt(c['mean'], 2)} [{fmt(c['low'], 2)}, {fmt(c['high'], 2)}] over "
                        f"{c['pairs']} pairs ({c['above_half']} above one half)")
    if not bits:
        return ""
    return ("Shown both versions of the conversation so far in one question, its own replies in one, and asked which "
            "it wrote, the mean probability it gave its own version (both orders averaged; 0.5 is chance; 95% "
            "bootstrap interval) was " + "; ".join(bits) + f". Over every such question it gave the first version "
            f"{fmt(p['p_first'], 2)} on average, its preference for a position, which the two orders cancel.")


_MEASURE = {"surprise": "its surprise at the earlier reply", "p_mine": "P(yes) to having written the history"}


def _auroc(r: dict) -> str:
    return f"{fmt(r['auroc'], 2)} [{fmt(r['low'], 2)}, {fmt(r['high'], 2)}]"


def discrimination_text(disc: dict) -> str:
    """The threshold-free self-recognition scores (:mod:`analysis.mirror.discrimination`) in one sentence per
    measure: the AUROC of own against altered text (pooled over the corrupted cells), the best corrupted cell, and
    own against another model's replies. No verdict word: their false-positive rates were not simulated."""
    out = []
    for measure, d in sorted(disc.items()):
        bits = []
        if "corrupted" in d:
            c = d["corrupted"]
            what = "every corrupted cell pooled" if c.get("kind") is None else _cell(c)
            bits.append(f"own against altered replies ({what}: {c['n_own']} own and {c['n_altered']} altered) "
                        f"{_auroc(c)}")
        if "best_cell" in d and d.get("cells", 0) > 1:
            bits.append(f"at most {_auroc(d['best_cell'])} in one cell ({_cell(d['best_cell'])}, the highest of "
                        f"{d['cells']}, chosen after the fact)")
        if "other" in d:
            bits.append(f"own against another model's replies {_auroc(d['other'])}")
        if bits:
            caveat = (" (a corrupted text is improbable to any language model, so against altered replies this "
                      "separates altered text from clean text; against another model's clean replies it bears on "
                      "ownership)" if measure == "surprise" else "")
            out.append(f"Read by {_MEASURE.get(measure, measure)}, the AUROC (0.5: chance; 95% bootstrap interval over "
                       "conversations, then items) is " + "; ".join(bits) + caveat + ".")
    return " ".join(out)


def grader_sentence(g: dict) -> str:
    """How the noticing rule agrees with labelled replies: those it was written on, and a held-out set written
    independently from the same criteria and never used to change it."""
    dev, held = g["development"], g["held_out"]
    return (f"The noticing rule agrees with the labels of the {dev['n']} replies it was written and corrected on in "
            f"{labelled_agreement_text(dev)}, and, on {held['n']} replies written independently from the same criteria and never "
            f"used to change it, in {labelled_agreement_text(held)}: its measured agreement "
            "(`reproduce/mirror/grader_cases.py`)."
            + (f" It found {held['positives'] - held['false_negatives']} of the {held['positives']} remarks on the "
               "form of the earlier text in the held-out set, so the counts of noticing below can miss remarks it "
               "does not read." if held.get("positives") and held["false_negatives"] else "")
            + (judge_sentence(g["judge"]) if g.get("judge") else ""))


def judge_sentence(j: dict) -> str:
    """The optional judge's agreement with the same labelled replies, measured in the run that used it."""
    return (f" The judge ({j['spec']}), shown each labelled reply with the same example list of changed words, "
            f"agrees with the labels in {labelled_agreement_text(j['development'])} on the first set and in "
            f"{labelled_agreement_text(j['held_out'])} on the held-out set.")


def write_section(gen: Path, mirror: Path = MIRROR) -> bool:
    """Write ``gen/mirror.md`` (the main text's results) and ``gen/mirror_supplement.md`` (the rest), and copy
    the figures; False when the stages did not run."""
    analysis, figures = Path(mirror) / "analysis", Path(mirror) / "figures"
    if not (analysis / "numbers.json").exists() or not (figures / "index.json").exists():
        write_parts(gen, "mirror", "The mirror-test stages did not run in this profile (no `mirror:` section in "
                                   "params.yaml), so this section has no results.\n")
        return False
    numbers = json.loads((analysis / "numbers.json").read_text())
    index = json.loads((figures / "index.json").read_text())
    run = json.loads((Path(mirror) / "raw" / "run.json").read_text())
    for name in index:
        atomic_write_bytes(Path(gen) / "figures" / f"{name}.png", (figures / f"{name}.png").read_bytes())
    ex = pd.read_parquet(analysis / "examples.parquet")
    ex = ex.assign(kind=ex["kind"].fillna("-"), level=ex["level"].map(lambda v: "-" if pd.isna(v) else f"{v:g}"),
                   reply=ex["reply"].map(model_text),
                   notices=ex["notices"].map({True: "yes", False: "no"}), p_yes=ex["p_yes"].map(lambda v: f"{v:.2f}"))
    secs = run_seconds(run["models"])
    parts = {m: model_parts(m, d) for m, d in numbers["models"].items()}
    out = [
        f"The conversations ran on {run['hardware']} ({secs}). {gate_sentence(numbers['diagnostics'])} "
        + ("Noticing was graded by the rules"
           + (f" and by a local judge model ({run['judge']}; how it was kept from the condition: @sec-supp-mirror)."
              if run.get("judge") else " alone (no judge model was set: `mirror.judge: null`)."))
        + (" " + grader_sentence(numbers["graders"]) if "graders" in numbers else "")
        + " Per model, in one sentence each (the rest in @sec-supp-mirror):",
        "",
        *[core + "\n" for core, _ in parts.values()],
        "![The mirror test by corruption kind and level: unprompted noticing, saying \"yes\" to having written "
        "the previous messages as shown (P(yes) > P(no)), and imitation of the corruption (95% intervals; black: the clean "
        "history; grey square: another model's replies).](_generated/figures/mirror_outcomes.png)"
        "{#fig-mirror-outcomes}",
        "",

    ]
    supplement = [
        *[f"{paragraph}\n" for _, paragraph in parts.values()],
        "![Surprise: mean log-probability per token of the clean minus the altered earlier replies, by kind "
        "and level, and for another model's replies shown as the model's own (grey square; 95% "
        "intervals).](_generated/figures/mirror_surprise.png){#fig-mirror-surprise}",
        "",
        md_table(ex[["model", "condition", "kind", "level", "turn", "reply", "notices", "p_yes"]].astype(str),
                  "Example replies at the last measured turn (first conversation; cut to 200 characters), with "
                  "the rules' noticing grade and P(yes) to the recognition question.", "tbl-mirror-examples"),
    ]
    write_parts(gen, "mirror", "\n".join(out), "\n".join(supplement))
    return True
