"""The concept-injection figures, from ``data/injection/analysis`` only (``injection_figures`` stage). Each
figure states its intervals and the hardware the trials ran on (``data/injection/raw/run.json``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from reproduce.config import REPO_ROOT

from figures.style import OKABE_ITO, StageInputs, draw_all

ANALYSIS = REPO_ROOT / "data" / "injection" / "analysis"
RAW = REPO_ROOT / "data" / "injection" / "raw"
OUT = REPO_ROOT / "data" / "injection" / "figures"
CONDITION_COLOURS = {"concept": OKABE_ITO["blue"], "negated": OKABE_ITO["orange"], "random": OKABE_ITO["grey"],
                     "control": OKABE_ITO["black"], "matching": OKABE_ITO["blue"], "think": OKABE_ITO["blue"],
                     "dont_think": OKABE_ITO["vermillion"]}


def Inputs(analysis: Path = ANALYSIS, raw: Path = RAW) -> StageInputs:
    return StageInputs(analysis, raw, "injection_analysis", "trials run")


def _models(df: pd.DataFrame) -> list[str]:
    return sorted(df["model"].unique())


def detection_heatmap(inp: Inputs):
    """Detection of an injected concept: the posterior P("yes", an injected thought is noticed) at the average
    concept for every layer fraction x strength (concept vector injected), with its 95% interval, beside the
    false-positive rate on control trials (no injection). A cell is outlined where the interval of detection
    minus false positives lies above zero."""
    cells = inp.table("detection_cells")
    cells = cells[cells["condition"] == "concept"]
    fp = inp.table("fp_rate")
    models = _models(cells)
    fig, axes = plt.subplots(1, len(models), figsize=(4.8 * len(models), 3.6), squeeze=False,
                             gridspec_kw={"wspace": 0.35})
    for ax, m in zip(axes[0], models):
        c = cells[cells["model"] == m]
        fr, st = sorted(c["layer_fraction"].unique()), sorted(c["strength"].unique())
        grid = np.full((len(fr), len(st)), np.nan)
        for _, r in c.iterrows():
            i, j = fr.index(r["layer_fraction"]), st.index(r["strength"])
            grid[i, j] = r["mean"]
            ax.text(j, i, f"{r['mean']:.2f}\n[{r['low']:.2f}, {r['high']:.2f}]", ha="center", va="center", fontsize=6.5,
                    color="white" if r["mean"] > 0.6 else "black")
            if r["diff_low"] > 0:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2, ec=OKABE_ITO["vermillion"]))
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="Blues", aspect="auto", origin="lower")
        ax.set_xticks(range(len(st)), [f"{s:g}" for s in st])
        ax.set_yticks(range(len(fr)), [f"{f:g}" for f in fr])
        ax.set_xlabel("strength (x mean residual norm)")
        ax.set_ylabel("layer fraction")
        ax.grid(False)
        f = fp[fp["model"] == m].iloc[0]
        ax.set_title(f"{m}\nfalse positives: {f['mean']:.2f} [{f['low']:.2f}, {f['high']:.2f}]", fontsize=9)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="share of trials with P(yes) > P(no)")
    fig.suptitle("Detection under concept injection (posterior means, 95% intervals)", y=1.04)
    inp.footer(fig)
    return fig


def identification_vs_chance(inp: Inputs):
    """Identification of the injected concept: the posterior probability that the injected concept is the
    model's most probable continuation of "... It concerns the word", normalised over the concept list, per
    strength and layer fraction (95% intervals), against chance (1 / number of concepts, dashed) and the same
    trials without injection (grey band: the control rows' top-1 rate and interval)."""
    ident = inp.table("identification_cells")
    models = _models(ident)
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.2), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], models):
        c = ident[(ident["model"] == m) & (ident["condition"] == "concept")]
        ctl = ident[(ident["model"] == m) & (ident["condition"] == "control")]
        fr = sorted(c["layer_fraction"].unique())
        colours = plt.cm.viridis(np.linspace(0.1, 0.85, max(1, len(fr))))
        for k, (f, col) in enumerate(zip(fr, colours)):
            g = c[c["layer_fraction"] == f].sort_values("strength")
            x = np.arange(len(g)) + (k - (len(fr) - 1) / 2) * 0.12
            ax.errorbar(x, g["mean"], yerr=[g["mean"] - g["low"], g["high"] - g["mean"]], fmt="o-", ms=3.5,
                        color=col, label=f"layer fraction {f:g}", capsize=2)
            ax.set_xticks(np.arange(len(g)), [f"{s:g}" for s in g["strength"]])
        if len(c):
            ax.axhline(float(c["chance"].iloc[0]), ls="--", color="black", lw=1, label="chance")
        if len(ctl):
            r = ctl.iloc[0]
            ax.axhspan(r["low"], r["high"], color=OKABE_ITO["grey"], alpha=0.25, label="no injection")
        ax.set_xlabel("strength (x mean residual norm)")
        ax.set_title(m)
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("P(injected concept ranked first)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)  # outside: the 0.8 line runs near 1
    fig.suptitle("Identification of the injected concept (95% intervals)", y=1.03)
    inp.footer(fig)
    return fig


def prefill_rates(inp: Inputs):
    """Prefill detection: the posterior probability that the model calls an out-of-place prefilled word an
    accident, in the control condition (no injection, black line and band), with the word's own concept
    injected on the earlier sentence (matching) and with another concept injected there (random), per
    strength at each layer fraction (95% intervals). The published finding is a lower accident rate under
    matching injection."""
    cond = inp.table("prefill_conditions")
    models = _models(cond)
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.2), squeeze=False, sharey=True)
    for ax, m in zip(axes[0], models):
        c = cond[cond["model"] == m]
        ctl = c[c["condition"] == "control"]
        inj = c[c["condition"] != "control"]
        cells = inj[["layer_fraction", "strength"]].drop_duplicates().sort_values(["layer_fraction", "strength"])
        labels = [f"{f:g}/{s:g}" for f, s in zip(cells["layer_fraction"], cells["strength"])]
        for k, name in enumerate(("matching", "random")):
            g = inj[inj["condition"] == name].merge(cells.reset_index(drop=True).reset_index(), on=["layer_fraction", "strength"])
            ax.errorbar(g["index"] + (k - 0.5) * 0.2, g["mean"], yerr=[g["mean"] - g["low"], g["high"] - g["mean"]],
                        fmt="o", ms=3.5, capsize=2, color=CONDITION_COLOURS[name],
                        label={"matching": "matching (the word's concept)", "random": "random (another concept)"}[name])
        if len(ctl):
            r = ctl.iloc[0]
            ax.axhline(r["mean"], color="black", lw=1, label="control")
            ax.axhspan(r["low"], r["high"], color="black", alpha=0.1)
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right")
        ax.set_xlim(-0.6, len(labels) - 0.4)
        ax.set_xlabel("layer fraction / strength")
        ax.set_title(m)
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("share with P(\"accident\") > 1/2")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)  # outside: shares reach 1
    fig.suptitle("Prefill detection: 'did you mean that word?' (95% intervals)", y=1.03)
    inp.footer(fig)
    return fig


def intention_curves(inp: Inputs):
    """Intentional control: per layer, the posterior difference in cosine between the concept vector and the
    mean residual over the assistant's copy of the sentence when told to think about the word minus when told
    not to (95% interval band); above zero, the instruction moves the representation toward the concept."""
    il = inp.table("intention_layers")
    models = _models(il)
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.0), squeeze=False)
    for ax, m in zip(axes[0], models):
        g = il[il["model"] == m].sort_values("layer")
        ax.fill_between(g["layer_fraction"], g["low"], g["high"], color=OKABE_ITO["blue"], alpha=0.25, lw=0)
        ax.plot(g["layer_fraction"], g["mean"], color=OKABE_ITO["blue"], lw=1.5)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("layer fraction")
        ax.set_title(m)
    axes[0][0].set_ylabel("cosine: think - don't think")
    fig.suptitle("Intentional control (posterior means, 95% intervals)", y=1.03)
    inp.footer(fig)
    return fig


def coherence_by_strength(inp: Inputs):
    """Where steering breaks the text: per strength and layer fraction, the share of free-text answers that are
    coherent (the rules say so and the unsteered model's perplexity is within 10 times that of its control
    answers), and the median perplexity of the text under the unsteered model (log scale); the
    control trials (no injection) are the black dashed line. Each layer fraction is nudged sideways and has its own
    marker, so lines that share a value stay visible."""
    coh = inp.table("coherence")
    models = _models(coh)
    fig, axes = plt.subplots(2, len(models), figsize=(4.2 * len(models), 4.6), squeeze=False, sharex="col")
    for j, m in enumerate(models):
        c = coh[coh["model"] == m]
        ctl = c[c["condition"] == "control"]
        inj = c[c["condition"] == "concept"]
        fr = sorted(inj["layer_fraction"].unique())
        colours = plt.cm.viridis(np.linspace(0.1, 0.85, max(1, len(fr))))
        for k, (f, col) in enumerate(zip(fr, colours)):
            g = inj[inj["layer_fraction"] == f].sort_values("strength")
            # each layer fraction nudged sideways (on the log axis) with its own marker: lines that share a value
            # (all at 0, say) stay visible side by side
            x = g["strength"] * 2.0 ** (0.05 * (k - (len(fr) - 1) / 2))
            mk = "os^Dv"[k % 5] + "-"
            axes[0][j].plot(x, g["coherent"], mk, color=col, ms=3.5, label=f"layer fraction {f:g}")
            axes[1][j].plot(x, g["perplexity_median"], mk, color=col, ms=3.5)
        if len(ctl):
            axes[0][j].axhline(float(ctl["coherent"].iloc[0]), color="black", lw=1, ls="--", zorder=0,
                               label="no injection")
            axes[1][j].axhline(float(ctl["perplexity_median"].iloc[0]), color="black", lw=1, ls="--", zorder=0)
        axes[0][j].set_title(m)
        axes[0][j].set_ylim(-0.04, 1.1)  # room above 1, where the control line often lies
        axes[0][j].spines["top"].set_visible(False)
        axes[1][j].set_yscale("log")
        axes[1][j].set_xscale("log", base=2)
        axes[1][j].set_xlabel("strength (x mean residual norm)")
    axes[0][0].set_ylabel("share coherent")
    axes[1][0].set_ylabel("median perplexity")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=7)  # outside: shares reach 1
    fig.suptitle("Coherence of the steered free text", y=1.02)
    inp.footer(fig)
    return fig


def two_turn_and_lens(inp: Inputs):
    """The two-turn trial: (top) per cell, the mean over concepts of the shift in the answer's yes/no log-odds from
    the trial without injection, with its 95% t interval over concepts, and the random direction's shift at the
    control fractions (grey); (bottom) the logit lens at the answer position: per read layer, the mean over
    concepts of the injected minus control log-probability of the concept word's first token, one line per
    injected cell (colour: layer fraction; solid: the largest strength, dashed: smaller ones)."""
    cells, lens = inp.table("two_turn_cells"), inp.table("lens_layers")
    cells = cells[cells["measure"] == "yes_vs_no"]
    models = _models(cells)
    fig, axes = plt.subplots(2, len(models), figsize=(4.2 * len(models), 6.0), squeeze=False,
                             gridspec_kw={"hspace": 0.45})
    for j, m in enumerate(models):
        c = cells[cells["model"] == m]
        fr = sorted(c.loc[c["condition"] == "concept", "layer_fraction"].unique())
        colours = dict(zip(fr, plt.cm.viridis(np.linspace(0.1, 0.85, max(1, len(fr))))))
        ax = axes[0][j]
        strengths = sorted(c["strength"].unique())
        at = {st: i for i, st in enumerate(strengths)}  # the strengths as evenly spaced categories
        for k, f in enumerate(fr):
            for cond, dx, col, mk in (("concept", 0.0, colours[f], "o"), ("random", 0.07, OKABE_ITO["grey"], "s")):
                g = c[(c["condition"] == cond) & np.isclose(c["layer_fraction"], f)].sort_values("strength")
                if g.empty:
                    continue
                x = np.array([at[st] for st in g["strength"]]) + (k - (len(fr) - 1) / 2) * 0.18 + dx
                ax.errorbar(x, g["mean"], yerr=[g["mean"] - g["low"], g["high"] - g["mean"]], fmt=mk + "-",
                            color=col, ms=3.5, lw=1, capsize=2,
                            label=f"layer fraction {f:g}" if cond == "concept" else f"random direction, {f:g}")
        ax.set_xticks(range(len(strengths)), [f"{st:g}" for st in strengths])
        ax.set_xlim(-0.6, len(strengths) - 0.4)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("strength (x mean residual norm)")
        ax.set_title(m)
        ll = lens[(lens["model"] == m) & (lens["condition"] == "concept")]
        ax = axes[1][j]
        top = ll["strength"].max() if len(ll) else None
        for (f, st), g in ll.groupby(["layer_fraction", "strength"], sort=True):
            g = g.sort_values("read_layer")
            ax.plot(g["read_fraction"], g["d_lp_concept"], color=colours.get(f, OKABE_ITO["grey"]), lw=1.2,
                    ls="-" if st == top else "--")
        rr = lens[(lens["model"] == m) & (lens["condition"] == "random") & (lens["strength"] == top)]
        for f, g in rr.groupby("layer_fraction", sort=True):  # the random direction at the control fractions
            g = g.sort_values("read_layer")
            ax.plot(g["read_fraction"], g["d_lp_concept"], color=OKABE_ITO["grey"], lw=1.0, ls=":")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel("read layer (fraction of depth)")
    axes[0][0].set_ylabel("shift in yes/no log-odds")
    axes[1][0].set_ylabel("lens: change in log P(concept)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=7)
    # the lens panels' line styles: the strongest injection solid, the weaker ones dashed, the random direction
    # (at the strongest, at the control fractions) dotted grey; the colour is the layer fraction, as above
    from matplotlib.lines import Line2D

    styles = [Line2D([], [], color="black", lw=1.2, ls="-", label="strongest injection"),
              Line2D([], [], color="black", lw=1.2, ls="--", label="weaker injections"),
              Line2D([], [], color=OKABE_ITO["grey"], lw=1.0, ls=":", label="random direction, strongest")]
    axes[1][-1].legend(handles=styles, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=7)
    fig.suptitle("Two-turn trial (95% t intervals over concepts) and the logit lens at its answer", y=1.01)
    inp.footer(fig)
    return fig


FIGURES = {"injection_detection": detection_heatmap, "injection_identification": identification_vs_chance,
           "injection_prefill": prefill_rates, "injection_intention": intention_curves,
           "injection_coherence": coherence_by_strength, "injection_two_turn": two_turn_and_lens}

#: what each figure reads, relative to the analysis outputs (``data/injection/analysis/``); see :mod:`report.provenance`
READS = {"injection_detection": ["detection_cells.parquet", "fp_rate.parquet"],
         "injection_identification": ["identification_cells.parquet"],
         "injection_prefill": ["prefill_conditions.parquet"], "injection_intention": ["intention_layers.parquet"],
         "injection_coherence": ["coherence.parquet"],
         "injection_two_turn": ["two_turn_cells.parquet", "lens_layers.parquet"]}


def run_injection_figures(analysis: Path = ANALYSIS, out: Path = OUT, raw: Path = RAW) -> dict:
    return draw_all(FIGURES, Inputs(analysis, raw), out)

#: what every figure reads besides :data:`READS`, relative to the repository: the run's hardware line
ALSO_READS = ("data/injection/raw/run.json",)
