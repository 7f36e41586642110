"""The mirror-test figures, from ``data/mirror/analysis`` only (``mirror_figures`` stage). Each figure states its
intervals and the hardware the conversations ran on (``data/mirror/raw/run.json``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from reproduce.config import REPO_ROOT

from figures.style import OKABE_ITO, StageInputs, draw_all

ANALYSIS = REPO_ROOT / "data" / "mirror" / "analysis"
RAW = REPO_ROOT / "data" / "mirror" / "raw"
OUT = REPO_ROOT / "data" / "mirror" / "figures"
KIND_COLOURS = {"insertion": OKABE_ITO["blue"], "substitution": OKABE_ITO["orange"], "swap": OKABE_ITO["green"],
                "drop": OKABE_ITO["purple"], "capitalisation": OKABE_ITO["vermillion"]}


def Inputs(analysis: Path = ANALYSIS, raw: Path = RAW) -> StageInputs:
    return StageInputs(analysis, raw, "mirror_analysis", "conversations run")


#: the gap between the highest corruption level and the point of another model's replies, on the level axis
OTHER_GAP = 0.12


def _other_x(cells: pd.DataFrame) -> float:
    """Where another model's replies are drawn: right of every corruption level, at its own labelled tick."""
    levels = cells.loc[cells["condition"] == "corrupted", "level"]
    return (float(levels.max()) if len(levels) else 0.0) + OTHER_GAP


def _level_axis(ax, cells: pd.DataFrame) -> None:
    """Ticks at the corruption levels and, where drawn, one labelled for another model's replies (not a level)."""
    levels = sorted(cells.loc[cells["condition"] == "corrupted", "level"].unique())
    ticks, labels = list(levels), [f"{v:g}" for v in levels]
    if (cells["condition"] == "other").any():
        ticks.append(_other_x(cells))
        labels.append("another\nmodel")
    ax.set_xticks(ticks, labels)


def _panel(ax, cells: pd.DataFrame, model: str, value: str = "", baseline_label: str = "control") -> None:
    c = cells[cells["model"] == model]
    ctl = c[c["condition"] == "control"]
    if len(ctl) and value == "":
        r = ctl.iloc[0]
        ax.axhline(r["mean"], color="black", lw=1, label=baseline_label)
        ax.axhspan(r["low"], r["high"], color="black", alpha=0.08)
    cor = c[c["condition"] == "corrupted"]
    kinds = [k for k in KIND_COLOURS if k in set(cor["kind"])]
    for j, k in enumerate(kinds):
        g = cor[cor["kind"] == k].sort_values("level")
        x = g["level"].to_numpy() + (j - (len(kinds) - 1) / 2) * 0.012
        mean, low, high = (g[f"{value}mean"], g[f"{value}low"], g[f"{value}high"])
        ax.errorbar(x, mean, yerr=[mean - low, high - mean], fmt="o-", ms=3.5, capsize=2, color=KIND_COLOURS[k],
                    label=k)
    oth = c[c["condition"] == "other"]
    if len(oth) and value == "":
        r = oth.iloc[0]
        ax.errorbar([_other_x(cells)], [r["mean"]], yerr=[[r["mean"] - r["low"]], [r["high"] - r["mean"]]], fmt="s",
                    color=OKABE_ITO["grey"], capsize=2, label="another model's replies")


def mirror_outcomes(inp: Inputs):
    """The mirror test by corruption level and kind (95% intervals, at the average conversation and turn):
    top, the probability that the next reply remarks on typos or glitches unprompted (rules); middle, the
    share of replies whose P(yes) exceeds P(no) when it is asked whether it wrote its previous messages exactly
    as shown; bottom, the share of words in its next reply showing the corruption's pattern minus the same share
    in the control condition (imitation). Black line and band: the control condition (clean history); grey
    square: another model's replies shown as the model's own."""
    noticing, recognition, imitation = inp.table("noticing_cells"), inp.table("recognition_cells"), \
        inp.table("imitation_cells")
    models = sorted(noticing["model"].unique())
    fig, axes = plt.subplots(3, len(models), figsize=(4.4 * len(models), 7.6), squeeze=False, sharex=True)
    for j, m in enumerate(models):
        _panel(axes[0][j], noticing, m)
        _panel(axes[1][j], recognition, m)
        _panel(axes[2][j], imitation, m, value="diff_")
        axes[2][j].axhline(0, color="black", lw=0.8)
        axes[0][j].set_title(m)
        axes[2][j].set_xlabel("corruption level (share of eligible words changed)")
        _level_axis(axes[2][j], noticing)
        for i in range(2):
            axes[i][j].set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("P(notices unprompted)")
    axes[1][0].set_ylabel("share answering \"yes, I wrote that\"\n(P(yes) > P(no))")
    axes[2][0].set_ylabel("imitation: pattern share\nminus control")
    # outside the axes: inside, a run whose points reach the corner would hide them
    axes[0][-1].legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("The mirror test (posterior means, 95% intervals)", y=1.0)
    inp.footer(fig)
    return fig


def mirror_surprise(inp: Inputs):
    """Surprise: the model's mean log-probability per token of its own clean earlier replies minus that of the
    altered replies it was shown (nats per token; above zero, the altered text is less probable to the model),
    per corruption kind and level and for another model's replies, with 95% intervals."""
    su = inp.table("surprise_cells")
    models = sorted(su["model"].unique())
    fig, axes = plt.subplots(1, len(models), figsize=(4.4 * len(models), 3.2), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], models):
        _panel(ax, su[su["condition"] != "control"], m)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(m)
        ax.set_xlabel("corruption level")
        _level_axis(ax, su)
    axes[0][0].set_ylabel("surprise (nats per token)")
    # outside the axes: inside, a run whose points reach the corner would hide them
    axes[0][-1].legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.suptitle("Surprise at altered earlier replies (95% intervals)", y=1.03)
    inp.footer(fig)
    return fig


FIGURES = {"mirror_outcomes": mirror_outcomes, "mirror_surprise": mirror_surprise}

#: what each figure reads, relative to the analysis outputs (``data/mirror/analysis/``); see :mod:`report.provenance`
READS = {"mirror_outcomes": ["noticing_cells.parquet", "recognition_cells.parquet", "imitation_cells.parquet"],
         "mirror_surprise": ["surprise_cells.parquet"]}


def run_mirror_figures(analysis: Path = ANALYSIS, out: Path = OUT, raw: Path = RAW) -> dict:
    return draw_all(FIGURES, Inputs(analysis, raw), out)

#: what every figure reads besides :data:`READS`, relative to the repository: the run's hardware line
ALSO_READS = ("data/mirror/raw/run.json",)
