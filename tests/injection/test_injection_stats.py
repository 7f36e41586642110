"""The concept-injection statistics (analysis/injection/): parameter recovery on simulated data of the
experiment's realistic size, fits through the convergence gate, a null prefill effect, per-model fits,
the frequentist cross-check, and schema errors.

The fits use the default profile's sampler settings (4 chains x 1000 draws after 500 tuning steps): the gate asks
for 400 bulk and tail ESS on every free variable, which 2 chains x 300 draws cannot give whatever the
model, so these recovery fits are also the realistic-size gate check. All of them together take about a
minute on two cores."""

import numpy as np
import pandas as pd
import pytest

import analysis.injection as I
import analysis.bayes as M
import analysis.constants as K
from reproduce.errors import DataError

FIT = M.SamplerSettings(draws=1000, tune=500, chains=4, target_accept=0.9, target_accept_retry=0.99,
                          seed=0)  # the default profile's chains
COVERAGE = 0.8  # the share of cells whose 95% interval must contain the truth
CELL = ["condition", "layer_fraction", "strength"]


def covered(frame: pd.DataFrame, truth: str, prefix: str = "") -> pd.Series:
    return (frame[f"{prefix}low"] <= frame[truth]) & (frame[truth] <= frame[f"{prefix}high"])


@pytest.fixture(scope="module")
def sim():
    det, det_truth = I.simulate_detection(seed=2)  # 50 concepts x 3 layers x 4 strengths x 3 conditions + 50
    ide, ide_truth = I.simulate_identification(seed=1)  # 50 concepts x 12 cells + 50 controls
    intn, intn_truth = I.simulate_intention(seed=1)  # 24 sentences x 2 instructions x 10 layers
    tables = {"detection": det, "identification": ide, "intention": intn}
    return tables, {"detection": det_truth, "identification": ide_truth, "intention": intn_truth}


@pytest.fixture(scope="module")
def fitted(sim):
    tables, truth = sim
    return I.fit_all(tables, FIT), truth


@pytest.fixture(scope="module")
def prefill():
    """Two models in one table, fitted separately: ``effect`` with the published effect (matching injection
    lowers the accident rate), ``null`` with none."""
    eff, eff_truth = I.simulate_prefill(seed=4, model="effect")
    null, null_truth = I.simulate_prefill(seed=3, model="null", p_control=0.8, p_matching=0.8, p_random=0.8)
    return I.fit_all({"prefill": pd.concat([eff, null], ignore_index=True)}, FIT), {"effect": eff_truth,
                                                                                     "null": null_truth}


# ------------------------------------------------------------------------------------------- schemas
def test_simulated_tables_have_the_stage_schemas(sim):
    tables, _ = sim
    for name, rows in tables.items():
        assert list(rows.columns) == I.COLUMNS[name]
    det = tables["detection"]
    ctl = det[det["condition"] == "control"]
    assert (ctl["layer"] == -1).all() and ctl["layer_fraction"].isna().all() and (ctl["strength"] == 0).all()
    assert ((det["p_yes"] > 0.5) == det["detected"]).all()
    assert det.loc[det["condition"] == "random", "concept"].isna().all()  # a random vector has no concept
    ide = tables["identification"]
    assert ((ide["rank"] == 1) == ide["correct"]).all() and ide["p_true"].between(0, 1).all()
    p, _ = I.simulate_prefill(seed=0)
    assert list(p.columns) == I.COLUMNS["prefill"] and ((p["p_accident"] > 0.5) == p["accident"]).all()


@pytest.mark.parametrize("table,column", [("detection", "strength"), ("identification", "n_concepts"),
                                          ("prefill", "pair_id"), ("intention", "cosine")])
def test_a_missing_column_is_named(table, column):
    rows = {"detection": I.simulate_detection, "identification": I.simulate_identification,
            "prefill": I.simulate_prefill, "intention": I.simulate_intention}[table](seed=0)[0]
    with pytest.raises(DataError, match=f"the injection {table} table lacks the column.*'{column}'"):
        I.fit_all({table: rows.drop(columns=column)}, FIT)  # before anything is sampled
    with pytest.raises(DataError, match=f"'{column}'"):
        I.frequentist_summary({table: rows.drop(columns=column)})


def test_bad_values_are_refused_with_the_fix():
    det, _ = I.simulate_detection(seed=0, n_concepts=3, n_controls=3, n_bias_questions=2)
    with pytest.raises(DataError, match="condition.*'steered'"):
        I.detection_model(det.assign(condition=det["condition"].replace("negated", "steered")))
    with pytest.raises(DataError, match="no control 'detect' rows"):
        I.detection_model(det[det["condition"] != "control"])
    with pytest.raises(DataError, match="one model's rows"):
        I.detection_model(pd.concat([det, det.assign(model="other")]))
    with pytest.raises(DataError, match="injected rows without a layer_fraction"):
        I.detection_model(det.assign(layer_fraction=np.nan))
    with pytest.raises(DataError, match="unknown injection table"):
        I.fit_all({"detections": det}, FIT)


# ------------------------------------------------------------------------------------------ recovery
@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_every_fit_passes_the_gate(fitted, prefill):
    res, _ = fitted
    fits = [(d["model"], d["fit"]) for d in res["diagnostics"] + prefill[0]["diagnostics"]]
    assert sorted(fits) == sorted([("sim", "detection"), ("sim", "yes_bias"), ("sim", "identification"),
                                   ("sim", "intention"), ("effect", "prefill"), ("null", "prefill")])
    for d in res["diagnostics"] + prefill[0]["diagnostics"]:
        g = d["diagnostics"]
        assert g["r_hat_max"] <= K.RHAT_MAX and min(g["ess_bulk_min"], g["ess_tail_min"]) >= K.ESS_MIN
        assert g["divergences"] == 0 and g["chains"] == 4 and g["draws"] == 1000


@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_detection_cells_fp_rate_and_contrasts_are_recovered(fitted):
    res, truth = fitted
    t = truth["detection"]
    cells = res["detection_cells"].merge(t["cells"], on=CELL, validate="one_to_one")
    assert len(cells) == 36 and (cells["model"] == "sim").all()
    assert (cells["k"] == 0).sum() >= 3  # all-zero cells (no detection at weak strength) are part of the data
    assert covered(cells, "p").mean() >= COVERAGE
    assert covered(cells, "p_obs", "obs_").mean() >= COVERAGE
    assert covered(cells, "diff", "diff_").mean() >= COVERAGE
    fp = res["fp_rate"].iloc[0]
    assert fp["low"] <= t["fp_rate"] <= fp["high"] and fp["n"] == 50
    for frame in (res["detection_cells"], res["fp_rate"]):
        assert frame[["mean", "low", "high"]].stack().between(0, 1).all()
        assert (frame["low"] <= frame["mean"]).all() and (frame["mean"] <= frame["high"]).all()
    # the headline: the strongest concept injection is detected above the false-positive rate
    best = cells.set_index(CELL).loc[("concept", 20 / 30, 8.0)]
    assert best["diff_low"] > 0 and best["p_positive"] > 0.99
    # and the weakest random injection is not distinguishable from it
    weak = cells.set_index(CELL).loc[("random", 10 / 30, 1.0)]
    assert weak["diff_low"] < 0 < weak["diff_high"]


@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_yes_bias_is_recovered(fitted):
    res, truth = fitted
    yb = res["yes_bias"].merge(truth["detection"]["yes_bias"], on=CELL, suffixes=("", "_true"))
    assert len(yb) == 36
    assert covered(yb, "p").mean() >= COVERAGE and covered(yb, "diff", "diff_").mean() >= COVERAGE
    c = yb.iloc[0]
    assert c["control_low"] <= truth["detection"]["yes_control"] <= c["control_high"]


@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_identification_is_recovered_against_chance_and_control(fitted):
    res, truth = fitted
    t = truth["identification"]
    idc = res["identification_cells"]
    ctl = idc[idc["condition"] == "control"].iloc[0]
    assert ctl["low"] <= t["control"] <= ctl["high"] and ctl["chance"] == pytest.approx(1 / 50)
    cells = idc[idc["condition"] == "concept"].merge(t["cells"], on=["layer_fraction", "strength"])
    assert len(cells) == 12
    for truth_col, prefix in (("p", ""), ("vs_chance", "vs_chance_"), ("vs_control", "vs_control_")):
        assert covered(cells, truth_col, prefix).mean() >= COVERAGE, truth_col
    best = cells.set_index(["layer_fraction", "strength"]).loc[(20 / 30, 8.0)]
    assert best["vs_chance_low"] > 0 and best["vs_control_low"] > 0  # the headline contrasts


@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_prefill_contrasts_are_recovered_and_the_null_covers_zero(prefill):
    res, truth = prefill
    con = res["prefill_contrasts"].set_index(["model", "contrast"])
    assert sorted(con.index) == sorted([(m, c) for m in ("effect", "null")
                                        for c in ("matching - control", "matching - random")])
    for c, value in truth["effect"]["contrasts"].items():
        r = con.loc[("effect", c)]
        assert r["low"] <= value <= r["high"], c
        assert r["high"] < 0, c  # matching injection lowers the accident rate: the published finding
    for c in ("matching - control", "matching - random"):
        r = con.loc[("null", c)]
        assert r["low"] < 0 < r["high"], c  # no effect simulated, none found
    # each contrast's band over its cells (the strongest cell's verdict reads it) holds the cells' own intervals
    allc = res["prefill_contrasts"]
    assert ((allc["sim_low"] <= allc["low"] + 1e-12) & (allc["high"] <= allc["sim_high"] + 1e-12)).all()
    conds = res["prefill_conditions"]
    eff = conds[conds["model"] == "effect"].set_index("condition")
    for c, p in truth["effect"]["conditions"].items():
        assert eff.loc[c, "low"] <= p <= eff.loc[c, "high"], c
    assert eff.loc["control", "n"] == 60 and np.isnan(eff.loc["control", "layer_fraction"])


@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_think_minus_dont_think_is_recovered_per_layer(fitted):
    res, truth = fitted
    lay = res["intention_layers"].merge(truth["intention"]["layers"], on=["layer", "layer_fraction"])
    assert len(lay) == 10 and (lay["n"] == 24).all()  # paired differences: one per sentence and layer
    assert covered(lay, "diff").mean() >= COVERAGE
    peak = lay.loc[lay["diff"].idxmax()]
    assert peak["low"] > 0  # the headline: thinking about the word raises its representation
    assert np.allclose(lay["raw_diff"], lay["raw_think"] - lay["raw_dont_think"])


# -------------------------------------------------------------------------------- cross-checks
@pytest.mark.slowest  # realistic-size fits (4 x 1000 draws)
def test_frequentist_summary_gives_wilson_intervals_that_agree_with_the_posterior(sim, fitted):
    tables, _ = sim
    res, _ = fitted
    freq = I.frequentist_summary(tables)
    assert set(freq["table"]) == {"detection", "yes_bias", "identification"}
    assert ((freq["low"] <= freq["rate"]) & (freq["rate"] <= freq["high"])).all()
    det = freq[freq["table"] == "detection"]
    ctl = det[det["condition"] == "control"].iloc[0]
    assert ctl["n"] == 50 and ctl["k"] == res["fp_rate"]["k"].iloc[0] and np.isnan(ctl["layer_fraction"])
    both = res["detection_cells"].merge(det, on=["model", *CELL], suffixes=("", "_w"))
    assert len(both) == 36 and (both["k"] == both["k_w"]).all()
    # the posterior rate averaged over the observed concepts lies in the Wilson interval in nearly every cell
    assert ((both["low_w"] <= both["obs_mean"]) & (both["obs_mean"] <= both["high_w"])).mean() >= 0.9


def test_coherence_needs_the_rules_and_a_perplexity_near_the_controls_and_the_examples_say_which():
    """Word salad that the rules let through (Latin letters, no repetition) is not coherent when its
    perplexity is far above the control answers'; the example transcripts carry the same grade as the
    coherence table, with the rules' own grade beside it."""
    from analysis.injection.stage import PERPLEXITY_FACTOR, coherence_table, examples

    base = {"model": "m", "concept": "lantern", "claims_detection": False, "names_concept": False}
    rows = [{**base, "condition": "control", "layer_fraction": np.nan, "strength": 0.0, "coherent": True,
             "perplexity": p, "text": "Yes, I notice something about light."} for p in (8.0, 10.0, 12.0)]
    rows += [{**base, "condition": "concept", "layer_fraction": 0.6, "strength": s, "coherent": rules,
              "perplexity": p, "text": t} for s, rules, p, t in (
        (0.5, True, 10.0 * PERPLEXITY_FACTOR * 0.9, "A lantern glows in the dark."),  # just under the limit
        (1.0, True, 10.0 * PERPLEXITY_FACTOR * 1.1, "Incym Cave refuge Apollo Danced Thall geog."),  # over it
        (2.0, False, 20.0, "other other other other other"))]  # repetition: low perplexity, the rules refuse
    ft = pd.DataFrame(rows)
    det = pd.DataFrame({"question": ["detect"] * 4, "model": "m", "condition": ["control", "concept", "concept", "concept"],
                        "layer_fraction": [np.nan, 0.6, 0.6, 0.6], "strength": [0.0, 0.5, 1.0, 2.0], "p_outside": 0.1})
    coh = coherence_table(ft, det).set_index("strength")
    assert coh.loc[0.5, "coherent"] == 1 and coh.loc[1.0, "coherent"] == 0 and coh.loc[2.0, "coherent"] == 0
    assert coh.loc[1.0, "coherent_rules"] == 1
    ex = examples(ft).set_index("strength")
    assert list(ex.loc[[0.5, 1.0, 2.0], "coherent"]) == [True, False, False]
    assert list(ex.loc[[0.5, 1.0, 2.0], "coherent_rules"]) == [True, True, False]


# ------------------------------------------------------------------------------ wording and selection
def _worded_detection(seed: int, wording_sd: float, n_wordings: int = 10, n_concepts: int = 40,
                      fp: float = 0.2) -> pd.DataFrame:
    """Detection rows with a known wording effect shared by control and injected trials: concept slot j is
    asked in wording j mod ``n_wordings``, as the stage does; one injected cell at +1.5 logits."""
    rng = np.random.default_rng(seed)
    w_eff = rng.normal(0.0, wording_sd, n_wordings)
    recs = []
    for cond, shift in (("control", 0.0), ("concept", 1.5)):
        for j in range(n_concepts):
            eta = M.logit(fp) + shift + w_eff[j % n_wordings]
            prob, det = M.latent_probability(rng, np.array([eta]))
            recs.append({"model": "sim", "question": "detect", "question_id": f"trial-{j + 1:02d}",
                         "wording": f"w{j % n_wordings + 1:02d}", "condition": cond,
                         "concept": None if cond == "control" else f"c{j:02d}",
                         "layer": -1 if cond == "control" else 10, "layer_fraction": np.nan if cond == "control"
                         else 0.5, "strength": 0.0 if cond == "control" else 1.0,
                         "p_yes": float(prob[0]), "p_outside": 0.1, "detected": bool(det[0])})
    return pd.DataFrame(recs)


@pytest.mark.slowest  # two detection fits at the default profile's chains
def test_the_false_positive_rate_of_a_new_wording_carries_the_wording_variation():
    rows = _worded_detection(seed=5, wording_sd=1.2)
    res = I.fit_all({"detection": rows}, FIT)
    fp = res["fp_rate"].iloc[0]
    assert fp["wordings"] == 10 and fp["sigma_wording_mean"] > 0.3
    # the new-wording interval is wider than the average wording's, and it holds the truth for a new wording
    assert fp["high"] - fp["low"] > 1.3 * (fp["avg_high"] - fp["avg_low"])
    assert fp["low"] <= 0.2 <= fp["high"]
    # without the column the model has no wording term, and the two readings coincide
    flat = I.fit_all({"detection": rows.drop(columns="wording")}, FIT)["fp_rate"].iloc[0]
    assert flat["wordings"] == 1 and flat["sigma_wording_mean"] == 0
    assert flat["mean"] == pytest.approx(flat["avg_mean"], abs=0.02)


def test_a_simultaneous_band_widens_with_the_number_of_quantities_it_covers():
    from analysis.injection.likelihood import simultaneous_band

    rng = np.random.default_rng(0)
    one = rng.normal(0.0, 1.0, (1, 200_000))
    lo, hi = simultaneous_band(one)
    assert hi[0] == pytest.approx(1.96, abs=0.03) and lo[0] == pytest.approx(-1.96, abs=0.03)
    ten = rng.normal(np.arange(10)[:, None], 2.0, (10, 200_000))  # independent: c is the 95% point of a max of 10
    lo, hi = simultaneous_band(ten)
    c = (hi - lo) / (2 * ten.std(axis=1))  # one multiplier for every row
    assert np.allclose(c, c[0]) and 2.75 < c[0] < 2.95
    # every quantity inside its band together in 95% of the draws
    inside = ((ten >= lo[:, None]) & (ten <= hi[:, None])).all(axis=0).mean()
    assert inside == pytest.approx(0.95, abs=0.005)
    flat = np.ones((2, 10))
    assert simultaneous_band(flat)[0].tolist() == [1.0, 1.0]
    # a skewed row: a symmetric band would cut inside its own 95% interval (and above 0); it does not
    skew = np.r_[rng.normal(0.05, 0.008, 9600), rng.normal(-0.04, 0.01, 400)][None, :]
    lo, hi = simultaneous_band(skew)
    assert lo[0] <= np.quantile(skew, 0.025) + 1e-12 and lo[0] < 0 and hi[0] >= np.quantile(skew, 0.975) - 1e-12
    # and never beyond the draws (a rate near 0)
    rate = rng.beta(1, 60, (1, 4000))
    lo, hi = simultaneous_band(rate)
    assert lo[0] >= rate.min() >= 0


def test_a_cell_steers_when_its_concepts_rise_and_others_are_left_out_of_the_counts():
    from analysis.injection.steering import steering_cell_keys, steering_cells

    concepts = [f"c{i}" for i in range(6)]
    rows = [{"model": "m", "condition": "control", "concept": c, "layer": -1, "layer_fraction": np.nan,
             "strength": 0.0, "logprob": -5.0 - i} for i, c in enumerate(concepts)]
    for s, rise in ((1.0, [0.2, -0.1, 0.05, -0.2, 0.1, -0.05]), (4.0, [2.0, 1.5, 2.5, 1.8, 2.2, 1.9])):
        rows += [{"model": "m", "condition": "concept", "concept": c, "layer": 9, "layer_fraction": 0.5,
                  "strength": s, "logprob": -5.0 - i + r} for i, (c, r) in enumerate(zip(concepts, rise))]
    cells = steering_cells(pd.DataFrame(rows)).set_index("strength")
    assert cells.loc[4.0, "steers"] and not cells.loc[1.0, "steers"]
    assert cells.loc[1.0, "rising"] == 3 and cells.loc[4.0, "mean"] == pytest.approx(np.mean([2.0, 1.5, 2.5, 1.8, 2.2, 1.9]))
    assert cells.loc[1.0, "low"] < 0 < cells.loc[1.0, "high"]
    assert steering_cell_keys(cells.reset_index(), "m") == {(0.5, 4.0)}
    assert steering_cell_keys(cells.reset_index(), "other") is None  # no check for it: every cell counts
