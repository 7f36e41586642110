"""The two-turn trial's analysis (analysis.injection.two_turn) on tables whose answers are known by construction."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import analysis.injection.two_turn as TT
from analysis.injection.paired import halves

CONCEPTS = [f"c{i}" for i in range(8)]
CELLS = [(0.4, 1.0), (0.8, 1.0), (0.8, 4.0)]


def _tables(base=0.5, seed=3):
    """A control at ``base`` log-odds; concept shifts of 0, 0.1 and 2 plus a concept-specific term at the three
    cells; a random direction at layer fraction 0.8 shifting by half the concept's; a lens with two read layers."""
    rng = np.random.default_rng(seed)
    noise = dict(zip(CONCEPTS, rng.normal(0, 0.3, len(CONCEPTS))))
    effect = {CELLS[0]: 0.0, CELLS[1]: 0.1, CELLS[2]: 2.0}
    trials, lens = [], []
    for c in CONCEPTS:
        trials.append(dict(model="m", condition="control", concept=c, layer=-1, layer_fraction=np.nan, strength=0.0,
                           logodds=base))
        for rl in (0, 1):
            lens.append(dict(model="m", condition="control", concept=c, layer=-1, layer_fraction=np.nan, strength=0.0,
                             read_layer=rl, read_fraction=float(rl), lp_concept=-10.0, logodds_yes=base))
        for (f, s) in CELLS:
            shift = effect[(f, s)] + noise[c]
            trials.append(dict(model="m", condition="concept", concept=c, layer=int(10 * f), layer_fraction=f,
                               strength=s, logodds=base + shift))
            for rl in (0, 1):
                lens.append(dict(model="m", condition="concept", concept=c, layer=int(10 * f), layer_fraction=f,
                                 strength=s, read_layer=rl, read_fraction=float(rl),
                                 lp_concept=-10.0 + rl * s, logodds_yes=base + rl * shift))
            if f == 0.8:
                trials.append(dict(model="m", condition="random", concept=c, layer=8, layer_fraction=f, strength=s,
                                   logodds=base + shift / 2))
                for rl in (0, 1):  # the random direction raises the concept's token by a quarter of its own vector
                    lens.append(dict(model="m", condition="random", concept=c, layer=8, layer_fraction=f,
                                     strength=s, read_layer=rl, read_fraction=float(rl),
                                     lp_concept=-10.0 + rl * s / 4, logodds_yes=base))
    t = pd.DataFrame(trials)
    # P(yes) over yes/no, and over the whole vocabulary with a tenth of the mass elsewhere
    t = t.assign(p_yes=1 / (1 + np.exp(-t["logodds"])), p_outside=0.1)
    t = t.assign(lp_yes=np.log(0.9 * t["p_yes"]))
    return t, pd.DataFrame(lens)


def _ours(cells):
    return cells[cells["measure"] == "yes_vs_no"]


def test_shifts_cells_and_the_paired_random_contrast_are_the_hand_computed_ones():
    trials, lens = _tables()
    out = TT.analyse(trials, lens, seed=0)
    sh = out["shifts"]
    assert len(sh) == len(CONCEPTS) * (len(CELLS) + 2) and set(sh["condition"]) == {"concept", "random"}
    cells = _ours(out["cells"])
    for (f, s) in CELLS:
        got = cells[(cells["condition"] == "concept") & np.isclose(cells["layer_fraction"], f)
                    & np.isclose(cells["strength"], s)].iloc[0]
        x = (trials[(trials["condition"] == "concept") & np.isclose(trials["layer_fraction"], f)
                    & np.isclose(trials["strength"], s)]["logodds"] - 0.5).to_numpy()
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        assert got["n"] == len(CONCEPTS)
        assert got["mean"] == pytest.approx(x.mean()) and got["low"] == pytest.approx(x.mean() - half)
    # concept - random, paired by concept: half the concept's shift, only where the random direction ran
    vs = cells[cells["condition"] == "concept - random"]
    assert sorted(zip(vs["layer_fraction"], vs["strength"])) == [CELLS[1], CELLS[2]]
    strong = sh[(sh["condition"] == "concept") & np.isclose(sh["strength"], 4.0)].set_index("concept")["shift"]
    row = vs[np.isclose(vs["strength"], 4.0)].iloc[0]
    assert row["mean"] == pytest.approx((strong / 2).mean())
    n = out["numbers"]["m"]
    assert n["control_p_yes"] == pytest.approx(1 / (1 + np.exp(-0.5)))
    assert n["cells"] == 3 and n["cells_above"] == 1 and n["vs_random_cells"] == 2
    # the best cell is chosen on one half and estimated on the other
    b = n["best"]
    choose, estimate = halves(CONCEPTS, 0)
    assert (b["layer_fraction"], b["strength"]) == CELLS[2] and b["split"]["choose"] == choose
    held = strong[estimate]
    assert b["held_out"]["mean"] == pytest.approx(held.mean()) and b["held_out"]["n"] == len(estimate)


def test_the_lens_table_is_injected_minus_control_per_read_layer():
    trials, lens = _tables()
    lt = TT.analyse(trials, lens, seed=0)["lens"]
    c = lt[lt["condition"] == "concept"]
    assert len(c) == len(CELLS) * 2 and (c["n"] == len(CONCEPTS)).all()
    for (f, s) in CELLS:
        g = c[np.isclose(c["layer_fraction"], f) & np.isclose(c["strength"], s)].set_index("read_layer")
        assert g.loc[0, "d_lp_concept"] == pytest.approx(0.0) and g.loc[1, "d_lp_concept"] == pytest.approx(s)
    # against the random direction, paired by concept: s - s / 4 at read layer 1, nothing at read layer 0
    lr = TT.analyse(trials, lens, seed=0)["lens_vs_random"]
    assert sorted(set(zip(lr["layer_fraction"], lr["strength"]))) == [CELLS[1], CELLS[2]]
    for _, r in lr.iterrows():
        assert r["mean"] == pytest.approx(0.75 * r["strength"] * r["read_layer"]) and r["n"] == len(CONCEPTS)
    top = TT.analyse(trials, lens, seed=0)["numbers"]["m"]["lens_vs_random_top"]
    assert (top["read_layer"], top["strength"], top["among"]) == (1, 4.0, 4) and top["mean"] == pytest.approx(3.0)


def test_the_whole_vocabulary_measure_is_kept_beside_ours_and_unequal_controls_are_refused():
    from reproduce.errors import DataError

    trials, lens = _tables()
    out = TT.analyse(trials, lens, seed=0)
    sh = out["shifts"]
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    row = trials[trials["condition"] == "concept"].iloc[0]
    base = trials[trials["condition"] == "control"].iloc[0]
    got = sh[(sh["concept"] == row["concept"]) & (sh["condition"] == "concept")
             & np.isclose(sh["strength"], row["strength"]) & np.isclose(sh["layer_fraction"], row["layer_fraction"])]
    assert got["shift_full"].iloc[0] == pytest.approx(logit(0.9 * row["p_yes"]) - logit(0.9 * base["p_yes"]))
    assert set(out["cells"]["measure"]) == set(TT.MEASURES)
    assert not np.isnan(out["numbers"]["m"]["best"]["held_out_full"]["mean"])
    bad = trials.copy()
    bad.loc[bad.index[bad["condition"] == "control"][0], "logodds"] += 1.0
    with pytest.raises(DataError, match="two-turn control trials differ"):
        TT.shifts(bad)


def test_a_model_with_too_few_concepts_gets_no_split_half_choice():
    trials, lens = _tables()
    few = trials[trials["concept"].isin(CONCEPTS[:3])]
    assert "best" not in TT.analyse(few, lens[lens["concept"].isin(CONCEPTS[:3])], seed=0)["numbers"]["m"]
