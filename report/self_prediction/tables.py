"""The manuscript's tables, as generated markdown included by ``paper/index.qmd``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.constants import BFMI_MIN, ESS_MIN, MAD_BINS, RHAT_MAX, TOP_BEHAVIOURS

from report.formatting import ci_text, count_text, fmt, fmt_prob, interval_text, known, md_table
from report.self_prediction.numbers import IV, _diagnostics





def _target_acceptance(value: float, diverged: bool) -> str:
    """A fit's target acceptance, marked where the fit had diverged at a lower one first."""
    return f"{value:g}" + (" (after divergences)" if diverged else "")


def build_tables(analysis: Path, metrics: dict, manifests: list[dict], reference: dict,
                 experiments: list[dict] | None = None) -> dict[str, str]:
    """The manuscript's tables as markdown, each from an analysis table or the dataset manifests (``manifests``:
    the task datasets; ``experiments``: the policy-report, concept-injection and mirror-test datasets the run's
    stages read)."""
    t = lambda name: pd.read_parquet(Path(analysis) / "tables" / f"{name}.parquet")  # noqa: E731
    out = {}

    acc = t("accuracy_by_target").sort_values(["condition", "target", "kind"], ascending=[False, True, False])
    out["accuracy"] = md_table(pd.DataFrame({
        "condition": acc["condition"], "predictor": acc["predictor"], "target": acc["target"], "kind": acc["kind"],
        "scored against": acc["condition"].map({"untrained": "base model", "trained": "M1' (every seed)"}),
        "scored": acc["n"].map(count_text),
        "accuracy % [95% Wilson]": [ci_text(*r, scale=100) for r in acc[["accuracy", "wilson_low", "wilson_high"]].to_numpy()],
        "mode baseline %": acc["mode_baseline"].map(lambda v: fmt(100 * v)),
        "compliance %": acc["compliance"].map(lambda v: fmt(100 * v))}),
        "Raw accuracy on the held-out tasks by predictor and target, before and after training. Before training "
        "a prediction is scored against the base model's answers; after training against the self-trained "
        "target M1' of the same finetune seed, whose answers also define the mode baseline. Scored "
        "observations are those whose object-level answer has the property; a non-compliant hypothetical "
        "answer counts as wrong.", "tbl-accuracy")

    seeds = t("accuracy_by_seed").sort_values(["target", "seed", "kind"], ascending=[True, True, False])
    out["seeds"] = md_table(pd.DataFrame({
        "target": seeds["target"], "seed": seeds["seed"].map(lambda v: str(int(v))), "kind": seeds["kind"],
        "predictor": seeds["predictor"], "scored": seeds["n"].map(count_text),
        "accuracy % [95% Wilson]": [ci_text(*r, scale=100) for r in seeds[["accuracy", "wilson_low", "wilson_high"]].to_numpy()],
        "mode baseline (M1') %": seeds["mode_baseline"].map(lambda v: fmt(100 * v)),
        "compliance %": seeds["compliance"].map(lambda v: fmt(100 * v))}),
        "Experiment 1 per finetune seed: each seed self-trains the target again (M1'), and the cross-predictor "
        "is trained on that M1''s answers; both are scored against it.", "tbl-seeds")

    sens = t("sensitivity_ground_truth")
    order = {"trained": 0, "base": 1, "trained_original": 2, "trained_without_numbers": 3}
    sens = sens.assign(order=sens["ground_truth"].map(order), overall=sens["target"] == "all")
    sens = sens.sort_values(["order", "overall", "target", "kind"], ascending=[True, True, True, False])
    label = {"trained": "M1' (main)", "base": "base model (sensitivity)",
             "trained_original": "M1', scored as the original's code",
             "trained_without_numbers": "M1', without the number task"}
    rows = [{"scored against": label[r.ground_truth], "predictor": r.predictor, "target": r.target, "kind": r.kind,
             "accuracy % [95% Wilson]": ci_text(r.accuracy, r.wilson_low, r.wilson_high, 100),
             "mode baseline %": fmt(100 * r.mode_baseline)} for r in sens.itertuples()]
    for truth, m in sorted(metrics.get("sensitivity_ground_truth", {}).items(), key=lambda kv: order[kv[0]]):
        rows.append({"scored against": label[truth], "predictor": "self minus cross", "target": "all",
                     "kind": "advantage (points, cluster bootstrap 95%)",
                     "accuracy % [95% Wilson]": interval_text(m["advantage"], "estimate"), "mode baseline %": ""})
    out["sensitivity"] = md_table(pd.DataFrame(rows),
                                   "Sensitivity of experiment 1 to the ground truth: the same trained predictions "
                                   "scored against the self-trained target M1' (the original study's protocol, "
                                   "the main result), against the untrained base model, and against M1' as the "
                                   "original's analysis code scores it: its property functions on every stored "
                                   "answer (\"nan\" where a function finds no value, which counts in the mode "
                                   "baseline) and the whole cleaned hypothetical answer compared with that value; "
                                   "and, where the held-out tasks include a number task, against M1' without it "
                                   "(the original's experiment 1 has no number task).",
                                   "tbl-sensitivity")

    a = metrics["advantage"]
    word = {"positive": "advantage", "negative": "reverse", "practically null": "practically null",
            "inconclusive": "inconclusive"}
    from analysis.verdicts import verdict

    # a bound that would round onto an end of the region of practical equivalence is printed with the digits that
    # show its side (the verdicts read the interval against those ends)
    edges = (-a.get("rope", 0.0), a.get("rope", 0.0))

    def said(d: dict, scale: float = 1.0) -> str:
        """The verdict of an interval against the ROPE ('' where the interval could not be computed)."""
        if d.get("low") is None or d.get("high") is None:
            return ""
        return word[verdict(scale * d["low"], scale * d["high"], a.get("rope", 0.0))]
    rows = [{"estimate": "Bayesian, delta: equal predicting skill, directions weighted equally",
             "self %": "", "cross %": "", "advantage (points)": interval_text(a["overall"], edges=edges),
             "P(advantage > 0)": fmt_prob(a["overall"]["p_positive"]), "verdict": word[a["overall"]["verdict"]]}]
    by_dir = {(d["target"], d["cross_predictor"]): d for d in a.get("directions", [])}
    adv = t("advantage")
    per_target = adv[adv["by"] == "target"].set_index("target")
    for (tg, cp), d in sorted(by_dir.items()):
        r = per_target.loc[tg] if tg in per_target.index and len(by_dir) == per_target.shape[0] else None
        rows.append({"estimate": f"Bayesian, direction: predicting {tg}, cross-predictor {cp}",
                     "self %": fmt(100 * r["accuracy_1"]) if r is not None else "",
                     "cross %": fmt(100 * r["accuracy_0"]) if r is not None else "",
                     "advantage (points)": interval_text(d, edges=edges), "P(advantage > 0)": fmt_prob(d["p_positive"]),
                     "verdict": word[d["verdict"]]})
    if "gamma" in a:
        g0 = a["gamma"]
        rows.append({"estimate": f"Bayesian, gamma: direction {g0['first']} minus direction {g0['second']}",
                     "self %": "", "cross %": "", "advantage (points)": interval_text(g0, edges=edges), "P(advantage > 0)": "",
                     "verdict": ""})
    overall = adv[adv["by"] == "overall"].iloc[0]
    rows.append({"estimate": "Bayesian, pooled and trial-weighted (confounded with skill)",
                 "self %": fmt(100 * overall["accuracy_1"]), "cross %": fmt(100 * overall["accuracy_0"]),
                 "advantage (points)": interval_text(a["trial_weighted"], edges=edges),
                 "P(advantage > 0)": fmt_prob(a["trial_weighted"]["p_positive"]), "verdict": said(a["trial_weighted"])})
    rows.append({"estimate": "Bayesian, every held-out task weighted equally", "self %": "", "cross %": "",
                 "advantage (points)": interval_text(a["equal_task"], edges=edges),
                 "P(advantage > 0)": fmt_prob(a["equal_task"]["p_positive"]), "verdict": said(a["equal_task"])})
    for key, label in (("new_task", "a new task"), ("new_run", "a new finetuning run, these tasks"),
                       ("new_task_and_run", "a new task and run")):
        if key in a:
            rows.append({"estimate": f"Bayesian, {label} (predictive, at equal skill)", "self %": "", "cross %": "",
                         "advantage (points)": interval_text(a[key], edges=edges), "P(advantage > 0)": fmt_prob(a[key]["p_positive"]),
                         "verdict": word[a[key]["verdict"]]})
    if "equal_cell" in a:
        rows.append({"estimate": "Bayesian, every target x task x property cell weighted equally", "self %": "",
                     "cross %": "", "advantage (points)": interval_text(a["equal_cell"], edges=edges),
                     "P(advantage > 0)": fmt_prob(a["equal_cell"]["p_positive"]), "verdict": said(a["equal_cell"])})
    boot, g = metrics["advantage_frequentist"]["bootstrap"], metrics["advantage_frequentist"]["glm_cluster"]
    rows.append({"estimate": f"cluster bootstrap ({boot['n_boot']:,} resamples), pooled",
                 "self %": "", "cross %": "", "advantage (points)": interval_text(boot, "estimate", 100, edges=edges),
                 "P(advantage > 0)": "", "verdict": said(boot, 100)})
    rows.append({"estimate": "GLM, cluster-robust, average marginal effect, pooled", "self %": "", "cross %": "",
                 "advantage (points)": ci_text(g["ame"], g["ame_low"], g["ame_high"], 100, edges=edges),
                 "P(advantage > 0)": (f"p = {g['p_value']:.2f} (two-sided)" if g['p_value'] is not None else "n/a (not estimable)"),
                 "verdict": said({"low": g["ame_low"], "high": g["ame_high"]}, 100)})

    fr = metrics["advantage_frequentist"]
    if "paired" in fr:
        for name, label in (("paired", "paired (McNemar-style), directions weighted equally"),
                            ("glm_cell", "GLM, cell fixed effects and a self slope per target, targets weighted equally")):
            d = fr[name]["delta"]
            estimable = d["low"] is not None and d["high"] is not None  # null: separated data (frequentist.py)
            rows.append({"estimate": label, "self %": "", "cross %": "", "advantage (points)": ci_text(d["estimate"], d["low"], d["high"], 100, edges=edges),
                         "P(advantage > 0)": "", "verdict": said(d, 100) if estimable else "not estimable (separated)"})
    out["advantage"] = md_table(pd.DataFrame(rows),
                                 "Self-prediction advantage after training (self minus cross accuracy, points). "
                                 f"Bayesian rows: posterior mean and {IV}% interval; frequentist rows: 95% intervals. "
                                 f"Verdicts: the interval against +/- {fmt(a.get('rope', 0.0))} points of "
                                 "practical equivalence (the pooled rows mix the advantage with the models' "
                                 "difference in predicting skill, gamma).", "tbl-advantage")

    ps = t("prior_sensitivity")
    if len(ps) > 1:
        rows_ps = []
        for r in ps.itertuples():
            component = getattr(r, "component", "all")  # tables of older runs scale every prior together only
            which = "every prior scale" if component == "all" else f"{component} scale"
            row = {"prior scales": f"{which} x " + fmt(r.prior_scale, 1) + (" (main)" if r.prior_scale == 1.0 else ""),
                   "delta (points)": ci_text(r.delta_mean, r.delta_low, r.delta_high, edges=edges),
                   "verdict": word[r.verdict],
                   "new task (points)": ci_text(r.new_task_mean, r.new_task_low, r.new_task_high)}
            if "headline_mean" in ps:  # the headline estimand: a new task (and a new finetuning run)
                row["headline (points)"] = ci_text(r.headline_mean, r.headline_low, r.headline_high, edges=edges)
            if "gamma_mean" in ps:
                row["gamma (points)"] = ci_text(r.gamma_mean, r.gamma_low, r.gamma_high)
            row["P(every direction)"] = fmt_prob(r.p_every_direction)
            if "draws" in ps:  # tables of older runs lack it
                row["draws per chain"] = f"{r.draws}" + (" (sampled twice)" if r.sampled_twice else "")
            if "target_accept" in ps:  # tables of older runs lack it
                row["target acceptance"] = _target_acceptance(r.target_accept, r.diverged)
            rows_ps.append(row)
        out["prior_sensitivity"] = md_table(pd.DataFrame(rows_ps),
            "Prior sensitivity of the advantage model: the main fit and refits with every prior scale, or one "
            "variance component's scale with the others at their defaults (sigma: the random intercepts', tau: "
            "the random self slopes', unit: the answer unit's, pair: the answer unit x arm's), multiplied by the "
            "factor shown; headline: the advantage on a new held-out task (from a new finetuning run where the "
            f"run has several) (posterior means and {IV}% intervals; each fit passed the same gate, at its first "
            "sampling or, where 'sampled twice', at one with twice the draws, and where 'after divergences', at "
            "a higher target acceptance after divergent transitions at a lower one).",
            "tbl-prior-sensitivity")
    else:  # the refits were not run: the sentence says so, and there is no table to show
        out["prior_sensitivity"] = "\n"
    arms = t("arms")
    top = arms[arms["by"].isin(["overall", "target", "task"])]
    out["arms"] = md_table(pd.DataFrame({
        "scope": [("pooled" if r.by == "overall" else f"{r.by}: {getattr(r, r.by)}") for r in top.itertuples()],
        "self %": [ci_text(r.accuracy_self, r.accuracy_self_low, r.accuracy_self_high) for r in top.itertuples()],
        "cross %": [ci_text(r.accuracy_cross, r.accuracy_cross_low, r.accuracy_cross_high) for r in top.itertuples()],
        "mode %": [ci_text(r.accuracy_mode, r.accuracy_mode_low, r.accuracy_mode_high) for r in top.itertuples()],
        "self - mode": [ci_text(r.self_minus_mode, r.self_minus_mode_low, r.self_minus_mode_high) for r in top.itertuples()],
        "cross - mode": [ci_text(r.cross_minus_mode, r.cross_minus_mode_low, r.cross_minus_mode_high) for r in top.itertuples()],
        "self - cross": [ci_text(r.self_minus_cross, r.self_minus_cross_low, r.self_minus_cross_high) for r in top.itertuples()],
        "lift self %": [ci_text(r.lift_self, r.lift_self_low, r.lift_self_high) for r in top.itertuples()],
        "lift cross %": [ci_text(r.lift_cross, r.lift_cross_low, r.lift_cross_high) for r in top.itertuples()]}),
        "The mode baseline as an arm of the model: posterior accuracy of the self-predictor, the cross-predictor "
        "and the mode baseline from one fit, their differences (points) and the normalised lift over the mode, "
        f"(accuracy - mode) / (100 - mode), with {IV}% intervals; each answer unit and property counts once. Where the "
        "mode is near 100% there is little headroom and the lift is unstable (large and wide). The "
        "self - cross row here weights the targets by their trials, like the pooled row of @tbl-advantage.",
        "tbl-arms")

    out["calibration"] = calibration_table(t("mad"))
    dif = t("mad_difference") if (Path(analysis) / "tables" / "mad_difference.parquet").exists() else pd.DataFrame()
    if len(dif):
        d_raw, d_ren = (dif[dif["variant"] == v].set_index("target") for v in ("raw", "renormalised"))
        targets = sorted(d_raw.index, key=lambda x: (x == "pooled", x))
        out["calibration_difference"] = md_table(pd.DataFrame([{
            "target": tg, "MAD self": fmt(d_raw.loc[tg, "mad_self"]), "MAD cross": fmt(d_raw.loc[tg, "mad_cross"]),
            "self minus cross [95% paired bootstrap]": ci_text(d_raw.loc[tg, "difference"], d_raw.loc[tg, "low"],
                                                           d_raw.loc[tg, "high"]),
            "renormalised meta": (ci_text(d_ren.loc[tg, "difference"], d_ren.loc[tg, "low"], d_ren.loc[tg, "high"])
                                  if tg in d_ren.index else "n/a")} for tg in targets]),
            "Calibration after training, self minus cross MAD (negative: self-prediction better calibrated). Each "
            "bootstrap resample draws the items once and takes both predictors' points on them.",
            "tbl-calibration-difference")

    cells_path = Path(analysis) / "tables" / "mad_cells.parquet"
    if cells_path.exists():
        c = pd.read_parquet(cells_path)
        c = c[c["target"] == "pooled"]
        if len(c):
            def arm(r, a):
                est = getattr(r, a)
                return ci_text(est, getattr(r, f"{a}_low"), getattr(r, f"{a}_high")) if known(est) else "n/a"
            out["calibration_cells"] = md_table(pd.DataFrame([{
                "task": r.task + (" (o)" if r.original else ""), "property": r.property, "items": count_text(r.items),
                "points self / cross": f"{count_text(r.trained_self_points)} / {count_text(r.trained_cross_points)}",
                "before training (self)": arm(r, "untrained_self"),
                "MAD self": arm(r, "trained_self"), "MAD cross": arm(r, "trained_cross"),
                "self minus cross [95% paired bootstrap]": ci_text(r.difference, r.low, r.high) if known(r.difference)
                                                           else "n/a"}
                for r in c.itertuples()]),
                "Calibration on the original's scope: the MAD of each held-out task and property alone (the points of "
                "that cell only, binned as above), pooled over targets, with 95% item-bootstrap intervals; after "
                f"training unless marked. (o): the original's headline calibration cell. n/a: fewer than {MAD_BINS} points. "
                "A bootstrap over a handful of items has few distinct resamples, and the binned MAD is biased under "
                "resampling (see the MAD table), so an interval can touch or leave out its estimate: with few "
                "items, read the intervals as rough.",
                "tbl-calibration-cells")
    out.setdefault("calibration_cells", "")  # the manuscript includes the file whatever the run measured

    track_path = Path(analysis) / "tables" / "behaviour_tracking.parquet"
    if track_path.exists():
        tr = pd.read_parquet(track_path)
        perm = t("behaviour_permutation")
        n_perm = int(perm["n_perm"].iloc[0])
        inf = {(r.model, r.statistic): r.n_informative for r in perm.itertuples()}
        ex_path = Path(analysis) / "tables" / "behaviour_excess.parquet"
        ex = ({(r.model, r.statistic): r for r in pd.read_parquet(ex_path).itertuples()} if ex_path.exists() else {})

        def excess(model: str) -> str:
            r = ex.get((model, "excess_new_minus_old"))
            return ci_text(r.estimate, r.low, r.high, scale=100) if r is not None else "n/a"

        out["behaviour"] = md_table(pd.DataFrame([{
            "model": r.model, "changed items": count_text(r.n),
            "P(pred = new) %": fmt(100 * r.p_new), "leave-one-out mode (new) %": fmt(100 * r.loo_mode_new),
            "p (new)": fmt_prob(r.p_value_new),
            "P(pred = old) %": fmt(100 * r.p_old), "leave-one-out mode (old) %": fmt(100 * r.loo_mode_old),
            "p (old)": fmt_prob(r.p_value_old),
            "new - old beyond the null, points [95%]": excess(r.model),
            "items the null can test (new / old)": f"{count_text(inf.get((r.model, 'p_new'), 0))} / "
                                                   f"{count_text(inf.get((r.model, 'p_old'), 0))}",
            "compliant after / before %": f"{fmt(100 * r.compliant)} / {fmt(100 * r.compliant_before)}",
            "before: new / old %": f"{fmt(100 * r.before_new)} / {fmt(100 * r.before_old)}"}
            for r in tr.itertuples()]),
            "Behaviour change, on the items whose property changed (old and new answers compliant and different): "
            "how often the changed model's prediction equals its new and its old behaviour, each beside its "
            "leave-one-out mode baseline (the most common value among the other changed items of the model x task "
            "x property, or, for an item alone there, of the same model and property in the other tasks), and the "
            "permutation p-value (predictions shuffled among the items of each model x task x property, an item's "
            f"properties together, {n_perm:,} shuffles; one-sided). 'Beyond the null': P(new) - P(old) minus its "
            "mean over the shuffles, 0 in expectation for predictions unrelated to both behaviours (95% item "
            "bootstrap). A shuffle can change the count only in "
            "a cell whose changed items hold different behaviour values and different predictions; the items in "
            "such cells are counted, and with none the p-value is n/a (the null is one point). A non-compliant "
            "prediction matches neither behaviour; 'compliant' is the share of compliant predictions after and "
            "before the change. 'Before': the prediction of M1' before the change.", "tbl-behaviour")

    orig_path = Path(analysis) / "tables" / "behaviour_original.parquet"
    if orig_path.exists():
        og = pd.read_parquet(orig_path)
        out["behaviour_original"] = md_table(pd.DataFrame([{
            "model": r.model, "changed items, compliant prediction": count_text(r.n),
            "P(pred = new) %": ci_text(r.p_new, r.low_new, r.high_new, scale=100),
            "mode baseline (new) %": fmt(100 * r.baseline_new),
            "P(pred = old) %": ci_text(r.p_old, r.low_old, r.high_old, scale=100),
            "mode baseline (old) %": fmt(100 * r.baseline_old),
            "one mode over all properties, new / old %": (
                f"{fmt(100 * r.micro_baseline_new)} / {fmt(100 * r.micro_baseline_old)}"
                if hasattr(r, "micro_baseline_new") else "n/a")} for r in og.itertuples()]),
            "Behaviour change as the original computes it (a labelled variant of the table above): the changed items "
            "whose prediction is compliant (the original drops non-compliant answers before computing anything), "
            "the match rates on them with Wilson 95% intervals, and the mode baselines recomputed on those items "
            "per model and property, pooled over tasks (the two \"among\" properties as one, as the original "
            "renames them); last column: the baselines of the original's paper figure for its pooled bar, one mode "
            "over all of a model's properties at once.", "tbl-behaviour-original")

    diagnostics = _diagnostics(metrics)
    diag_rows = [{"model": name, "max r_hat": f"{d['r_hat_max']:.2f}", "min bulk ESS": count_text(d["ess_bulk_min"]),
                  "min tail ESS": count_text(d["ess_tail_min"]) if "ess_tail_min" in d else "n/a",
                  "min E-BFMI": f"{d['bfmi_min']:.2f}" if d.get("bfmi_min") is not None else "n/a",
                  "divergences": str(d["divergences"]),
                  "steps / draw": f"{d['leapfrog_steps_mean']:.0f}" if "leapfrog_steps_mean" in d else "n/a",
                  "at max tree depth %": (f"{100 * d['tree_depth_max_share']:.0f}"
                                          if "tree_depth_max_share" in d else "n/a"),
                  "draws x chains": f"{d['draws']} x {d['chains']}",
                  "target acceptance": (_target_acceptance(d["target_accept"], "diverged" in d)
                                        if "target_accept" in d else "n/a")}
                 for name, d in diagnostics.items()]
    depth = next((d["max_tree_depth"] for d in diagnostics.values() if "max_tree_depth" in d), None)
    depth_text = f" of {depth} ({2**depth - 1:,} steps)" if depth else ""
    out["diagnostics"] = md_table(pd.DataFrame(diag_rows),
                                   "Sampler diagnostics of every Bayesian model of experiments 1-3 (the "
                                   "prior-sensitivity refits and the concept-injection and mirror-test fits pass "
                                   "the same gate and give their draws in their own tables and sections), over "
                                   "every free variable (the "
                                   f"stage refuses to publish a fit with r_hat > {RHAT_MAX:g}, bulk or tail ESS < {ESS_MIN}, "
                                   f"E-BFMI < {BFMI_MIN:g} in a chain, or any divergence; a fit that missed only on "
                                   "r_hat or ESS was sampled once more with twice the draws and tuning steps, "
                                   "as its draws show, and a fit with divergent transitions once more at a "
                                   "higher target acceptance, as its target acceptance shows). Steps / draw: "
                                   "mean leapfrog steps per draw; 'at max tree depth': the share of "
                                   f"draws whose trajectory stopped at NUTS's maximum depth{depth_text}, "
                                   "an efficiency warning that the gate does not act on.", "tbl-diagnostics")

    out["comparison"] = md_table(_comparison(acc, metrics, reference),
                                  f"The original study's reported results ({reference['source']}; models: "
                                  f"{reference['models']}) beside this run's. Ours: raw accuracies and shares "
                                  "with 95% Wilson intervals; the advantage and the behaviour difference as "
                                  f"posterior means with {IV}% intervals; MADs with 95% bootstrap intervals over "
                                  "items.", "tbl-comparison")

    manifests = sorted(manifests, key=lambda m: (m["split"], m["name"]))
    ds = pd.DataFrame([{"dataset": m["name"], "version": m["version"], "split": m["split"],
                        "items": count_text(m["n_items"]), "family": m["family"].replace("_", " "),
                        "licence": m["licence"]} for m in manifests])
    hashes = "\n".join(f"- {m['name']} {m['version']}: `{m['release_sha256']}`" for m in manifests)
    out["datasets"] = (md_table(ds, "The task datasets this run used. Each is cited by its version and its "
                                     "release sha256 (listed below the table), which covers the version, the "
                                     "licence and every byte of the items.", "tbl-datasets")
                       + "\nRelease sha256 of each dataset:\n\n" + hashes + "\n"
                       + ("\nThe other experiments' datasets (of those this run used: the policy-report questions, "
                          "concept injection, the mirror test), cited the same way:\n\n"
                          + "\n".join(f"- {m['name']} {m['version']} ({m['licence']}): `{m['release_sha256']}`"
                                      for m in sorted(experiments, key=lambda m: m["name"])) + "\n"
                          if experiments else ""))
    return out


def calibration_table(mad: pd.DataFrame) -> str:
    """The MAD table (raw and renormalised meta distributions, per target and pooled, by condition and kind)."""
    keys = ["target", "condition", "kind"]
    raw = mad[mad["variant"] == "raw"].set_index(keys)
    ren = mad[mad["variant"] == "renormalised"].set_index(keys)
    order = sorted(raw.index, key=lambda k: (k[0] == "pooled", k[0], k[1] != "trained", k[2] != "self"))

    def outside(r) -> bool:  # the percentile interval leaves out its estimate (it is shown as it is, not shifted)
        return not (r["low"] <= r["mad"] <= r["high"])

    def mad_ci(r) -> str:
        return ci_text(r["mad"], r["low"], r["high"]) + (" (a)" if outside(r) else "")

    rows = [{
        "target": k[0], "condition": k[1], "kind": k[2],
        "MAD [95% bootstrap]": mad_ci(raw.loc[k]),
        "MAD, renormalised meta": mad_ci(ren.loc[k]) if k in ren.index else "n/a",
        "bins": str(int(raw.loc[k, "bins"])), "points": count_text(raw.loc[k, "points"]),
        "items": count_text(raw.loc[k, "items"])} for k in order]
    marked = any(outside(r) for _, r in pd.concat([raw, ren]).iterrows())
    return md_table(pd.DataFrame(rows),
        "Calibration as the original study measures it: mean absolute difference (x100) between binned "
        f"object-level and meta-level probabilities ({MAD_BINS} equal-frequency bins with tied probabilities kept "
        f"together, so possibly fewer; top-{TOP_BEHAVIOURS} sampled behaviours), per target model and pooled. The meta-level "
        "probabilities keep the mass the predictor puts outside the options (the paper's); the renormalised "
        "column is the sensitivity variant. Intervals: percentile bootstrap over items."
        + (" (a): the interval leaves out the estimate. The binned MAD of a resample is biased (resampling "
           "moves the bin edges and repeats items), so most resamples can lie on one side of the estimate: such an "
           "interval gives the spread of the resamples, not bounds centred on the estimate." if marked else ""), "tbl-calibration")


def _comparison(acc: pd.DataFrame, metrics: dict, ref: dict) -> pd.DataFrame:
    """Our side of the comparison table, from ``accuracy_by_target`` (raw accuracies, as the original reports
    them) and the metrics."""
    trained = acc[acc["condition"] == "trained"]

    def wilson(r) -> str:
        return ci_text(r.accuracy, r.wilson_low, r.wilson_high, 100)

    def accs(kind):  # each beside the mode baseline of the same scored answers, which the original's numbers lack
        d = trained[trained["kind"] == kind].sort_values("target")
        return "; ".join(f"{r.predictor} on {r.target}: {wilson(r)}% (mode baseline {fmt(100 * r.mode_baseline)}%)"
                         for r in d.itertuples())

    self_ = acc[acc["kind"] == "self"].set_index(["target", "condition"])  # one row per target and condition
    targets = sorted(set(self_.xs("untrained", level="condition").index)
                     & set(self_.xs("trained", level="condition").index))

    ours = {
        "self_after": accs("self"),
        "cross_after": accs("cross"),
        "training": "; ".join(f"{tg}: {wilson(self_.loc[(tg, 'untrained')])}% -> {wilson(self_.loc[(tg, 'trained')])}% "
                              f"(mode baseline {fmt(100 * self_.loc[(tg, 'untrained'), 'mode_baseline'])}% -> "
                              f"{fmt(100 * self_.loc[(tg, 'trained'), 'mode_baseline'])}%)"
                              for tg in targets),
        "advantage": "overall " + interval_text(metrics["advantage"]["overall"]) + " points; " + "; ".join(
            f"predicting {tg}: {interval_text(v)}" for tg, v in sorted(metrics["advantage"]["by_target"].items())),
    }
    mad = metrics.get("calibration", {}).get("mad", {})
    if "trained_self" in mad and "trained_cross" in mad:
        ours["calibration"] = (f"MAD self {interval_text(mad['trained_self'], 'mad')}, cross "
                               f"{interval_text(mad['trained_cross'], 'mad')} (pooled over targets)")
        dif = metrics["calibration"].get("mad_difference", {}).get("pooled")
        if dif:
            ours["calibration"] += f"; self minus cross {interval_text(dif, 'difference')} (paired)"
    b = metrics.get("behaviour", {}).get("model")
    pooled = metrics.get("behaviour", {}).get("tracking", {}).get("pooled")
    if pooled:  # raw shares (Wilson intervals), beside the raw mode baselines of the same items
        share = {side: ci_text(v["share"], v["low"], v["high"], 100)
                 for side, v in ((s, metrics["behaviour"][f"share_{s}"]) for s in ("new", "old"))}
        ours["behaviour"] = (f"new {share['new']}% vs old {share['old']}% of changed items "
                             f"(leave-one-out mode baselines: new {fmt(pooled['loo_mode_new'])}%, "
                             f"old {fmt(pooled['loo_mode_old'])}%)")
        ex = metrics["behaviour"].get("excess", {}).get("pooled_excess_new_minus_old")
        if ex:
            ours["behaviour"] += f"; new minus old beyond the permutation null {interval_text(ex, 'estimate')} points"
        if b:
            ours["behaviour"] += f"; difference new minus old {interval_text(b['new_minus_old'])} points (model)"
    rows = [{"quantity": r["quantity"], "original study": r["paper"], "this run": ours.get(key, "not run")}
            for key, r in ref["rows"].items()]
    return pd.DataFrame(rows)

