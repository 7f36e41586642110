"""Power of the advantage verdict (analysis.self_prediction.power): the approximation's verdicts, the minimum detectable
advantage, and the command's outputs."""


from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.power as P

QUIET = P.Design(tasks=6, items=40, properties=3, sigma_task=0.0, sigma_property=0.0, sigma_cell=0.0,
                 tau_task=0.0, tau_property=0.0, tau_cell=0.0, sigma_unit=0.0)


def test_without_heterogeneity_the_null_is_called_an_advantage_rarely():
    ys, yc, truth = P.simulate(QUIET, 0.0, 2000, np.random.default_rng(0))
    assert abs(truth.mean()) < 1e-9
    v = P.verdicts(ys, yc, rope=2.0)
    assert v["observed_tasks"].mean() < 0.05 and v["new_tasks"].mean() < 0.05
    assert abs(v["estimate"].mean()) < 0.5  # unbiased


def test_the_observed_task_interval_has_its_nominal_coverage():
    ys, yc, truth = P.simulate(QUIET, 0.5, 2000, np.random.default_rng(1))
    v = P.verdicts(ys, yc, rope=-np.inf)  # every replicate "positive": only the estimate matters here
    est = v["estimate"]
    # the normal interval's half-width from the same formula, for a coverage check against the truth
    diff = (ys.astype(float) - yc).mean(axis=4)
    se = 100 * np.sqrt((diff.reshape(len(est), 2, -1).var(axis=2, ddof=1) / diff[0, 0].size).sum(axis=1)) / 2
    covered = np.abs(est - truth) < P.Z_HIGH * se
    assert 0.92 < covered.mean() < 0.96


def test_seeds_add_units_and_a_self_trained_model_effect_the_verdict_is_conditional_on():
    """Two seeds: twice the answer units, and each seed's self-trained model shifts its units' advantage. The
    true advantage of a replicate includes those shifts, so the observed-task interval covers it at its
    nominal rate, as delta's interval covers delta at the fitted seed effects."""
    seeded = P.Design(tasks=6, items=20, properties=3, sigma_task=0.0, sigma_property=0.0, sigma_cell=0.0,
                      tau_task=0.0, tau_property=0.0, tau_cell=0.0, sigma_unit=0.0, seeds=2, tau_seed=1.0)
    ys, yc, truth = P.simulate(seeded, 0.5, 2000, np.random.default_rng(2))
    assert ys.shape == (2000, 2, 6, 40, 3)
    assert truth.std() > 2  # the seeds' self slopes move each replicate's true advantage
    v = P.verdicts(ys, yc, rope=-np.inf)
    diff = (ys.astype(float) - yc).mean(axis=4)
    se = 100 * np.sqrt((diff.reshape(2000, 2, -1).var(axis=2, ddof=1) / diff[0, 0].size).sum(axis=1)) / 2
    assert 0.92 < (np.abs(v["estimate"] - truth) < P.Z_HIGH * se).mean() < 0.96
    # without a seed effect, 2 seeds x 20 items is the design of 1 seed x 40 items
    flat = P.power_curve(P.Design(6, 20, 3, seeds=2), [0.3], 400, 2.0, 0)["power_observed_tasks"].iloc[0]
    one = P.power_curve(P.Design(6, 40, 3), [0.3], 400, 2.0, 0)["power_observed_tasks"].iloc[0]
    assert abs(flat - one) < 0.1


def test_power_grows_with_the_advantage_and_items_and_task_spread_caps_new_task_power():
    spread = P.Design(tasks=3, items=40, properties=3, tau_task=1.0)
    curve = P.power_curve(spread, [0.0, 0.5, 1.0], 300, 2.0, 0)
    assert curve["advantage"].is_monotonic_increasing
    assert curve["power_observed_tasks"].is_monotonic_increasing
    assert (curve["power_new_tasks"] <= curve["power_observed_tasks"] + 0.02).all()
    small, big = (P.power_curve(P.Design(6, n, 3), [0.3], 300, 2.0, 0)["power_observed_tasks"].iloc[0] for n in (10, 160))
    assert big > small + 0.3


def test_the_size_curves_pass_through_the_design():
    design = P.Design(tasks=5, items=7, properties=2)
    out = P.analyse(design, 2.0, reps=40, deltas=[0.0, 0.8], items=(10, 20), tasks=(3, 6))
    by = out["by_size"]
    assert list(by.loc[by["axis"] == "items", "value"]) == [7, 10, 20]
    assert list(by.loc[by["axis"] == "tasks", "value"]) == [3, 5, 6]
    for axis, value in (("items", 7), ("tasks", 5)):  # the design's own point is the design's curve
        row = by[(by["axis"] == axis) & (by["value"] == value)].iloc[0]
        assert row["mda_observed_tasks"] == out["mda_observed_tasks"] or (
            np.isnan(row["mda_observed_tasks"]) and np.isnan(out["mda_observed_tasks"]))


def test_minimum_detectable_interpolates_between_grid_points():
    c = pd.DataFrame({"advantage": [0.0, 5.0, 10.0], "p": [0.1, 0.6, 1.0]})
    assert P.minimum_detectable(c, "p") == pytest.approx(7.5)
    assert np.isnan(P.minimum_detectable(c.assign(p=[0.1, 0.2, 0.3]), "p"))


def test_the_design_is_read_from_the_run(tmp_path):
    rows = [("trained", False, 0, t, f"m{m}", task, f"u{m}{task}{i}", prop)
            for t in ("self", "cross") for m in (0, 1) for task in ("a", "b") for i in range(5) for prop in ("p", "q")]
    pred = pd.DataFrame(rows, columns=["condition", "scaling", "seed", "kind", "target", "task", "unit", "property"])
    design, source = P.design_from_run(pred)
    assert (design.tasks, design.items, design.properties) == (2, 5, 2)
    assert "prior" in source and design.seeds == 1
    two = pd.concat([pred, pred.assign(seed=1, unit=pred["unit"] + "s1")], ignore_index=True)
    design, _ = P.design_from_run(two)  # items per seed; the seed level's prior scales
    assert (design.tasks, design.items, design.properties, design.seeds) == (2, 5, 2, 2)
    assert design.sigma_seed > 0 and design.tau_seed > 0
    with pytest.raises(ValueError, match="no trained rows"):
        P.design_from_run(pred.assign(condition="untrained"))
    # a direction without task b (as when a self-trained model never answers a task in the requested form):
    # 15 observations per direction on average, not the 20 of every direction having both tasks; the balanced
    # design has about as many
    gap = pred[~((pred.target == "m1") & (pred.task == "b"))]
    design, _ = P.design_from_run(gap)
    assert P.observations_per_direction(gap) == 15 and P.simulated_observations(design) == 16
    assert (design.tasks, design.items, design.properties) == (2, 4, 2)  # 2 x 4 x 2 = 16, the nearest to 15
    # three models: six directions, each of 5 items x 2 tasks x 2 properties; the two-direction simulation
    # keeps the per-direction size (the cross arm has twice the self arm's rows)
    three = pd.DataFrame([("trained", False, 0, "self" if p == t else "cross", f"m{t}", task, f"u{t}{task}{i}", prop)
                          for t in range(3) for p in range(3) for task in ("a", "b") for i in range(5)
                          for prop in ("p", "q")],
                         columns=["condition", "scaling", "seed", "kind", "target", "task", "unit", "property"])
    assert (three.kind == "cross").sum() == 2 * (three.kind == "self").sum()
    design, _ = P.design_from_run(three)
    assert P.observations_per_direction(three) == 20 == P.simulated_observations(design) and design.items == 5


def test_the_power_command_needs_the_analysis_outputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the analysis stage first"):
        P.run_power(tmp_path, rope=2.0, seed=0)
    (tmp_path / "tidy").mkdir()
    pd.DataFrame([("trained", False, 0, "self", "m0", "a", "u", "p")],
                 columns=["condition", "scaling", "seed", "kind", "target", "task", "unit", "property"]
                 ).to_parquet(tmp_path / "tidy" / "predictions.parquet")
    with pytest.raises(FileNotFoundError, match="--prior"):
        P.run_power(tmp_path, rope=2.0, seed=0)


@pytest.mark.slowest
def test_the_validation_fits_the_bayesian_model_to_replicates():
    import analysis.self_prediction.hierarchical as M

    design = P.Design(tasks=3, items=8, properties=2, seeds=2, sigma_seed=0.2, tau_seed=0.2)  # object_model factor
    v = P.validate(design, 1.0, 3, 2.0, 0, M.SamplerSettings(draws=500, tune=500, chains=4, seed=0,
                                                              target_accept=0.9, target_accept_retry=0.99))
    assert v["reps"] == 3 and v["gate_passed"] == 3 and v["gate_failed"] == 0  # through the analysis's gate
    assert 0 <= v["agreement"] <= 1
    assert v["power_bayes"] >= 2 / 3 and v["power_approximation"] >= 2 / 3  # about 22 points, 94% intervals


def test_the_population_verdict_carries_the_spread_between_runs():
    """With no advantage in the population of tasks and finetuning runs, but each run's self-trained model
    shifting its advantage (tau_seed), the verdicts that ignore the runs call an advantage far too often; the
    headline's population verdict (tasks and runs) stays near its one-sided nominal rate (3% at a ROPE of 0)."""
    runs = P.Design(tasks=6, items=5, properties=2, sigma_task=0.0, sigma_property=0.0, sigma_cell=0.0,
                    tau_task=0.3, tau_property=0.0, tau_cell=0.0, sigma_unit=0.0, seeds=3, tau_seed=1.0)
    ys, yc, _ = P.simulate(runs, 0.0, 4000, np.random.default_rng(3))
    v = P.verdicts(ys, yc, rope=0.0, seeds=3)
    assert v["new_tasks"].mean() > 0.15  # the task spread alone: the runs' shifts look like an advantage
    assert v["population"].mean() < 0.05
    # one seed: the population verdict is the new-task verdict
    ys1, yc1, _ = P.simulate(replace(runs, seeds=1), 0.0, 200, np.random.default_rng(4))
    v1 = P.verdicts(ys1, yc1, rope=0.0, seeds=1)
    assert (v1["population"] == v1["new_tasks"]).all()


def test_chunked_replicates_are_the_unchunked_draws_for_small_designs(monkeypatch):
    d = P.Design(tasks=3, items=4, properties=2, seeds=2, tau_seed=0.5)
    whole = P.power_curve(d, [0.0, 0.8], 50, 2.0, 0)
    monkeypatch.setattr(P, "CHUNK", 2 * 3 * 2 * 4 * 2 * 7)  # 7 replicates per chunk: 8 chunks, other draws
    chunked = P.power_curve(d, [0.0, 0.8], 50, 2.0, 0)
    assert list(chunked.columns) == list(whole.columns) and (chunked["reps"] == 50).all()
    # different draws, the same design: the powers agree to sampling error
    for c in ("power_observed_tasks", "power_new_tasks", "power_population"):
        assert np.allclose(chunked[c], whole[c], atol=0.25)


def test_the_paper_design_scales_the_runs_sizes_and_keeps_its_heterogeneity():
    from conftest import tiny_profile

    from reproduce.config import load_params

    run = tiny_profile(items_per_task={"train": 3, "test": 4})  # 2 held-out tasks
    _, paper = load_params(profile="paper")  # 6 held-out tasks, 200 items each, 3 finetuning seeds
    sizes = P.paper_sizes(run, paper)
    assert sizes == {"tasks": len(paper.tasks.test) / 2, "items": paper.items_per_task.test / 4,
                     "seeds": len(paper.finetune.seeds)} == {"tasks": 3.0, "items": 50.0, "seeds": 3}
    d = P.scaled_design(P.Design(tasks=2, items=3, properties=2, tau_task=0.7, sigma_task=0.4), **sizes)
    assert (d.tasks, d.items, d.seeds, d.properties, d.tau_task) == (6, 150, 3, 2, 0.7)
    assert (d.sigma_seed, d.tau_seed) == (0.4, 0.7)  # one seed in the run: the task's scales stand for the runs'


def test_the_design_search_gives_each_designs_power_at_the_effect():
    quiet = replace(QUIET, tau_task=0.1, seeds=2, tau_seed=0.05)
    t = P.designs_for(quiet, 15.0, 2.0, 60, 0, tasks=(6,), seeds=(2, 3), items=(2, 40))
    assert list(zip(t["tasks"], t["seeds"], t["items"])) == [(6, 2, 2), (6, 2, 40), (6, 3, 2), (6, 3, 40)]
    assert (t["units"] == t["tasks"] * t["seeds"] * t["items"]).all()
    assert (t["detects"] == (t["power_population"] >= 0.8)).all()
    # the log-odds advantage worth 15 points on the design, and more items more power at it
    assert 0.4 < t["delta_logit"].iloc[0] < 0.9  # 100 (sigmoid(d / 2) - sigmoid(-d / 2)) = 15 at d = 0.6
    assert t["power_population"].iloc[1] > t["power_population"].iloc[0] and t["detects"].iloc[3]
    # the runs' spread caps the headline's power, whatever the items
    wild = replace(quiet, tau_seed=3.0)
    assert not P.designs_for(wild, 15.0, 2.0, 60, 0, tasks=(6,), seeds=(2,), items=(10, 40))["detects"].any()


def test_the_power_sentence_names_the_headline_the_paper_sizes_and_the_design_for_the_effect():
    from report.self_prediction.sentences import _power_text

    design = {"tasks": 5, "items": 7, "properties": 3, "seeds": 2}
    power = {"design": design, "items_unit": P.items_unit(2), "heterogeneity_source": "posterior medians",
             "reps": 400, "rope": 2.0, "mda_observed_tasks": 12.1, "mda_new_tasks": 16.0, "mda_population": 31.0,
             "paper": {"design": {**design, "items": 117, "seeds": 3}, "mda_population": 22.0,
                       "mda_observed_tasks": 3.1, "mda_new_tasks": 9.0},
             "designs_for": {"effect": 13.0, "paper_self": 48.5, "paper_cross": 35.0, "reps": 200,
                             "rows": [{"tasks": 24, "seeds": 5, "items": 320, "power_population": 0.91},
                                      {"tasks": 6, "seeds": 2, "items": 10, "power_population": 0.2}],
                             "smallest": {"tasks": 24, "seeds": 5, "items": 40, "power_population": 0.84}},
             "validation": {"advantage": 30.2, "reps": 30, "power_bayes": 0.9, "power_approximation": 0.85,
                            "agreement": 0.9, "power_bayes_population": 0.7, "power_approximation_population": 0.6,
                            "agreement_population": 0.83}}
    s = _power_text(power)
    assert "a new task and a new finetuning run) the minimum detectable advantage is 31.0 points" in s
    assert "117 scored items per task, target and seed, 3 finetuning seeds" in s and "22.0 points for the headline" in s
    assert "24 held-out tasks, 5 finetuning seeds and 40 scored items per task, target and seed (power 84%" in s
    assert "advantage in Binder et al. 2024, 48.5% against about 35%" in s and "the same verdict in 83%" in s and "conservative" not in s  # 70 vs 60%
    v = {**power["validation"], "power_bayes_population": 0.97, "power_approximation_population": 0.77}
    assert "upper bounds for the Bayesian rule" in _power_text({**power, "validation": v})
    v = {**v, "power_bayes_population": 0.5}
    assert "lower bounds for the Bayesian rule" in _power_text({**power, "validation": v})
    s2 = _power_text({**power, "designs_for": {**power["designs_for"], "smallest": None}})
    assert "No design searched (up to 24 held-out tasks, 5 finetuning seeds and 320 scored items" in s2
    assert "(at most 91%)" in s2


def test_the_power_stage_fits_its_validation_as_the_null_simulation_fits_its_replicates(monkeypatch, tmp_path):
    """What the ``power`` stage runs is decided in the stage's own module (a dependency DVC tracks), not on the
    command line: ``analysis.null_reps`` validation fits at ``analysis.null_draws`` draws, the analysis's chains,
    and the paper profile's sizes."""
    import analysis.self_prediction.power as P
    from analysis.bayes import sampler_settings
    from reproduce.config import load_params
    from tests.conftest import tiny_profile

    got = {}
    monkeypatch.setattr(P, "run_power", lambda *a, **k: got.update(args=a, **k) or {})
    profile = tiny_profile()
    paper = load_params("profiles/paper.yaml")[1]
    P.run_power_stage(profile, tmp_path, paper, reps=7)
    assert got["args"] == (tmp_path, profile.analysis.rope, profile.seed) and got["reps"] == 7
    assert got["validate_reps"] == profile.analysis.null_reps and got["use_prior"] is False
    assert got["settings"].draws == profile.analysis.null_draws
    assert got["settings"].chains == sampler_settings(profile, 30).chains
    assert got["paper"] == P.paper_sizes(profile, paper)
    P.run_power_stage(profile, tmp_path, paper, validate_reps=0, use_prior=True)
    assert got["validate_reps"] == 0 and got["use_prior"] is True
