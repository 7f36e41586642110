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

import analysis.mirror as R
import analysis.bayes as M
import analysis.constants as K
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
    from reproduce.mirror.corrupt import KINDS
    from reproduce.mirror.experiment import COLUMNS

    # what the stage writes, but a thinking trace's columns, which the statistics do not read
    optional = ("thinking", "notices_thinking", "first_person_thinking", "third_person_thinking")
    assert all(R.COLUMNS[t] == [c for c in COLUMNS[t] if c not in optional] for t in R.COLUMNS) and R.KINDS == KINDS
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
                                          ("surprise", "logprob_clean"), ("surprise", "changed")])
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
    assert sorted(d["fit"] for d in res["diagnostics"]) == ["imitation", "imitation adopted", "imitation copied",
                                                               "noticing", "recognition", "surprise"]
    for g in [d["diagnostics"] for d in res["diagnostics"]] + [zeros[1]]:
        assert g["r_hat_max"] <= K.RHAT_MAX and min(g["ess_bulk_min"], g["ess_tail_min"]) >= K.ESS_MIN
        # at the first sampling, or after the gate's one cure for a short ESS (twice the draws): the copied part
        # of imitation has no copied word in the control, whose baseline then mixes slowly
        assert g["divergences"] == 0 and g["chains"] == 4 and g["draws"] in (1000, 2000)
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
    from analysis.mirror.stage import grader_agreement

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


def test_a_corrupted_reply_whose_text_was_not_changed_is_dropped_whatever_its_score(sim):
    """Left out by the corruption's count of changed words, not by the score: a reply the corruption left as it
    was can score differently from the clean one (the history before it was altered: -0.005 nats per token in
    the review's run), and a changed reply can score as the clean one and is a real measurement of 0."""
    from analysis.mirror.surprise import surprise_design, unchanged_reply

    sur = sim[0]["surprise"].copy()
    a, b = np.flatnonzero((sur["condition"] == "corrupted").to_numpy())[:2]
    sur.loc[sur.index[a], "changed"] = 0  # unchanged text, its simulated surprise away from 0 kept
    assert sur.loc[sur.index[a], "surprise"] != 0
    sur.loc[sur.index[b], "logprob"] = sur.loc[sur.index[b], "logprob_clean"]  # changed text, scored alike
    sur["surprise"] = sur["logprob_clean"] - sur["logprob"]
    full = surprise_design(sim[0]["surprise"])
    assert surprise_design(sur).mask.sum() == full.mask.sum() - 1  # a out of the likelihood, b in it
    assert list(np.flatnonzero(unchanged_reply(R.check_table(sur, "surprise")).to_numpy())) == [a]
    # an unchanged control or other row is no corrupted reply: those are the references and the other model's
    assert not unchanged_reply(R.check_table(sim[0]["surprise"], "surprise")).any()
    with pytest.raises(DataError, match="'changed'"):
        surprise_design(sur.assign(changed=-1))


@pytest.mark.slowest  # realistic-size joint fits (4 x 1000 draws)
def test_the_headline_numbers_count_the_imitation_measure_after_another_models_replies(sim, fitted):
    from analysis.mirror.stage import headline_numbers

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


# ------------------------------------------------------------------- the numbers the manuscript quotes
def _results(noticing: dict, recognition: dict, imitation: dict, model: str = "m") -> tuple[dict, dict]:
    """Hand-made result tables of one model as :func:`analysis.mirror.fit_all` returns them, and the tables
    :func:`analysis.mirror.stage.headline_numbers` reads with them. ``noticing`` and ``recognition`` map a cell
    (condition, kind, level) to (k, n, modelled contrast with the control); ``imitation`` maps one to (k, n,
    modelled share, modelled difference from the kind's control), the controls as ("control", kind, 0.0)."""
    def binary(cells: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = [{"model": model, "condition": c, "kind": k, "level": np.nan if c == "other" else lv, "n": n, "k": kk,
                 "rate": kk / n, "mean": kk / n, "low": 0.0, "high": 1.0} for (c, k, lv), (kk, n, _) in cells.items()]
        con = [{"model": model, "condition": c, "kind": k, "level": np.nan if c == "other" else lv, "vs": "control",
                "mean": d, "low": d - 0.3, "high": d + 0.3, "p_positive": 0.5}
               for (c, k, lv), (_, _, d) in cells.items() if c != "control"]
        return pd.DataFrame(rows), pd.DataFrame(con)

    res = {}
    for name, cells in (("noticing", noticing), ("recognition", recognition)):
        res[f"{name}_cells"], res[f"{name}_contrasts"] = binary(cells)
    for part in ("cells", "contrasts"):  # no judge ran
        res[f"judge_noticing_{part}"] = pd.DataFrame(columns=["model", "mean", "low", "high"])
    res["imitation_cells"] = pd.DataFrame([
        {"model": model, "condition": c, "kind": k, "level": lv, "replies": 6, "n": n, "k": kk, "rate": kk / n,
         "mean": share, "low": 0.0, "high": 0.5, "diff_mean": d, "diff_low": d - 0.2, "diff_high": d + 0.2}
        for (c, k, lv), (kk, n, share, d) in imitation.items()])
    res["surprise_cells"] = pd.DataFrame(columns=["model", "mean", "low", "high"])
    turns = pd.DataFrame({"model": [model], "script_id": ["s"], "turn": [2], "condition": ["control"], "kind": [None],
                          "level": [0.0], "history_changed": [0], "judge_notices": [np.nan], "p_outside": [0.1]})
    return res, {"turns": turns, "surprise": pd.DataFrame()}


NOTICED = {("control", None, 0.0): (0, 6, 0.0), ("corrupted", "insertion", 0.3): (1, 6, 0.05),
           ("corrupted", "capitalisation", 0.3): (0, 6, 0.01), ("other", None, None): (0, 6, 0.0)}
IMITATED = {("control", "substitution", 0.0): (0, 111, 0.04, np.nan),
            ("corrupted", "substitution", 0.6): (3, 89, 0.13, 0.09)}
#: smollm2-135m's recognition in the review's run: three cells of 0 of 6 against 1 of 6 in the control, whose
#: modelled drops (-9.9, -10.17, -10.19 points) differ by the sampler's noise alone
TIED = {("control", None, 0.0): (1, 6, 0.0), ("corrupted", "insertion", 0.3): (1, 6, 0.004),
        ("corrupted", "insertion", 0.6): (0, 6, -0.0990), ("corrupted", "substitution", 0.3): (1, 6, 0.010),
        ("corrupted", "substitution", 0.6): (0, 6, -0.1017), ("corrupted", "capitalisation", 0.3): (0, 6, -0.1019),
        ("corrupted", "capitalisation", 0.6): (1, 6, 0.004), ("other", None, None): (2, 6, 0.116)}


def test_cells_that_tie_on_their_counts_are_all_named_and_none_is_picked_by_the_posterior():
    from analysis.mirror.stage import headline_numbers
    from report.mirror.section import model_paragraph

    res, tables = _results(NOTICED, TIED, IMITATED)
    e = headline_numbers(res, tables)["models"]["m"]["recognition_extreme"]
    cells = [(c["kind"], c["level"], c["k"], c["n"]) for c in [e, *e["tied"]]]
    # the fixed cell order (kinds as in KINDS, then level), not the most negative posterior mean (capitalisation)
    assert cells == [("insertion", 0.6, 0, 6), ("substitution", 0.6, 0, 6), ("capitalisation", 0.3, 0, 6)]
    assert e["raw_diff"] == pytest.approx(-1 / 6) and e["mean"] == -0.0990
    # the same choice whatever the order of the rows and whichever tied cell the sampler happened to put lowest
    shuffled = {k: (v[0], v[1], -0.3 if k == ("corrupted", "substitution", 0.6) else v[2]) for k, v in TIED.items()}
    res2, _ = _results(NOTICED, dict(reversed(list(shuffled.items()))), IMITATED)
    res2["recognition_contrasts"] = res2["recognition_contrasts"].sample(frac=1.0, random_state=1)
    e2 = headline_numbers(res2, tables)["models"]["m"]["recognition_extreme"]
    assert [(c["kind"], c["level"]) for c in [e2, *e2["tied"]]] == [c[:2] for c in cells]
    text = model_paragraph("m", headline_numbers(res, tables)["models"]["m"])
    assert ("The largest drop was shared by 3 cells with the same raw rate (insertion at level 0.6, 0 of 6: "
            "−9.9 points [−39.9, +20.1]; substitution at level 0.6, 0 of 6: −10.2 points [−40.2, +19.8]; "
            "capitalisation at level 0.3, 0 of 6: −10.2 points [−40.2, +19.8]); 0 of 7 altered cells were credibly "
            "below the control.") in text
    # noticing: one cell above the control's 0 of 6, named with its counts
    assert "The largest change under alteration (insertion at level 0.3, 1 of 6) was +5.0 points" in text


def test_a_model_that_says_yes_in_every_cell_gets_no_largest_drop():
    """gemma3-270m in the review's run: 6 of 6 in the control and every cell, 4 of 4 where unchanged histories
    were left out; the prior pulls the 4-trial cells further from 1 (a modelled drop of 5.2 points the data do
    not contain)."""
    from analysis.mirror.stage import headline_numbers
    from report.mirror.section import model_paragraph

    yes = {k: ((n := 4 if k[1] == "insertion" else 6), n, -0.052 if k[1] == "insertion" else -0.005)
           for k in TIED}
    res, tables = _results(NOTICED, yes, IMITATED)
    d = headline_numbers(res, tables)["models"]["m"]
    assert d["recognition_observed"] == {"k": 44, "n": 44} and d["recognition_extreme"]["raw_diff"] == 0
    text = model_paragraph("m", d)
    assert "largest drop" not in text and "−5.2" not in text
    assert ("With every reply answering yes (P(yes) > P(no)) in every condition, the altered cells' estimates differ "
            "from the control only by the prior; 0 of 7 altered cells were credibly below it.") in text


def test_the_top_imitation_cell_is_chosen_by_its_counts_and_quotes_its_raw_rate_beside_the_modelled_share():
    from analysis.mirror.stage import flat_metrics, headline_numbers
    from report.mirror.section import model_paragraph

    imitated = {("control", "substitution", 0.0): (1, 111, 0.04, np.nan),
                ("control", "capitalisation", 0.0): (0, 140, 0.03, np.nan),
                ("corrupted", "substitution", 0.6): (11, 89, 0.127, 0.05),  # raw +11.5 points over the control
                ("corrupted", "capitalisation", 0.3): (4, 40, 0.09, 0.15),  # raw +10.0: modelled higher, not chosen
                ("corrupted", "capitalisation", 0.6): (3, 30, 0.09, 0.12)}
    res, tables = _results(NOTICED, TIED, imitated)
    numbers = headline_numbers(res, tables)
    top = numbers["models"]["m"]["imitation_top"]
    assert (top["kind"], top["level"], top["k"], top["n"]) == ("substitution", 0.6, 11, 89) and not top["tied"]
    assert top["rate"] == 11 / 89 and top["share"] == 0.127 and top["mean"] == 0.05  # raw, modelled, difference
    assert (top["control_k"], top["control_n"]) == (1, 111) and top["raw_diff"] == pytest.approx(11 / 89 - 1 / 111)
    assert ("rose most for substitution at level 0.6 (11 of 89 words against 1 of 111 in the control), by +5.0 "
            "points" in model_paragraph("m", numbers["models"]["m"]))
    assert flat_metrics(numbers)["m.imitation_top_diff"] == 0.05
    # two cells with the same raw rise (4 of 40 and 3 of 30 over 0 of 140): both named
    del imitated[("corrupted", "substitution", 0.6)]
    res, tables = _results(NOTICED, TIED, {**imitated, ("corrupted", "substitution", 0.6): (1, 89, 0.01, 0.0)})
    d = headline_numbers(res, tables)["models"]["m"]
    assert [(c["level"], c["k"], c["n"]) for c in [d["imitation_top"], *d["imitation_top"]["tied"]]] == \
        [(0.3, 4, 40), (0.6, 3, 30)]
    assert ("rose most, by the same raw amount, in 2 cells (capitalisation at level 0.3, 4 of 40 words against 0 of "
            "140 in the control: +15.0 points [−5.0, +35.0]; capitalisation at level 0.6, 3 of 30 words against 0 "
            "of 140 in the control: +12.0 points [−8.0, +32.0])") in model_paragraph("m", d)


def test_the_metrics_give_the_raw_counts_beside_each_modelled_control_rate():
    from analysis.mirror.stage import flat_metrics, headline_numbers

    res, tables = _results(NOTICED, TIED, IMITATED)
    flat = flat_metrics(headline_numbers(res, tables))
    assert flat["m.noticing_control"] == 0.0 and (flat["m.noticing_control_k"], flat["m.noticing_control_n"]) == (0, 6)
    assert (flat["m.recognition_control_k"], flat["m.recognition_control_n"]) == (1, 6)
