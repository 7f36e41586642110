"""Experiment 2's statistic as the original computes it (felixbinder/introspection_self_prediction,
``side_experiments/19_sep_calibration_main_fig.py``): the top-3 sampled behaviours of every item, binned by
object-level probability with ``pd.qcut(..., q=10, duplicates="drop")`` (ties kept together), the mean
absolute difference of the bin means x100; the meta distribution with the mass outside the options kept;
and the paired bootstrap of MAD(self) - MAD(cross)."""

import numpy as np
import pandas as pd
import pytest

import analysis.self_prediction.tidy as tidy
from analysis.self_prediction.calibration import (calibration_cells, calibration_curve, calibration_tables, mad,
                                                  mad_bins, mad_difference_bootstrap, mad_resamples,
                                                  ORIGINAL_CALIBRATION_CELL)


def test_mad_by_hand_on_heavily_tied_probabilities():
    # 12 points whose object-level probabilities come from 4 samples: six at 0.25, three at 0.5, three at 1.0.
    # qcut's decile positions in the sorted sample are 11 * q = 0, 1.1, 2.2, ..., 9.9, 11, which give the
    # edges 0.25 (x5), 0.375 (between the 6th and 7th point), 0.5, 0.5, 0.9 (8.8: 0.5 + 0.8 * 0.5), 1.0, 1.0.
    # Dropping repeated edges leaves (0.25, 0.375], (0.375, 0.5], (0.5, 0.9], (0.9, 1.0]: the 0.25s, the 0.5s,
    # nothing, and the 1.0s. Three non-empty bins, ties never split:
    #   bin 1: object 0.25, meta mean (0.1 + 0.2 + 0.3 + 0.4 + 0.5 + 0.3) / 6 = 0.3  -> |diff| 0.05
    #   bin 2: object 0.50, meta mean (0.2 + 0.3 + 0.4) / 3 = 0.3                    -> |diff| 0.20
    #   bin 3: object 1.00, meta mean (0.9 + 0.9 + 0.6) / 3 = 0.8                    -> |diff| 0.20
    # MAD = 100 * (0.05 + 0.20 + 0.20) / 3 = 15.0
    o = np.array([0.25] * 6 + [0.5] * 3 + [1.0] * 3)
    m = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.3, 0.2, 0.3, 0.4, 0.9, 0.9, 0.6])
    assert mad(o, m) == pytest.approx(15.0)
    curve = calibration_curve(o, m)
    assert list(curve["n"]) == [6, 3, 3]
    assert list(curve["object_prob"]) == pytest.approx([0.25, 0.5, 1.0])
    assert list(curve["meta_prob"]) == pytest.approx([0.3, 0.3, 0.8])
    codes, edges = pd.qcut(o, 10, labels=False, duplicates="drop", retbins=True)
    assert list(edges) == pytest.approx([0.25, 0.375, 0.5, 0.9, 1.0])
    np.testing.assert_array_equal(mad_bins(o), codes)


def test_mad_is_invariant_to_row_order():
    """Tied probabilities share a bin whatever the order of the rows (the old argsort split gave 28.2 vs 27.6
    on the same data permuted)."""
    rng = np.random.default_rng(0)
    o = rng.integers(0, 21, 300) / 20  # 20 samples: multiples of 0.05, ties are the rule
    m = rng.random(300)
    reference, curve = mad(o, m), calibration_curve(o, m)
    for _ in range(20):
        p = rng.permutation(300)
        assert mad(o[p], m[p]) == pytest.approx(reference, abs=1e-9)  # equal up to the order of a float sum
        np.testing.assert_array_equal(np.bincount(mad_bins(o[p])), np.bincount(mad_bins(o)))  # the same bins
        again = calibration_curve(pd.Series(o[p]), pd.Series(m[p]))
        assert list(again["n"]) == list(curve["n"])
        np.testing.assert_allclose(again[["object_prob", "meta_prob"]], curve[["object_prob", "meta_prob"]], atol=1e-12)


def test_the_bins_are_exactly_pandas_qcut_with_duplicates_dropped():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n, k = int(rng.integers(10, 200)), int(rng.choice([2, 4, 5, 10, 20, 1000]))
        o = rng.integers(0, k + 1, n) / k
        ref = pd.qcut(o, 10, labels=False, duplicates="drop")
        if np.isnan(ref).any():  # pandas leaves every point unbinned when all are tied; we make one bin
            assert (mad_bins(o) == 0).all()
            continue
        np.testing.assert_array_equal(mad_bins(o), ref.astype(int))


def _cal_row(**kw):
    row = {"condition": "trained", "predictor": "m", "target": "m", "object_model": "m+self-s0", "seed": 0,
           "kind": "self", "task": "k", "property": "p", "item_id": "i", "options": ["a", "b", "c"],
           "n_samples": 20, "n_compliant": 10, "n_other": 0, "object_counts": [6, 3, 1],
           "object_probs": [0.6, 0.3, 0.1], "meta_probs": [0.5, 0.25, 0.25], "p_outside": 0.2}
    row.update(kw)
    return row


def test_the_bootstraps_mad_of_many_resamples_equals_mad_of_each_repeated_sample():
    # what the bootstraps compute at once (edges, ties, empty bins, resamples of one repeated value, too few
    # points) against mad() of each resample written out point by point
    from analysis.self_prediction.frequentist import cluster_weights

    rng = np.random.default_rng(3)
    for trial in range(60):
        n, k = int(rng.integers(5, 60)), int(rng.choice([2, 4, 20, 1000]))
        o, m = rng.integers(0, k + 1, n) / k, rng.random(n)
        if trial % 6 == 0:
            o[:] = o[0]  # every point tied
        w = cluster_weights(n, 40, trial).astype(int)
        got = mad_resamples(o, m, w)
        for b in range(len(w)):
            idx = np.repeat(np.arange(n), w[b])
            if len(idx) < 10:
                assert np.isnan(got[b])
            else:
                assert got[b] == pytest.approx(mad(o[idx], m[idx]), abs=1e-9)  # up to the order of float sums
    assert mad_resamples(o, m, np.ones((3, n), int)) == pytest.approx([mad(o, m)] * 3, abs=1e-9)


def test_the_meta_distribution_keeps_the_outside_mass_and_the_object_one_counts_compliant_samples():
    # 20 samples, 10 compliant: the original drops a sample whose property cannot be extracted, so the
    # object-level probabilities are counts / 10; the meta mass outside the options (0.2) stays outside
    cal = pd.DataFrame([_cal_row()])
    raw = tidy.calibration_pairs(cal)
    assert list(raw["object_prob"]) == pytest.approx([0.6, 0.3, 0.1])
    assert list(raw["meta_prob"]) == pytest.approx([0.4, 0.2, 0.2])  # meta_probs * (1 - p_outside)
    assert list(raw["rank"]) == [1, 2, 3] and set(raw["unit"]) == {"m+self-s0/k/i"}
    ren = tidy.calibration_pairs(cal, variant="renormalised")
    assert list(ren["meta_prob"]) == pytest.approx([0.5, 0.25, 0.25])
    err = tidy.calibration_errors(cal)["error"].iloc[0]
    assert err == pytest.approx(0.5 * (0.2 + 0.1 + 0.1 + 0.2))  # the outside mass is a value no sample took
    assert tidy.calibration_errors(cal, "renormalised")["error"].iloc[0] == pytest.approx(0.5 * (0.1 + 0.05 + 0.15))


def test_values_tied_across_the_third_place_rank_in_the_order_they_were_first_sampled():
    """The original sums each sampled value's probability into a dict in sample order and sorts it stably, so of
    two equally frequent values the one sampled first ranks first. Samples, in order: d c b b a c d (one
    non-compliant sample between): b 2, c 2, d 2, a 1. First appearances: d at 0, c at 1, b at 2, a at 5. The
    top three are d, c, b, in that order; option order would have taken b, c, d."""
    from reproduce.self_prediction import object_distribution

    values = ["d", "c", "b", "b", None, "a", "c", "d"]
    samples = pd.DataFrame([dict(model="m+self-s0", task="k", item_id="i", sample=k, property="first_character",
                                 value=v, compliant=v is not None) for k, v in enumerate(values)])
    d = object_distribution(samples).iloc[0]
    options = list(d["options"])
    first = dict(zip(options, d["object_first"]))
    assert (first["d"], first["c"], first["b"], first["a"], first["e"]) == (0, 1, 2, 5, -1)
    meta = [1 / len(options)] * len(options)
    cal = pd.DataFrame([_cal_row(options=options, n_compliant=d["n_compliant"], object_counts=list(d["object_counts"]),
                                 object_probs=list(d["object_probs"]), object_first=list(d["object_first"]),
                                 meta_probs=meta, p_outside=0.0, property="first_character")])
    pairs = tidy.calibration_pairs(cal)
    assert list(pairs["value"]) == ["d", "c", "b"] and list(pairs["object_prob"]) == pytest.approx([2 / 7] * 3)
    # a table written before object_first existed ranks tied values in option order
    assert list(tidy.calibration_pairs(cal.drop(columns="object_first"))["value"]) == ["b", "c", "d"]


def _pairs(seed=0, items=60, noise=(0.05, 0.15)):
    """Self and cross points on the same items (same object probabilities), the self-predictor closer."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(items):
        o = rng.integers(1, 21, 3) / 20
        for kind, sd in zip(("self", "cross"), noise):
            for rank, p in enumerate(o, start=1):
                rows.append({"target": "m", "object_model": "m+self-s0", "task": "k", "item_id": f"i{i}",
                             "unit": f"m+self-s0/k/i{i}", "kind": kind, "rank": rank, "object_prob": p,
                             "meta_prob": float(np.clip(p + rng.normal(0, sd), 0, 1))})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_the_paired_bootstrap_resamples_items_once_for_both_predictors():
    pairs = _pairs()
    r = mad_difference_bootstrap(pairs, 2000, seed=0)
    s, c = pairs[pairs.kind == "self"], pairs[pairs.kind == "cross"]
    assert r["mad_self"] == mad(s["object_prob"], s["meta_prob"])
    assert r["difference"] == pytest.approx(r["mad_self"] - r["mad_cross"])
    assert r["low"] < r["difference"] < r["high"] < 0 and r["items"] == 60
    # identical self and cross points: every paired resample has the same two MADs, so the interval is [0, 0]
    same = pd.concat([s, s.assign(kind="cross")], ignore_index=True)
    z = mad_difference_bootstrap(same, 2000, seed=0)
    assert z["difference"] == z["low"] == z["high"] == 0.0


@pytest.mark.slow
def test_calibration_tables_per_target_pooled_and_both_variants():
    rng = np.random.default_rng(2)
    rows = []
    for target in ("m1", "m2"):
        for cond, om, seed in (("untrained", target, pd.NA), ("trained", f"{target}+self-s0", 0)):
            for kind, pred in (("self", target), ("cross", "x")):
                for i in range(12):
                    counts = rng.multinomial(10, [0.5, 0.3, 0.2]).tolist()
                    rows.append(_cal_row(condition=cond, predictor=pred, target=target, object_model=om, seed=seed,
                                         kind=kind, item_id=f"i{i}", object_counts=counts,
                                         object_probs=[c / 10 for c in counts],
                                         meta_probs=list(rng.dirichlet(np.ones(3))), p_outside=float(rng.random() / 3)))
    tables, metrics, pairs = calibration_tables(pd.DataFrame(rows), 2000, seed=0)
    mad_t = tables["mad"]
    assert set(mad_t["target"]) == {"m1", "m2", "pooled"} and set(mad_t["variant"]) == {"raw", "renormalised"}
    assert set(tables["mad_difference"]["target"]) == {"m1", "m2", "pooled"}
    assert set(metrics["mad"]) == {"trained_self", "trained_cross", "untrained_self", "untrained_cross"}
    assert set(metrics["mad_by_target"]) == {"m1", "m2"} and set(metrics["mad_difference"]) == {"m1", "m2", "pooled"}
    g = pairs[(pairs["condition"] == "trained") & (pairs["kind"] == "self")]
    assert metrics["mad"]["trained_self"]["mad"] == pytest.approx(mad(g["object_prob"], g["meta_prob"]))


@pytest.mark.slow
def test_the_per_cell_mad_bins_each_task_and_property_alone():
    """The original's scope: a cell's MAD equals the MAD of that cell's points alone (not a slice of the pooled
    bins), the original's headline cell is marked, and a cell with too few points is listed, not dropped."""
    rng = np.random.default_rng(3)
    rows = []
    cells = ((*ORIGINAL_CALIBRATION_CELL, 12), ("animals", "starts_with_vowel", 12), ("years", "is_even", 2))
    for task, prop, n_items in cells:
        for cond, om, seed in (("untrained", "m", pd.NA), ("trained", "m+self-s0", 0)):
            for kind, pred in (("self", "m"), ("cross", "x")):
                for i in range(n_items):
                    counts = rng.multinomial(10, [0.5, 0.3, 0.2]).tolist()
                    rows.append(_cal_row(condition=cond, predictor=pred, target="m", object_model=om, seed=seed,
                                         kind=kind, task=task, property=prop, item_id=f"i{i}", object_counts=counts,
                                         object_probs=[c / 10 for c in counts],
                                         meta_probs=list(rng.dirichlet(np.ones(3))), p_outside=0.1))
    tables, metrics, pairs = calibration_tables(pd.DataFrame(rows), 500, seed=0)
    c = tables["mad_cells"]
    assert len(c) == 6 and set(c["target"]) == {"m", "pooled"}
    for (task, prop, n_items) in cells:
        row = c[(c.task == task) & (c.property == prop) & (c.target == "pooled")].iloc[0]
        g = pairs[(pairs.task == task) & (pairs.property == prop) & (pairs.condition == "trained")]
        s, x = g[g.kind == "self"], g[g.kind == "cross"]
        assert row["original"] == ((task, prop) == ORIGINAL_CALIBRATION_CELL)
        assert row["trained_self_points"] == len(s) and row["trained_cross_points"] == len(x)
        if len(s) >= 10:
            assert row["trained_self"] == pytest.approx(mad(s["object_prob"], s["meta_prob"]))
            assert row["trained_cross"] == pytest.approx(mad(x["object_prob"], x["meta_prob"]))
            assert row["difference"] == pytest.approx(row["trained_self"] - row["trained_cross"])
            assert row["low"] <= row["difference"] <= row["high"]
        else:  # 2 items x at most 3 behaviours: fewer than 10 points, no MAD
            assert np.isnan(row["trained_self"]) and np.isnan(row["difference"])
    # the pooled MAD bins every cell's points together, so it is not the mean of the cells' MADs
    assert metrics["mad"]["trained_self"]["mad"] != pytest.approx(c[c.target == "pooled"]["trained_self"].mean())
    m = metrics["mad_cells"]
    assert m["cells"] == 2 and m["cells_total"] == 3 and set(m["original"]) == {"m", "pooled"}
    assert m["original"]["pooled"]["trained_self"]["mad"] == pytest.approx(
        c[c.original & (c.target == "pooled")]["trained_self"].iloc[0])


def test_the_log_score_is_the_counts_log_likelihood_per_sample():
    from analysis.self_prediction.tidy import FLOOR, log_score

    assert log_score([2, 1, 0], [0.5, 0.25, 0.25]) == pytest.approx((2 * np.log(0.5) + np.log(0.25)) / 3)
    assert log_score([1, 1], [1.0, 0.0]) == pytest.approx(np.log(FLOOR) / 2)  # underflow: finite, large
    # the same floor whatever dtype the probability underflowed in: float16's and float32's smallest normals
    assert log_score([1], [np.finfo(np.float16).tiny]) == log_score([1], [np.finfo(np.float32).tiny]) == np.log(FLOOR)


@pytest.mark.slow
def test_the_log_score_model_recovers_a_known_difference():
    import analysis.self_prediction.hierarchical as M

    rng = np.random.default_rng(0)
    rows = []
    for t in ("m0", "m1"):
        for k in range(4):
            for i in range(30):
                u = rng.normal(0, 0.3)
                for s_, shift in ((1, -1.2), (0, -1.5)):  # self better by 0.3 nats per sample
                    rows.append((t, f"task{k}", "p", f"{t}/{k}/{i}", s_, shift + u + 0.4 * rng.standard_t(5)))
    df = pd.DataFrame(rows, columns=["target", "task", "property", "unit", "self", "log_score"])
    model, scale = M.log_score_model(df, ["target", "task"])
    idata = M.sample(model, M.SamplerSettings(draws=400, tune=400, chains=2, seed=0))
    assert M.diagnostics(idata)["divergences"] == 0
    eff = M.log_score_effects(idata, M.ContrastData(df.assign(n=1), "self", ["target", "task"], "unit"), scale, [[]])
    o = eff.iloc[0]
    assert o["low"] < 0.3 < o["high"] and abs(o["mean"] - 0.3) < 0.1
    assert o["cross_low"] < -1.5 < o["cross_high"]
    with pytest.raises(ValueError, match="finite"):
        M.log_score_model(df.assign(log_score=-np.inf), ["target"])
