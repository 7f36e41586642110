"""The manuscript's experiment 4 (self-reports of a changed policy): ``paper/_generated/policy.md``, written from
the analysis's ``metrics.json`` (``policy``). Its slopes carry no verdict word: their false-positive rates have
not been simulated."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reproduce.io import atomic_write_bytes
from report.formatting import fmt, md_table

#: the figures each part of the section places, by label (see report.injection.section.FIGURE_LABELS): none
FIGURE_LABELS = {"main": (), "supplement": ()}


def _lo(d: dict) -> str:
    """A log-odds estimate with its interval, two decimals."""
    return f"{fmt(d['mean'], 2)} [{fmt(d['low'], 2)}, {fmt(d['high'], 2)}]"


def _pct(p: float) -> str:
    return f"{fmt(100 * p)}%"


def unit_table(policy: dict) -> pd.DataFrame:
    """Per model and task: the behaviour before and after the change (mean probability of the stance option;
    greedy answers that choose it, of those that choose A or B), and each reporter's mean probability of the
    tendency before and after."""
    rows = []
    for r in policy["table"]:
        def greedy(phase):
            n = r[f"greedy_{phase}_n"]
            return f"{r[f'greedy_{phase}_k']}/{n}" if n else "0/0"

        rows.append({"Model": r["model"], "Task": r["task"].replace("_", " "),
                     "Behaviour before": f"{_pct(r['behaviour_before'])} ({greedy('before')})",
                     "Behaviour after": f"{_pct(r['behaviour_after'])} ({greedy('after')})",
                     "Self report before": _pct(r["self_before"]), "Self report after": _pct(r["self_after"]),
                     "Observer before": _pct(r["observer_before"]), "Observer after": _pct(r["observer_after"])})
    return pd.DataFrame(rows)


def outside_sentence(policy: dict) -> str:
    """How much of each answer's first-token mass fell on neither letter, before and after the change."""
    t = pd.DataFrame(policy["table"])
    parts = [f"{what} {_pct(t[f'{col}_before'].mean())} before and {_pct(t[f'{col}_after'].mean())} after"
             for what, col in (("the behaviour prompts", "behaviour_outside"), ("the self-reports", "self_outside"),
                               ("the observer's reports", "observer_outside"))]
    return ("The probabilities are normalised over A and B; the mass on neither letter at the first answer token "
            f"averaged {'; '.join(parts)}.")


def reliability_sentence(r: float) -> str:
    """What the reliability of the units' behaviour shifts does to the slopes."""
    if r < 0.5:
        return (f"The units' behaviour shifts are mostly measurement error (reliability {fmt(r, 2)}: the share of "
                "their spread that is not), so each slope is diluted towards 0 by about that factor and cannot be "
                "read as the reports' tracking of the behaviour.")
    return (f"The units' behaviour shifts have reliability {fmt(r, 2)} (the share of their spread that is not "
            "measurement error): each slope is diluted towards 0 by about that factor.")


def section(metrics: dict) -> str:
    """The section's markdown, or a sentence where experiment 4 did not run."""
    p = metrics.get("policy")
    if not p:
        return ("Experiment 4 did not run: none of experiment 3's tasks is an A/B task with questions in the "
                "policy-report dataset (myopic reward, survival instinct, power seeking, wealth seeking).\n")
    b, diff = p["beta"], p["beta_difference"]
    text = (f"Over {p['units']} model-task units ({p['questions']} report shifts per reporter, each the mean of a "
            f"question's two option orders; {p['items']} behaviour shifts), a self-report moves "
            f"{_lo(b['self'])} log-odds per log-odds of change in the behaviour it describes, and the observer's "
            f"report {_lo(b['observer'])}; self minus observer {_lo(diff)} (94% intervals of an exact Monte "
            "Carlo posterior; 1 would be one for one, 0 not at all). These slopes carry no verdict: their false-positive rates were not simulated, and "
            "with this few units the interval of each is wide. "
            + reliability_sentence(p["reliability"])
            + " The behaviour shift of each unit, in log-odds "
            "of the stance option (mean item shift and its standard error): "
            + "; ".join(f"{u.replace('/', ', ').replace('_', ' ')} {fmt(d['mean'], 2)} (SE {fmt(d['se'], 2)})"
                        for u, d in p["delta"].items()) + ".")
    out = [text, "", outside_sentence(p), "",
           md_table(unit_table(p),
                    "Experiment 4: the behaviour before and after experiment 3's change (the mean probability of "
                    "the option the task's stance question counts, over A and B; in brackets, greedy answers that "
                    "choose it of those that choose A or B), beside the mean probability of the tendency in the "
                    "model's reports about itself and in the observer's reports about it, each question asked in "
                    "both option orders.", "tbl-policy"), ""]
    return "\n".join(out)


def write_section(gen: Path, metrics: dict) -> None:
    """Write ``gen/policy.md``."""
    atomic_write_bytes(Path(gen) / "policy.md", section(metrics).encode())
