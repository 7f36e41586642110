"""The ``injection_analysis`` stage: the concept-injection tables in, posterior summaries, raw rates, grader
agreement, coherence and the numbers the manuscript quotes out (``data/injection/analysis``).

Every Bayesian fit goes through the convergence gate (:func:`analysis.self_prediction.hierarchical.sample_gated`: a fit that misses
it on r_hat or ESS alone is sampled once more with twice the draws); any other miss, or a second one, stops the
stage with the settings to change. Verdicts come from 95% intervals: an effect is reported as
present when its interval excludes zero (``above`` / ``below``), else ``unclear``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from reproduce.config import REPO_ROOT, Profile
from reproduce.errors import DataError
from analysis.agreement import agreement as agree, judged_cases
import reproduce.injection.grader_cases as grader_cases
import analysis.injection.paired as PA
import analysis.injection.two_turn as TT
from analysis.injection.steering import steering_cell_keys, steering_cells
from reproduce.io import atomic_dir, atomic_write_json

import analysis.injection as I
from analysis.cells import raw_rate, top_cell
from analysis.bayes import sampler_settings
from analysis.verdicts import interval_side as verdict

RAW = REPO_ROOT / "data" / "injection" / "raw"
OUT = REPO_ROOT / "data" / "injection" / "analysis"
METRICS = REPO_ROOT / "data" / "injection" / "metrics.json"
PARTS = ("detection", "identification", "freetext", "prefill", "intention", "steering", "two_turn", "lens")
#: a free-text answer counts as coherent when the rules say so AND the unsteered model's perplexity of it is at
#: most this many times the median of the same model's control answers (the rules catch repetition, which has
#: a low perplexity; the perplexity catches word salad, which the rules let through)
PERPLEXITY_FACTOR = 10.0
#: a cell degenerates when most of its answers are not coherent
DEGENERATE_SHARE = 0.5


def read_tables(raw: Path = RAW) -> dict[str, pd.DataFrame]:
    """The stage tables; the free text is graded again here by the current rules (a grade is a function of the
    stored text alone), so a change to the rules needs no new inference."""
    from reproduce.injection.graders import grade_injection_text

    missing = [p for p in PARTS if not (Path(raw) / f"{p}.parquet").exists()]
    if missing:
        raise DataError(f"concept-injection tables {missing} are missing under {raw}; run "
                        "`dvc repro concept_injection` (or `looking-inward concept-injection`) first")
    tables = {p: pd.read_parquet(Path(raw) / f"{p}.parquet") for p in PARTS}
    ft = tables["freetext"]
    if len(ft):
        grades = [grade_injection_text(t, c if cond != "control" else None)
                  for t, c, cond in zip(ft["text"], ft["concept"], ft["condition"])]
        tables["freetext"] = ft.assign(**{k: [g[k] for g in grades] for k in grades[0]})
    return tables


def with_coherence(freetext: pd.DataFrame) -> pd.DataFrame:
    """``freetext`` with the rules' grade kept as ``coherent_rules`` and ``coherent`` the grade every coherence
    figure counts: the rules say so (:mod:`reproduce.injection.graders`) AND the unsteered model's perplexity of the
    answer is at most :data:`PERPLEXITY_FACTOR` times the median of the same model's control answers."""
    ctl = freetext[freetext["condition"] == "control"].groupby("model")["perplexity"].median()
    limit = freetext["model"].map(ctl).fillna(np.inf) * PERPLEXITY_FACTOR
    rules = freetext["coherent"].astype(bool)
    return freetext.assign(coherent_rules=rules, coherent=rules & (freetext["perplexity"].fillna(np.inf) <= limit))


def coherence_table(freetext: pd.DataFrame, detection: pd.DataFrame) -> pd.DataFrame:
    """Per model, condition, layer fraction and strength: free-text answers, the share coherent (rules and
    perplexity, :data:`PERPLEXITY_FACTOR`) and the share the rules alone call coherent, the median perplexity of the text under the unsteered model, and the share claiming detection / naming the
    concept; beside it the mean mass the forced-choice question put outside yes/no (another sign of
    degeneration)."""
    keys = ["model", "condition", "layer_fraction", "strength"]
    if freetext.empty:
        return pd.DataFrame(columns=[*keys, "n", "coherent", "coherent_rules", "perplexity_median", "claims", "names",
                                     "p_outside"])
    ft = freetext.assign(layer_fraction=freetext["layer_fraction"].fillna(-1.0))
    ft = with_coherence(ft)
    g = ft.groupby(keys).agg(n=("text", "size"), coherent=("coherent", "mean"), coherent_rules=("coherent_rules", "mean"),
                             perplexity_median=("perplexity", "median"), claims=("claims_detection", "mean"),
                             names=("names_concept", "mean")).reset_index()
    det = detection[(detection["question"] == "detect")].assign(
        layer_fraction=detection["layer_fraction"].fillna(-1.0))
    po = det.groupby(keys)["p_outside"].mean().rename("p_outside").reset_index()
    out = g.merge(po, on=keys, how="left")
    out["layer_fraction"] = out["layer_fraction"].where(out["layer_fraction"] >= 0, np.nan)
    return out


def degeneration(coh: pd.DataFrame) -> pd.DataFrame:
    """Per model and layer fraction, the smallest strength at which most free-text answers are incoherent
    (NaN: none of the strengths tried)."""
    rows = []
    inj = coh[coh["condition"] == "concept"]
    for (m, f), g in inj.groupby(["model", "layer_fraction"]):
        bad = g[g["coherent"] < 1 - DEGENERATE_SHARE].sort_values("strength")
        rows.append({"model": m, "layer_fraction": f, "degenerate_strength": float(bad["strength"].iloc[0])
                     if len(bad) else np.nan, "strengths_tried": ",".join(f"{s:g}" for s in sorted(g["strength"]))})
    return pd.DataFrame(rows, columns=["model", "layer_fraction", "degenerate_strength", "strengths_tried"])


#: the agreement table: per model and pair of gradings, the answers, raw agreement and Cohen's kappa; for the
#: rules against the forced choice also how many each counted as a detection (when one of them counts none or
#: all, kappa carries no information: 0, or undefined when both do)
AGREEMENT_COLUMNS = ["model", "pair", "n", "agreement", "kappa", "rules_k", "forced_k"]


def agreement(freetext: pd.DataFrame, detection: pd.DataFrame) -> pd.DataFrame:
    """How the free-text grades agree with the exact measure and with the judge: Cohen's kappa and raw
    agreement of (a) the rules' "claims detection" against the forced-choice ``detected`` of the same trial
    (same model, trial, condition, layer and strength), (b) the judge against the rules, where a judge ran."""
    rows = []
    if freetext.empty:
        return pd.DataFrame(columns=AGREEMENT_COLUMNS)
    keys = ["model", "question_id", "condition", "concept", "layer", "strength"]
    det = detection[detection["question"] == "detect"][keys + ["detected"]]
    joined = freetext.merge(det, on=keys, how="inner")
    for m, g in joined.groupby("model"):
        a, b = g["claims_detection"].astype(bool), g["detected"].astype(bool)
        rows.append({"model": m, "pair": "rules claims vs forced-choice detected", **agree(a, b),
                     "rules_k": int(a.sum()), "forced_k": int(b.sum())})
    judged = joined.dropna(subset=["judge_claims"]) if "judge_claims" in joined else joined.iloc[:0]
    for m, g in judged.groupby("model"):
        a, b = g["judge_claims"] > 0.5, g["detected"].astype(bool)
        rows.append({"model": m, "pair": "judge claims vs forced-choice detected", **agree(a, b)})
        for col, rule in (("judge_claims", "claims_detection"), ("judge_names", "names_concept")):
            a, b = g[col] > 0.5, g[rule].astype(bool)
            rows.append({"model": m, "pair": f"judge vs rules: {rule}", **agree(a, b)})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def examples(freetext: pd.DataFrame, per_model: int = 6, chars: int = 220) -> pd.DataFrame:
    """Transcripts for the manuscript: per model, the first control answer and, at the middle layer fraction,
    the first concept's answer at every strength (text cut at ``chars`` characters), with their grades
    (``coherent``: the rules and the perplexity together, :func:`with_coherence`, as every coherence figure
    counts it; ``coherent_rules``: the rules alone)."""
    if freetext.empty:
        return pd.DataFrame(columns=["model", "condition", "concept", "layer_fraction", "strength", "text",
                                     "claims_detection", "names_concept", "coherent", "coherent_rules", "perplexity"])
    freetext = with_coherence(freetext)
    rows = []
    for m, g in freetext.groupby("model"):
        ctl = g[g["condition"] == "control"].head(1)
        inj = g[g["condition"] == "concept"]
        fr = sorted(inj["layer_fraction"].unique())
        mid = fr[len(fr) // 2] if fr else None
        first = inj["concept"].iloc[0] if len(inj) else None
        pick = inj[(inj["layer_fraction"] == mid) & (inj["concept"] == first)].sort_values("strength")
        rows.append(pd.concat([ctl, pick]).head(per_model))
    out = pd.concat(rows, ignore_index=True)
    out["text"] = [t if len(t) <= chars else t[:chars].rstrip() + " ..." for t in out["text"]]
    return out[["model", "condition", "concept", "layer_fraction", "strength", "text", "claims_detection",
                "names_concept", "coherent", "coherent_rules", "perplexity"]]


def _iv(row) -> dict:
    return {"mean": float(row["mean"]), "low": float(row["low"]), "high": float(row["high"])}


def says_yes(answers: pd.Series) -> pd.Series:
    """Whether a greedy forced-choice answer itself begins with the word yes (after opening punctuation)."""
    return answers.astype("string").fillna("").str.match(r"^\W*yes\b", case=False).astype(bool)


def observed(rows: pd.DataFrame, flag: str = "detected") -> dict:
    """Raw counts of forced-choice trials beside a model's estimate: trials, those counted (``flag``: P(yes) >
    P(no), the two words' probabilities normalised over the pair), those whose answer itself begins with yes,
    and the mean probability the first answer token put on neither word, in percent."""
    return {"n": int(len(rows)), "k": int(rows[flag].sum()), "says_yes": int(says_yes(rows["answer"]).sum()),
            "p_outside": 100 * float(rows["p_outside"].mean()) if len(rows) else float("nan")}


def _prefill_raw(pc: pd.DataFrame, conditions: pd.DataFrame) -> pd.Series:
    """Each prefill contrast's raw difference in the share called an accident: the matching cell's k / n minus
    the control's (pooled) or the random cell's at the same layer fraction and strength."""
    cond = conditions[conditions["model"].isin(pc["model"].unique())]
    rate = {(r["model"], r["condition"], None if r["condition"] == "control" else (round(r["layer_fraction"], 6),
                                                                              r["strength"])): r["k"] / r["n"]
            for _, r in cond.iterrows()}
    ctl = cond[cond["condition"] == "control"].groupby("model")[["k", "n"]].sum()
    out = []
    for _, r in pc.iterrows():
        site = (round(r["layer_fraction"], 6), r["strength"])
        other = (ctl.loc[r["model"], "k"] / ctl.loc[r["model"], "n"] if r["contrast"] == "matching - control"
                 else rate[(r["model"], "random", site)])
        out.append(rate[(r["model"], "matching", site)] - other)
    return pd.Series(out, index=pc.index, dtype=float)


def headline_numbers(res: dict, coh: pd.DataFrame, degen: pd.DataFrame, agree: pd.DataFrame,
                     tables: dict[str, pd.DataFrame]) -> dict:
    """The numbers the manuscript quotes, per model, every one computed here from the fits and tables."""
    out: dict = {"models": {}}
    for m in sorted(tables["detection"]["model"].unique()):
        d = {}
        det = tables["detection"][tables["detection"]["model"] == m]
        d["trials"] = {p: int((tables[p]["model"] == m).sum()) for p in PARTS}
        fp = res["fp_rate"][res["fp_rate"]["model"] == m]
        if len(fp):
            d["fp_rate"] = _iv(fp.iloc[0])
            if "wordings" in fp.columns:
                d["fp_wordings"] = int(fp["wordings"].iloc[0])
        asked = det[det["question"] == "detect"]
        d["detection_observed"] = {c: observed(asked[asked["condition"] == c]) for c in sorted(asked["condition"].unique())}
        bias = det[det["question"] == "yes_bias"]
        if len(bias):  # questions whose true answer is no
            d["yes_bias_observed"] = {c: observed(bias[bias["condition"] == c]) for c in sorted(bias["condition"].unique())}
        steer = steering_cell_keys(res.get("steering_cells", pd.DataFrame()), m)
        if steer is not None:  # cells whose injection does not steer are marked and left out of the counts
            all_cells = res["steering_cells"][res["steering_cells"]["model"] == m]
            d["steering"] = {"cells": int(len(all_cells)), "steer": int(all_cells["steers"].sum()),
                             "not_steering": [{"layer_fraction": float(r["layer_fraction"]),
                                               "strength": float(r["strength"]), "mean": float(r["mean"]),
                                               "low": float(r["low"]), "high": float(r["high"])}
                                              for _, r in all_cells[~all_cells["steers"]].iterrows()]}
        keep = (lambda df: df[[(round(float(f), 6), float(s)) in steer
                               for f, s in zip(df["layer_fraction"], df["strength"])]]) if steer is not None \
            else (lambda df: df)
        cells = res["detection_cells"]
        cells = cells[(cells["model"] == m) & (cells["condition"] == "concept")] if len(cells) else cells
        band_cells = int(len(cells))  # the simultaneous band covers every concept cell of the model
        cells = keep(cells) if len(cells) else cells
        if len(cells):
            best, tied = top_cell(cells, raw_rate(cells))
            d["detection_best"] = {"layer_fraction": float(best["layer_fraction"]), "strength": float(best["strength"]),
                                   "tied": tied,
                                   "rate": _iv(best), "minus_fp": {"mean": float(best["diff_mean"]),
                                                                   "low": float(best["diff_low"]),
                                                                   "high": float(best["diff_high"])},
                                   # chosen among the cells: the verdict from the simultaneous band over them
                                   "minus_fp_band": {"low": float(best["diff_sim_low"]),
                                                     "high": float(best["diff_sim_high"]), "cells": band_cells},
                                   "verdict": verdict(best["diff_sim_low"], best["diff_sim_high"]),
                                   "observed": observed(asked[(asked["condition"] == "concept")
                                                              & np.isclose(asked["layer_fraction"], best["layer_fraction"])
                                                              & np.isclose(asked["strength"], best["strength"])])}
            d["detection_cells_above_fp"] = int((cells["diff_low"] > 0).sum())
            d["detection_cells_below_fp"] = int((cells["diff_high"] < 0).sum())
            d["detection_cells"] = int(len(cells))
        ident = res["identification_cells"]
        ident = ident[(ident["model"] == m) & (ident["condition"] == "concept")] if len(ident) else ident
        ident_cells = int(len(ident))  # the band covers every injected cell of the model
        ident = keep(ident) if len(ident) else ident
        if len(ident):
            best, tied = top_cell(ident, raw_rate(ident))
            d["identification_best"] = {
                "layer_fraction": float(best["layer_fraction"]), "strength": float(best["strength"]), "tied": tied,
                "rate": _iv(best), "chance": float(best["chance"]),
                "minus_chance": {k: float(best[f"vs_chance_{k}"]) for k in ("mean", "low", "high")},
                "minus_control": {k: float(best[f"vs_control_{k}"]) for k in ("mean", "low", "high")},
                # chosen among the cells: the verdict from the simultaneous band over every injected cell
                "chance_band": {"low": float(best["vs_chance_sim_low"]), "high": float(best["vs_chance_sim_high"]),
                                "cells": ident_cells},
                "verdict_chance": verdict(best["vs_chance_sim_low"], best["vs_chance_sim_high"])}
            d["identification_cells_above_chance"] = int((ident["vs_chance_low"] > 0).sum())
            d["identification_cells"] = int(len(ident))
        pc = res["prefill_contrasts"]
        pc = pc[pc["model"] == m] if len(pc) else pc
        for contrast, g in (pc.groupby("contrast") if len(pc) else []):
            # the published direction: matching injection lowers "accident"
            low, tied = top_cell(g, _prefill_raw(g, res["prefill_conditions"]), lowest=True)
            key = contrast.replace(" - ", "_minus_")
            banded = "sim_low" in g.columns and not np.isnan(low["sim_low"])
            # chosen as the most negative of the contrast's cells: the verdict reads the simultaneous band over them
            lo, hi = (low["sim_low"], low["sim_high"]) if banded else (low["low"], low["high"])
            d.setdefault("prefill", {})[key] = {
                "strongest": {**_iv(low), "layer_fraction": float(low["layer_fraction"]),
                              "strength": float(low["strength"]), "verdict": verdict(lo, hi), "tied": tied,
                              **({"band": {"low": float(lo), "high": float(hi)}} if banded else {})},
                "cells_below": int((g["high"] < 0).sum()), "cells_above": int((g["low"] > 0).sum()), "cells": int(len(g))}
        il = res["intention_layers"]
        il = il[il["model"] == m] if len(il) else il
        if len(il):
            best = il.sort_values("mean", ascending=False).iloc[0]
            d["intention_best"] = {"layer": int(best["layer"]), "layer_fraction": float(best["layer_fraction"]),
                                   **_iv(best), "band": {"low": float(best["sim_low"]), "high": float(best["sim_high"])},
                                   "verdict": verdict(best["sim_low"], best["sim_high"])}  # chosen among the layers
            d["intention_layers_above"] = int((il["low"] > 0).sum())
            d["intention_layers_below"] = int((il["high"] < 0).sum())
            d["intention_layers"] = int(len(il))
        dg = degen[degen["model"] == m]
        d["degenerate_strength"] = {f"{r['layer_fraction']:g}": (None if np.isnan(r["degenerate_strength"])
                                                                 else float(r["degenerate_strength"]))
                                    for _, r in dg.iterrows()}
        ag = agree[(agree["model"] == m) & (agree["pair"] == "rules claims vs forced-choice detected")]
        if len(ag):
            d["rules_vs_forced_choice"] = {"agreement": float(ag["agreement"].iloc[0]),
                                           "kappa": None if np.isnan(ag["kappa"].iloc[0]) else float(ag["kappa"].iloc[0]),
                                           "n": int(ag["n"].iloc[0]), "rules_claims": int(ag["rules_k"].iloc[0]),
                                           "forced_choice_detected": int(ag["forced_k"].iloc[0])}
        d["n_layers"] = int(tables["intention"][tables["intention"]["model"] == m]["layer"].nunique()) \
            if len(tables["intention"]) else None
        d["layers_injected"] = sorted(int(x) for x in det["layer"].unique() if x >= 0)
        out["models"][m] = d
    return out


def judge_case_agreement(raw: Path = RAW) -> dict | None:
    """The judge's agreement with the labels of the graders' two sets (``judge_cases.parquet``, written when a
    judge ran): per set, :func:`reproduce.injection.grader_cases.judge_agreement`, and the judge's spec; ``None``
    when no judge ran."""
    return judged_cases(raw, lambda g: grader_cases.judge_agreement(
        list(zip(g["text"], g["concept"], g["claims"], g["identifies"])), g["judge_claims"], g["judge_names"]))


def main(profile: Profile, raw: Path = RAW, out: Path = OUT, metrics: Path = METRICS) -> Path:
    tables = read_tables(raw)
    settings = sampler_settings(profile, 0)
    fits = {k: tables[k] for k in ("detection", "identification", "prefill", "intention")}
    print(f"fitting the concept-injection models ({settings.chains} chains x {settings.draws} draws)", file=sys.stderr)
    res = I.fit_all(fits, settings)
    res["steering_cells"] = steering_cells(tables.get("steering"))
    freq = I.frequentist_summary(fits)
    coh = coherence_table(tables["freetext"], tables["detection"])
    degen = degeneration(coh)
    agree = agreement(tables["freetext"], tables["detection"])
    # the continuous, paired measure: detect minus yes-bias log-odds, its best cell chosen on half the concepts
    paired = PA.analyse(tables["detection"], profile)
    # the two-turn trial and its logit lens: measurements with intervals, no verdict word
    two = TT.analyse(tables["two_turn"], tables["lens"], profile.seed)
    ex = examples(tables["freetext"])
    numbers = headline_numbers(res, coh, degen, agree, tables)
    numbers["diagnostics"] = res["diagnostics"]
    for m, score in paired["numbers"].items():
        numbers["models"].setdefault(m, {})["introspection_score"] = score
    for m, d in two["numbers"].items():
        numbers["models"].setdefault(m, {})["two_turn"] = d
    numbers["coherence_rule"] = {"perplexity_factor": PERPLEXITY_FACTOR, "degenerate_share": DEGENERATE_SHARE}
    # the rule graders against their labelled replies: those they were written on, and a held-out set
    numbers["graders"] = {"development": grader_cases.agreement(grader_cases.CASES),
                          "held_out": grader_cases.agreement(grader_cases.HELD_OUT)}
    judged = judge_case_agreement(raw)
    if judged is not None:  # the optional judge on the same labelled replies, in the run that used it
        numbers["graders"]["judge"] = judged
    with atomic_dir(out) as tmp:
        for name, df in res.items():
            if isinstance(df, pd.DataFrame):
                df.to_parquet(Path(tmp) / f"{name}.parquet", index=False)
        for name, df in (("raw_rates", freq), ("coherence", coh), ("degeneration", degen), ("agreement", agree),
                         ("examples", ex), ("introspection_scores", paired["scores"]),
                         ("introspection_cells", paired["cells"]), ("two_turn_shifts", two["shifts"]),
                         ("two_turn_cells", two["cells"]), ("lens_layers", two["lens"]),
                         ("lens_vs_random", two["lens_vs_random"])):
            df.to_parquet(Path(tmp) / f"{name}.parquet", index=False)
        (Path(tmp) / "numbers.json").write_text(json.dumps(numbers, indent=2, sort_keys=True, default=float))
    flat = {}
    for m, d in numbers["models"].items():
        for k in ("fp_rate",):
            if k in d:
                flat[f"{m}.{k}"] = d[k]["mean"]
        if "detection_best" in d:
            flat[f"{m}.detection_best_minus_fp"] = d["detection_best"]["minus_fp"]["mean"]
        if "identification_best" in d:
            flat[f"{m}.identification_best"] = d["identification_best"]["rate"]["mean"]
    atomic_write_json(metrics, flat)
    return out
