"""Experiment 4 (self-reports of a changed policy): the questions' dataset, the prompts in both option orders,
exact scoring on a real model, the tables, and the hierarchical model's slopes on simulated reports."""

import json

import numpy as np
import pandas as pd
import pytest

from reproduce.datasets import DatasetError
from reproduce.self_prediction import policy_data as PD
from reproduce.self_prediction.policy_reports import (ORDERS, report_prompts, tendency_probability)


@pytest.fixture(scope="module")
def data():
    return PD.load_policy_dataset()


def test_the_committed_dataset_is_what_the_content_module_writes(tmp_path, data):
    PD.write_policy_dataset(tmp_path)
    for name in (*PD.FILES, "manifest.json", "README.md"):
        assert (tmp_path / PD.NAME / name).read_bytes() == (PD.DATA_RAW / PD.NAME / name).read_bytes()
    assert data.manifest["counts"]["questions"] == len(data.questions) == 12
    assert {q["task"] for q in data.questions} == {"myopic_reward", "survival_instinct", "power_seeking",
                                                  "wealth_seeking"}
    card = (tmp_path / PD.NAME / "README.md").read_text()
    assert data.release_sha256 in card and "Betley" in card


def test_an_edited_file_is_refused_until_rehashed_under_a_new_version(tmp_path):
    PD.write_policy_dataset(tmp_path)
    path = tmp_path / PD.NAME / PD.QUESTIONS_FILE
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["self"] = "Do you usually pick the smaller reward now?"
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    with pytest.raises(DatasetError, match="does not match the sha256"):
        PD.load_policy_dataset(tmp_path)
    with pytest.raises(DatasetError, match="new version"):
        PD.rehash_policy_dataset(tmp_path)
    PD.rehash_policy_dataset(tmp_path, version="1.0.1")
    assert PD.load_policy_dataset(tmp_path).questions[0]["self"] == "Do you usually pick the smaller reward now?"


@pytest.mark.parametrize("edit,match", [
    (lambda r: r.pop("tendency"), "exactly the keys"),
    (lambda r: r.update(other=r["tendency"]), "same text for both options"),
    (lambda r: r.update(observer=" "), "'observer' must be a non-empty string"),
])
def test_a_bad_question_is_named(tmp_path, edit, match):
    PD.write_policy_dataset(tmp_path)
    path = tmp_path / PD.NAME / PD.QUESTIONS_FILE
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edit(rows[2])
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    with pytest.raises(DatasetError, match=match):
        PD.rehash_policy_dataset(tmp_path, version="9.0.0")


def test_each_question_is_asked_in_both_orders_and_the_observer_reads_the_answers(data):
    q = data.for_task("myopic_reward")[0]
    own = report_prompts(data, q, "self")
    assert set(own) == set(ORDERS)
    assert f"A - {q['tendency']}\nB - {q['other']}" in own["tendency_a"]
    assert f"A - {q['other']}\nB - {q['tendency']}" in own["tendency_b"]
    assert q["self"] in own["tendency_a"] and "assistant's answers" not in own["tendency_a"]
    seen = report_prompts(data, q, "observer", [("Pick one.\nA - x\nB - y", "B"), ("Pick again.", "A")])
    for prompt in seen.values():
        assert q["observer"] in prompt and q["self"] not in prompt
        assert "Question: Pick one.\nA - x\nB - y\nThe assistant answered: B" in prompt
        assert "Question: Pick again.\nThe assistant answered: A" in prompt
    with pytest.raises(ValueError, match="needs the answers"):
        report_prompts(data, q, "observer")
    assert tendency_probability((0.7, 0.3), "tendency_a") == 0.7
    assert tendency_probability((0.7, 0.3), "tendency_b") == 0.3


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["smollm2-135m", "gemma3-270m"])
def test_a_report_is_scored_exactly_from_the_first_answer_token(models, data, spec):
    """P(tendency) equals a plain forward pass's softmax mass on the tendency letter's tokens over the mass on
    both letters, at the first generated position that carries content (after Gemma's opening newline)."""
    import torch

    from reproduce.self_prediction.policy_reports import ask

    lm, engine = models[spec]
    q = data.for_task("survival_instinct")[1]
    prompts = report_prompts(data, q, "self")
    got = ask(engine, list(prompts.values()), list(prompts))
    for (order, prompt), p in zip(prompts.items(), got["p_tendency"]):
        g = engine.generate([prompt], 2, options=[("A", "B")])[0][0]
        opening = lm.tokenizer.encode(g.raw, add_special_tokens=False)[:g.option_position]
        assert g.option_position in (0, 1) and lm.tokenizer.decode(opening).strip() == ""
        ids = engine.tokenize([prompt])[0] + opening
        with torch.inference_mode():
            probs = torch.softmax(lm.model(input_ids=torch.tensor([ids])).logits[0, -1].float(), -1)
        a, b = (float(probs[t].sum()) for t in engine.option_token_ids(("A", "B")))
        want = a / (a + b) if order == "tendency_a" else b / (a + b)
        assert abs(p - want) < 1e-4
        assert abs(got.loc[list(prompts).index(order), "p_outside"] - (1 - a - b)) < 1e-4
    # the two orders put the tendency on different letters, so they are different numbers
    assert got["p_tendency"].iloc[0] != got["p_tendency"].iloc[1]


# ------------------------------------------------------------------------------------------------ analysis
def simulate(seed: int, beta: dict, units: int = 8, items: int = 6, questions: int = 3) -> tuple:
    """Reports and behaviour rows in the stage's format, with each reporter's reports moving ``beta[r]``
    log-odds per log-odds of the unit's behaviour shift, and a letter bias that the two orders cancel."""
    rng = np.random.default_rng(seed)
    reports, behaviour = [], []
    for u in range(units):
        model, task = f"m{u // 2}", ("myopic_reward", "survival_instinct")[u % 2]
        delta = rng.normal(0, 1.5)
        for j in range(items):
            x0 = rng.normal(0, 1)
            for phase, x in (("before", x0), ("after", x0 + delta + rng.normal(0, 0.5))):
                behaviour.append({"model": model, "run": f"{model}-bc", "seed": 0, "phase": phase, "task": task,
                                  "item_id": f"{task}-{j:03d}", "prompt_hash": "h", "response": "A",
                                  "stance_value": "true" if x > 0 else "false",
                                  "p_stance": float(1 / (1 + np.exp(-x))), "p_outside": 0.1})
        for reporter, slope in beta.items():
            for k in range(questions):
                level = rng.normal(0, 1)
                shift = 0.1 + slope * delta + rng.normal(0, 0.2)
                for phase, L in (("before", level), ("after", level + shift)):
                    for order, bias in (("tendency_a", 0.8), ("tendency_b", -0.8)):
                        reports.append({"model": model, "run": f"{model}-bc", "seed": 0, "reporter": reporter,
                                        "reporter_model": "x", "phase": phase, "task": task,
                                        "question_id": f"{task}-{k + 1}", "order": order, "n_examples": 0,
                                        "prompt_hash": "h", "response": "A",
                                        "p_tendency": float(1 / (1 + np.exp(-(L + bias)))), "p_outside": 0.5})
    return pd.DataFrame(reports), pd.DataFrame(behaviour)


def test_the_shifts_average_the_orders_and_cancel_a_letter_bias():
    import analysis.self_prediction.policy as P

    reports, behaviour = simulate(0, {"self": 1.0, "observer": 0.0}, units=2)
    levels = P.report_levels(reports)
    assert len(levels) == len(reports) // 2
    r0 = reports.iloc[:2]  # one question's two orders before the change
    assert np.isclose(P.report_levels(r0)["L"].iloc[0], np.mean(np.log(r0["p_tendency"] / (1 - r0["p_tendency"]))))
    shifts = P.report_shifts(levels)
    acts = P.behaviour_shifts(behaviour)
    assert len(shifts) == 2 * 2 * 3 and len(acts) == 2 * 6
    table = P.unit_table(levels, behaviour)
    assert list(table[["greedy_before_n", "greedy_after_n"]].iloc[0]) == [6, 6]
    b = behaviour[(behaviour.model == table.model.iloc[0]) & (behaviour.task == table.task.iloc[0])]
    assert np.isclose(table["behaviour_before"].iloc[0], b[b.phase == "before"]["p_stance"].mean())
    assert table["greedy_after_k"].iloc[0] == int((b[b.phase == "after"]["stance_value"] == "true").sum())
    with pytest.raises(ValueError, match="both option orders"):
        P.report_levels(reports[reports.order == "tendency_a"])


def test_the_model_recovers_a_reporter_that_tracks_and_one_that_does_not():
    import analysis.self_prediction.policy as P
    from conftest import tiny_profile

    profile = tiny_profile()
    reports, behaviour = simulate(3, {"self": 1.0, "observer": 0.0})
    out = P.analyse(reports, behaviour, profile)
    beta = out["metrics"]["beta"]
    assert beta["self"]["low"] < 1.0 < beta["self"]["high"] and beta["self"]["low"] > 0.3
    assert beta["observer"]["low"] < 0.0 < beta["observer"]["high"]
    diff = out["metrics"]["beta_difference"]
    assert diff["low"] > 0
    assert out["metrics"]["units"] == 8 and out["metrics"]["reliability"] > 0.9
    # the posterior is drawn by Monte Carlo from the run's seed: the same inputs give the same numbers
    assert P.analyse(reports, behaviour, profile)["metrics"] == out["metrics"]


def test_a_run_without_an_ab_task_writes_empty_tables_and_the_manuscript_says_so(tmp_path):
    """A profile whose experiment 3 has no A/B task with questions: the stage's empty tables pass their schemas,
    the analysis skips the fit, and the section says why experiment 4 did not run."""
    from reproduce.io import atomic_write_parquet, read_stage_table
    from reproduce.self_prediction.policy_reports import POLICY_BEHAVIOUR, POLICY_REPORTS, empty_table
    from report.self_prediction.policy import section

    for schema in (POLICY_REPORTS, POLICY_BEHAVIOUR):
        atomic_write_parquet(tmp_path / f"{schema.name}.parquet", empty_table(schema), schema=schema)
        back = read_stage_table(tmp_path / f"{schema.name}.parquet", "policy_reports", schema)
        assert back.empty and list(back.columns) == schema.columns
    assert section({}).startswith("Experiment 4 did not run")
