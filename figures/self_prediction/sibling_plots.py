"""The sibling control's figures (:mod:`analysis.self_prediction.sibling`): the three contrasts, and accuracy
against behavioural similarity. Each function takes the analysis outputs
(:class:`figures.self_prediction.plots.Outputs`) and returns a matplotlib figure;
:data:`figures.self_prediction.plots.FIGURES` lists them with the others."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from analysis.constants import INTERVAL_PERCENT as IV

from figures.style import COLOURS, MARKERS, errorbar

#: the sibling control's contrasts as the figure and the manuscript name them, in order
SIBLING_CONTRASTS = {"self_minus_sibling": "self - sibling", "sibling_minus_cross": "sibling - cross",
                     "self_minus_cross": "self - cross"}


def _no_sibling(title: str):
    fig, ax = plt.subplots(figsize=(6.0, 2.0))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}: this run trained no sibling predictor (finetune.sibling: false)",
            ha="center", va="center")
    return fig


def sibling_contrasts(o):
    """The sibling control: self minus sibling, sibling minus cross and self minus cross, in accuracy points, on
    the headline's population estimand (a new held-out task and, with several seeds, a new finetuning run),
    pooled and per target, with 94% posterior intervals and the region of practical equivalence (dotted)."""
    sib = o.metrics.get("sibling")
    if not sib:
        return _no_sibling("Sibling control")
    contrasts = sib["contrasts"]
    rope = o.metrics["advantage"]["rope"]
    targets = sorted({d["target"] for c in contrasts.values() for d in c["by_target"]})
    rows = ["pooled"] + targets
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.55 * len(rows) * len(SIBLING_CONTRASTS) / 2))
    colours = {"self_minus_sibling": COLOURS["sibling"], "sibling_minus_cross": COLOURS["cross"],
               "self_minus_cross": COLOURS["self"]}
    markers = {"self_minus_sibling": "^", "sibling_minus_cross": "s", "self_minus_cross": "o"}
    row_of = {r: len(rows) - 1 - i for i, r in enumerate(rows)}
    for k, (key, label) in enumerate(SIBLING_CONTRASTS.items()):
        c = contrasts[key]
        # pooled, then every (target, second-arm predictor) of the contrast on its target's row
        values = [("pooled", c["population"])] + [
            (d["target"], {"mean": d["population_mean"], "low": d["population_low"], "high": d["population_high"]})
            for d in c["by_target"]]
        y = np.array([row_of[r] for r, _ in values]) + 0.25 * (1 - k)
        # drawn from the bounds: a posterior mean may lie outside its equal-tailed interval
        errorbar(ax, y, [v["mean"] for _, v in values], [v["low"] for _, v in values],
                 [v["high"] for _, v in values], colours[key], markers[key], label, horizontal=True)
    ax.set_yticks(np.arange(len(rows))[::-1], [r if r == "pooled" else f"predicting {r}" for r in rows])
    ax.axvline(0, color="black", lw=0.8)
    for x in (-rope, rope):
        ax.axvline(x, color="black", lw=0.6, ls=":")
    ax.set_xlabel("difference in accuracy (points)")
    ax.set_title(f"Self, sibling and cross ({IV}% posterior intervals, new task)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def similarity(o):
    """Meta-level accuracy against object-level agreement, one point per predictor-target pair and target x task
    x property cell (and finetuning seed): agreement is how often the predictor's base model, asked the object-level
    question itself, gives the same property value as the target's answer. The self-predictor and its sibling
    share their base, so they share the agreement; the dashed line is accuracy = agreement, what a predictor that
    answered with its own base behaviour would score."""
    sim = o.table("similarity")
    if sim.empty:
        return _no_sibling("Similarity")
    targets = sorted(sim["target"].unique())
    fig, axes = plt.subplots(1, len(targets), figsize=(3.4 * len(targets), 3.4), squeeze=False, sharey=True)
    for j, t in enumerate(targets):
        ax = axes[0, j]
        d = sim[sim["target"] == t]
        for arm in ("self", "sibling", "cross"):
            g = d[d["arm"] == arm]
            if len(g):
                ax.scatter(100 * g["agreement"], 100 * g["accuracy"], s=10 + 2 * g["n"], color=COLOURS[arm],
                           marker=MARKERS[arm], alpha=0.7, label=f"{arm}-prediction", edgecolors="none")
        ax.plot([0, 100], [0, 100], color="black", lw=0.6, ls="--")
        ax.set_xlim(-3, 103)
        ax.set_ylim(-3, 103)
        ax.set_xlabel("object-level agreement (%)")
        ax.set_title(f"predicting {t}")
    axes[0, 0].set_ylabel("meta-level accuracy (%)")
    axes[0, 0].legend(loc="upper left", frameon=False)
    fig.suptitle("Accuracy against behavioural similarity (point area: scored answers)", y=1.0)
    fig.tight_layout()
    return fig
