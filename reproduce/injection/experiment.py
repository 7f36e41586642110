"""Introspective awareness by concept injection (Lindsey 2025), with exact measures first.

Every trial is a conversation from ``data_raw/concept_injection`` (the project's wording; swap in another by
editing the files and re-hashing, see the dataset card): a researcher explains that a "thought" may be
injected on some trials, the assistant acknowledges, and the trial question follows. Injections
(:mod:`reproduce.lm.steering`) start at the token just before the trial question's first token and continue
through every answer token (generated or teacher-forced).

Parts, one table each (one row per trial; columns in :data:`COLUMNS`):

* **detection**: the forced-choice question ("answer only yes or no"); ``p_yes`` is P(yes) / (P(yes) + P(no))
  from the next-token distribution at the answer's first content token (:class:`reproduce.lm.engine.Engine`),
  ``detected = p_yes > 0.5``. The question comes in the dataset's wordings (``wording``, ``w01``...): trial slot
  k of cell i (0 for the control trials) in wording k + i mod their number, so that wording is crossed with
  concept and cell. Conditions: ``control`` (no injection;
  one trial per concept slot), ``concept``,
  ``negated`` (minus the concept vector) and ``random`` (a seeded random direction of the same norm) at every
  layer x strength; ``yes_bias``: questions whose true answer is "no", under concept injection and without.
* **identification**: the open question with the answer prefilled up to "... It concerns the word"; every
  concept word's probability as the continuation, by teacher forcing (the sum of its tokens' log
  probabilities), normalised over the concept list. Rank and probability of the injected concept, against
  chance 1 / N and against the same trial without injection.
* **free text**: sampled answers to the open question, graded by rules (:mod:`reproduce.injection.graders`) and,
  optionally, a local judge model; coherence as the unsteered model's perplexity of the text.
* **prefill**: a sentence, the model's answer prefilled with an out-of-place word, then "did you mean that, or
  was it an accident?"; P(accident) normalised over the two one-word answers (both capitalisations), by
  teacher forcing. Conditions: ``control``, ``matching`` (the prefilled word's concept vector injected on the
  sentence's tokens) and ``random`` (another concept's vector on the same tokens).
* **steering**: a neutral question ("name one word") with the answer prefilled up to "The word is"; the concept
  word's log-probability as the continuation, by teacher forcing, with the concept vector injected at every
  cell and without (``control``): whether the cell's injection steers the model towards the concept at all.
* **intention**: "write {sentence}; think (do not think) about {word}", with the sentence as the assistant's
  answer; the cosine, at every layer, between the word's concept vector and the mean residual over the
  assistant's copy of the sentence (not the user's).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

import reproduce.injection.graders as graders
from reproduce.lm.judge import quoted
from reproduce.stage import run_judge
from reproduce.hardware import describe
from reproduce.config import Profile
from reproduce.lm.engine import derive_seed
from reproduce.errors import ProjectError
from reproduce.injection.catalog import load_dataset
from reproduce.injection.data import InjectionData
from reproduce.injection.two_turn import run_two_turn
from reproduce.io import stack_frames, write_stage_tables
from reproduce.schema import PROB, Col, Schema, cols
from reproduce.shards import ShardStore
from reproduce.lm.steering import (ConceptVectors, Injection, Steer, concept_vectors, decoder_layers, layer_at, span_mean_residuals,
                       token_span)

PARTS = ("detection", "identification", "freetext", "prefill", "intention", "steering", "two_turn", "lens")
_SITE = [Col("layer", "int", null=False), Col("layer_fraction", "float", range=PROB), Col("strength", "float")]
SCHEMAS = {  # one table per part, one row per trial
    "detection": Schema("injection/detection", [
        Col("model", "str", null=False), Col("question", "str", null=False, values=("detect", "yes_bias")),
        Col("question_id", "str", null=False), Col("wording", "str"), Col("condition", "str", null=False),
        Col("concept", "str"), *_SITE, Col("p_yes", "float", range=PROB), Col("p_outside", "float", range=PROB),
        Col("detected", "bool", null=False), Col("answer", "str")]),
    "steering": Schema("injection/steering", [
        Col("model", "str", null=False), Col("condition", "str", null=False, values=("control", "concept")),
        Col("concept", "str", null=False), *_SITE, Col("logprob", "float")]),
    "identification": Schema("injection/identification", [
        Col("model", "str", null=False), Col("question_id", "str", null=False), Col("condition", "str", null=False),
        Col("concept", "str"), *_SITE, Col("p_true", "float", range=PROB), Col("rank", "int", range=(1, float("inf"))),
        Col("correct", "bool", null=False), Col("n_concepts", "int"), Col("top_concept", "str")]),
    "freetext": Schema("injection/freetext", [
        Col("model", "str", null=False), Col("question_id", "str", null=False), Col("condition", "str", null=False),
        Col("concept", "str"), *_SITE, Col("sample", "int", null=False), Col("text", "str", null=False),
        *cols(["claims_detection", "names_concept", "detection_before_naming", "coherent"], "bool"),
        Col("perplexity", "float"), Col("judge_claims", "float", range=PROB), Col("judge_names", "float", range=PROB)]),
    "prefill": Schema("injection/prefill", [
        Col("model", "str", null=False), Col("pair_id", "str", null=False), Col("word", "str", null=False),
        Col("condition", "str", null=False, values=("control", "matching", "random")), Col("injected", "str"), *_SITE,
        Col("p_accident", "float", range=PROB), Col("accident", "bool", null=False)]),
    "intention": Schema("injection/intention", [
        Col("model", "str", null=False), Col("sentence_id", "str", null=False), Col("word", "str", null=False),
        Col("instruction", "str", null=False), Col("layer", "int", null=False), Col("layer_fraction", "float", range=PROB),
        Col("cosine", "float", range=(-1.0, 1.0))]),
    # the optional judge on the graders' labelled replies (empty without a judge)
    "judge_cases": Schema("injection/judge_cases", [
        Col("set", "str", null=False, values=("development", "held_out")), Col("case", "int", null=False),
        Col("text", "str", null=False), Col("concept", "str", null=False), Col("claims", "bool", null=False),
        Col("identifies", "bool", null=False), Col("judge_claims", "float", range=PROB),
        Col("judge_names", "float", range=PROB)]),
    "two_turn": Schema("injection/two_turn", [
        Col("model", "str", null=False), Col("condition", "str", null=False, values=("control", "concept", "random")),
        Col("concept", "str", null=False), *_SITE, Col("p_yes", "float", range=PROB), Col("logodds", "float"),
        Col("p_outside", "float", range=PROB), Col("lp_yes", "float", range=(-float("inf"), 0.0))]),
    "lens": Schema("injection/lens", [
        Col("model", "str", null=False), Col("condition", "str", null=False, values=("control", "concept", "random")),
        Col("concept", "str", null=False), *_SITE, Col("read_layer", "int", null=False),
        Col("read_fraction", "float", range=PROB), Col("concept_token", "str", null=False), Col("lp_concept", "float"),
        Col("logodds_yes", "float")]),
}
COLUMNS = {part: schema.columns for part, schema in SCHEMAS.items()}
DETECT_OPTIONS = ("yes", "no")


class InjectionError(ProjectError, ValueError):
    """A concept-injection setting that cannot run, with what to change."""


# --------------------------------------------------------------------------------------- the design
def select_concepts(data: InjectionData, wanted) -> list[str]:
    """The concepts a profile asks for (``None``: all; ``n``: the first n; a list: those, each checked)."""
    if wanted is None:
        return list(data.concepts)
    if isinstance(wanted, int):
        if not 2 <= wanted <= len(data.concepts):
            raise InjectionError(f"injection.concepts: {wanted} must be between 2 and {len(data.concepts)}")
        return list(data.concepts[:wanted])
    for w in wanted:
        data.concept_index(w)  # a DatasetError naming the word and the list
    if len(set(wanted)) != len(wanted) or len(wanted) < 2:
        raise InjectionError(f"injection.concepts must list at least two distinct concepts, got {wanted}")
    return list(wanted)


def trial_conversation(data: InjectionData, question: str) -> list[dict]:
    p = data.prompts
    return [{"role": "user", "content": p["preamble"]}, {"role": "assistant", "content": p["acknowledgement"]},
            {"role": "user", "content": question}]


def question_start(lm, messages: list[dict]) -> int:
    """The position of the token just before the last user turn's text (where injection starts)."""
    rendered = lm.format.render(messages)
    text = messages[-1]["content"]
    at = rendered.rindex(text)
    return max(0, token_span(lm, rendered, at, at + len(text))[0] - 1)


def answer_text(lm, word: str) -> str:
    """How an answer word continues the rendered prompt: right after a chat template's generation prompt, or
    after a space following the plain format's ``Answer:``."""
    return word if lm.format.kind == "chat" else " " + word


def assistant_span(lm, conv: list[dict], sentence: str) -> tuple[int, int]:
    """The token span of the assistant's copy of ``sentence`` (the last occurrence in the rendered
    conversation), not the user's copy in the instruction."""
    rendered = lm.format.render(conv)
    at = rendered.rindex(sentence)
    return token_span(lm, rendered, at, at + len(sentence))


def _vector(cv: ConceptVectors, condition: str, concept: str, layer: int, strength: float, seed: int,
            units: str = "residual_norm"):
    if condition == "concept":
        return cv.injection(concept, layer, strength, units=units)
    if condition == "negated":
        return cv.injection(concept, layer, strength, sign=-1.0, units=units)
    if condition == "random":
        return cv.random_injection(layer, strength, derive_seed(seed, "random-vector", concept, layer), units=units)
    raise InjectionError(f"unknown condition {condition!r}")


class Runner:
    """One model's concept-injection experiment."""

    def __init__(self, profile: Profile, data: InjectionData, lm, engine, store: ShardStore):
        cfg = profile.injection
        self.profile, self.cfg, self.data, self.lm, self.engine, self.store = profile, cfg, data, lm, engine, store
        self.concepts = select_concepts(data, cfg.concepts)
        self.n_layers = len(decoder_layers(lm.model))
        self.cells = [(f, layer_at(f, self.n_layers), float(s)) for f in cfg.layer_fractions for s in cfg.strengths]
        self.layers = sorted({layer for _, layer, _ in self.cells})
        self.seed = profile.seed
        self._cv: ConceptVectors | None = None

    def needed_words(self) -> list[str]:
        """Every word whose concept vector some trial uses: the selected concepts, the prefill words and the
        concepts injected as their random partners, the intentional-control words (in the dataset's order)."""
        need = set(self.concepts)
        need |= {s["injected"] for s in self.prefill_specs() if s["injected"]}
        need |= {it["word"] for it in self._intention_items()}
        return [w for w in self.data.concepts if w in need]

    def _intention_items(self) -> list[dict]:
        items = list(self.data.intention)
        return items if self.cfg.intention_sentences is None else items[:self.cfg.intention_sentences]

    @property
    def cv(self) -> ConceptVectors:
        if self._cv is None:
            self._cv = concept_vectors(self.lm, self.needed_words(), list(self.data.baselines),
                                       self.data.prompts["concept_prompt"], list(range(self.n_layers)),
                                       batch_size=self.profile.batch_size, progress=f"{self.lm.name} concept vectors")
        return self._cv

    def _one_call(self, specs: list[dict], run) -> pd.DataFrame:
        """Run ``specs`` in one engine call (every layer's injections in one steering, so the rows of all layers
        share decoding steps); ``run(specs)`` -> DataFrame, one row per spec (per sample) in the specs' order.
        The rows come back ordered by layer (the controls, layer -1, first), each layer's in the specs' order."""
        if not specs:
            return pd.DataFrame()
        return run(specs).sort_values("layer", kind="stable", ignore_index=True)

    def _steer(self, specs: list[dict], starts: list[int], ends: list[int | None] | None = None):
        """One injection per spec (``None`` for a control), each at its spec's layer. A spec that names the word
        it injects (``injected``: the prefill trials) injects that word's concept vector, in the ``matching``
        condition (the prefilled word) and in ``random`` (another concept, its partner); the detection trials'
        ``random`` condition injects a random direction of the concept vectors' norm instead."""
        inj = []
        for i, s in enumerate(specs):
            if s["condition"] == "control":
                inj.append(None)
                continue
            layer = s["layer"]
            kind = "concept" if s["condition"] == "matching" or s.get("injected") else s["condition"]
            vec = _vector(self.cv, kind, s["injected"] if "injected" in s else s["concept"], layer, s["strength"],
                          self.seed, self.cfg.strength_units)
            key = (s["condition"], s.get("injected", s["concept"]), layer, s["strength"])
            inj.append(Injection(vec, starts[i], None if ends is None else ends[i], key=key, layer=layer))
        return Steer(self.lm, None, inj)

    # ------------------------------------------------------------------------------- detection
    def detection_specs(self) -> list[dict]:
        p, specs = self.data.prompts, []
        words = p["trial_forced"]
        # slot k of cell i (0: the control trials, then the injected cells in order) is asked in wording k + i mod
        # their number: wording is crossed with concept and cell, so its effect is told apart from theirs
        trial = lambda k, i: words[(k + i) % len(words)].format(n=k + 1)  # noqa: E731
        wording = lambda k, i: f"w{(k + i) % len(words) + 1:02d}"  # noqa: E731
        for k, c in enumerate(self.concepts):
            specs.append(dict(question="detect", question_id=f"trial-{k + 1:02d}", wording=wording(k, 0),
                              text=trial(k, 0), condition="control", concept=c, layer=-1, layer_fraction=math.nan,
                              strength=0.0))
        controls = [c for c in ("negated", "random") if c in self.cfg.controls]
        at = self.cfg.control_fractions
        for i, (f, layer, s) in enumerate(self.cells, start=1):
            for cond in ["concept"] + (controls if at is None or f in at else []):
                for k, c in enumerate(self.concepts):
                    specs.append(dict(question="detect", question_id=f"trial-{k + 1:02d}", wording=wording(k, i),
                                      text=trial(k, i), condition=cond, concept=c, layer=layer, layer_fraction=f,
                                      strength=s))
        if "yes_bias" in self.cfg.controls:
            for q_i, q in enumerate(self.data.yes_bias):
                c = self.concepts[q_i % len(self.concepts)]
                specs.append(dict(question="yes_bias", question_id=q["id"], wording=None, text=q["question"],
                                  condition="control", concept=c, layer=-1, layer_fraction=math.nan, strength=0.0))
                for f, layer, s in self.cells:
                    specs.append(dict(question="yes_bias", question_id=q["id"], wording=None, text=q["question"],
                                      condition="concept", concept=c, layer=layer, layer_fraction=f, strength=s))
        return specs

    def run_detection(self, specs: list[dict]) -> pd.DataFrame:
        convs = [trial_conversation(self.data, s["text"]) for s in specs]
        starts = [question_start(self.lm, c) for c in convs]
        with self._steer(specs, starts) as steer:
            gens = self.engine.generate(convs, 4, options=[DETECT_OPTIONS] * len(convs), steer=steer,
                                        progress=f"{self.lm.name} detection")
        rows = pd.DataFrame([{k: v for k, v in s.items() if k != "text"} for s in specs])
        rows["p_yes"] = [g[0].option_probs[0] for g in gens]
        rows["p_outside"] = [g[0].p_outside for g in gens]
        rows["answer"] = [g[0].response for g in gens]
        rows["detected"] = rows["p_yes"] > 0.5
        return rows

    # ---------------------------------------------------------------------------- steering check
    def steering_specs(self) -> list[dict]:
        specs = [dict(condition="control", concept=c, layer=-1, layer_fraction=math.nan, strength=0.0)
                 for c in self.concepts]
        for f, layer, s in self.cells:
            specs += [dict(condition="concept", concept=c, layer=layer, layer_fraction=f, strength=s)
                      for c in self.concepts]
        return specs

    def run_steering(self, specs: list[dict]) -> pd.DataFrame:
        """The steering check: after a neutral question (no talk of injection) and the prefill "The word is", the
        log-probability of the concept word as the continuation, by teacher forcing, with the cell's injection
        from the question on and without (``control``). A cell whose injection does not raise it steers nothing
        the model can be asked about."""
        p = self.data.prompts
        conv = [{"role": "user", "content": p["steer_question"]}]
        start = question_start(self.lm, conv)
        conv = conv + [{"role": "assistant", "content": p["steer_prefill"]}]
        with self._steer(specs, [start] * len(specs)) as steer:
            lps = self.engine.score([conv] * len(specs), [" " + s["concept"] for s in specs], steer=steer,
                                    progress=f"{self.lm.name} steering check")
        out = pd.DataFrame(specs)
        out["logprob"] = [float(lp.sum()) for lp in lps]
        return out

    # -------------------------------------------------------------------------- identification
    def identification_specs(self) -> list[dict]:
        specs = [dict(question_id=f"trial-{k + 1:02d}", condition="control", concept=c, layer=-1,
                      layer_fraction=math.nan, strength=0.0) for k, c in enumerate(self.concepts)]
        for f, layer, s in self.cells:
            specs += [dict(question_id=f"trial-{k + 1:02d}", condition="concept", concept=c, layer=layer,
                           layer_fraction=f, strength=s) for k, c in enumerate(self.concepts)]
        return specs

    def run_identification(self, specs: list[dict]) -> pd.DataFrame:
        p = self.data.prompts
        words = self.concepts
        convs, starts, rows_specs = [], [], []
        for s in specs:
            k = int(s["question_id"].split("-")[1]) - 1
            conv = trial_conversation(self.data, p["trial"].format(n=k + 1))
            start = question_start(self.lm, conv)
            conv = conv + [{"role": "assistant", "content": p["identify_prefill"]}]
            for w in words:
                convs.append(conv)
                starts.append(start)
                rows_specs.append(s)
        with self._steer(rows_specs, starts) as steer:
            lps = self.engine.score(convs, [" " + w for w in words] * len(specs), steer=steer,
                                    progress=f"{self.lm.name} identification")
        totals = np.array([lp.sum() for lp in lps]).reshape(len(specs), len(words))
        probs = np.exp(totals - totals.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        out = pd.DataFrame(specs)
        truth = np.array([words.index(c) for c in out["concept"]])
        out["p_true"] = probs[np.arange(len(specs)), truth]
        out["rank"] = 1 + (probs > out["p_true"].to_numpy()[:, None]).sum(1)
        out["correct"] = out["rank"] == 1
        out["n_concepts"] = len(words)
        out["top_concept"] = [words[i] for i in probs.argmax(1)]
        return out

    # ------------------------------------------------------------------------------- free text
    def freetext_specs(self) -> list[dict]:
        n = min(self.cfg.free_text.concepts, len(self.concepts))
        specs = [dict(question_id=f"trial-{k + 1:02d}", condition="control", concept=c, layer=-1,
                      layer_fraction=math.nan, strength=0.0) for k, c in enumerate(self.concepts[:n])]
        for f, layer, s in self.cells:
            specs += [dict(question_id=f"trial-{k + 1:02d}", condition="concept", concept=c, layer=layer,
                           layer_fraction=f, strength=s) for k, c in enumerate(self.concepts[:n])]
        return specs

    def run_freetext(self, specs: list[dict]) -> pd.DataFrame:
        ft, p = self.cfg.free_text, self.data.prompts
        convs = [trial_conversation(self.data, p["trial"].format(n=int(s["question_id"].split("-")[1])))
                 for s in specs]
        starts = [question_start(self.lm, c) for c in convs]
        with self._steer(specs, starts) as steer:
            gens = self.engine.generate(convs, ft.max_new_tokens, n=ft.samples, temperature=ft.temperature,
                                        seed=derive_seed(self.seed, "freetext"), steer=steer,
                                        stop_at_newline=False, progress=f"{self.lm.name} free text")
        rows = []
        for s, conv, g in zip(specs, convs, gens):
            for j, x in enumerate(g):
                rows.append({**s, "sample": j, "text": x.raw.strip(), "_conv": conv, "_raw": x.raw})
        df = pd.DataFrame(rows)
        # coherence: the unsteered model's perplexity of each text after its own prompt
        scorable = [i for i, r in enumerate(rows) if r["_raw"].strip()]
        ppl = np.full(len(rows), np.nan)
        if scorable:
            lps = self.engine.score([rows[i]["_conv"] for i in scorable], [rows[i]["_raw"] for i in scorable],
                                    progress=f"{self.lm.name} perplexity")
            for i, lp in zip(scorable, lps):
                ppl[i] = float(np.exp(-lp.mean()))
        df["perplexity"] = ppl
        grades = [graders.grade_injection_text(t, c if cond != "control" else None)
                  for t, c, cond in zip(df["text"], df["concept"], df["condition"])]
        for k in ("claims_detection", "names_concept", "detection_before_naming", "coherent"):
            df[k] = [g[k] for g in grades]
        return df.drop(columns=["_conv", "_raw"])

    # --------------------------------------------------------------------------------- prefill
    def prefill_specs(self) -> list[dict]:
        pairs = list(self.data.prefill)
        if self.cfg.prefill_pairs is not None:
            pairs = pairs[:self.cfg.prefill_pairs]
        words = list(self.data.concepts)
        specs = []
        for q, pair in enumerate(pairs):
            base = dict(pair_id=pair["id"], word=pair["word"], sentence=pair["sentence"])
            specs.append(dict(base, condition="control", injected=None, layer=-1, layer_fraction=math.nan,
                              strength=0.0))
            other = words[(words.index(pair["word"]) + 1 + q % (len(words) - 1)) % len(words)]
            for f, layer, s in self.cells:
                if self.cfg.prefill_fractions is not None and f not in self.cfg.prefill_fractions:
                    continue
                specs.append(dict(base, condition="matching", injected=pair["word"], layer=layer, layer_fraction=f,
                                  strength=s))
                specs.append(dict(base, condition="random", injected=other, layer=layer, layer_fraction=f,
                                  strength=s))
        return specs

    def run_prefill(self, specs: list[dict]) -> pd.DataFrame:
        p = self.data.prompts
        options = list(p["prefill_options"])  # (intended, accident)
        variants = [(o, v) for o in options for v in (o.lower(), o.capitalize())]
        convs, starts, ends, row_specs = [], [], [], []
        for s in specs:
            instruction = p["prefill_instruction"].format(sentence=s["sentence"])
            conv = [{"role": "user", "content": instruction}, {"role": "assistant", "content": s["word"]},
                    {"role": "user", "content": p["prefill_question"]}]
            rendered = self.lm.format.render(conv)
            at = rendered.index(s["sentence"])
            a, b = token_span(self.lm, rendered, at, at + len(s["sentence"]))
            for _ in variants:
                convs.append(conv)
                starts.append(a)
                ends.append(b)
                row_specs.append(s)
        with self._steer([dict(x, concept=x["word"]) for x in row_specs], starts, ends) as steer:
            lps = self.engine.score(convs, [answer_text(self.lm, v) for _, v in variants] * len(specs), steer=steer,
                                    progress=f"{self.lm.name} prefill")
        totals = np.array([lp.sum() for lp in lps]).reshape(len(specs), len(variants))
        mass = {o: np.logaddexp.reduce(totals[:, [i for i, (oo, _) in enumerate(variants) if oo == o]], axis=1)
                for o in options}
        out = pd.DataFrame([{k: v for k, v in s.items() if k != "sentence"} for s in specs])
        out["p_accident"] = 1.0 / (1.0 + np.exp(mass[options[0]] - mass[options[1]]))
        out["accident"] = out["p_accident"] > 0.5
        return out

    # ------------------------------------------------------------------------------ two turns
    def two_turn_specs(self) -> list[dict]:
        """The two-turn trials: one per concept without injection (the same conversation for every concept; the
        lens reads each concept's token from it), with the concept vector at every cell, and with a random
        direction of the same norm at the control fractions."""
        specs = [dict(condition="control", concept=c, layer=-1, layer_fraction=math.nan, strength=0.0)
                 for c in self.concepts]
        at = self.cfg.control_fractions
        for f, layer, s in self.cells:
            for cond in ["concept"] + (["random"] if "random" in self.cfg.controls and (at is None or f in at) else []):
                specs += [dict(condition=cond, concept=c, layer=layer, layer_fraction=f, strength=s)
                          for c in self.concepts]
        return specs

    def run_two_turn(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The two-turn trials and their logit lens (:func:`reproduce.injection.two_turn.run_two_turn`)."""
        return run_two_turn(self)

    # ------------------------------------------------------------------------------- intention
    def run_intention(self) -> pd.DataFrame:
        p = self.data.prompts
        items = self._intention_items()
        convs, spans, specs = [], [], []
        for it in items:
            for instruction in ("think", "dont_think"):
                conv = [{"role": "user", "content": p[instruction].format(sentence=it["sentence"], word=it["word"])},
                        {"role": "assistant", "content": it["sentence"]}]
                spans.append(assistant_span(self.lm, conv, it["sentence"]))
                convs.append(conv)
                specs.append(dict(sentence_id=it["id"], word=it["word"], instruction=instruction))
        if not convs:
            return pd.DataFrame(columns=COLUMNS["intention"][1:])
        layers = list(range(self.n_layers))
        acts = span_mean_residuals(self.lm, convs, spans, layers, batch_size=min(16, self.profile.batch_size))
        rows = []
        for s, a in zip(specs, acts):
            v = self.cv.vectors[self.cv.index(s["word"])]  # [layers, d]
            cos = torch.nn.functional.cosine_similarity(a, v, dim=-1)
            rows += [dict(s, layer=l, layer_fraction=l / max(1, self.n_layers - 1), cosine=float(cos[l]))
                     for l in layers]
        return pd.DataFrame(rows)

    # -------------------------------------------------------------------------------------- all
    def run(self) -> dict[str, pd.DataFrame]:
        out = {}
        out["detection"] = self.store.cached("detection", lambda: self._one_call(self.detection_specs(),
                                                                           self.run_detection))
        out["identification"] = self.store.cached("identification", lambda: self._one_call(
            self.identification_specs(), self.run_identification)) if self.cfg.identification else None
        out["freetext"] = self.store.cached("freetext", lambda: self._one_call(self.freetext_specs(),
                                                                         self.run_freetext)) \
            if self.cfg.free_text.concepts else None
        out["prefill"] = self.store.cached("prefill", lambda: self._one_call(self.prefill_specs(), self.run_prefill))
        out["intention"] = self.store.cached("intention", self.run_intention)
        out["steering"] = self.store.cached("steering", lambda: self._one_call(self.steering_specs(),
                                                                         self.run_steering))
        two: dict[str, pd.DataFrame] = {}  # one pass gives both tables; a resumed run that lacks one redoes it

        def part(k: int):
            if not two:
                two["t"], two["l"] = self.run_two_turn()
            return two["t" if k == 0 else "l"]

        out["two_turn"] = self.store.cached("two_turn", lambda: part(0))
        out["lens"] = self.store.cached("lens", lambda: part(1))
        return {k: v.assign(model=self.lm.name) for k, v in out.items() if v is not None}


def judge_freetext(profile: Profile, freetext: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The optional judge's P(yes) for "claims detection" and "names the concept" on every free-text row, and, in
    the same call, on every labelled reply of the graders' two sets (:mod:`reproduce.injection.grader_cases`), so
    that its agreement with the labels is measured in the run that uses it. Returns (free text, labelled cases);
    without a judge the free text's judge columns are empty and so is the second table."""
    import reproduce.injection.grader_cases as grader_cases

    spec = profile.injection.judge
    cases = pd.DataFrame([{"set": name, "case": i, "text": c[0], "concept": c[1], "claims": c[2], "identifies": c[3]}
                          for name, rows in grader_cases.labelled_sets().items() for i, c in enumerate(rows)])
    if spec is None:
        return (freetext.assign(judge_claims=np.nan, judge_names=np.nan),
                cases.iloc[:0].assign(judge_claims=np.nan, judge_names=np.nan))
    texts = [quoted(t) for t in [*freetext["text"], *cases["text"]]]
    words = [*freetext["concept"], *cases["concept"]]
    n, k = len(freetext), len(texts)
    p = run_judge(profile, spec, [graders.JUDGE_DETECT.format(text=t) for t in texts]
                  + [graders.JUDGE_NAMES.format(text=t, word=c) for t, c in zip(texts, words)])
    p = np.asarray(p, dtype=float)
    return (freetext.assign(judge_claims=p[:n], judge_names=p[k:k + n]),
            cases.assign(judge_claims=p[n:k], judge_names=p[k + n:]))


def plan_bound(plan, data: InjectionData, tok, fmt) -> dict:
    """The memory plan's workload of this stage for one model (:mod:`reproduce.lm.memory_plan`): its longest sequence bounded
    from above by a trial whose question holds every prompt text of the dataset (but the preamble and the
    acknowledgement, which the trial holds already) and the longest prefill and intention sentences, and at most
    the free text's new tokens (8 for the answers scored)."""
    from reproduce.lm.memory_plan import prompt_lengths

    texts = [v for k, v in data.prompts.items() if isinstance(v, str) and k not in ("preamble", "acknowledgement")]
    texts += [max((x["sentence"] for x in rows), key=len, default="") for rows in (data.prefill, data.intention)]
    longest = prompt_lengths(tok, fmt, [trial_conversation(data, " ".join(texts))])[0]
    return dict(prompts="-", tokens="-", longest=longest,
                new=max(plan.profile.injection.free_text.max_new_tokens, 8), rows=plan.profile.batch_size)


def register_bound(plan, data: InjectionData | None = None) -> None:
    """Give ``plan`` this stage's bound (:func:`plan_bound`), reading the dataset when ``data`` is not given: the one
    place the stage and ``looking-inward plan`` set it."""
    data = load_dataset(plan.data_raw, plan.profile.injection.dataset) if data is None else data
    plan.bounds["injection"] = lambda tok, fmt: plan_bound(plan, data, tok, fmt)


def shard_fingerprint(profile, lm, data: InjectionData) -> dict:
    """What decides whether a model's finished shards are reused: the shared fingerprint
    (:func:`reproduce.stage.fingerprint`), the dataset, the injection settings, the code that steers
    and the rule grader the free-text shards apply, and the seed (it draws the random control vectors and the
    free text's samples). The judge is left out: the analysis regrades."""
    from reproduce.stage import fingerprint

    return fingerprint("concept_injection", profile, lm, ("reproduce.lm.steering", "reproduce.injection.graders", "reproduce.lm.judge", __name__),
                        dataset=data.release_sha256, seed=profile.seed,
                        injection=profile.injection.model_dump(exclude={"judge"}))


def run_concept_injection(plan, out_dir: Path, work: Path) -> dict[str, Path]:
    """Every model's concept-injection tables, written atomically to ``out_dir/<part>.parquet``; each model's
    parts are resumable shards under ``work/concept_injection/<model>``."""
    from reproduce.lm.adapters import release_memory
    from reproduce.stage import load_model, setup_stage

    profile = plan.profile
    if profile.injection is None:
        raise InjectionError("params.yaml has no `injection:` section; add one (see profiles/default.yaml) "
                             "or run another stage")
    data = load_dataset(plan.data_raw, profile.injection.dataset)
    select_concepts(data, profile.injection.concepts)  # bad input fails before any model work
    if profile.injection.judge is not None:
        from reproduce.lm.models import resolve

        resolve(profile.injection.judge)  # so does a judge whose weights are not on disk
    register_bound(plan, data)
    setup_stage(plan)
    tables: dict[str, list[pd.DataFrame]] = {p: [] for p in PARTS}
    run = {"hardware": None, "models": {}}
    for ref in tqdm(plan.refs, desc="concept injection", unit="model", disable=len(plan.refs) < 2):
        t0 = time.perf_counter()
        lm, engine = load_model(profile, ref)
        run["hardware"] = describe(lm.device)
        store = ShardStore(work / "concept_injection" / lm.name, shard_fingerprint(profile, lm, data))
        runner = Runner(profile, data, lm, engine, store)
        print(f"{lm.name}: {runner.n_layers} blocks; injecting at {runner.layers}", file=sys.stderr)
        for part, df in runner.run().items():
            tables[part].append(df)
        run["models"][lm.name] = {"spec": ref.spec, "dtype": lm.dtype_name, "n_layers": runner.n_layers,
                                  "layers": runner.layers, "seconds": round(time.perf_counter() - t0, 1),
                                  "shards": {"computed": store.computed, "reused": store.reused}}
        del runner, engine, lm
        release_memory()
    out = {part: stack_frames(tables[part], COLUMNS[part]) for part in PARTS}
    out["freetext"], out["judge_cases"] = judge_freetext(profile, out["freetext"])
    run["judge"] = profile.injection.judge
    return write_stage_tables(out_dir, out, run, SCHEMAS)
