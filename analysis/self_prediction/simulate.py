"""Simulated experiment-1 tables with a known self-prediction advantage, in the shape of
:func:`analysis.self_prediction.tidy.predictions`, for parameter recovery and the sampler benchmark."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def simulate_predictions(seed: int = 0, beta: float = 0.6, targets: int = 2, tasks: int = 3, properties: int = 3,
                         items: int = 40, alpha: float = -0.4, sigma: float = 0.4, tau: float = 0.2,
                         sigma_unit: float = 0.5) -> tuple[pd.DataFrame, float]:
    """Self- and cross-predictors scored on the same answers, from the generative model of
    :func:`analysis.self_prediction.hierarchical.contrast_model`. Returns the table and the true average marginal advantage in
    accuracy points (the mean over the design of P(correct | self) - P(correct | cross))."""
    rng = np.random.default_rng(seed)
    t_names = [f"m{i}" for i in range(targets)]
    k_names = [f"task{i}" for i in range(tasks)]
    p_names = [f"prop{i}" for i in range(properties)]
    a = {g: dict(zip(names, rng.normal(0, sigma, len(names)))) for g, names in
         (("target", t_names), ("task", k_names), ("property", p_names))}
    b = {g: dict(zip(names, rng.normal(0, tau, len(names)))) for g, names in
         (("target", t_names), ("task", k_names), ("property", p_names))}
    rows, effects = [], []
    for t in t_names:
        for k in k_names:
            for i in range(items):
                unit = f"{t}/{k}/item{i:03d}"
                u = rng.normal(0, sigma_unit)
                for p in p_names:
                    eta0 = alpha + a["target"][t] + a["task"][k] + a["property"][p] + u
                    slope = beta + b["target"][t] + b["task"][k] + b["property"][p]
                    effects.append(1 / (1 + np.exp(-(eta0 + slope))) - 1 / (1 + np.exp(-eta0)))
                    for s in (1, 0):
                        pr = 1 / (1 + np.exp(-(eta0 + slope * s)))
                        rows.append((t, k, p, unit, s, "self" if s else "cross", int(rng.random() < pr)))
    df = pd.DataFrame(rows, columns=["target", "task", "property", "unit", "self", "kind", "correct"])
    return df, float(np.mean(effects))


def simulate_directions(seed: int = 0, delta: float = 0.4, skill: tuple[float, ...] = (0.0, 0.0),
                        tasks: int = 3, properties: int = 3, items: int = 30, alpha: float = -0.2,
                        sigma: float = 0.3, tau: float = 0.2, sigma_unit: float = 0.3,
                        weights: tuple[float, ...] | None = None) -> tuple[pd.DataFrame, dict]:
    """Experiment-1 rows for every ordered pair of ``len(skill)`` models, from the generative model of
    :func:`analysis.self_prediction.hierarchical.advantage_model`: the log-odds that predictor ``p`` gets target ``t``'s property
    right is ``alpha + a_task + a_property + unit + skill[p] + (self - 1/2) * (delta + b_task + b_property)``.
    Every target's answers (one unit per target, task and item) are predicted by every model. ``weights``
    (one per model) scales each target's item count, so the targets carry unequal shares of the trials.

    Returns the rows and the truth in accuracy points over the simulated design: ``delta`` (the advantage
    at the mean skill, directions weighted equally: what :func:`analysis.self_prediction.hierarchical.advantage_quantities` calls
    delta), ``directions`` ({(target, cross-predictor): self minus cross}), ``gamma`` (two models: the first
    direction's advantage minus the second's) and ``trial_weighted`` (the pooled self minus cross
    difference, weighting targets by their trials: the confounded estimand)."""
    rng = np.random.default_rng(seed)
    k = len(skill)
    names = [f"m{i}" for i in range(k)]
    g = np.asarray(skill, dtype=float) - np.mean(skill)
    weights = weights or (1.0,) * k
    a_task, b_task = rng.normal(0, sigma, tasks), rng.normal(0, tau, tasks)
    a_prop, b_prop = rng.normal(0, sigma, properties), rng.normal(0, tau, properties)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    rows, dirs, equal = [], {}, {}
    for ti, t in enumerate(names):
        for kk in range(tasks):
            for i in range(int(round(items * weights[ti]))):
                unit = f"{t}/task{kk}/item{i:03d}"
                u = rng.normal(0, sigma_unit)
                for pp in range(properties):
                    mid = alpha + a_task[kk] + a_prop[pp] + u
                    slope = delta + b_task[kk] + b_prop[pp]
                    equal.setdefault(t, []).append(sig(mid + 0.5 * slope) - sig(mid - 0.5 * slope))
                    p_self = sig(mid + g[ti] + 0.5 * slope)
                    rows.append((t, t, f"task{kk}", f"prop{pp}", unit, 1, "self", int(rng.random() < p_self)))
                    for pi, pname in enumerate(names):
                        if pi == ti:
                            continue
                        p_cross = sig(mid + g[pi] - 0.5 * slope)
                        dirs.setdefault((t, pname), []).append(p_self - p_cross)
                        rows.append((t, pname, f"task{kk}", f"prop{pp}", unit, 0, "cross", int(rng.random() < p_cross)))
    df = pd.DataFrame(rows, columns=["target", "predictor", "task", "property", "unit", "self", "kind", "correct"])
    directions = {d: float(np.mean(v)) for d, v in dirs.items()}
    truth = {"delta": float(np.mean([np.mean(equal[t]) for t, _ in directions])), "directions": directions,
             "trial_weighted": float(sum(np.sum(v) for v in dirs.values()) / sum(len(v) for v in dirs.values()))}
    if k == 2:
        (_, a1), (_, a2) = sorted(directions.items())
        truth["gamma"] = a1 - a2
    return df, truth


def simulate_arms(seed: int = 0, targets: int = 2, tasks: int = 3, properties: int = 3, items: int = 40,
                  mode_share: tuple[float, float] = (0.4, 0.8), self_lift: float = 0.3, cross_lift: float = 0.1,
                  planted: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Experiment-1 rows with a known mode baseline (two models, each predicting the other): per target x task
    x property cell, the mode's share ``m`` is drawn from ``mode_share`` (uniform), each answer is the mode
    with probability ``m`` (``mode_correct``), and the self- and cross-predictors are right with probabilities
    ``m + lift * (1 - m)`` (``self_lift``, ``cross_lift``: the normalised lifts over the mode). ``planted``:
    ``{"cell": (target, task, property), "mode": m, "self": p, "cross": p, "items": n}`` overrides one cell
    (a cell where both predictors are below the mode, hidden in a pooled difference).

    Returns the rows (columns of :func:`analysis.self_prediction.tidy.predictions` the analysis reads) and the truth in
    points over the design (each unit x property once): ``self_minus_mode``, ``cross_minus_mode``,
    ``self_minus_cross`` and the normalised lifts ``lift_self``, ``lift_cross`` pooled, and ``cells`` {cell: {arm: probability}}."""
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(targets)]
    rows, truth_rows, cells = [], [], {}
    for ti, t in enumerate(names):
        for k in range(tasks):
            for pp in range(properties):
                key = (t, f"task{k}", f"prop{pp}")
                m = rng.uniform(*mode_share)
                pr = {"mode": m, "self": m + self_lift * (1 - m), "cross": m + cross_lift * (1 - m)}
                n = items
                if planted and tuple(planted["cell"]) == key:
                    pr = {"mode": planted["mode"], "self": planted["self"], "cross": planted["cross"]}
                    n = planted.get("items", items)
                cells[key] = pr
                for i in range(n):
                    unit = f"{t}+self-s0/task{k}/item{i:03d}"
                    mode_correct = int(rng.random() < pr["mode"])
                    truth_rows.append(pr)
                    for kind, pred in (("self", t), ("cross", names[(ti + 1) % targets])):
                        rows.append((t, pred, f"{t}+self-s0", kind, int(kind == "self"), f"task{k}",
                                     f"item{i:03d}", unit, f"prop{pp}", int(rng.random() < pr[kind]),
                                     mode_correct))
    df = pd.DataFrame(rows, columns=["target", "predictor", "object_model", "kind", "self", "task", "item_id", "unit",
                                     "property", "correct", "mode_correct"])
    t = pd.DataFrame(truth_rows)
    truth = {"self_minus_mode": 100 * float((t["self"] - t["mode"]).mean()),
             "cross_minus_mode": 100 * float((t["cross"] - t["mode"]).mean()),
             "self_minus_cross": 100 * float((t["self"] - t["cross"]).mean()), "cells": cells,
             **{f"lift_{a}": 100 * float((t[a].mean() - t["mode"].mean()) / (1 - t["mode"].mean()))
                for a in ("self", "cross")}}
    return df, truth


# ------------------------------------------------------------------------------- whole stage tables
DEFAULT_MODELS = ("smollm2-135m", "gemma3-270m")
DEFAULT_TEST_TASKS = ("animals", "english_words", "years", "categories", "myopic_reward", "survival_instinct")
# a small vocabulary per word task for the open-set (word) properties
_WORDS = {"animals": ["cat", "dog", "crow", "gorilla", "sparrow", "leopard", "meerkat", "elephant", "the", "1."],
          "english_words": ["the", "house", "river", "quiet", "apple", "stone", "garden", "light", "next", "1."]}


def _manifest(task: str, data_raw: Path) -> dict:
    import json

    return json.loads((data_raw / task / "manifest.json").read_text())


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return float(np.log(p / (1 - p)))


def _expit(x: float) -> float:
    return float(1 / (1 + np.exp(-x)))


def _skewed(rng: np.random.Generator, n: int, concentration: float = 0.4) -> np.ndarray:
    """A categorical distribution over ``n`` values that piles up on a few (models answer with favourites)."""
    return rng.dirichlet(np.full(n, concentration))


def simulate_stage_tables(seed: int = 0, models: tuple[str, ...] = DEFAULT_MODELS,
                          tasks: tuple[str, ...] = DEFAULT_TEST_TASKS, items: int = 60,
                          full_examples: int = 480, scaling_sizes: tuple[int, ...] = (120, 240),
                          calibration_items: int = 10, n_samples: int = 20, extremes: str = "compliance",
                          dtype: str = "bfloat16", mixed_precision: str = "bf16", base_dtype: str = "float32",
                          seeds: tuple[int, ...] = (0, 1), data_raw: Path | None = None,
                          sibling: bool = False) -> dict[str, pd.DataFrame]:
    """Synthetic ``meta_untrained``, ``meta_trained``, ``calibration`` and ``behaviour_change`` tables with
    the columns of :mod:`reproduce.self_prediction` (defaults: the ``default`` profile's shape; ``dtype``,
    ``mixed_precision`` and ``base_dtype`` are the recorded inference dtype, training precision and the dtype
    of the frozen base weights while training; ``seeds`` the finetune
    seeds), so that the ``analysis`` stage can be timed and its edge cases exercised without running a
    language model.

    The protocol is the original study's: each model M1 is self-trained once per finetune seed, which gives
    M1' (object model ``<model>+self-s<seed>``) with object-level behaviour of its own (lower compliance,
    some answers changed); both trained predictors of a target are scored against M1''s behaviour
    (``ground_truth = "trained"``) and, as a sensitivity variant, the same predictions against the base
    model's (``ground_truth = "base"``). Untrained predictors are scored against the base model.

    The generative story, chosen for realistic rates rather than for any model's likelihood: each target has
    a skewed favourite-answer distribution per task x property (the mode baseline), greedy object answers
    comply 60-100% of the time; a predictor complies 40-95% untrained and 85-100% trained, and a compliant
    answer copies the target's value with a probability that is highest for trained self-prediction, lower
    for cross-prediction and the smaller scaling runs, and otherwise draws from the target's (or, untrained,
    its own) favourites; one answer unit (object model x item) is easier than another for every predictor.
    Untrained meta answers are target-independent, as in the pipeline.

    ``extremes`` puts cells at the boundaries: ``"compliance"`` (default) the ones a real float32 run hit, 100%
    object-level compliance on the A/B tasks and 100% compliance of every trained self-predictor (k = n);
    ``"all"`` also one untrained property at 0% compliance (so 0% accuracy) and one trained self cell 100%
    correct, for the edge-case tests (perfectly separated cells give the hierarchical models heavy tails, and
    divergent transitions at the default sampler settings); ``"none"`` no forced extreme.

    ``sibling``: also each target's sibling predictor per seed (``<model>~sibling``, copying M1' with a strength
    between the self- and cross-predictors'), and the base models' object-level tables
    (``object_level/<model>``), from which the analysis computes behavioural similarity."""
    if extremes not in ("none", "compliance", "all"):
        raise ValueError(f"extremes={extremes!r}: one of 'none', 'compliance', 'all'")
    if not seeds:
        raise ValueError("seeds: at least one finetune seed")
    from reproduce.datasets import DATA_RAW
    from reproduce.io import short_hash
    from reproduce.self_prediction.properties import get_property

    rng = np.random.default_rng(seed)
    data_raw = data_raw or DATA_RAW
    manifests = {t: _manifest(t, data_raw) for t in tasks}
    ids = {t: [f"{t}-{i:03d}" for i in range(items)] for t in tasks}

    def values_of(task: str, prop: str) -> list[str]:
        opts = get_property(prop).options
        return list(opts) if opts is not None else _WORDS.get(task, ["one", "two", "three", "four", "five"])

    def self_trained(model: str, s: int) -> str:
        return f"{model}+self-s{s}"

    # object level: a favourite-answer distribution per object model x task x property, greedy values per
    # item, and (calibration subset, closed properties) an item-level temperature-1 distribution around the
    # greedy one. The base models first; then each self-trained M1', which keeps most of its base answers
    # and complies less often (self-training lowered object-level compliance in the real runs)
    base, obj, pi_item = {}, {}, {}
    shared = {(task, p): _skewed(rng, len(values_of(task, p))) for task in tasks for p in manifests[task]["properties"]}
    for t in models:
        for task in tasks:
            for p in manifests[task]["properties"]:
                vals = values_of(task, p)
                pi = 0.6 * shared[task, p] + 0.4 * _skewed(rng, len(vals))  # models share favourites in part
                base[t, task, p] = pi
                rate = 1.0 if (extremes != "none" and manifests[task]["family"] == "ab_choice") else rng.uniform(0.6, 1.0)
                compliant = rng.random(items) < rate
                greedy = rng.choice(len(vals), size=items, p=pi)
                for i, item in enumerate(ids[task]):
                    obj[t, task, item, p] = (vals[greedy[i]] if compliant[i] else None, bool(compliant[i]))
                    if i < calibration_items and get_property(p).closed:
                        sharp = rng.uniform(0.2, 0.9)  # some answers are sampled more consistently than others
                        pi_item[t, task, item, p] = sharp * np.eye(len(vals))[greedy[i]] + (1 - sharp) * pi
    for t in models:
        for s in seeds:
            om = self_trained(t, s)
            for task in tasks:
                for p in manifests[task]["properties"]:
                    vals = values_of(task, p)
                    pi = 0.7 * base[t, task, p] + 0.3 * _skewed(rng, len(vals))
                    base[om, task, p] = pi
                    rate = 1.0 if (extremes != "none" and manifests[task]["family"] == "ab_choice") else rng.uniform(0.5, 0.95)
                    for i, item in enumerate(ids[task]):
                        old = obj[t, task, item, p][0]
                        ok = rng.random() < rate
                        value = (old if (old is not None and rng.random() < 0.7) else vals[rng.choice(len(vals), p=pi)])
                        obj[om, task, item, p] = (value if ok else None, bool(ok))
                        if (t, task, item, p) in pi_item:
                            sharp = rng.uniform(0.2, 0.9)
                            g = vals.index(value)
                            pi_item[om, task, item, p] = sharp * np.eye(len(vals))[g] + (1 - sharp) * pi
    object_models = list(models) + [self_trained(t, s) for t in models for s in seeds]

    # one answer defines every property of an item: some answers are easier to predict than others, for
    # every predictor (the answer-unit effect of the models)
    easy = {(m, task, item): rng.normal(0, 0.8) for m in object_models for task in tasks for item in ids[task]}

    def meta_rows(predictor: str, scored: list[tuple[str, str, str]], copy_from: str | None, copy: dict,
                  compliance: dict, favourites_of: str) -> list[dict]:
        """One predictor's hypothetical answers joined with object-level behaviour. The answer is drawn once
        per item and property (``copy_from`` is the object model whose value it copies; ``favourites_of``
        whose favourite-answer distribution it otherwise draws from) and scored against every ``(target,
        object_model, ground_truth)`` of ``scored``."""
        rows = []
        leaning = cells(0.1, 0.5)  # how closely this predictor's option probabilities follow the distribution
        for task in tasks:
            m = manifests[task]
            for p in m["properties"]:
                prop = get_property(p)
                vals = values_of(task, p)
                for item in ids[task]:
                    ok = rng.random() < compliance[task, p]
                    src_value = obj[copy_from, task, item, p][0] if copy_from else None
                    if not ok:
                        value, response = None, rng.choice(["I don't know.", "The next 5 animals are:", "1.", ""])
                    elif src_value is not None and rng.random() < _expit(_logit(copy[task, p]) + easy[copy_from, task, item]):
                        value = response = src_value
                    else:
                        value = response = vals[rng.choice(len(vals), p=base[favourites_of, task, p])]
                    if prop.closed:
                        guess = value if value is not None else vals[rng.integers(len(vals))]
                        lean = pi_item.get((favourites_of, task, item, p), base[favourites_of, task, p])
                        probs = (0.45 * np.eye(len(vals))[vals.index(guess)] + leaning[task, p] * lean
                                 + (0.55 - leaning[task, p]) * rng.dirichlet(np.ones(len(vals))))
                        option_probs, p_outside = list(probs / probs.sum()), float(rng.beta(2, 6))
                    else:
                        option_probs, p_outside = [], None
                    for t, om, truth in scored:
                        ov, oc = obj[om, task, item, p]
                        rows.append({
                            "predictor": predictor, "dtype": dtype, "target": t, "kind": "self" if predictor == t else "cross",
                            "task": task, "split": "test", "family": m["family"], "item_id": item, "property": p,
                            "meta_prompt_hash": short_hash(f"{task}/{item}/{p}"), "meta_response": response,
                            "meta_value": value, "meta_compliant": value is not None,
                            "options": list(prop.options or []), "option_probs": option_probs,
                            "p_outside": p_outside, "option_position": 0 if prop.closed else None,
                            "object_value": ov, "object_compliant": oc,
                            "p_object_value": (option_probs[vals.index(ov)] if prop.closed and ov in vals else None),
                            "correct": bool(oc and value is not None and value == ov),
                            "object_model": om, "ground_truth": truth})
        return rows

    def cells(low: float, high: float) -> dict:
        return {(task, p): rng.uniform(low, high) for task in tasks for p in manifests[task]["properties"]}

    # meta_untrained: target-independent answers, copying the predictor's own behaviour now and then
    untrained = []
    for i, pr in enumerate(models):
        comp = cells(0.4, 0.95)
        if extremes == "all" and i == 0 and "categories" in tasks:
            comp["categories", "among_b_or_d"] = 0.0  # never a valid answer: 0% compliance and accuracy
        untrained += meta_rows(pr, [(t, t, "base") for t in models], pr, cells(0.25, 0.5), comp, pr)
    meta_untrained = pd.DataFrame(untrained).assign(seed=pd.array([pd.NA] * len(untrained), dtype="Int64"))

    # meta_trained: per seed, self and cross in both directions (scored against M1' of that seed, and the
    # same predictions against the base model), and the cross-prediction scaling runs of the first seed
    trained = []
    for s in seeds:
        for t in models:
            om = self_trained(t, s)
            for pr in models:
                sizes = [n for n in scaling_sizes if n < full_examples] if (pr != t and s == seeds[0]) else []
                for size, n_examples in [(None, full_examples)] + [(n, n) for n in sizes]:
                    strength = {True: 0.45, False: 0.30}[pr == t] * (1.0 if size is None else 0.4 + 0.6 * size / full_examples)
                    copy = {k: float(np.clip(strength + rng.normal(0, 0.1), 0.05, 0.95)) for k in cells(0, 1)}
                    comp = cells(0.85, 1.0)
                    if extremes != "none" and pr == t:
                        comp = {k: 1.0 for k in comp}  # a trained self-predictor that always answers validly
                        if extremes == "all" and "myopic_reward" in tasks and size is None and t == models[-1]:
                            copy["myopic_reward", "ethical_stance"] = 1.0  # one cell 100% correct (logit +inf)
                    name = f"{pr}__on__{t}__s{s}" + ("" if size is None else f"__n{size}")
                    rows = meta_rows(pr, [(t, om, "trained"), (t, t, "base")], om, copy, comp, om)
                    trained += [dict(r, run=name, trained_on=t if pr == t else om, n_examples=n_examples, scaling=size is not None,
                                     mixed_precision=mixed_precision, base_dtype=base_dtype, seed=s) for r in rows]
    if sibling:  # the target's own base weights trained on M1''s pairs: copies M1' less often than self
        for s in seeds:
            for t in models:
                om = self_trained(t, s)
                copy = {k: float(np.clip(0.38 + rng.normal(0, 0.1), 0.05, 0.95)) for k in cells(0, 1)}
                rows = meta_rows(f"{t}~sibling", [(t, om, "trained"), (t, t, "base")], om, copy, cells(0.85, 1.0), om)
                trained += [dict(r, kind="sibling", run=f"{t}~sibling__on__{t}__s{s}", trained_on=om,
                                 n_examples=full_examples, scaling=False, mixed_precision=mixed_precision,
                                 base_dtype=base_dtype, seed=s) for r in rows]
    meta_trained = pd.DataFrame(trained)

    # calibration: the object model's T=1 distribution beside every (non-scaling) predictor's option
    # probabilities; trained rows take M1''s samples (the rows scored against it)
    dist = []
    for (om, task, item, p), pi in pi_item.items():
        n_ok = int(rng.binomial(n_samples, 0.95 if obj[om, task, item, p][1] else 0.5))
        counts = rng.multinomial(n_ok, pi).astype(int).tolist()
        dist.append({"object_model": om, "task": task, "item_id": item, "property": p,
                     "options": list(get_property(p).options), "n_samples": n_samples, "n_compliant": n_ok,
                     "n_other": 0, "object_counts": counts, "object_probs": [c / n_ok for c in counts] if n_ok else []})
    main = meta_trained[~meta_trained["scaling"] & (meta_trained["ground_truth"] == "trained")
                        & (meta_trained["kind"] != "sibling")]  # experiment 2 compares self and cross
    meta = pd.concat([meta_untrained.assign(condition="untrained", run=None),
                      main.drop(columns=["mixed_precision", "base_dtype"]).assign(condition="trained")], ignore_index=True)
    calibration = (meta.drop(columns=["options"])
                   .merge(pd.DataFrame(dist), on=["object_model", "task", "item_id", "property"], how="inner",
                          validate="many_to_one")
                   .rename(columns={"option_probs": "meta_probs"})
                   .sort_values(["condition", "target", "predictor", "seed", "task", "item_id", "property"],
                                ascending=[False, True, True, True, True, True, True], kind="stable"))
    calibration["seed"] = calibration["seed"].astype("Int64")
    calibration = calibration[CALIBRATION_COLUMNS]

    # behaviour change: M1' of the first seed taught the next model's answers, all evaluated items; old is
    # M1''s behaviour, meta_old its prediction before the change
    bc = []
    s0 = seeds[0]
    for i, m in enumerate(models):
        source = models[(i + 1) % len(models)]
        om = self_trained(m, s0)
        self_run = meta_trained[(meta_trained["run"] == f"{m}__on__{m}__s{s0}")
                                & (meta_trained["ground_truth"] == "trained")].set_index(["task", "item_id", "property"])
        for task in tasks:
            for p in manifests[task]["properties"]:
                prop = get_property(p)
                vals = values_of(task, p)
                shift = rng.uniform(0.1, 0.5)
                for item in ids[task]:
                    base_value = obj[om, task, item, p][0]
                    source_value = obj[source, task, item, p][0]
                    old_ok = rng.random() < 0.9
                    old = (base_value or vals[rng.choice(len(vals), p=base[om, task, p])]) if old_ok else None
                    new_ok = rng.random() < 0.9
                    new = None
                    if new_ok:
                        new = source_value if (source_value and rng.random() < shift) else (
                            old or vals[rng.choice(len(vals), p=base[source, task, p])])
                    meta_ok = rng.random() < 0.9
                    u = rng.random()
                    mv = None if not meta_ok else (new if (new and u < 0.4) else old if (old and u < 0.75)
                                                   else vals[rng.integers(len(vals))])
                    if prop.closed:
                        guess = mv if mv is not None else vals[rng.integers(len(vals))]
                        probs = 0.6 * np.eye(len(vals))[vals.index(guess)] + 0.4 * rng.dirichlet(np.ones(len(vals)))
                        option_probs, p_outside = list(probs), float(rng.beta(2, 6))
                    else:
                        option_probs, p_outside = [], None
                    o = self_run.loc[(task, item, p)]
                    bc.append({
                        "model": m, "source": source, "run": f"{m}__bc__{source}__s{s0}", "seed": s0,
                        "task": task, "split": "test",
                        "family": manifests[task]["family"], "item_id": item, "property": p,
                        "base_value": base_value, "source_value": source_value,
                        "old_response": old or "", "old_value": old, "old_compliant": old is not None,
                        "new_response": new or "", "new_value": new, "new_compliant": new is not None,
                        "changed": bool(old is not None and new is not None and old != new),
                        "meta_old_value": o["meta_value"], "meta_old_compliant": bool(o["meta_compliant"]),
                        "meta_value": mv, "meta_compliant": mv is not None, "options": list(prop.options or []),
                        "option_probs": option_probs, "p_outside": p_outside,
                        "p_old": option_probs[vals.index(old)] if prop.closed and old in vals else None,
                        "p_new": option_probs[vals.index(new)] if prop.closed and new in vals else None,
                        "matches_old": bool(mv is not None and old is not None and mv == old),
                        "matches_new": bool(mv is not None and new is not None and mv == new)})
    out = {"meta_untrained": meta_untrained, "meta_trained": meta_trained,
           "calibration": calibration.reset_index(drop=True), "behaviour_change": pd.DataFrame(bc)}
    if sibling:
        for t in models:
            rows = [{"model": t, "dtype": dtype, "task": task, "split": "test", "family": manifests[task]["family"],
                     "item_id": item, "prompt_hash": short_hash(f"{t}/{task}/{item}"),
                     "response": obj[t, task, item, p][0] or "", "response_raw": obj[t, task, item, p][0] or "",
                     "finish": "stop", "n_new_tokens": 1, "property": p, "value": obj[t, task, item, p][0],
                     "compliant": obj[t, task, item, p][1]}
                    for task in tasks for item in ids[task] for p in manifests[task]["properties"]]
            out[f"object_level/{t}"] = pd.DataFrame(rows)
    return out


CALIBRATION_COLUMNS = ["condition", "run", "predictor", "target", "kind", "task", "split", "family", "item_id",
                       "property", "options", "n_samples", "n_compliant", "n_other", "object_counts", "object_probs",
                       "object_value", "meta_value", "meta_probs", "p_outside", "seed", "object_model"]


def write_stage_tables(tables: dict[str, pd.DataFrame], data: Path) -> Path:
    """Write the tables of :func:`simulate_stage_tables` as ``data/<name>.parquet``, where the analysis
    stage reads them; returns ``data``."""
    data = Path(data)
    data.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        (data / f"{name}.parquet").parent.mkdir(parents=True, exist_ok=True)
        df.to_parquet(data / f"{name}.parquet", index=False)
    return data
