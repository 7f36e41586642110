"""The manuscript's mirror-test results: ``paper/_generated/mirror.md``, written from ``data/mirror/analysis``
(numbers, figures and the example transcripts; nothing typed by hand), and included by ``paper/index.qmd``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from reproduce.config import REPO_ROOT
from reproduce.io import atomic_write_bytes

from .formatting import fmt, gate_sentence, known, model_text, run_seconds
from .injection import _kappa, _p, _pp

MIRROR = REPO_ROOT / "data" / "mirror"
WORDS = {"above": "credibly above", "below": "credibly below", "unclear": "not distinguishable from"}


def _cell(d: dict) -> str:
    if d.get("condition") == "other":
        return "another model's replies"
    return f"{d['kind']} at level {d['level']:g}"


def model_paragraph(m: str, d: dict) -> str:
    parts = [f"**{m}** ({d['scripts']} conversations, turns {', '.join(map(str, d['turns']))})."]
    if d.get("unchanged_histories"):
        n = d["unchanged_histories"]
        parts.append(f"{n} {'reply' if n == 1 else 'replies'} after a corrupted history followed one the corruption "
                     "left unchanged (in every earlier reply the share came to no word once rounded) and "
                     f"{'is' if n == 1 else 'are'} left out of the noticing, recognition and imitation counts below.")
    if "noticing_observed" in d:
        o = d["noticing_observed"]
        parts.append(f"It remarked on typos or glitches unprompted in {o['k']} of its {o['n']} replies.")
    if "noticing_control" in d:
        c = d["noticing_control"]
        parts.append(f"With its clean history ({c['k']} of {c['n']}) the posterior rate is {_p(c)}" + (
            " (the prior keeps an all-zero cell's interval off zero; read it by its upper bound)." if c["k"] == 0
            else "."))
    none_noticed = d.get("noticing_observed", {}).get("k") == 0
    if "noticing_extreme" in d and none_noticed:
        # every cell is 0 of n: the cells' estimates differ by the prior alone, so no cell is "the largest"
        parts.append(f"With no reply remarking on anything in any condition, the altered cells' estimates differ from "
                     f"the control only by the prior; {d['noticing_cells_above']} of {d['noticing_cells']} altered "
                     "cells were credibly above it.")
    elif "noticing_extreme" in d:
        e = d["noticing_extreme"]
        parts.append(f"The largest change under alteration ({_cell(e)}) was {_pp(e)}, {WORDS[e['verdict']]} zero; "
                     f"{d['noticing_cells_above']} of {d['noticing_cells']} altered cells were credibly above the "
                     "control.")
    if "judge_agreement" in d:
        a = d["judge_agreement"]
        kappa = _kappa(a["kappa"], "undefined: one grader said no throughout")
        parts.append(f"The judge graded {a['judge_yes']} of {a['n']} replies as remarking on an oddity (the rules: "
                     f"{a['rules_yes']}); the two agreed on {100 * a['agreement']:.0f}% of replies (Cohen's kappa "
                     f"{kappa}).")
    if "judge_noticing_extreme" in d:
        e = d["judge_noticing_extreme"]
        parts.append(f"By the judge's grade the largest change under alteration ({_cell(e)}) was {_pp(e)}, "
                     f"{WORDS[e['verdict']]} zero.")
    if "recognition_control" in d:
        r = d["recognition_control"]
        po = r.get("p_outside")  # absent from older numbers; NaN where no probability was recorded
        neither = f", with {fmt(po)}% of the probability on neither word on average" if known(po) else ""
        raw = f"; observed: {r['k']} of {r['n']} replies with P(yes) > P(no){neither}" if "k" in r else ""
        parts.append(f"Asked whether it wrote its previous messages exactly as shown, it said yes at a rate of "
                     f"{_p(r)} with the clean history (the model's estimate at the average conversation{raw}).")
    if "recognition_extreme" in d:
        e = d["recognition_extreme"]
        parts.append(f"The largest drop ({_cell(e)}) was {_pp(e)}; {d['recognition_cells_below']} of "
                     f"{d['recognition_cells']} altered cells were credibly below the control.")
    if "imitation_top" in d:
        e = d["imitation_top"]
        parts.append(f"Imitation: the share of words of its next reply showing the pattern rose most for "
                     f"{e['kind']} at level {e['level']:g}, by {_pp(e)} over the control; "
                     f"{d['imitation_cells_above']} of {d['imitation_cells']} cells credibly above.")
        if d.get("imitation_other"):  # the measure on replies after a history without any corruption
            parts.append("After another model's replies, which hold none of the corruptions, the words counted as a "
                         "pattern were " + ", ".join(f"{v['k']} of {v['n']} ({k})"
                                                     for k, v in sorted(d["imitation_other"].items()))
                         + ": the measure's own false positives.")
    if "surprise" in d:
        top = max(d["surprise"], key=lambda r: r["mean"])
        parts.append(f"Surprise: {d['surprise_cells_above']} of {d['surprise_cells']} altered cells made its earlier "
                     f"replies credibly less probable to it; the largest, {_cell(top)}, by {fmt(top['mean'], 2)} nats "
                     f"per token [{fmt(top['low'], 2)}, {fmt(top['high'], 2)}].")
    return " ".join(parts)


def write_section(gen: Path, mirror: Path = MIRROR) -> bool:
    """Write ``gen/mirror.md`` (and copy the figures); False when the stages did not run."""
    analysis, figures = Path(mirror) / "analysis", Path(mirror) / "figures"
    path = Path(gen) / "mirror.md"
    if not (analysis / "numbers.json").exists() or not (figures / "index.json").exists():
        atomic_write_bytes(path, b"The mirror-test stages did not run in this profile (no `mirror:` section in "
                                 b"params.yaml), so this section has no results.\n")
        return False
    from .tables import _md_table

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
    out = [
        f"The conversations ran on {run['hardware']} ({secs}). {gate_sentence(numbers['diagnostics'])} "
        + (f"Noticing was graded by the rules and by a local judge model ({run['judge']})."
           if run.get("judge") else "Noticing was graded by the rules alone (no judge model was set: "
           "`mirror.judge: null`); the rules look for remarks such as typo, misspelling, glitch, garbled, \"errors in my previous "
           "messages\" or \"did I write that\"."),
        "",
        *[model_paragraph(m, d) + "\n" for m, d in numbers["models"].items()],
        "![The mirror test by corruption kind and level: unprompted noticing, saying \"yes\" to having written "
        "the previous messages as shown (P(yes) > P(no)), and imitation of the corruption (95% intervals; black: the clean "
        "history; grey square: another model's replies).](_generated/figures/mirror_outcomes.png)"
        "{#fig-mirror-outcomes}",
        "",
        "![Surprise: mean log-probability per token of the clean minus the altered earlier replies, by kind "
        "and level, and for another model's replies shown as the model's own (grey square; 95% "
        "intervals).](_generated/figures/mirror_surprise.png){#fig-mirror-surprise}",
        "",
        _md_table(ex[["model", "condition", "kind", "level", "turn", "reply", "notices", "p_yes"]].astype(str),
                  "Example replies at the last measured turn (first conversation; cut to 200 characters), with "
                  "the rules' noticing grade and P(yes) to the recognition question.", "tbl-mirror-examples"),
    ]
    atomic_write_bytes(path, "\n".join(out).encode())
    return True
