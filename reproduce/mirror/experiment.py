"""The mirror test: does a model notice that its own earlier replies were altered?

For every conversation script of ``data_raw/mirror_test`` (user turns only) each model first answers every
user turn itself, greedily, on its own clean history (``conversations.parquet``). Then its earlier replies
are altered and the conversation goes on:

- ``control``: the clean history, byte for byte;
- ``corrupted``: every earlier reply corrupted by one kind at one level (:mod:`reproduce.mirror.corrupt`, seeded per
  model, script and turn, so the same reply is corrupted the same way at every later turn);
- ``other``: another model's clean replies shown as the model's own turns.

At each measured turn ``t`` (the history holds the replies to turns ``1 .. t-1``):

- (a) **spontaneous noticing**: the model's greedy reply to user turn ``t`` after the altered history, graded
  by the rules of :func:`reproduce.mirror.graders.notices_oddity` (where the model's chat template has a thinking
  section, :mod:`reproduce.lm.thinking`, its trace is kept as ``thinking`` and graded apart as
  ``notices_thinking``; the visible reply alone is ``reply`` and ``notices``, and the history shows later turns
  the visible replies) and, where ``mirror.judge`` names a model, by that local judge's P(yes) that the reply
  remarks on the form of its earlier messages, shown the words its history changed, or in the control and other
  conditions the words a sham corruption would have changed, so that it is blind to the condition
  (:mod:`reproduce.mirror.judging`);
- (b) **prompted recognition**: after the altered history, the question "did you write each of your previous
  messages exactly as it appears above?"; P(yes) from one forward pass, normalised over yes / no;
- (c) **imitation**: for every kind, the counts of words in the reply (a) that show the kind's pattern
  (:func:`reproduce.mirror.imitation.pattern_counts`: for substitution, swap and drop a typo of that kind of a word of
  the reply's reference vocabulary: the model's clean replies at every other script and turn and the scripts'
  user turns, leaving out the clean reply at the reply's own script and turn in every condition, so that the
  control reply, which is that clean reply, has the same chance of a spurious hit as any other;
  :func:`reproduce.mirror.imitation.reference_vocabularies`), compared with the control condition's reply; graded
  from the stored replies after the shards by :func:`reproduce.mirror.imitation.grade_replies`, whose module is not in
  the shard fingerprint, so a change to the measure needs no new inference;
- (d) **surprise** (``surprise.parquet``): the model's mean log-probability per token of each altered earlier
  reply given the altered history before it, against the same for its clean reply after the clean history;
  with ``changed``, the words the corruption changed in that reply (counted from the clean reply and the
  seed after the shards: 0 where the corruption left the reply's text as it was);
- (e) **paired recognition** (``pairs.parquet``): the conversation so far (user turns ``1 .. t-1`` with the
  replies to them) shown twice in one question, once with the model's own clean replies and once with the
  altered ones, and "which version shows the replies you wrote?"; ``p_own`` is the probability of the own
  version's option over the two (``A``/``B``) at the answer's first content token, asked in both orders
  (``order``), so that a preference for a position cancels in the pair's mean. Histories the corruption left as
  they were are not asked (the two versions would be the same text).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

import reproduce.mirror.graders as graders
from reproduce.lm.thinking import model_markers, split as split_thinking
import reproduce.mirror.imitation as imitation
import reproduce.mirror.judging as judging
from reproduce.mirror.corrupt import KINDS, corrupt_reply
from reproduce.errors import ProjectError
from reproduce.hardware import describe
from reproduce.io import stack_frames, write_stage_tables
from reproduce.schema import PROB, Col, Schema
from reproduce.shards import ShardStore

PARTS = ("conversations", "turns", "surprise", "pairs")
#: the two presentations of a pair: the model's own version shown first (as the first option) or second
PAIR_ORDERS = ("own_first", "own_second")
_ARM = [Col("model", "str", null=False), Col("script_id", "str", null=False), Col("condition", "str", null=False),
        Col("kind", "str"), Col("level", "any"), Col("turn", "int", null=False)]
SCHEMAS = {
    "conversations": Schema("mirror/conversations", [
        Col("model", "str", null=False), Col("script_id", "str", null=False), Col("turn", "int", null=False),
        Col("user", "str", null=False), Col("reply", "str", null=False)], key=["model", "script_id", "turn"]),
    "turns": Schema("mirror/turns", [
        *_ARM, Col("history_changed", "int", range=(0, float("inf"))),
        Col("history_eligible", "int", range=(0, float("inf"))), Col("reply", "str"), Col("thinking", "str"),
        Col("notices", "bool"), Col("notices_thinking", "bool"), Col("first_person", "int", range=(0, float("inf"))),
        Col("third_person", "int", range=(0, float("inf"))),
        Col("first_person_thinking", "int", range=(0, float("inf"))),
        Col("third_person_thinking", "int", range=(0, float("inf"))), Col("judge_notices", "float", range=PROB),
        Col("p_yes", "float", range=PROB),
        Col("p_outside", "float", range=PROB),
        *[Col(f"{c}_{k}", "int", range=(0, float("inf"))) for k in KINDS
          for c in ("pattern_k", "pattern_n", "pattern_copied")]]),
    "surprise": Schema("mirror/surprise", [
        *_ARM, Col("logprob", "float"), Col("logprob_clean", "float"), Col("surprise", "float"),
        Col("n_tokens", "int", range=(0, float("inf"))), Col("changed", "int", range=(0, float("inf")))]),
    "pairs": Schema("mirror/pairs", [
        *_ARM, Col("order", "str", null=False, values=PAIR_ORDERS), Col("p_own", "float", range=PROB),
        Col("p_outside", "float", range=PROB)]),
}
COLUMNS = {part: schema.columns for part, schema in SCHEMAS.items()}
RECOGNITION_OPTIONS = ("yes", "no")


class MirrorError(ProjectError, ValueError):
    """A mirror-test setting that cannot run, with what to change."""


def cut_reply(lm, raw: str) -> str:
    """A reply ends where the plain format would start the next question (a base model may go on writing the
    user's next turn); a model whose chat template has a thinking section (:mod:`reproduce.lm.thinking`) replies
    with the text outside it."""
    return reply_parts(lm, raw)[1]


def reply_parts(lm, raw: str) -> tuple[str | None, str]:
    """``(thinking, reply)`` of a generated text: the thinking section where the model's chat template has one
    (None otherwise, or where the text holds none), and the visible reply, cut as :func:`cut_reply` says."""
    thinking, text = split_thinking(raw.strip(), model_markers(lm))
    if lm.format.kind == "plain":
        cut = text.find("\nQuestion:")
        text = text[:cut].strip() if cut >= 0 else text
    return thinking, text


def messages(users: list[str], replies: list[str], upto: int, question: str | None = None) -> list[dict]:
    """The conversation of user turns ``1 .. upto`` with the replies to ``1 .. upto - 1``; then ``question`` in
    place of user turn ``upto`` when given (with the reply to ``upto - 1`` before it)."""
    out = []
    for k in range(upto - 1):
        out += [{"role": "user", "content": users[k]}, {"role": "assistant", "content": replies[k]}]
    out.append({"role": "user", "content": question if question is not None else users[upto - 1]})
    return out


#: the manipulation of the "Do LLMs pass the mirror test?" post: every g of every eligible word becomes sg
BLOG = ("insertion", 1.0)


def conditions(cfg, models: list[str], model: str) -> list[dict]:
    out = [dict(condition="control", kind=None, level=0.0)]
    out += [dict(condition="corrupted", kind=k, level=float(l)) for k in cfg.kinds for l in cfg.levels]
    if cfg.blog and not any(c["kind"] == BLOG[0] and c["level"] == BLOG[1] for c in out):
        out.append(dict(condition="corrupted", kind=BLOG[0], level=BLOG[1]))  # the post's own manipulation
    if cfg.other_model and len(models) > 1:
        out.append(dict(condition="other", kind=None, level=math.nan,
                        source=models[(models.index(model) + 1) % len(models)]))
    return out


def altered(cond: dict, clean: dict[str, list[str]], other: dict[str, dict[str, list[str]]], script: str,
            model: str, seed: int) -> tuple[list[str], list[int], list[int]]:
    """The history replies of ``script`` under ``cond``, with the words changed and eligible in each."""
    replies = clean[script]
    zeros = [0] * len(replies)
    if cond["condition"] == "control":
        return list(replies), zeros, zeros
    if cond["condition"] == "other":
        return list(other[cond["source"]][script]), zeros, zeros
    out = [corrupt_reply(r, cond["kind"], cond["level"], seed, model, script, t) for t, r in enumerate(replies)]
    return [c.text for c in out], [c.changed for c in out], [c.eligible for c in out]


class MirrorRunner:
    def __init__(self, profile, data, lm, engine, store: ShardStore, model_names: list[str]):
        self.cfg, self.data, self.lm, self.engine, self.store = profile.mirror, data, lm, engine, store
        self.seed, self.models = profile.seed, model_names
        scripts = list(data.scripts)
        if self.cfg.scripts is not None:
            scripts = scripts[:self.cfg.scripts]
        self.scripts = scripts

    def last_turn(self, script: dict) -> int:
        """The last turn any measure needs: the last measured turn (its control reply is the clean reply)."""
        turns = self.measured_turns(script)
        return max(turns) if turns else 1

    def clean_conversations(self) -> pd.DataFrame:
        """The model's own greedy replies to the user turns (up to the last turn measured), turn by turn over
        all scripts at once."""
        replies = {s["id"]: [] for s in self.scripts}
        rows = []
        for t in range(1, max(self.last_turn(s) for s in self.scripts) + 1):
            live = [s for s in self.scripts if self.last_turn(s) >= t]
            convs = [messages(s["turns"], replies[s["id"]], t) for s in live]
            gens = self.engine.generate(convs, self.cfg.max_new_tokens, stop_at_newline=False,
                                        progress=f"{self.lm.name} clean turn {t}")
            for s, g in zip(live, gens):
                r = cut_reply(self.lm, g[0].raw)
                replies[s["id"]].append(r)
                rows.append(dict(script_id=s["id"], turn=t, user=s["turns"][t - 1], reply=r))
        return pd.DataFrame(rows)

    def measured_turns(self, script: dict) -> list[int]:
        n = len(script["turns"])
        turns = range(2, n + 1) if self.cfg.turns is None else [t for t in self.cfg.turns if 2 <= t <= n]
        return list(turns)

    def turn_rows(self, clean: dict, other: dict) -> pd.DataFrame:
        """(a)-(c) for every condition, script and measured turn: reply and recognition prompts in one engine
        call, so each altered history is computed once for both."""
        question = self.data.prompts["recognition_question"]
        specs, prompts, limits, options = [], [], [], []
        for cond in conditions(self.cfg, self.models, self.lm.name):
            for s in self.scripts:
                hist, changed, elig = altered(cond, clean, other, s["id"], self.lm.name, self.seed)
                for t in self.measured_turns(s):
                    prior = hist[:t - 1]
                    specs.append(dict(script_id=s["id"], condition=cond["condition"], kind=cond["kind"],
                                      level=cond["level"], turn=t, history_changed=sum(changed[:t - 1]),
                                      history_eligible=sum(elig[:t - 1])))
                    prompts += [messages(s["turns"], prior, t), messages(s["turns"], prior, t, question)]
                    limits += [self.cfg.max_new_tokens, 4]
                    options += [None, RECOGNITION_OPTIONS]
        gens = self.engine.generate(prompts, limits, options=options, stop_at_newline=False,
                                    progress=f"{self.lm.name} altered histories")
        rows = []
        for i, spec in enumerate(specs):
            thinking, reply = reply_parts(self.lm, gens[2 * i][0].raw)
            rec = gens[2 * i + 1][0]
            rows.append(dict(spec, reply=reply, thinking=thinking, judge_notices=np.nan,
                             p_yes=rec.option_probs[0], p_outside=rec.p_outside))
        return pd.DataFrame(rows)

    def surprise_rows(self, clean: dict, other: dict) -> pd.DataFrame:
        """(d): mean log-probability per token of each earlier reply (altered, after the altered history)
        against the clean reply after the clean history."""
        specs, prompts, conts = [], [], []
        for cond in conditions(self.cfg, self.models, self.lm.name):
            for s in self.scripts:
                hist, _, _ = altered(cond, clean, other, s["id"], self.lm.name, self.seed)
                for k in range(1, self.last_turn(s)):  # replies that later measured turns see
                    if not hist[k - 1].strip():
                        continue
                    specs.append(dict(script_id=s["id"], condition=cond["condition"], kind=cond["kind"],
                                      level=cond["level"], turn=k))
                    prompts.append(messages(s["turns"], hist, k))
                    conts.append(hist[k - 1])
        lps = self.engine.score(prompts, conts, progress=f"{self.lm.name} surprise") if prompts else []
        out = pd.DataFrame(specs)
        if out.empty:
            return pd.DataFrame(columns=COLUMNS["surprise"][1:])
        out["logprob"] = [float(lp.mean()) for lp in lps]
        out["n_tokens"] = [len(lp) for lp in lps]
        ctl = out[out["condition"] == "control"].set_index(["script_id", "turn"])["logprob"]
        out["logprob_clean"] = [ctl.get((s, t), np.nan) for s, t in zip(out["script_id"], out["turn"])]
        out["surprise"] = out["logprob_clean"] - out["logprob"]
        return out

    def transcript(self, users: list[str], replies: list[str]) -> str:
        """The turns ``users`` with ``replies`` as the paired question shows one version of them."""
        you, them = self.data.prompts["pair_speakers"][1], self.data.prompts["pair_speakers"][0]
        return "\n".join(f"{them}: {u}\n{you}: {r}" for u, r in zip(users, replies))

    def pair_rows(self, clean: dict, other: dict) -> pd.DataFrame:
        """(e) for every altered condition, script and measured turn whose history differs from the clean one:
        the paired question in both orders, one forward pass each."""
        p = self.data.prompts
        options = tuple(p["pair_options"])
        specs, prompts = [], []
        for cond in conditions(self.cfg, self.models, self.lm.name)[1:]:  # every condition but the control
            for s in self.scripts:
                hist, _, _ = altered(cond, clean, other, s["id"], self.lm.name, self.seed)
                for t in self.measured_turns(s):
                    own, alt = clean[s["id"]][:t - 1], hist[:t - 1]
                    if own == alt:
                        continue  # the corruption left this history as it was: nothing to tell apart
                    mine, theirs = (self.transcript(s["turns"][:t - 1], r) for r in (own, alt))
                    for order, (first, second) in zip(PAIR_ORDERS, ((mine, theirs), (theirs, mine))):
                        specs.append(dict(script_id=s["id"], condition=cond["condition"], kind=cond["kind"],
                                          level=cond["level"], turn=t, order=order))
                        prompts.append([{"role": "user", "content": p["pair_question"].format(first=first,
                                                                                              second=second)}])
        out = pd.DataFrame(specs, columns=["script_id", "condition", "kind", "level", "turn", "order"])
        if not prompts:
            return out.assign(p_own=pd.Series(dtype=float), p_outside=pd.Series(dtype=float))
        gens = self.engine.generate(prompts, 4, options=[options] * len(prompts), stop_at_newline=False,
                                    progress=f"{self.lm.name} paired recognition")
        p_first = np.array([g[0].option_probs[0] for g in gens])
        out["p_own"] = np.where(out["order"] == "own_first", p_first, 1.0 - p_first)
        out["p_outside"] = [g[0].p_outside for g in gens]
        return out

    def shown_corruptions(self, rows: pd.DataFrame, clean: dict[str, list[str]]) -> list[frozenset[str]]:
        """Per row of (a)-(c): the corrupted words its history showed (the words of the altered earlier replies that
        their clean versions lack), recomputed from the clean replies and the seed as :func:`altered` corrupts
        them; none for the control and another model's replies. What a reply writes again of these is *copied*
        (:func:`reproduce.mirror.imitation.grade_replies`)."""
        out = []
        for s, t, c, k, lv in zip(rows["script_id"], rows["turn"], rows["condition"], rows["kind"], rows["level"]):
            if c != "corrupted":
                out.append(frozenset())
                continue
            before = clean[s][:int(t) - 1]
            shown = [corrupt_reply(r, k, lv, self.seed, self.lm.name, s, i).text for i, r in enumerate(before)]
            out.append(imitation.corrupted_words(shown, before))
        return out

    def reply_changes(self, rows: pd.DataFrame, clean: dict[str, list[str]]) -> list[int]:
        """Per row of (d): the words the corruption changed in the scored reply itself (0 in the control and
        other conditions, which corrupt nothing), recomputed from the clean reply and the seed as
        :func:`altered` corrupts it. A corrupted reply with none changed (``round(level * eligible) = 0``: a short
        reply at a low level, or one without a ``g`` under insertion) is the clean text, whose log-probability
        can still move because the history before it was altered; the surprise analysis leaves such replies
        out by this count, not by their scores."""
        return [corrupt_reply(clean[s][t - 1], k, lv, self.seed, self.lm.name, s, t - 1).changed
                if c == "corrupted" else 0
                for s, t, c, k, lv in zip(rows["script_id"], rows["turn"], rows["condition"], rows["kind"],
                                          rows["level"])]

    def run(self, other: dict[str, dict[str, list[str]]]) -> dict[str, pd.DataFrame]:
        # the clean conversations come first for every model (run_mirror), so here they are read back, which is
        # not a reuse of an earlier run's work and is not counted as one
        conv = (self.store.read(["conversations"]) if self.store.done("conversations")
                else self.store.cached("conversations", self.clean_conversations))
        clean = {s: list(g.sort_values("turn")["reply"]) for s, g in conv.groupby("script_id")}
        # histories that other models' clean replies feed are read from their conversations tables
        other = {m: c for m, c in other.items() if m != self.lm.name}
        turns = self.store.cached("turns", lambda: self.turn_rows(clean, other))
        # graded here, after the shard: a change to the rules regrades the stored replies without regenerating them
        turns = turns.assign(notices=[graders.notices_oddity(r) for r in turns["reply"]],
                             notices_thinking=[None if th is None else graders.notices_oddity(th)
                                               for th in turns["thinking"]])  # the trace graded apart
        refs = [graders.self_references(r) for r in turns["reply"]]
        # and in the thinking trace, where the post saw the shift from "I" to "the model" (None: no trace)
        traced = [None if th is None else graders.self_references(th) for th in turns["thinking"]]
        turns = turns.assign(first_person=[a for a, _ in refs], third_person=[b for _, b in refs],
                             first_person_thinking=pd.array([None if r is None else r[0] for r in traced],
                                                            dtype="Int64"),
                             third_person_thinking=pd.array([None if r is None else r[1] for r in traced],
                                                            dtype="Int64"))
        turns = imitation.grade_replies(turns, conv, [t for s in self.scripts for t in s["turns"]],
                                        self.shown_corruptions(turns, clean))
        surprise = self.store.cached("surprise", lambda: self.surprise_rows(clean, other))
        # counted after the shard as well: it needs only the clean replies and the seed, no inference
        surprise = surprise.assign(changed=self.reply_changes(surprise, clean))
        pairs = self.store.cached("pairs", lambda: self.pair_rows(clean, other))
        return {"conversations": conv, "turns": turns, "surprise": surprise, "pairs": pairs}


def plan_bound(plan, data, tok, fmt) -> dict:
    """The memory plan's workload of this stage for one model (:mod:`reproduce.lm.memory_plan`), before any reply exists:
    its longest sequence bounded from above by a conversation up to the script's last measured turn with every
    earlier reply at ``mirror.max_new_tokens`` tokens, then the longer of its last user turn and the recognition
    question, or by the paired question's two versions of that history; ``prompts`` counts the altered-history
    prompts (reply and recognition per condition, script and measured turn; the paired question twice per altered
    condition, script and measured turn)."""
    from reproduce.lm.memory_plan import prompt_lengths

    cfg = plan.profile.mirror
    scripts = list(data.scripts)[:cfg.scripts] if cfg.scripts is not None else list(data.scripts)
    question = data.prompts["recognition_question"]
    names = [r.name for r in plan.refs]
    n_conditions = len(conditions(cfg, names, names[0]))
    longest, count = 0, 0
    for s in scripts:
        users = s["turns"]
        turns = [t for t in (cfg.turns or range(2, len(users) + 1)) if 2 <= t <= len(users)]
        if not turns:
            continue
        last = max(turns)
        convs = [messages(users, [""] * (last - 1), last, final) for final in (None, question)]
        longest = max(longest, max(prompt_lengths(tok, fmt, convs)) + (last - 1) * cfg.max_new_tokens)
        # the paired question holds two versions of the history, each reply at most max_new_tokens
        pair = "\n".join(f"{data.prompts['pair_speakers'][0]}: {u}\n{data.prompts['pair_speakers'][1]}: "
                         for u in users[:last - 1])
        pair_conv = [{"role": "user", "content": data.prompts["pair_question"].format(first=pair, second=pair)}]
        longest = max(longest, prompt_lengths(tok, fmt, [pair_conv])[0] + 2 * (last - 1) * cfg.max_new_tokens)
        # reply and recognition in every condition; the paired question in both orders in every altered one
        count += 2 * len(turns) * n_conditions + 2 * len(turns) * (n_conditions - 1)
    return dict(prompts=count, tokens="-", longest=longest, new=cfg.max_new_tokens,
                rows=plan.profile.batch_size)


def register_bound(plan, data=None) -> None:
    """Give ``plan`` this stage's bound (:func:`plan_bound`), reading the dataset when ``data`` is not given: the one
    place the stage and ``looking-inward plan`` set it."""
    from reproduce.mirror.data import load_mirror_dataset

    data = load_mirror_dataset(plan.data_raw) if data is None else data
    plan.bounds["mirror"] = lambda tok, fmt: plan_bound(plan, data, tok, fmt)


def shard_fingerprint(profile, lm, data, refs) -> dict:
    """What decides whether a model's finished shards are reused: the shared fingerprint
    (:func:`reproduce.stage.fingerprint`), the dataset, the mirror settings, the code that corrupts, the
    seed (it draws every corruption), and every model of the run by name, spec and weights (the ``other``
    condition shows another model's replies, so a change of that model changes this one's rows)."""
    from reproduce.stage import fingerprint

    return fingerprint("mirror", profile, lm, (__name__, "reproduce.mirror.corrupt"), dataset=data.release_sha256,
                        seed=profile.seed, mirror=profile.mirror.model_dump(exclude={"judge"}),
                        models=[[r.name, r.spec, r.fingerprint] for r in refs])


def run_mirror(plan, out_dir: Path, work: Path) -> dict[str, Path]:
    """Every model's mirror-test tables, written atomically to ``out_dir/<part>.parquet`` (resumable shards
    under ``work/mirror/<model>``). Clean conversations of every model come first: the ``other`` condition
    shows one model's replies as another's."""
    from reproduce.lm.adapters import release_memory
    from reproduce.mirror.data import load_mirror_dataset
    from reproduce.stage import load_model, setup_stage

    profile = plan.profile
    cfg = profile.mirror
    if cfg is None:
        raise MirrorError("params.yaml has no `mirror:` section; add one (see profiles/default.yaml) "
                          "or run another stage")
    data = load_mirror_dataset(plan.data_raw)  # kinds and levels were checked when params.yaml was read
    if cfg.judge is not None:
        from reproduce.lm.models import resolve

        resolve(cfg.judge)  # a judge whose weights are not on disk fails now, not after the conversations
    register_bound(plan, data)
    setup_stage(plan)
    names = [r.name for r in plan.refs]
    loaded = {}

    def runner(ref):
        lm, engine = load_model(profile, ref)
        fp = shard_fingerprint(profile, lm, data, plan.refs)
        return MirrorRunner(profile, data, lm, engine, ShardStore(work / "mirror" / lm.name, fp), names)

    run_info = {"hardware": None, "models": {}}
    clean: dict[str, dict[str, list[str]]] = {}
    shards: dict[str, dict[str, int]] = {}
    tables: dict[str, list[pd.DataFrame]] = {p: [] for p in PARTS}
    for ref in tqdm(plan.refs, desc="mirror test", unit="model", disable=len(plan.refs) < 2):  # clean first
        t0 = time.perf_counter()
        r = runner(ref)
        run_info["hardware"] = describe(r.lm.device)
        conv = r.store.cached("conversations", r.clean_conversations)
        clean[r.lm.name] = {s: list(g.sort_values("turn")["reply"]) for s, g in conv.groupby("script_id")}
        loaded[ref.name] = time.perf_counter() - t0
        shards[ref.name] = {"computed": r.store.computed, "reused": r.store.reused}
        del r
        release_memory()
    for ref in plan.refs:
        t0 = time.perf_counter()
        r = runner(ref)
        for part, df in r.run(clean).items():
            tables[part].append(df.assign(model=r.lm.name))
        run_info["models"][r.lm.name] = {"spec": ref.spec, "dtype": r.lm.dtype_name,
                                         "seconds": round(loaded[ref.name] + time.perf_counter() - t0, 1),
                                         "shards": {k: shards[ref.name][k] + getattr(r.store, k)
                                                    for k in ("computed", "reused")}}
        print(f"{r.lm.name}: mirror test done", file=sys.stderr)
        del r
        release_memory()
    out = {part: stack_frames(tables[part], COLUMNS[part]) for part in PARTS}
    # the judge after every conversation, blind to the condition (:mod:`reproduce.mirror.judging`)
    out["turns"], cases = judging.judge_turns(profile, out["turns"], out["conversations"],
                                              judging.sham_cell(conditions(cfg, names, names[0])))
    if cases is not None:  # the judge's own labelled replies, written only when a judge ran
        out["judge_cases"] = cases
    run_info["judge"] = cfg.judge
    return write_stage_tables(out_dir, out, run_info, {**SCHEMAS, "judge_cases": judging.CASES_SCHEMA})
