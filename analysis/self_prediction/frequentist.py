"""Experiments 1-3's frequentist cross-checks (statsmodels and a cluster bootstrap), reported beside the Bayesian
estimates. Intervals here are 95%."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.constants import SEPARATED_SE
from analysis.intervals import wilson  # noqa: F401 (the family's modules import it from here)

N_BOOT = 2000


def cluster_weights(m: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, m)`` multiplicities of ``m`` clusters resampled with replacement, as floats: resample b is
    the b-th ``rng.integers(0, m, m)`` call on the seeded stream (one ``(n_boot, m)`` call draws the same
    numbers). Every cluster bootstrap of the analysis draws its resamples here."""
    draws = np.random.default_rng(seed).integers(0, m, (n_boot, m))
    w = np.bincount((draws + m * np.arange(n_boot)[:, None]).ravel(), minlength=n_boot * m).reshape(n_boot, m)
    return w.astype(float)


def cluster_bootstrap_difference(rows: pd.DataFrame, x: str = "self", y: str = "correct", cluster: str = "unit",
                                 n_boot: int = N_BOOT, seed: int = 0, alpha: float = 0.05) -> dict:
    """Difference in accuracy between ``x == 1`` and ``x == 0`` rows, with a percentile interval from
    resampling the ``cluster`` levels (the analysis: items) with replacement, ``n_boot`` times."""
    if n_boot < 2000:
        raise ValueError(f"n_boot={n_boot}: use at least 2000 bootstrap resamples")
    codes, _ = pd.factorize(rows[cluster], sort=True)
    xs = rows[x].to_numpy().astype(bool)
    ys = rows[y].to_numpy(dtype=float)
    m = codes.max() + 1
    k1, n1 = np.bincount(codes[xs], ys[xs], m), np.bincount(codes[xs], minlength=m).astype(float)
    k0, n0 = np.bincount(codes[~xs], ys[~xs], m), np.bincount(codes[~xs], minlength=m).astype(float)
    w = cluster_weights(m, n_boot, seed)
    boot = (w @ k1) / (w @ n1) - (w @ k0) / (w @ n0)
    est = k1.sum() / n1.sum() - k0.sum() / n0.sum()
    return {"estimate": float(est), "low": float(np.quantile(boot, alpha / 2)),
            "high": float(np.quantile(boot, 1 - alpha / 2)), "n_boot": n_boot, "clusters": int(m)}


def model_se(fit, name: str) -> float:
    """The model-based (inverse Fisher information) standard error of ``fit``'s coefficient ``name``, whatever
    covariance the fit reports: it diverges when the data are separated along that coefficient."""
    se = float(np.sqrt(fit.normalized_cov_params.loc[name, name]))
    return se if np.isfinite(se) else float("inf")


def _informative(rows: pd.DataFrame, groups: list[str], outcome: str = "correct") -> pd.DataFrame:
    """``rows`` without the levels of ``groups`` whose outcomes are all 0 or all 1, repeated until every
    remaining level of every group has both outcomes (dropping one level can leave another constant)."""
    while True:
        keep = np.ones(len(rows), dtype=bool)
        for g in groups:
            rate = rows.groupby(g)[outcome].transform("mean").to_numpy()
            keep &= (rate > 0) & (rate < 1)
        if keep.all():
            return rows.reset_index(drop=True)
        rows = rows[keep]


def independent_columns(X: pd.DataFrame) -> pd.DataFrame:
    """``X`` without the columns that are linear combinations of the columns before them (left to right), so
    the design has full column rank. Fixed effects of nested or confounded groups (a property that occurs in
    one task only, say, once uninformative levels are dropped) make a design rank-deficient: the fit is then
    unchanged (the fitted values span the same space), but its covariance is a pseudo-inverse whose entries
    along the unidentified directions are arbitrary, and a delta-method variance computed from it can come out
    huge or negative from rounding alone."""
    keep, basis = [], np.zeros((len(X), 0))
    values = X.to_numpy(dtype=float)
    for j in range(values.shape[1]):
        trial = np.column_stack([basis, values[:, j]])
        if np.linalg.matrix_rank(trial) > basis.shape[1]:
            keep.append(j)
            basis = trial
    return X.iloc[:, keep]


#: what :func:`glm_cluster` estimates (NaN, all of them, where it cannot)
GLM_NUMBERS = ("log_odds", "log_odds_low", "log_odds_high", "p_value", "ame", "ame_low", "ame_high")


def glm_cluster(rows: pd.DataFrame, x: str = "self", groups: tuple[str, ...] = ("target", "task", "property"),
                cluster: str = "unit", alpha: float = 0.05) -> dict:
    """Binomial GLM ``correct ~ x + C(group)...`` with standard errors clustered by ``cluster`` (the analysis: items): the
    contrast's log-odds coefficient with its interval, and the average marginal effect in accuracy points
    (interval by the delta method). A level of a group whose rows are all right or all wrong (a property
    every predictor gets right, say) has an infinite fixed effect and no information about ``x``: its rows
    are dropped from the fit, until none is left, and ``rows_used`` counts what remains (as
    :func:`glm_cell_fixed` drops such cells). The AME still averages over every row: on a dropped row the
    contrast changes nothing (0). Where the outcomes are still
    separated along ``x`` (its model-based standard error exceeds ``SEPARATED_SE``), every number is NaN and
    ``estimable`` is False. Dummy columns that the others already span (nested groups) are left out
    (:func:`independent_columns`), which changes no fitted value."""
    import statsmodels.api as sm

    n_all = len(rows)
    rows = _informative(rows, [g for g in groups if rows[g].nunique() > 1])
    if rows.empty or rows[x].nunique() < 2:
        return {k: float("nan") for k in (*GLM_NUMBERS, "model_se")} | {
            "clusters": int(rows[cluster].nunique()), "rows_used": int(len(rows)), "estimable": False}
    fixed = [g for g in groups if rows[g].nunique() > 1]
    X = (pd.get_dummies(rows[fixed].astype(str), drop_first=True, dtype=float) if fixed
         else pd.DataFrame(index=rows.index))
    X.insert(0, x, rows[x].astype(float).to_numpy())
    X = independent_columns(sm.add_constant(X, has_constant="add"))  # the constant and x come first: kept
    codes, _ = pd.factorize(rows[cluster], sort=True)
    fit = sm.GLM(rows["correct"].astype(float).to_numpy(), X, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": codes})
    lo, hi = fit.conf_int(alpha).loc[x]
    # average marginal effect: mean of p(x=1) - p(x=0) over all the rows, gradient for the delta method; a
    # dropped row's level has an infinite fixed effect, so p(x=1) = p(x=0) there and it adds 0 to the sum
    X1, X0 = X.copy(), X.copy()
    X1[x], X0[x] = 1.0, 0.0
    p1, p0 = fit.predict(X1), fit.predict(X0)
    ame = float(np.sum(p1 - p0)) / n_all
    grad = (X1.T.to_numpy() @ (p1 * (1 - p1)) - X0.T.to_numpy() @ (p0 * (1 - p0))) / n_all
    se = float(np.sqrt(grad @ fit.cov_params().to_numpy() @ grad))
    from scipy.stats import norm

    z = norm.ppf(1 - alpha / 2)
    out = {"log_odds": float(fit.params[x]), "log_odds_low": float(lo), "log_odds_high": float(hi),
           "p_value": float(fit.pvalues[x]), "ame": ame, "ame_low": ame - z * se, "ame_high": ame + z * se,
           "clusters": int(codes.max() + 1), "rows_used": int(len(rows)), "estimable": True}
    # (quasi-)separation: the outcomes of one arm (or of every group it meets) are all 0 or all 1, the maximum
    # likelihood coefficient runs off to infinity, and the fit stops wherever the optimiser gave up (23, or
    # 1e15, with a cluster-robust interval that can look tight because the scores vanish too). The
    # model-based standard error shows it: the information about the coefficient goes to zero.
    out["model_se"] = model_se(fit, x)
    if not np.isfinite([out["log_odds"], lo, hi, se]).all() or out["model_se"] > SEPARATED_SE:
        out.update({k: float("nan") for k in GLM_NUMBERS}, estimable=False)
    return out


def _directions(rows: pd.DataFrame) -> list[tuple[str, str]]:
    """Every (target, cross-predictor) pair of the rows: a direction of Experiment 1."""
    c = rows[rows["self"] == 0]
    return sorted(set(zip(c["target"], c["predictor"])))


def paired_directions(rows: pd.DataFrame, cluster: str = "unit", pair: str = "unit", alpha: float = 0.05) -> dict:
    """A McNemar-style paired estimate per direction: on the answers both the self-predictor and the
    direction's cross-predictor were scored on (``pair`` x property: the same answer unit), the share where
    only the self-predictor is right minus the share where only the cross-predictor is, which is self minus
    cross accuracy on the pairs. Its standard error treats the ``cluster`` levels as clusters (an item's
    properties share one answer; with ``cluster="item"``, an item's answers under every target and seed are
    one draw); the interval is normal. ``delta``: the directions weighted equally, its variance from the
    clusters' summed contributions to every direction, so directions that share items are not taken as
    independent. Conditional on the observed tasks, like the Bayesian delta.

    Returns ``directions`` ({"target|predictor": estimate, low, high, discordant, pairs}) and ``delta``."""
    from scipy.stats import norm

    z = norm.ppf(1 - alpha / 2)
    key = [pair, "property"]
    out, ests, parts = {}, [], []
    for t, p in _directions(rows):
        s = rows[(rows["target"] == t) & (rows["self"] == 1)].set_index(key, drop=False)[["correct", cluster]]
        c = rows[(rows["target"] == t) & (rows["self"] == 0) & (rows["predictor"] == p)].set_index(key)["correct"]
        both = s.rename(columns={"correct": "s"}).join(c.to_frame("c"), how="inner")
        d = (both["s"] - both["c"]).astype(float)
        units = d.groupby(both[cluster].to_numpy())
        n_u, s_u = units.size(), units.sum()
        n, m = float(n_u.sum()), len(n_u)
        est = float(s_u.sum() / n)
        r = (s_u - est * n_u) / n  # each cluster's contribution to the ratio estimator's deviation
        var = m / max(m - 1, 1) * float(np.sum(r.to_numpy() ** 2))
        out[f"{t}|{p}"] = {"estimate": est, "low": float(est - z * np.sqrt(var)),
                           "high": float(est + z * np.sqrt(var)), "self_only": int((d > 0).sum()),
                           "cross_only": int((d < 0).sum()), "pairs": int(n), "clusters": m}
        ests.append(est)
        parts.append(r)
    delta = float(np.mean(ests))
    zsum = pd.concat(parts, axis=1).fillna(0.0).sum(axis=1) / len(ests)  # per cluster, over the directions
    m = len(zsum)
    se = float(np.sqrt(m / max(m - 1, 1) * np.sum(zsum.to_numpy() ** 2)))
    return {"directions": out, "delta": {"estimate": delta, "low": delta - z * se, "high": delta + z * se}}


def glm_cell_fixed(rows: pd.DataFrame, cell: str = "cell", cluster: str = "unit", alpha: float = 0.05) -> dict:
    """Binomial GLM with a fixed effect per target x task x property cell and a self slope per target
    (``correct ~ C(cell) + self:C(target)``), standard errors clustered by ``cluster`` (the analysis: items). The frequentist
    analogue of the advantage model's fixed structure: each target's average marginal effect of self on its
    own rows, and ``delta``, their mean with the targets weighted equally (delta-method intervals). Cells
    whose rows are all right or all wrong carry no information about the slopes and are dropped (their
    fixed effect is infinite). A target whose self slope is separated within the remaining cells (model-based
    SE above ``SEPARATED_SE``) gets NaN, and so does ``delta``, with ``estimable`` False. Conditional on the
    observed cells."""
    import statsmodels.api as sm
    from scipy.stats import norm

    rows = _informative(rows, [cell])
    targets = sorted(rows["target"].unique())
    X = pd.get_dummies(rows[cell].astype(str), dtype=float)  # one column per cell: no separate constant
    slopes = [f"self:{t}" for t in targets]
    for t, name in zip(targets, slopes):
        X[name] = ((rows["target"] == t) & (rows["self"] == 1)).astype(float).to_numpy()
    codes, _ = pd.factorize(rows[cluster], sort=True)
    fit = sm.GLM(rows["correct"].astype(float).to_numpy(), X, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": codes})
    cov = fit.cov_params().to_numpy()
    z = norm.ppf(1 - alpha / 2)
    per, grads = {}, []
    for t, name in zip(targets, slopes):
        m = (rows["target"] == t).to_numpy()
        X1, X0 = X[m].copy(), X[m].copy()
        X1[name], X0[name] = 1.0, 0.0
        p1, p0 = fit.predict(X1), fit.predict(X0)
        ame = float(np.mean(p1 - p0))
        grad = (X1.T.to_numpy() @ (p1 * (1 - p1)) - X0.T.to_numpy() @ (p0 * (1 - p0))) / m.sum()
        se = float(np.sqrt(grad @ cov @ grad))
        per[t] = {"ame": ame, "low": ame - z * se, "high": ame + z * se, "log_odds": float(fit.params[name]),
                  "model_se": model_se(fit, name)}
        grads.append(grad)
    gd = np.mean(grads, axis=0)
    delta = float(np.mean([v["ame"] for v in per.values()]))
    se = float(np.sqrt(gd @ cov @ gd))
    out = {"by_target": per, "delta": {"estimate": delta, "low": delta - z * se, "high": delta + z * se},
           "cells_used": int(rows[cell].nunique()), "clusters": int(codes.max() + 1), "estimable": True}
    separated = [t for t, v in per.items() if v["model_se"] > SEPARATED_SE or not np.isfinite(v["log_odds"])]
    if separated:  # a target's self slope diverged (its self rows all right, say): that slope and delta are not estimable
        for t in separated:
            per[t].update(ame=float("nan"), low=float("nan"), high=float("nan"), log_odds=float("nan"))
        out.update(delta={k: float("nan") for k in ("estimate", "low", "high")}, estimable=False, separated=separated)
    return out


# ------------------------------------------------------------------------------------- behaviour change
def permutation_null(out: pd.DataFrame, n_perm: int = N_BOOT, seed: int = 0,
                     cell: tuple[str, ...] = ("model", "task", "property"), by: str = "model") -> pd.DataFrame:
    """Experiment 3's permutation null: the changed model's predictions shuffled among the changed items of
    each ``cell`` (model x task x property), ``n_perm`` times (seeded), and P(prediction = new),
    P(prediction = old) and their difference recomputed on every shuffle.

    The shuffle keeps what a predictor without item-level knowledge keeps: how often it predicts each value in
    each cell (so a predictor that merely drifted towards the value most items moved to scores the same on
    every shuffle), and breaks only which item gets which prediction. It moves items, not rows: each shuffle
    draws one random key per item (``unit``) that all of the item's properties share, and each cell hands its
    predictions out in the order of those keys, so two cells with the same changed items are shuffled alike
    and an item's properties, which come from one answer, keep travelling together. ``out``: the rows of
    :func:`analysis.self_prediction.tidy.behaviour_outcomes`.

    One row per group of ``by`` and ``"pooled"``: ``statistic`` (``p_new``, ``p_old``, ``new_minus_old``),
    ``observed``, ``null_mean``, ``null_low``/``null_high`` (2.5% / 97.5%) and ``p_value``, the one-sided
    permutation p-value P(null >= observed) with the observed arrangement counted among the shuffles,
    ``(1 + #{null >= observed}) / (1 + n_perm)``: small when the predictions match the behaviour item by item
    more often than their shuffles do.

    A shuffle can change a cell's count only where the cell holds different predictions and different
    behaviour values (if every changed item of a cell moved to the same new value, every arrangement of the
    predictions matches it equally often). ``n_informative`` counts the rows in cells whose count varied
    over the shuffles; where it is 0 the null is a single point and the test has no power, so ``p_value``
    is NaN rather than a p-value of 1 that would read as evidence."""
    if n_perm < 2000:
        raise ValueError(f"n_perm={n_perm}: use at least 2000 permutations")
    d = out.sort_values([*cell, "unit"], kind="stable").reset_index(drop=True)
    values = pd.concat([d["meta_value"], d["new_value"], d["old_value"]]).dropna().unique()
    code = {v: i for i, v in enumerate(values)}
    meta = np.array([code[v] if ok and v is not None and v == v else -1
                     for v, ok in zip(d["meta_value"], d["meta_compliant"].astype(bool))])
    new, old = d["new_value"].map(code).to_numpy(int), d["old_value"].map(code).to_numpy(int)
    groups = pd.factorize(pd.MultiIndex.from_frame(d[list(cell)]), sort=True)[0]
    units = pd.factorize(d["unit"], sort=True)[0]
    rng = np.random.default_rng(seed)
    # rows are sorted by cell and item, so sorting group code + an item's U(0, 1) key shuffles within each
    # cell's contiguous block, and the cells an item shares with another item shuffle the pair alike
    perm = np.argsort(groups[None, :] + rng.random((n_perm, units.max() + 1))[:, units], axis=1, kind="stable")
    shuffled = meta[perm]
    hit_new, hit_old = shuffled == new[None, :], shuffled == old[None, :]
    # per statistic, whether each row's cell count varied over the shuffles
    n_groups = int(groups.max()) + 1
    def varies(hits: np.ndarray) -> np.ndarray:
        per_cell = np.stack([np.bincount(groups, h, minlength=n_groups) for h in hits.astype(float)])
        return (per_cell.max(axis=0) > per_cell.min(axis=0))[groups]
    informative = {"p_new": varies(hit_new), "p_old": varies(hit_old)}
    informative["new_minus_old"] = varies(hit_new.astype(int) - hit_old.astype(int))
    rows = []
    for name, mask in [*((g, (d[by] == g).to_numpy()) for g in sorted(d[by].unique())), ("pooled", np.ones(len(d), bool))]:
        obs = {"p_new": (meta == new)[mask].mean(), "p_old": (meta == old)[mask].mean()}
        obs["new_minus_old"] = obs["p_new"] - obs["p_old"]
        null = {"p_new": hit_new[:, mask].mean(axis=1), "p_old": hit_old[:, mask].mean(axis=1)}
        null["new_minus_old"] = null["p_new"] - null["p_old"]
        for stat in ("p_new", "p_old", "new_minus_old"):
            z = null[stat]
            n_inf = int(informative[stat][mask].sum())
            p = float((1 + np.sum(z >= obs[stat] - 1e-12)) / (1 + n_perm)) if n_inf else float("nan")
            rows.append({by: name, "statistic": stat, "observed": float(obs[stat]), "null_mean": float(z.mean()),
                         "null_low": float(np.quantile(z, 0.025)), "null_high": float(np.quantile(z, 0.975)),
                         "p_value": p, "n": int(mask.sum()), "n_informative": n_inf, "n_perm": n_perm})
    return pd.DataFrame(rows)


def _cluster_means(out: pd.DataFrame, parts: dict[str, np.ndarray], n_boot: int, seed: int, cluster: str,
                   alpha: float) -> tuple[dict, int]:
    """Per entry of ``parts`` (a value per row of ``out``): its mean with a percentile interval from
    resampling the ``cluster`` units ``n_boot`` times (:func:`cluster_weights`), and the number of units."""
    if n_boot < 2000:
        raise ValueError(f"n_boot={n_boot}: use at least 2000 bootstrap resamples")
    codes, _ = pd.factorize(out[cluster], sort=True)
    m = int(codes.max()) + 1
    w = cluster_weights(m, n_boot, seed)
    n = np.bincount(codes, minlength=m).astype(float)
    res = {}
    for name, y in parts.items():
        boot = (w @ np.bincount(codes, y, minlength=m)) / (w @ n)
        res[name] = {"estimate": float(y.mean()), "low": float(np.quantile(boot, alpha / 2)),
                     "high": float(np.quantile(boot, 1 - alpha / 2))}
    return res, m


def paired_vs_mode(out: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0, cluster: str = "unit",
                   alpha: float = 0.05) -> dict:
    """Experiment 3's match rates against their leave-one-out mode baselines
    (:func:`analysis.self_prediction.tidy.leave_one_out_mode`), as paired differences on the changed items that
    have such a baseline, with percentile intervals from resampling the ``cluster`` levels (the analysis:
    items): ``new`` = P(prediction = new) - the leave-one-out mode's P(= new), ``old`` likewise (shares in
    [-1, 1]; ``n``: the items compared). A descriptive benchmark, not a test of tracking: a guesser that
    knows only the other items' behaviour sits at the baseline on average, but one that knows the cell's
    most common value better than a handful of other items reveal it can sit above it without knowing
    anything about the item (the tracking test is :func:`permutation_excess`)."""
    res = {}
    for side in ("new", "old"):
        base = out[f"loo_mode_{side}_correct"].astype(float)
        keep = base.notna().to_numpy()
        diff = (out[f"match_{side}"].astype(float) - base).to_numpy()[keep]
        if not keep.any():
            res[side] = {"estimate": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0}
            continue
        part, _ = _cluster_means(out[keep], {side: diff}, n_boot, seed, cluster, alpha)
        res[side] = {**part[side], "n": int(keep.sum())}
    return res


#: the contrasts of :func:`permutation_excess`
EXCESS = ("excess_new", "excess_old", "excess_new_minus_old")


def permutation_excess(out: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0, cluster: str = "unit",
                       cell: tuple[str, ...] = ("model", "task", "property"), by: str = "model",
                       alpha: float = 0.05) -> pd.DataFrame:
    """Experiment 3's tracking contrasts, whose expectation is 0 for a predictor unrelated to both behaviours:
    each match rate minus its exact expectation under the permutation null of :func:`permutation_null`.
    Under a shuffle within its ``cell``, item i's prediction is one of the cell's predictions drawn at random,
    so it equals i's new value with probability ``e_new_i`` = the share of the cell's predictions equal to
    it (a non-compliant prediction equals nothing); likewise ``e_old_i``. Per item, ``match_new - e_new``,
    ``match_old - e_old`` and their difference; their means are ``excess_new``, ``excess_old`` and
    ``excess_new_minus_old`` (= P(new) - P(old) minus that difference's permutation mean). A predictor that
    drifted towards the value most items moved to, or that predicts its old behaviour, or the same value
    everywhere, has every contrast 0 in expectation; only predictions that match the item's own behaviour
    more often than the cell's other predictions do move them. Percentile intervals from resampling the
    ``cluster`` levels (the analysis: items), the ``e`` held at their observed values.

    One row per group of ``by`` and ``"pooled"`` x ``statistic`` (:data:`EXCESS`): ``estimate``, ``low``,
    ``high``, ``observed`` (the raw rate or difference) and ``expected`` (its permutation mean), ``n``."""
    d = out.reset_index(drop=True)
    values = pd.concat([d["meta_value"], d["new_value"], d["old_value"]]).dropna().unique()
    code = {v: i for i, v in enumerate(values)}
    ok = d["meta_compliant"].astype(bool).to_numpy() & d["meta_value"].notna().to_numpy()
    meta = np.where(ok, d["meta_value"].map(code).fillna(-1).to_numpy(), -1).astype(int)
    new, old = d["new_value"].map(code).to_numpy(int), d["old_value"].map(code).to_numpy(int)
    cells = pd.factorize(pd.MultiIndex.from_frame(d[list(cell)]))[0]
    size = np.bincount(cells).astype(float)
    predicted = np.zeros((cells.max() + 1, len(values)))
    np.add.at(predicted, (cells[ok], meta[ok]), 1)
    e_new, e_old = predicted[cells, new] / size[cells], predicted[cells, old] / size[cells]
    hit_new, hit_old = (meta == new).astype(float), (meta == old).astype(float)
    parts = {"excess_new": hit_new - e_new, "excess_old": hit_old - e_old}
    parts["excess_new_minus_old"] = parts["excess_new"] - parts["excess_old"]
    raw = {"excess_new": (hit_new, e_new), "excess_old": (hit_old, e_old),
           "excess_new_minus_old": (hit_new - hit_old, e_new - e_old)}
    rows = []
    for name, mask in [*((g, (d[by] == g).to_numpy()) for g in sorted(d[by].unique())), ("pooled", np.ones(len(d), bool))]:
        res, _ = _cluster_means(d[mask], {k: v[mask] for k, v in parts.items()}, n_boot, seed, cluster, alpha)
        for stat in EXCESS:
            rows.append({by: name, "statistic": stat, **res[stat], "observed": float(raw[stat][0][mask].mean()),
                         "expected": float(raw[stat][1][mask].mean()), "n": int(mask.sum())})
    return pd.DataFrame(rows)
