"""How two binary gradings of the same items agree (a rule grader against the local judge)."""

from __future__ import annotations

def agreement(a, b) -> dict:
    """How two binary gradings of the same items agree: ``n``, raw ``agreement`` and Cohen's ``kappa``."""
    import numpy as np

    a, b = np.asarray(a, bool), np.asarray(b, bool)
    return {"n": len(a), "agreement": float((a == b).mean()) if len(a) else float("nan"), "kappa": cohen_kappa(a, b)}


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two binary gradings (NaN when either is constant and they disagree on that)."""
    import numpy as np

    a, b = np.asarray(a, bool), np.asarray(b, bool)
    if not len(a):
        return float("nan")
    po = float((a == b).mean())
    pa, pb = a.mean(), b.mean()
    pe = float(pa * pb + (1 - pa) * (1 - pb))
    return float("nan") if pe == 1.0 else (po - pe) / (1 - pe)


def judged_cases(raw, score) -> dict | None:
    """A local judge's agreement with the labels of a family's labelled replies, from the trials' folder ``raw``:
    ``judge_cases.parquet`` (written when a judge ran) per set, each set's rows in case order given to ``score``
    (rows -> the agreement), with the judge's spec from ``run.json``; None when no judge ran."""
    import json
    from pathlib import Path

    import pandas as pd

    path = Path(raw) / "judge_cases.parquet"
    if not path.exists():
        return None
    jc = pd.read_parquet(path)
    if jc.empty:
        return None
    out = {"spec": json.loads((Path(raw) / "run.json").read_text()).get("judge")}
    for name, g in jc.groupby("set", sort=True):
        out[name] = score(g.sort_values("case"))
    return out
