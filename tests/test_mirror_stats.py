"""The mirror-test statistics (analysis/mirror/): parameter recovery on simulated tables of the experiment's
size (2 models x 40 scripts x 17 conditions x 2 measured turns), every fit through the convergence gate, an
all-zero noticing table that still fits, the frequentist cross-check, and schema errors.

The fits use the default profile's chains (4 chains x 1000 draws after 500 tuning steps; target acceptance
0.9, and 0.99 for a fit that diverges): the gate asks for 400 bulk and tail ESS on every free variable, so
these recovery fits are also the realistic-size gate check. Each model is fitted once (module-scoped
fixtures); all five fits together take about two minutes on two busy cores."""

import numpy as np
import pandas as pd
import pytest

from analysis import mirror as R
from analysis import models as M
from reproduce.errors import DataError

FIT = M.SamplerSettings(draws=1000, tune=500, chains=4, target_accept=0.9, target_accept_retry=0.99,
                          seed=0)  # the default profile's chains
COVERAGE = 0.8  # the share of cells whose 95% interval must contain the truth
KEYS = ["model", "condition", "kind", "level"]
TURNS = (2, 4)  # the measured turns of the default profile


def covered(frame: pd.DataFrame, truth: str, prefix: str = "") -> pd.Series:
    return (frame[f"{prefix}low"] <= frame[truth]) & (frame[truth] <= frame[f"{prefix}high"])


def cell(frame: pd.DataFrame, model: str, condition: str, kind=None, level=None) -> pd.Series:
    """The one row of ``frame`` for a model cell."""
    pick = (frame["model"] == model) & (frame["condition"] == condition)
    if kind is not None:
        pick &= (frame["kind"] == kind) & np.isclose(frame["level"].astype(float), level)
    rows = frame[pick]
    assert len(rows) == 1, (model, condition, kind, level)
    return rows.iloc[0]


@pytest.fixture(scope="module")
def sim():
    turns, t_truth = R.simulate_turns(seed=1, turns=TURNS)
    surprise, s_truth = R.simulate_surprise(seed=1)
    return {"turns": turns, "surprise": surprise}, {**t_truth, "surprise": s_truth["cells"]}


@pytest.fixture(scope="module")
def fitted(sim):
    tables, truth = sim
    return R.fit_all(tables, FIT), truth


@pytest.fixture(scope="module")
def zeros(sim):
    """The noticing model on a table where no reply ever remarks on anything (a small model's usual table)."""
    turns = sim[0]["turns"].assign(notices=False)
    idata = M.sample(R.noticing_model(turns), FIT)
    return R.binary_summary(idata, turns, "notices"), M.check_convergence(idata, "mirror noticing (all zero)")


# ------------------------------------------------------------------------------------------- schemas
def test_simulated_tables_have_the_stage_schemas(sim):
    from reproduce.corrupt import KINDS
    from reproduce.mirror import COLUMNS

    assert all(R.COLUMNS[t] == COLUMNS[t] for t in R.COLUMNS) and R.KINDS == KINDS  # what the stage writes
    tables, _ = sim
    for name, rows in tables.items():
        assert list(rows.columns) == R.COLUMNS[name]
    turns = tables["turns"]
    assert len(turns) == 2 * 40 * 17 * len(TURNS)
    ctl, oth = turns[turns["condition"] == "control"], turns[turns["condition"] == "other"]
    assert ctl["kind"].isna().all() and (ctl["level"] == 0).all() and (ctl["history_changed"] == 0).all()
    assert oth["kind"].isna().all() and oth["level"].isna().all()
    assert set(turns["turn"]) == set(TURNS) and turns["p_yes"].between(0, 1).all()
    for k in R.KINDS:
        assert (turns[f"pattern_k_{k}"] <= turns[f"pattern_n_{k}"]).all()
    sur = tables["surprise"]
    assert np.allclose(sur["surprise"], sur["logprob_clean"] - sur["logprob"])
    assert (sur.loc[sur["condition"] == "control", "surprise"] == 0).all()


@pytest.mark.parametrize("table,column", [("turns", "p_yes"), ("turns", "pattern_n_swap"), ("turns", "script_id"),
                                          ("surprise", "logprob_clean")])
def test_a_missing_column_is_named(sim, table, column):
    rows = sim[0][table].drop(columns=column)
    with pytest.raises(DataError, match=f"the mirror {table} table lacks the column.*'{column}'"):
        R.fit_all({table: rows}, FIT)  # before anything is sampled
    with pytest.raises(DataError, match=f"'{column}'"):
        R.frequentist_summary({table: rows})


def test_bad_values_are_refused_with_the_fix(sim):
    turns = sim[0]["turns"]
    with pytest.raises(DataError, match="condition.*'steered'"):
        R.noticing_model(turns.assign(condition=turns["condition"].replace("other", "steered")))
    with pytest.raises(DataError, match="kind.*'typo'"):
        R.noticing_model(turns.assign(kind=turns["kind"].replace("swap", "typo")))
    with pytest.raises(DataError, match="no control rows for model.*model_b"):
        R.recognition_model(turns[(turns["model"] == "model_a") | (turns["condition"] != "control")])
    with pytest.raises(DataError, match="p_yes"):
        R.recognition_model(turns.assign(p_yes=turns["p_yes"] + 1.0))
    with pytest.raises(DataError, match="no judge grades"):
        R.noticing_model(turns, outcome="judge_notices")
    with pytest.raises(DataError, match="unknown mirror table"):
        R.fit_all({"turn": turns}, FIT)


# ------------------------------------------------------------------------------------------ recovery
@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_every_fit_passes_the_gate(fitted, zeros):
    res, _ = fitted
    assert sorted(d["fit"] for d in res["diagnostics"]) == ["imitation", "noticing", "recognition", "surprise"]
    for g in [d["diagnostics"] for d in res["diagnostics"]] + [zeros[1]]:
        assert g["r_hat_max"] <= M.RHAT_MAX and min(g["ess_bulk_min"], g["ess_tail_min"]) >= M.ESS_MIN
        assert g["divergences"] == 0 and g["chains"] == 4 and g["draws"] == 1000
    assert all(d["model"] == "all" for d in res["diagnostics"])  # the models are fitted jointly


@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_noticing_cells_contrasts_and_turn_slopes_are_recovered(fitted):
    res, truth = fitted
    cells = res["noticing_cells"].merge(truth["noticing"], on=KEYS, validate="one_to_one")
    assert len(cells) == 34 and (cells["n"] == 40 * len(TURNS)).all()  # 2 models x (control, 15, other)
    assert covered(cells, "p").mean() >= COVERAGE
    assert cells[["mean", "low", "high", "obs_mean"]].stack().between(0, 1).all()
    assert ((cells["low"] <= cells["mean"]) & (cells["mean"] <= cells["high"])).all()
    con = res["noticing_contrasts"].merge(truth["noticing"], on=KEYS, validate="one_to_one")
    assert len(con) == 32 and (con["vs"] == "control").all()
    assert covered(con, "diff").mean() >= COVERAGE
    # the headline: model_a remarks on heavy capitalisation and insertion far more than on a clean history
    for kind in ("capitalisation", "insertion"):
        c = cell(con, "model_a", "corrupted", kind, 0.6)
        assert c["low"] > 0 and c["p_positive"] > 0.99, kind
    slopes = res["noticing_turn"].merge(truth["turn"], on=["model", "condition"])
    assert len(slopes) == 6 and covered(slopes, "noticing").mean() >= COVERAGE


@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_recognition_is_recovered_and_a_model_that_does_not_recognise_is_found_null(fitted):
    res, truth = fitted
    cells = res["recognition_cells"].merge(truth["recognition"], on=KEYS, validate="one_to_one")
    assert len(cells) == 34 and covered(cells, "p").mean() >= COVERAGE
    con = res["recognition_contrasts"].merge(truth["recognition"], on=KEYS, validate="one_to_one")
    assert covered(con, "diff").mean() >= COVERAGE
    # model_a disowns a heavily capitalised history and another model's replies ...
    for kind, level in (("capitalisation", 0.6), ("insertion", 0.6)):
        assert cell(con, "model_a", "corrupted", kind, level)["high"] < 0
    assert cell(con, "model_a", "other")["high"] < 0
    # ... model_b claims every history as its own (simulated with no recognition at all); its contrasts share
    # one control arm, so they miss zero together when the control estimate is off: most, not all, cover it
    b = con[con["model"] == "model_b"]
    assert ((b["low"] < 0) & (0 < b["high"])).mean() >= 0.75 and (b["high"] > -0.05).all()


@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_imitation_is_recovered_against_the_clean_baseline(fitted):
    res, truth = fitted
    imi = res["imitation_cells"]
    base = imi[imi["condition"] == "control"]
    assert len(imi) == 40 and len(base) == 10  # 2 models x 5 kinds x (baseline + 3 levels)
    assert set(zip(base["model"], base["kind"])) == {(m, k) for m in ("model_a", "model_b") for k in R.KINDS}
    assert (base["level"] == 0).all() and base["diff_mean"].isna().all()
    cells = imi.merge(truth["imitation"], on=KEYS, validate="one_to_one")
    assert len(cells) == 40 and covered(cells, "p").mean() >= COVERAGE
    cor = cells[cells["condition"] == "corrupted"]
    assert covered(cor, "diff", "diff_").mean() >= COVERAGE
    # the headline: model_a takes up the "sg" insertion and the capitalisation at the heaviest level
    for kind in ("insertion", "capitalisation"):
        c = cell(cor, "model_a", "corrupted", kind, 0.6)
        assert c["diff_low"] > 0 and c["p_positive"] > 0.99, kind
    # the expected share over replies is above the typical reply's (a rare pattern is concentrated in a few)
    assert (imi["share_mean"] >= imi["mean"]).all()


@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_surprise_is_recovered_in_nats_per_token(fitted):
    res, truth = fitted
    sur = res["surprise_cells"].merge(truth["surprise"], on=KEYS, suffixes=("", "_true"), validate="one_to_one")
    assert len(sur) == 32 and (sur["n"] == 40 * 3).all()  # control rows are not modelled
    assert covered(sur, "mean_true").mean() >= COVERAGE
    heavy = sur[(sur["condition"] == "other") | np.isclose(sur["level"].astype(float), 0.6)]
    assert (heavy["low"] > 0).all() and (heavy["p_positive"] > 0.99).all()
    assert np.allclose(sur["mean"], sur["raw_mean"], atol=0.1)


# ------------------------------------------------------------------------------------ all-zero table
@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_an_all_zero_noticing_table_fits_and_gives_upper_bounds(zeros):
    s, _ = zeros
    cells, con = s["cells"], s["contrasts"]
    assert len(cells) == 34 and (cells["k"] == 0).all() and (cells["rate"] == 0).all()
    assert (cells["high"] < 0.10).all() and (cells["low"] >= 0).all() and (cells["mean"] < 0.05).all()
    assert ((con["low"] < 0) & (0 < con["high"])).all()  # nothing is above the control rate


# -------------------------------------------------------------------------------- cross-checks
@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_frequentist_summary_gives_wilson_intervals_that_agree_with_the_posterior(sim, fitted):
    tables, _ = sim
    res, _ = fitted
    freq = R.frequentist_summary(tables)
    assert set(freq["outcome"]) == {"notices", "says_yes", "imitation"}
    assert ((freq["low"] <= freq["rate"]) & (freq["rate"] <= freq["high"])).all()
    for outcome, table in (("notices", "noticing_cells"), ("says_yes", "recognition_cells")):
        both = res[table].merge(freq[freq["outcome"] == outcome], on=KEYS, suffixes=("", "_w"), validate="one_to_one")
        assert len(both) == 34 and (both["k"] == both["k_w"]).all() and (both["n"] == both["n_w"]).all()
        # the posterior rate averaged over the observed conversations lies in the Wilson interval
        assert ((both["low_w"] <= both["obs_mean"]) & (both["obs_mean"] <= both["high_w"])).mean() >= 0.9, outcome
    imi = res["imitation_cells"].merge(freq[freq["outcome"] == "imitation"], on=KEYS, suffixes=("", "_w"),
                                       validate="one_to_one")
    assert len(imi) == 40 and (imi["k"] == imi["k_w"]).all() and (imi["n"] == imi["n_w"]).all()


@pytest.mark.slow
def test_judge_grades_get_raw_rates_and_an_agreement_table_counted_by_hand(sim):
    """Where a judge graded the replies: its raw rates beside the rules', and the agreement of the two per model
    (counts, raw agreement and Cohen's kappa recomputed by hand); no judge, no judge rows."""
    from analysis.mirror_stage import grader_agreement

    turns = sim[0]["turns"]
    assert not R.has_judge(turns) and grader_agreement(turns).empty
    assert "judge_notices" not in set(R.frequentist_summary({"turns": turns})["outcome"])
    rng = np.random.default_rng(0)
    flip = rng.random(len(turns)) < 0.1  # the judge disagrees with the rules on about a tenth of the replies
    judged = turns.assign(judge_notices=np.where(turns["notices"] ^ flip, 0.9, 0.1))
    freq = R.frequentist_summary({"turns": judged})
    j = freq[freq["outcome"] == "judge_notices"]
    assert len(j) == 34 and j["n"].sum() == len(turns) and j["k"].sum() == int((turns["notices"] ^ flip).sum())
    ag = grader_agreement(judged).set_index("model")
    for m, g in judged.groupby("model"):
        a, b = g["notices"].to_numpy(bool), g["judge_notices"].to_numpy() > 0.5
        po, pa, pb = (a == b).mean(), a.mean(), b.mean()
        pe = pa * pb + (1 - pa) * (1 - pb)
        assert ag.loc[m, "n"] == len(g) and ag.loc[m, "rules_yes"] == a.sum() and ag.loc[m, "judge_yes"] == b.sum()
        assert np.isclose(ag.loc[m, "agreement"], po) and np.isclose(ag.loc[m, "kappa"], (po - pe) / (1 - pe))


def test_a_corrupted_reply_left_unchanged_is_dropped_up_to_float_rounding(sim):
    from analysis.mirror.surprise import surprise_design

    sur = sim[0]["surprise"]
    corrupted = np.flatnonzero((sur["condition"] == "corrupted").to_numpy())
    a, b = corrupted[:2]
    sur = sur.copy()
    # one reply identical to its clean reply but scored in another batch (5e-7 nats per token apart), one exactly
    sur.loc[sur.index[a], "logprob"] = sur.loc[sur.index[a], "logprob_clean"] + 5e-7
    sur.loc[sur.index[b], "logprob"] = sur.loc[sur.index[b], "logprob_clean"]
    sur["surprise"] = sur["logprob_clean"] - sur["logprob"]
    full = surprise_design(sim[0]["surprise"])
    assert surprise_design(sur).mask.sum() == full.mask.sum() - 2  # both left out of the likelihood


@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_the_headline_numbers_count_the_imitation_measure_after_another_models_replies(sim, fitted):
    from analysis.mirror_stage import headline_numbers

    tables, _ = sim
    res, _ = fitted
    h = headline_numbers(res, tables)
    turns = tables["turns"]
    for m, d in h["models"].items():
        oth = turns[(turns["model"] == m) & (turns["condition"] == "other")]
        kinds = sorted(set(res["imitation_cells"].loc[res["imitation_cells"]["model"] == m, "kind"].dropna()))
        assert sorted(d["imitation_other"]) == kinds
        for k in kinds:  # counted by hand from the turn table
            assert d["imitation_other"][k] == {"k": int(oth[f"pattern_k_{k}"].sum()),
                                               "n": int(oth[f"pattern_n_{k}"].sum())}
