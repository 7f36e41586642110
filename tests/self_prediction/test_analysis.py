"""The statistics: one definition of the mode baseline and MAD (hand-computed examples), parameter
recovery on simulated data, frequentist and Bayesian agreement, the convergence gate, determinism."""

import numpy as np
import pandas as pd
import pytest

import analysis.bayes as bayes
import analysis.self_prediction.frequentist as freq
import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.predictive as P
import analysis.self_prediction.tidy as tidy
from analysis.self_prediction.simulate import simulate_predictions
from analysis.self_prediction.calibration import calibration_curve, mad, mad_bootstrap

FAST = M.SamplerSettings(draws=1000, tune=1000, chains=4, seed=3, target_accept=0.98)


# ----------------------------------------------------------------------------------- definitions
def test_mode_baseline_by_hand():
    rows = [  # target t1 on task k, property p: values a, a, b, (non-compliant); ties go to the smaller value
        ("t1", "k", "p", "i1", "a", True), ("t1", "k", "p", "i2", "a", True), ("t1", "k", "p", "i3", "b", True),
        ("t1", "k", "p", "i4", None, False),
        ("t2", "k", "p", "i1", "b", True), ("t2", "k", "p", "i2", "a", True),
    ]
    df = pd.DataFrame(rows, columns=["target", "task", "property", "item_id", "object_value", "object_compliant"])
    df = pd.concat([df.assign(predictor="x"), df.assign(predictor="y")])  # duplicates per predictor count once
    base = tidy.mode_baseline(df).set_index("object_model")  # object_model defaults to the target
    assert base.loc["t1", "mode_value"] == "a" and base.loc["t1", "mode_accuracy"] == pytest.approx(2 / 3)
    assert base.loc["t1", "n"] == 3  # the non-compliant answer has no ground truth
    assert base.loc["t2", "mode_value"] == "a" and base.loc["t2", "mode_accuracy"] == 0.5


def test_trained_rows_are_scored_against_the_self_trained_model_and_its_mode_baseline():
    """M1' answers differently from M1: a trained row's correctness, mode baseline and answer unit come from
    the behaviour it is scored against (``object_model``), and ``ground_truth="base"`` gives the sensitivity
    variant from the same predictions."""
    common = {"target": "m", "task": "k", "family": "f", "property": "p", "meta_compliant": True}
    untrained = pd.DataFrame([{**common, "predictor": "m", "kind": "self", "item_id": i, "meta_value": "a",
                               "object_value": "a", "object_compliant": True} for i in ("i1", "i2", "i3")])
    rows = []
    for truth, om, values in (("trained", "m+self-s0", ["b", "b", "a"]), ("base", "m", ["a", "a", "a"])):
        for kind, pr in (("self", "m"), ("cross", "x")):
            for i, v in zip(("i1", "i2", "i3"), values):
                rows.append({**common, "predictor": pr, "kind": kind, "item_id": i, "meta_value": "b",
                             "object_value": v, "object_compliant": True, "object_model": om, "ground_truth": truth,
                             "seed": 0, "run": f"{pr}__on__m__s0", "n_examples": 10, "scaling": False})
    trained = pd.DataFrame(rows)
    pred = tidy.predictions(untrained, trained)
    t = pred[pred["condition"] == "trained"]
    assert set(t["object_model"]) == {"m+self-s0"} and set(t["ground_truth"]) == {"trained"}
    assert list(t["correct"]) == [1, 1, 0, 1, 1, 0]  # "b" is right against M1', wrong against M1
    assert set(t["mode_value"]) == {"b"} and t["mode_correct"].mean() == pytest.approx(2 / 3)  # M1''s mode
    assert t["unit"].iloc[0] == "m+self-s0/k/i1" and pred.loc[pred["condition"] == "untrained", "unit"].iloc[0] == "m/k/i1"
    u = pred[pred["condition"] == "untrained"]
    assert set(u["mode_value"]) == {"a"} and set(u["ground_truth"]) == {"base"} and u["seed"].isna().all()
    base = tidy.predictions(untrained, trained, ground_truth="base")
    tb = base[base["condition"] == "trained"]
    assert set(tb["object_model"]) == {"m"} and tb["correct"].sum() == 0 and tb["mode_correct"].mean() == 1.0
    with pytest.raises(ValueError, match="ground_truth"):
        tidy.predictions(untrained, trained, ground_truth="nonsense")


def test_non_compliant_predictions_count_as_wrong_and_unscored_items_are_dropped():
    meta = pd.DataFrame({
        "predictor": "m", "target": "m", "kind": "self", "task": "k", "family": "f", "property": "p",
        "item_id": ["i1", "i2", "i3", "i4"], "meta_value": ["a", None, "b", "a"],
        "meta_compliant": [True, False, True, True], "object_value": ["a", "a", "a", None],
        "object_compliant": [True, True, True, False]})
    pred = tidy.predictions(meta)
    assert list(pred["item_id"]) == ["i1", "i2", "i3"] and list(pred["correct"]) == [1, 0, 0]
    acc = tidy.accuracy_table(pred, ["kind"]).iloc[0]
    assert acc["accuracy"] == pytest.approx(1 / 3) and acc["compliance"] == pytest.approx(2 / 3)
    assert acc["wilson_low"] < 1 / 3 < acc["wilson_high"]


@pytest.mark.parametrize("prop, response, target, expected", [
    ("among_a_or_c", "A) Paris", None, "false"),  # the original compares the whole response
    ("among_a_or_c", "c", None, "true"),
    ("among_b_or_d", "The answer is B", None, "false"),
    ("first_character", "'dog'", None, "'"),  # a punctuation mark is a character there
    ("second_character", "a", None, "nan"),  # None, written "None", reads back from the CSV as missing
    ("third_character", "Dog", None, "g"),
    ("first_word", "Cat, dog", None, "cat,"),  # no punctuation stripped from the object value
    ("second_word", "one", None, "nan"),
    ("third_word", "a b  C d", None, "c"),
    ("first_word", "null and void", None, "nan"),  # a value pandas reads as missing
    ("first_word", "NA", None, "nan"),  # a response pandas reads as missing is "nan" to the function
    ("first_character", "", None, "n"),
    ("starts_with_vowel", "Apple", None, "true"),
    ("starts_with_vowel", "1 apple", None, "false"),
    ("is_even", "2024", None, "true"),
    ("is_even", "The year 2024", None, "nan"),  # float() of the whole response fails
    ("is_even", "7.0", None, "false"),
    ("ethical_stance", "A", "A", "true"),  # matches_target, on the cleaned response
    ("ethical_stance", "A", "B", "false"),
    ("ethical_stance", "(B)", "B", "true"),
    ("ethical_stance", "**A**", "A", "true"),  # the package reads no letter here
    ("ethical_stance", "A) I would", "A", "false"),
    ("ethical_stance", "I would not", "A", "false"),
])
def test_the_originals_property_functions(prop, response, target, expected):
    from analysis.self_prediction.original import object_value

    assert object_value(prop, response, target) == expected


def test_the_originals_answer_cleaning():
    from analysis.self_prediction.original import clean_answer

    assert clean_answer(' "True." ') == "true"
    # the punctuation goes first, so a prefix (each ends in a colon) never matches: the original's order
    assert clean_answer("Answer: b") == clean_answer("answer : b") == "answer b"
    assert clean_answer("Hello\n  world!") == "hello world"
    assert clean_answer("'") == ""
    # answers pandas reads as missing are empty: never equal to an object value
    assert clean_answer("None") == clean_answer("NA") == clean_answer("") == ""


def test_the_stance_option_comes_from_the_items():
    from analysis.self_prediction.original import object_value, stance_targets
    from reproduce.self_prediction.task_data import load_task

    targets = stance_targets(["survival_instinct", "animals"])
    items = load_task("survival_instinct").items
    assert len(targets) == len(items) and set(targets.values()) <= {"A", "B"}
    assert all(task == "survival_instinct" for task, _ in targets)
    with pytest.raises(ValueError, match="option_matching_ethical_stance"):
        object_value("ethical_stance", "A")


def test_the_originals_scoring_by_hand():
    """The labelled variant scored as the original's code: object answers "A) Paris", "C", "B", "I think"
    (among_a_or_c: the package reads A, C, B and nothing; the original compares the whole response: false,
    true, false, false), predictions "true", "True.", "false", "false it is". The package scores i1-i3:
    right on 3 of 3, mode "true" (2 of 3). The original scores all four: i1 is now wrong ("false" was the
    answer), i2 and i3 right, i4 wrong (a several-word answer): 2 of 4; its mode is "false" (3 of 4)."""
    from analysis.self_prediction.original import object_responses

    meta = pd.DataFrame({
        "predictor": "m", "target": "m", "kind": "self", "task": "k", "family": "f", "property": "among_a_or_c",
        "item_id": ["i1", "i2", "i3", "i4"], "meta_response": ["true", "True.", "false", "false it is"],
        "meta_value": ["true", "true", "false", "false"], "meta_compliant": True,
        "object_value": ["true", "true", "false", None], "object_compliant": [True, True, True, False]})
    objects = object_responses([pd.DataFrame({"model": "m", "task": "k", "item_id": ["i1", "i2", "i3", "i4"],
                                              "response": ["A) Paris", "C", "B", "I think"]})])
    main = tidy.predictions(meta)
    assert list(main["correct"]) == [1, 1, 1] and main["mode_correct"].mean() == pytest.approx(2 / 3)
    orig = tidy.predictions(meta, objects=objects)
    assert list(orig["item_id"]) == ["i1", "i2", "i3", "i4"]
    assert list(orig["object_value"]) == ["false", "true", "false", "false"]
    assert list(orig["meta_value"]) == ["true", "true", "false", "false it is"]
    assert list(orig["correct"]) == [0, 1, 1, 0]
    assert set(orig["mode_value"]) == {"false"} and orig["mode_correct"].mean() == pytest.approx(3 / 4)
    with pytest.raises(ValueError, match="no object-level response"):
        tidy.predictions(meta, objects=objects.iloc[:2])
    two = pd.DataFrame({"model": "m", "task": "k", "item_id": ["i1", "i1"], "response": ["A", "B"]})
    with pytest.raises(ValueError, match="two object-level responses"):
        object_responses([two])


def test_mad_by_hand():
    # 10 points, one per bin: MAD is the mean absolute difference x100
    o = np.linspace(0.05, 0.95, 10)
    m = o + np.array([0.1, -0.1] * 5)
    assert mad(o, m) == pytest.approx(10.0)
    # 20 points, two per bin, sorted by object probability; bin means are compared
    o = np.repeat(np.linspace(0.05, 0.95, 10), 2)
    m = o.copy()
    m[::2] += 0.2  # one point of each bin is 0.2 too high: each bin's mean is off by 0.1
    assert mad(o, m) == pytest.approx(10.0)
    assert mad(o, o) == 0.0
    curve = calibration_curve(o, m)
    assert list(curve["n"]) == [2] * 10 and curve["object_prob"].is_monotonic_increasing
    with pytest.raises(ValueError, match="at least 10 points"):
        mad(o[:5], m[:5])


def test_calibration_pairs_take_the_top_three_sampled_behaviours():
    cal = pd.DataFrame([{
        "condition": "trained", "predictor": "m", "target": "m", "kind": "self", "task": "k", "property": "p",
        "item_id": "i", "options": ["a", "b", "c", "d", "e"], "object_counts": [1, 5, 0, 2, 2], "n_compliant": 10,
        "meta_probs": [0.1, 0.5, 0.1, 0.2, 0.1]}])
    pairs = tidy.calibration_pairs(cal)
    assert list(pairs["value"]) == ["b", "d", "e"]  # ties by option order; zero counts never
    assert list(pairs["object_prob"]) == [0.5, 0.2, 0.2] and list(pairs["meta_prob"]) == [0.5, 0.2, 0.1]
    cal["object_probs"] = [[0.1, 0.5, 0.0, 0.2, 0.2]]
    err = tidy.calibration_errors(cal)
    assert err["error"].iloc[0] == pytest.approx(0.5 * (0 + 0 + 0.1 + 0 + 0.1))


def test_mad_bootstrap_interval_contains_the_estimate():
    rng = np.random.default_rng(0)
    pairs = pd.DataFrame({"target": "m", "task": "k", "item_id": [f"i{j // 2}" for j in range(200)],
                          "object_prob": rng.random(200), "meta_prob": rng.random(200)})
    r = mad_bootstrap(pairs, 2000, seed=0)
    assert r["low"] <= r["mad"] <= r["high"] and r["items"] == 100


def test_mad_bootstrap_resamples_an_item_once_under_every_seed():
    """The same items under a second self-trained model (another seed) are the same draws of the items: with
    identical points there, resampling items together leaves the MAD and its interval exactly as they were,
    where resampling (model, item) units apart would count each item twice and narrow the interval."""
    rng = np.random.default_rng(1)
    pairs = pd.DataFrame({"target": "m", "object_model": "m+self-s0", "task": "k",
                          "item_id": [f"i{j // 3}" for j in range(150)],
                          "object_prob": rng.random(150), "meta_prob": rng.random(150)})
    one = mad_bootstrap(pairs, 2000, seed=0)
    two = mad_bootstrap(pd.concat([pairs, pairs.assign(object_model="m+self-s1")], ignore_index=True), 2000, seed=0)
    assert two["items"] == one["items"] == 50 and two["points"] == 2 * one["points"]
    assert (two["mad"], two["low"], two["high"]) == pytest.approx((one["mad"], one["low"], one["high"]), abs=1e-9)


def test_bootstrap_refuses_too_few_resamples():
    df, _ = simulate_predictions(items=5)
    with pytest.raises(ValueError, match="at least 2000"):
        freq.cluster_bootstrap_difference(df, n_boot=200)


# ---------------------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def recovery():
    df, truth = simulate_predictions(seed=11, beta=0.6, items=20)
    data = M.to_cells(df, "self", ["target", "task", "property"], "unit")
    model = M.contrast_model(data)
    idata = M.sample(model, FAST)
    return df, truth, data, model, idata


@pytest.mark.slow
def test_parameter_recovery_on_simulated_data(recovery):
    df, truth, data, model, idata = recovery
    M.check_convergence(idata, "recovery")  # passes the gate
    eff = M.marginal_effects(idata, data).iloc[0]
    assert eff["low"] < truth < eff["high"]  # the 94% interval covers the true advantage
    assert eff["p_positive"] > 0.97 and truth > 0.08
    raw = df[df.self == 1].correct.mean() - df[df.self == 0].correct.mean()
    assert abs(eff["mean"] - raw) < 0.03


@pytest.mark.slow
def test_frequentist_and_bayesian_estimates_agree(recovery):
    df, truth, data, model, idata = recovery
    eff = M.marginal_effects(idata, data).iloc[0]
    boot = freq.cluster_bootstrap_difference(df, seed=0)
    glm = freq.glm_cluster(df)
    for lo, est, hi in ((boot["low"], boot["estimate"], boot["high"]), (glm["ame_low"], glm["ame"], glm["ame_high"])):
        assert lo < eff["mean"] < hi and eff["low"] < est < eff["high"]
        assert lo < truth < hi


@pytest.mark.slow
def test_prior_and_posterior_predictive_checks(recovery):
    df, truth, data, model, idata = recovery
    prior = P.prior_predictive_accuracy(model, data)
    assert prior["q05"] < 0.2 and prior["q95"] > 0.8 and prior["extreme_share"] < 0.05  # weak, not extreme
    ppc = P.posterior_predictive_check(idata, data)
    assert len(ppc) == 2 * 3 * 3 * 2 and ppc["covered"].mean() > 0.8
    assert (ppc.groupby("self")["observed"].sum().sort_index().to_list()
            == df.groupby("self")["correct"].sum().sort_index().to_list())


@pytest.mark.slow
def test_the_gate_trips_on_a_deliberately_bad_fit(monkeypatch):
    df, _ = simulate_predictions(seed=2, items=10)
    data = M.to_cells(df, "self", ["target", "task", "property"], "unit")
    sampled = []
    sample = M.sample
    monkeypatch.setattr(bayes, "sample", lambda model, settings: sampled.append(settings.draws) or sample(model, settings))
    # too short and badly tuned: it misses on r_hat and ESS alone, so it is sampled once more with twice the
    # draws, misses again, and the error names both fits and settings beyond the longer one
    with pytest.raises(M.ConvergenceError, match="failed the convergence gate twice, from the same seed: with 100 "
                       "draws at target acceptance 0.6 .*bulk ESS") as err:
        M.sample_gated(M.contrast_model(data), M.SamplerSettings(draws=100, tune=100, chains=2, seed=0,
                                                                 target_accept=0.6), "advantage")
    assert sampled == [100, 200] and err.value.samplings == 2  # the null simulation counts these
    assert "analysis.draws and analysis.tune above 200 and 200" in str(err.value)
    assert "ESS" in err.value.problems and err.value.problems in str(err.value)


def test_a_fit_that_misses_the_gate_is_sampled_once_more_with_twice_the_draws(monkeypatch):
    seen = []
    monkeypatch.setattr(bayes, "sample", lambda model, settings: seen.append(settings) or settings.draws)

    def gate(idata, name):  # fits of fewer than 1500 draws miss the gate on ESS; of 5000, on divergences
        if idata == 5000:
            raise M.ConvergenceError("... 3 divergent transitions ...", "3 divergent transitions", False, True)
        if idata < 1500:
            raise M.ConvergenceError("the m model failed the convergence gate: tail ESS 392 < 400 (worst: s) ...",
                                     "tail ESS 392 < 400 (worst: s)", True)
        return {"draws": idata}
    monkeypatch.setattr(bayes, "check_convergence", gate)
    idata, diag = M.sample_gated("model", M.SamplerSettings(draws=1000, tune=500, seed=7), "m")
    assert idata == 2000 and [(s.draws, s.tune, s.seed) for s in seen] == [(1000, 500, 7), (2000, 1000, 7)]
    assert diag == {"draws": 2000, "refit": "tail ESS 392 < 400 (worst: s)", "target_accept": 0.98}
    seen.clear()  # a fit that passes is sampled once and its diagnostics say nothing of a refit
    assert M.sample_gated("model", M.SamplerSettings(draws=1600), "m") == (1600, {"draws": 1600,
                                                                                  "target_accept": 0.98})
    assert len(seen) == 1
    seen.clear()  # divergences are not cured by longer chains, and with no retry's target acceptance they stop
    with pytest.raises(M.ConvergenceError, match="divergent"):
        M.sample_gated("model", M.SamplerSettings(draws=5000), "m")
    assert len(seen) == 1
    seen.clear()  # nor with a retry's target acceptance no higher than the first
    with pytest.raises(M.ConvergenceError, match="divergent"):
        M.sample_gated("model", M.SamplerSettings(draws=5000, target_accept=0.99, target_accept_retry=0.99), "m")
    assert len(seen) == 1


def test_a_fit_with_divergences_is_sampled_once_more_at_the_retrys_target_acceptance(monkeypatch):
    seen = []
    monkeypatch.setattr(bayes, "sample", lambda model, settings: seen.append(settings) or settings)

    def gate(fit, name):  # divergences below target acceptance 0.99; too short below 2000 draws if `short`
        problems = []
        if fit.target_accept < 0.99:
            problems.append("5 divergent transitions")
        if short and fit.draws < 2000:
            problems.insert(0, "bulk ESS 300 < 400 (worst: z)")
        if problems:
            raise M.ConvergenceError("the m model failed ...", "; ".join(problems),
                                     length_only=problems == ["bulk ESS 300 < 400 (worst: z)"],
                                     divergent=fit.target_accept < 0.99)
        return {"draws": fit.draws}
    monkeypatch.setattr(bayes, "check_convergence", gate)
    first = M.SamplerSettings(draws=1000, tune=500, seed=3, target_accept=0.9, target_accept_retry=0.99)
    short = False
    idata, diag = M.sample_gated("model", first, "m")
    assert [(s.target_accept, s.draws, s.seed) for s in seen] == [(0.9, 1000, 3), (0.99, 1000, 3)]
    assert diag == {"draws": 1000, "target_accept": 0.99, "diverged": "5 divergent transitions at target acceptance 0.9"}
    # divergent and too short: the smaller steps first, then the longer chains, each once
    seen.clear()
    short = True
    idata, diag = M.sample_gated("model", first, "m")
    assert [(s.target_accept, s.draws, s.tune) for s in seen] == [(0.9, 1000, 500), (0.99, 1000, 500),
                                                                   (0.99, 2000, 1000)]
    assert diag == {"draws": 2000, "target_accept": 0.99, "refit": "bulk ESS 300 < 400 (worst: z)",
                    "diverged": "bulk ESS 300 < 400 (worst: z); 5 divergent transitions at target acceptance 0.9"}
    # too short first, then divergent at the longer chains: each second sampling records what it answered
    monkeypatch.setattr(bayes, "check_convergence", lambda fit, name: gate(fit, name) if fit.draws >= 2000 else (
        _ for _ in ()).throw(M.ConvergenceError("...", "bulk ESS 300 < 400 (worst: z)", length_only=True)))
    seen.clear()
    short = False
    idata, diag = M.sample_gated("model", first, "m")
    assert [(s.target_accept, s.draws) for s in seen] == [(0.9, 1000), (0.9, 2000), (0.99, 2000)]
    assert diag == {"draws": 2000, "target_accept": 0.99, "refit": "bulk ESS 300 < 400 (worst: z)",
                    "diverged": "5 divergent transitions at target acceptance 0.9"}
    # a fit that still diverges at the retry's target acceptance stops, naming both fits
    monkeypatch.setattr(bayes, "check_convergence", lambda fit, name: (_ for _ in ()).throw(
        M.ConvergenceError("...", "2 divergent transitions", False, True)))
    seen.clear()
    with pytest.raises(M.ConvergenceError, match=r"twice, from the same seed: with 1000 draws at target acceptance "
                       r"0.9 \(2 divergent transitions\), then with 1000 draws at target acceptance 0.99 "
                       r"\(2 divergent transitions\).*analysis.target_accept_retry closer to 1"):
        M.sample_gated("model", first, "m")
    assert len(seen) == 2


def test_the_gate_says_whether_longer_chains_could_pass():
    import arviz as az

    rng = np.random.default_rng(0)
    stuck = az.from_dict(posterior={"mu": rng.normal(size=(4, 50)) + np.arange(4)[:, None]},  # chains disagree
                         sample_stats={"diverging": np.zeros((4, 50), dtype=bool)})
    with pytest.raises(M.ConvergenceError) as err:
        M.check_convergence(stuck, "stuck")
    assert err.value.length_only and "r_hat" in err.value.problems and not err.value.divergent
    diverging = az.from_dict(posterior={"mu": rng.normal(size=(4, 500))},
                             sample_stats={"diverging": np.eye(4, 500, dtype=bool)})
    with pytest.raises(M.ConvergenceError, match="4 divergent") as err:
        M.check_convergence(diverging, "diverging")
    assert not err.value.length_only and err.value.divergent
    # divergences beside a low E-BFMI (an energy that wanders like a random walk): smaller steps are no cure
    wandering = az.from_dict(posterior={"mu": rng.normal(size=(4, 500))},
                             sample_stats={"diverging": np.eye(4, 500, dtype=bool),
                                           "energy": np.cumsum(rng.normal(size=(4, 500)), axis=1)})
    with pytest.raises(M.ConvergenceError, match="E-BFMI .* 4 divergent") as err:
        M.check_convergence(wandering, "wandering")
    assert not err.value.length_only and not err.value.divergent


@pytest.mark.slow
def test_counts_and_rows_give_the_same_posterior_and_sampling_is_deterministic():
    df, _ = simulate_predictions(seed=4, items=15)
    counts = M.to_cells(df, "self", ["task", "property"])  # no unit effect: rows aggregate to counts
    rows = M.to_cells(df, "self", ["task", "property"], aggregate=False)
    assert counts.cells["n"].sum() == len(rows.cells) == len(df) and len(counts.cells) == 3 * 3 * 2
    s = M.SamplerSettings(draws=500, tune=500, chains=2, seed=5)
    a = M.sample(M.contrast_model(counts), s)
    again = M.sample(M.contrast_model(counts), s)
    np.testing.assert_array_equal(a.posterior["beta"].values, again.posterior["beta"].values)  # same seed, same draws
    b = M.sample(M.contrast_model(rows), s)
    ea, eb = M.marginal_effects(a, counts).iloc[0], M.marginal_effects(b, rows).iloc[0]
    assert abs(ea["mean"] - eb["mean"]) < 0.01 and abs(ea["low"] - eb["low"]) < 0.02


# ------------------------------------------------------------------------------ the models' log densities
def _normal(x, sd):
    from scipy.stats import norm

    return float(np.sum(norm.logpdf(x, 0, sd)))


def _half_normal(x, sd):
    from scipy.stats import halfnorm

    return float(np.sum(halfnorm.logpdf(x, scale=sd)))


def _point(model, seed):
    """A random point of the model's value variables (log scales for the positive ones), and the same point as
    the variables themselves."""
    rng = np.random.default_rng(seed)
    values = {k: np.asarray(v + rng.normal(0, 0.7, np.shape(v))) for k, v in model.initial_point().items()}
    return values, {k.removesuffix("_log__"): (np.exp(v) if k.endswith("_log__") else v) for k, v in values.items()}


@pytest.mark.slow
def test_the_contrast_model_is_the_documented_hierarchical_binomial():
    """The model's log density (vector-valued scales and effects, a design matrix, a hand-written binomial)
    equals the module docstring's model written out with scipy, term by term."""
    from scipy.stats import binom

    df, _ = simulate_predictions(seed=6, items=6)
    data = M.to_cells(df.assign(cell=df["target"] + "|" + df["task"]), "self", ["target", "task", "property", "cell"],
                      "unit")
    model = M.contrast_model(data)
    values, p = _point(model, 1)
    c, groups = data.cells, data.groups
    expected = _normal(p["alpha"], 1.5) + _normal(p["beta"], 1.0) + _half_normal(p["sigma_unit"], 1.0)
    expected += _normal(p["z_unit"], 1.0) + _normal(p["z"], 1.0) + _normal(p["w"], 1.0)
    expected += _half_normal(p["sigma"], 1.0) + _half_normal(p["tau"], 0.5)
    eta = p["alpha"] + p["beta"] * c["self"].to_numpy(float)
    start = 0
    for j, g in enumerate(groups):
        levels = sorted(c[g].unique())
        idx = pd.Categorical(c[g], categories=levels).codes
        a, b = p["sigma"][j] * p["z"][start:start + len(levels)], p["tau"][j] * p["w"][start:start + len(levels)]
        eta = eta + a[idx] + b[idx] * c["self"].to_numpy(float)
        start += len(levels)
    eta = eta + p["sigma_unit"] * p["z_unit"][pd.Categorical(c["unit"], categories=sorted(c["unit"].unique())).codes]
    expected += float(np.sum(binom.logpmf(c["k"], c["n"], 1 / (1 + np.exp(-eta)))))
    got = float(model.compile_logp(jacobian=False)(values))
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.slow
def test_the_calibration_model_is_a_beta_regression():
    from scipy.stats import beta as beta_dist
    from scipy.stats import gamma

    rng = np.random.default_rng(2)
    errors = pd.DataFrame({"target": rng.choice(["m1", "m2"], 80), "task": rng.choice(["k1", "k2", "k3"], 80),
                           "property": "p", "self": rng.integers(0, 2, 80), "unit": [f"u{i // 2}" for i in range(80)],
                           "error": np.r_[rng.random(78), 0.0, 1.0]})  # clipped to [0.001, 0.999]
    model = M.calibration_model(errors, ["target", "task"])
    values, p = _point(model, 3)
    eta = p["alpha"] + p["beta"] * errors["self"].to_numpy(float)
    start = 0
    for j, g in enumerate(["target", "task"]):
        levels = sorted(errors[g].unique())
        idx = pd.Categorical(errors[g], categories=levels).codes
        eta = eta + (p["sigma"][j] * p["z"][start:start + len(levels)])[idx]
        eta = eta + (p["tau"][j] * p["w"][start:start + len(levels)])[idx] * errors["self"].to_numpy(float)
        start += len(levels)
    eta = eta + p["sigma_unit"] * p["z_unit"][pd.Categorical(errors["unit"], categories=sorted(errors["unit"].unique())).codes]
    mu, phi = 1 / (1 + np.exp(-eta)), p["phi"]
    y = np.clip(errors["error"].to_numpy(float), 1e-3, 1 - 1e-3)
    expected = (_normal(p["alpha"], 1.5) + _normal(p["beta"], 1.0) + _half_normal(p["sigma"], 1.0)
                + _half_normal(p["tau"], 0.5) + _normal(p["z"], 1.0) + _normal(p["w"], 1.0)
                + _half_normal(p["sigma_unit"], 1.0) + _normal(p["z_unit"], 1.0)
                + float(gamma.logpdf(phi, 2.0, scale=1 / 0.1)) + float(np.sum(beta_dist.logpdf(y, mu * phi, (1 - mu) * phi))))
    assert float(model.compile_logp(jacobian=False)(values)) == pytest.approx(expected, rel=1e-10)


@pytest.mark.slow
def test_the_gate_reads_the_diagnostics_az_summary_shows(recovery):
    import arviz as az

    df, truth, data, model, idata = recovery
    free = M.free_variables(idata)
    assert {"alpha", "beta", "sigma", "tau", "z", "w", "sigma_unit", "z_unit"} == set(free)
    s = az.summary(idata, var_names=free, kind="diagnostics")
    d = M.diagnostics(idata)
    assert d["r_hat_max"] == s["r_hat"].max() and d["ess_bulk_min"] == s["ess_bulk"].min()
    assert d["worst_r_hat"] == s["r_hat"].idxmax() and d["worst_ess"] == s["ess_bulk"].idxmin()
    assert d["ess_tail_min"] == s["ess_tail"].min() and d["worst_ess_tail"] == s["ess_tail"].idxmin()
    assert d["bfmi_min"] == pytest.approx(float(np.min(az.bfmi(idata))), abs=1e-3)
    steps = idata.sample_stats["n_steps"].values  # reported, not gated: the trajectory length per draw
    assert d["leapfrog_steps_mean"] == pytest.approx(steps.mean(), abs=0.05)
    assert d["tree_depth_max_share"] == pytest.approx(np.mean(steps == 1023), abs=1e-3)
    assert steps.max() <= 1023 and d["max_tree_depth"] == 10  # the tree depth is capped at 10, and recorded


@pytest.mark.slow
def test_the_gate_covers_every_free_variable_and_trips_on_tail_ess_and_bfmi(recovery, monkeypatch):
    df, truth, data, model, idata = recovery
    from types import SimpleNamespace

    fake = SimpleNamespace(posterior=SimpleNamespace(data_vars=["phi", "a_task", "f_target", "s_target", "p", "gamma"]))
    assert M.free_variables(fake) == ["phi", "gamma"]  # precision and slope parameters are gated too
    good = M.diagnostics(idata)
    for patch, match in (({"ess_tail_min": 120.0}, "tail ESS 120"), ({"bfmi_min": 0.1}, "E-BFMI 0.10")):
        monkeypatch.setattr(bayes, "diagnostics", lambda i, p=patch: {**good, **p})
        with pytest.raises(M.ConvergenceError, match=match):
            M.check_convergence(idata, "recovery")


def test_the_cluster_bootstrap_resamples_as_one_call_per_resample():
    """The vectorised resampling draws the very numbers of ``n_boot`` sequential ``rng.integers`` calls."""
    df, _ = simulate_predictions(seed=8, items=10)
    got = freq.cluster_bootstrap_difference(df, seed=4)
    codes, _ = pd.factorize(df["unit"], sort=True)
    m, xs, ys = codes.max() + 1, df["self"].to_numpy().astype(bool), df["correct"].to_numpy(float)
    rng = np.random.default_rng(4)
    boot = []
    for _ in range(2000):
        w = np.bincount(rng.integers(0, m, m), minlength=m)[codes]
        boot.append((w * ys)[xs].sum() / w[xs].sum() - (w * ys)[~xs].sum() / w[~xs].sum())
    assert got["low"] == pytest.approx(np.quantile(boot, 0.025), abs=1e-12)
    assert got["high"] == pytest.approx(np.quantile(boot, 0.975), abs=1e-12)


def test_wilson_refuses_a_bound_that_misses_by_more_than_rounding(monkeypatch):
    import statsmodels.stats.proportion as sp

    assert all(np.isnan(freq.wilson(0, 0)))
    monkeypatch.setattr(sp, "proportion_confint", lambda k, n, alpha, method: (np.asarray(0.2), np.asarray(0.9)))
    with pytest.raises(ArithmeticError, match="not a rounding error"):
        freq.wilson(1, 10)  # 0.1 lies below a lower bound of 0.2


def test_simulated_stage_tables_have_the_stage_columns():
    """The synthetic tables follow the stage schema of issue 11: every row names the behaviour it is scored
    against (``object_model``, ``ground_truth``) and its finetune seed."""
    from analysis.self_prediction.simulate import CALIBRATION_COLUMNS, simulate_stage_tables

    t = simulate_stage_tables(items=4, calibration_items=2, n_samples=5, tasks=("animals", "categories", "myopic_reward"))
    meta_columns = [
        "predictor", "dtype", "target", "kind", "task", "split", "family", "item_id", "property", "meta_prompt_hash",
        "meta_response", "meta_value", "meta_compliant", "options", "option_probs", "p_outside", "option_position",
        "object_value",
        "object_compliant", "p_object_value", "correct", "object_model", "ground_truth"]
    mu, mt = t["meta_untrained"], t["meta_trained"]
    assert list(mu.columns) == meta_columns + ["seed"]
    assert list(mt.columns) == meta_columns + ["run", "trained_on", "n_examples", "scaling", "mixed_precision",
                                                  "base_dtype", "seed"]
    assert mu["seed"].dtype == "Int64" and mu["seed"].isna().all() and set(mu["ground_truth"]) == {"base"}
    assert (mu["object_model"] == mu["target"]).all()
    assert list(t["calibration"].columns) == CALIBRATION_COLUMNS
    assert set(t["calibration"]["property"]) <= {"first_character", "second_character", "third_character",
                                                 "starts_with_vowel", "among_a_or_c", "among_b_or_d", "ethical_stance"}
    # every run once per ground truth; trained rows against M1' of their seed, base rows against the target
    assert (mt.groupby(["run", "ground_truth"]).size().unstack().nunique(axis=1) == 1).all()
    tr = mt[mt["ground_truth"] == "trained"]
    assert (tr["object_model"] == tr["target"] + "+self-s" + tr["seed"].astype(str)).all()
    assert (mt.loc[mt["ground_truth"] == "base", "object_model"] == mt.loc[mt["ground_truth"] == "base", "target"]).all()
    assert (tr["run"].str.split("__").str[3] == "s" + tr["seed"].astype(str)).all()
    assert sorted(mt["seed"].unique()) == [0, 1] and set(mt.loc[mt["scaling"], "seed"]) == {0}
    assert sorted(mt.loc[mt["scaling"], "n_examples"].unique()) == [120, 240] and set(mt.loc[mt["scaling"], "kind"]) == {"cross"}
    assert (mt["correct"] == (mt["object_compliant"] & mt["meta_compliant"] & (mt["meta_value"] == mt["object_value"]))).all()
    cal = t["calibration"]
    assert (cal.loc[cal["condition"] == "trained", "object_model"].str.contains(r"\+self-s")).all()
    assert cal.loc[cal["condition"] == "untrained", "seed"].isna().all()
    assert set(t["behaviour_change"]["seed"]) == {0}


def test_headline_numbers_are_flat_and_leave_out_what_a_run_did_not_produce():
    from analysis.self_prediction.stage import headline_numbers

    full = {"advantage": {"overall": {"mean": 9.6, "low": 5.8, "high": 13.5, "verdict": "positive"},
                          "gamma": {"mean": 25.1}, "p_every_direction": 0.08},
            "calibration": {"mad_difference": {"pooled": {"difference": 0.8, "low": -0.9, "high": 2.6}}},
            "behaviour": {"share_new": {"share": 0.43},
                          "excess": {"pooled_excess_new_minus_old": {"estimate": 5.1, "low": 1.2, "high": 9.0}}}}
    h = headline_numbers(full)
    assert h == {"delta": 9.6, "delta_low": 5.8, "delta_high": 13.5, "gamma": 25.1, "mad_self_minus_cross": 0.8,
                 "mad_self_minus_cross_low": -0.9, "mad_self_minus_cross_high": 2.6, "behaviour_share_new": 0.43,
                 "behaviour_excess_new_minus_old": 5.1, "behaviour_excess_new_minus_old_low": 1.2,
                 "behaviour_excess_new_minus_old_high": 9.0, "p_every_direction": 0.08}
    assert headline_numbers({"advantage": {"overall": None}, "calibration": {"mad_difference": None},
                             "behaviour": None}) == {}


def test_a_separated_glm_is_reported_as_not_estimable_not_as_a_huge_number():
    """Every self-prediction correct: the maximum-likelihood log-odds diverges (statsmodels stops near 1e15
    with no interval); the summary says so rather than publishing the artefact."""
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"self": np.repeat([1, 0], 40), "unit": np.tile(np.arange(20), 4),
                         "target": "a", "task": "t", "property": "p"})
    rows["correct"] = np.where(rows["self"] == 1, 1, rng.random(len(rows)) < 0.5).astype(int)
    g = freq.glm_cluster(rows)
    assert g["estimable"] is False and g["clusters"] == 20
    assert all(np.isnan(g[k]) for k in ("log_odds", "log_odds_low", "log_odds_high", "p_value", "ame"))
    rows.loc[0, "correct"] = 0  # one miss: an ordinary fit again
    g = freq.glm_cluster(rows)
    assert g["estimable"] is True and g["ame_low"] < g["ame"] < g["ame_high"] and 0 < g["log_odds"] < 30


def test_the_cluster_glm_drops_the_dummies_of_nested_groups_and_keeps_its_interval():
    """Properties nested in tasks (each property occurs in one task): the task dummies are spanned by the
    property dummies, so the full design is rank-deficient. The fit keeps a full-rank set of columns, and its
    numbers equal those of the design without the task factor, with an AME interval that brackets the AME."""
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"self": np.tile([1, 0], 240), "unit": np.repeat(np.arange(60), 8),
                         "target": np.where(np.arange(480) % 4 < 2, "a", "b")})
    rows["property"] = np.repeat(np.arange(6), 80).astype(str)
    rows["task"] = (rows["property"].astype(int) // 2).astype(str)  # tasks t0-t2, two properties each
    eta = -0.2 + 0.5 * rows["self"] + 0.3 * rows["property"].astype(int) - 0.4 * (rows["target"] == "b")
    rows["correct"] = (rng.random(len(rows)) < 1 / (1 + np.exp(-eta))).astype(int)
    X = pd.get_dummies(rows[["target", "task", "property"]], drop_first=True, dtype=float)
    X.insert(0, "self", rows["self"].astype(float))
    X.insert(0, "const", 1.0)
    kept = freq.independent_columns(X)
    assert list(kept.columns[:2]) == ["const", "self"] and kept.shape[1] == np.linalg.matrix_rank(X.to_numpy())
    assert kept.shape[1] < X.shape[1]
    nested = freq.glm_cluster(rows)
    flat = freq.glm_cluster(rows, groups=("target", "property"))
    assert nested["estimable"] and nested["ame_low"] < nested["ame"] < nested["ame_high"]
    for k in ("log_odds", "log_odds_low", "log_odds_high", "ame", "ame_low", "ame_high"):
        assert nested[k] == pytest.approx(flat[k], rel=1e-6, abs=1e-9)


def _trained_rows(families: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Meta-level tables of two models predicting themselves and each other after training, on the held-out
    tasks ``families`` (task -> family), four items each: the self-predictor is right on the first three
    items of a word task and on every item of a number task, the cross-predictor on the first item only."""
    rows = []
    for task, family in families.items():
        for target, other in (("m1", "m2"), ("m2", "m1")):
            for kind, predictor in (("self", target), ("cross", other)):
                for i in range(4):
                    right = i < (4 if family == "number_sequence" else 3) if kind == "self" else i == 0
                    rows.append(dict(predictor=predictor, target=target, kind=kind, task=task, family=family,
                                     property="p", item_id=f"{task}-{i}", object_value="a",
                                     object_compliant=True, meta_value="a" if right else "b",
                                     meta_compliant=True, meta_response="a" if right else "b"))
    meta = pd.DataFrame(rows)
    trained = meta.assign(ground_truth="trained", object_model=meta["target"] + "+self-s0", run="r", seed=0,
                          n_examples=8, scaling=False)
    trained = pd.concat([trained, trained.assign(ground_truth="base", object_model=trained["target"])])
    return meta.assign(object_model=meta["target"]), trained


def test_experiment_one_without_the_number_task_is_scored_on_the_other_tasks_only():
    from analysis.self_prediction.stage import _sensitivity

    meta_u, meta_t = _trained_rows({"words": "word_sequence", "years": "number_sequence"})
    _, by_property, m = _sensitivity(meta_u, meta_t, None, n_boot=2000, seed=0)
    assert m["trained"]["n"] == 32 and m["trained"]["self"] == pytest.approx(100 * 7 / 8)
    w = m["trained_without_numbers"]  # the words task alone: self 3 of 4, cross 1 of 4
    assert w["n"] == 16 and w["self"] == pytest.approx(75.0) and w["cross"] == pytest.approx(25.0)
    assert w["advantage"]["estimate"] == pytest.approx(50.0)
    assert set(by_property["ground_truth"]) == {"trained", "base", "trained_without_numbers"}
    # with no number task held out, or only number tasks, there is no such scoring
    for families in ({"words": "word_sequence"}, {"years": "number_sequence"}):
        _, _, m = _sensitivity(*_trained_rows(families), None, n_boot=2000, seed=0)
        assert "trained_without_numbers" not in m


def test_a_posterior_file_depends_on_its_draws_alone(tmp_path):
    """Two writes of the same fit, a second apart, give the same bytes: the attributes that record when the
    fit ran and how long it took are dropped, so a rerun leaves dvc.lock unchanged."""
    import hashlib
    import time

    import arviz as az
    import numpy as np

    from analysis.self_prediction.stage import TIME_ATTRS, _write_netcdf

    def fit():
        idata = az.from_dict(posterior={"a": np.random.default_rng(0).normal(size=(2, 30))})
        idata.posterior.attrs["sampling_time"] = time.time()
        return idata

    first = fit()
    assert "created_at" in first.posterior.attrs  # arviz stamps it; the writer drops it
    _write_netcdf(first, tmp_path / "a.nc")
    time.sleep(1.1)
    _write_netcdf(fit(), tmp_path / "b.nc")
    digest = [hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in ("a.nc", "b.nc")]
    assert digest[0] == digest[1]
    back = az.from_netcdf(tmp_path / "a.nc")
    assert not set(TIME_ATTRS) & set(back.posterior.attrs)
    np.testing.assert_array_equal(back.posterior["a"].values, first.posterior["a"].values)
