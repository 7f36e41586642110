"""Simulated concept-injection tables with known truth (for the parameter-recovery tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.injection.design import COLUMNS, INJECTED
from analysis.bayes import latent_probability as _latent_probability, logit as _logit, sigmoid as _sigmoid  # noqa: F401


def detection_truth_logit(condition: str, layer_fraction: float, strength: float, fp_rate: float) -> float:
    """The simulated detection logit at the average concept: the false-positive rate plus a detection
    probability that rises with log strength and peaks about two thirds of the way through the model, a
    concept's vector more detectable than its negation or a random vector. A weak injection is as good as
    none: its cells sit at the false-positive rate (with the default 1%, mostly all-zero in 50 trials)."""
    gain = {"concept": 1.6, "negated": 1.25, "random": 1.0}[condition]
    g = -5.0 + gain * np.log2(strength) - 10.0 * (layer_fraction - 0.62) ** 2
    return float(_logit(fp_rate + (1.0 - fp_rate) * _sigmoid(g)))


def simulate_detection(seed: int = 0, model: str = "sim", n_concepts: int = 50, n_layers: int = 30,
                       layers: tuple[int, ...] = (10, 15, 20), strengths: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0),
                       conditions: tuple[str, ...] = INJECTED, n_controls: int = 50, n_bias_questions: int = 20,
                       concept_sd: float = 0.8, question_sd: float = 0.8, fp_rate: float = 0.01,
                       yes_control: float = 0.15, yes_gain: float = 0.3) -> tuple[pd.DataFrame, dict]:
    """A detection table with known truth, in the schema of :data:`COLUMNS` ``["detection"]``.

    ``detect`` rows: every concept in every (condition, layer, strength) cell once (the random condition's
    vector has no concept: ``concept`` None), with logit :func:`detection_truth_logit` + a (condition,
    concept) effect ``~ Normal(0, concept_sd)``; ``n_controls`` control trials at ``fp_rate``.
    ``yes_bias`` rows: ``n_bias_questions`` questions, each once per injected cell and once without
    injection, P(yes) = ``sigmoid(logit(yes_control) + yes_gain * log2(strength) + question effect)``.

    ``truth``: ``cells`` (condition, layer_fraction, strength, p [average concept], p_obs [averaged over the
    realised concept effects], diff = p - fp_rate), ``fp_rate``, ``yes_bias`` (cells with p and diff =
    p - yes_control at the average question), ``yes_control``."""
    rng = np.random.default_rng(seed)
    concepts = [f"concept{j:02d}" for j in range(n_concepts)]
    effects = {c: rng.normal(0.0, concept_sd, n_concepts) for c in conditions if c != "random"}
    recs, truth_cells = [], []
    for cond in conditions:
        for layer in layers:
            lf = layer / n_layers
            for s in strengths:
                eta0 = detection_truth_logit(cond, lf, s, fp_rate)
                eff = effects.get(cond, np.zeros(n_concepts))
                p_yes, det = _latent_probability(rng, eta0 + eff)
                for j in range(n_concepts):
                    recs.append(("detect", "q_detect", cond, concepts[j] if cond != "random" else None, layer, lf, s,
                                 p_yes[j], det[j]))
                truth_cells.append({"condition": cond, "layer_fraction": lf, "strength": s, "p": _sigmoid(eta0),
                                    "p_obs": float(_sigmoid(eta0 + eff).mean()),
                                    "diff": _sigmoid(eta0) - fp_rate})
    p_yes, det = _latent_probability(rng, np.full(n_controls, _logit(fp_rate)))
    recs += [("detect", "q_detect", "control", None, -1, np.nan, 0.0, p_yes[j], det[j]) for j in range(n_controls)]
    q_eff = rng.normal(0.0, question_sd, n_bias_questions)
    questions = [f"bias{j:02d}" for j in range(n_bias_questions)]
    truth_bias = []
    for cond in conditions:
        for layer in layers:
            lf = layer / n_layers
            for s in strengths:
                eta0 = _logit(yes_control) + yes_gain * np.log2(s)
                p_yes, det = _latent_probability(rng, eta0 + q_eff)
                for j in range(n_bias_questions):
                    concept = concepts[j % n_concepts] if cond != "random" else None
                    recs.append(("yes_bias", questions[j], cond, concept, layer, lf, s, p_yes[j], det[j]))
                truth_bias.append({"condition": cond, "layer_fraction": lf, "strength": s, "p": _sigmoid(eta0),
                                   "diff": _sigmoid(eta0) - yes_control})
    p_yes, det = _latent_probability(rng, _logit(yes_control) + q_eff)
    recs += [("yes_bias", questions[j], "control", None, -1, np.nan, 0.0, p_yes[j], det[j])
             for j in range(n_bias_questions)]
    rows = pd.DataFrame(recs, columns=["question", "question_id", "condition", "concept", "layer", "layer_fraction",
                                       "strength", "p_yes", "detected"])
    rows["p_outside"] = rng.beta(1.0, 30.0, len(rows))
    rows = rows.assign(model=model, detected=rows["detected"].astype(bool), layer=rows["layer"].astype(int))
    truth = {"cells": pd.DataFrame(truth_cells), "fp_rate": fp_rate, "yes_bias": pd.DataFrame(truth_bias),
             "yes_control": yes_control}
    return rows[COLUMNS["detection"]], truth


def identification_truth_logit(layer_fraction: float, strength: float, chance: float) -> float:
    """The simulated identification logit at the average concept: chance plus an identification probability
    rising with log strength and peaking about two thirds of the way through the model; a weak injection
    leaves the model at chance."""
    g = -4.2 + 1.3 * np.log2(strength) - 10.0 * (layer_fraction - 0.62) ** 2
    return float(_logit(chance + (1.0 - chance) * _sigmoid(g)))


def simulate_identification(seed: int = 0, model: str = "sim", n_concepts: int = 50, n_layers: int = 30,
                            layers: tuple[int, ...] = (10, 15, 20),
                            strengths: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0), concept_sd: float = 0.8,
                            control_rate: float | None = None) -> tuple[pd.DataFrame, dict]:
    """An identification table with known truth: every concept in every (layer, strength) cell once,
    ``correct`` with logit :func:`identification_truth_logit` + a concept effect ``~ Normal(0, concept_sd)``,
    and one control row per concept at ``control_rate`` (default: chance, ``1 / n_concepts``: without
    injection the model's pick has nothing to do with the slot's concept); ``n_concepts`` candidates. ``rank`` and ``p_true``
    are consistent with ``correct`` (rank 1 and the largest probability when correct).

    ``truth``: ``cells`` (layer_fraction, strength, p, p_obs, vs_chance, vs_control), ``control``,
    ``chance``."""
    rng = np.random.default_rng(seed)
    concepts = [f"concept{j:02d}" for j in range(n_concepts)]
    eff = rng.normal(0.0, concept_sd, n_concepts)
    chance = 1.0 / n_concepts
    control_rate = chance if control_rate is None else control_rate

    def outcome(eta):
        correct = rng.random(len(eta)) < _sigmoid(eta)
        rank = np.where(correct, 1, rng.integers(2, n_concepts + 1, len(eta)))
        p_true = np.where(correct, rng.uniform(0.5, 0.99, len(eta)), rng.uniform(0.0, 0.45, len(eta)) / rank)
        return correct, rank, p_true

    recs, truth = [], []
    for layer in layers:
        lf = layer / n_layers
        for s in strengths:
            eta0 = identification_truth_logit(lf, s, chance)
            correct, rank, p_true = outcome(eta0 + eff)
            recs += [("q_identify", "concept", concepts[j], layer, lf, s, p_true[j], rank[j], correct[j])
                     for j in range(n_concepts)]
            truth.append({"layer_fraction": lf, "strength": s, "p": _sigmoid(eta0),
                          "p_obs": float(_sigmoid(eta0 + eff).mean()), "vs_chance": _sigmoid(eta0) - chance,
                          "vs_control": _sigmoid(eta0) - control_rate})
    correct, rank, p_true = outcome(np.full(n_concepts, _logit(control_rate)))
    recs += [("q_identify", "control", concepts[j], -1, np.nan, 0.0, p_true[j], rank[j], correct[j])
             for j in range(n_concepts)]
    rows = pd.DataFrame(recs, columns=["question_id", "condition", "concept", "layer", "layer_fraction", "strength",
                                       "p_true", "rank", "correct"])
    rows = rows.assign(model=model, n_concepts=n_concepts, correct=rows["correct"].astype(bool),
                       rank=rows["rank"].astype(int), layer=rows["layer"].astype(int))
    return rows[COLUMNS["identification"]], {"cells": pd.DataFrame(truth), "control": control_rate, "chance": chance}


def simulate_prefill(seed: int = 0, model: str = "sim", n_pairs: int = 60, n_layers: int = 30,
                     cells: tuple[tuple[int, float], ...] = ((20, 4.0),), p_control: float = 0.85,
                     p_matching: float = 0.4, p_random: float = 0.8, pair_sd: float = 1.0
                     ) -> tuple[pd.DataFrame, dict]:
    """A prefill table with known truth: ``n_pairs`` (sentence, prefilled word) pairs, each once without
    injection and once per (layer, strength) cell with the matching and with a random concept injected;
    P(accident) = ``sigmoid(logit(p_<condition>) + pair effect)``, pair effects ``~ Normal(0, pair_sd)``
    (``p_*`` are at the average pair, the same in every cell). ``p_matching = p_control = p_random`` is the
    null. ``truth``: ``conditions`` {condition: p}, ``contrasts`` {"matching - control": ...,
    "matching - random": ...}."""
    rng = np.random.default_rng(seed)
    eff = rng.normal(0.0, pair_sd, n_pairs)
    words = [f"word{j:02d}" for j in range(n_pairs)]
    p = {"control": p_control, "matching": p_matching, "random": p_random}
    recs = []
    settings = [("control", -1, np.nan, 0.0)] + [(c, layer, layer / n_layers, s) for layer, s in cells
                                                 for c in ("matching", "random")]
    for cond, layer, lf, s in settings:
        prob, acc = _latent_probability(rng, _logit(p[cond]) + eff)
        recs += [(f"pair{j:02d}", words[j], cond, layer, lf, s, prob[j], acc[j]) for j in range(n_pairs)]
    rows = pd.DataFrame(recs, columns=["pair_id", "word", "condition", "layer", "layer_fraction", "strength",
                                       "p_accident", "accident"])
    rows = rows.assign(model=model, accident=rows["accident"].astype(bool), layer=rows["layer"].astype(int))
    truth = {"conditions": p, "contrasts": {"matching - control": p_matching - p_control,
                                            "matching - random": p_matching - p_random}}
    return rows[COLUMNS["prefill"]], truth


def intention_truth(layer_fraction: float) -> tuple[float, float]:
    """The simulated mean cosines (think, don't think) at a layer fraction: both peak mid-to-late, thinking
    about the word more than not thinking about it, and not thinking about it still above baseline."""
    bump = np.exp(-(((layer_fraction - 0.6) / 0.2) ** 2))
    return 0.04 + 0.12 * bump, 0.03 + 0.05 * bump


def simulate_intention(seed: int = 0, model: str = "sim", n_sentences: int = 24, n_words: int = 12,
                       n_layers: int = 32, layers: tuple[int, ...] = tuple(range(3, 33, 3)), word_sd: float = 0.02,
                       sentence_sd: float = 0.01, shift_sd: float = 0.01, noise_sd: float = 0.015,
                       df: float = 5.0) -> tuple[pd.DataFrame, dict]:
    """An intention table with known truth: ``n_sentences`` sentences, sentence ``i`` carrying word
    ``i % n_words``, each written under both instructions, the cosine read at each of ``layers``:
    ``intention_truth`` + word and sentence intercepts + the sentence's think shift ``~ Normal(0,
    shift_sd)`` (added for think, as ``+/- 1/2`` of it) + Student-t noise (``df``, scale ``noise_sd``).
    ``truth``: ``layers`` (layer, layer_fraction, think, dont_think, diff at the average sentence)."""
    rng = np.random.default_rng(seed)
    w_eff, s_eff = rng.normal(0, word_sd, n_words), rng.normal(0, sentence_sd, n_sentences)
    shift = rng.normal(0, shift_sd, n_sentences)
    recs, truth = [], []
    for layer in layers:
        lf = layer / n_layers
        think, dont = intention_truth(lf)
        truth.append({"layer": layer, "layer_fraction": lf, "think": think, "dont_think": dont, "diff": think - dont})
        for i in range(n_sentences):
            base = w_eff[i % n_words] + s_eff[i]
            for instr, m, sign in (("think", think, 0.5), ("dont_think", dont, -0.5)):
                y = m + base + sign * shift[i] + noise_sd * rng.standard_t(df)
                recs.append((f"s{i:02d}", f"word{i % n_words:02d}", instr, layer, lf, y))
    rows = pd.DataFrame(recs, columns=["sentence_id", "word", "instruction", "layer", "layer_fraction", "cosine"])
    rows = rows.assign(model=model)
    return rows[COLUMNS["intention"]], {"layers": pd.DataFrame(truth)}
