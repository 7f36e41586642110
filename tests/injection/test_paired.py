"""The continuous, paired detection measure (analysis.injection.paired): the introspection score from the raw
yes/no probabilities, the seeded split of the concepts, and the held-out estimate at the chosen cell."""

import numpy as np
import pandas as pd
import pytest

import analysis.injection.paired as P


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def table(seed=0, concepts=8, effect=None, yb_per_concept=2, noise=0.3):
    """A detection table in the stage's format: ``effect[(fraction, strength)]`` is the planted score at a cell
    (log-odds of yes to the detection question beyond the yes-bias questions' shift); every injection also adds
    a yes-shift of 0.5 to every question, which the score must remove."""
    rng = np.random.default_rng(seed)
    effect = effect or {}
    cells = [(f, s) for f in (0.4, 0.6) for s in (1.0, 2.0)]
    rows = []
    base = {"model": "m", "layer": 3, "p_outside": 0.1, "detected": False, "answer": "no"}
    for t in range(4):
        rows.append({**base, "question": "detect", "question_id": f"t{t}", "condition": "control", "concept": None,
                     "layer": -1, "layer_fraction": np.nan, "strength": 0.0, "p_yes": _sigmoid(-1.0)})
    names = [f"c{i}" for i in range(concepts)]
    qs = [(f"yb-{i}-{j}", c) for i, c in enumerate(names) for j in range(yb_per_concept)]
    for q, c in qs:
        rows.append({**base, "question": "yes_bias", "question_id": q, "condition": "control", "concept": c,
                     "layer": -1, "layer_fraction": np.nan, "strength": 0.0, "p_yes": _sigmoid(-2.0)})
    for c in names:
        for f, s in cells:
            planted = effect.get((f, s), 0.0)
            rows.append({**base, "question": "detect", "question_id": f"d-{c}", "condition": "concept",
                         "concept": c, "layer_fraction": f, "strength": s,
                         "p_yes": _sigmoid(-1.0 + 0.5 + planted + rng.normal(0, noise))})
            for q, qc in qs:
                if qc == c:
                    rows.append({**base, "question": "yes_bias", "question_id": q, "condition": "concept",
                                 "concept": c, "layer_fraction": f, "strength": s,
                                 "p_yes": _sigmoid(-2.0 + 0.5 + rng.normal(0, noise))})
    return pd.DataFrame(rows)


def test_the_score_removes_the_injections_yes_shift_and_pairs_by_concept_and_cell():
    t = table(noise=0.0, effect={(0.6, 2.0): 1.2})
    s = P.paired_scores(t)
    assert len(s) == 8 * 4 and (s["n_yes_bias"] == 2).all()
    assert np.allclose(s["detect"] - s["yes_bias"], s["score"])
    assert np.allclose(s["yes_bias"], 0.5)  # every question's shift under injection, against its own control
    at = np.isclose(s["layer_fraction"], 0.6) & np.isclose(s["strength"], 2.0)
    assert np.allclose(s.loc[at, "score"], 1.2) and np.allclose(s.loc[~at, "score"], 0.0)
    # a concept with no yes-bias question under its injection has no score
    assert len(P.paired_scores(t[~((t["question"] == "yes_bias") & (t["concept"] == "c0"))])) == 7 * 4


def test_the_halves_are_fixed_by_the_seed_and_disjoint():
    a, b = P.halves([f"c{i}" for i in range(12)], 0)
    assert (a, b) == P.halves([f"c{i}" for i in reversed(range(12))], 0)
    assert not set(a) & set(b) and len(a) == len(b) == 6
    assert P.halves([f"c{i}" for i in range(12)], 1) != (a, b)


@pytest.mark.slow
def test_the_chosen_cell_is_estimated_on_concepts_that_did_not_choose_it():
    from conftest import tiny_profile
    from reproduce.config import Analysis

    profile = tiny_profile(analysis=Analysis(draws=500, tune=500, chains=4))
    res = P.analyse(table(seed=2, concepts=12, effect={(0.6, 2.0): 1.5}), profile)
    n = res["numbers"]["m"]
    assert (n["best"]["layer_fraction"], n["best"]["strength"]) == (0.6, 2.0)
    held = n["best"]["held_out"]
    assert held["low"] < 1.5 < held["high"] and held["low"] > 0.5
    assert set(n["split"]["choose"]).isdisjoint(n["split"]["estimate"])
    assert n["cells_low_above_0"] >= 1 and n["diagnostics"]["divergences"] == 0
    from report.formatting import signed
    from report.injection.section import introspection_text

    text = introspection_text(n)
    assert f"{signed(held['mean'], 2)} [{signed(held['low'], 2)}, {signed(held['high'], 2)}]" in text
    assert "No verdict" in text and "6 of the 12 concepts" in text
    # no planted effect: the held-out interval covers 0
    null = P.analyse(table(seed=3, concepts=12), profile)["numbers"]["m"]["best"]["held_out"]
    assert null["low"] < 0 < null["high"]
