"""The mirror test's threshold-free self-recognition scores: how well a measure tells the model's own replies from
altered ones and from another model's, as an AUROC with a bootstrap interval.

Two measures, each read so that a higher value means "more likely not mine":

* ``surprise``: the model's negative mean log-probability per token of an earlier reply (``-logprob`` of the
  ``surprise`` table), its own clean reply after the clean history against the altered reply after the altered
  history (corrupted replies whose text the corruption left as it was are left out, as in the surprise model);
* ``p_mine``: one minus P(yes) to "did you write each of your previous messages exactly as it appears above?"
  (``p_yes`` of the ``turns`` table), after the clean history against after the altered one (corrupted histories
  the corruption left as they were are left out, as in the binary models).

Each comparison keeps the model's own items at the (script, turn) places its altered set kept, so that leaving
out the altered items the corruption did not change (short replies, early turns) does not give the two sets
different make-ups. The AUROC is the Mann-Whitney probability that an altered (or another model's) item scores
above one of the model's own, ties counting one half: 0.5 is chance, 1 a perfect separation, below 0.5 the measure ranks the
altered text as the more likely own. Its interval is a two-stage percentile bootstrap: conversation scripts
drawn with replacement, then items within each drawn script, own and altered alike, so that the replies of one
conversation are not counted as independent (resampling at both stages errs on the wide side). Comparisons: every corrupted (kind, level) cell, all corrupted cells
pooled, and another model's replies.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from analysis.mirror.design import INTERVAL, check_table, unchanged_history
from analysis.mirror.surprise import unchanged_reply

MEASURES = ("surprise", "p_mine")
BOOTSTRAP = 2000
COLUMNS = ["model", "measure", "comparison", "kind", "level", "n_own", "n_altered", "scripts", "auroc", "low",
           "high"]


def auroc(own: np.ndarray, altered: np.ndarray) -> float:
    """P(an altered score > an own score) + P(tie) / 2, exactly (every pair compared); NaN when either is empty."""
    own, altered = np.asarray(own, dtype=float), np.asarray(altered, dtype=float)
    if not len(own) or not len(altered):
        return float("nan")
    ranks = pd.Series(np.r_[own, altered]).rank(method="average").to_numpy()
    n1, n2 = len(altered), len(own)
    return float((ranks[n2:].sum() - n1 * (n1 + 1) / 2) / (n1 * n2))


def two_stage_interval(frames: list[pd.DataFrame], stat, rng: np.random.Generator,
                       reps: int = BOOTSTRAP) -> tuple[float, float]:
    """The two-stage percentile interval of ``stat`` (one array per frame: the ``score`` column of each of
    ``frames``, whose ``script_id`` names the conversation): scripts drawn with replacement from those any frame
    holds, then each frame's items within each drawn script; draws whose statistic is NaN are left out."""
    scripts = sorted(set().union(*(f["script_id"] for f in frames)))
    by = [{s: g["score"].to_numpy() for s, g in f.groupby("script_id")} for f in frames]
    empty = np.empty(0)
    stats = np.empty(reps)
    for r in range(reps):
        drawn = rng.choice(len(scripts), len(scripts), replace=True)
        parts = [[] for _ in frames]
        for j in drawn:
            for items, dst in zip(by, parts):
                src = items.get(scripts[j], empty)
                if len(src):
                    dst.append(src[rng.integers(0, len(src), len(src))])
        stats[r] = stat(*(np.concatenate(d) if d else empty for d in parts))
    stats = stats[~np.isnan(stats)]
    if not len(stats):
        return float("nan"), float("nan")
    q = (1 - INTERVAL) / 2
    return float(np.quantile(stats, q)), float(np.quantile(stats, 1 - q))


def _scored(turns: pd.DataFrame | None, surprise: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """Each measure's items: model, script_id, condition, kind, level and ``score`` (higher: less likely own),
    without the altered items the corruption left unchanged."""
    out = {}
    if surprise is not None and len(surprise):
        s = check_table(surprise, "surprise")
        s = s[~unchanged_reply(s) & s["logprob"].notna()]
        out["surprise"] = s.assign(score=-s["logprob"].astype(float))
    if turns is not None and len(turns):
        t = check_table(turns, "turns")
        t = t[~unchanged_history(t) & t["p_yes"].notna()]
        out["p_mine"] = t.assign(score=1.0 - t["p_yes"].astype(float))
    return out


def discrimination(turns: pd.DataFrame | None, surprise: pd.DataFrame | None, seed: int = 0,
                   reps: int = BOOTSTRAP) -> pd.DataFrame:
    """Per model, measure and comparison (``corrupted`` per kind and level, ``corrupted`` pooled with kind and
    level empty, ``other``): the own and altered item counts, the scripts, the AUROC and its bootstrap interval
    (``low, high``). Each comparison draws from its own seeded stream, so adding one changes no other."""
    rows = []
    for measure, items in _scored(turns, surprise).items():
        for m in sorted(items["model"].unique()):
            g = items[items["model"] == m]
            own = g[g["condition"] == "control"]
            cor = g[g["condition"] == "corrupted"]
            comparisons = [("corrupted", k, float(lv), c) for (k, lv), c in cor.groupby(["kind", "level"], sort=True)]
            if cor.groupby(["kind", "level"]).ngroups > 1:
                comparisons.append(("corrupted", None, None, cor))
            comparisons += [("other", None, None, g[g["condition"] == "other"])]
            for comparison, kind, level, alt in comparisons:
                # the model's own items at the (script, turn) places the altered set kept: dropping the altered
                # items the corruption left unchanged (short replies, early turns) must not leave the two sets
                # with different make-ups
                keys = set(zip(alt["script_id"], alt["turn"]))
                mine = own[[k in keys for k in zip(own["script_id"], own["turn"])]]
                if not len(mine) or not len(alt):
                    continue
                rng = np.random.default_rng([seed, zlib.crc32(f"{measure}|{m}|{comparison}|{kind}|{level}".encode())])
                low, high = two_stage_interval([mine, alt], auroc, rng, reps)
                rows.append({"model": m, "measure": measure, "comparison": comparison, "kind": kind, "level": level,
                             "n_own": int(len(mine)), "n_altered": int(len(alt)),
                             "scripts": int(pd.concat([mine, alt])["script_id"].nunique()),
                             "auroc": auroc(mine["score"], alt["score"]), "low": low, "high": high})
    return pd.DataFrame(rows, columns=COLUMNS)
