"""The manuscript's figures, one function each. Every function reads the analysis stage's outputs only
(``data/analysis/tables/*.parquet`` and ``metrics.json`` through :class:`Outputs`) and returns a matplotlib
figure; :func:`figures.self_prediction.stage.run_figures` saves them. Accuracies are in percent; posterior intervals are 94%
equal-tailed, raw intervals are Wilson 95%, as their legends say."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.constants import INTERVAL_PERCENT as IV, MAD_BINS, POWER_TARGET, TOP_BEHAVIOURS
from reproduce.errors import MissingInput

from figures.self_prediction.sibling_plots import sibling_contrasts, similarity
from figures.style import COLOURS, MARKERS, errorbar as _errorbar, interval as _interval


NEEDED = ("training", "training_common", "accuracy_by_target", "accuracy_by_seed", "advantage", "scaling", "calibration_curve", "mad",
          "compliance", "ppc_advantage", "ppc_training", "arms")


class MissingOutputs(MissingInput):
    """An analysis output a figure needs is absent."""


@dataclass
class Outputs:
    """The analysis stage's outputs, read lazily and cached: ``tables[name]`` and ``metrics``."""
    root: Path
    _tables: dict = field(default_factory=dict)

    def __post_init__(self):
        self.root = Path(self.root)
        missing = [n for n in NEEDED if not (self.root / "tables" / f"{n}.parquet").exists()]
        if not (self.root / "metrics.json").exists():
            missing.append("metrics.json")
        if missing:
            raise MissingOutputs(f"{self.root} lacks {', '.join(missing)}: run the analysis stage first "
                                 "(`dvc repro analysis`)")
        self.metrics = json.loads((self.root / "metrics.json").read_text())

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            path = self.root / "tables" / f"{name}.parquet"
            self._tables[name] = pd.read_parquet(path) if path.exists() else pd.DataFrame()
        return self._tables[name]


def _targets(df: pd.DataFrame) -> list[str]:
    return sorted(df["target"].dropna().unique())


# ----------------------------------------------------------------------------------------------- figures
def training_effect(o: Outputs):
    """Self-prediction accuracy before training (scored against the base model) and after (scored against
    the self-trained model M1', pooled over finetune seeds), per model, each beside the mode baseline of the
    behaviour it is scored against (posterior means and 94% intervals from the training-effect model, and the
    mode baselines, over the same cells: those with scored answers in both conditions)."""
    tr = o.table("training")
    tr = tr[tr["by"] == "target"].sort_values("target")
    acc = o.table("training_common")
    base = {c: acc[acc["condition"] == c].set_index("target")["mode_baseline"] for c in ("untrained", "trained")}
    fig, ax = plt.subplots(figsize=(5.2, 4.0))
    x = np.arange(len(tr))
    for dx, col, key, label in ((-0.12, "untrained", "accuracy_0", "before training (vs base model)"),
                                (0.12, "trained", "accuracy_1", "after training (vs M1')")):
        _errorbar(ax, x + dx, 100 * tr[key], 100 * tr[f"{key}_low"], 100 * tr[f"{key}_high"], COLOURS[col],
                  MARKERS[col], label)
        for i, t in enumerate(tr["target"]):
            if t in base[col]:
                ax.hlines(100 * base[col][t], i + dx - 0.12, i + dx + 0.12, colors=COLOURS[col], linestyles="--",
                          lw=1.2, label=("mode baseline, base model" if col == "untrained" else "mode baseline, M1'")
                          if i == 0 else None)
    ax.set_xticks(x, tr["target"])
    ax.set_xlim(-0.6, len(tr) - 0.4)
    ax.set_ylim(0, 100)
    ax.set_ylabel("self-prediction accuracy (%)")
    # the cells differ from the raw-accuracy table's (every scored answer): the title says which these are
    ax.set_title("Self-prediction before and after training\n(held-out cells scored in both conditions; "
                 "the raw-accuracy table counts every answer)", fontsize=9)
    # below the axes: inside, it covered the points and baselines near 100%
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    return fig


def self_vs_cross(o: Outputs):
    """Self- vs cross-prediction accuracy per held-out task and per property, for each target model (both
    directions), with 94% posterior intervals from the advantage model."""
    adv = o.table("advantage")
    targets = _targets(adv)
    fig, axes = plt.subplots(2, len(targets), figsize=(3.6 * len(targets), 7.0), squeeze=False,
                             gridspec_kw={"height_ratios": [1, 1.6]})
    for j, t in enumerate(targets):
        for i, by in enumerate(("task", "property")):
            ax = axes[i, j]
            d = adv[(adv["by"] == f"target+{by}") & (adv["target"] == t)].sort_values(by, ascending=False)
            y = np.arange(len(d))
            for dy, kind, level in ((0.15, "self", "1"), (-0.15, "cross", "0")):
                _errorbar(ax, y + dy, 100 * d[f"accuracy_{level}"], 100 * d[f"accuracy_{level}_low"],
                          100 * d[f"accuracy_{level}_high"], COLOURS[kind], MARKERS[kind],
                          f"{kind}-prediction", horizontal=True)
            ax.set_yticks(y, d[by])
            ax.set_xlim(0, 100)
            ax.set_xlabel("accuracy (%)")
            if i == 0:
                ax.set_title(f"predicting {t}")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.suptitle(f"Self- vs cross-prediction on held-out tasks ({IV}% posterior intervals)", y=1.0)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.975), ncol=2, frameon=False)
    fig.subplots_adjust(top=0.9)
    return fig


def scaling(o: Outputs):
    """Cross-prediction accuracy against the number of training examples (first finetune seed, scored against
    M1'), beside the self-predictor's level and M1''s mode baseline (raw accuracies, Wilson 95% intervals)."""
    sc = o.table("scaling")
    targets = _targets(sc)
    fig, axes = plt.subplots(1, len(targets), figsize=(3.6 * len(targets), 3.8), squeeze=False, sharey=True)
    for ax, t in zip(axes[0], targets):
        d = sc[sc["target"] == t]
        cross = d[d["kind"] == "cross"].sort_values("n_examples")
        self_ = d[d["kind"] == "self"].sort_values("n_examples").iloc[-1]
        ax.plot(cross["n_examples"], 100 * cross["accuracy"], color=COLOURS["cross"], lw=1)
        _errorbar(ax, cross["n_examples"], 100 * cross["accuracy"], 100 * cross["wilson_low"],
                  100 * cross["wilson_high"], COLOURS["cross"], MARKERS["cross"],
                  f"cross ({', '.join(sorted(cross['predictor'].unique()))})")
        ax.axhspan(100 * self_["wilson_low"], 100 * self_["wilson_high"], color=COLOURS["self"], alpha=0.15, lw=0)
        ax.axhline(100 * self_["accuracy"], color=COLOURS["self"], lw=1.2,
                   label=f"self ({int(self_['n_examples'])} examples)")
        ax.axhline(100 * self_["mode_baseline"], color=COLOURS["baseline"], ls="--", lw=1.2, label="mode baseline")
        ax.set_xticks(sorted(d["n_examples"].unique()))
        ax.set_xlabel("training examples")
        ax.set_title(f"predicting {t}")
        ax.set_ylim(0, 100)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)  # inside, it covered points
    axes[0, 0].set_ylabel("accuracy (%)")
    fig.suptitle("Cross-prediction vs training-set size (Wilson 95% intervals)", y=1.02)
    fig.tight_layout()
    return fig


def calibration(o: Outputs):
    """Calibration as the paper measures it, per target model and pooled: binned object-level probability
    (the T=1 samples of the behaviour scored against: M1' after training, the base model before) against
    the predictor's meta-level probability with the mass outside the options kept, untrained and trained,
    self and cross, with each curve's MAD and bootstrap 95% interval in the legend."""
    cur, mad = o.table("calibration_curve"), o.table("mad")
    if not cur.empty and "variant" in cur:
        cur, mad = cur[cur["variant"] == "raw"], mad[mad["variant"] == "raw"]
    if cur.empty or mad.empty:
        fig, ax = plt.subplots(figsize=(4.6, 4.4))
        ax.text(0.5, 0.5, f"too few calibration points for {MAD_BINS} bins", ha="center", va="center", transform=ax.transAxes)
        return fig
    scopes = [t for t in sorted(cur["target"].unique()) if t != "pooled"] + ["pooled"]
    fig, axes = plt.subplots(1, len(scopes), figsize=(3.6 * len(scopes), 4.1), squeeze=False)
    mad = mad.set_index(["target", "condition", "kind"])
    for ax, scope in zip(axes[0], scopes):
        ax.plot([0, 1], [0, 1], color=COLOURS["baseline"], lw=0.8, ls=":", label="perfect calibration")
        for (condition, kind), d in cur[cur["target"] == scope].groupby(["condition", "kind"], sort=True):
            m = mad.loc[(scope, condition, kind)]
            colour = COLOURS[kind] if condition == "trained" else COLOURS["untrained"]
            ls = "-" if kind == "self" else "--"
            ax.plot(d["object_prob"], d["meta_prob"], color=colour, ls=ls, marker=MARKERS[kind], ms=3.5, lw=1.2,
                    label=f"{condition} {kind}: MAD {m['mad']:.1f} [{m['low']:.1f}, {m['high']:.1f}]")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("object-level probability (T=1 samples)")
        ax.set_title("pooled over targets" if scope == "pooled" else f"target {scope}")
        ax.legend(loc="upper left", frameon=False, fontsize=7)
    axes[0, 0].set_ylabel("meta-level probability (outside mass kept)")
    fig.suptitle(f"Calibration ({MAD_BINS} equal-frequency bins, ties kept together; top-{TOP_BEHAVIOURS} behaviours)", y=1.0)
    fig.tight_layout()
    return fig


def behaviour_change(o: Outputs):
    """Experiment 3: on items whose behaviour changed, the share of the changed model's predictions that
    match the new behaviour, the old one, or neither, per model and pooled over models (raw shares, Wilson
    95%), each match rate beside its leave-one-out mode baseline (the most common value among the other
    changed items of the cell; short dashes) and the 95% range of the permutation null (predictions shuffled
    among the items of each model x task x property; bands)."""
    from analysis.intervals import wilson

    counts = o.table("behaviour_counts")
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    if counts.empty:
        ax.text(0.5, 0.5, "no behaviour-change run", ha="center", va="center", transform=ax.transAxes)
        return fig
    per = counts.groupby("model")[["new", "old", "neither"]].sum()
    per.loc["pooled"] = per.sum()
    groups = list(per.index)
    x = np.arange(len(groups))
    track = o.table("behaviour_tracking")
    track = track.set_index("model") if not track.empty else track
    perm = o.table("behaviour_permutation")
    n = per.sum(axis=1).to_numpy()
    for dx, outcome in ((-0.22, "new"), (0.0, "old"), (0.22, "neither")):
        k = per[outcome].to_numpy()
        low, high = wilson(k, n)
        _errorbar(ax, x + dx, 100 * k / n, 100 * low, 100 * high, COLOURS[outcome], "o",
                  f"matches {outcome} behaviour" if outcome != "neither" else "neither")
        if outcome == "neither" or track.empty:
            continue
        for i, g in enumerate(groups):
            ax.hlines(100 * track.loc[g, f"loo_mode_{outcome}"], i + dx - 0.1, i + dx + 0.1, colors=COLOURS[outcome],
                      linestyles="--", lw=1.2, label=f"leave-one-out mode baseline ({outcome})" if i == 0 else None)
            if not perm.empty:
                r = perm[(perm["model"] == g) & (perm["statistic"] == f"p_{outcome}")].iloc[0]
                ax.fill_between([i + dx - 0.1, i + dx + 0.1], 100 * r["null_low"], 100 * r["null_high"],
                                color=COLOURS[outcome], alpha=0.15, lw=0,
                                label=f"permutation null 95% ({outcome})" if i == 0 else None)
    ax.set_xticks(x, [f"{g}\n(n={int(v)})" for g, v in zip(groups, n)])
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of changed items (%)")
    ax.set_title("After behaviour change: how often the prediction matches each behaviour\n(Wilson 95% intervals)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def seeds(o: Outputs):
    """Experiment 1 per finetune seed: raw self- and cross-prediction accuracy against M1' of each seed, per
    target model, with Wilson 95% intervals and M1''s mode baseline (dashes): the spread between seeds."""
    acc = o.table("accuracy_by_seed")
    targets = _targets(acc)
    fig, axes = plt.subplots(1, len(targets), figsize=(3.6 * len(targets), 3.8), squeeze=False, sharey=True)
    for ax, t in zip(axes[0], targets):
        d = acc[acc["target"] == t]
        seeds_ = sorted(d["seed"].dropna().unique())
        x = np.arange(len(seeds_))
        for dx, kind in ((-0.12, "self"), (0.12, "cross")):
            k = d[d["kind"] == kind].set_index("seed").reindex(seeds_)
            _errorbar(ax, x + dx, 100 * k["accuracy"], 100 * k["wilson_low"], 100 * k["wilson_high"], COLOURS[kind],
                      MARKERS[kind], f"{kind} ({', '.join(sorted(d.loc[d['kind'] == kind, 'predictor'].unique()))})")
        b = d.groupby("seed")["mode_baseline"].first().reindex(seeds_)
        ax.hlines(100 * b.to_numpy(), x - 0.3, x + 0.3, colors=COLOURS["baseline"], linestyles="--", lw=1.2,
                  label="mode baseline (M1')")
        ax.set_xticks(x, [f"seed {int(s)}" for s in seeds_])
        ax.set_xlim(-0.6, len(seeds_) - 0.4)
        ax.set_ylim(0, 100)
        ax.set_title(f"predicting {t}+self")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)  # inside, it covered points
    axes[0, 0].set_ylabel("accuracy (%)")
    fig.suptitle("Self- vs cross-prediction per finetune seed (Wilson 95% intervals)", y=1.02)
    fig.tight_layout()
    return fig


def _prob(p: float) -> str:
    """``P(...)`` label text: :func:`analysis.verdicts.probability_text` after ``=`` unless it is a bound."""
    from analysis.verdicts import probability_text

    t = probability_text(p)
    return t if t[0] in "<>" else f"= {t}"


def advantage_forest(o: Outputs):
    """Forest plot of the posterior self-prediction advantage (self minus cross accuracy, percentage points):
    delta (equal predicting skill, directions weighted equally), the pooled trial-weighted difference, per
    target, per held-out task and per property, with 94% intervals and P(advantage > 0)."""
    adv = o.table("advantage")
    parts = []
    for by, label in (("delta", lambda r: "delta (equal skill)"), ("overall", lambda r: "pooled, trial-weighted"),
                      ("target", lambda r: f"target: {r['target']}"),
                      ("task", lambda r: f"task: {r['task']}"), ("property", lambda r: f"property: {r['property']}")):
        d = adv[adv["by"] == by].copy()
        d["label"] = [label(r) for _, r in d.iterrows()]
        parts.append(d.sort_values("mean") if by not in ("overall", "delta") else d)
    d = pd.concat(parts, ignore_index=True).iloc[::-1].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(5.6, 0.26 * len(d) + 1.2))
    y = np.arange(len(d))
    _errorbar(ax, y, 100 * d["mean"], 100 * d["low"], 100 * d["high"], COLOURS["self"], "o", None, horizontal=True)
    ax.axvline(0, color=COLOURS["baseline"], lw=0.8)
    ax.set_yticks(y, d["label"])
    right = ax.secondary_yaxis("right")
    right.set_yticks(y, [f"P>0 {_prob(p)}" for p in d["p_positive"]])
    right.tick_params(length=0)
    ax.set_xlabel("self minus cross accuracy (percentage points)")
    ax.set_title(f"Posterior self-prediction advantage ({IV}% intervals)")
    return fig


def compliance(o: Outputs):
    """Compliance: the share of object-level answers with a defined property per object model (each base
    model and each self-trained M1'), and the share of hypothetical answers that parse to a valid value per
    predictor, target and condition (Wilson 95%)."""
    c = o.table("compliance")
    obj = c[c["level"] == "object"].sort_values(["target", "predictor"])
    meta = c[c["level"] == "meta"].sort_values(["condition", "target", "kind"], ascending=[False, True, False])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.6), gridspec_kw={"width_ratios": [1.2, 2.0]})
    x = np.arange(len(obj))
    a1.bar(x, 100 * obj["rate"], color=COLOURS["object"], width=0.6)
    _interval(a1, x, 100 * obj["low"], 100 * obj["high"], "black")
    a1.set_xticks(x, obj["predictor"], rotation=45, ha="right")
    a1.set_ylim(0, 100)
    a1.set_ylabel("compliance (%)")
    a1.set_title("object level")
    y = np.arange(len(meta))[::-1]
    colours = [COLOURS[k] if cond == "trained" else COLOURS["untrained"]
               for k, cond in zip(meta["kind"], meta["condition"])]
    bars = a2.barh(y, 100 * meta["rate"], color=colours, height=0.7, edgecolor="white")
    for bar, kind in zip(bars, meta["kind"]):
        bar.set_hatch("" if kind == "self" else "//")
    _interval(a2, y, 100 * meta["low"], 100 * meta["high"], "black", horizontal=True)
    a2.set_yticks(y, [f"{cond}: {p} \u2192 {t}" for cond, p, t in
                      zip(meta["condition"], meta["predictor"], meta["target"])])
    a2.set_xlim(0, 100)
    a2.set_xlabel("compliance (%)")
    a2.set_title("meta level (hypothetical answers), predictor \u2192 target")
    from matplotlib.patches import Patch
    a2.legend(handles=[Patch(color=COLOURS["untrained"], label="untrained"),
                       Patch(color=COLOURS["self"], label="trained self"),
                       Patch(facecolor=COLOURS["cross"], hatch="//", edgecolor="white", label="trained cross")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.suptitle("Compliance (Wilson 95% intervals)", y=1.02)
    fig.tight_layout()
    return fig


def prior_predictive(o: Outputs):
    """The accuracy of a cell implied by the advantage model's priors alone (prior-predictive density over
    the observed cells) beside the observed cells' accuracies (each target x task x property cell and arm of the
    fitted data): a weakly informative prior spreads over the range the data take."""
    d = o.table("prior_cell_accuracy")
    fig, ax = plt.subplots(figsize=(5.2, 3.0))
    if len(d):
        ax.bar(100 * d["low"], d["density"], width=100 * (d["high"] - d["low"]), align="edge",
               color=COLOURS["self"], alpha=0.6, edgecolor="white", label="prior predictive")
        cells = o.table("ppc_advantage")
        if len(cells):
            edges = np.unique(np.r_[d["low"].to_numpy(), d["high"].to_numpy()[-1:]])
            dens, _ = np.histogram(cells["observed"] / cells["n"], bins=edges, density=True)
            ax.stairs(dens, 100 * edges, color=COLOURS["cross"], lw=1.6,
                      label=f"observed cells ({len(cells)})")
        ax.legend(loc="upper center", frameon=False, fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("accuracy of a cell (%)")
    ax.set_ylabel("density (per unit accuracy)")
    ax.set_title("Advantage model: prior-predictive and observed cell accuracy")
    return fig


#: the answer-level statistics of the posterior-predictive check, as the figure labels them
UNIT_STATISTICS = {"all_correct_self": "self: every property right", "none_correct_self": "self: none right",
                   "all_correct_cross": "cross: every property right", "none_correct_cross": "cross: none right",
                   "disagreement": "self and cross disagree"}


def posterior_predictive(o: Outputs):
    """Posterior-predictive check of the advantage and training-effect models: each cell's observed count of
    correct predictions against its replicated 94% interval, cells sorted by the replicated mean; and, below
    the cells, the advantage model's answer-level statistics (how an answer's properties and the two
    predictors go together) against their replicated 94% intervals."""
    fig, axes = plt.subplots(1, 3, figsize=(12.6, 3.6), gridspec_kw={"width_ratios": [1, 1, 0.9]})
    for ax, name, level, title in ((axes[0], "ppc_advantage", "self", "advantage model"),
                                   (axes[1], "ppc_training", "trained", "training-effect model")):
        p = o.table(name).copy()
        p["rate"], p["lo"], p["hi"] = p["observed"] / p["n"], p["rep_low"] / p["n"], p["rep_high"] / p["n"]
        p = (p.assign(order=p["rep_mean"] / p["n"]).sort_values(["order", "cell"])
             .assign(rank=lambda d: np.arange(len(d))))
        ax.vlines(p["rank"], 100 * p["lo"], 100 * p["hi"], color="#d0d0d0", lw=1.6, label=f"replicated {IV}% interval")
        for lv, kind in ((1, "self" if level == "self" else "trained"), (0, "cross" if level == "self" else "untrained")):
            d = p[p[level] == lv]
            ax.plot(d["rank"], 100 * d["rate"], MARKERS[kind], color=COLOURS[kind], ms=3, zorder=3,
                    label=f"observed ({kind})")
        ax.set_xlabel("cell (target x task x property x condition), sorted")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"{title}: {100 * p['covered'].mean():.0f}% of {len(p)} cells covered")
        ax.legend(loc="upper left", frameon=False)
    ax = axes[2]
    u = o.table("ppc_units")
    if len(u):
        u = u[u["statistic"].isin(list(UNIT_STATISTICS))].reset_index(drop=True)
        y = np.arange(len(u))[::-1]
        ax.hlines(y, 100 * u["rep_low"], 100 * u["rep_high"], color="#d0d0d0", lw=4,
                  label=f"replicated {IV}% interval")
        ax.plot(100 * u["observed"], y, "o", color="black", ms=4, label="observed")
        for yy, r in zip(y, u.itertuples()):
            if not r.covered:
                ax.annotate("outside", (100 * r.observed, yy), xytext=(4, 3), textcoords="offset points", fontsize=7)
        ax.set_yticks(y, [UNIT_STATISTICS[s] for s in u["statistic"]], fontsize=8)
        ax.set_xlabel("share of answers (or properties) (%)")
        ax.set_title("advantage model: answer level")
        # a free row below the statistics holds the legend, clear of every interval and point
        ax.set_ylim(-1.4, len(u) - 0.5)
        ax.legend(loc="lower center", frameon=False, fontsize=7, ncol=2)
    fig.suptitle("Posterior-predictive checks", y=1.02)
    fig.tight_layout()
    return fig


def baseline_arms(o: Outputs):
    """The mode baseline as an arm of the model (posterior means, 94% intervals). Left: the accuracy of the
    self-predictor, the cross-predictor and the mode baseline, pooled and per target, from one fit. Right:
    self minus mode in every target x task x property cell, sorted, coloured by the verdict of its interval
    against the ROPE (dotted): a pooled difference above the mode can hide cells below it."""
    arms = o.table("arms")
    rope = o.metrics.get("baseline_arms", {}).get("rope", 0.0)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.6), gridspec_kw={"width_ratios": [1, 1.6]})
    top = arms[arms["by"].isin(["overall", "target"])].copy()
    top["label"] = np.where(top["by"] == "overall", "pooled", top["target"].fillna(""))
    x = np.arange(len(top))
    for dx, arm, colour, marker in ((-0.2, "self", COLOURS["self"], "o"), (0.0, "cross", COLOURS["cross"], "s"),
                                    (0.2, "mode", COLOURS["baseline"], "D")):
        _errorbar(left, x + dx, top[f"accuracy_{arm}"], top[f"accuracy_{arm}_low"], top[f"accuracy_{arm}_high"],
                  colour, marker, arm if arm != "mode" else "mode baseline")
    left.set_xticks(x, top["label"])
    left.set_ylabel("accuracy (%)")
    left.set_ylim(0, 100)
    left.legend(frameon=False, loc="lower left")
    left.set_title("Arms of one model")
    cells = arms[arms["by"] == "target+cell"].sort_values("self_minus_mode").reset_index(drop=True)
    tone = {"positive": COLOURS["self"], "negative": COLOURS["old"]}
    for verdict_, d in cells.groupby("self_minus_mode_verdict", sort=True):
        _errorbar(right, d.index, d["self_minus_mode"], d["self_minus_mode_low"], d["self_minus_mode_high"],
                  tone.get(verdict_, COLOURS["untrained"]), "o", f"{verdict_} ({len(d)})")
    right.axhline(0, color=COLOURS["baseline"], lw=0.8)
    for r in (-rope, rope):
        right.axhline(r, color=COLOURS["baseline"], lw=0.6, ls=":")
    right.set_xticks([])
    right.set_xlabel(f"target x task x property cell ({len(cells)}), sorted")
    right.set_ylabel("self minus mode (points)")
    right.legend(frameon=False, loc="upper left", title="verdict")
    right.set_title("Self-predictor against the mode, per cell")
    fig.tight_layout()
    return fig


def power(o: Outputs):
    """Power of the advantage verdict for this run's design (``looking-inward power``: replicates drawn with
    the fitted model's heterogeneity). Left: the share of replicates whose interval lies above the ROPE,
    against the true advantage, on the observed tasks (the manuscript's verdict on delta), for new tasks, and for
    the headline's population estimand (a new task and, with several finetuning seeds, a new finetuning run).
    Middle and right: the minimum advantage detectable with 80% power against the scored items per task (and
    seed) and against the number of held-out tasks (the run's design marked); a missing point never reaches 80% on the
    grid."""
    root = o.root / "power"
    if not (root / "power.json").exists():
        raise MissingOutputs(f"{root} lacks power.json: run the power stage first (`dvc repro power`)")
    meta = json.loads((root / "power.json").read_text())
    curve, by = pd.read_parquet(root / "curve.parquet"), pd.read_parquet(root / "by_size.parquet")
    d = meta["design"]
    fig, axes = plt.subplots(1, 3, figsize=(9.6, 3.2))
    styles = [("observed_tasks", "observed tasks", COLOURS["self"], "o"), ("new_tasks", "new tasks", COLOURS["cross"], "s")]
    if "power_population" in curve:  # the headline's population estimand (older power results lack it)
        styles.append(("population", "headline: new task" + (" and run" if d.get("seeds", 1) >= 2 else ""),
                       COLOURS["object"], "^"))
    for key, label, colour, marker in styles:
        axes[0].plot(curve["advantage"], 100 * curve[f"power_{key}"], marker + "-", color=colour, ms=3, label=label)
        for ax, axis in ((axes[1], "items"), (axes[2], "tasks")):
            b = by[by["axis"] == axis]
            ax.plot(b["value"], b[f"mda_{key}"], marker + "-", color=colour, ms=3, label=label)
    axes[0].axhline(100 * POWER_TARGET, color=COLOURS["baseline"], lw=0.8, ls="--")
    axes[0].axvspan(-meta["rope"], meta["rope"], color=COLOURS["untrained"], alpha=0.2, lw=0, label="ROPE")
    axes[0].set_xlabel("true advantage (points)")
    axes[0].set_ylabel("power (%)")
    axes[0].set_ylim(0, 100)
    # below the panel: the three curves and the ROPE band fill the axes between them
    axes[0].legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=7)
    seeds = d.get("seeds", 1)
    # the design's items are the scored ones (the run's mean per task, target and seed), not the profile's items
    axes[0].set_title(f"{d['tasks']} tasks, {d['items']} scored items per task" + (f" x {seeds} seeds" if seeds >= 2 else ""))
    for ax, axis, label in ((axes[1], "items", f"scored {meta['items_unit']}"), (axes[2], "tasks", "held-out tasks")):
        ax.axvline(d[axis], color=COLOURS["baseline"], lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xticks(by.loc[by["axis"] == axis, "value"], [str(int(v)) for v in by.loc[by["axis"] == axis, "value"]])
        ax.set_xlabel(label)
        ax.set_ylabel(f"{100 * POWER_TARGET:g}%-power advantage (points)")
        ax.set_ylim(bottom=0)
    axes[1].set_title("against items")
    axes[2].set_title("against tasks")
    fig.suptitle(f"Power of the advantage verdict ({meta['reps']} replicates per point; heterogeneity: "
                 f"{meta['heterogeneity_source']})", y=1.03, fontsize=9)
    fig.tight_layout()
    return fig


FIGURES = {
    "training_effect": training_effect,
    "self_vs_cross": self_vs_cross,
    "scaling": scaling,
    "calibration": calibration,
    "behaviour_change": behaviour_change,
    "seeds": seeds,
    "advantage_forest": advantage_forest,
    "baseline_arms": baseline_arms,
    "power": power,
    "sibling_contrasts": sibling_contrasts,
    "similarity": similarity,
    "compliance": compliance,
    "posterior_predictive": posterior_predictive,
    "prior_predictive": prior_predictive,
}

#: what each figure reads, relative to the analysis outputs (``data/analysis/``): the provenance page
#: (:mod:`report.provenance`) traces each back through dvc.yaml; a test draws every figure and compares
READS = {
    "training_effect": ["tables/training.parquet", "tables/training_common.parquet"],
    "self_vs_cross": ["tables/advantage.parquet"],
    "scaling": ["tables/scaling.parquet"],
    "calibration": ["tables/calibration_curve.parquet", "tables/mad.parquet"],
    "behaviour_change": ["tables/behaviour_counts.parquet", "tables/behaviour_tracking.parquet",
                         "tables/behaviour_permutation.parquet"],
    "seeds": ["tables/accuracy_by_seed.parquet"],
    "advantage_forest": ["tables/advantage.parquet"],
    "baseline_arms": ["tables/arms.parquet", "metrics.json"],
    "power": ["power/power.json", "power/curve.parquet", "power/by_size.parquet"],
    "sibling_contrasts": ["metrics.json"],
    "similarity": ["tables/similarity.parquet"],
    "compliance": ["tables/compliance.parquet"],
    "posterior_predictive": ["tables/ppc_advantage.parquet", "tables/ppc_training.parquet",
                             "tables/ppc_units.parquet"],
    "prior_predictive": ["tables/prior_cell_accuracy.parquet", "tables/ppc_advantage.parquet"],
}
