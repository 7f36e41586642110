"""The mode baseline as an arm of the model (analysis.self_prediction.baseline): recovery of the three differences with
joint uncertainty, and a cell below the mode that a pooled difference hides."""

import numpy as np
import pytest

import analysis.self_prediction.baseline as B
import analysis.self_prediction.hierarchical as M
from analysis.self_prediction.simulate import simulate_arms

FAST = M.SamplerSettings(draws=500, tune=500, chains=4, target_accept=0.98, seed=0)


def _cell(df):
    return df.assign(cell=df["target"] + "|" + df["task"] + "|" + df["property"])


def test_arm_coding_gives_every_pairwise_difference_the_same_scale():
    C = B.ARM_CODING
    assert np.allclose(C.sum(axis=0), 0)
    for i in range(3):
        for j in range(i + 1, 3):
            assert np.isclose(np.linalg.norm(C[i] - C[j]), 1.0)


def test_arms_data_adds_one_mode_row_per_unit_and_property():
    df, _ = simulate_arms(seed=0, items=5)
    data = B.arms_data(_cell(df), ["task", "property", "cell"])
    c = data.cells
    assert set(c["arm"]) == set(B.ARMS)
    per_arm = c.groupby("arm")["n"].sum()
    assert per_arm["mode"] == per_arm["self"] == per_arm["cross"] == len(df) // 2
    assert c.loc[c["arm"] == "mode", "k"].sum() == df[df["kind"] == "self"]["mode_correct"].sum()
    with pytest.raises(ValueError, match="mode_correct"):
        B.arms_data(_cell(df).drop(columns="mode_correct"), ["task"])


@pytest.mark.slowest
def test_the_arms_are_recovered_and_a_cell_below_the_mode_is_found():
    planted = {"cell": ("m0", "task1", "prop0"), "mode": 0.92, "self": 0.6, "cross": 0.55, "items": 150}
    df, truth = simulate_arms(seed=2, items=40, self_lift=0.35, cross_lift=0.05, planted=planted)
    data = B.arms_data(_cell(df), ["task", "property", "cell"])
    idata = M.sample(B.arms_model(data), FAST)
    d = M.diagnostics(idata)
    assert d["divergences"] == 0 and d["r_hat_max"] <= 1.02
    eff = B.arm_effects(idata, data, [[], ["target", "cell"]], rope=2.0)
    pooled = eff[eff["by"] == "overall"].iloc[0]
    for name, _, _ in B.COMPARISONS:
        assert pooled[f"{name}_low"] < truth[name] < pooled[f"{name}_high"], name
        assert abs(pooled[name] - truth[name]) < 4.0, name
    assert pooled["self_minus_mode_verdict"] == "positive"  # the pooled difference is above the mode ...
    cell = eff[(eff["by"] == "target+cell") & (eff["cell"] == "m0|task1|prop0")].iloc[0]
    assert cell["self_minus_mode_verdict"] == "negative"  # ... and hides a cell below it
    assert cell["cross_minus_mode_verdict"] == "negative"
    # the lift is the difference over the headroom, draw by draw
    assert pooled["lift_self"] > pooled["lift_cross"]
    for a in ("self", "cross"):
        assert pooled[f"lift_{a}_low"] < truth[f"lift_{a}"] < pooled[f"lift_{a}_high"]
