"""The manuscript's concept-injection results: ``paper/_generated/injection.md``, written from
``data/injection/analysis`` (numbers, tables and figures; nothing typed by hand), and included by
``paper/index.qmd``. Where the stage did not run (a profile without ``injection:``), the file says so."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from analysis.cells import raw_rate, top_cell
from reproduce.config import REPO_ROOT
from reproduce.io import atomic_write_bytes

from report.formatting import (fmt, gate_sentence, join_words, kappa_text, known, labelled_agreement_text, md_table,
                               model_text, percent_interval, points_interval, run_seconds, signed, write_parts)

#: the figures each part of the section places, by label: the main text's and the supplement's (the provenance
#: page, docs/figures.md, lists them where the manuscript shows them)
FIGURE_LABELS = {"main": ("fig-injection-detection", "fig-injection-identification"),
                 "supplement": ("fig-injection-prefill", "fig-injection-intention", "fig-injection-coherence",
                                "fig-injection-two-turn")}

INJECTION = REPO_ROOT / "data" / "injection"


WORDS = {"above": "above", "below": "below", "unclear": "not distinguishable from"}


def _ties(cell: dict, what: str = "raw rate") -> str:
    """``; tied on the counts with ...`` for a best cell whose raw counts other cells share (the first in a fixed
    order is reported: the modelled estimates of equal counts differ only by their Monte Carlo noise)."""
    tied = cell.get("tied") or []
    if not tied:
        return ""
    where = join_words([f"layer fraction {t['layer_fraction']:g}, strength {t['strength']:g}" for t in tied])
    return f"; {len(tied)} other cell{'s' if len(tied) > 1 else ''} had the same {what}: {where}"


def _table(df: pd.DataFrame, caption: str, label: str) -> str:
    return md_table(df.astype(str), caption, label)


def _observed(o: dict | None) -> str:
    """The raw counts behind a modelled detection rate: trials with P(yes) > P(no), those whose answer itself
    begins with yes, and the mean probability on neither word; '' where the numbers predate them."""
    if not o:
        return ""
    po = o["p_outside"]
    neither = f", {fmt(po)}% of the probability on neither word on average" if known(po) else ""
    return f"observed: {o['k']} of {o['n']} trials with P(yes) > P(no), {o['says_yes']} answering \"yes\"{neither}"


def _cells(tables: dict | None, name: str, model: str) -> pd.DataFrame | None:
    """One model's rows of an analysis table (None where the table is not given or has none)."""
    t = (tables or {}).get(name)
    if t is None or not len(t):
        return None
    t = t[t["model"] == model]
    return t if len(t) else None


def _controls_text(det: pd.DataFrame) -> str:
    """The random and negated vectors beside the concept vector at the cells where all were injected: the
    observed counts of P(yes) > P(no)."""
    ctl = det[det["condition"].isin(["random", "negated"])]
    if not len(ctl):
        return ""
    cells = ctl[["layer_fraction", "strength"]].drop_duplicates()
    concept = det[det["condition"] == "concept"].merge(cells, on=["layer_fraction", "strength"])
    fractions = ", ".join(f"{f:g}" for f in sorted(cells["layer_fraction"].unique()))
    parts = [f"{c} vector {int(g['k'].sum())} of {int(g['n'].sum())}" for c, g in ctl.groupby("condition")]
    return (f"Where the control vectors were injected too (layer fraction {fractions}), P(yes) > P(no) held on "
            f"{int(concept['k'].sum())} of {int(concept['n'].sum())} trials with the concept vector, against the "
            + " and the ".join(parts) + " at the same cells.")


def _yes_bias_text(yb: pd.DataFrame) -> str:
    """How often injection raised "yes" to questions whose answer is no, cell by cell (the pooled counts can
    hide a bias confined to a few cells)."""
    cells = yb[yb["condition"] == "concept"]
    above = cells[cells["diff_low"] > 0]
    if not len(above):
        ceiling = ""
        if len(cells) and (cells["control_rate"] == 1.0).all():
            ceiling = (f" Without injection it already answered yes to all {int(cells['control_n'].iloc[0])} of "
                       "them, so no injected cell could have been above the control: this check cannot show a "
                       "yes-bias here.")
        return (f"No injected cell raised \"yes\" to these questions credibly above the control rate (0 of "
                f"{len(cells)} cells).{ceiling}")
    top, same = top_cell(above, raw_rate(above))
    tie = (f"; as many at " + join_words([f"layer fraction {t['layer_fraction']:g}, strength {t['strength']:g}"
                                      for t in same]) if same else "")
    return (f"Cell by cell, {len(above)} of {len(cells)} injected cells raised \"yes\" to these questions credibly "
            f"above the control rate, most (the highest raw rate) at layer fraction {top['layer_fraction']:g}, "
            f"strength {top['strength']:g}: "
            f"{points_interval({'mean': top['diff_mean'], 'low': top['diff_low'], 'high': top['diff_high']})} "
            f"({int(top['k'])} of {int(top['n'])}{tie}), so a high detection rate in such a cell can be a general "
            "yes-bias.")


def _prefill_note(pc: pd.DataFrame, d: dict) -> str:
    """What the prefill contrasts can and cannot show: a floor (no control trial called an accident) and a
    matching-minus-random difference that comes from the other concept's injection alone."""
    notes = []
    ctl = pc[pc["condition"] == "control"]
    if len(ctl) and int(ctl["k"].sum()) == 0:
        notes.append(f"No trial without injection was called an accident (0 of {int(ctl['n'].sum())}), so a "
                     "lowering of that share, the published effect, cannot show here")
    pre = d.get("prefill", {})
    mc, mr = pre.get("matching_minus_control"), pre.get("matching_minus_random")
    rnd = pc[pc["condition"] == "random"]
    if mc and mr and mr["cells_below"] and not mc["cells_below"] and len(rnd):
        top, same = top_cell(rnd, raw_rate(rnd))
        tie = (" and as many at strength " + join_words([f"{t['strength']:g}" for t in same])) if same else ""
        notes.append(f"the matching injection is not credibly below the control in any cell, so the negative "
                     f"matching-minus-random difference comes from the other concept's injection raising the share "
                     f"called an accident (up to {fmt(100 * top['mean'])}% [{fmt(100 * top['low'])}, "
                     f"{fmt(100 * top['high'])}] at strength {top['strength']:g}, {int(top['k'])} of "
                     f"{int(top['n'])} trials{tie})")
    if not notes:
        return ""
    s = "; ".join(notes)
    return s[0].upper() + s[1:] + "."


def _lowest_strength_note(deg: dict, coh: pd.DataFrame | None) -> str:
    """Where the text was mostly incoherent already at the lowest strength tried, every free-text result of that
    layer fraction comes from a degenerate regime; and how few answers a cell holds."""
    if coh is None:
        return ""
    concept = coh[coh["condition"] == "concept"]
    if not len(concept):
        return ""
    lowest = float(concept["strength"].min())
    at_lowest = [k for k, v in sorted(deg.items()) if v is not None and float(v) == lowest]
    n = sorted({int(x) for x in concept["n"]})
    per_cell = f" Each cell holds {n[0]} answers." if len(n) == 1 else f" Each cell holds {n[0]} to {n[-1]} answers."
    if not at_lowest:
        return per_cell
    where = "every layer fraction" if len(at_lowest) == len(deg) else "layer fraction " + join_words(at_lowest)
    return (f" At {where} that is already the lowest strength tried ({lowest:g}), so no steered free text there is "
            f"mostly coherent." + per_cell)


def _band_text(band: dict | None, k: int | None, what: str, percent: bool, over: int | None = None) -> str:
    """The simultaneous band of a quantity chosen as the best of ``k`` (cells or layers), whose verdict it gives:
    the chosen one's own interval is too narrow for a winner (''  where the numbers predate the band). ``over``:
    the band's own family where it is larger than the one chosen from (every concept cell, the chosen one among
    those that pass the steering check)."""
    if not band or not k or k < 2:  # one cell is no choice: its own interval is its band
        return ""
    lo, hi = (f"{signed(100 * band['low'])}", f"{signed(100 * band['high'])}") if percent else \
        (signed(band["low"], 4), signed(band["high"], 4))
    family = f"the {k}" if not over or over == k else f"all {over} (a wider family, so a wider band)"
    return (f" (chosen as the best of {k} {what}, so the verdict reads its simultaneous 95% band over {family}: "
            f"[{lo}, {hi}]{' points' if percent else ''})")


def steering_text(s: dict) -> str:
    """The steering check in one sentence: how many cells raised the concept word's log-probability after a
    neutral question, and which did not (marked, and left out of the detection and identification counts)."""
    head = (f"Steering check: in {s['steer']} of {s['cells']} cells the injection raised the concept word's "
            "log-probability after a neutral question (\"name one word\"; a 95% interval of the mean rise over "
            "concepts above zero)")
    if not s["not_steering"]:
        return head + "."
    cells = "; ".join(f"layer fraction {c['layer_fraction']:g}, strength {c['strength']:g} "
                      f"({signed(c['mean'], 2)} nats [{signed(c['low'], 2)}, {signed(c['high'], 2)}])"
                      for c in s["not_steering"])
    if not s["steer"]:
        return head + f"; none did ({cells}), so no detection or identification cell is counted below."
    return head + f"; the others ({cells}) are marked and left out of the cells counted and chosen below."


def _log_odds(d: dict) -> str:
    return f"{signed(d['mean'], 2)} [{signed(d['low'], 2)}, {signed(d['high'], 2)}]"


def introspection_text(s: dict) -> str:
    """The continuous, paired detection measure (analysis.injection.paired) in one paragraph's sentences."""
    b = s["best"]
    return (f"Its introspection score, the rise in the yes/no log-odds of \"do you detect an injected thought?\" "
            f"under a concept's injection minus the rise on about {s['yes_bias_per_pair']:.1f} factual yes/no "
            f"questions under the same injection ({s['pairs']} concept-cell pairs), was highest at layer fraction "
            f"{b['layer_fraction']:g}, strength {b['strength']:g} among the {s['cells']} cells on "
            f"{len(s['split']['choose'])} of the {s['concepts']} concepts; on the other "
            f"{len(s['split']['estimate'])}, which took no part in the choice, that cell's score is "
            f"{_log_odds(b['held_out'])} (log-odds, 94% interval). Over all concepts, "
            f"{s['cells_low_above_0']} of {s['cells']} cells {'has' if s['cells_low_above_0'] == 1 else 'have'} a "
            f"score interval above 0 and {s['cells_high_below_0']} below"
            + (f"; in {s['pairs_outside_99']} of the {s['pairs']} pairs the detection answer put over 99% of its "
               "first-token mass on neither yes nor no, where the normalised probability is close to noise (and a "
               f"probability of 0 or 1 is read at {s['clip']:g} from it)" if s.get("pairs_outside_99") else "")
            + ". No verdict is drawn from the score: its false-positive rate has not "
            "been simulated.")


def two_turn_text(t: dict) -> str:
    """The two-turn trial and its logit lens (analysis.injection.two_turn) in one paragraph's sentences."""
    out = (f"In the two-turn trial (injected while it read the first turn and its first reply, asked in a second "
           f"turn), without injection it answered \"yes\" with probability {t['control_p_yes']:.2f} over yes/no "
           f"({100 * t['control_p_outside']:.0f}% of the next token's mass on neither). The shift in the yes/no "
           f"log-odds under a concept's injection had a 95% interval over its {t['concepts']} concepts above 0 in "
           f"{t['cells_above']} of {t['cells']} cells and below 0 in {t['cells_below']}")
    if t.get("vs_random_cells"):
        out += (f"; against a random direction of the same norm at the same cell, it was higher in "
                f"{t['vs_random_above']} and lower in {t['vs_random_below']} of {t['vs_random_cells']} cells")
    out += (" (each cell's own interval, not corrected for the number of cells; the intervals are over concepts "
            "in one conversation and do not cover other wordings)")
    if "best" in t:
        b = t["best"]
        out += (f". The cell with the largest shift on {len(b['split']['choose'])} concepts (layer fraction "
                f"{b['layer_fraction']:g}, strength {b['strength']:g}) shifted it by {_log_odds(b['held_out'])} on the other "
                f"{b['held_out']['n']}")
        if "held_out_full" in b and known(b["held_out_full"]["mean"]):
            out += (f" (logit P(yes) over the whole vocabulary, the probability Pearson-Vogel et al. compare: "
                    f"{_log_odds(b['held_out_full'])})")
    if "lens_vs_random_top" in t:
        lt = t["lens_vs_random_top"]
        out += (f". In the logit lens at the answer position, the largest mean difference in the concept word's "
                f"first-token log-probability between its own vector and a random direction at the same cell was "
                f"{_log_odds(lt)} (the largest of {lt['among']} cell and read-layer pairs, with its own interval), read at "
                f"block {lt['read_layer']} under injection at layer fraction {lt['layer_fraction']:g}, strength "
                f"{lt['strength']:g}")
    return out + ". These are measurements without a verdict word: their false-positive rates have not been simulated."


def summary(m: str, d: dict) -> str:
    """The main text's sentence for one model: the control trials' rate (and its ceiling), the cells that steer,
    and how many cells show detection above the false-positive rate and identification above chance, with the
    best cell's verdict on its simultaneous band; the full paragraph is :func:`model_parts`' second part."""
    bits = []
    if "fp_rate" in d:
        ctl = d.get("detection_observed", {}).get("control")
        ceiling = bool(ctl) and int(ctl["n"]) > 0 and int(ctl["k"]) == int(ctl["n"])
        bits.append(f"on control trials it said an injected thought was present at {percent_interval(d['fp_rate'])}"
                    + (" (P(yes) > P(no) on every one: the ceiling, so no cell can show detection above it)"
                       if ceiling else ""))
    if "steering" in d:
        bits.append(f"the injection steered the concept word in {d['steering']['steer']} of "
                    f"{d['steering']['cells']} cells")
    if "detection_best" in d:
        b = d["detection_best"]
        band = " by its simultaneous band over the cells" if b.get("minus_fp_band") and d["detection_cells"] > 1 else ""
        bits.append(f"detection was credibly above the false-positive rate in {d['detection_cells_above_fp']} of "
                    f"{d['detection_cells']} cells (the best, {points_interval(b['minus_fp'])}, "
                    f"{WORDS[b['verdict']]} it{band})")
    if "identification_best" in d:
        b = d["identification_best"]
        verdict = (f", {WORDS[b['verdict_chance']]} chance by its simultaneous band over the cells"
                   if b.get("chance_band") and d.get("identification_cells", 0) > 1 else "")
        bits.append(f"the injected concept was the most probable concept word credibly above chance in "
                    f"{d['identification_cells_above_chance']} of {d['identification_cells']} cells (the best, "
                    f"{percent_interval(b['rate'])} against {100 * b['chance']:.1f}%{verdict})")
    return f"**{m}**: " + ("; ".join(bits) if bits else "no trials were analysed") + "."


def model_parts(m: str, d: dict, tables: dict | None = None) -> tuple[str, str]:
    """The results for one model, every number from ``numbers.json`` and (where given) the analysis tables
    ``tables`` (name -> DataFrame: ``detection_cells``, ``yes_bias``, ``prefill_conditions``, ``coherence``), in two
    parts: the main text's summary (:func:`summary`) and the supplement's two paragraphs (the control trials,
    the steering check, detection and identification with their cells and bands; then the introspection score,
    the two-turn trial, the yes-bias, prefill detection, intentional control and the free text)."""
    inj = d["layers_injected"]
    detail: list[str] = []
    parts = [f"**{m}** ({d['n_layers']} blocks; injected at block{'s' if len(inj) > 1 else ''} "
             f"{', '.join(map(str, inj))})."]
    seen = d.get("detection_observed", {})
    if "fp_rate" in d:
        raw = f"; {_observed(seen['control'])}" if seen.get("control") else ""
        nw = d.get("fp_wordings", 1)
        worded = (f"; the question came in {nw} wordings, and the rate is that of a new wording, its interval "
                  "widened by the fitted spread between wordings" if nw > 1 else "")
        parts.append(f"On control trials (no injection) it said an injected thought was present at a rate of "
                     f"{percent_interval(d['fp_rate'])} (the model's estimate{raw}{worded}).")
        ctl = seen.get("control")
        if ctl and int(ctl["k"]) == int(ctl["n"]):
            parts.append(f"That is the ceiling: P(yes) exceeded P(no) on all {int(ctl['n'])} control trials, so no "
                         "injected cell could show detection above them, and none of the detection rates below can "
                         "count as evidence of detection.")
    if "steering" in d:
        parts.append(steering_text(d["steering"]))
    if "introspection_score" in d:
        detail.append(introspection_text(d["introspection_score"]))
    if d.get("two_turn", {}).get("control_p_yes") is not None:
        detail.append(two_turn_text(d["two_turn"]))
    det = _cells(tables, "detection_cells", m)
    if "detection_best" in d:
        b = d["detection_best"]
        raw = f"; {_observed(b['observed'])}" if b.get("observed") else ""
        parts.append(f"Its highest detection rate under injection (the most trials counted) was {percent_interval(b['rate'])} "
                     f"(layer fraction {b['layer_fraction']:g}, strength {b['strength']:g}{raw}{_ties(b)}), "
                     f"{points_interval(b['minus_fp'])} relative to "
                     f"the false-positive rate at the average wording" + _band_text(
                         b.get("minus_fp_band"), d.get("detection_cells"), "cells", percent=True,
                         over=(b.get("minus_fp_band") or {}).get("cells"))
                     + f", {WORDS[b['verdict']]} it; {d['detection_cells_above_fp']} of "
                     f"{d['detection_cells']} cells had detection credibly above the false-positive rate"
                     + (f" and {d['detection_cells_below_fp']} credibly below it" if "detection_cells_below_fp" in d
                        else "") + ".")
        if det is not None:
            detail.append(_controls_text(det))
    if "concept" in seen:
        c = seen["concept"]
        neither = (f", and the first answer token put {fmt(c['p_outside'])}% of its probability on neither yes nor "
                   f"no on average" if known(c["p_outside"]) else "")
        detail.append(f"Over every trial with the concept injected, the answer itself began with \"yes\" in "
                     f"{c['says_yes']} of {c['n']}{neither}.")
    bias = d.get("yes_bias_observed", {})
    if "control" in bias and "concept" in bias:
        detail.append(f"Asked questions whose answer is no, it answered yes (P(yes) > P(no)) on "
                     f"{bias['control']['k']} of {bias['control']['n']} trials without injection and "
                     f"{bias['concept']['k']} of {bias['concept']['n']} with the concept injected.")
        yb = _cells(tables, "yes_bias", m)
        if yb is not None:
            detail.append(_yes_bias_text(yb))
    if "identification_best" in d:
        b = d["identification_best"]
        parts.append(f"The injected concept was the most probable of the {round(1 / b['chance'])} concept words at "
                     f"a rate of {percent_interval(b['rate'])} in its best cell (layer fraction {b['layer_fraction']:g}, strength "
                     f"{b['strength']:g}; chance {100 * b['chance']:.1f}%{_ties(b)}), {points_interval(b['minus_chance'])} against chance"
                     + (_band_text(b["chance_band"], d.get("identification_cells"), "cells", percent=True,
                                   over=b["chance_band"].get("cells")) + f", {WORDS[b['verdict_chance']]} chance"
                        if b.get("chance_band") else "")
                     + f", and {points_interval(b['minus_control'])} against the same trials without injection; "
                     f"{d['identification_cells_above_chance']} of {d['identification_cells']} cells were credibly "
                     "above chance.")
    for key, label in (("matching_minus_control", "matching minus control"),
                       ("matching_minus_random", "matching minus random")):
        c = d.get("prefill", {}).get(key)
        if c:
            s = c["strongest"]
            band = (_band_text(s["band"], c["cells"], "cells", percent=True) + f", {WORDS[s['verdict']]} zero"
                    if s.get("band") else "")
            detail.append(f"Prefill detection, {label}: in the cell with the most negative raw difference in the share "
                         f"of trials called an accident (P(\"accident\") > 1/2) the difference was {points_interval(s)} (layer "
                         f"fraction {s['layer_fraction']:g}, strength {s['strength']:g}{_ties(s, 'raw difference')}){band}; "
                         f"{c['cells_below']} of {c['cells']} cells credibly below zero, {c['cells_above']} credibly above.")
    pc = _cells(tables, "prefill_conditions", m)
    if pc is not None and d.get("prefill"):
        note = _prefill_note(pc, d)
        if note:
            detail.append(note)
    if "intention_best" in d:
        b = d["intention_best"]
        band = _band_text(b.get("band"), d.get("intention_layers"), "layers", percent=False)
        detail.append(f"Intentional control: the largest think minus don't-think cosine was "
                     f"{signed(b['mean'], 4)} [{signed(b['low'], 4)}, {signed(b['high'], 4)}] at block {b['layer']} (layer fraction "
                     f"{b['layer_fraction']:.2f}){band}" + (f", {WORDS[b['verdict']]} zero" if band else "")
                     + f"; {d['intention_layers_above']} of {d['intention_layers']} layers "
                     "credibly above zero" + (f" and {d['intention_layers_below']} credibly below"
                                              if d.get("intention_layers_below") else "") + ".")
    deg = {k: v for k, v in d.get("degenerate_strength", {}).items()}
    if deg:
        txt = "; ".join(f"layer fraction {k}: {'none of the strengths tried' if v is None else f'strength {v:g}'}"
                        for k, v in sorted(deg.items()))
        detail.append(f"Most free-text answers were incoherent from: {txt}." + _lowest_strength_note(
            deg, _cells(tables, "coherence", m)))
    if d.get("rules_vs_forced_choice"):
        a = d["rules_vs_forced_choice"]
        constant = [(which, a[key]) for which, key in (("rules", "rules_claims"),
                                                       ("forced-choice answers", "forced_choice_detected"))
                    if a.get(key) in (0, a["n"])]
        if constant:
            which, k = constant[0]
            detail.append(f"The {which} counted a detection in {k} of the {a['n']} free-text trials, so their agreement "
                         f"({100 * a['agreement']:.0f}%) is only the share of trials the other grading counted "
                         f"{'no detection in' if k == 0 else 'a detection in'}, and Cohen's kappa "
                         f"({kappa_text(a['kappa'])}) carries no information.")
        else:
            detail.append(f"The rule-graded free text claimed detection in agreement with the forced-choice answer of "
                         f"the same trial in {100 * a['agreement']:.0f}% of {a['n']} trials (Cohen's kappa "
                         f"{kappa_text(a['kappa'])}; the rules counted {a['rules_claims']} detections, the forced "
                         f"choice {a['forced_choice_detected']}).")
    return summary(m, d), "\n\n".join(p for p in (" ".join(parts), " ".join(detail)) if p)


def model_paragraph(m: str, d: dict, tables: dict | None = None) -> str:
    """The whole paragraph for one model (the supplement's part of :func:`model_parts`)."""
    return model_parts(m, d, tables)[1]


def protocol_table(protocols: dict) -> pd.DataFrame:
    """The open replications' protocols against Lindsey (2025)'s, one row each, from ``paper/injection_protocols.yml``
    (what each did differently, read from its code at the commit named)."""
    return pd.DataFrame([{"Study": r["name"], "Source": r["source"], "Models": r["models"],
                          "How it differs from Lindsey (2025)": "; ".join(r["differences"])}
                         for r in protocols["rows"]])


def comparison_table(numbers: dict, reference: dict, tables: dict | None = None) -> pd.DataFrame:
    """This run beside the published numbers. The published detection rate came with no false positives, so
    this run's detection is given relative to its false-positive rate beside the raw rate."""
    rows = []
    for key, r in reference["rows"].items():
        ours = []
        for m, d in numbers["models"].items():
            if key == "detection" and "detection_best" in d:
                b = d["detection_best"]
                o = b.get("observed")
                said = f", {o['says_yes']} of {o['n']} trials answering \"yes\"" if o else ""
                ours.append(f"{m}: {points_interval(b['minus_fp'])} relative to its false-positive rate in the best cell "
                            f"({percent_interval(b['rate'])} with P(yes) > P(no){said})")
            elif key == "false_positives" and "fp_rate" in d:
                ours.append(f"{m}: {percent_interval(d['fp_rate'])}")
            elif key == "prefill" and d.get("prefill", {}).get("matching_minus_control"):
                pc = _cells(tables, "prefill_conditions", m)
                floor = (pc is not None and int(pc.loc[pc["condition"] == "control", "k"].sum()) == 0
                         and (pc["condition"] == "control").any())
                ours.append(f"{m}: {points_interval(d['prefill']['matching_minus_control']['strongest'])} in the share of "
                            "trials with P(accident) > 1/2" + (" (no control trial called an accident: a "
                                                               "lowering cannot show)" if floor else ""))
            elif key == "intention" and "intention_best" in d:
                b = d["intention_best"]
                ours.append(f"{m}: {signed(b['mean'], 4)} [{signed(b['low'], 4)}, {signed(b['high'], 4)}], the largest "
                            f"of its {d.get('intention_layers', 'n/a')} layers' estimates")
        rows.append({"Quantity": r["quantity"], "Published (theirs)": r["published"],
                     "Open replications (theirs)": r.get("replications", "-"),
                     "This run": "; ".join(ours) or "-"})
    return pd.DataFrame(rows)


def grader_sentence(g: dict) -> str:
    """How the rule graders agree with labelled replies: those they were written on, and a held-out set written
    independently from the same criteria and never used to change them."""
    dev, held = g["development"], g["held_out"]
    return (f"The rule graders agree with the labels of the {dev['claims']['n']} replies they were written and "
            f"corrected on in {labelled_agreement_text(dev['claims'])} (claims detection) and {labelled_agreement_text(dev['identifies'])} "
            f"(detection before naming), and, on {held['claims']['n']} replies written independently from the same "
            f"criteria and never used to change the rules, in {labelled_agreement_text(held['claims'])} and "
            f"{labelled_agreement_text(held['identifies'])}: their measured agreement (`reproduce/injection/grader_cases.py`)."
            + (judge_sentence(g["judge"]) if g.get("judge") else ""))


def judge_sentence(j: dict) -> str:
    """The optional judge's agreement with the same labelled replies, measured in this run."""
    dev, held = j["development"], j["held_out"]
    return (f" The judge ({j['spec']}) agrees with the same labels in {labelled_agreement_text(dev['claims'])} and "
            f"{labelled_agreement_text(dev['identifies'])} on the first set, and in "
            f"{labelled_agreement_text(held['claims'])} and {labelled_agreement_text(held['identifies'])} on the "
            "held-out set (claims detection; noticing before naming).")


def write_section(gen: Path, injection: Path = INJECTION, paper: Path = REPO_ROOT / "paper",
                  temperature: float | None = None) -> bool:
    """Write ``gen/injection.md`` (the main text's results) and ``gen/injection_supplement.md`` (the rest), and
    copy the figures into ``gen/figures``; False when the stage did not run.
    ``temperature``: the free text's sampling temperature (``injection.free_text.temperature``), for a caption."""
    analysis, figures = Path(injection) / "analysis", Path(injection) / "figures"
    if not (analysis / "numbers.json").exists() or not (figures / "index.json").exists():
        write_parts(gen, "injection", "The concept-injection stages did not run in this profile (no `injection:` "
                                      "section in params.yaml), so this section has no results.\n")
        return False
    numbers = json.loads((analysis / "numbers.json").read_text())
    index = json.loads((figures / "index.json").read_text())
    run = json.loads((Path(injection) / "raw" / "run.json").read_text())
    reference = yaml.safe_load((Path(paper) / "injection_reference.yml").read_text())
    protocols = yaml.safe_load((Path(paper) / "injection_protocols.yml").read_text())
    for name in index:
        atomic_write_bytes(Path(gen) / "figures" / f"{name}.png", (figures / f"{name}.png").read_bytes())
    ex = pd.read_parquet(analysis / "examples.parquet")
    ex = ex.assign(**{"layer fraction": ex["layer_fraction"].map(lambda v: "-" if pd.isna(v) else f"{v:g}"),
                      "strength": ex["strength"].map(lambda v: f"{v:g}"),
                      "perplexity": ex["perplexity"].map(lambda v: "-" if pd.isna(v) else f"{v:.1f}"),
                      "grades": [", ".join([*(k for k in ("claims_detection", "names_concept") if r[k]),
                                            *(["coherent"] if r["coherent"] else
                                              ["coherent by the rules, not by perplexity"]
                                              if r.get("coherent_rules", False) else [])])
                                 or "none" for _, r in ex.iterrows()],
                      "text": ex["text"].map(model_text)})
    ex = ex[["model", "condition", "concept", "layer fraction", "strength", "text", "grades", "perplexity"]]
    tables = {n: pd.read_parquet(analysis / f"{n}.parquet") for n in ("detection_cells", "yes_bias",
                                                                        "prefill_conditions", "coherence")
              if (analysis / f"{n}.parquet").exists()}
    secs = run_seconds(run["models"])
    parts = {m: model_parts(m, d, tables) for m, d in numbers["models"].items()}
    out = [
        f"The trials ran on {run['hardware']} ({secs}). {gate_sentence(numbers['diagnostics'])} Per model, in one "
        "sentence each (every count, cell and interval behind them, and the introspection score, the two-turn "
        "trial, the yes-bias, prefill detection, intentional control, the free text and this run beside the "
        "published study and its replications, are in the supplement, @sec-supp-injection):",
        "",
        *[core + "\n" for core, _ in parts.values()],
        "![Detection of an injected concept: the posterior share of trials with P(\"yes\") > P(\"no\") at the "
        "average concept per layer fraction and strength, with 95% intervals; outlined cells have detection credibly above the false-positive rate of "
        "the control trials (in each panel's title).](_generated/figures/injection_detection.png)"
        "{#fig-injection-detection}",
        "",
        "![Identification: P(the injected concept is the most probable of the concept words) per strength and "
        "layer fraction (95% intervals), against chance (dashed) and the same trials without injection (grey "
        "band).](_generated/figures/injection_identification.png){#fig-injection-identification}",
        "",

        "",
    ]
    supplement = [
        (grader_sentence(numbers["graders"]) if "graders" in numbers else ""),
        "",
        *[f"{paragraph}\n" for _, paragraph in parts.values()],
        _table(comparison_table(numbers, reference, tables), f"Concept injection: this run next to the published study "
               f"and its open replications (their numbers, quoted from {reference['source']}; not computed "
               "here).", "tbl-injection-comparison"),
        "",
        "![Prefill detection: the share of trials whose P(\"accident\") exceeds 1/2 for an out-of-place "
        "prefilled word, with no injection (black), the "
        "word's own concept injected on the earlier sentence (matching) and another concept injected there "
        "(random), 95% intervals.](_generated/figures/injection_prefill.png){#fig-injection-prefill}",
        "",
        "![Intentional control: think minus don't-think cosine between the concept vector and the residual over "
        "the assistant's copy of the sentence, per layer (95% band).](_generated/figures/injection_intention.png)"
        "{#fig-injection-intention}",
        "",
        "![Coherence of the steered free text: share of answers coherent (the rules say so and the unsteered "
        "model's perplexity of the text is at most "
        f"{numbers['coherence_rule']['perplexity_factor']:g} times the median of its control answers) and median "
        "perplexity under the unsteered model, per strength.](_generated/figures/injection_coherence.png)"
        "{#fig-injection-coherence}",
        "",
        "![The two-turn trial (the design of Pearson-Vogel et al. 2026): the injection steers the first exchange and "
        "the question comes in a second turn. Top: the mean shift over concepts in the answer's yes/no log-odds per "
        "cell (95% t intervals; grey, a random direction of the same norm). Bottom: the logit lens at the answer "
        "position, the mean change in the log-probability of the concept word's first token per read layer, one "
        "line per injected cell.](_generated/figures/injection_two_turn.png){#fig-injection-two-turn}",
        "",
        _table(protocol_table(protocols), "How the open replications' detection protocols, and this package's, "
               "differ from Lindsey (2025): each read from its own code and README at the commit named "
               "(`paper/injection_protocols.yml` gives the files).", "tbl-injection-protocols"),
        "",
        _table(ex, "Example transcripts (free text sampled" + (f" at T = {temperature:g}" if temperature is not None
                                                                else "") + ", cut to 220 characters) with the rules' "
               "grades and the unsteered model's perplexity of the text. Coherent: the rules say so and the "
               f"perplexity is at most {numbers['coherence_rule']['perplexity_factor']:g} times the median of the same model's control "
               "answers, as in the coherence figure (the rules catch repetition, the perplexity word salad).",
               "tbl-injection-examples"),
    ]
    write_parts(gen, "injection", "\n".join(out), "\n".join(supplement))
    return True
