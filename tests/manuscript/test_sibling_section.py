"""The manuscript's sibling section (report.self_prediction.sibling): a verdict word only beside a measured rate
within the limit, and the sentence that says what the verdicts mean together."""

from __future__ import annotations

import numpy as np

from analysis.self_prediction.null import rate
from report.self_prediction.sibling import contrast_table, interpretation, section


def _contrast(mean, low, high, verdict, targets=(("a", "b"), ("b", "a"))):
    s = {"mean": mean, "low": low, "high": high, "p_positive": 0.9, "verdict": verdict}
    return {"population": s, "conditional": s, "estimand": "new_task_and_run",
            "by_target": [{"target": t, "other": o, **{f"population_{k}": v for k, v in s.items()},
                           **{f"conditional_{k}": v for k, v in s.items()}} for t, o in targets]}


def _metrics(self_sib="practically null", sib_cross="positive"):
    return {"sibling": {"contrasts": {
        "self_minus_sibling": _contrast(0.5, -1.5, 1.8, self_sib, (("a", "a~sibling"), ("b", "b~sibling"))),
        "sibling_minus_cross": _contrast(9.0, 4.0, 14.0, sib_cross),
        "self_minus_cross": _contrast(9.5, 4.5, 14.5, "positive")},
        "accuracy": [], "arms": ["self", "sibling", "cross"]}}


def _null(k: int, n: int = 40):
    r = rate(np.arange(n) < k)
    return {"max_rate": 0.05, "rates": {"population": r, "sibling": {
        c: {"population": r, "any_direction": r, "gate": {"passed": n, "failed": 0, "resampled": 0}}
        for c in ("self_minus_sibling", "sibling_minus_cross")}}}


def test_verdict_words_stand_only_beside_a_measured_rate_within_the_limit():
    m = _metrics()
    ok = section(m, _null(1))
    assert "the self-predictor and its sibling are practically equal (false-positive rate 2.5% [" in ok
    assert "points to similarity rather than introspection" in ok
    for null, why in ((_null(4), "above the 5% limit"), (None, "was not measured")):
        text = section(m, null)
        assert "practically equal" not in text.split("\n\n")[0] and why in text
        assert "do not separate privileged access from similarity" in text
    table = contrast_table(m["sibling"], None)
    assert set(table["Verdict (new task)"]) == {"no verdict"}
    table = contrast_table(m["sibling"], _null(1))
    pooled = table[table["Target"] == "pooled"].set_index("Contrast")["Verdict (new task)"]
    assert pooled["self minus sibling"] == "practically null" and pooled["sibling minus cross"] == "positive"
    # per-target verdicts of the contrasts whose directions were not simulated one by one carry no word
    assert set(table[(table["Target"] != "pooled") & (table["Contrast"] != "self minus sibling")]
               ["Verdict (new task)"]) == {"no verdict"}


def test_the_sentence_together_follows_the_verdicts_that_stand():
    assert "privileged access" not in interpretation(_metrics()["sibling"], _null(1))
    assert "knows something of its own behaviour" in interpretation(_metrics("positive")["sibling"], _null(1))
    assert "no knowledge of its own behaviour beyond" in interpretation(
        _metrics("practically null", "inconclusive")["sibling"], _null(1))


def test_a_run_without_a_sibling_says_so():
    assert "trained no sibling predictor" in section({}, None)
