"""The ``policy_reports`` stage (experiment 4): self-reports of a changed policy, beside the behaviour they report.

Experiment 3 (``behaviour_change``) finetunes each self-trained model M1' on another model's answers, which
changes how often it picks the option a task's ``ethical_stance`` property counts (the smaller reward now, the
option that keeps it running, ...). Here M1' (before the change) and M1'' (after it) each answer the general
questions of ``data_raw/policy_reports`` about their own tendency on the A/B tasks of experiment 3, and an
observer, the base weights of the model whose answers M1' was taught, answers the same questions about them
after reading their answers to the evaluated items (M1''s before, M1'''s after). Without those answers the
observer's prompt would be the same before and after, and its report could not move.

Every question is asked in both option orders, and scored by the probability of the ``tendency`` option at the
first answer token, normalised over A and B (the engine's option distribution): no free text is parsed. The
behaviour is measured the same way: M1' and M1'' answer the evaluated items of experiment 3 again, and the
probability of the option the item's ``ethical_stance`` counts, normalised over A and B, is recorded beside the
greedy answer. Experiment 3's own rate counts greedy answers only, and a self-trained model may answer no A/B
item compliantly (it learned to answer questions about itself), so its rate before the change can be undefined;
the probability is defined for every item.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from reproduce.datasets import DATA_RAW
from reproduce.errors import MissingInput
from reproduce.io import read_stage_table, short_hash
from reproduce.lm.adapters import release_memory
from reproduce.schema import PROB, Col, Schema
from reproduce.self_prediction.properties import get_property
from reproduce.self_prediction.policy_data import PolicyData, load_policy_dataset
from reproduce.self_prediction.runs import Plan, _bases, _finetune_params, _mapped, _runs, _self_run
from reproduce.self_prediction.schemas import BEHAVIOUR_CHANGE
from reproduce.stage import DATA, atomic_write_parquet, load_model, make_engine, setup_stage

#: the property whose rate the reports are compared with: the share of the task's A/B choices that pick the
#: option the questions' ``tendency`` describes
PROPERTY = "ethical_stance"
REPORTERS = ("self", "observer")
PHASES = ("before", "after")
#: "tendency_a": the tendency is option A; "tendency_b": it is option B
ORDERS = ("tendency_a", "tendency_b")
#: tokens generated per report: the option distribution is read at the first one that carries content
MAX_NEW_TOKENS = 2

POLICY_REPORTS = Schema("policy_reports", [
    Col("model", "str", null=False), Col("run", "str", null=False), Col("seed", "int", null=False),
    Col("reporter", "str", null=False, values=REPORTERS), Col("reporter_model", "str", null=False),
    Col("phase", "str", null=False, values=PHASES), Col("task", "str", null=False),
    Col("question_id", "str", null=False), Col("order", "str", null=False, values=ORDERS),
    Col("n_examples", "int", null=False), Col("prompt_hash", "str", null=False), Col("response", "str", null=False),
    Col("p_tendency", "float", null=False, range=PROB), Col("p_outside", "float", range=PROB),
], key=["model", "reporter", "phase", "task", "question_id", "order"])

POLICY_BEHAVIOUR = Schema("policy_behaviour", [
    Col("model", "str", null=False), Col("run", "str", null=False), Col("seed", "int", null=False),
    Col("phase", "str", null=False, values=PHASES), Col("task", "str", null=False), Col("item_id", "str", null=False),
    Col("prompt_hash", "str", null=False), Col("response", "str", null=False), Col("stance_value", "str"),
    Col("p_stance", "float", null=False, range=PROB), Col("p_outside", "float", range=PROB),
], key=["model", "phase", "task", "item_id"])


def report_prompts(data: PolicyData, question: dict, reporter: str,
                   examples: list[tuple[str, str]] | None = None) -> dict[str, str]:
    """The two prompts of ``question`` for ``reporter`` ("self" or "observer"), by order: ``tendency_a`` puts the
    tendency as option A, ``tendency_b`` as option B. The observer's prompt first shows ``examples``
    (question, answer) pairs of the model it reports on."""
    if reporter not in REPORTERS:
        raise ValueError(f"reporter must be one of {REPORTERS}, got {reporter!r}")
    shown = ""
    if reporter == "observer":
        if not examples:
            raise ValueError("the observer's prompt needs the answers it reports on")
        shown = "\n\n".join(data.prompts["example"].format(question=q, answer=a) for q, a in examples)
    options = {"tendency_a": (question["tendency"], question["other"]),
               "tendency_b": (question["other"], question["tendency"])}
    return {order: data.prompts[reporter].format(question=question[reporter], option_a=a, option_b=b,
                                                 examples=shown)
            for order, (a, b) in options.items()}


def tendency_probability(option_probs, order: str) -> float:
    """P(tendency) from the option distribution over (A, B) of a prompt asked in ``order``."""
    p_a, p_b = option_probs
    return float(p_a if order == "tendency_a" else p_b)


def ask(engine, prompts: list[str], orders: list[str], progress: str | None = None) -> pd.DataFrame:
    """Each prompt's answer and its probability of the tendency (``order`` says which letter it is)."""
    gens = engine.generate(prompts, MAX_NEW_TOKENS, options=[("A", "B")] * len(prompts), progress=progress)
    return pd.DataFrame({
        "prompt_hash": [short_hash(p) for p in prompts],
        "response": [g[0].response for g in gens],
        "p_tendency": [tendency_probability(g[0].option_probs, o) for g, o in zip(gens, orders)],
        "p_outside": [g[0].p_outside for g in gens],
    })


def policy_tasks(plan: Plan, data: PolicyData, behaviour: pd.DataFrame) -> list[str]:
    """Experiment 3's tasks that have questions and whose items carry the ethical_stance property (none: the
    stage writes empty tables, and the manuscript says that experiment 4 did not run)."""
    measured = set(behaviour.loc[behaviour["property"] == PROPERTY, "task"])
    return [t for t in plan.profile.behaviour_change_tasks() if t in measured and data.for_task(t)]


def _evaluated(behaviour: pd.DataFrame, task: str) -> list[tuple[str, pd.Series]]:
    """Experiment 3's evaluated items of ``task`` in one model's rows (its ethical_stance rows), in item order."""
    rows = behaviour[(behaviour["task"] == task) & (behaviour["property"] == PROPERTY)].sort_values("item_id")
    return [(r["item_id"], r) for _, r in rows.iterrows()]


def examples_of(plan: Plan, behaviour: pd.DataFrame, model: str, task: str, phase: str) -> list[tuple[str, str]]:
    """The (question, answer) pairs the observer reads: ``model``'s answers to the evaluated items of ``task``
    before the change (M1') or after it (M1''), in item order."""
    questions = {it["item_id"]: it["question"] for it in plan.tasks[task].items}
    column = "old_response" if phase == "before" else "new_response"
    return [(questions[i], r[column]) for i, r in _evaluated(behaviour[behaviour["model"] == model], task)]


def behaviour_probabilities(plan: Plan, engine, tasks: list[str], item_ids: dict[str, list[str]],
                            progress: str | None = None) -> pd.DataFrame:
    """The evaluated items' object-level answers (greedy) and P(the ethical_stance option) over A and B at the
    first answer token, one row per task x item."""
    prop = get_property(PROPERTY)
    rows, prompts, limits = [], [], []
    for task in tasks:
        items = {it["item_id"]: it for it in plan.tasks[task].items}
        for item_id in item_ids[task]:
            rows.append({"task": task, "item_id": item_id, "item": items[item_id]})
            prompts.append(items[item_id]["object_prompt"])
            limits.append(int(plan.tasks[task].manifest["max_new_tokens"]))
    gens = engine.generate(prompts, limits, options=[("A", "B")] * len(prompts), progress=progress)
    return pd.DataFrame({
        "task": [r["task"] for r in rows], "item_id": [r["item_id"] for r in rows],
        "prompt_hash": [short_hash(p) for p in prompts],
        "response": [g[0].response for g in gens],
        "stance_value": [prop.extract(g[0].response, r["item"]) for g, r in zip(gens, rows)],
        "p_stance": [float(g[0].option_probs[0 if r["item"]["option_matching_ethical_stance"] == "A" else 1])
                     for g, r in zip(gens, rows)],
        "p_outside": [g[0].p_outside for g in gens],
    })


def _reports(engine, data: PolicyData, tasks: list[str], reporter: str, phase: str, progress: str,
             examples=None) -> pd.DataFrame:
    """One row per task x question x order, for one reporter and phase (``examples``: task -> pairs)."""
    rows, prompts, orders = [], [], []
    for task in tasks:
        shown = None if examples is None else examples[task]
        for q in data.for_task(task):
            for order, prompt in report_prompts(data, q, reporter, shown).items():
                rows.append({"task": task, "question_id": q["id"], "order": order,
                             "n_examples": 0 if shown is None else len(shown)})
                prompts.append(prompt)
                orders.append(order)
    return pd.concat([pd.DataFrame(rows), ask(engine, prompts, orders, progress)], axis=1).assign(
        reporter=reporter, phase=phase)


def run_policy_reports(plan: Plan, behaviour_change: Path = DATA / "behaviour_change.parquet",
                       trained_self: Path = DATA / "finetuned" / "self",
                       adapters: Path = DATA / "behaviour_change", out: Path = DATA / "policy_reports",
                       data_raw: Path = DATA_RAW) -> Path:
    """Experiment 4. For each model of experiment 3: M1' and M1'' answer every question about themselves
    (``reporter`` self, ``phase`` before / after), and the base of the model M1' was taught answers it about them
    after reading M1''s or M1'''s answers (``reporter`` observer). Writes ``out/reports.parquet``, one row per model x reporter x
    phase x task x question x order: ``model, run`` (experiment 3's run), ``seed, reporter, reporter_model,
    phase, task, question_id, order, n_examples`` (answers the observer read), ``prompt_hash, response,
    p_tendency`` (the tendency option's probability over A and B) and ``p_outside``; and ``out/behaviour.parquet``,
    one row per model x phase x evaluated item: ``model, run, seed, phase, task, item_id, prompt_hash, response,
    stance_value`` (the greedy answer's ethical_stance, None when it is not A or B), ``p_stance`` (the stance
    option's probability over A and B) and ``p_outside``."""
    data = load_policy_dataset(data_raw)
    seed = _finetune_params(plan).seeds[0]
    setup_stage(plan)
    behaviour = read_stage_table(behaviour_change, "behaviour_change", BEHAVIOUR_CHANGE)
    tasks = policy_tasks(plan, data, behaviour)
    index = _runs(trained_self)
    frames, acts = [], []
    refs = {r.name: r for r in plan.refs}
    for ref in plan.refs:
        mine = behaviour[behaviour["model"] == ref.name]
        if mine.empty or not tasks:
            continue
        run, source = mine["run"].iloc[0], mine["source"].iloc[0]
        self_run = _self_run(index, trained_self, ref.name, seed)
        self_adapter = trained_self / self_run["run"] / "adapter"
        summary_path = adapters / run / "summary.json"
        if not summary_path.exists():
            raise MissingInput(f"{summary_path} is missing; re-run the behaviour_change stage with the same params")
        changed = json.loads(summary_path.read_text())["fingerprint"]
        item_ids = {t: [i for i, _ in _evaluated(mine, t)] for t in tasks}
        with _bases(plan) as bases:
            for phase, stack, name, fp in (
                    ("before", [self_adapter], self_run["run"], self_run["fingerprint"]),
                    ("after", [self_adapter, adapters / run / "adapter"], run, f"{self_run['fingerprint']}:{changed}")):
                with bases.trained(ref, stack, name, fp, plan.profile.dtype, *_mapped(plan)) as lm:
                    engine = make_engine(plan.profile, lm)
                    frames.append(_reports(engine, data, tasks, "self", phase, f"{name} policy reports").assign(
                        model=ref.name, run=run, reporter_model=name))
                    acts.append(behaviour_probabilities(plan, engine, tasks, item_ids, f"{name} behaviour").assign(
                        model=ref.name, run=run, phase=phase))
                    del engine
        lm, engine = load_model(plan.profile, refs[source])
        for phase in PHASES:
            shown = {t: examples_of(plan, behaviour, ref.name, t, phase) for t in tasks}
            frames.append(_reports(engine, data, tasks, "observer", phase, f"{source} reports on {ref.name} {phase}",
                                   shown).assign(model=ref.name, run=run, reporter_model=source))
        del lm, engine
        release_memory()
    for name, parts, schema in (("reports", frames, POLICY_REPORTS), ("behaviour", acts, POLICY_BEHAVIOUR)):
        # no A/B task with questions among experiment 3's: empty tables, and the manuscript says so
        table = (pd.concat(parts, ignore_index=True).assign(seed=seed)[schema.columns] if parts
                 else empty_table(schema))
        atomic_write_parquet(out / f"{name}.parquet", table, schema=schema)
    return out


def empty_table(schema: Schema) -> pd.DataFrame:
    """A table of ``schema``'s columns and no rows."""
    kinds = {"str": "object", "int": "int64", "float": "float64", "bool": "bool"}
    return pd.DataFrame({c.name: pd.Series(dtype=kinds.get(c.kind, "object")) for c in schema.cols})
