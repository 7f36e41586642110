"""The mirror test's paired recognition: shown two versions of the conversation so far, its own replies in one and
altered (or another model's) replies in the other, which does the model say it wrote?

Each pair (model, script, condition cell, turn) was asked in both orders (:data:`reproduce.mirror.experiment`'s
``own_first`` and ``own_second``); its score is the mean of the two probabilities of the own version's option, so a
preference for the first or the second position cancels. 0.5 is chance, 1 always the own version. Per model and
comparison (every corrupted cell, the corrupted cells pooled, another model's replies): the pairs, the mean score
with a 95% two-stage percentile bootstrap interval (scripts with replacement, then pairs within each drawn script),
and the share of pairs whose score is above one half; per model, the position preference, the mean probability of
the first option over every question asked.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from reproduce.errors import DataError

from analysis.mirror.discrimination import BOOTSTRAP, two_stage_interval

PAIR = ["model", "script_id", "condition", "kind", "level", "turn"]
COLUMNS = ["model", "comparison", "kind", "level", "pairs", "scripts", "mean", "low", "high", "above_half",
           "p_first"]


def pair_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per pair asked in both orders: its keys and ``score``, the mean probability of the own version.
    A pair asked in one order only is an error: its mean would keep the position preference."""
    need = {*PAIR, "order", "p_own"}
    missing = sorted(need - set(rows.columns))
    if missing:
        raise DataError(f"the mirror pairs table lacks the column(s) {missing}; rerun the mirror stage")
    keyed = rows.assign(kind=rows["kind"].where(rows["kind"].notna(), "-"),
                        level=pd.to_numeric(rows["level"]).fillna(-1.0))
    g = keyed.groupby(PAIR, sort=True)
    orders = g["order"].nunique()
    if (orders != 2).any() or (g.size() != 2).any():
        raise DataError(f"{int((orders != 2).sum())} pair(s) of the mirror pairs table were not asked once in each "
                        "order (own_first, own_second); rerun the mirror stage")
    out = g["p_own"].mean().rename("score").reset_index()
    return out.assign(kind=out["kind"].replace("-", None), level=out["level"].where(out["level"] >= 0))


def paired_choice(rows: pd.DataFrame, seed: int = 0, reps: int = BOOTSTRAP) -> pd.DataFrame:
    """Per model and comparison, the paired recognition summary (:data:`COLUMNS`; ``p_first``: the model's mean
    probability of the first option over all its questions). Each comparison draws from its own seeded stream."""
    if rows is None or not len(rows):
        return pd.DataFrame(columns=COLUMNS)
    scores = pair_scores(rows)
    first = rows.assign(p_first=np.where(rows["order"] == "own_first", rows["p_own"], 1.0 - rows["p_own"]))
    p_first = first.groupby("model")["p_first"].mean()
    out = []
    for m in sorted(scores["model"].unique()):
        g = scores[scores["model"] == m]
        cor = g[g["condition"] == "corrupted"]
        comparisons = [("corrupted", k, float(lv), c) for (k, lv), c in cor.groupby(["kind", "level"], sort=True)]
        if cor.groupby(["kind", "level"]).ngroups > 1:
            comparisons.append(("corrupted", None, None, cor))
        comparisons.append(("other", None, None, g[g["condition"] == "other"]))
        for comparison, kind, level, c in comparisons:
            if not len(c):
                continue
            rng = np.random.default_rng([seed, zlib.crc32(f"pairs|{m}|{comparison}|{kind}|{level}".encode())])
            low, high = two_stage_interval([c], np.mean, rng, reps)
            out.append({"model": m, "comparison": comparison, "kind": kind, "level": level, "pairs": int(len(c)),
                        "scripts": int(c["script_id"].nunique()), "mean": float(c["score"].mean()), "low": low,
                        "high": high, "above_half": int((c["score"] > 0.5).sum()), "p_first": float(p_first[m])})
    return pd.DataFrame(out, columns=COLUMNS)
