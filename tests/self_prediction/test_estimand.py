"""The identified advantage estimand (delta, gamma, directions) and the verdict rules."""

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.hierarchical as M

import analysis.self_prediction.predictive as P
from analysis.self_prediction.simulate import simulate_directions
from analysis.verdicts import headline, verdict
from reproduce.errors import DataError

FAST = M.SamplerSettings(draws=500, tune=500, chains=4, target_accept=0.95, seed=0)


def _fit(df):
    data = M.advantage_data(df, ["task", "property"])
    idata = M.sample(M.advantage_model(data), FAST)
    return data, idata, M.advantage_quantities(idata, data)


def test_verdicts_come_from_the_interval_and_the_rope():
    assert verdict(2.5, 9.0, 2.0) == "positive"
    assert verdict(-9.0, -2.5, 2.0) == "negative"
    assert verdict(-1.5, 1.9, 2.0) == "practically null"
    assert verdict(-0.5, 6.0, 2.0) == "inconclusive"  # includes zero: not evidence of absence
    assert verdict(1.0, 6.0, 2.0) == "inconclusive"  # above zero, not above the region
    assert headline("positive", ["positive", "positive"]) == "advantage in every direction"
    assert headline("positive", ["positive", "inconclusive"]) == "advantage on average, not in every direction"
    assert headline("practically null", ["negative", "positive"]) == "practically null"
    assert headline("inconclusive", []) == "inconclusive"


def test_the_advantage_model_needs_its_fixed_effects():
    df, _ = simulate_directions(items=4)
    data = M.to_cells(df, "self", ["task", "property"], "unit")
    with pytest.raises(ValueError, match="fixed effects"):
        M.advantage_model(data)


@pytest.mark.slow
def test_delta_is_recovered_when_skill_differs_and_targets_carry_unequal_weights():
    # model m0 is the better predictor of everyone (gamma != 0) and its answers carry 3x the trials: the
    # pooled trial-weighted difference is pulled towards m0's direction, delta is not
    df, truth = simulate_directions(seed=3, delta=0.4, skill=(0.5, -0.5), weights=(1.5, 0.5), items=30)
    data, idata, q = _fit(df)
    assert M.diagnostics(idata)["divergences"] == 0
    d, g = q["delta"], q["gamma"]
    assert np.quantile(d, M.Q_LOW) < truth["delta"] < np.quantile(d, M.Q_HIGH)
    assert np.quantile(g, M.Q_LOW) < truth["gamma"] < np.quantile(g, M.Q_HIGH)
    assert truth["trial_weighted"] > np.quantile(d, M.Q_HIGH)  # the confounded estimand misses delta
    for key, draws in q["directions"].items():
        assert np.quantile(draws, M.Q_LOW) < truth["directions"][key] < np.quantile(draws, M.Q_HIGH)
    # a new task: the same centre, an interval that carries the spread between tasks
    new = M.new_task_delta(idata, data, samples=100)
    width = lambda x: np.quantile(x, M.Q_HIGH) - np.quantile(x, M.Q_LOW)  # noqa: E731
    assert width(new) > width(d)
    assert abs(new.mean() - d.mean()) < 0.03
    # a factor named in `new` is drawn from its fitted scale instead of its observed levels: naming one more
    # (as the finetuning run's factor is named with several seeds) widens the interval again
    newer = M.new_task_delta(idata, data, new=("task", "cell", "property"), samples=100)
    assert width(newer) > width(new)
    # unit-level checks: data drawn from the model are reproduced ...
    u = P.unit_level_check(idata, data).set_index("statistic")
    assert set(u.index) == {"all_correct_self", "none_correct_self", "all_correct_cross", "none_correct_cross",
                            "disagreement"}
    assert u["covered"].sum() >= 4
    # ... and answers whose properties are all right or all wrong together are not
    from dataclasses import replace

    c = data.cells.copy()
    c["k"] = c.groupby(["unit", "self"])["k"].transform("first")
    flagged = P.unit_level_check(idata, replace(data, cells=c)).set_index("statistic")
    assert flagged.loc["all_correct_self", "observed"] > flagged.loc["all_correct_self", "rep_high"]
    assert flagged.loc["none_correct_cross", "observed"] > flagged.loc["none_correct_cross", "rep_high"]
    # the mode of reporting: one direction is an advantage, the other a reverse one
    signs = {k: np.sign(v.mean()) for k, v in q["directions"].items()}
    assert signs[("m0", "m1")] > 0 > signs[("m1", "m0")]


@pytest.mark.slow
def test_three_models_use_every_ordered_pair_and_identify_each_skill():
    df, truth = simulate_directions(seed=5, delta=0.4, skill=(0.6, 0.0, -0.6), items=25)
    data, idata, q = _fit(df)
    assert set(q["directions"]) == {(t, p) for t in ("m0", "m1", "m2") for p in ("m0", "m1", "m2") if t != p}
    assert "gamma" not in q
    d = q["delta"]
    assert np.quantile(d, M.Q_LOW) < truth["delta"] < np.quantile(d, M.Q_HIGH)
    skill = {k: v.mean() for k, v in q["skill"].items()}
    assert skill["m0"] > skill["m1"] > skill["m2"]
    covered = [np.quantile(v, M.Q_LOW) < truth["directions"][k] < np.quantile(v, M.Q_HIGH)
               for k, v in q["directions"].items()]
    assert sum(covered) >= 5  # 94% intervals: one miss in six is within chance


@pytest.mark.slow
def test_the_rescaled_priors_do_not_pile_up_at_the_extremes():
    df, _ = simulate_directions(seed=1, items=6)
    data = M.advantage_data(df, ["task", "property"])
    old = M.to_cells(df, "self", ["target", "task", "property"], "unit")
    new_prior = P.prior_cell_accuracy(M.advantage_model(data), data)
    old_prior = P.prior_cell_accuracy(M.contrast_model(old), old)
    from analysis.self_prediction.priors import PRIOR_EXTREME_MAX

    # the criterion the advantage priors were chosen by: few implied cell accuracies at the extremes
    assert new_prior["extreme_share"] < PRIOR_EXTREME_MAX
    mid = lambda d: d["density"][9:11]  # noqa: E731
    assert new_prior["density"][0] < 2 * min(mid(new_prior))  # no pile at the edge
    assert min(old_prior["density"][0], old_prior["density"][-1]) > max(mid(old_prior))  # the old U


@pytest.mark.slowest
def test_check_models_sbc_ranks_and_the_null_scenario(tmp_path):
    import analysis.self_prediction.recovery as checks

    st = M.SamplerSettings(draws=200, tune=200, chains=2, target_accept=0.95)
    ranks = checks.sbc(3, seed=0, settings=st, thin=49)
    assert set(ranks["rep"]) == {0, 1, 2} and ranks["rank"].between(0, 49).all()
    assert {"alpha", "beta", "gamma[target:0]", "sigma_unit"} <= set(ranks["parameter"])
    uni = checks.rank_uniformity(ranks)
    assert len(uni) == ranks["parameter"].nunique() and uni["p_value"].between(0, 1).all()
    checks.plot_ranks(ranks, tmp_path / "ranks.png")
    assert (tmp_path / "ranks.png").stat().st_size > 10_000
    # under the null, with a skill gap and 3:1 target weights, the rule calls no advantage, and delta is not
    # pulled towards the heavier target's direction the way the trial-weighted difference is
    rows = checks.scenario(3, 0.0, (0.5, -0.5), (1.5, 0.5), rope=2.0, settings=st, items=16)
    s = checks.summarise_scenario(rows, rope=2.0)
    assert s["false_positive_rate"] == 0.0 and s["every_direction_rate"] == 0.0
    assert abs(s["bias"]) < 0.5 * s["trial_weighted_bias"]


def test_common_support_keeps_the_cells_scored_in_both_arms_and_counts_what_it_left_out():
    """A cell with trials in one arm only (M1' gave no answer in the requested form there) has no observed
    counterpart in the other arm: the training effect's average is over the cells with both."""
    import analysis.self_prediction.hierarchical as M

    cells = pd.DataFrame({"cell": ["a", "a", "b", "c", "c"], "unit": ["u1", "u2", "u3", "u4", "u5"],
                          "trained": [0, 1, 0, 0, 1], "k": [1, 4, 2, 0, 3], "n": [5, 5, 7, 2, 4]})
    data = M.ContrastData(cells, "trained", ["cell"], "unit")
    design = cells.groupby(["cell", "unit"])["n"].sum().reset_index()
    p1, p0 = np.arange(10.0).reshape(5, 2), -np.arange(10.0).reshape(5, 2)
    (q1, q0, kept), left = M.common_support(data, (p1, p0, design), "cell")
    assert list(kept["cell"]) == ["a", "a", "c", "c"]
    assert np.array_equal(q1, p1[[0, 1, 3, 4]]) and np.array_equal(q0, p0[[0, 1, 3, 4]])
    assert left == {"cells": 2, "cells_total": 3, "cells_left_out": ["b"], "trials_left_out": {"0": 7, "1": 0},
                    "trials": {"0": 14, "1": 9}}
    with pytest.raises(DataError, match="share no cell"):
        M.common_support(M.ContrastData(cells[cells["cell"] == "b"], "trained", ["cell"], "unit"),
                         (p1[:1], p0[:1], design[design["cell"] == "b"]), "cell")


def test_one_variance_component_is_scaled_at_a_time():
    from analysis.self_prediction.priors import VARIANCE_COMPONENTS, scale_quantile

    p = M.ADVANTAGE_PRIORS
    assert VARIANCE_COMPONENTS == ("sigma", "tau", "unit", "pair")
    half = p.scaled_component("unit", 0.5)
    assert half.unit == 0.5 * p.unit and (half.sigma, half.tau, half.pair, half.nu) == (p.sigma, p.tau, p.pair, p.nu)
    assert p.scaled(2.0).pair == 2 * p.pair and p.scaled(2.0).nu == p.nu
    with pytest.raises(ValueError, match="variance component"):
        p.scaled_component("alpha", 2.0)
    # the HalfStudentT(3, 0.5) scales leave the committed run's fitted scales (1.0-1.4) inside their bulk
    assert scale_quantile(0.95, p.sigma, p.nu) > 1.5 > scale_quantile(0.95, 0.35, None)


def test_the_advantage_cells_carry_the_pairing_term_only_with_units():
    df, _ = simulate_directions(items=4)
    assert M.advantage_data(df, ["task", "property"]).pair
    assert not M.advantage_data(df, ["task", "property"], unit=None).pair
    assert not M.to_cells(df, "self", ["task"], "unit").pair  # the other contrast models keep one unit intercept
    with pytest.raises(ValueError, match="needs answer units"):
        M.to_cells(df, "self", ["task"], None, pair=True)


def _with_pairing(seed: int, sigma_pair: float, items: int = 40):
    """:func:`simulate_directions`' design, its outcomes redrawn with an intercept per answer unit x arm of
    scale ``sigma_pair`` beside the shared unit intercept: each predictor's properties of one answer go
    together more than the two predictors' do."""
    df, _ = simulate_directions(seed=seed, delta=0.4, items=items, properties=4, sigma_unit=0.5)
    rng = np.random.default_rng(seed)
    units = df["unit"].unique()
    shared = dict(zip(units, rng.normal(0, 0.5, len(units))))
    arm = {(u, s): rng.normal(0, sigma_pair) for u in units for s in (0, 1)}
    eta = (-0.2 + 0.4 * (df["self"] - 0.5) + df["unit"].map(shared)
           + np.array([arm[(u, s)] for u, s in zip(df["unit"], df["self"])]))
    return df.assign(correct=(rng.random(len(df)) < 1 / (1 + np.exp(-eta))).astype(int))


@pytest.mark.slow
def test_the_pairing_term_recovers_its_scale_and_the_answer_level_check_sees_it():
    df = _with_pairing(seed=7, sigma_pair=1.5)
    st = M.SamplerSettings(draws=400, tune=400, chains=2, target_accept=0.95, seed=0)
    paired = M.advantage_data(df, ["task", "property"])
    idata = M.sample(M.advantage_model(paired), st)
    s = idata.posterior["sigma_pair"].stack(sample=("chain", "draw")).to_numpy()  # (arm, samples)
    for arm in (0, 1):
        assert np.quantile(s[arm], M.Q_LOW) < 1.5 < np.quantile(s[arm], M.Q_HIGH)
    with_term = P.unit_level_check(idata, paired).set_index("statistic")
    assert with_term.loc[["all_correct_self", "all_correct_cross", "disagreement"], "covered"].all()
    # one shared unit intercept: each arm's all-right answers are too rare, and the two predictors disagree
    # on an answer more often in the replicates than in the data
    single = M.advantage_data(df, ["task", "property"], pair=False)
    without = P.unit_level_check(M.sample(M.advantage_model(single), st), single).set_index("statistic")
    assert not without.loc[["all_correct_self", "all_correct_cross", "disagreement"], "covered"].all()
    # the new-task advantage draws a new answer's arm intercepts: a finite share per posterior draw
    new = M.new_task_delta(idata, paired, samples=50)
    assert np.isfinite(new).all() and -1 < new.mean() < 1
