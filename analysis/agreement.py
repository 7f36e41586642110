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
