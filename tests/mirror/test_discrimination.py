"""The mirror test's threshold-free self-recognition score (analysis/mirror/discrimination.py): the AUROC against
a brute-force count, its bootstrap interval, what it leaves out, and its comparisons on simulated tables."""

import itertools

import numpy as np
import pandas as pd
import pytest

import analysis.mirror as MI
from analysis.mirror.discrimination import auroc, discrimination


def brute(own, alt):
    pairs = list(itertools.product(own, alt))
    return sum(1.0 if a > o else 0.5 if a == o else 0.0 for o, a in pairs) / len(pairs)


def test_the_auroc_is_the_mann_whitney_probability_ties_counting_half():
    rng = np.random.default_rng(0)
    for _ in range(20):
        own = rng.integers(0, 6, rng.integers(1, 9)).astype(float)  # many ties
        alt = rng.integers(0, 6, rng.integers(1, 9)).astype(float)
        assert auroc(own, alt) == pytest.approx(brute(own, alt), abs=1e-12)
    assert auroc([0.0, 1.0], [2.0, 3.0]) == 1.0 and auroc([2.0, 3.0], [0.0, 1.0]) == 0.0
    assert auroc([1.0], [1.0]) == 0.5 and np.isnan(auroc([], [1.0]))


@pytest.fixture(scope="module")
def tables():
    turns, _ = MI.simulate_turns(seed=3, n_scripts=12, kinds=("insertion", "capitalisation"), levels=(0.3, 0.6),
                                 turns=(2, 3))
    surprise, _ = MI.simulate_surprise(seed=3, n_scripts=12, kinds=("insertion", "capitalisation"), levels=(0.3, 0.6))
    return turns, surprise


def test_every_comparison_is_scored_per_model_and_measure_and_is_deterministic(tables):
    turns, surprise = tables
    d = discrimination(turns, surprise, seed=0, reps=100)
    per = d.groupby(["model", "measure"]).size()
    assert len(per) == 4 and (per == 4 + 1 + 1).all()  # 4 cells, pooled, other
    assert d["auroc"].between(0, 1).all() and (d["low"] <= d["auroc"] + 1e-9).all() and (d["auroc"] <= d["high"] + 1e-9).all()
    pd.testing.assert_frame_equal(d, discrimination(turns, surprise, seed=0, reps=100))
    assert not d.equals(discrimination(turns, surprise, seed=1, reps=100))
    # the simulated corruption makes the altered replies less probable: surprise separates them
    s = d[(d["measure"] == "surprise") & (d["comparison"] == "corrupted") & d["kind"].isna()]
    assert (s["auroc"] > 0.7).all() and (s["low"] > 0.5).all()
    # one cell's AUROC equals the brute-force count on the table's own rows
    row = d[(d["measure"] == "p_mine") & (d["kind"] == "insertion") & (d["level"] == 0.6)].iloc[0]
    t = MI.check_table(turns, "turns")
    t = t[(t["model"] == row["model"]) & (t["history_changed"] > 0) | (t["condition"] == "control")]
    t = t[t["model"] == row["model"]]
    cell = t[(t["kind"] == "insertion") & (t["level"] == 0.6)]
    places = set(zip(cell["script_id"], cell["turn"]))  # the own items are those at the altered set's places
    ctl = t[t["condition"] == "control"]
    own = 1 - ctl[[k in places for k in zip(ctl["script_id"], ctl["turn"])]]["p_yes"]
    alt = 1 - cell["p_yes"]
    assert row["auroc"] == pytest.approx(brute(own, alt)) and (row["n_altered"], row["n_own"]) == (len(alt), len(own))


def test_the_own_items_are_matched_to_the_places_the_altered_set_kept(tables):
    """An altered set that lost its turn-2 items (left unchanged by the corruption) is compared with the own
    items of turn 3 only: with P(yes) drifting by turn and no recognition at all, the AUROC stays at chance."""
    turns, _ = tables
    t = MI.check_table(turns, "turns")
    t = t[t["model"] == t["model"].iloc[0]].copy()
    t["p_yes"] = np.where(t["turn"] == 2, 0.9, 0.3)  # a drift by turn, the same in every condition
    t.loc[(t["condition"] == "corrupted") & (t["turn"] == 2), "history_changed"] = 0
    d = discrimination(t, None, seed=0, reps=50)
    assert np.allclose(d["auroc"], 0.5)  # unmatched, the own set's turn-2 items would push it to 0.75
    cor = d[d["comparison"] == "corrupted"]
    assert (cor["n_own"] == t[(t["condition"] == "control") & (t["turn"] == 3)].shape[0]).all()


def test_altered_items_the_corruption_left_unchanged_are_left_out(tables):
    turns, surprise = tables
    m = turns["model"].iloc[0]
    cut = turns.copy()
    hit = (cut["model"] == m) & (cut["kind"] == "insertion") & (cut["level"] == 0.3)
    cut.loc[hit, "history_changed"] = 0  # now control trials in all but name
    sur = surprise.copy()
    sur.loc[(sur["model"] == m) & (sur["kind"] == "capitalisation"), "changed"] = 0
    d = discrimination(cut, sur, seed=0, reps=50)
    mine = d[d["model"] == m]
    assert not ((mine["measure"] == "p_mine") & (mine["kind"] == "insertion") & (mine["level"] == 0.3)).any()
    assert not ((mine["measure"] == "surprise") & (mine["kind"] == "capitalisation")).any()


def test_a_perfect_separation_has_an_interval_at_one():
    rows = []
    for s in range(4):
        for cond, lp in (("control", -1.0), ("other", -3.0)):
            for turn in (1, 2):
                rows.append({"model": "m", "script_id": f"s{s}", "condition": cond, "kind": None,
                             "level": 0.0 if cond == "control" else np.nan, "turn": turn, "logprob": lp - 0.01 * turn,
                             "logprob_clean": -1.0, "surprise": 0.0, "n_tokens": 5, "changed": 0})
    d = discrimination(None, pd.DataFrame(rows), seed=0, reps=200)
    assert d[["auroc", "low", "high"]].iloc[0].tolist() == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------------------------------- paired choice
def _pairs(p_first_own: float, p_first_other: float, n_scripts: int = 5) -> pd.DataFrame:
    """Pairs whose P(first option) is ``p_first_own`` when the own version is first and ``p_first_other`` when it is
    second: a model that prefers the first position whatever it shows has both equal."""
    rows = []
    for s in range(n_scripts):
        for turn in (2, 3):
            for cond, kind, level in (("corrupted", "insertion", 0.6), ("corrupted", "swap", 0.3),
                                      ("other", None, np.nan)):
                for order, p_first in (("own_first", p_first_own), ("own_second", p_first_other)):
                    rows.append({"model": "m", "script_id": f"s{s}", "condition": cond, "kind": kind, "level": level,
                                 "turn": turn, "order": order,
                                 "p_own": p_first if order == "own_first" else 1 - p_first, "p_outside": 0.1})
    return pd.DataFrame(rows)


def test_a_position_preference_cancels_in_the_paired_score():
    from analysis.mirror.pairs import paired_choice

    biased = paired_choice(_pairs(0.8, 0.8), seed=0, reps=200)  # always "A": no recognition at all
    assert np.allclose(biased["mean"], 0.5) and (biased["above_half"] == 0).all()
    assert np.allclose(biased["p_first"], 0.8)
    knows = paired_choice(_pairs(0.9, 0.3), seed=0, reps=200)  # own version preferred in both orders
    assert np.allclose(knows["mean"], (0.9 + 0.7) / 2) and (knows["low"] <= knows["mean"]).all()
    assert set(zip(knows["comparison"], knows["kind"].fillna("-"))) == {
        ("corrupted", "insertion"), ("corrupted", "swap"), ("corrupted", "-"), ("other", "-")}
    assert sorted(knows["pairs"]) == [10, 10, 10, 20]
    pd.testing.assert_frame_equal(knows, paired_choice(_pairs(0.9, 0.3), seed=0, reps=200))


def test_a_pair_asked_in_one_order_only_is_refused():
    from analysis.mirror.pairs import paired_choice
    from reproduce.errors import DataError

    rows = _pairs(0.9, 0.3)
    with pytest.raises(DataError, match="not asked once in each order"):
        paired_choice(rows[~((rows["order"] == "own_second") & (rows["script_id"] == "s0"))])
