"""The null worlds of the verdict rules' false-positive simulation (analysis.self_prediction.null) and the
population estimands the headline is taken on (analysis.self_prediction.population)."""

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.null as N
import analysis.self_prediction.population as population
from analysis.self_prediction.simulate import simulate_directions
from analysis.self_prediction.tidy import CELL, with_cell

GROUPS = ["task", "property", CELL]


def _world(gap: float = 0.8, scale: float = 0.6, pair: bool = False) -> dict:
    w = {"alpha": 0.3, "f_target": {"m0": 0.0, "m1": -0.5}, "s_target": {"m0": -gap / 2, "m1": gap / 2},
         "sigma": {g: scale for g in GROUPS}, "tau": {g: scale for g in GROUPS}, "sigma_unit": 1.0}
    if pair:
        w["sigma_pair"] = {0: 0.5, 1: 0.3}
    return w


def _skeleton(items: int = 20) -> pd.DataFrame:
    df, _ = simulate_directions(seed=0, items=items, tasks=4, properties=3, weights=(1.5, 0.5))
    return with_cell(df)[["target", "predictor", "self", "unit", *GROUPS]]


def test_the_null_worlds_slopes():
    w = _world(gap=0.8)
    assert N.world_beta(w, "population_null") == 0.0
    # the weakest direction's population slope is exactly 0, the other one carries the gap
    beta = N.world_beta(w, "direction_null")
    assert sorted(beta + s for s in w["s_target"].values()) == pytest.approx([0.0, 0.8])
    with pytest.raises(ValueError, match="unknown null world"):
        N.world_beta(w, "nothing")


def test_a_simulated_world_keeps_the_design_and_is_seeded():
    sk = _skeleton()
    a = N.simulate(sk, _world(pair=True), 0.0, GROUPS, np.random.default_rng(1))
    b = N.simulate(sk, _world(pair=True), 0.0, GROUPS, np.random.default_rng(1))
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a.drop(columns="correct"), sk.drop(columns="correct", errors="ignore"))
    assert set(a["correct"].unique()) <= {0, 1}
    # no variation and a huge intercept: every prediction is right
    flat = {**_world(), "alpha": 30.0, "sigma": dict.fromkeys(GROUPS, 0.0), "tau": dict.fromkeys(GROUPS, 0.0)}
    assert N.simulate(sk, flat, 0.0, GROUPS, np.random.default_rng(0))["correct"].all()


def test_the_population_null_has_no_advantage_at_equal_skill_but_keeps_the_skill_gap():
    """Over many worlds of the population null, each direction's self-minus-cross accuracy has the sign of its
    slope deviation (the run's skill gap), and their equal-weight mean, the advantage at equal skill, is 0."""
    sk = _skeleton(items=10)
    diffs = {"m0": [], "m1": []}
    for r in range(300):
        y = N.simulate(sk, _world(gap=1.0), 0.0, GROUPS, np.random.default_rng(r))
        for t, g in y.groupby("target"):
            diffs[t].append(g.loc[g["self"] == 1, "correct"].mean() - g.loc[g["self"] == 0, "correct"].mean())
    m0, m1 = np.mean(diffs["m0"]), np.mean(diffs["m1"])
    se = np.hypot(np.std(diffs["m0"]), np.std(diffs["m1"])) / np.sqrt(300) / 2
    assert m0 < -0.05 and m1 > 0.05  # the gap: one direction below, one above
    assert abs((m0 + m1) / 2) < 4 * se + 0.01  # no advantage on average


def test_rates_carry_their_wilson_interval_and_the_limit():
    r = N.rate(np.array([True] + [False] * 39))
    assert r["rate"] == pytest.approx(0.025) and r["positives"] == 1 and r["reps"] == 40 and r["within"]
    assert 0 < r["low"] < 0.025 < r["high"] < 0.14
    assert not N.rate(np.array([True] * 3 + [False] * 37))["within"]  # 7.5% > 5%
    assert not N.rate(np.array([], dtype=bool))["within"]
    reps = pd.DataFrame({"world": ["population_null"] * 4 + ["direction_null"] * 2,
                         "headline_advantage": [True, False, False, False, False, False],
                         "population_verdict": ["positive", "inconclusive", "inconclusive", "negative",
                                                "positive", "inconclusive"],
                         "conditional_positive": [True, True, False, False, True, True],
                         "every_direction": [False] * 4 + [True, False],
                         "conditional_every_direction": [False] * 4 + [True, True],
                         "gate_passed": [True, True, True, True, True, True], "samplings": [1, 1, 2, 1, 1, 1]})
    s = N.summarise(reps)
    assert (s["headline"]["positives"], s["population"]["positives"], s["conditional"]["positives"]) == (1, 1, 2)
    assert (s["every_direction"]["positives"], s["every_direction"]["reps"]) == (1, 2)
    assert s["gate"]["population_null"] == {"passed": 4, "failed": 0, "resampled": 1}
    # a fit that failed the gate has no verdict: its row leaves the rates (and their replicates)
    failed = reps.assign(gate_passed=[False, True, True, True, True, True])
    s = N.summarise(failed)
    assert (s["headline"]["positives"], s["headline"]["reps"], s["conditional"]["positives"]) == (0, 3, 1)
    assert s["gate"]["population_null"] == {"passed": 3, "failed": 1, "resampled": 1}


def test_the_headline_estimand_is_a_new_task_and_a_new_run_where_there_are_runs():
    one = pd.DataFrame({"seed": [0, 0]})
    two = pd.DataFrame({"seed": [0, 1]})
    assert population.advantage_groups(one) == GROUPS
    assert population.advantage_groups(two) == GROUPS + ["object_model"]
    assert population.headline_factors(population.advantage_groups(two)) == ("task", "cell", "object_model")
    assert population.headline_key(GROUPS) == "new_task"
    assert population.headline_key(GROUPS + ["object_model"]) == "new_task_and_run"


def test_p_every_direction_asks_for_the_rope():
    d = {("a", "b"): np.array([0.01, 0.03, 0.05, 0.10]), ("b", "a"): np.array([0.05, 0.05, 0.01, 0.10])}
    assert population.p_every_direction(d, 0.0) == 1.0
    assert population.p_every_direction(d, 2.0) == 0.5  # draws 2 and 4 clear 2 points in both directions


@pytest.mark.slow
def test_one_replicate_applies_the_analysis_rules():
    """A replicate of the headline's world: fitted with the Bayesian model, through the analysis's gate, its
    verdicts are those of the analysis's rules (the headline is the rule on the population intervals; the
    conditional verdict on delta's). The worlds differ only in the data they simulate (tested above without a
    fit); every world's replicate goes through this same code."""
    from analysis.verdicts import verdict

    sk = _skeleton(items=8)
    settings = M.SamplerSettings(draws=500, tune=500, chains=4, seed=0, target_accept=0.9, target_accept_retry=0.99)
    for name in N.WORLDS[:1]:
        r = N.replicate(sk, _world(pair=False), name, GROUPS, 0, 2.0, settings, 0)
        assert r["world"] == name and r["rep"] == 0
        assert r["gate_passed"], r["gate_problems"]  # through the analysis's gate: r_hat, ESS, no divergence
        assert r["r_hat_max"] <= 1.01 and r["ess_bulk_min"] >= 400 and r["divergences"] == 0
        assert r["headline_advantage"] == (r["headline"] in N.ADVANTAGE)
        assert r["population_verdict"] in ("positive", "negative", "practically null", "inconclusive")
        assert r["conditional_positive"] == (r["conditional_low"] > 2.0)
        assert verdict(r["population_low"], 1e9, 2.0) in ("positive", "inconclusive")


def test_a_replicate_whose_fit_fails_the_gate_has_no_verdict(monkeypatch):
    """The analysis publishes no verdict from a fit that fails the convergence gate; neither does a replicate:
    it keeps the gate's answer and counts as no claim. Each replicate samples from its own seed."""
    import analysis.bayes as B

    seen = []

    def failing(model, settings, name):
        seen.append(settings.seed)
        raise B.ConvergenceError(f"the {name} model failed the convergence gate twice, from the same seed: ...",
                                 "bulk ESS 120 < 400", length_only=True, samplings=2)

    monkeypatch.setattr(B, "sample_gated", failing)
    sk = _skeleton(items=4)
    settings = M.SamplerSettings(draws=100, tune=100, chains=2, seed=7)
    r = N.replicate(sk, _world(pair=False), "population_null", GROUPS, 3, 2.0, settings, 0)
    assert not r["gate_passed"] and r["gate_problems"] == "bulk ESS 120 < 400" and r["samplings"] == 2
    assert not r["headline_advantage"] and not r["conditional_positive"] and not r["every_direction"]
    N.replicate(sk, _world(pair=False), "population_null", GROUPS, 4, 2.0, settings, 0)
    N.replicate(sk, _world(pair=False), "direction_null", GROUPS, 3, 2.0, settings, 0)
    assert len(set(seen)) == 3 and seen[0] == N.replicate_seed(0, "population_null", 3)


@pytest.mark.parametrize("module", N.REPLICATE_MODULES)
def test_an_edit_to_the_replicates_code_starts_fresh_shards(monkeypatch, module):
    from conftest import simulate_edit

    sk = _skeleton(items=4)
    settings = M.SamplerSettings(draws=100, tune=100, chains=2, seed=0)
    key = N.shard_fingerprint(_world(), GROUPS, 2.0, settings, sk)
    assert N.shard_fingerprint(_world(), GROUPS, 2.0, settings, sk) == key
    simulate_edit(monkeypatch, N, module)
    assert N.shard_fingerprint(_world(), GROUPS, 2.0, settings, sk) != key
