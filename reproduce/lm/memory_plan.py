"""``looking-inward plan``: what each stage of a profile will ask of the machine, before any weight is read.

For every model of the profile and every model stage this prints the work (prompts, prompt tokens, the
longest sequence) and an estimate of the peak memory on the device, and it fails when a model cannot fit.
Nothing is loaded but tokenizers and configs: the parameter count comes from the architecture built on
PyTorch's ``meta`` device, the token counts from the profile's real prompts rendered in each model's format.

The memory model (bytes; ``b`` the bytes per weight at the stage's dtype, ``L`` layers, ``d`` the hidden
width, ``f`` the MLP width, ``kv`` the key/value width, ``V`` the vocabulary):

- inference: weights ``P*b`` + key/value cache ``2*L*kv*b*rows*T`` (``rows`` = the batch, or the samples
  of one prompt when more; ``T`` = longest prompt + new tokens) + one layer's prefill activations
  ``rows*T_prompt*(4d + 3f)*b`` + float32 logits of one position ``2*rows*V*4``;
- LoRA training: base weights ``P*b_base`` + adapter ``16`` bytes per LoRA parameter (float32 weight, grad
  and two Adam moments) + activations, per token of the padded batch: without checkpointing
  ``L*((10d + 4f)*b_base + 2d*4)`` (the tensors kept for the backward pass, and the float32 residual
  stream), with checkpointing ``L*d*b_base`` (each layer's input) plus one layer's ``(10d + 4f)*b_base``;
  plus float32 logits of the answer positions ``3*batch*(span+1)*V*4``.

It is an estimate, with a 10% margin for the allocator. The activation terms were fitted to peaks measured
on an H100 (Llama-8B shape, LoRA rank 32, 16 pairs of 137 tokens: within 2% before the margin for all four
settings of base dtype and checkpointing); the inference peaks measured there were 15-20% below their
estimates. Trained-run inference merges adapters into the one loaded base (``reproduce.lm.adapters``), whose
original weights wait in host memory, not on the device.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from reproduce.errors import ProjectError

GIB = 2**30
MARGIN = 1.10
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
TRAIN_SPAN = 8  # answer tokens of a training pair, at most, for the logits term


class PlanError(ProjectError, RuntimeError):
    """A profile whose models cannot fit the device they are meant to run on."""


@dataclass(frozen=True)
class Shape:
    params: int
    layers: int
    hidden: int
    intermediate: int
    kv_width: int
    vocab: int
    lora_per_rank: int  # LoRA parameters per unit of rank (sum of in + out over every adapted linear layer)


def shape_of(ref) -> Shape:
    """The architecture of ``ref``, built on the meta device (no memory, no weights)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from reproduce.lm.models import random_config, weights_dir

    if ref.kind == "random":
        cfg = random_config(ref, load_tokenizer(ref))
    else:
        cfg = AutoConfig.from_pretrained(weights_dir(ref), local_files_only=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    kv = (getattr(text, "num_key_value_heads", None) or heads) * head_dim
    out_emb = model.get_output_embeddings()
    lora = sum(m.in_features + m.out_features for m in model.modules()
               if isinstance(m, torch.nn.Linear) and m is not out_emb)
    return Shape(sum(p.numel() for p in model.parameters()), text.num_hidden_layers, text.hidden_size,
                 text.intermediate_size, kv, model.get_input_embeddings().weight.shape[0], lora)


def load_tokenizer(ref):
    """The tokenizer of ``ref`` (of its tokenizer source for a ``random:`` model), offline: the one the stage's
    load will share (read once per process)."""
    from reproduce.lm.models import ModelError, read_tokenizer, tokenizer_dir

    path = tokenizer_dir(ref)
    try:
        return read_tokenizer(path)
    except OSError as exc:
        raise ModelError(f"could not load the tokenizer of {ref.spec!r} from {path} offline: {exc}") from exc


def inference_bytes(s: Shape, dtype: str, rows: int, prompt: int, new: int) -> float:
    b = BYTES[dtype]
    return MARGIN * (s.params * b + 2 * s.layers * s.kv_width * b * rows * (prompt + new)
                     + rows * prompt * (4 * s.hidden + 3 * s.intermediate) * b + 2 * rows * s.vocab * 4)


def training_bytes(s: Shape, base_dtype: str, rank: int, tokens: int, batch: int, checkpointing: bool) -> float:
    b = BYTES[base_dtype]
    layer = (10 * s.hidden + 4 * s.intermediate) * b
    act = tokens * (s.layers * s.hidden * b + layer) if checkpointing else \
        tokens * s.layers * (layer + 2 * s.hidden * 4)
    return MARGIN * (s.params * b + 16 * rank * s.lora_per_rank + act + 3 * batch * (TRAIN_SPAN + 1) * s.vocab * 4)


def prompt_lengths(lm_tok, fmt, prompts: list[str]) -> list[int]:
    """The token count of each prompt rendered in ``fmt``, as the engine would encode it."""
    if not prompts:
        return []  # a fast tokenizer's batch call fails on an empty list
    rendered = [fmt.render(p) for p in prompts]
    return [len(x) for x in lm_tok(rendered, add_special_tokens=fmt.add_special_tokens)["input_ids"]]


def workloads(plan, ref) -> dict[str, dict]:
    """Per kind of work of ``plan`` for the model ``ref``: ``prompts``, ``tokens`` (prompt tokens without
    sharing), ``longest`` prompt, ``new`` tokens at most, ``rows`` per batch; for finetuning ``pairs`` and the
    longest padded pair. Each experiment family's plan says what its stages run
    (:meth:`reproduce.stage.StagePlan.workloads`); empty when it has nothing to bound."""
    from reproduce.lm.formats import PromptFormat

    if not plan.has_workload():
        return {}
    tok = load_tokenizer(ref)
    fmt = PromptFormat("chat" if getattr(tok, "chat_template", None) else "plain", tok, plan.profile.system_prompt)
    return plan.workloads(tok, fmt)


def estimate(plan, device: str | None = None) -> list[dict]:
    """One row per model x stage kind: work and estimated peak (GiB) on ``device`` (the profile's by default).
    A plan without task datasets (the concept-injection and mirror stages, whose prompts are built as they
    run) gets a row per model for each bound in ``plan.bounds``, at the stage's longest sequence bounded from
    above, or for the weights alone without one."""
    from reproduce.hardware import resolve_base_dtype, resolve_dtype, resolve_gradient_checkpointing
    from reproduce.lm.models import pick_device

    p = plan.profile
    dev = torch.device(device) if device else pick_device(p.device)
    inf_dtype = resolve_dtype(p.dtype, dev).dtype
    rows = []
    for ref in plan.refs:
        s = shape_of(ref)
        work = workloads(plan, ref)
        if not work:
            rows.append(dict(model=ref.name, stages="weights (no task prompts)", training=False, dtype=inf_dtype,
                             params=s.params, prompts=0, tokens=0, longest=0, new=0, rows=0,
                             peak_gib=MARGIN * s.params * BYTES[inf_dtype] / GIB))
            continue
        for kind, stages in (("object_level", "answer (object level)"), ("meta", "predict (meta level)"),
                             ("injection", "concept injection"), ("mirror", "mirror conversations")):
            if kind not in work:
                continue
            w = work[kind]
            rows.append(dict(model=ref.name, stages=stages, training=False, dtype=inf_dtype, params=s.params, **w,
                             peak_gib=inference_bytes(s, inf_dtype, w["rows"], w["longest"], w["new"]) / GIB))
        if "finetune" in work:
            ft = p.finetune
            base = resolve_base_dtype(ft.base_dtype, dev)
            ckpt = resolve_gradient_checkpointing(ft.gradient_checkpointing, dev)
            w = work["finetune"]
            rows.append(dict(model=ref.name, stages="LoRA training", training=True,
                             dtype=f"{base} base, LoRA r{ft.lora_rank}" + (", checkpointing" if ckpt else ""),
                             params=s.params, **w,
                             peak_gib=training_bytes(s, base, ft.lora_rank, w["rows"] * w["longest"], w["rows"],
                                                     ckpt) / GIB))
    return rows


def capacity_gib(device: torch.device) -> tuple[float, str]:
    """Memory of ``device`` in GiB, and its name."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return total / GIB, torch.cuda.get_device_name(device)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return total / GIB, "CPU RAM"


def check(rows: list[dict], capacity: float, where: str) -> list[str]:
    """Raise :class:`PlanError` naming every stage that does not fit; returns warnings for tight ones."""
    over = [r for r in rows if r["peak_gib"] > capacity]
    if over:
        worst = max(over, key=lambda r: r["peak_gib"])
        raise PlanError(f"{len(over)} stage(s) cannot fit {where} ({capacity:.1f} GiB): {worst['model']} needs about "
                        f"{worst['peak_gib']:.1f} GiB for {worst['stages']} ({worst['dtype']}); lower batch_size "
                        "(or finetune.batch_size), turn finetune.gradient_checkpointing on, set device_map: auto "
                        "(inference over several GPUs and CPU memory), use a smaller model, or run on a larger "
                        "device")
    return [f"{r['model']}: {r['stages']} would use {r['peak_gib']:.1f} of {capacity:.1f} GiB"
            for r in rows if r["peak_gib"] > 0.9 * capacity]


def format_rows(rows: list[dict]) -> str:
    head = (f"{'model':<16} {'params':>8} {'work':<22} {'prompts':>8} {'tokens':>10} {'longest':>8} {'rows':>5} "
            f"{'peak GiB':>9}  dtype")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['model']:<16} {r['params'] / 1e9:7.2f}B {r['stages']:<22} {r['prompts']:>8} {r['tokens']:>10} "
                     f"{r['longest']:>8} {r['rows']:>5} {r['peak_gib']:>9.1f}  {r['dtype']}")
    lines += ["", "answer: object_level, object_level_trained and behaviour_change (T=1 samples included);",
              "predict: meta_untrained, meta_trained and behaviour_change; LoRA training: finetune_self,",
              "finetune_cross and behaviour_change (prompts = training pairs, longest = padded pair).",
              "tokens: prompt tokens without prefix sharing, summed; rows: sequences per batch.",
              "concept injection, mirror conversations: their longest sequence bounded from above (their prompts",
              "are built as the stages run; mirror prompts: the altered-history prompts of one model)."]
    return "\n".join(lines)


def fits_device(plan, device: str | None = None, memory_gib: float | None = None) -> list[str]:
    """Raise :class:`PlanError` when a model of ``plan`` cannot fit the device (measured, or ``memory_gib``
    per device); returns the warnings for tight fits. Every model stage calls it first on a GPU."""
    return _checked(plan, device, memory_gib)[1]


def _checked(plan, device: str | None, memory_gib: float | None,
             extra=None) -> tuple[list[dict], list[str], float, str]:
    from reproduce.lm.models import pick_device

    rows = estimate(plan, device) + (estimate(extra, device) if extra is not None else [])
    dev = torch.device(device) if device else pick_device(plan.profile.device)
    if memory_gib is not None:
        capacity, where = memory_gib, f"the stated {dev.type} memory"
    elif dev.type == "cuda" and not torch.cuda.is_available():
        raise PlanError("--device cuda without a visible GPU needs --memory-gib (the GPU's memory) to plan for")
    else:
        capacity, where = capacity_gib(dev)
    training = [r for r in rows if r["training"]]
    inference = [r for r in rows if not r["training"]]
    n_gpus = torch.cuda.device_count() if dev.type == "cuda" and torch.cuda.is_available() else 1
    if plan.profile.device_map and n_gpus > 1:
        warnings = check(inference, capacity * n_gpus, f"{n_gpus} GPUs together (device_map: auto)")
        warnings += check(training, capacity, where + " (training needs one device)")
    else:
        warnings = check(rows, capacity, where)
    return rows, warnings, capacity, where


def main_plan(plan, device: str | None, memory_gib: float | None, extra=None) -> str:
    """The plan as text; ``memory_gib`` is one device's memory. With ``device_map: auto`` inference may use
    every visible GPU together, training still one. ``extra``: a plan without task datasets whose rows follow
    (the concept-injection and mirror stages' bounds)."""
    rows, warnings, capacity, where = _checked(plan, device, memory_gib, extra)
    text = format_rows(rows)
    text += f"\n\nfits {where} ({capacity:.1f} GiB) with the {MARGIN - 1:.0%} margin included"
    return text + "".join(f"\nwarning: tight: {w}" for w in warnings)

