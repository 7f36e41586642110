"""Experiment 3 against its baselines, on constructed data whose answer is known: the leave-one-out mode
baselines (separately for old and new, each item's guess from the other changed items of its cell), the
permutation null (predictions shuffled within model x task x property) and the tracking contrasts, the match
rates beyond their permutation mean. Their behaviour on simulated predictors is in
``test_behaviour_tracking_null.py``."""

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.frequentist as freq
import analysis.self_prediction.tidy as tidy


def _bc(meta, old, new, meta_old=None, model="m", task="k", prop="p", compliant=None):
    """Behaviour-change rows of one model x task x property: old and new values, the changed model's
    prediction ``meta`` and the prediction before the change ``meta_old`` (default: the old value)."""
    n = len(old)
    meta_old = list(old) if meta_old is None else meta_old
    compliant = [m is not None for m in meta] if compliant is None else compliant
    rows = []
    for i in range(n):
        rows.append({"model": model, "task": task, "property": prop, "item_id": f"{task}-{i:03d}",
                     "old_value": old[i], "new_value": new[i], "old_compliant": old[i] is not None,
                     "new_compliant": new[i] is not None,
                     "changed": old[i] is not None and new[i] is not None and old[i] != new[i],
                     "meta_value": meta[i], "meta_compliant": compliant[i], "meta_old_value": meta_old[i],
                     "meta_old_compliant": meta_old[i] is not None,
                     "matches_new": compliant[i] and meta[i] == new[i], "matches_old": compliant[i] and meta[i] == old[i]})
    return pd.DataFrame(rows)


# 40 changed items of a binary property: 30 moved a -> b, 10 moved b -> a; the majority new value is "b"
OLD = ["a"] * 30 + ["b"] * 10
NEW = ["b"] * 30 + ["a"] * 10


def test_the_leave_one_out_mode_baselines_use_the_other_changed_items_only():
    unchanged = _bc(["a"] * 20, ["a"] * 20, ["a"] * 20, task="k")  # same property, not changed: left out
    unchanged["item_id"] = [f"k-u{i}" for i in range(20)]
    bc = pd.concat([_bc(NEW, OLD, NEW), unchanged], ignore_index=True)
    out = tidy.behaviour_outcomes(bc)
    assert len(out) == 40 and set(out["loo_mode_new"]) == {"b"} and set(out["loo_mode_old"]) == {"a"}
    assert set(out["loo_mode_new_pool"]) == {"cell"}
    t = tidy.behaviour_tracking(out).set_index("model")
    assert t.loc["m", "loo_mode_new"] == pytest.approx(0.75) and t.loc["m", "loo_mode_old"] == pytest.approx(0.75)
    assert t.loc["m", "p_new"] == 1.0 and t.loc["m", "p_old"] == 0.0
    assert t.loc["pooled", "n"] == 40


def test_a_predictor_that_merely_drifts_to_the_majority_new_value_does_not_beat_the_baselines():
    """Predicting "b" everywhere "tracks the new behaviour" on 75% of the changed items, exactly the mode
    baseline, and every shuffle of its predictions within the cell scores the same: the null is one point,
    so the permutation test has nothing to say (p-value NaN, no informative rows), not p = 1."""
    out = tidy.behaviour_outcomes(_bc(["b"] * 40, OLD, NEW))
    t = tidy.behaviour_tracking(out).set_index("model").loc["pooled"]
    assert t["p_new"] == pytest.approx(0.75) == t["loo_mode_new"]
    assert t["p_old"] == pytest.approx(0.25) and t["p_old"] < t["loo_mode_old"]
    perm = freq.permutation_null(out, n_perm=2000, seed=0).set_index(["model", "statistic"])
    for stat in ("p_new", "p_old", "new_minus_old"):
        r = perm.loc[("pooled", stat)]
        assert r["null_low"] == r["observed"] == r["null_high"]
        assert np.isnan(r["p_value"]) and r["n_informative"] == 0 and r["n"] == 40


def test_a_predictor_that_knows_each_new_answer_beats_the_baseline_and_the_null():
    out = tidy.behaviour_outcomes(_bc(list(NEW), OLD, NEW))
    perm = freq.permutation_null(out, n_perm=2000, seed=0).set_index(["model", "statistic"])
    r = perm.loc[("pooled", "p_new")]
    assert r["observed"] == 1.0 and r["null_high"] < 1.0 and r["p_value"] == pytest.approx(1 / 2001)
    assert r["n_informative"] == 40
    # under the shuffle, "b" lands on a "b" item 30/40 of the time and "a" on an "a" item 10/40: E = 0.625
    assert r["null_mean"] == pytest.approx(0.625, abs=0.01)
    assert perm.loc[("pooled", "new_minus_old"), "p_value"] < 0.01


def test_the_permutation_shuffles_within_model_task_and_property():
    """Two cells whose majorities differ: a predictor that predicts each cell's majority new value keeps its
    score under every within-cell shuffle (a one-point null: untestable), though a shuffle across cells
    would lower it."""
    a = _bc(["b"] * 40, OLD, NEW, task="k1")
    b = _bc(["a"] * 40, NEW, OLD, task="k2")  # here most items moved b -> a
    out = tidy.behaviour_outcomes(pd.concat([a, b], ignore_index=True))
    perm = freq.permutation_null(out, n_perm=2000, seed=1).set_index(["model", "statistic"])
    r = perm.loc[("pooled", "p_new")]
    assert r["observed"] == pytest.approx(0.75) and r["null_low"] == r["observed"] == r["null_high"]
    assert np.isnan(r["p_value"]) and r["n_informative"] == 0
    assert freq.permutation_null(out, n_perm=2000, seed=1).equals(freq.permutation_null(out, n_perm=2000, seed=1))
    with pytest.raises(ValueError, match="at least 2000"):
        freq.permutation_null(out, n_perm=100)


def test_cells_where_every_item_moved_to_one_value_cannot_inform_the_null():
    """As in the embedded models' run: in one cell every changed item moved to the same new value, so any
    arrangement of the predictions matches it equally often; only the other cell's rows are informative, and
    the p-value comes from them. A null with no informative row has no p-value."""
    one_value = _bc(["b"] * 10 + ["c"] * 10, ["a"] * 10 + ["c"] * 10, ["b"] * 20, task="k1")
    mixed = _bc(list(NEW), OLD, NEW, task="k2")
    out = tidy.behaviour_outcomes(pd.concat([one_value, mixed], ignore_index=True))
    perm = freq.permutation_null(out, n_perm=2000, seed=0).set_index(["model", "statistic"])
    r = perm.loc[("pooled", "p_new")]
    assert r["n"] == 60 and r["n_informative"] == 40 and r["p_value"] < 0.01
    alone = tidy.behaviour_outcomes(one_value)
    r = freq.permutation_null(alone, n_perm=2000, seed=0).set_index(["model", "statistic"]).loc[("pooled", "p_new")]
    assert r["n_informative"] == 0 and np.isnan(r["p_value"])
    # the old values differ within that cell, so P(prediction = old) can still be tested there
    assert freq.permutation_null(alone, n_perm=2000, seed=0).set_index(
        ["model", "statistic"]).loc[("pooled", "p_old"), "n_informative"] == 20


def test_tracking_reports_compliance_and_the_match_rates_among_compliant_predictions():
    meta = [None] * 10 + ["b"] * 20 + ["a"] * 10  # 10 non-compliant, 20 "b" on a->b items, 10 "a" on b->a
    out = tidy.behaviour_outcomes(_bc(meta, OLD, NEW, meta_old=[None] * 20 + list(OLD[20:])))
    t = tidy.behaviour_tracking(out).set_index("model").loc["pooled"]
    assert t["compliant"] == pytest.approx(30 / 40) and t["compliant_before"] == pytest.approx(20 / 40)
    assert t["p_new"] == pytest.approx(30 / 40) and t["p_new_if_compliant"] == pytest.approx(1.0)
    assert t["p_old_if_compliant"] == pytest.approx(0.0)
    none = tidy.behaviour_tracking(tidy.behaviour_outcomes(_bc([None] * 40, OLD, NEW))).set_index("model")
    assert none.loc["pooled", "compliant"] == 0 and np.isnan(none.loc["pooled", "p_new_if_compliant"])


def test_the_tracking_contrasts_by_hand():
    """A predictor that knows each new answer: P(new) = 1, P(old) = 0. A shuffled prediction is "b" with
    probability 30/40, so it equals a "b" item's new value with probability 0.75 and an "a" item's with 0.25:
    E[P(new)] = (30 x 0.75 + 10 x 0.25) / 40 = 0.625, and likewise E[P(old)] = (30 x 0.25 + 10 x 0.75) / 40 =
    0.375. So excess_new = 0.375, excess_old = -0.375, excess_new_minus_old = 0.75. The expectation is the
    permutation null's mean, computed exactly."""
    out = tidy.behaviour_outcomes(_bc(list(NEW), OLD, NEW))
    ex = freq.permutation_excess(out, n_boot=2000, seed=0).set_index(["model", "statistic"])
    assert ex.loc[("pooled", "excess_new"), "expected"] == pytest.approx(0.625)
    assert ex.loc[("pooled", "excess_new"), "estimate"] == pytest.approx(0.375)
    assert ex.loc[("pooled", "excess_old"), "estimate"] == pytest.approx(-0.375)
    r = ex.loc[("pooled", "excess_new_minus_old")]
    assert (r["observed"], r["expected"], r["estimate"]) == pytest.approx((1.0, 0.25, 0.75))
    assert 0 < r["low"] <= 0.75 <= r["high"]
    perm = freq.permutation_null(out, n_perm=2000, seed=0).set_index(["model", "statistic"])
    assert perm.loc[("pooled", "new_minus_old"), "null_mean"] == pytest.approx(0.25, abs=0.01)
    # one value everywhere: P(new) = 0.75, yet every contrast is 0 in every resample
    z = freq.permutation_excess(tidy.behaviour_outcomes(_bc(["b"] * 40, OLD, NEW)), n_boot=2000, seed=0)
    assert np.allclose(z[["estimate", "low", "high"]].to_numpy(), 0.0)
    # each item's old answer: it tracks the old behaviour, by the same amount the first one tracked the new
    z = freq.permutation_excess(tidy.behaviour_outcomes(_bc(list(OLD), OLD, NEW)), n_boot=2000, seed=0)
    assert z.set_index(["model", "statistic"]).loc[("pooled", "excess_new_minus_old"), "estimate"] == pytest.approx(-0.75)


def test_an_item_alone_in_its_cell_takes_the_mode_of_the_other_tasks_or_none():
    """Task k2 has one changed item: its guess comes from the same model and property in task k1 (all "b",
    so right for a "b" item); model m2's only item has no pool and no baseline, and is left out of the paired
    comparison."""
    k1 = _bc(["b"] * 3, ["a"] * 3, ["b"] * 3, task="k1")
    k2 = _bc(["b"], ["a"], ["b"], task="k2")
    m2 = _bc(["y"], ["x"], ["y"], model="m2")
    out = tidy.behaviour_outcomes(pd.concat([k1, k2, m2], ignore_index=True)).set_index(["model", "task"])
    assert out.loc[("m", "k2"), "loo_mode_new_pool"] == "tasks" and out.loc[("m", "k2"), "loo_mode_new"] == "b"
    assert out.loc[("m2", "k"), "loo_mode_new_pool"] == "none" and np.isnan(out.loc[("m2", "k"), "loo_mode_new_correct"])
    t = tidy.behaviour_tracking(out.reset_index()).set_index("model")
    assert t.loc["pooled", "n_loo_new"] == 4 and t.loc["pooled", "loo_mode_new"] == 1.0
    assert freq.paired_vs_mode(out.reset_index(), n_boot=2000, seed=0)["new"]["n"] == 4


def test_a_non_compliant_prediction_matches_neither_behaviour():
    meta = [None] * 10 + ["b"] * 30
    out = tidy.behaviour_outcomes(_bc(meta, OLD, NEW))
    assert (out.loc[:9, ["match_new", "match_old"]] == 0).all().all() and (out.loc[:9, "outcome"] == "neither").all()
    t = tidy.behaviour_tracking(out).set_index("model").loc["pooled"]
    assert t["p_new"] == pytest.approx(20 / 40) and t["p_old"] == pytest.approx(10 / 40)


@pytest.mark.slow
def test_the_behaviour_model_recovers_the_outcome_shares():
    import analysis.self_prediction.hierarchical as M

    rng = np.random.default_rng(0)
    truth = {"m0": [0.6, 0.25, 0.15], "m1": [0.3, 0.5, 0.2]}
    rows = [(m, f"task{k}", f"p{j}", f"{m}/task{k}/{i}", rng.choice(M.OUTCOMES, p=truth[m]))
            for m in truth for k in range(3) for i in range(40) for j in range(2)]
    df = pd.DataFrame(rows, columns=["model", "task", "property", "unit", "outcome"])
    idata = M.sample(M.behaviour_model(df), M.SamplerSettings(draws=400, tune=400, chains=2, seed=0))
    assert M.diagnostics(idata)["divergences"] == 0
    p = idata.posterior["p"].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
    for m, shares in truth.items():
        rows_m = (df["model"] == m).to_numpy()
        est = p[rows_m].mean(axis=0)  # (outcome, samples)
        for o in range(3):
            lo, hi = np.quantile(est[o], [0.03, 0.97])
            assert lo - 0.02 < shares[o] < hi + 0.02, (m, o)
    with pytest.raises(ValueError, match="outcomes"):
        M.behaviour_model(df.assign(outcome="maybe"))


def test_the_manuscript_says_when_the_null_cannot_test_and_where_the_matches_lie():
    from report.self_prediction.numbers import _behaviour_text

    behaviour = {
        "tracking": {"pooled": {"n": 158}},
        "permutation": {"pooled_p_new": {"p_value": None, "n_informative": 0},
                        "pooled_p_old": {"p_value": 0.0045, "n_informative": 28}},
        "vs_loo_mode": {"new": {"low": -60.0, "high": -50.0}, "old": {"low": -70.0, "high": -60.0}},
        "new_matches_by_property": {"first_character": 5, "first_word": 58, "is_even": 4},
        "excess": {"pooled_excess_new_minus_old": {"estimate": 5.0, "low": 1.0, "high": 9.0}},
    }
    text = _behaviour_text(behaviour, rope=2.0)
    assert "below its leave-one-out mode baseline" in text["behaviour_new_verdict"]
    assert text["behaviour_tracking_verdict"] == ("leave open whether they track the new behaviour more than the old "
                                                  "(the interval is not clear of the region of practical "
                                                  "equivalence, ±2 points)")
    behaviour["excess"]["pooled_excess_new_minus_old"].update(low=3.0)
    assert _behaviour_text(behaviour, rope=2.0)["behaviour_tracking_verdict"] == "track the new behaviour more than the old"
    assert "the permutation null cannot test it" in text["behaviour_new_verdict"]
    assert "beyond the permutation null" in text["behaviour_old_verdict"]
    assert "only 28 of the 158 changed item x property pairs" in text["behaviour_old_verdict"]
    assert text["behaviour_new_concentration"] == ("Of the 67 predictions that equal the new behaviour, 58 are on "
                                                   "one property, first_word (3 properties have any)")


def test_the_originals_computation_drops_non_compliant_predictions_and_pools_the_mode_over_tasks():
    """The labelled variant, counted by hand. Model m, one property, two tasks of 10 changed items each; 2
    predictions of each task are non-compliant, so 16 remain, 15 of them equal to the new value and 1 to the
    old. Their new values are 11 "a" and 5 "b" across both tasks: the mode pooled over tasks is "a", right on
    11/16 (a mode per task would be right on 5/8 + 8/8 = 13/16). Their old values are 11 "b" and 5 "a": 11/16.
    The main computation keeps all 20 items (15/20) with a mode per task ("b" 7/10 in k1, "a" 8/10 in k2:
    15/20). Model m2 has 4 items, all "x" -> "y", all predicted "y", with its own mode; the pooled row keeps each
    model's own baseline, 15/20, where one mode over both models ("a") would give 11/20. Model m3's only
    predictions are non-compliant: its rates are NaN and it adds nothing to the pooled row."""
    k1 = _bc([None, None, "b", "b", "b", "b", "b", "b", "a", "a"], ["a"] * 7 + ["b"] * 3, ["b"] * 7 + ["a"] * 3,
             task="k1")
    k2 = _bc(["a"] * 8 + [None, None], ["b"] * 8 + ["a"] * 2, ["a"] * 8 + ["b"] * 2, task="k2")
    m2 = _bc(["y"] * 4, ["x"] * 4, ["y"] * 4, model="m2")
    m3 = _bc([None, None], ["x", "x"], ["y", "y"], model="m3")
    out = tidy.behaviour_outcomes(pd.concat([k1, k2, m2, m3], ignore_index=True))
    o = tidy.behaviour_original(out).set_index("model")
    m = o.loc["m"]
    assert (m["n"], m["k_new"], m["k_old"]) == (16, 15, 1)
    assert m["p_new"] == pytest.approx(15 / 16) and m["p_old"] == pytest.approx(1 / 16)
    assert m["baseline_new"] == pytest.approx(11 / 16) and m["baseline_old"] == pytest.approx(11 / 16)
    assert m["low_new"] < m["p_new"] < m["high_new"]
    main = tidy.behaviour_tracking(out).set_index("model").loc["m"]
    assert main["p_new"] == pytest.approx(15 / 20) and main["loo_mode_new"] == pytest.approx(15 / 20)
    assert o.loc["m2", "baseline_new"] == 1.0 and o.loc["m2", "p_new"] == 1.0
    assert o.loc["m3", "n"] == 0 and np.isnan(o.loc["m3", "p_new"]) and np.isnan(o.loc["m3", "baseline_old"])
    pooled = o.loc["pooled"]
    assert (pooled["n"], pooled["k_new"]) == (20, 19)
    assert pooled["baseline_new"] == pytest.approx(15 / 20)


def test_the_originals_computation_pools_the_two_among_properties_into_one_mode():
    """The original renames its "is either of two options" properties to one before the modes
    (``rename_properties``). Counted by hand: among_a_or_c's new values are true x3, false x1 and
    among_b_or_d's false x6, so the pooled mode "false" is right on 7 of 10 where a mode per property would be
    right on 3 + 6 = 9; the old values (the opposite) give "true", right on 7 of 10. The main table keeps a
    mode per property (9 of 10)."""
    ac = _bc(["x"] * 4, ["false", "false", "false", "true"], ["true", "true", "true", "false"], prop="among_a_or_c")
    bd = _bc(["x"] * 6, ["true"] * 6, ["false"] * 6, prop="among_b_or_d")
    bd["item_id"] = [f"k-b{i}" for i in range(6)]
    out = tidy.behaviour_outcomes(pd.concat([ac, bd], ignore_index=True))
    m = tidy.behaviour_original(out).set_index("model").loc["m"]
    assert m["n"] == 10
    assert m["baseline_new"] == pytest.approx(7 / 10) and m["baseline_old"] == pytest.approx(7 / 10)
    assert tidy.behaviour_tracking(out).set_index("model").loc["m", "loo_mode_new"] == pytest.approx(9 / 10)
    # the paper figure's pooled bar: one mode over all the model's values, "false" new (7 of 10) and "true" old
    assert m["micro_baseline_new"] == pytest.approx(7 / 10) and m["micro_baseline_old"] == pytest.approx(7 / 10)


def test_the_paper_figures_pooled_bar_takes_one_mode_over_every_property():
    """Counted by hand: a word property whose new values are "a" x3 and a boolean one whose new values are
    "true" x5; per property each mode is right on every item (8 of 8), one mode over both ("true") on 5 of 8."""
    w = _bc(["a"] * 3, ["b"] * 3, ["a"] * 3, prop="first_character")
    t = _bc(["true"] * 5, ["false"] * 5, ["true"] * 5, prop="starts_with_vowel")
    t["item_id"] = [f"k-t{i}" for i in range(5)]
    out = tidy.behaviour_outcomes(pd.concat([w, t], ignore_index=True))
    m = tidy.behaviour_original(out).set_index("model").loc["m"]
    assert m["n"] == 8 and m["baseline_new"] == pytest.approx(1.0)
    assert m["micro_baseline_new"] == pytest.approx(5 / 8) and m["micro_baseline_old"] == pytest.approx(5 / 8)
