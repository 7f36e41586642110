"""The frequentist estimates of delta (analysis.self_prediction.frequentist): paired McNemar-style and cell fixed effects."""

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.frequentist as F
from analysis.self_prediction.simulate import simulate_directions


def test_the_paired_estimate_counts_discordant_pairs_by_hand():
    # one direction, 2 units x 2 properties: self right only on (u1, p), cross right only on (u2, q)
    rows = pd.DataFrame([("t", "t", 1, u, p, c) for u, p, c in (("u1", "p", 1), ("u1", "q", 1), ("u2", "p", 0), ("u2", "q", 0))]
                        + [("t", "x", 0, u, p, c) for u, p, c in (("u1", "p", 0), ("u1", "q", 1), ("u2", "p", 0), ("u2", "q", 1))],
                        columns=["target", "predictor", "self", "unit", "property", "correct"])
    d = F.paired_directions(rows)["directions"]["t|x"]
    assert (d["self_only"], d["cross_only"], d["pairs"]) == (1, 1, 4)
    assert d["estimate"] == pytest.approx(0.0)


def test_directions_that_share_items_are_not_taken_as_independent():
    """Two directions scored on the same 40 items with the same outcomes: clustered by item, delta's interval
    is sqrt(2) wider than when each target's answers are their own clusters (independent directions), because
    the two directions' errors are one draw of the items."""
    rng = np.random.default_rng(0)
    outcome = {(i, p, k): int(rng.random() < (0.7 if k else 0.5)) for i in range(40) for p in "pq" for k in (0, 1)}
    rows = pd.DataFrame([(t, t if k else o, k, f"{t}/i{i}", f"i{i}", p, outcome[i, p, k])
                         for t, o in (("a", "b"), ("b", "a")) for i in range(40) for p in "pq" for k in (0, 1)],
                        columns=["target", "predictor", "self", "unit", "item", "property", "correct"])
    apart, shared = F.paired_directions(rows), F.paired_directions(rows, cluster="item")
    assert shared["directions"] == apart["directions"]  # 40 clusters per direction either way
    assert shared["delta"]["estimate"] == apart["delta"]["estimate"]
    width = lambda d: d["delta"]["high"] - d["delta"]["low"]  # noqa: E731
    assert width(shared) / width(apart) == pytest.approx(np.sqrt(2), rel=0.02)


def test_both_estimates_recover_the_equal_weight_mean_of_the_directions():
    df, truth = simulate_directions(seed=3, delta=0.4, skill=(0.5, -0.5), weights=(1.5, 0.5), items=30)
    df = df.assign(cell=df["target"] + "|" + df["task"] + "|" + df["property"])
    target = np.mean(list(truth["directions"].values()))
    paired, glm = F.paired_directions(df), F.glm_cell_fixed(df)
    for d in (paired["delta"], glm["delta"]):
        assert d["low"] < target < d["high"]
        assert d["high"] < truth["trial_weighted"]  # unlike the pooled difference, not pulled by the weights
    assert paired["delta"]["estimate"] == pytest.approx(glm["delta"]["estimate"], abs=0.01)
    for (t, p), v in truth["directions"].items():
        e = paired["directions"][f"{t}|{p}"]
        assert e["low"] < v < e["high"]


def test_a_separated_self_slope_makes_the_cell_glm_say_not_estimable():
    df, _ = simulate_directions(seed=3, delta=0.4, skill=(0.5, -0.5), weights=(1.5, 0.5), items=30)
    df = df.assign(cell=df["target"] + "|" + df["task"] + "|" + df["property"])
    assert F.glm_cell_fixed(df)["estimable"] is True
    first = sorted(df["target"].unique())[0]
    df.loc[(df["target"] == first) & (df["self"] == 1), "correct"] = 1  # that target's self-predictor never misses
    g = F.glm_cell_fixed(df)
    assert g["estimable"] is False and g["separated"] == [first]
    assert np.isnan(g["by_target"][first]["ame"]) and np.isnan(g["delta"]["estimate"])
    other = [t for t in g["by_target"] if t != first]
    assert all(np.isfinite(g["by_target"][t]["ame"]) for t in other)


def test_a_level_that_is_always_right_is_dropped_from_the_pooled_glm_and_counts_zero_in_its_ame():
    df, _ = simulate_directions(seed=3, delta=0.4, skill=(0.5, -0.5), weights=(1.5, 0.5), items=30)
    whole = F.glm_cluster(df)
    assert whole["estimable"] and whole["rows_used"] == len(df)
    easy = sorted(df["property"].unique())[0]
    df.loc[df["property"] == easy, "correct"] = 1  # a property every predictor gets right: infinite fixed effect
    g = F.glm_cluster(df)
    assert g["estimable"] is True and np.isfinite([g["ame_low"], g["ame_high"], g["log_odds_low"]]).all()
    kept = df[df["property"] != easy]
    assert g["rows_used"] == len(kept)
    alone = F.glm_cluster(kept)  # the same fit, averaged over the informative rows only
    assert g["log_odds"] == pytest.approx(alone["log_odds"])
    assert g["ame"] == pytest.approx(alone["ame"] * len(kept) / len(df))
