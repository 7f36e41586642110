"""What the stages of experiments 1-3 ask of a model, for the memory plan (:mod:`reproduce.lm.memory_plan`): the
object-level prompts (with the temperature-1 samples of the calibration subset), the hypothetical prompts and
the training pairs of the profile's tasks, rendered in the model's own prompt format."""

from __future__ import annotations

from reproduce.lm.memory_plan import TRAIN_SPAN, prompt_lengths as _lengths
from reproduce.self_prediction.properties import META_MAX_NEW_TOKENS


def workloads(plan, tok, fmt) -> dict[str, dict]:
    """``object_level``, ``meta`` and (with a ``finetune`` section) ``finetune`` workloads of ``plan``, a
    :class:`reproduce.self_prediction.runs.Plan`, for the tokenizer ``tok`` and prompt format ``fmt``."""
    p = plan.profile
    obj, cal, meta = [], [], []
    for task in plan.tasks.values():
        items = plan.items(task)
        obj += [it["object_prompt"] for it in items]
        if task.split == "test":
            cal += [it["object_prompt"] for it in items[:p.sampling.items_per_task]]
            meta += [it["hypothetical_prompts"][q] for it in items for q in plan.properties[task.name]]
    train_meta = [it["hypothetical_prompts"][q] for t in plan.tasks.values() if t.split == "train"
                  for it in plan.items(t) for q in plan.properties[t.name]]
    lo, lm_, lt = _lengths(tok, fmt, obj), _lengths(tok, fmt, meta or [""]), _lengths(tok, fmt, train_meta or [""])
    lc = _lengths(tok, fmt, cal) if cal else [0]
    new_obj = max(t.manifest["max_new_tokens"] for t in plan.tasks.values())
    new_meta = max(META_MAX_NEW_TOKENS.values())
    n = p.sampling.n_samples
    out = {
        "object_level": dict(prompts=len(obj) + len(cal) * n, tokens=sum(lo) + sum(lc) * n,
                             longest=max(lo + lc), new=new_obj, rows=max(p.batch_size, n)),
        "meta": dict(prompts=len(meta), tokens=sum(lm_), longest=max(lm_), new=new_meta, rows=p.batch_size),
    }
    if p.finetune is not None:
        pairs = min(len(train_meta), p.finetune.max_examples or len(train_meta))
        out["finetune"] = dict(prompts=pairs, tokens=round(pairs * sum(lt) / len(lt)), longest=max(lt) + TRAIN_SPAN,
                               new=0, rows=p.finetune.batch_size)
    return out
