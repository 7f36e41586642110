"""Experiments 1-3 as stages on the real embedded models (tiny profile), with the original study's protocol:
self-training, the self-trained models' new object-level behaviour (the ground truth), cross-prediction
trained on that behaviour, held-out predictions scored against it, the calibration table, and behaviour change."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from conftest import declared, fewer_component_refits, tiny_profile
from reproduce.self_prediction.properties import get_property
from reproduce.self_prediction import (Plan, behaviour_change_plan, object_distribution, run_behaviour_change,
                              run_calibration, run_finetune_cross, run_finetune_self, run_meta_trained,
                              run_object_level_trained, trained_model_name)

MODELS = ("smollm2-135m", "gemma3-270m")
SEEDS = (0, 1)
FINETUNE = {"lora_rank": 4, "lora_alpha": 8, "learning_rate": 1e-3, "epochs": 1, "batch_size": 4, "max_examples": 8,
            "mixed_precision": "no", "checkpoint_every": 1, "scaling_sizes": [4, 100], "seeds": list(SEEDS),
            "sibling": True}
BEHAVIOUR = {"tasks": None, "eval_items": None, "train_items": 8, "learning_rate": 3e-3, "epochs": 3}
KEY = ["task", "item_id", "property"]
# tests using the pipeline fixtures below are the slowest tier (conftest.PIPELINE_FIXTURES); under `-n auto` this
# file runs first, on one worker: it is the suite's longest chain


@pytest.fixture(scope="module")
def trained(run, tmp_path_factory):
    """finetune_self, object_level_trained, finetune_cross and meta_trained after the shared foundation run."""
    root = tmp_path_factory.mktemp("trained")
    plan = Plan(tiny_profile(finetune=FINETUNE, behaviour_change=BEHAVIOUR))
    obj, work = run["root"] / "object_level", root / "work"
    with declared("finetune_self"):
        self_index = run_finetune_self(plan, obj, root / "ft_self", root / "curves_self", work)
    with declared("object_level_trained"):
        run_object_level_trained(plan, root / "ft_self", root / "obj_t", root / "samples_t", work)
    with declared("finetune_cross"):
        cross_index = run_finetune_cross(plan, root / "obj_t", root / "ft_cross", root / "curves_cross", work)
    with declared("meta_trained"):
        meta = pd.read_parquet(run_meta_trained(plan, obj, root / "obj_t", root / "ft_self", root / "ft_cross",
                                                root / "mt.parquet", work))
    obj_t = {(m, s): pd.read_parquet(root / "obj_t" / f"{trained_model_name(m, s)}.parquet")
             for m in MODELS for s in SEEDS}
    return {"plan": plan, "root": root, "obj": obj, "self_index": self_index, "cross_index": cross_index,
            "index": self_index + cross_index, "meta": meta, "obj_t": obj_t}


def _values(df: pd.DataFrame) -> pd.Series:
    return df.set_index(KEY)["value"]


def test_self_training_learns_each_models_own_base_behaviour_once_per_seed(run, trained):
    index, root = trained["self_index"], trained["root"]
    assert index == json.loads((root / "ft_self" / "runs.json").read_text())
    assert {(r["predictor"], r["target"], r["kind"], r["seed"], r["trained_on"]) for r in index} == {
        (m, m, "self", s, m) for m in MODELS for s in SEEDS}
    for m in MODELS:
        ours = _values(run["object"][m])
        orders = []
        for s in SEEDS:
            ex = pd.read_parquet(root / "ft_self" / "examples" / f"{m}-s{s}.parquet")
            assert set(ex["task"]) == {"numbers"} and len(ex) == 8  # train tasks only
            assert all(ours[(r.task, r.item_id, r.property)] == r.answer for r in ex.itertuples())
            orders.append(list(zip(ex.item_id, ex.property)))
        assert orders[0] != orders[1]  # the seed orders (and picks) the pairs
    assert len(list((root / "curves_self").glob("*.tsv"))) == len(index)


def test_self_trained_models_answer_the_object_level_again(run, trained):
    for (m, s), t in trained["obj_t"].items():
        base = run["object"][m]
        assert set(t["model"]) == {trained_model_name(m, s)} and set(t["base_model"]) == {m} and set(t["seed"]) == {s}
        assert len(t) == len(base) and set(map(tuple, t[KEY].to_numpy())) == set(map(tuple, base[KEY].to_numpy()))
        samples = pd.read_parquet(trained["root"] / "samples_t" / f"{trained_model_name(m, s)}.parquet")
        assert len(samples) and set(samples["model"]) == {trained_model_name(m, s)}
    # self-training changed what the models do at the object level (the reason for this stage)
    assert any((t.set_index(KEY)["response"] != run["object"][m].set_index(KEY)["response"]).any()
               for (m, s), t in trained["obj_t"].items())


def test_cross_prediction_learns_the_self_trained_targets_behaviour(trained):
    index, root = trained["cross_index"], trained["root"]
    full = [r for r in index if not r["scaling"] and r["kind"] == "cross"]
    assert {(r["predictor"], r["target"], r["seed"], r["trained_on"]) for r in full} == {
        (p, t, s, trained_model_name(t, s)) for p in MODELS for t in MODELS if p != t for s in SEEDS}
    sweep = [r for r in index if r["scaling"]]  # size 4, first seed only: 100 is not below the 8 pairs there are
    assert {(r["kind"], r["n_examples"], r["seed"]) for r in sweep} == {("cross", 4, 0)} and len(sweep) == 2
    for (m, s), t in trained["obj_t"].items():
        ex = pd.read_parquet(root / "ft_cross" / "examples" / f"{trained_model_name(m, s)}.parquet")
        assert len(ex) and set(ex["task"]) == {"numbers"}
        ours = _values(t[t["compliant"]])
        assert all(ours[(r.task, r.item_id, r.property)] == r.answer for r in ex.itertuples())


def test_the_sibling_is_the_targets_base_trained_on_the_cross_predictors_pairs_from_another_seed(trained):
    """finetune.sibling (on in this pipeline): per model and seed, the model's own base weights trained on its
    self-trained version's behaviour, on exactly the pairs its cross-predictor trained on, from another training
    seed; the self-predictor trained from the same base on other pairs (the base behaviour)."""
    from reproduce.self_prediction.runs import SIBLING_SEED_OFFSET, sibling_name

    index = trained["cross_index"]
    siblings = [r for r in index if r["kind"] == "sibling"]
    assert {(r["predictor"], r["base"], r["target"], r["seed"]) for r in siblings} == {
        (sibling_name(t), t, t, s) for t in MODELS for s in SEEDS}
    for r in siblings:
        cross = [c for c in index if c["kind"] == "cross" and not c["scaling"] and c["target"] == r["target"]
                 and c["seed"] == r["seed"]]
        own = [c for c in trained["self_index"] if c["target"] == r["target"] and c["seed"] == r["seed"]]
        assert r["trained_on"] == cross[0]["trained_on"] == trained_model_name(r["target"], r["seed"])
        assert r["pairs"] == cross[0]["pairs"] and r["n_examples"] == cross[0]["n_examples"]  # the same pairs
        assert own[0]["trained_on"] == r["target"]  # the self-predictor's pairs describe the base behaviour
        assert r["train_seed"] == r["seed"] + SIBLING_SEED_OFFSET != own[0]["train_seed"]
        assert r["run"] == f"{sibling_name(r['target'])}__on__{r['target']}__s{r['seed']}"
    # its predictions are scored against M1'(s), like the self- and cross-predictors'
    meta = trained["meta"]
    sib = meta[meta["kind"] == "sibling"]
    assert len(sib) and set(sib["predictor"]) == {sibling_name(m) for m in MODELS}
    for (t, s), g in sib[sib["ground_truth"] == "trained"].groupby(["target", "seed"]):
        assert set(g["object_model"]) == {trained_model_name(t, s)}


def test_finished_finetunes_are_reused_after_dvc_deletes_the_outputs(trained, tmp_path, monkeypatch):
    import reproduce.lm.finetune as ft

    monkeypatch.setattr(ft, "answer_loss", lambda *a, **k: pytest.fail("a finished run was trained again"))
    index = run_finetune_self(trained["plan"], trained["obj"], tmp_path / "ft", tmp_path / "curves",
                              trained["root"] / "work")
    assert index == trained["self_index"]


def test_meta_trained_scores_every_run_against_the_self_trained_target_and_the_base(run, trained):
    meta = trained["meta"]
    assert set(meta["run"]) == {r["run"] for r in trained["index"]}
    assert set(meta["task"]) == {"animals", "survival_instinct"}
    for r in trained["index"]:
        rows = meta[meta.run == r["run"]]
        assert set(rows["target"]) == {r["target"]} and set(rows["kind"]) == {r["kind"]}
        assert set(rows["seed"]) == {r["seed"]}
        for truth, behaviour, name in (("trained", trained["obj_t"][(r["target"], r["seed"])],
                                        trained_model_name(r["target"], r["seed"])),
                                       ("base", run["object"][r["target"]], r["target"])):
            g = rows[rows.ground_truth == truth]
            assert len(g) == 3 * 7 + 3 * 1 and set(g["object_model"]) == {name}
            ref = behaviour.set_index(KEY).loc[list(zip(g.task, g.item_id, g.property))]
            assert (ref["compliant"].to_numpy() == g["object_compliant"].to_numpy()).all()
            ok = g["object_compliant"].to_numpy()
            assert (ref["value"].to_numpy()[ok] == g["object_value"].to_numpy()[ok]).all()
        # one set of predictions, scored twice
        a, b = (rows[rows.ground_truth == t].set_index(KEY).sort_index() for t in ("trained", "base"))
        assert (a["meta_response"] == b["meta_response"]).all()


def test_finetune_stages_need_finetune_params(run):
    with pytest.raises(ValueError, match="no `finetune:` section"):
        run_finetune_self(Plan(tiny_profile()), run["root"] / "object_level")


# ------------------------------------------------------------------------------------ calibration
def test_object_distribution_counts_compliant_samples_over_the_options():
    rows = [("true", True), ("true", True), ("false", True), (None, False)]
    samples = pd.DataFrame([dict(model="m", task="t", item_id="i", sample=k, property="is_even", value=v, compliant=c)
                            for k, (v, c) in enumerate(rows)]
                           + [dict(model="m", task="t", item_id="i", sample=k, property="first_word", value="x",
                                   compliant=True) for k in range(4)])
    d = object_distribution(samples)
    assert len(d) == 1  # open-set properties have no option distribution
    r = d.iloc[0]
    assert (r.n_samples, r.n_compliant, r.n_other, list(r.object_counts)) == (4, 3, 0, [2, 1])
    assert list(r.object_probs) == pytest.approx([2 / 3, 1 / 3])


@pytest.fixture(scope="module")
def calibration(run, trained):
    root = trained["root"]
    return pd.read_parquet(run_calibration(trained["plan"], run["root"] / "object_samples", root / "samples_t",
                                           run["root"] / "meta.parquet", root / "mt.parquet", root / "cal.parquet"))


def test_calibration_pairs_trained_predictors_with_the_self_trained_targets_samples(run, trained, calibration):
    cal = calibration
    assert set(cal["condition"]) == {"untrained", "trained"}
    u, t = cal[cal.condition == "untrained"], cal[cal.condition == "trained"]
    assert set(zip(u.predictor, u.target)) == {(a, b) for a in MODELS for b in MODELS}
    assert (u.object_model == u.target).all() and u.seed.isna().all()
    assert set(zip(t.predictor, t.target, t.seed)) == {(a, b, s) for a in MODELS for b in MODELS for s in SEEDS}
    assert (t.object_model == [trained_model_name(a, s) for a, s in zip(t.target, t.seed)]).all()
    # the calibration subset (2 items per test task) x the closed properties (4 for animals, 1 for A/B)
    assert u.groupby(["predictor", "target"]).size().eq(2 * 4 + 2 * 1).all()
    assert t.groupby(["predictor", "target", "seed"]).size().eq(2 * 4 + 2 * 1).all()
    assert not t["run"].str.contains("__n").any()  # no scaling runs
    root = trained["root"]
    samples = pd.concat([*run["samples"].values()] + [
        pd.read_parquet(root / "samples_t" / f"{trained_model_name(m, s)}.parquet") for m in MODELS for s in SEEDS])
    for r in cal.itertuples():
        s = samples[(samples.model == r.object_model) & (samples.task == r.task) & (samples.item_id == r.item_id)
                    & (samples.property == r.property) & samples.compliant]
        assert list(r.object_counts) == [int((s.value == o).sum()) for o in get_property(r.property).options]
        assert sum(r.object_counts) + r.n_other == r.n_compliant == len(s)
        assert abs(sum(r.meta_probs) - 1) < 1e-5
    m = u.merge(run["meta"], on=["predictor", "target", "task", "item_id", "property"])
    assert all(list(a) == list(b) for a, b in zip(m.meta_probs, m.option_probs)) and len(m) == len(u)


# ------------------------------------------------------------------------------------ behaviour change
@pytest.fixture(scope="module")
def changed(run, trained):
    root = trained["root"]
    with declared("behaviour_change"):
        out = run_behaviour_change(trained["plan"], trained["obj"], root / "obj_t", root / "ft_self",
                                   root / "mt.parquet", root / "bc.parquet", root / "bc", root / "bc_curves",
                                   root / "work")
    return pd.read_parquet(out)


def test_behaviour_change_trains_on_the_other_models_answers_to_held_out_items(trained, changed):
    root = trained["root"]
    assert set(zip(changed.model, changed.source)) == {("smollm2-135m", "gemma3-270m"), ("gemma3-270m", "smollm2-135m")}
    assert set(changed["seed"]) == {SEEDS[0]}
    for model, source in set(zip(changed.model, changed.source)):
        ex = pd.read_parquet(root / "bc" / "examples" / f"{model}.parquet")
        assert set(ex["target"]) == {source}  # the other model's answers
        evaluated = set(changed.loc[changed.model == model, "item_id"])
        assert evaluated.isdisjoint(ex["item_id"])  # evaluated items are held out
        assert len(ex) == 2 * 8 and ex["answer"].str.len().gt(0).all()
        assert (root / "bc" / f"{model}__bc__{source}__s0" / "adapter").is_dir()
        assert (root / "bc_curves" / f"{model}__bc__{source}__s0.tsv").exists()


def test_behaviour_change_records_old_and_new_behaviour_and_the_new_prediction(trained, changed):
    for model in MODELS:
        rows = changed[changed.model == model]
        assert len(rows) == 3 * 7 + 3 * 1
        # the behaviour before the change is the self-trained model's (seed 0), from object_level_trained
        old = trained["obj_t"][(model, SEEDS[0])].set_index(KEY)
        assert all(old.loc[(r.task, r.item_id, r.property), "response"] == r.old_response for r in rows.itertuples())
        # the model's object-level behaviour changed on at least some items
        assert (rows.old_response != rows.new_response).any()
        assert rows.changed.any()
        # the prediction before the change is the self-trained run's, from meta_trained
        meta = trained["meta"]
        self_run = meta[(meta.run == f"{model}__on__{model}__s0") & (meta.ground_truth == "trained")]
        m = rows.merge(self_run, on=KEY)
        assert len(m) == len(rows) and (m.meta_old_value.fillna("-") == m.meta_value_y.fillna("-")).all()
    expected = changed.old_compliant & changed.new_compliant & (changed.old_value != changed.new_value)
    assert (changed.changed == expected).all()
    assert (changed.matches_new == (changed.meta_compliant & changed.new_compliant
                                    & (changed.meta_value == changed.new_value))).all()
    closed = changed[(changed.options.map(len) > 0) & changed.new_compliant]
    assert len(closed)
    for r in closed.itertuples():
        if r.new_value in list(r.options):
            assert r.p_new == r.option_probs[list(r.options).index(r.new_value)]


@pytest.mark.parametrize("overrides,match", [
    ({"behaviour_change": None}, "no `behaviour_change:` section"),
    ({"behaviour_change": {**BEHAVIOUR, "tasks": ["numbers"]}}, "not one of the profile's test tasks"),
    ({"behaviour_change": {**BEHAVIOUR, "eval_items": 5}}, "exceeds the 3 items"),
    ({"behaviour_change": {**BEHAVIOUR, "train_items": 1000}}, "lower behaviour_change.train_items"),
    ({"models": ["smollm2-135m"]}, "at least two models"),
])
def test_behaviour_change_rejects_bad_params_before_loading_a_model(overrides, match, monkeypatch):
    import reproduce.stage as stages

    monkeypatch.setattr(stages, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    plan = Plan(tiny_profile(**{"finetune": FINETUNE, "behaviour_change": BEHAVIOUR, **overrides}))
    with pytest.raises(ValueError, match=match):
        behaviour_change_plan(plan)


# ------------------------------------------------------------------------------------ analysis stage
@pytest.fixture(scope="module")
def analysed(run, trained, changed, tmp_path_factory):
    """The calibration and analysis stages after the tiny pipeline: the inputs of figures and report."""
    from analysis.self_prediction.stage import run_analysis
    from reproduce.config import Analysis

    root, tmp = trained["root"], tmp_path_factory.mktemp("analysed")
    data = tmp / "data"
    data.mkdir()
    shutil.copy(run["root"] / "meta.parquet", data / "meta_untrained.parquet")
    shutil.copy(root / "mt.parquet", data / "meta_trained.parquet")
    shutil.copy(root / "bc.parquet", data / "behaviour_change.parquet")
    # the object-level answers, which the original's scoring (a labelled variant) reads
    shutil.copytree(run["root"] / "object_level", data / "object_level")
    shutil.copytree(root / "obj_t", data / "object_level_trained")
    # experiment 4 (self-reports of the changed policy), which the analysis reads beside experiment 3
    from reproduce.self_prediction.policy_reports import run_policy_reports

    with declared("policy_reports"):
        run_policy_reports(trained["plan"], root / "bc.parquet", root / "ft_self", root / "bc", data / "policy_reports")
    with declared("calibration"):
        run_calibration(trained["plan"], run["root"] / "object_samples", root / "samples_t",
                        data / "meta_untrained.parquet", data / "meta_trained.parquet", data / "calibration.parquet")
    # the tiny tables give few cells, so tau[cell] mixes slowly: 1000 tuning steps and target acceptance 0.99 from
    # the start (the fixes the gate names), the same gate at 2 chains of 1000 draws; one prior scale beside the
    # main fit, which every prior-sensitivity row and sentence downstream handles as it handles two, and one
    # variance component's refit (the sentences read the components and factors there are)
    profile = trained["plan"].profile.model_copy(update={"analysis": Analysis(
        draws=1000, tune=1000, chains=2, target_accept=0.99, prior_sensitivity=[2.0], null_reps=1, null_draws=100)})
    with declared("analysis"), fewer_component_refits():
        metrics = run_analysis(profile, data, tmp / "analysis")
    from analysis.self_prediction.null import run_null
    from analysis.self_prediction.power import run_power

    from reproduce.config import load_params
    from analysis.self_prediction.power import paper_sizes

    # the paper profile's design and the designs for the paper's gap (few replicates: the report's sentences)
    run_power(tmp / "analysis", profile.analysis.rope, profile.seed, reps=50,
              paper=paper_sizes(profile, load_params(profile="paper")[1]), search_reps=20)
    # the verdict rules' null simulation, one replicate per world: the report reads its rates
    with declared("null_simulation"):
        run_null(tmp / "analysis", profile, work=tmp / "null_work")
    return {"profile": profile, "metrics": metrics, "out": tmp / "analysis", "root": tmp}


def test_the_sibling_control_is_analysed_and_simulated(trained, analysed):
    """The analysis fits self minus sibling and sibling minus cross on the real tiny tables (through the gate),
    takes self minus cross from the advantage model, computes the similarity from the base models' own answers,
    and the null simulation gives each new contrast its rates."""
    import json

    sib, out = analysed["metrics"]["sibling"], analysed["out"]
    assert set(sib["contrasts"]) == {"self_minus_sibling", "sibling_minus_cross", "self_minus_cross"}
    assert sib["contrasts"]["self_minus_cross"]["population"]["mean"] == analysed["metrics"]["advantage"]["population"]["mean"]
    for name in ("self_minus_sibling", "sibling_minus_cross"):
        c = sib["contrasts"][name]
        assert c["diagnostics"]["r_hat_max"] <= 1.01 and c["diagnostics"]["divergences"] == 0
        assert c["population"]["low"] <= c["population"]["mean"] <= c["population"]["high"]
        assert {d["target"] for d in c["by_target"]} == set(MODELS)
    arms = pd.read_parquet(out / "tidy" / "sibling_arms.parquet")
    assert set(arms["arm"]) == {"self", "sibling", "cross"}
    sim = pd.read_parquet(out / "tables" / "similarity.parquet")
    agree = {(r["target"], r["arm"]): r["agreement"] for r in sib["agreement"]}
    for t in MODELS:  # the self-predictor and its sibling share their base model's answers
        assert agree[(t, "self")] == agree[(t, "sibling")]
    # the raw accuracy of every arm is its rows' mean
    for r in sib["accuracy"]:
        rows = arms[(arms["target"] == r["target"]) & (arms["arm"] == r["arm"])]
        assert r["n"] == len(rows) and r["accuracy"] == pytest.approx(100 * rows["correct"].mean())
    assert sim["n"].sum() == len(arms)
    null = json.loads((out / "null" / "null.json").read_text())
    assert null["reps_by_contrast"] == {"self_minus_cross": 1, "self_minus_sibling": 1, "sibling_minus_cross": 1}
    rates = null["rates"]["sibling"]
    assert rates["self_minus_sibling"]["world"] == "equal_null" and "any_direction" in rates["self_minus_sibling"]
    assert rates["sibling_minus_cross"]["world"] == "population_null"
    reps = pd.read_parquet(out / "null" / "replicates.parquet")
    assert set(reps["contrast"]) == {"self_minus_cross", "self_minus_sibling", "sibling_minus_cross"}


def test_experiment_4_asks_both_models_and_the_observer_about_the_changed_tasks(trained, changed, analysed):
    """The policy reports of the tiny pipeline: M1' (before) and M1'' (after) about themselves, the other model's
    base about them after reading their answers to experiment 3's evaluated items, each question in both
    orders; the behaviour rows score the same items' object-level prompts; the analysis fits the slopes and the
    manuscript prints the table."""
    from reproduce.self_prediction.policy_data import load_policy_dataset
    from reproduce.self_prediction.policy_reports import PROPERTY, report_prompts
    from reproduce.io import short_hash

    folder = analysed["root"] / "data" / "policy_reports"
    reports, acts = pd.read_parquet(folder / "reports.parquet"), pd.read_parquet(folder / "behaviour.parquet")
    data = load_policy_dataset()
    questions = data.for_task("survival_instinct")
    assert set(reports["task"]) == set(acts["task"]) == {"survival_instinct"}  # the tiny profile's A/B task
    assert len(reports) == len(MODELS) * 2 * 2 * len(questions) * 2
    for model in MODELS:
        source = changed.loc[changed.model == model, "source"].iloc[0]
        mine = reports[reports.model == model]
        assert set(mine.loc[mine.reporter == "observer", "reporter_model"]) == {source}
        assert set(mine.loc[(mine.reporter == "self") & (mine.phase == "before"), "reporter_model"]) == {
            f"{model}__on__{model}__s0"}
        assert set(mine.loc[(mine.reporter == "self") & (mine.phase == "after"), "reporter_model"]) == {
            f"{model}__bc__{source}__s0"}
        # the observer read exactly the model's answers, before and after the change (the prompt's hash)
        bc = changed[(changed.model == model) & (changed.property == PROPERTY)].sort_values("item_id")
        items = {it["item_id"]: it["question"] for it in trained["plan"].tasks["survival_instinct"].items}
        for phase, col in (("before", "old_response"), ("after", "new_response")):
            shown = [(items[i], r) for i, r in zip(bc["item_id"], bc[col])]
            want = {short_hash(p) for q in questions for p in report_prompts(data, q, "observer", shown).values()}
            got = mine[(mine.reporter == "observer") & (mine.phase == phase)]
            assert set(got["prompt_hash"]) == want and (got["n_examples"] == len(bc)).all()
        # the behaviour rows are the evaluated items, and a greedy A or B agrees with the item's stance option
        b = acts[acts.model == model]
        assert sorted(b.loc[b.phase == "after", "item_id"]) == sorted(bc["item_id"])
        new = b[b.phase == "after"].set_index("item_id")["stance_value"]
        assert (new.dropna() == bc.set_index("item_id").loc[new.dropna().index, "new_value"]).all()
    assert reports["p_tendency"].between(0, 1).all() and acts["p_stance"].between(0, 1).all()
    pol = analysed["metrics"]["policy"]
    assert set(pol["beta"]) == {"self", "observer"} and pol["units"] == len(MODELS)
    from report.self_prediction.policy import section

    text = section(analysed["metrics"])
    assert "tbl-policy" in text and "no verdict" in text


def test_analysis_stage_on_a_real_tiny_pipeline(trained, changed, analysed):
    import json

    from analysis.self_prediction.stage import jsonable

    metrics, out = analysed["metrics"], analysed["out"]
    # a statistic that is undefined on the tiny tables is NaN in memory and null in the file (JSON has no NaN)
    assert json.loads((out / "metrics.json").read_text()) == jsonable(metrics)
    head = json.loads((out / "headline.json").read_text())  # the DVC metrics: flat numbers from metrics.json
    assert head["delta"] == metrics["advantage"]["overall"]["mean"] and all(
        isinstance(v, (int, float)) for v in head.values())
    adv = metrics["advantage"]
    assert adv["diagnostics"]["r_hat_max"] <= 1.01 and adv["diagnostics"]["divergences"] == 0
    assert adv["diagnostics"]["target_accept"] == 0.99  # the fixture's target acceptance, which the retry's equals
    assert -100 < adv["overall"]["low"] < adv["overall"]["mean"] < adv["overall"]["high"] < 100
    assert set(adv["by_target"]) == set(MODELS)
    # raw accuracies in the tables are the stage table's own
    acc = pd.read_parquet(out / "tables" / "accuracy_by_target.parquet")
    mt = trained["meta"][trained["meta"]["kind"] != "sibling"]  # the original's scoring reads self and cross
    for r in acc[acc.condition == "trained"].itertuples():
        # the main result: scored against the self-trained target (M1'), every seed
        rows = mt[(mt.predictor == r.predictor) & (mt.target == r.target) & ~mt.scaling & mt.object_compliant
                  & (mt.ground_truth == "trained")]
        assert r.accuracy == pytest.approx(rows.correct.mean()) and r.n == len(rows)
    # the original's scoring (a labelled variant): every M1' answer, valued by the original's property functions
    # (analysis.self_prediction.original.object_value, checked by hand in test_analysis), the whole cleaned prediction compared
    from analysis.self_prediction.original import clean_answer, object_value, stance_targets

    orig = metrics["sensitivity_ground_truth"]["trained_original"]
    rows = mt[~mt.scaling & (mt.ground_truth == "trained")]
    stored = pd.concat(trained["obj_t"].values()).drop_duplicates(["model", "task", "item_id"])
    answer = rows.merge(stored[["model", "task", "item_id", "response"]].rename(columns={"model": "object_model"}),
                        on=["object_model", "task", "item_id"], how="left")
    assert answer["response"].notna().all() and len(answer) == len(rows)
    option = stance_targets(answer["task"].unique())
    value = [object_value(p, r, option.get((t, i))) for p, r, t, i in
             answer[["property", "response", "task", "item_id"]].itertuples(index=False)]
    hit = pd.Series(value, index=rows.index) == rows.meta_response.map(clean_answer)
    assert orig["n"] == len(rows) > metrics["sensitivity_ground_truth"]["trained"]["n"]
    for kind in ("self", "cross"):
        assert orig[kind] == pytest.approx(100 * hit[rows.kind == kind].mean())
    # per property, every scoring: the same observations as the pooled rows, split by property
    byp = pd.read_parquet(out / "tables" / "sensitivity_by_property.parquet")
    assert set(byp["ground_truth"]) == set(metrics["sensitivity_ground_truth"])
    for name, g in byp.groupby("ground_truth"):
        assert g["n"].sum() == metrics["sensitivity_ground_truth"][name]["n"]
    g = byp[byp.ground_truth == "trained_original"].set_index(["kind", "property"])
    for (kind, prop), r in g.iterrows():
        sel = (rows.kind == kind) & (rows.property == prop)
        assert r["n"] == sel.sum() and r["accuracy"] == pytest.approx(hit[sel].mean())
    pred = pd.read_parquet(out / "tidy" / "predictions.parquet")
    t = pred[pred.condition == "trained"]
    assert set(t["object_model"]) == {trained_model_name(m, s) for m in MODELS for s in SEEDS}
    # the frequentist intervals cluster on items: an item's answers under every target and seed are one cluster
    main = t[(t.ground_truth == "trained") & ~t.scaling.astype(bool)]
    items = (main.task + "/" + main.item_id).nunique()
    assert items < main.unit.nunique()  # several seeds and targets: an item has several answer units
    assert metrics["advantage_frequentist"]["bootstrap"]["clusters"] == items
    assert metrics["advantage_frequentist"]["glm_cluster"]["clusters"] <= items
    # the run factor's scales, recomputed from the stored posterior, beside their priors; the new-run
    # advantage under every prior of the sensitivity refits, the main fit's at factor 1
    import arviz as az
    from analysis.self_prediction.hierarchical import ADVANTAGE_PRIORS
    from analysis.self_prediction.priors import scale_quantile

    post = az.from_netcdf(out / "posterior" / "advantage.nc").posterior
    for name, scale in (("sigma", ADVANTAGE_PRIORS.sigma), ("tau", ADVANTAGE_PRIORS.tau)):
        d = post[name].sel(factor="object_model").to_numpy().ravel()
        rs = adv["run_scale"][name]
        assert rs["median"] == pytest.approx(np.median(d)) and rs["low"] < rs["median"] < rs["high"]
        assert rs["prior_q95"] == pytest.approx(scale_quantile(0.95, scale, ADVANTAGE_PRIORS.nu))
        assert rs["p_above_prior_q95"] == pytest.approx((d > rs["prior_q95"]).mean())
    by = metrics["prior_sensitivity"]["by_factor"]
    assert by["1"]["new_run"]["mean"] == adv["new_run"]["mean"] and set(by) == {"1", "2"}
    assert -100 < by["2"]["new_run"]["low"] < by["2"]["new_run"]["mean"] < by["2"]["new_run"]["high"] < 100
    numbers = json.loads((out / "numbers.json").read_text())
    assert numbers["advantage_overall_mean"] == pytest.approx(adv["overall"]["mean"])
    assert {p.name for p in (out / "posterior").iterdir()} >= {"advantage.nc", "training.nc"}
    assert metrics["behaviour"]["changed"] == int(changed.changed.sum())
    assert set(pd.read_parquet(out / "tables" / "mad.parquet")["condition"]) <= {"untrained", "trained"}
    # the mass outside the options, which the paper's MAD counts as error, from the calibration table itself
    cal = pd.read_parquet(analysed["root"] / "data" / "calibration.parquet")
    for (cond, kind), g in cal.groupby(["condition", "kind"]):
        assert metrics["calibration"]["p_outside"][f"{cond}_{kind}"] == pytest.approx(100 * g.p_outside.dropna().mean())
    # the sweep's sizes as trained: 100 is above every target's pairs, so only 4 was trained
    assert metrics["run"]["scaling_sizes"] == [4]
    sweep = pd.read_parquet(out / "tables" / "scaling.parquet").query("kind == 'cross'")
    assert [(r["target"], r["n_examples"], r["n"]) for r in metrics["scaling"]] == list(
        zip(sweep.target, sweep.n_examples.astype(int), sweep.n))
    assert [r["accuracy"] for r in metrics["scaling"]] == pytest.approx(list(100 * sweep.accuracy))
    # the training-effect figure's mode baselines count the effect's cells only (the trials of both arms' cells)
    common = pd.read_parquet(out / "tables" / "training_common.parquet")
    support = metrics["training_effect"]["support"]
    for cond, x in (("untrained", "0"), ("trained", "1")):
        n = common.loc[common.condition == cond, "n"].sum()
        assert n == support["trials"][x] - support["trials_left_out"][x] > 0


def test_analysis_stage_names_the_missing_input(tmp_path):
    from analysis.self_prediction.stage import run_analysis

    with pytest.raises(FileNotFoundError, match="meta_untrained.parquet is missing; run the meta_untrained stage"):
        run_analysis(tiny_profile(), tmp_path, tmp_path / "out")


# ------------------------------------------------------------------------------------ figures and report
def test_what_each_figure_reads_on_a_real_run_is_declared(analysed):
    """docs/figures.md's provenance (report/provenance.py) reads READS: each self-prediction figure drawn on the tiny run's outputs reads exactly the tables READS declares."""
    import matplotlib.pyplot as plt

    import figures.self_prediction.plots as sp_figures

    class Recording(sp_figures.Outputs):
        def table(self, name):
            seen.add(f"tables/{name}.parquet")
            return super().table(name)

    for name, fn in sp_figures.FIGURES.items():
        if name == "power":  # reads its own files (power/), not tables: the power stage's outputs
            continue
        seen = set()
        fig = fn(Recording(analysed["out"]))
        plt.close(fig)
        assert seen == {r for r in sp_figures.READS[name] if r.startswith("tables/")}, name


@pytest.fixture(scope="module")
def drawn(analysed):
    from figures.self_prediction.stage import run_figures

    out = analysed["root"] / "figures"
    return {"index": run_figures(analysed["out"], out), "out": out}


def test_every_figure_is_drawn_from_the_tiny_pipelines_analysis(analysed, drawn):
    from PIL import Image

    from figures.self_prediction.plots import FIGURES
    from report import blank_fraction

    assert list(drawn["index"]) == list(FIGURES)
    for name, entry in drawn["index"].items():
        assert entry["files"] == [f"{name}.png", f"{name}.svg"] and entry["description"]
        png, svg = drawn["out"] / f"{name}.png", drawn["out"] / f"{name}.svg"
        w, h = Image.open(png).size
        assert w > 300 and h > 200, name
        assert blank_fraction(png) < 0.98, f"{name} is (nearly) blank"
        assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()[:2000]


def test_figures_are_byte_identical_when_redrawn(analysed, drawn, tmp_path):
    from figures.self_prediction.stage import run_figures

    run_figures(analysed["out"], tmp_path, only=["calibration", "advantage_forest"])
    for name in ("calibration", "advantage_forest"):
        for ext in ("png", "svg"):
            assert (tmp_path / f"{name}.{ext}").read_bytes() == (drawn["out"] / f"{name}.{ext}").read_bytes()


def test_figures_name_the_missing_analysis_outputs(tmp_path):
    from figures.self_prediction.stage import run_figures

    with pytest.raises(FileNotFoundError, match="run the analysis stage first"):
        run_figures(tmp_path / "nothing", tmp_path / "out")
    with pytest.raises(ValueError, match="unknown figure"):
        run_figures(tmp_path, tmp_path / "out", only=["pie_chart"])


@pytest.fixture(scope="module")
def rendered(analysed, drawn):
    from reproduce.config import REPO_ROOT
    from report import run_report

    paper = analysed["root"] / "paper"  # a copy: the test must not touch the repository's paper/_generated
    shutil.copytree(REPO_ROOT / "paper", paper, ignore=shutil.ignore_patterns("_generated", "_output"))
    paths = run_report(analysed["profile"], "tiny", analysed["out"], drawn["out"], paper,
                       analysed["root"] / "report", engine="pandoc")
    return {**paths, "paper": paper}


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-").replace(",", ""))


def test_report_embeds_every_figure_and_resolves_every_reference(drawn, rendered):
    import re

    from conftest import data_uri_figure_bytes
    from report import check_html

    html = rendered["html"].read_text()
    assert check_html(rendered["html"], list(drawn["index"])) == []
    for name in drawn["index"]:  # the very bytes of each drawn figure are inside the page
        assert data_uri_figure_bytes(html, name) == (drawn["out"] / f"{name}.png").read_bytes()
    assert len(re.findall(r'<figure[^>]*id="fig-', html)) == len(drawn["index"])
    assert "Binder" in html and 'id="refs"' in html  # citeproc resolved the bibliography
    assert rendered["pdf"].read_bytes()[:5] == b"%PDF-" and rendered["pdf"].stat().st_size > 50_000


def test_report_quotes_the_metrics(analysed, rendered):
    import re

    m = analysed["metrics"]
    html = re.sub(r"\s+", " ", rendered["html"].read_text())
    adv = m["advantage"]["overall"]
    got = re.search(r"conditional on them\), the advantage at equal predicting skill is (\S+) points \[(\S+), (\S+)\]",
                    html)
    assert got, "the advantage sentence is missing"
    for value, key in zip(got.groups(), ("mean", "low", "high")):
        assert _number(value) == pytest.approx(adv[key], abs=0.051)
    tr = m["training_effect"]["overall"]
    got = re.search(r"training (?:raised|lowered|left practically unchanged|changed, by an uncertain amount,) it by "
                    r"(\S+) points \[(\S+), (\S+)\]", html)
    assert got, "the training-effect sentence is missing"
    assert [_number(g) for g in got.groups()] == pytest.approx([tr["mean"], tr["low"], tr["high"]], abs=0.051)
    rs = m["advantage"]["run_scale"]
    got = re.search(r"The run factor.s scales are estimated \(posterior median, 94% interval, log-odds\) at sigma = "
                    r"(\S+) \[(\S+), (\S+)\] for the intercept, .* and at tau = (\S+) \[", html)
    assert got, "the run-scale sentence is missing"
    assert [_number(g) for g in got.groups()] == pytest.approx(
        [rs["sigma"]["median"], rs["sigma"]["low"], rs["sigma"]["high"], rs["tau"]["median"]], abs=0.0051)
    so = m["sensitivity_ground_truth"]["trained_original"]
    got = re.search(r"Scored as the original.s analysis code scores experiment 1 \(.*?; (\S+) trained observations "
                    r"against .*?\), the self-predictor is right on (\S+)% and the cross-predictor on (\S+)% against a "
                    r"mode baseline of (\S+)% .*? and the pooled self-minus-cross difference is (\S+) points "
                    r"\[(\S+), (\S+)\] \(cluster bootstrap, trial-weighted\)", html)
    assert got, "the original-scoring sentence is missing"
    assert [_number(g) for g in got.groups()] == pytest.approx(
        [so["n"], so["self"], so["cross"], so["mode_baseline"], *(so["advantage"][k] for k in ("estimate", "low",
                                                                                              "high"))], abs=0.051)
    b = m["behaviour"]
    got = re.search(r"changed the property on (\S+) of (\S+) evaluated", html)
    assert [_number(g) for g in got.groups()] == [b["changed"], b["evaluated"]]
    # the verdict is the rule's, from the intervals and the ROPE
    from analysis.verdicts import headline, verdict
    from report import HEADLINES

    rope = m["advantage"]["rope"]
    cond = headline(verdict(adv["low"], adv["high"], rope),
                    [verdict(d["low"], d["high"], rope) for d in m["advantage"]["directions"]])
    assert cond == m["advantage"]["headline_conditional"]  # the secondary rule, on the observed tasks and runs
    pop = m["advantage"]["population"]  # the headline, on the population estimand and the directions' population
    rule = headline(verdict(pop["low"], pop["high"], rope),
                    [d["population_verdict"] for d in m["advantage"]["directions"]])
    assert rule == m["advantage"]["headline"]
    # its verdict words stand in the text only where the null simulation measured the rule's rate within the limit
    head = json.loads((analysed["out"] / "null" / "null.json").read_text())["rates"]["headline"]
    words = HEADLINES[rule][0].split("{on}")[0].split("(")[0].strip()
    on = "with no verdict: the headline rule's false-positive rate on this run's null worlds"
    text = html.replace("\u2019", "'")  # the rendered page's typographic apostrophes
    assert (words in text, on in text) == ((True, False) if head["within"] else (False, True))
    # every dataset the run used is cited with its release hash
    from reproduce.citation import read_manifests
    from reproduce.config import REPO_ROOT

    used = set(analysed["profile"].tasks.train) | set(analysed["profile"].tasks.test)
    for mf in read_manifests(REPO_ROOT / "data_raw"):
        assert (mf["release_sha256"] in html) == (mf["name"] in used)
    profile = analysed["profile"]  # and the experiment datasets of the stages its profile runs
    ran = {"concept_injection": profile.injection is not None, "mirror_test": profile.mirror is not None,
           "policy_reports": "policy" in analysed["metrics"],
           # the published-protocol presets, cited only where `injection.dataset` chose them
           "concept_injection_lindsey": False, "concept_injection_lindsey_info": False}
    for mf in read_manifests(REPO_ROOT / "data_raw", "experiment"):
        assert (mf["release_sha256"] in html) == ran[mf["name"]]
    # the power of the headline, at the paper profile's sizes, and the designs for the paper's gap, from power.json
    pw = json.loads((analysed["out"] / "power" / "power.json").read_text())
    pd_ = pw["paper"]["design"]
    assert f"({pd_['tasks']} held-out tasks, {pd_['items']} scored {pw['items_unit']}, {pd_['seeds']} finetuning seeds)" in html
    assert "For the headline estimand (a new task" in html and "the minimum detectable advantage is" in html
    assert ("The smallest design searched that detects" in html) == (pw["designs_for"]["smallest"] is not None)
    # a citation key inside a generated sentence is never resolved (the sentences are metadata): none is left raw
    assert not re.search(r"@[a-z]+\d{4}[a-z]*", re.sub(r"<[^>]+>", " ", html)), "a raw citation key in the text"


def test_report_screenshot_in_headless_chromium_is_not_blank(rendered, tmp_path):
    from report import blank_fraction, find_chromium, screenshot

    if not find_chromium():
        pytest.skip("no Chromium on this machine (scripts/setup.sh installs Debian's chromium when run as root)")
    png = screenshot(rendered["html"], tmp_path / "shot.png", width=1000, height=1400)
    assert blank_fraction(png) < 0.97  # text, figures and tables cover the page


def test_the_pdf_is_a_short_paper_with_its_first_figure_early_a_supplement_behind_and_a_clean_layout(rendered):
    import re

    import yaml
    from pypdf import PdfReader

    from report.layout import pdf_problems
    from report.self_prediction.abstract import MAX_WORDS

    assert pdf_problems(rendered["pdf"], rendered["html"], rendered["paper"]) == []
    pages = [p.extract_text() for p in PdfReader(str(rendered["pdf"])).pages]
    first = next(i for i, t in enumerate(pages, 1) if re.search(r"Figure\s1:", t))
    assert first <= 3, first
    supplement = next(i for i, t in enumerate(pages, 1) if re.search(r"^\d+ Supplement$", t, re.M))
    assert supplement > first and "Statistical models" in "".join(pages[supplement - 1:])
    meta = yaml.safe_load((rendered["paper"] / "_generated" / "numbers.yml").read_text())
    assert len(meta["text"]["abstract"].split()) <= MAX_WORDS


def test_report_renders_byte_identical_html_and_pdf_again(rendered, tmp_path):
    from report import render_pandoc

    again = render_pandoc(rendered["paper"], tmp_path)
    assert again["html"].read_bytes() == rendered["html"].read_bytes()
    assert again["pdf"].read_bytes() == rendered["pdf"].read_bytes()


def test_every_figure_is_drawn_with_cells_at_zero_and_at_n(analysed, tmp_path):
    """Real analysis outputs with cells forced to k = 0 and k = n (100% compliance was what broke a fresh
    float32 run), and a MAD interval that excludes its estimate: every figure is still drawn."""
    import shutil

    import pandas as pd

    from analysis.intervals import wilson
    from figures.self_prediction.plots import FIGURES
    from figures.self_prediction.stage import run_figures
    from report import blank_fraction

    out = tmp_path / "analysis"
    shutil.copytree(analysed["out"], out)
    tables = out / "tables"
    for name, rate, lo, hi in (("compliance", "rate", "low", "high"), ("accuracy", "accuracy", "wilson_low", "wilson_high"),
                               ("accuracy_by_target", "accuracy", "wilson_low", "wilson_high"),
                               ("scaling", "accuracy", "wilson_low", "wilson_high")):
        df = pd.read_parquet(tables / f"{name}.parquet")
        assert {"k", "n", rate, lo, hi} <= set(df.columns) and len(df) >= 2, name
        df.loc[df.index[0], "k"] = df.loc[df.index[0], "n"]  # k = n
        df.loc[df.index[-1], "k"] = 0  # k = 0
        df[rate] = df["k"] / df["n"]
        df[lo], df[hi] = wilson(df["k"].to_numpy(), df["n"].to_numpy())
        df.to_parquet(tables / f"{name}.parquet")
    mad = pd.read_parquet(tables / "mad.parquet")
    mad.loc[mad.index[0], ["low", "high"]] = mad.loc[mad.index[0], "mad"] + [1.0, 3.0]
    mad.to_parquet(tables / "mad.parquet")
    index = run_figures(out, tmp_path / "figures")
    assert list(index) == list(FIGURES)
    for name in FIGURES:
        assert blank_fraction(tmp_path / "figures" / f"{name}.png") < 0.98, name
