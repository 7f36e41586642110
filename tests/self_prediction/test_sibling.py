"""The sibling control (analysis.self_prediction.sibling; the runs in reproduce.self_prediction.runs): its runs,
its coding, the similarity it is compared with, and a world where the sibling is the self-predictor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.sibling as S
from analysis.self_prediction.population import advantage_groups
from reproduce.self_prediction.runs import SIBLING_SEED_OFFSET, TrainingRun, sibling_name, trained_model_name


def test_a_sibling_run_is_the_targets_own_base_trained_on_its_self_trained_behaviour_from_another_seed():
    run = TrainingRun("smollm2-135m", "smollm2-135m", 1, sibling=True)
    cross = TrainingRun("gemma3-270m", "smollm2-135m", 1)
    assert run.kind == "sibling" and run.predictor_name == sibling_name("smollm2-135m") == "smollm2-135m~sibling"
    assert run.trained_on == cross.trained_on == trained_model_name("smollm2-135m", 1)  # the ground truth: M1'(s)
    assert run.train_seed == 1 + SIBLING_SEED_OFFSET and cross.train_seed == 1
    assert run.name == "smollm2-135m~sibling__on__smollm2-135m__s1"
    with pytest.raises(ValueError, match="sibling"):
        TrainingRun("gemma3-270m", "smollm2-135m", 0, sibling=True)


def _rows(p: dict[str, float], items: int = 12, seeds=(0, 1), tasks: int = 4, seed: int = 0) -> pd.DataFrame:
    """Trained prediction rows of two targets with every arm, each arm right with probability ``p[arm]``."""
    rng = np.random.default_rng(seed)
    out = []
    for t, other in (("a", "b"), ("b", "a")):
        for s in seeds:
            for k in range(tasks):
                for i in range(items):
                    for prop in ("p0", "p1"):
                        for arm, pred in (("self", t), ("sibling", f"{t}~sibling"), ("cross", other)):
                            out.append({"target": t, "predictor": pred, "kind": arm, "arm": arm, "seed": s,
                                        "object_model": f"{t}+self-s{s}", "task": f"task{k}", "item_id": f"i{i}",
                                        "property": prop, "object_value": "x",
                                        "correct": int(rng.random() < p[arm]), "meta_compliant": True})
    df = pd.DataFrame(out)
    df["unit"] = df["object_model"] + "/" + df["task"] + "/" + df["item_id"]
    df["cell"] = df["target"] + "|" + df["task"] + "|" + df["property"]
    return df


def test_the_contrasts_code_their_first_arm_as_self_and_fit_no_predictor_effects():
    rows = _rows({"self": 0.6, "sibling": 0.6, "cross": 0.4})
    two = S.pair_rows(rows, "sibling", "cross")
    assert set(two["arm"]) == {"sibling", "cross"}
    assert (two["self"] == (two["arm"] == "sibling")).all()
    groups = advantage_groups(rows)
    data = S.contrast_data(rows, "self_minus_sibling", groups)
    assert data.fixed == ["target"]  # four predictor names, no predictor effects: each belongs to one arm
    assert sorted(data.cells.loc[data.cells["self"] == 0, "predictor"].unique()) == ["a~sibling", "b~sibling"]


def test_agreement_reads_the_predictors_base_answer_against_the_scored_behaviour():
    rows = pd.DataFrame({"predictor": ["a", "a~sibling", "b", "b"], "target": ["a", "a", "a", "a"],
                         "task": "t", "item_id": ["1", "1", "1", "2"], "property": "p",
                         "object_value": ["x", "x", "x", "y"]})
    objects = pd.DataFrame({"model": ["a", "b", "b"], "task": "t", "item_id": ["1", "1", "2"], "property": "p",
                            "value": ["x", "z", "y"], "compliant": [True, True, False]})
    # a and its sibling share a's answer (x = x); b answered z (different) and, on item 2, nothing compliant
    assert S.agreement(rows, objects).tolist() == [True, True, False, False]


@pytest.mark.slow
def test_a_sibling_that_is_the_self_predictor_gives_a_self_minus_sibling_interval_around_zero():
    """The issue's check: where the sibling predicts as well as the self-predictor (both 60%, cross 40%),
    self minus sibling covers 0 and sibling minus cross does not."""
    rows = _rows({"self": 0.6, "sibling": 0.6, "cross": 0.4}, seed=3)
    groups = advantage_groups(rows)
    settings = M.SamplerSettings(draws=500, tune=500, chains=4, seed=1, target_accept=0.9, target_accept_retry=0.99)
    same = S.fit_contrast(rows, "self_minus_sibling", groups, settings, 2.0, 0)["metrics"]
    assert same["population"]["low"] < 0 < same["population"]["high"]
    assert same["conditional"]["low"] < 0 < same["conditional"]["high"]
    assert {d["other"] for d in same["by_target"]} == {"a~sibling", "b~sibling"}
    apart = S.fit_contrast(rows, "sibling_minus_cross", groups, settings, 2.0, 0)["metrics"]
    assert apart["conditional"]["low"] > 0  # about 20 points on the observed tasks
