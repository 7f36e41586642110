"""Experiments 1-3 as stages on the real embedded models (tiny profile): self- and cross-prediction
finetunes and their held-out predictions, the calibration table, and behaviour change."""

import json
import shutil

import pandas as pd
import pytest

from conftest import tiny_profile
from reproduce.properties import get_property
from reproduce.stages import (Plan, behaviour_change_plan, object_distribution, run_behaviour_change,
                              run_calibration, run_finetune, run_meta_trained)

MODELS = ("smollm2-135m", "gemma3-270m")
FINETUNE = {"lora_rank": 4, "lora_alpha": 8, "learning_rate": 1e-3, "epochs": 1, "batch_size": 4, "max_examples": 8,
            "mixed_precision": "no", "checkpoint_every": 1, "scaling_sizes": [4, 100]}
BEHAVIOUR = {"tasks": None, "eval_items": None, "train_items": 8, "learning_rate": 3e-3, "epochs": 3}


@pytest.fixture(scope="module")
def trained(run, tmp_path_factory):
    """The finetune and meta_trained stages after the shared foundation run."""
    root = tmp_path_factory.mktemp("trained")
    plan = Plan(tiny_profile(finetune=FINETUNE, behaviour_change=BEHAVIOUR))
    obj = run["root"] / "object_level"
    index = run_finetune(plan, obj, root / "ft", root / "curves", root / "work")
    meta = pd.read_parquet(run_meta_trained(plan, obj, root / "ft", root / "mt.parquet", root / "work"))
    return {"plan": plan, "root": root, "obj": obj, "index": index, "meta": meta}


def test_finetune_runs_self_and_cross_in_both_directions_on_train_tasks_only(run, trained):
    index, root = trained["index"], trained["root"]
    assert index == json.loads((root / "ft" / "runs.json").read_text())
    full = [r for r in index if not r["scaling"]]
    assert {(r["predictor"], r["target"], r["kind"]) for r in full} == {
        ("smollm2-135m", "smollm2-135m", "self"), ("gemma3-270m", "smollm2-135m", "cross"),
        ("gemma3-270m", "gemma3-270m", "self"), ("smollm2-135m", "gemma3-270m", "cross")}
    sweep = [r for r in index if r["scaling"]]  # size 4 only: 100 is not smaller than the 8 pairs there are
    assert {(r["kind"], r["n_examples"]) for r in sweep} == {("cross", 4)} and len(sweep) == 2
    for target in MODELS:
        ex = pd.read_parquet(root / "ft" / "examples" / f"{target}.parquet")
        assert set(ex["task"]) == {"numbers"} and len(ex) == 8  # train tasks only
        ours = run["object"][target].set_index(["task", "item_id", "property"])["value"]
        assert all(ours[(r.task, r.item_id, r.property)] == r.answer for r in ex.itertuples())
    assert len(list((root / "curves").glob("*.tsv"))) == len(index)


def test_finished_finetunes_are_reused_after_dvc_deletes_the_outputs(trained, tmp_path, monkeypatch):
    from reproduce import finetune as ft

    out = tmp_path / "ft"
    shutil.copytree(trained["root"] / "ft", out)
    shutil.rmtree(out)  # what DVC does before re-running a stage
    monkeypatch.setattr(ft, "answer_loss", lambda *a, **k: pytest.fail("a finished run was trained again"))
    index = run_finetune(trained["plan"], trained["obj"], out, tmp_path / "curves", trained["root"] / "work")
    assert index == trained["index"]


def test_meta_trained_evaluates_every_run_on_held_out_tasks_about_its_target(trained):
    meta = trained["meta"]
    assert set(meta["run"]) == {r["run"] for r in trained["index"]}
    assert set(meta["task"]) == {"animals", "survival_instinct"}
    for r in trained["index"]:
        rows = meta[meta.run == r["run"]]
        assert set(rows["target"]) == {r["target"]} and set(rows["kind"]) == {r["kind"]}
        assert len(rows) == 3 * 7 + 3 * 1


def test_finetune_stage_needs_finetune_params(run):
    with pytest.raises(ValueError, match="no `finetune:` section"):
        run_finetune(Plan(tiny_profile()), run["root"] / "object_level")


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


def test_calibration_table_puts_object_distributions_beside_every_predictor(run, trained):
    root = trained["root"]
    cal = pd.read_parquet(run_calibration(trained["plan"], run["root"] / "object_samples", run["root"] / "meta.parquet",
                                          root / "mt.parquet", root / "cal.parquet"))
    assert set(cal["condition"]) == {"untrained", "trained"}
    for condition in ("untrained", "trained"):
        c = cal[cal.condition == condition]
        assert set(zip(c.predictor, c.target)) == {(a, b) for a in MODELS for b in MODELS}
        # the calibration subset (2 items per test task) x the closed properties (4 for animals, 1 for A/B)
        assert c.groupby(["predictor", "target"]).size().eq(2 * 4 + 2 * 1).all()
    assert not cal.loc[cal.condition == "trained", "run"].str.contains("__n").any()  # no scaling runs
    samples = pd.concat(run["samples"].values())
    for r in cal.itertuples():
        s = samples[(samples.model == r.target) & (samples.task == r.task) & (samples.item_id == r.item_id)
                    & (samples.property == r.property) & samples.compliant]
        assert list(r.object_counts) == [int((s.value == o).sum()) for o in get_property(r.property).options]
        assert sum(r.object_counts) + r.n_other == r.n_compliant == len(s)
        assert abs(sum(r.meta_probs) - 1) < 1e-5
    u = cal[cal.condition == "untrained"].merge(run["meta"], on=["predictor", "target", "task", "item_id", "property"])
    assert all(list(a) == list(b) for a, b in zip(u.meta_probs, u.option_probs)) and len(u) == (cal.condition == "untrained").sum()


# ------------------------------------------------------------------------------------ behaviour change
@pytest.fixture(scope="module")
def changed(trained):
    root = trained["root"]
    out = run_behaviour_change(trained["plan"], trained["obj"], root / "ft", root / "mt.parquet", root / "bc.parquet",
                               root / "bc", root / "bc_curves", root / "work")
    return pd.read_parquet(out)


def test_behaviour_change_trains_on_the_other_models_answers_to_held_out_items(trained, changed):
    root = trained["root"]
    assert set(zip(changed.model, changed.source)) == {("smollm2-135m", "gemma3-270m"), ("gemma3-270m", "smollm2-135m")}
    for model, source in set(zip(changed.model, changed.source)):
        ex = pd.read_parquet(root / "bc" / "examples" / f"{model}.parquet")
        assert set(ex["target"]) == {source}  # the other model's answers
        evaluated = set(changed.loc[changed.model == model, "item_id"])
        assert evaluated.isdisjoint(ex["item_id"])  # evaluated items are held out
        assert len(ex) == 2 * 8 and ex["answer"].str.len().gt(0).all()
        assert (root / "bc" / f"{model}__bc__{source}" / "adapter").is_dir()
        assert (root / "bc_curves" / f"{model}__bc__{source}.tsv").exists()


def test_behaviour_change_records_old_and_new_behaviour_and_the_new_prediction(trained, changed):
    for model in MODELS:
        rows = changed[changed.model == model]
        assert len(rows) == 3 * 7 + 3 * 1
        # the model's object-level behaviour changed on at least some items
        assert (rows.old_response != rows.new_response).any()
        assert rows.changed.any()
        # the prediction before the change is the self-trained run's, from meta_trained
        self_run = trained["meta"][trained["meta"].run == f"{model}__on__{model}"]
        m = rows.merge(self_run, on=["task", "item_id", "property"])
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
    import reproduce.stages as stages

    monkeypatch.setattr(stages, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    plan = Plan(tiny_profile(**{"finetune": FINETUNE, "behaviour_change": BEHAVIOUR, **overrides}))
    with pytest.raises(ValueError, match=match):
        behaviour_change_plan(plan)


# ------------------------------------------------------------------------------------ analysis stage
@pytest.fixture(scope="module")
def analysed(run, trained, changed, tmp_path_factory):
    """The calibration and analysis stages after the tiny pipeline: the inputs of figures and report."""
    from analysis.stage import run_analysis
    from reproduce.config import Analysis

    root, tmp = trained["root"], tmp_path_factory.mktemp("analysed")
    data = tmp / "data"
    data.mkdir()
    shutil.copy(run["root"] / "meta.parquet", data / "meta_untrained.parquet")
    shutil.copy(root / "mt.parquet", data / "meta_trained.parquet")
    shutil.copy(root / "bc.parquet", data / "behaviour_change.parquet")
    run_calibration(trained["plan"], run["root"] / "object_samples", data / "meta_untrained.parquet",
                    data / "meta_trained.parquet", data / "calibration.parquet")
    profile = trained["plan"].profile.model_copy(update={"analysis": Analysis(draws=1000, tune=1000)})
    metrics = run_analysis(profile, data, tmp / "analysis")
    return {"profile": profile, "metrics": metrics, "out": tmp / "analysis", "root": tmp}


def test_analysis_stage_on_a_real_tiny_pipeline(trained, changed, analysed):
    import json

    metrics, out = analysed["metrics"], analysed["out"]
    assert json.loads((out / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    adv = metrics["advantage"]
    assert adv["diagnostics"]["r_hat_max"] <= 1.01 and adv["diagnostics"]["divergences"] == 0
    assert -100 < adv["overall"]["low"] < adv["overall"]["mean"] < adv["overall"]["high"] < 100
    assert set(adv["by_target"]) == set(MODELS)
    # raw accuracies in the tables are the stage table's own
    acc = pd.read_parquet(out / "tables" / "accuracy_by_target.parquet")
    mt = trained["meta"]
    for r in acc[acc.condition == "trained"].itertuples():
        rows = mt[(mt.predictor == r.predictor) & (mt.target == r.target) & ~mt.scaling & mt.object_compliant]
        assert r.accuracy == pytest.approx(rows.correct.mean()) and r.n == len(rows)
    numbers = json.loads((out / "numbers.json").read_text())
    assert numbers["advantage_overall_mean"] == pytest.approx(adv["overall"]["mean"])
    assert {p.name for p in (out / "posterior").iterdir()} >= {"advantage.nc", "training.nc"}
    assert metrics["behaviour"]["changed"] == int(changed.changed.sum())
    assert set(pd.read_parquet(out / "tables" / "mad.parquet")["condition"]) <= {"untrained", "trained"}


def test_analysis_stage_names_the_missing_input(tmp_path):
    from analysis.stage import run_analysis

    with pytest.raises(FileNotFoundError, match="meta_untrained.parquet is missing; run the meta_untrained stage"):
        run_analysis(tiny_profile(), tmp_path, tmp_path / "out")


# ------------------------------------------------------------------------------------ figures and report
@pytest.fixture(scope="module")
def drawn(analysed):
    from figures.stage import run_figures

    out = analysed["root"] / "figures"
    return {"index": run_figures(analysed["out"], out), "out": out}


def test_every_figure_is_drawn_from_the_tiny_pipelines_analysis(analysed, drawn):
    from PIL import Image

    from figures.plots import FIGURES
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
    from figures.stage import run_figures

    run_figures(analysed["out"], tmp_path, only=["calibration", "advantage_forest"])
    for name in ("calibration", "advantage_forest"):
        for ext in ("png", "svg"):
            assert (tmp_path / f"{name}.{ext}").read_bytes() == (drawn["out"] / f"{name}.{ext}").read_bytes()


def test_figures_name_the_missing_analysis_outputs(tmp_path):
    from figures.stage import run_figures

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

    from report import check_html, data_uri_figure_bytes

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
    got = re.search(r"the posterior advantage of self- over cross-prediction is (\S+) points \[(\S+), (\S+)\]", html)
    assert got, "the advantage sentence is missing"
    for value, key in zip(got.groups(), ("mean", "low", "high")):
        assert _number(value) == pytest.approx(adv[key], abs=0.051)
    tr = m["training_effect"]["overall"]
    got = re.search(r"by (\S+) points \(94% interval (\S+) to (\S+)\)", html)
    assert [_number(g) for g in got.groups()] == pytest.approx([tr["mean"], tr["low"], tr["high"]], abs=0.051)
    b = m["behaviour"]
    got = re.search(r"changed the property on (\S+) of (\S+) evaluated", html)
    assert [_number(g) for g in got.groups()] == [b["changed"], b["evaluated"]]
    # the verdict cannot contradict the interval
    inside = adv["low"] <= 0 <= adv["high"]
    assert ("there is no overall self-prediction advantage" in html) == inside
    # every dataset the run used is cited with its release hash
    from reproduce.citation import read_manifests
    from reproduce.config import REPO_ROOT

    used = set(analysed["profile"].tasks.train) | set(analysed["profile"].tasks.test)
    for mf in read_manifests(REPO_ROOT / "data_raw"):
        assert (mf["release_sha256"] in html) == (mf["name"] in used)


def test_report_screenshot_in_headless_chromium_is_not_blank(rendered, tmp_path):
    from report import blank_fraction, find_chromium, screenshot

    if not find_chromium():
        pytest.skip("no Chromium on this machine (scripts/setup.sh installs Debian's chromium when run as root)")
    png = screenshot(rendered["html"], tmp_path / "shot.png", width=1000, height=1400)
    assert blank_fraction(png) < 0.97  # text, figures and tables cover the page


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

    from analysis.frequentist import wilson
    from figures.plots import FIGURES
    from figures.stage import run_figures
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
