"""Leave-one-task-out prediction of the advantage model (analysis.self_prediction.recovery.leave_one_task_out)."""

import pytest

import analysis.self_prediction.recovery as checks
import analysis.self_prediction.hierarchical as M
from analysis.self_prediction.simulate import simulate_directions

FAST = M.SamplerSettings(draws=300, tune=300, chains=2, target_accept=0.95, seed=0)


def _rows(**kw):
    df, _ = simulate_directions(**kw)
    return df.assign(cell=df["target"] + "|" + df["task"] + "|" + df["property"])


@pytest.mark.slowest
def test_a_held_out_task_is_predicted_from_the_others():
    df = _rows(seed=2, tasks=4, properties=2, items=15, delta=0.5)
    out = checks.leave_one_task_out(df, ["task", "property", "cell"], FAST, seed=0)
    assert len(out) == 8 and set(out["arm"]) == {"self", "cross"}
    assert (out["low"] <= out["predicted"]).all() and (out["predicted"] <= out["high"]).all()
    assert out["covered"].sum() >= 6  # data from the model: 94% intervals
    # the observed accuracy is the held-out rows' own
    t0 = df[(df["task"] == "task0") & (df["self"] == 1)]["correct"].mean()
    assert out[(out["task"] == "task0") & (out["arm"] == "self")]["observed"].iloc[0] == pytest.approx(t0)


@pytest.mark.slowest
def test_a_task_unlike_the_others_is_not_covered():
    df = _rows(seed=2, tasks=4, properties=2, items=15, delta=0.5)
    odd = (df["task"] == "task3") & (df["self"] == 1)
    df.loc[odd, "correct"] = 1  # a held-out task where the self-predictor is always right
    out = checks.leave_one_task_out(df, ["task", "property", "cell"], FAST, seed=0, only=["task3"])
    assert set(out["task"]) == {"task3"}  # one fit: the others are not refitted
    row = out[(out["task"] == "task3") & (out["arm"] == "self")].iloc[0]
    assert row["observed"] == 1.0 and not row["covered"]
    with pytest.raises(ValueError, match="at least 3"):
        checks.leave_one_task_out(df[df["task"].isin(["task0", "task1"])], ["task", "property", "cell"], FAST)
