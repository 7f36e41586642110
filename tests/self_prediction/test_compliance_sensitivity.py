"""The non-compliance sensitivity (analysis.self_prediction.compliance): an 'advantage' that is only compliance is found out."""

import numpy as np
import pytest

import analysis.self_prediction.compliance as C
import analysis.self_prediction.hierarchical as M
from analysis.self_prediction.simulate import simulate_directions

FAST = M.SamplerSettings(draws=500, tune=500, chains=4, target_accept=0.95, seed=0)


def _rows(seed, self_compliance, cross_compliance):
    df, truth = simulate_directions(seed=seed, delta=0.0, items=30)
    rng = np.random.default_rng([seed, 1])  # a stream of its own, not the simulation's
    ok = rng.random(len(df)) < np.where(df["self"] == 1, self_compliance, cross_compliance)
    return df.assign(meta_compliant=ok.astype(int), correct=df["correct"] * ok,
                     cell=df["target"] + "|" + df["task"] + "|" + df["property"]), truth


@pytest.mark.slowest
def test_an_advantage_that_is_mostly_compliance_is_found_out():
    # equal skill, delta = 0 (the random slopes leave a small true advantage among compliant answers), and
    # the cross-predictor complies far less often: counting non-compliance as wrong shows a large advantage
    df, truth = _rows(5, 0.95, 0.6)
    fitted = []

    def fit(data, model, name):
        fitted.append(name)
        return M.sample(model, FAST)

    out = C.compliance_sensitivity(df, ["task", "property", "cell"], fit)
    assert fitted == ["compliance", "accuracy given compliance"]
    assert not out["all_compliant"]
    inside = lambda d, v: d["low"] < v < d["high"]  # noqa: E731
    assert inside(out["compliance_difference"], 35.0)
    conditional = 100 * truth["trial_weighted"]  # compliance is independent of being right here
    assert inside(out["conditional_difference"], conditional)
    assert inside(out["advantage_at_equal_compliance"], 0.6 * conditional)
    # the two parts reproduce the raw difference that counts non-compliance as wrong ...
    raw = out["raw"].set_index(["target", "kind"])
    assert raw.loc[("all", "self"), "compliance"] > raw.loc[("all", "cross"), "compliance"] + 0.25
    raw_adv = 100 * (raw.loc[("all", "self"), "accuracy"] - raw.loc[("all", "cross"), "accuracy"])
    assert inside(out["two_part_advantage"], raw_adv)
    # ... and most of it is compliance
    assert out["advantage_at_equal_compliance"]["high"] < out["two_part_advantage"]["low"]
    part = out["compliance_part"]
    assert part["low"] > out["advantage_at_equal_compliance"]["high"]
    assert part["mean"] == pytest.approx(out["two_part_advantage"]["mean"]
                                         - out["advantage_at_equal_compliance"]["mean"], abs=1e-9)


def test_all_compliant_answers_fit_nothing():
    df, _ = _rows(1, 1.0, 1.0)
    out = C.compliance_sensitivity(df, ["task", "property", "cell"], lambda *a: (_ for _ in ()).throw(AssertionError))
    assert out["all_compliant"]
    raw = out["raw"]
    assert (raw["accuracy"] == raw["accuracy_compliant"]).all() and (raw["compliance"] == 1).all()
