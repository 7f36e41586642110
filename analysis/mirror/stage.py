"""The ``mirror_analysis`` stage: the mirror-test tables in, posterior summaries (every fit behind the
convergence gate), raw Wilson rates, example transcripts and the numbers the manuscript quotes out
(``data/mirror/analysis``)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from reproduce.config import REPO_ROOT, Profile
from reproduce.errors import DataError
from analysis.agreement import agreement, judged_cases
import reproduce.mirror.grader_cases as grader_cases
from reproduce.io import atomic_dir, atomic_write_json

import analysis.mirror as MI
from analysis.mirror.design import unchanged_history
from analysis.mirror.discrimination import discrimination
from analysis.mirror.pairs import paired_choice
from analysis.mirror.fit import imitation_split
from analysis.mirror.surprise import unchanged_reply
from analysis.bayes import sampler_settings
from analysis.verdicts import interval_side as verdict

RAW = REPO_ROOT / "data" / "mirror" / "raw"
OUT = REPO_ROOT / "data" / "mirror" / "analysis"
METRICS = REPO_ROOT / "data" / "mirror" / "metrics.json"
PARTS = ("conversations", "turns", "surprise", "pairs")


def read_tables(raw: Path = RAW) -> dict[str, pd.DataFrame]:
    missing = [p for p in PARTS if not (Path(raw) / f"{p}.parquet").exists()]
    if missing:
        raise DataError(f"mirror-test tables {missing} are missing under {raw}; run `dvc repro mirror` "
                        "(or `looking-inward mirror`) first")
    return {p: pd.read_parquet(Path(raw) / f"{p}.parquet") for p in PARTS}


def judge_case_agreement(raw: Path = RAW) -> dict | None:
    """The judge's agreement with the labels of the noticing rule's two sets (``judge_cases.parquet``, written when
    a judge ran; :func:`reproduce.mirror.grader_cases.judge_agreement`), per set, with the judge's spec; None when
    no judge ran."""
    return judged_cases(raw, lambda g: grader_cases.judge_agreement(g["notices"], g["judge_notices"]))


def self_references(rows: pd.DataFrame, suffix: str = "") -> dict:
    """Per condition, the replies' self-references in the first and in the third person (``first_person<suffix>``,
    ``third_person<suffix>``: the visible replies' or, with ``_thinking``, the traces')."""
    return {c: {"first": int(g[f"first_person{suffix}"].sum()), "third": int(g[f"third_person{suffix}"].sum())}
            for c, g in rows.groupby("condition", sort=True)}


def examples(turns: pd.DataFrame, conversations: pd.DataFrame, chars: int = 200) -> pd.DataFrame:
    """Transcripts for the manuscript: per model, the first script's reply at the last measured turn in the
    control and other conditions and in every corrupted cell at the highest level, with its grades."""
    if turns.empty:
        return pd.DataFrame(columns=["model", "condition", "kind", "level", "turn", "reply", "notices", "p_yes"])
    last = turns["turn"].max()
    top = turns["level"].max()
    pick = turns[(turns["turn"] == last) & (turns["script_id"] == turns["script_id"].min())
                 & ((turns["condition"] != "corrupted") | (turns["level"] == top))]
    out = pick[["model", "condition", "kind", "level", "turn", "reply", "notices", "p_yes"]].copy()
    out["reply"] = [t if len(t) <= chars else t[:chars].rstrip() + " ..." for t in out["reply"]]
    return out.reset_index(drop=True)


def grader_agreement(turns: pd.DataFrame) -> pd.DataFrame:
    """Per model, how the judge's noticing grade (P(yes) > 0.5) agrees with the rules' on the same replies: raw
    agreement, Cohen's kappa and each grader's count of "notices"; empty where no judge ran."""
    cols = ["model", "n", "agreement", "kappa", "rules_yes", "judge_yes"]
    if not MI.has_judge(turns):
        return pd.DataFrame(columns=cols)
    rows = []
    for m, g in turns[turns["judge_notices"].notna()].groupby("model"):
        a, b = g["notices"].astype(bool), g["judge_notices"] > 0.5
        rows.append({"model": m, **agreement(a, b), "rules_yes": int(a.sum()), "judge_yes": int(b.sum())})
    return pd.DataFrame(rows, columns=cols)


def _key(r: pd.Series) -> tuple:
    """A cell's key, the same in every result table: (condition, kind or None, level or None)."""
    return (r["condition"], r["kind"] if isinstance(r["kind"], str) else None,
            None if pd.isna(r["level"]) else float(r["level"]))


def _cell_order(key: tuple) -> tuple:
    """The fixed order of the cells, as :func:`analysis.mirror.design._cells` sorts them: condition, kind (as in
    :data:`analysis.mirror.KINDS`), level."""
    condition, kind, level = key
    return MI.CONDITIONS.index(condition), MI.KINDS.index(kind) if kind in MI.KINDS else -1, \
        -1.0 if level is None else level


def _extremes(cands: list[dict], largest: bool) -> list[dict]:
    """The candidate cells whose raw difference from the control (``raw``, an exact fraction of the counts) is
    the largest (``largest``) or the smallest, in the fixed cell order (:func:`_cell_order`). Cells that tie on
    their counts (each 0 of 6) are all returned: which of them the posterior puts further from the control is
    the sampler's noise or the prior's doing (it pulls a cell of 4 trials further than one of 6), not the
    data's. The first in the fixed order stands for them where one number is needed (metrics.json)."""
    best = (max if largest else min)(c["raw"] for c in cands)
    return sorted((c for c in cands if c["raw"] == best), key=lambda c: _cell_order(c["key"]))


def _binary_extreme(cells: pd.DataFrame, contrasts: pd.DataFrame, largest: bool) -> dict:
    """One model's altered cell of a binary outcome whose raw rate lies furthest above (``largest``) or below
    the control's (:func:`_extremes`): its key, counts ``k, n``, raw difference ``raw_diff`` from the control's
    rate, posterior contrast ``mean, low, high`` and ``verdict``; ``tied``: the same for every other cell at the
    same raw rate."""
    kn = {_key(r): (int(r["k"]), int(r["n"])) for _, r in cells.iterrows()}
    ctl = Fraction(*kn[("control", None, 0.0)])
    cands = [{"key": _key(r), "raw": Fraction(*kn[_key(r)]) - ctl, "row": r} for _, r in contrasts.iterrows()]
    first, *tied = [{"condition": c["key"][0], "kind": c["key"][1], "level": c["key"][2],
                     "k": kn[c["key"]][0], "n": kn[c["key"]][1], "raw_diff": float(c["raw"]),
                     **{k: float(c["row"][k]) for k in ("mean", "low", "high")},
                     "verdict": verdict(c["row"]["low"], c["row"]["high"])} for c in _extremes(cands, largest)]
    return {**first, "tied": tied}


def _imitation_top(cells: pd.DataFrame) -> dict:
    """One model's corrupted imitation cell whose raw share of pattern words rose most over the control's share
    for its kind (:func:`_extremes`): ``kind, level``, the raw ``k`` of ``n`` words and ``rate = k / n``, the
    control's ``control_k`` of ``control_n``, ``raw_diff`` (rate minus the control's), ``share`` (the modelled
    share of the typical reply at the average conversation), the modelled difference from the control ``mean,
    low, high`` and its ``verdict``; ``tied``: the same for every other cell with the same raw difference."""
    base = {r["kind"]: (int(r["k"]), int(r["n"])) for _, r in cells[cells["condition"] == "control"].iterrows()}
    cor = cells[cells["condition"] == "corrupted"]
    cands = [{"key": _key(r), "raw": Fraction(int(r["k"]), int(r["n"])) - Fraction(*base[r["kind"]]), "row": r}
             for _, r in cor.iterrows()]
    first, *tied = [{"condition": "corrupted", "kind": c["row"]["kind"], "level": float(c["row"]["level"]),
                     "k": int(c["row"]["k"]), "n": int(c["row"]["n"]), "rate": float(c["row"]["k"] / c["row"]["n"]),
                     "control_k": base[c["row"]["kind"]][0], "control_n": base[c["row"]["kind"]][1],
                     "raw_diff": float(c["raw"]), "share": float(c["row"]["mean"]),
                     **{k: float(c["row"][f"diff_{k}"]) for k in ("mean", "low", "high")},
                     "verdict": verdict(c["row"]["diff_low"], c["row"]["diff_high"])}
                    for c in _extremes(cands, largest=True)]
    return {**first, "tied": tied}


def _discrimination_numbers(disc: pd.DataFrame, m: str) -> dict:
    """One model's AUROCs (:mod:`analysis.mirror.discrimination`) by measure: the pooled corrupted comparison (or
    the single corrupted cell), the corrupted cell with the highest AUROC, and another model's replies."""
    out = {}
    for measure, g in disc[disc["model"] == m].groupby("measure", sort=True):
        cells = g[(g["comparison"] == "corrupted") & g["kind"].notna()]
        pooled = g[(g["comparison"] == "corrupted") & g["kind"].isna()]
        other = g[g["comparison"] == "other"]
        pick = lambda r: {**{k: (None if r[k] is None or (isinstance(r[k], float) and np.isnan(r[k])) else  # noqa: E731
                                 r[k] if isinstance(r[k], str) else float(r[k]))
                             for k in ("kind", "level", "auroc", "low", "high")},
                          **{k: int(r[k]) for k in ("n_own", "n_altered")}}
        d = {}
        if len(pooled) or len(cells):
            d["corrupted"] = pick((pooled if len(pooled) else cells).iloc[0])
        if len(cells):
            d["best_cell"] = pick(cells.sort_values(["auroc", "kind", "level"], ascending=[False, True, True]).iloc[0])
            d["cells"] = int(len(cells))
        if len(other):
            d["other"] = pick(other.iloc[0])
        out[measure] = d
    return out


def _paired_numbers(pc: pd.DataFrame, m: str) -> dict:
    """One model's paired recognition (:mod:`analysis.mirror.pairs`): the pooled corrupted comparison (or the single
    corrupted cell), another model's replies, and its position preference."""
    g = pc[pc["model"] == m]
    if not len(g):
        return {}
    pick = lambda r: {"kind": r["kind"] if isinstance(r["kind"], str) else None,  # noqa: E731
                      "level": None if r["level"] is None or pd.isna(r["level"]) else float(r["level"]),
                      **{k: float(r[k]) for k in ("mean", "low", "high")},
                      **{k: int(r[k]) for k in ("pairs", "scripts", "above_half")}}
    cells = g[(g["comparison"] == "corrupted") & g["kind"].notna()]
    pooled = g[(g["comparison"] == "corrupted") & g["kind"].isna()]
    other = g[g["comparison"] == "other"]
    d = {"p_first": float(g["p_first"].iloc[0])}
    if len(pooled) or len(cells):
        d["corrupted"] = pick((pooled if len(pooled) else cells).iloc[0])
    if len(other):
        d["other"] = pick(other.iloc[0])
    return d


def headline_numbers(res: dict, tables: dict[str, pd.DataFrame], disc: pd.DataFrame | None = None,
                     paired: pd.DataFrame | None = None) -> dict:
    out: dict = {"models": {}}
    turns = tables["turns"]
    agree = grader_agreement(turns).set_index("model")
    unchanged = unchanged_history(turns)
    surprise = tables.get("surprise")
    surprise = MI.check_table(surprise, "surprise") if surprise is not None and len(surprise) else surprise
    for m in sorted(turns["model"].unique()):
        own = turns["model"] == m
        d: dict = {"rows": int(own.sum()), "scripts": int(turns[own]["script_id"].nunique()),
                   "turns": sorted(int(t) for t in turns[own]["turn"].unique()),
                   # replies after a corrupted history the corruption left unchanged: out of every fit
                   "unchanged_histories": int(unchanged[own].sum())}
        for name in ("noticing", "recognition", "judge_noticing"):
            cells, con = res[f"{name}_cells"], res[f"{name}_contrasts"]
            if cells.empty:
                continue
            ctl = cells[(cells["model"] == m) & (cells["condition"] == "control")]
            if len(ctl):
                d[f"{name}_control"] = {k: float(ctl.iloc[0][k]) for k in ("mean", "low", "high")}
                d[f"{name}_control"].update(k=int(ctl.iloc[0]["k"]), n=int(ctl.iloc[0]["n"]))
            mc = cells[cells["model"] == m]
            if len(mc):
                d[f"{name}_observed"] = {"k": int(mc["k"].sum()), "n": int(mc["n"].sum())}
            c = con[con["model"] == m] if len(con) else con
            if len(c):  # noticing: the largest rise over the control; recognition: the largest drop
                d[f"{name}_extreme"] = _binary_extreme(mc, c, largest=(name != "recognition"))
                d[f"{name}_cells_above"] = int((c["low"] > 0).sum())
                d[f"{name}_cells_below"] = int((c["high"] < 0).sum())
                d[f"{name}_cells"] = int(len(c))
        if "recognition_control" in d:  # the probability the answer's first token put on neither yes nor no
            rows = turns[(turns["model"] == m) & (turns["condition"] == "control")]
            d["recognition_control"]["p_outside"] = 100 * float(rows["p_outside"].mean())
        im_all = res["imitation_cells"]
        im_all = im_all[im_all["model"] == m] if len(im_all) else im_all
        im = im_all[im_all["condition"] == "corrupted"] if len(im_all) else im_all
        if len(im):
            d["imitation_top"] = _imitation_top(im_all)
            d["imitation_cells_above"] = int((im["diff_low"] > 0).sum())
            d["imitation_cells"] = int(len(im))
            # the measure's false positives: another model's replies hold none of the corruptions, so any pattern
            # word in the reply that follows them is the measure's, not an imitation
            for part in ("copied", "adopted"):  # the split: history words written again, and new words in the pattern
                sp = res.get(f"imitation_{part}_cells")
                sp = sp[sp["model"] == m] if sp is not None and len(sp) else None
                if sp is not None and len(sp[sp["condition"] == "corrupted"]):
                    cor = sp[sp["condition"] == "corrupted"]
                    d[f"imitation_{part}_top"] = _imitation_top(sp)
                    d[f"imitation_{part}_cells_above"] = int((cor["diff_low"] > 0).sum())
                    rows = imitation_split(turns[own & (turns["condition"] == "corrupted")], part)
                    d[f"imitation_{part}_words"] = {k: int(rows.loc[rows["kind"] == k, f"pattern_k_{k}"].sum())
                                                    for k in sorted(set(cor["kind"]))}
            oth = turns[own & (turns["condition"] == "other")]
            if len(oth):
                d["imitation_other"] = {k: {"k": int(oth[f"pattern_k_{k}"].sum()), "n": int(oth[f"pattern_n_{k}"].sum())}
                                        for k in sorted(set(im["kind"]))}
        if "notices_thinking" in turns.columns and turns.loc[own, "notices_thinking"].notna().any():
            # a thinking section, where the chat template has one: its trace graded apart from the visible reply
            traced = turns[own & turns["notices_thinking"].notna() & ~unchanged]
            d["thinking_noticing"] = {c: {"k": int(g["notices_thinking"].astype(bool).sum()), "n": int(len(g))}
                                      for c, g in traced.groupby("condition", sort=True)}
            d["thinking_traces"] = int(len(traced))
            if {"first_person_thinking", "third_person_thinking"} <= set(turns.columns):
                d["thinking_self_references"] = self_references(traced, "_thinking")
        if {"first_person", "third_person"} <= set(turns.columns):
            # the shift the post saw from "I" to "the model": self-references in each person, by condition
            d["self_references"] = self_references(turns[own])
        su = res["surprise_cells"]
        su = su[su["model"] == m] if len(su) else su
        if len(su):
            # altered replies whose text the corruption left as it was: out of the surprise fit
            d["surprise_unchanged"] = int((unchanged_reply(surprise) & (surprise["model"] == m)).sum())
            d["surprise"] = [{"condition": r["condition"], "kind": r["kind"] if isinstance(r["kind"], str) else None,
                              "level": None if pd.isna(r["level"]) else float(r["level"]),
                              **{k: float(r[k]) for k in ("mean", "low", "high")}} for _, r in su.iterrows()]
            d["surprise_cells_above"] = int((su["low"] > 0).sum())
            d["surprise_cells"] = int(len(su))
        if paired is not None and len(paired) and (paired["model"] == m).any():
            d["paired"] = _paired_numbers(paired, m)
        if disc is not None and len(disc) and (disc["model"] == m).any():
            d["discrimination"] = _discrimination_numbers(disc, m)
        if m in agree.index:
            r = agree.loc[m]
            d["judge_agreement"] = {"n": int(r["n"]), "agreement": float(r["agreement"]),
                                    "kappa": None if np.isnan(r["kappa"]) else float(r["kappa"]),
                                    "rules_yes": int(r["rules_yes"]), "judge_yes": int(r["judge_yes"])}
        out["models"][m] = d
    return out


def flat_metrics(numbers: dict) -> dict:
    """``metrics.json``: per model the modelled control rates of noticing and recognition, each with its raw
    counts beside it (``<model>.<outcome>_control_k`` of ``_n``: an all-zero cell's modelled rate is the prior's,
    not an observed rate), and the modelled difference of the top imitation cell (NaN as null)."""
    flat = {}
    for m, d in numbers["models"].items():
        for k in ("noticing_control", "recognition_control"):
            if k in d:
                flat[f"{m}.{k}"] = d[k]["mean"]
                flat[f"{m}.{k}_k"], flat[f"{m}.{k}_n"] = d[k]["k"], d[k]["n"]
        if "imitation_top" in d:
            flat[f"{m}.imitation_top_diff"] = d["imitation_top"]["mean"]
    return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in flat.items()}


def main(profile: Profile, raw: Path = RAW, out: Path = OUT, metrics: Path = METRICS) -> Path:
    tables = read_tables(raw)
    settings = sampler_settings(profile, 0)
    print(f"fitting the mirror-test models ({settings.chains} chains x {settings.draws} draws)", file=sys.stderr)
    fits = {"turns": tables["turns"], "surprise": tables["surprise"]}
    res = MI.fit_all(fits, settings)
    freq = MI.frequentist_summary(fits)
    disc = discrimination(tables["turns"], tables["surprise"], seed=profile.seed)
    paired = paired_choice(tables["pairs"], seed=profile.seed)
    numbers = headline_numbers(res, tables, disc, paired)
    numbers["diagnostics"] = res["diagnostics"]
    # the noticing rule against its labelled replies: those it was written on, and a held-out set
    numbers["graders"] = {"development": grader_cases.agreement(grader_cases.CASES),
                          "held_out": grader_cases.agreement(grader_cases.HELD_OUT)}
    judged = judge_case_agreement(raw)
    if judged is not None:  # the optional judge on the same labelled replies, in the run that used it
        numbers["graders"]["judge"] = judged
    with atomic_dir(out) as tmp:
        for name, df in res.items():
            if isinstance(df, pd.DataFrame):
                df.to_parquet(Path(tmp) / f"{name}.parquet", index=False)
        freq.to_parquet(Path(tmp) / "raw_rates.parquet", index=False)
        disc.to_parquet(Path(tmp) / "discrimination.parquet", index=False)
        paired.to_parquet(Path(tmp) / "paired.parquet", index=False)
        grader_agreement(tables["turns"]).to_parquet(Path(tmp) / "agreement.parquet", index=False)
        examples(tables["turns"], tables["conversations"]).to_parquet(Path(tmp) / "examples.parquet", index=False)
        (Path(tmp) / "numbers.json").write_text(json.dumps(numbers, indent=2, sort_keys=True, default=float))
    atomic_write_json(metrics, flat_metrics(numbers))
    return out
