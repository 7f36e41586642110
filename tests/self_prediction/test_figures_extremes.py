"""Every figure is drawn from analysis outputs whose tables have cells at the boundaries: k = 0 and k = n
accuracies, 0% and 100% compliance (the float32 run that failed with "'xerr' must not contain negative
values"), and intervals that exclude their estimate. Runs the real ``analysis`` stage on small synthetic
stage tables (no language model), with short chains: the convergence gate is not what this tests, so it
records the diagnostics instead of raising (``tests/self_prediction/test_analysis.py`` tests the gate)."""

import json

import numpy as np
import pandas as pd
import pytest

from conftest import fewer_component_refits, tiny_profile

TASKS = ("animals", "years", "categories", "myopic_reward", "survival_instinct")


@pytest.fixture(scope="module")
def extreme_outputs(tmp_path_factory):
    import analysis.bayes as M
    from analysis.self_prediction.simulate import simulate_stage_tables, write_stage_tables
    from analysis.self_prediction.stage import run_analysis
    from reproduce.config import Analysis

    tables = simulate_stage_tables(seed=1, tasks=TASKS, items=8, calibration_items=4, n_samples=10, extremes="all",
                                   sibling=True)
    mu = tables["meta_untrained"]
    silent = mu["predictor"] == "smollm2-135m"  # an untrained predictor that never answers validly: 0% compliance
    mu.loc[silent, ["meta_value", "meta_response"]] = [None, ""]
    mu.loc[silent, ["meta_compliant", "correct"]] = False
    root = tmp_path_factory.mktemp("extremes")
    data = write_stage_tables(tables, root / "data")
    profile = tiny_profile().model_copy(update={"analysis": Analysis(draws=100, tune=100, chains=2, prior_sensitivity=[2.0])})
    gate = M.check_convergence
    M.check_convergence = lambda idata, name, **kw: M.diagnostics(idata)
    try:
        # every variance component, doubled only (four refits instead of eight)
        with fewer_component_refits(("sigma", "tau", "unit", "pair"), (2.0,)):
            metrics = run_analysis(profile, data, root / "analysis")
    finally:
        M.check_convergence = gate
    from analysis.self_prediction.power import run_power

    run_power(root / "analysis", profile.analysis.rope, profile.seed, reps=50, effect=None)
    return {"root": root, "out": root / "analysis", "metrics": metrics}


@pytest.mark.slowest
def test_the_outputs_have_cells_at_zero_and_at_n(extreme_outputs):
    tables = extreme_outputs["out"] / "tables"
    comp = pd.read_parquet(tables / "compliance.parquet")
    assert ((comp["k"] == comp["n"]) & (comp["level"] == "meta")).any() and (comp["k"] == 0).any()
    acc = pd.read_parquet(tables / "accuracy.parquet")
    assert (acc["k"] == 0).any() and (acc["k"] == acc["n"]).any()
    for df, rate, lo, hi in ((comp, "rate", "low", "high"), (acc, "accuracy", "wilson_low", "wilson_high")):
        assert ((0 <= df[lo]) & (df[lo] <= df[rate]) & (df[rate] <= df[hi]) & (df[hi] <= 1)).all()
    assert (comp.loc[comp["k"] == comp["n"], "high"] == 1.0).all() and (comp.loc[comp["k"] == 0, "low"] == 0.0).all()


@pytest.mark.slowest
def test_every_figure_is_drawn_and_not_blank(extreme_outputs, tmp_path):
    from PIL import Image

    from figures.self_prediction.plots import FIGURES
    from figures.self_prediction.stage import run_figures
    from report import blank_fraction

    out = tmp_path / "figures"
    index = run_figures(extreme_outputs["out"], out)
    assert list(index) == list(FIGURES)
    for name in FIGURES:
        w, h = Image.open(out / f"{name}.png").size
        assert w > 300 and h > 200, name
        assert blank_fraction(out / f"{name}.png") < 0.98, f"{name} is (nearly) blank"
        assert "<svg" in (out / f"{name}.svg").read_text()[:2000]


@pytest.mark.slowest
def test_intervals_that_exclude_their_estimate_are_drawn_as_they_are(extreme_outputs, tmp_path):
    """A posterior mean outside its equal-tailed interval and a MAD outside its percentile interval are legal;
    the figures draw those intervals where they lie, and nothing is clipped or refused."""
    import shutil

    import matplotlib.pyplot as plt

    from figures.self_prediction.plots import Outputs, advantage_forest
    from figures.self_prediction.stage import run_figures

    out = tmp_path / "analysis"
    shutil.copytree(extreme_outputs["out"], out)
    tables = out / "tables"
    adv = pd.read_parquet(tables / "advantage.parquet")
    adv.loc[adv.index[0], ["low", "high"]] = adv.loc[adv.index[0], "mean"] + np.array([0.02, 0.05])
    adv.to_parquet(tables / "advantage.parquet")
    mad = pd.read_parquet(tables / "mad.parquet")
    mad.loc[mad.index[0], ["low", "high"]] = mad.loc[mad.index[0], "mad"] + np.array([1.0, 3.0])
    mad.to_parquet(tables / "mad.parquet")
    run_figures(out, tmp_path / "figures", only=["advantage_forest", "calibration"])
    fig = advantage_forest(Outputs(out))
    spans = [tuple(sorted((s[0][0], s[1][0]))) for c in fig.axes[0].collections for s in c.get_segments()]
    m = adv.loc[adv.index[0]]
    assert (pytest.approx(100 * m["low"]), pytest.approx(100 * m["high"])) in spans
    plt.close(fig)
    assert json.loads((tmp_path / "figures" / "index.json").read_text()).keys() == {"advantage_forest", "calibration"}


@pytest.mark.slowest
def test_the_prior_sensitivity_rows_record_each_fits_sampler_settings(extreme_outputs):
    ps = pd.read_parquet(extreme_outputs["out"] / "tables" / "prior_sensitivity.parquet")
    every = ps[ps["component"] == "all"]
    assert list(every["prior_scale"]) == [1.0, 2.0]
    # and each variance component's scale scaled alone (the fixture doubles each), the others at their defaults
    one = ps[ps["component"] != "all"]
    assert set(one["component"]) == {"sigma", "tau", "unit", "pair"}
    assert all(sorted(g) == [2.0] for _, g in one.groupby("component")["prior_scale"])
    assert one["headline_low"].lt(one["headline_high"]).all()
    # the profile's first target acceptance (0.9, the default), no retry: the gate is bypassed here
    assert (ps["target_accept"] == 0.9).all() and not ps["diverged"].any() and not ps["sampled_twice"].any()
