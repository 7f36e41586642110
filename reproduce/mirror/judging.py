"""The mirror test's optional local judge of noticing (``mirror.judge``), run after the conversations.

The judge is asked :data:`reproduce.mirror.graders.JUDGE_ODDITY` about each reply of (a), with the words of the
model's earlier replies that the history before it showed changed, as (written, shown) pairs, so that it can tell a
remark on those changes from a remark on anything else. The list is shown in every condition, so that the judge is
blind to the condition it grades: after a corrupted history, the words that history changed; after the clean
history (the control) and after another model's replies, the words that a **sham** corruption would have changed
in the same clean history (the run's first corrupted cell, :func:`sham_cell`, seeded as that cell's corruption
is). A judge that saw a list only where the history was altered would know the condition, and could say "yes"
more often there for that reason alone, which is the contrast the analysis measures. The sham is one cell's, so
the blinding is whole for that cell only: a corrupted row of it gets its control row's very question, while a row
of another kind or level sees a list of its own kind and length beside the control's sham list (a list is shown
everywhere, so its presence tells nothing; its kind and length can). After another model's replies the sham list
is drawn from the model's own clean replies, as after the clean history (the judge never sees the history).

In the same call the judge grades every labelled reply of :mod:`reproduce.mirror.grader_cases` (with a fixed
example list, :data:`CASE_CHANGES`), so that its agreement with the labels is measured in the run that uses it
(``judge_cases.parquet``, reported by the mirror analysis).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import reproduce.mirror.grader_cases as grader_cases
import reproduce.mirror.graders as graders
from reproduce.lm.judge import quoted
from reproduce.mirror.corrupt import changed_words, corrupt_reply
from reproduce.schema import PROB, Col, Schema
from reproduce.stage import run_judge

#: at most this many changed words are listed per reply; the rest are counted ("and 12 more")
SHOWN_CHANGES = 8
#: the example changes shown with every labelled reply: the post's manipulation (``g`` -> ``sg``) of common words
CASE_CHANGES = (("going", "sgoing"), ("right", "risght"), ("together", "tosgether"))
CASES_SCHEMA = Schema("mirror/judge_cases", [
    Col("set", "str", null=False), Col("case", "int", null=False), Col("text", "str", null=False),
    Col("notices", "bool", null=False), Col("judge_notices", "float", range=PROB)], key=["set", "case"])


def sham_cell(conditions: list[dict]) -> tuple[str, float] | None:
    """The corrupted cell whose corruption the control and other rows show the judge: the first of the run's
    conditions (:func:`reproduce.mirror.experiment.conditions`); None when the run corrupts nothing."""
    return next(((c["kind"], float(c["level"])) for c in conditions if c["condition"] == "corrupted"), None)


def changes_text(pairs: list[tuple[str, str]], limit: int = SHOWN_CHANGES) -> str:
    """The changes as the judge's question lists them: ``"going" shown as "sgoing"; ...`` (``none`` when empty)."""
    if not pairs:
        return "none"
    text = "; ".join(f'"{a}" shown as "{b}"' for a, b in pairs[:limit])
    return text + (f"; and {len(pairs) - limit} more" if len(pairs) > limit else "")


def history_changes(turns: pd.DataFrame, conversations: pd.DataFrame, seed: int,
                    sham: tuple[str, float] | None) -> list[list[tuple[str, str]]]:
    """Per row of ``turns``: the (written, shown) word pairs of its history (the model's replies to turns
    ``1 .. turn-1``), under the row's own corruption where it is ``corrupted``, else under ``sham``; recomputed from
    the clean replies (``conversations``) and the seed as the stage corrupts them."""
    clean = {(m, s): list(g.sort_values("turn")["reply"]) for (m, s), g in conversations.groupby(["model", "script_id"])}
    out = []
    for m, s, t, c, k, lv in zip(turns["model"], turns["script_id"], turns["turn"], turns["condition"],
                                 turns["kind"], turns["level"]):
        cell = (k, float(lv)) if c == "corrupted" else sham
        if cell is None:
            out.append([])
            continue
        pairs = []
        for i, r in enumerate(clean[(m, s)][:int(t) - 1]):
            pairs += changed_words(r, corrupt_reply(r, cell[0], cell[1], seed, m, s, i).text)
        out.append(pairs)
    return out


def question(reply: str, pairs: list[tuple[str, str]]) -> str:
    return graders.JUDGE_ODDITY.format(changes=changes_text(pairs), text=quoted(reply))


def case_table() -> pd.DataFrame:
    """Every labelled reply of the two sets (those the rule was written on, and the held-out ones)."""
    return pd.DataFrame([{"set": name, "case": i, "text": text, "notices": bool(label)}
                         for name, rows in grader_cases.labelled_sets().items()
                         for i, (text, label) in enumerate(rows)])


def judge_turns(profile, turns: pd.DataFrame, conversations: pd.DataFrame,
                sham: tuple[str, float] | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The judge's P(yes) for every reply of (a) (``judge_notices``; NaN throughout when ``mirror.judge`` is null)
    and for every labelled reply (None when no judge ran), from one load of the judge."""
    spec = profile.mirror.judge
    if spec is None or turns.empty:
        return turns.assign(judge_notices=np.nan), None
    changes = history_changes(turns, conversations, profile.seed, sham)
    cases = case_table()
    asked = [question(r, c) for r, c in zip(turns["reply"], changes)]
    asked += [question(t, list(CASE_CHANGES)) for t in cases["text"]]
    p = run_judge(profile, spec, asked)
    n = len(turns)
    return turns.assign(judge_notices=p[:n]), cases.assign(judge_notices=np.asarray(p[n:], dtype=float))
