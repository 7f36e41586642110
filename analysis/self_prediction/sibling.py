"""Experiment 1's sibling control: self-, sibling and cross-predictors of the same targets, and behavioural
similarity as a covariate.

The sibling of a model M1 and finetuning seed s is a second copy of M1's base weights trained on M1'(s)'s
train-task behaviour with the cross-predictor's pairs and settings and another training seed
(:class:`reproduce.self_prediction.runs.TrainingRun`), and scored, like the self- and cross-predictors, against
M1'(s)'s held-out behaviour. It has M1's architecture, pretraining and size, so whatever predicting skill comes
with the network, the self-predictor has too:

* ``self_minus_sibling``: what the self-predictor knows of M1'(s) beyond what the same weights, trained on the same
  kind of pairs, learn; it needs no assumption about predicting skill;
* ``sibling_minus_cross``: what sharing M1's network buys over another model; like self minus cross, it is an
  advantage at equal predicting skill only if that skill does not depend on the target (with two models the
  directions cannot tell the two apart);
* ``self_minus_cross``: the original contrast, from the analysis's advantage model.

Each new contrast is the advantage model (:func:`analysis.self_prediction.hierarchical.advantage_model`) fitted
to its two arms' rows, the first arm coded as ``self``, without predictor effects (each predictor belongs to one
target's arm, so its effect would be the contrast itself), through the convergence gate, and judged by the
analysis's rules (:func:`analysis.self_prediction.population.rule_verdicts`): the population estimand (a new task
and, with several seeds, a new finetuning run) overall and per target, and the conditional ones beside them.

Behavioural similarity: for every predictor, target answer and property, whether the predictor's own base
model, asked the object-level question, gives the same property value as the target's answer (a non-compliant
answer of the predictor's base counts as different). The sibling and the self-predictor share their base, so
they share this agreement; it is the "simulate yourself" baseline that the original study discusses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import analysis.self_prediction.hierarchical as M
import analysis.self_prediction.population as population
import analysis.self_prediction.tidy as tidy

ARMS = ("self", "sibling", "cross")
#: the contrasts fitted here, each (first arm, second arm); self minus cross is the analysis's advantage model
CONTRASTS = {"self_minus_sibling": ("self", "sibling"), "sibling_minus_cross": ("sibling", "cross")}
#: the sampler seed offsets of the contrasts' fits (the analysis's other fits use 0 to 9)
SEED_OFFSETS = {"self_minus_sibling": 40, "sibling_minus_cross": 41}
SIBLING_SUFFIX = "~sibling"


def base_of(predictor: str) -> str:
    """The base model whose weights a predictor was trained from (a sibling's is its model's)."""
    return predictor.removesuffix(SIBLING_SUFFIX)


def arm_rows(pred: pd.DataFrame) -> pd.DataFrame:
    """The full training runs' trained rows of every arm (``pred``: :func:`analysis.self_prediction.tidy.predictions`
    with ``sibling=True``), with their cell and ``arm`` (``self``, ``sibling`` or ``cross``)."""
    t = tidy.with_cell(tidy.main_trained(pred))
    return t.assign(arm=t["kind"].astype(str)).reset_index(drop=True)


def has_sibling(rows: pd.DataFrame) -> bool:
    """Whether every target has rows of all three arms."""
    arms = rows.groupby("target")["arm"].agg(lambda a: set(a))
    return bool(len(arms)) and all(set(ARMS) <= a for a in arms)


def pair_rows(rows: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    """The rows of two arms, coded as the advantage model takes them: ``self`` = 1 on ``first``, 0 on ``second``."""
    two = rows[rows["arm"].isin([first, second])].copy()
    two["self"] = (two["arm"] == first).astype(int)
    return two.reset_index(drop=True)


def contrast_data(rows: pd.DataFrame, name: str, groups: list[str]) -> M.ContrastData:
    """The advantage model's cells for the contrast ``name`` (:data:`CONTRASTS`), without predictor effects."""
    first, second = CONTRASTS[name]
    return M.advantage_data(pair_rows(rows, first, second), groups, predictor_effects=False)


def judged(rules: dict) -> dict:
    """One contrast's verdicts (:func:`analysis.self_prediction.population.rule_verdicts`), as the metrics keep
    them: ``population`` and ``conditional`` (mean, interval, P(> 0), verdict) and ``by_target``: per target and
    second-arm predictor, its population and conditional summaries."""
    by_target = []
    for (t, other), s in rules["population_directions"].items():
        c = rules["directions"][(t, other)]
        by_target.append({"target": t, "other": other, **{f"population_{k}": v for k, v in s.items()},
                          **{f"conditional_{k}": v for k, v in c.items()}})
    return {"population": dict(rules["population"]), "conditional": dict(rules["conditional"]),
            "by_target": by_target}


def fit_contrast(rows: pd.DataFrame, name: str, groups: list[str], settings, rope: float, seed: int) -> dict:
    """Fit the contrast ``name`` through the convergence gate and judge it: ``idata``, ``data``,
    ``diagnostics`` and ``metrics`` (:func:`judged`, with the diagnostics and the estimand)."""
    data = contrast_data(rows, name, groups)
    idata, diag = M.sample_gated(M.advantage_model(data), settings, name.replace("_", " "))
    metrics = {**judged(population.rule_verdicts(idata, data, rope, seed)),
               "estimand": population.headline_key(groups), "diagnostics": diag, "rope": rope,
               "arms": list(CONTRASTS[name])}
    return {"idata": idata, "data": data, "diagnostics": diag, "metrics": metrics}


def from_advantage(advantage: dict) -> dict:
    """Self minus cross as the analysis's advantage model gives it, in :func:`judged`'s shape."""
    pop = advantage["population"]
    by_target = [{"target": d["target"], "other": d["cross_predictor"],
                  **{f"population_{k}": d[f"population_{k}"] for k in ("mean", "low", "high", "p_positive")},
                  "population_verdict": d["population_verdict"],
                  **{f"conditional_{k}": d[k] for k in ("mean", "low", "high", "p_positive", "verdict")}}
                 for d in advantage["directions"]]
    return {"population": {k: pop[k] for k in ("mean", "low", "high", "p_positive", "verdict")},
            "conditional": {k: advantage["overall"][k] for k in ("mean", "low", "high", "p_positive", "verdict")},
            "by_target": by_target, "estimand": pop["estimand"], "arms": ["self", "cross"],
            "rope": advantage["rope"]}


# ---------------------------------------------------------------------------------------- similarity
def agreement(rows: pd.DataFrame, objects: pd.DataFrame) -> pd.Series:
    """Per row, whether the predictor's base model (:func:`base_of`) gave, at the object level, the same value
    of the row's property as the behaviour the row is scored against (``object_value``); a base answer that is
    missing or not compliant counts as different. ``objects``: object-level rows of the base models (``model,
    task, item_id, property, value, compliant``)."""
    own = objects[objects["compliant"].astype(bool)][["model", "task", "item_id", "property", "value"]]
    own = own.rename(columns={"model": "base", "value": "own_value"}).drop_duplicates(
        ["base", "task", "item_id", "property"])
    keyed = rows[["predictor", "task", "item_id", "property", "object_value"]].assign(
        base=rows["predictor"].map(base_of))
    m = keyed.merge(own, on=["base", "task", "item_id", "property"], how="left", validate="many_to_one")
    return pd.Series((m["own_value"].notna() & (m["own_value"] == m["object_value"])).to_numpy(), index=rows.index)


def similarity_table(rows: pd.DataFrame, objects: pd.DataFrame) -> pd.DataFrame:
    """One row per arm x predictor x target x finetuning seed x task x property: the meta-level accuracy and
    the object-level agreement (:func:`agreement`) over the same scored answers, and their count."""
    r = rows.assign(agree=agreement(rows, objects).astype(int))
    keys = ["arm", "predictor", "target", "object_model", "seed", "task", "property"]
    out = r.groupby(keys, sort=True, observed=True).agg(n=("correct", "size"), accuracy=("correct", "mean"),
                                                        agreement=("agree", "mean")).reset_index()
    return out


def agreement_model(rows: pd.DataFrame, objects: pd.DataFrame, alpha: float = 0.05) -> dict:
    """Does the self-prediction advantage exceed what behavioural similarity predicts? A binomial GLM of every arm's
    rows, ``correct ~ self + sibling + logit(agreement of the pair's cell) + C(target) + C(task) + C(property)``,
    standard errors clustered by item, beside the same model without the agreement term. The agreement of a
    predictor-target pair's cell is :func:`similarity_table`'s, pulled half an answer from 0 and 1 before the
    logit. Returns, in log-odds with (1 - alpha) intervals: ``self`` and ``sibling`` (each over cross) with and
    without agreement, and ``agreement`` (the slope)."""
    import statsmodels.api as sm

    from analysis.self_prediction.frequentist import independent_columns

    sim = similarity_table(rows, objects)
    keys = ["arm", "predictor", "target", "object_model", "seed", "task", "property"]
    r = rows.merge(sim[keys + ["n", "agreement"]], on=keys, how="left", validate="many_to_one")
    share = (r["agreement"] * r["n"] + 0.5) / (r["n"] + 1.0)
    r = tidy.with_item(r.assign(agreement_logit=np.log(share / (1 - share))))
    codes, _ = pd.factorize(r["item"], sort=True)
    out = {"rows": int(len(r)), "clusters": int(codes.max() + 1), "alpha": alpha}
    for label, extra in (("unadjusted", []), ("adjusted", ["agreement_logit"])):
        X = pd.get_dummies(r[["target", "task", "property"]].astype(str), drop_first=True, dtype=float)
        X.insert(0, "sibling", (r["arm"] == "sibling").astype(float).to_numpy())
        X.insert(0, "self", (r["arm"] == "self").astype(float).to_numpy())
        for i, col in enumerate(extra):
            X.insert(2 + i, col, r[col].to_numpy(float))
        X = independent_columns(sm.add_constant(X, has_constant="add"))
        fit = sm.GLM(r["correct"].astype(float).to_numpy(), X, family=sm.families.Binomial()).fit(
            cov_type="cluster", cov_kwds={"groups": codes})
        ci = fit.conf_int(alpha)
        out[label] = {name: {"log_odds": float(fit.params[name]), "low": float(ci.loc[name, 0]),
                             "high": float(ci.loc[name, 1]), "p_value": float(fit.pvalues[name])}
                      for name in ["self", "sibling", *extra] if name in fit.params}
    return out


# ---------------------------------------------------------------------------------------- the stage's part
def analyse(rows: pd.DataFrame, objects: pd.DataFrame | None, profile, groups: list[str], advantage: dict) -> dict:
    """The analysis stage's sibling section: both new contrasts fitted and judged (:func:`fit_contrast`), self
    minus cross from the analysis's ``advantage`` metrics (:func:`from_advantage`), and, with the base models'
    object-level rows (``objects``), the similarity table and the agreement model. Returns ``metrics``,
    ``tables`` and ``posteriors``."""
    from analysis.bayes import sampler_settings

    rope = profile.analysis.rope
    metrics: dict = {"contrasts": {}, "arms": list(ARMS)}
    posteriors, tables = {}, {}
    for name in CONTRASTS:
        fit = fit_contrast(rows, name, groups, sampler_settings(profile, SEED_OFFSETS[name]), rope, profile.seed)
        metrics["contrasts"][name] = fit["metrics"]
        posteriors[f"sibling_{name}"] = fit["idata"]
    metrics["contrasts"]["self_minus_cross"] = from_advantage(advantage)
    metrics["accuracy"] = [{"arm": a, "target": t, "n": int(len(g)), "accuracy": 100 * float(g["correct"].mean())}
                           for (t, a), g in rows.groupby(["target", "arm"], sort=True)]
    if objects is not None:
        tables["similarity"] = similarity_table(rows, objects)
        metrics["agreement"] = [{"arm": a, "target": t, "agreement": 100 * float(
            (g["agreement"] * g["n"]).sum() / g["n"].sum())}
            for (t, a), g in tables["similarity"].groupby(["target", "arm"], sort=True)]
        metrics["agreement_model"] = agreement_model(rows, objects)
    return {"metrics": metrics, "tables": tables, "posteriors": posteriors}
