"""LoRA finetuning on (prompt -> answer) pairs, the answer tokens alone in the loss.

The pairs come from an experiment (for self- and cross-prediction: :mod:`reproduce.self_prediction.training_pairs`,
hypothetical prompt -> property of a target's answer); this module knows only prompts and answers.

Training (:func:`finetune`) runs under Hugging Face ``accelerate`` (``accelerate launch`` spreads the same
code over several GPUs), with LoRA adapters on every linear layer (peft), AdamW, and the loss on the answer
tokens only. Batches are left-padded so that every answer ends at the last position; the logits of the last
few positions alone are computed (``logits_to_keep``), which matters with Gemma's 262k-token vocabulary.
A checkpoint (adapter, optimiser, step) is written atomically every ``checkpoint_every`` steps; a killed run
resumes from it. The loss curve goes to a TSV file that ``dvc plots`` reads.

A finished run is reused, and a checkpoint resumed, only under the same :func:`fingerprint`: the model, the
examples, the seed, the parameters that change the training (:data:`TRAINING_PARAMS`), the precision, and
the source of this module and the library versions; adding a scaling size or checkpointing more often
retrains nothing, editing the loss retrains everything.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from reproduce.config import Finetune
from reproduce.hardware import resolve_gradient_checkpointing, resolve_mixed_precision
from reproduce.io import atomic_dir, atomic_write_bytes, atomic_write_json, short_hash
from reproduce.lm.models import LoadedModel
from reproduce.versioning import chat_template_hash, code_version, runtime_versions
from reproduce.errors import ProjectError


class TrainingError(ProjectError, ValueError):
    """Training data or parameters that cannot produce a meaningful finetune."""


def completion(lm: LoadedModel, answer: str) -> str:
    """How a trained answer is written after the rendered prompt: the chat turn's end, or a newline."""
    if lm.format.kind == "chat":
        return answer + lm.tokenizer.eos_token
    return " " + answer + "\n"


@dataclass
class Encoded:
    prompt_ids: list[list[int]]
    answer_ids: list[list[int]]


def encode(lm: LoadedModel, examples: pd.DataFrame, max_length: int) -> Encoded:
    tok = lm.tokenizer
    prompts = tok([lm.format.render(p) for p in examples["prompt"]],
                  add_special_tokens=lm.format.add_special_tokens)["input_ids"]
    answers = tok([completion(lm, a) for a in examples["answer"]], add_special_tokens=False)["input_ids"]
    too_long = [i for i, (p, a) in enumerate(zip(prompts, answers)) if len(p) + len(a) > max_length]
    if too_long:
        raise TrainingError(f"{len(too_long)} examples exceed finetune.max_length={max_length} tokens "
                            f"(longest {max(len(prompts[i]) + len(answers[i]) for i in too_long)}); raise it")
    return Encoded(prompts, answers)


def collate(batch: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Left-pad prompt+answer so every answer ends at the last position; mark answer tokens. The reference
    layout: every row computed in full (:func:`collate_step` computes the same loss with less work)."""
    return _rows(batch, pad_id, 0)


def _rows(batch: list[tuple[list[int], list[int]]], pad_id: int, prefix: int) -> dict[str, torch.Tensor]:
    """Rows of ``batch`` after their first ``prefix`` tokens (which a shared cache holds), left-padded to one
    width; the attention mask covers the prefix too, so padding sits between the prefix and each row's own
    tokens and is masked out."""
    width = max(len(p) + len(a) for p, a in batch) - prefix
    span = max(len(a) for _, a in batch)
    ids, mask, answer_mask = [], [], []
    for p, a in batch:
        seq = (p + a)[prefix:]
        ids.append([pad_id] * (width - len(seq)) + seq)
        mask.append([1] * prefix + [0] * (width - len(seq)) + [1] * len(seq))
        answer_mask.append([False] * (span - len(a)) + [True] * len(a))
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask),
            "answer_mask": torch.tensor(answer_mask)}


#: shortest common prompt prefix worth one extra forward pass
MIN_SHARED_PREFIX = 4


def collate_step(batch: list[tuple[list[int], list[int]]], pad_id: int, share_prefix: bool = True) -> dict:
    """One training step's rows laid out to compute the loss of :func:`collate` with fewer positions: the prompt
    prefix every row shares (the chat template's opening and system prompt, "Previously, you were asked the
    following question") is computed once, as one row (``prefix_ids``), and its keys and values serve every
    row, whose own tokens follow it left-padded. Below :data:`MIN_SHARED_PREFIX` shared tokens, or with
    ``share_prefix=False``, ``prefix_ids`` is empty and the step is :func:`collate`'s layout.

    ``benchmarks/bench_finetune.py --layouts`` times this layout against :func:`collate`'s. Splitting a step
    further into groups of similar length, to compute less padding, was measured too (2-core EPYC, both
    embedded models) and was not faster: the smaller matrix products cost what the padding saved."""
    prefix = 0
    if share_prefix:
        prefix = len(os.path.commonprefix([p for p, _ in batch]))
        prefix = min(prefix, min(len(p) for p, _ in batch) - 1)  # every row keeps a prompt token of its own
        prefix = prefix if prefix >= MIN_SHARED_PREFIX else 0
    return {"prefix_ids": torch.tensor([batch[0][0][:prefix]], dtype=torch.long), **_rows(batch, pad_id, prefix)}


def answer_loss(model: torch.nn.Module, batch: Mapping[str, torch.Tensor], reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy over the answer tokens (``mean`` or ``sum``), from the logits of the last ``span + 1``
    positions. Position ids count real tokens only, as in the engine, so a row's numbers do not depend on how
    much padding its batch needed. With a shared prefix (:func:`collate_step`), the prefix is computed once,
    with gradients, and its keys and values are repeated for every row: the loss and its gradient are those of
    the full rows: in float32 its gradient matched computing each row alone, unpadded, to 1.5e-6 (relative
    norm, SmolLM2, one step of 8 rows), where :func:`collate`'s fully left-padded layout was 7e-5 away."""
    span = batch["answer_mask"].shape[1]
    mask = batch["attention_mask"]
    width = batch["input_ids"].shape[1]
    cache = None
    if "prefix_ids" in batch and batch["prefix_ids"].shape[1]:
        cache = model(input_ids=batch["prefix_ids"], logits_to_keep=1, use_cache=True).past_key_values
        cache.batch_repeat_interleave(batch["input_ids"].shape[0])  # differentiable: the rows' gradients sum back
    out = model(input_ids=batch["input_ids"], attention_mask=mask,
                position_ids=(mask.cumsum(-1) - 1).clamp(min=0)[:, -width:], past_key_values=cache,
                logits_to_keep=span + 1, use_cache=cache is not None)
    logits = out.logits[:, :-1].float()  # position t predicts token t + 1
    targets = batch["input_ids"][:, -span:]
    m = batch["answer_mask"]
    return torch.nn.functional.cross_entropy(logits[m], targets[m], reduction=reduction)


#: the parameters that change what a run computes; the others (``max_examples``, ``scaling_sizes``,
#: ``checkpoint_every``, ``max_length``) only choose the examples, which runs exist, when to checkpoint, or
#: whether an example is refused, so changing them must not retrain a finished run
TRAINING_PARAMS = ("lora_rank", "lora_alpha", "lora_dropout", "learning_rate", "epochs", "batch_size")


def pairs_hash(examples: pd.DataFrame) -> str:
    """A short hash of training pairs in order (prompt and answer): part of a run's fingerprint, and recorded in
    the runs' index, where it is equal for the runs that trained on the same pairs."""
    return short_hash("\n".join(examples["prompt"] + "\x00" + examples["answer"]))


def fingerprint_fields(lm: LoadedModel, examples: pd.DataFrame, cfg: Finetune, seed: int) -> dict:
    """Everything that determines a run's adapter: the model (its weights by content) and how its prompts are
    rendered, the examples in order, the seed, the training parameters, the resolved mixed precision, the dtype
    the base weights were loaded at, the device type, the code of this module, of :mod:`reproduce.lm.formats` and
    of :mod:`reproduce.lm.models` (so a change to the loss, the batching, the prompt rendering or the way the base
    is loaded retrains) and the library versions. Gradient checkpointing is left out: it recomputes the same
    operations and changes memory, not the adapter. So is the number of training processes: each step's gradient
    is the mean over its answer tokens however they fall to the processes, the same up to the order of a sum."""
    return {
        "model": lm.ref.spec, "weights": lm.ref.fingerprint, "format": lm.format.kind,
        "system_prompt": lm.format.system_prompt, "chat_template": chat_template_hash(lm),
        "data": pairs_hash(examples), "seed": seed,
        "params": {k: getattr(cfg, k) for k in TRAINING_PARAMS},
        "precision": resolve_mixed_precision(cfg.mixed_precision, lm.device), "base_dtype": lm.dtype_name,
        "device": lm.device.type,
        "code": code_version(__name__, "reproduce.lm.formats", "reproduce.lm.models"), "runtime": runtime_versions(),
    }


def fingerprint(lm: LoadedModel, examples: pd.DataFrame, cfg: Finetune, seed: int) -> str:
    return short_hash(json.dumps(fingerprint_fields(lm, examples, cfg, seed), sort_keys=True))


def _lora(lm: LoadedModel, cfg: Finetune):
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                        target_modules="all-linear", task_type="CAUSAL_LM")
    return get_peft_model(lm.model, config)


def finetune(lm: LoadedModel, examples: pd.DataFrame, cfg: Finetune, out_dir: str | Path, seed: int,
             progress: str | None = None) -> dict:
    """Train a LoRA adapter on ``examples``; write ``out_dir/adapter``, ``train_log.tsv``, ``summary.json``.

    The LoRA layers live in ``lm.model`` only while training: on return (or an exception) they are taken out
    again and the base weights, which training never changes, are as they came in, so one loaded base serves
    every run of a stage. Resumes from ``out_dir/.checkpoint`` when it belongs to the same model, data,
    parameters and seed.
    """
    from accelerate import Accelerator

    if examples.empty:
        raise TrainingError("no training examples")
    out_dir = Path(out_dir)
    fp = fingerprint(lm, examples, cfg, seed)
    summary_path = out_dir / "summary.json"
    if summary_path.exists() and json.loads(summary_path.read_text()).get("fingerprint") == fp:
        return json.loads(summary_path.read_text())  # already trained on exactly this

    enc = encode(lm, examples, cfg.max_length)
    pairs = list(zip(enc.prompt_ids, enc.answer_ids))
    steps_per_epoch = math.ceil(len(pairs) / cfg.batch_size)
    total = max(1, round(cfg.epochs * steps_per_epoch))
    order = []  # the example order of every step, fixed by the seed
    rng = np.random.default_rng(seed)
    while len(order) < total * cfg.batch_size:
        order.extend(rng.permutation(len(pairs)).tolist())

    torch.manual_seed(seed)
    accelerator = Accelerator(mixed_precision=resolve_mixed_precision(cfg.mixed_precision, lm.device),
                              cpu=lm.device.type == "cpu")
    checkpointing = resolve_gradient_checkpointing(cfg.gradient_checkpointing, lm.device)
    if checkpointing:
        _checkpointing(lm.model, True)
    model = _lora(lm, cfg)
    try:
        return _train_loop(lm, model, accelerator, pairs, order, total, cfg, out_dir, fp, seed, checkpointing, progress)
    finally:
        model.unload()  # the LoRA layers out again: lm.model is the untouched base
        if checkpointing:
            _checkpointing(lm.model, False)
        lm.model.eval()


def _checkpointing(model, on: bool) -> None:
    """Activation (gradient) checkpointing on or off; non-reentrant, which needs no input that requires grad
    and so works with a frozen base. transformers 5.2x renamed the methods; the old names serve older ones."""
    if hasattr(model, "activation_checkpointing_enable"):
        if on:
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.activation_checkpointing_disable()
    elif on:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_disable()


def _train_loop(lm: LoadedModel, model, accelerator, pairs: list, order: list[int], total: int, cfg: Finetune,
                out_dir: Path, fp: str, seed: int, checkpointing: bool, progress: str | None) -> dict:
    from peft import get_peft_model_state_dict, set_peft_model_state_dict

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.learning_rate)
    model, optimizer = accelerator.prepare(model, optimizer)

    ckpt = out_dir / ".checkpoint"
    start, log = 0, []
    if (ckpt / "state.pt").exists():
        state = torch.load(ckpt / "state.pt", map_location="cpu", weights_only=False)
        if state["fingerprint"] == fp:
            set_peft_model_state_dict(accelerator.unwrap_model(model), state["adapter"])
            optimizer.load_state_dict(state["optimizer"])
            start, log = state["step"], state["log"]

    pad = lm.tokenizer.pad_token_id
    model.train()
    world = accelerator.num_processes
    bar = tqdm(range(start, total), desc=progress, unit="step", leave=False,
               disable=progress is None or not accelerator.is_main_process)
    for step in bar:
        step_idx = order[step * cfg.batch_size:(step + 1) * cfg.batch_size]
        n_tokens = sum(len(pairs[i][1]) for i in step_idx)  # answer tokens of the whole step, every process
        idx = step_idx[accelerator.process_index::world]  # each process its share of the batch
        if idx:
            # the shared prefix's cache would be appended to twice when checkpointing recomputes a layer
            step_rows = collate_step([pairs[i] for i in idx], pad, share_prefix=not checkpointing)
            batch = {k: v.to(accelerator.device) for k, v in step_rows.items()}
            with accelerator.autocast():
                summed = answer_loss(model, batch, "sum")
        else:  # a step smaller than the process count: take part in the gradient all-reduce with nothing
            summed = sum((p * 0).sum() for p in model.parameters() if p.requires_grad)
        # the gradients are averaged over processes: scaled by their count, the result is the mean over the
        # step's answer tokens, however they fell to the processes
        accelerator.backward(summed * world / n_tokens)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss = (accelerator.reduce(summed.detach(), "sum") if world > 1 else summed.detach()) / n_tokens
        log.append((step + 1, float(loss)))
        bar.set_postfix(loss=f"{log[-1][1]:.3f}")
        if (step + 1) % cfg.checkpoint_every == 0 and step + 1 < total and accelerator.is_main_process:
            _save_checkpoint(ckpt, fp, step + 1, log, get_peft_model_state_dict(accelerator.unwrap_model(model)),
                             optimizer.state_dict())
    model.eval()
    summary = {"fingerprint": fp, "model": lm.ref.spec, "examples": len(pairs), "steps": total, "seed": seed,
               "mixed_precision": resolve_mixed_precision(cfg.mixed_precision, lm.device),
               "base_dtype": lm.dtype_name, "gradient_checkpointing": checkpointing,
               "first_loss": log[0][1], "final_loss": log[-1][1], "params": cfg.model_dump()}
    if accelerator.is_main_process:
        _save_final(out_dir, accelerator.unwrap_model(model), log, summary)
        shutil.rmtree(ckpt, ignore_errors=True)
    accelerator.wait_for_everyone()  # the adapter is on disk before any process reads it
    return summary


def portable_adapter(folder: Path, spec: str) -> None:
    """peft writes the local folder of the base model's weights (this machine's model cache) into a saved
    adapter's ``adapter_config.json`` and model card; name the model's spec there instead (``smollm2-135m``,
    an HF id, a path as given), so that an adapter's bytes, and the run's ``dvc.lock``, do not depend on where
    the cache is. Nothing reads that field back: adapters are applied to a base loaded from its own spec.
    peft writes ``target_modules`` (a set to it) in the order of the process's string hashing, which changes from
    run to run: it is sorted here, so that the same training gives the same bytes."""
    folder = Path(folder)
    cfg_file, card = folder / "adapter_config.json", folder / "README.md"
    cfg = json.loads(cfg_file.read_text())
    local = {cfg.get("base_model_name_or_path")}
    cfg["base_model_name_or_path"] = spec
    if isinstance(cfg.get("target_modules"), list):
        cfg["target_modules"] = sorted(cfg["target_modules"])
    atomic_write_json(cfg_file, cfg)
    if card.exists():  # the front matter names the folder twice: "base_model: <folder>", "base_model:adapter:<folder>"
        text = card.read_text()
        local |= {ln[len("base_model: "):].strip() for ln in text.splitlines() if ln.startswith("base_model: ")}
        for path in sorted((p for p in local if p and p != spec), key=len, reverse=True):
            text = text.replace(path, spec)
        card.write_text(text)


def _save_checkpoint(ckpt: Path, fp: str, step: int, log: list, adapter: dict, optimizer: dict) -> None:
    buf = io.BytesIO()
    torch.save({"fingerprint": fp, "step": step, "log": log, "adapter": adapter, "optimizer": optimizer}, buf)
    atomic_write_bytes(ckpt / "state.pt", buf.getvalue())


def _save_final(out_dir: Path, model, log: list, summary: dict) -> None:
    with atomic_dir(out_dir / "adapter") as tmp:
        model.save_pretrained(tmp)
        portable_adapter(tmp, summary["model"])
    atomic_write_bytes(out_dir / "train_log.tsv",
                       ("step\tloss\n" + "".join(f"{s}\t{v:.6f}\n" for s, v in log)).encode())
    atomic_write_json(out_dir / "summary.json", summary)  # written last: its presence means "done"
