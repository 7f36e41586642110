"""Simulated mirror-test tables with known truth (for the parameter-recovery tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.bayes import sigmoid as _sigmoid
from analysis.bayes import latent_probability as _latent_probability, logit as _logit
from analysis.mirror.design import COLUMNS, CONDITIONS, KINDS, LEVELS


#: how salient each kind is, relative to the others (insertion and capitalisation stand out; a dropped letter
#: is easy to read past), and how easily a model takes each up
SALIENCE = {"insertion": 1.0, "substitution": 0.6, "swap": 0.5, "drop": 0.4, "capitalisation": 1.2}
IMITABILITY = {"insertion": 1.5, "substitution": 0.5, "swap": 0.5, "drop": 0.5, "capitalisation": 1.2}
#: the simulated baseline share of each kind's pattern in clean replies (for substitution, swap and drop the
#: pattern is a typo of that kind of a word of the clean texts)
BASELINE = {"insertion": 0.004, "substitution": 0.01, "swap": 0.01, "drop": 0.01, "capitalisation": 0.005}
#: the simulated mean surprise (nats per token) per unit of level, by kind
SURPRISE_PER_LEVEL = {"insertion": 1.5, "substitution": 2.5, "swap": 2.0, "drop": 1.8, "capitalisation": 3.0}


def _conditions(kinds, levels) -> list[tuple[str, object, float]]:
    return ([("control", None, 0.0)] + [("corrupted", k, float(l)) for k in kinds for l in levels]
            + [("other", None, np.nan)])


def _per_model(value, models) -> dict:
    """A per-model parameter: a scalar (the same for every model) or one value per model, in order."""
    vals = np.broadcast_to(np.asarray(value, dtype=float), (len(models),))
    return dict(zip(models, map(float, vals)))


def binary_truth_logit(condition: str, kind: str | None, level: float, control: float, other: float,
                       gain: float, sign: float = 1.0) -> float:
    """The simulated logit at the average conversation and turn: ``logit(control)``; ``logit(other)``; or
    ``logit(control) + sign * gain * salience(kind) * level / 0.6`` for a corrupted history."""
    if condition == "control":
        return float(_logit(control))
    if condition == "other":
        return float(_logit(other))
    return float(_logit(control) + sign * gain * SALIENCE[kind] * level / 0.6)


def simulate_turns(seed: int = 0, models: tuple[str, ...] = ("model_a", "model_b"), n_scripts: int = 40,
                   kinds: tuple[str, ...] = KINDS, levels: tuple[float, ...] = LEVELS,
                   turns: tuple[int, ...] = (2, 3, 4), script_sd: float = 0.6, model_script_sd: float = 0.3,
                   notice_control=(0.04, 0.02), notice_other=(0.12, 0.03), notice_gain=(3.0, 1.0),
                   notice_slope=(0.0, 0.3, 0.15), yes_control=(0.85, 0.7), yes_other=(0.35, 0.7),
                   yes_gain=(3.0, 0.0), yes_slope=(0.0, -0.2, -0.1), imitation_gain=(2.5, 0.5),
                   words: float = 30.0, g_words: float = 4.0, reply_sd: float = 0.7,
                   copied_share: float = 0.5) -> tuple[pd.DataFrame, dict]:
    """A turns table with known truth, in the schema of :data:`COLUMNS` ``["turns"]``: every model answers
    ``n_scripts`` scripts under every condition (control, each (kind, level) of ``kinds`` x ``levels``, other)
    at every turn of ``turns``.

    ``notices``: Bernoulli with logit :func:`binary_truth_logit` (``notice_control``, ``notice_other``,
    ``notice_gain``; per model) + ``slope[condition] * (turn - mean turn)`` (``notice_slope``: control,
    corrupted, other, per turn) + a script effect ``~ Normal(0, script_sd)`` + a model x script effect ``~
    Normal(0, model_script_sd)``. ``p_yes``: the same with ``yes_*`` and the gain lowering P(yes)
    (``yes_gain`` 0: a model that does not recognise alteration), drawn as a continuous probability whose
    thresholding at 0.5 has that probability. Pattern counts: ``n`` eligible words per reply and kind
    (Poisson, mean ``g_words`` for insertion [words with a g], ``words`` otherwise), ``k`` binomial with
    ``sigmoid(logit(BASELINE[kind]) + gain + conversation effects + reply effect)``, the gain
    ``imitation_gain * IMITABILITY[kind] * level / 0.6`` for the row's own kind in a corrupted history, 0
    otherwise (the conversation effects are those of noticing, halved; the reply effect ``~ Normal(0,
    reply_sd)``, one per reply and kind); ``pattern_copied`` binomial with ``copied_share`` of ``k`` for the row's
    own kind after a corrupted history, 0 otherwise.

    ``truth``: ``noticing`` and ``recognition`` (``model, condition, kind, level, p`` at the average
    conversation and turn, ``diff`` = p minus the model's control), ``imitation`` (baselines as ``condition
    control`` per kind, and corrupted cells: ``p`` of the typical reply at the average conversation, ``diff``
    = p minus the baseline), ``turn`` (``model, condition, noticing, recognition``: slopes on the logit scale
    per turn). "Average conversation" is the population's (effect 0); the fits' is the average of the
    observed conversations, a little off it (the 40 scripts' mean effect has a standard deviation of
    ``script_sd / sqrt(40)``), which the intervals absorb."""
    rng = np.random.default_rng(seed)
    scripts = [f"script{j:02d}" for j in range(n_scripts)]
    s_eff = rng.normal(0.0, script_sd, n_scripts)
    ms_eff = {m: rng.normal(0.0, model_script_sd, n_scripts) for m in models}
    par = {name: _per_model(v, models) for name, v in
           dict(nc=notice_control, no=notice_other, ng=notice_gain, yc=yes_control, yo=yes_other, yg=yes_gain,
                ig=imitation_gain).items()}
    nslope, yslope = dict(zip(CONDITIONS, notice_slope)), dict(zip(CONDITIONS, yes_slope))
    tbar = float(np.mean(turns))
    recs, t_notice, t_yes, t_imit = [], [], [], []
    for m in models:
        conv = s_eff + ms_eff[m]
        for kind in kinds:
            t_imit.append({"model": m, "condition": "control", "kind": kind, "level": 0.0, "p": BASELINE[kind],
                           "diff": np.nan})
        for cond, kind, level in _conditions(kinds, levels):
            eta_n = binary_truth_logit(cond, kind, level, par["nc"][m], par["no"][m], par["ng"][m])
            eta_y = binary_truth_logit(cond, kind, level, par["yc"][m], par["yo"][m], par["yg"][m], sign=-1.0)
            ctl_n, ctl_y = par["nc"][m], par["yc"][m]
            t_notice.append({"model": m, "condition": cond, "kind": kind, "level": level, "p": _sigmoid(eta_n),
                             "diff": _sigmoid(eta_n) - ctl_n})
            t_yes.append({"model": m, "condition": cond, "kind": kind, "level": level, "p": _sigmoid(eta_y),
                          "diff": _sigmoid(eta_y) - ctl_y})
            if cond == "corrupted":
                gain = par["ig"][m] * IMITABILITY[kind] * level / 0.6
                p = _sigmoid(_logit(BASELINE[kind]) + gain)
                t_imit.append({"model": m, "condition": cond, "kind": kind, "level": level, "p": p,
                               "diff": p - BASELINE[kind]})
            for t in turns:
                notices = rng.random(n_scripts) < _sigmoid(eta_n + nslope[cond] * (t - tbar) + conv)
                p_yes, _ = _latent_probability(rng, eta_y + yslope[cond] * (t - tbar) + conv)
                counts = {}
                for k in KINDS:
                    n = rng.poisson(g_words if k == "insertion" else words, n_scripts)
                    gain = par["ig"][m] * IMITABILITY[k] * level / 0.6 if (cond == "corrupted" and k == kind) else 0.0
                    pi = _sigmoid(_logit(BASELINE[k]) + gain + 0.5 * conv + rng.normal(0.0, reply_sd, n_scripts))
                    counts[k] = (rng.binomial(n, pi), n)
                eligible = rng.poisson(words * (t - 1), n_scripts)
                changed = (np.round(level * eligible).astype(int) if cond == "corrupted"
                           else np.zeros(n_scripts, dtype=int))
                for j, s in enumerate(scripts):
                    rec = {"model": m, "script_id": s, "condition": cond, "kind": kind, "level": level, "turn": t,
                           "history_changed": int(changed[j]),
                           "history_eligible": int(eligible[j]) if cond == "corrupted" else 0,
                           "reply": f"simulated reply {m} {s} {t}", "notices": bool(notices[j]),
                           "first_person": int(rng.poisson(2.0)), "third_person": int(rng.poisson(0.1)),
                           "judge_notices": np.nan, "p_yes": float(p_yes[j]), "p_outside": float(rng.beta(1, 30))}
                    for k in KINDS:
                        rec[f"pattern_k_{k}"], rec[f"pattern_n_{k}"] = int(counts[k][0][j]), int(counts[k][1][j])
                        # a share of the pattern words after a corrupted history of the same kind were shown there
                        rec[f"pattern_copied_{k}"] = (int(rng.binomial(counts[k][0][j], copied_share))
                                                      if cond == "corrupted" and k == kind else 0)
                    recs.append(rec)
    rows = pd.DataFrame(recs)
    rows["kind"] = rows["kind"].astype(object)
    turn = pd.DataFrame([{"model": m, "condition": c, "noticing": nslope[c], "recognition": yslope[c]}
                         for m in models for c in CONDITIONS])
    truth = {"noticing": pd.DataFrame(t_notice), "recognition": pd.DataFrame(t_yes),
             "imitation": pd.DataFrame(t_imit), "turn": turn}
    return rows[COLUMNS["turns"]], truth


def simulate_surprise(seed: int = 0, models: tuple[str, ...] = ("model_a", "model_b"), n_scripts: int = 40,
                      kinds: tuple[str, ...] = KINDS, levels: tuple[float, ...] = LEVELS,
                      scored: tuple[int, ...] = (1, 2, 3), model_scale=(1.0, 0.8), other=(0.6, 0.9),
                      script_sd: float = 0.1, reply_sd: float = 0.1, noise: float = 0.08, noise_per_level: float = 0.3,
                      df: float = 5.0) -> tuple[pd.DataFrame, dict]:
    """A surprise table with known truth, in the schema of :data:`COLUMNS` ``["surprise"]``: every model's
    replies to the assistant turns ``scored`` of ``n_scripts`` scripts, scored under every condition
    (control rows have surprise 0, as the stage writes them). The surprise of a corrupted reply is
    ``model_scale * SURPRISE_PER_LEVEL[kind] * level``, of another model's reply ``other`` (per model), plus a
    script effect (``script_sd``), a (model, script, turn) reply effect (``reply_sd``) and Student-t noise
    (``df``, scale ``noise + noise_per_level * level``; other: ``noise + 0.3 * noise_per_level``). ``changed``:
    ``round(level * n_tokens)`` words on corrupted rows (a reply taken to have one eligible word per token, so
    every corrupted reply is altered), 0 on the others.

    ``truth``: ``cells`` (``model, condition, kind, level, mean`` at the average conversation and reply)."""
    rng = np.random.default_rng(seed)
    scripts = [f"script{j:02d}" for j in range(n_scripts)]
    s_eff = rng.normal(0.0, script_sd, n_scripts)
    scale, oth = _per_model(model_scale, models), _per_model(other, models)
    recs, truth = [], []
    for m in models:
        r_eff = rng.normal(0.0, reply_sd, (n_scripts, len(scored)))
        clean = rng.normal(-1.5, 0.3, (n_scripts, len(scored)))
        n_tokens = rng.integers(10, 80, (n_scripts, len(scored)))
        for cond, kind, level in _conditions(kinds, levels):
            if cond == "control":
                mean, sd = 0.0, 0.0
            elif cond == "other":
                mean, sd = oth[m], noise + 0.3 * noise_per_level
            else:
                mean, sd = scale[m] * SURPRISE_PER_LEVEL[kind] * level, noise + noise_per_level * level
            if cond != "control":
                truth.append({"model": m, "condition": cond, "kind": kind, "level": level, "mean": mean})
            for j, s in enumerate(scripts):
                for i, t in enumerate(scored):
                    sur = 0.0 if cond == "control" else mean + s_eff[j] + r_eff[j, i] + sd * rng.standard_t(df)
                    recs.append({"model": m, "script_id": s, "condition": cond, "kind": kind, "level": level,
                                 "turn": t, "logprob": clean[j, i] - sur, "logprob_clean": clean[j, i],
                                 "surprise": sur, "n_tokens": int(n_tokens[j, i]),
                                 "changed": int(round(level * n_tokens[j, i])) if cond == "corrupted" else 0})
    rows = pd.DataFrame(recs)
    rows["kind"] = rows["kind"].astype(object)
    return rows[COLUMNS["surprise"]], {"cells": pd.DataFrame(truth)}
