"""Batched inference: greedy generation, seeded sampling, and option distributions.

- Prompts are rendered with the model's :class:`~reproduce.models.PromptFormat`, tokenised once, sorted by
  length and cut into batches of similar length (length bucketing).
- Shared prefix: the tokens every prompt of a call begins with (the chat template's system turn, the task's
  instructions, the meta level's "Previously, you were asked ...") go through the model once; each batch
  starts from a copy of that key-value cache, with only the differing suffixes padded (on their left, in the
  middle of the sequence) and computed. On a CPU the prompt's forward pass dominates, so this is where
  batched inference saves most. ``share_prefix=False`` recomputes every prompt in full.
- Special tokens other than EOS are suppressed (a base model can otherwise loop on tokens such as
  ``<start_of_image>``).
- A response ends at EOS, at the first newline that follows some content, or at ``max_new_tokens``; every
  task asks for a one-line answer. The newline cut is applied to the decoded text, so a row's response does
  not depend on when the rest of its batch stopped.
- Option distributions: the raw next-token logits of the first decoding step (the same forward pass that
  yields the greedy answer's first token) give, for each option, the summed probability of its single-token
  surface forms (``b``, ``B``, `` b``, `` B`` ...). Probabilities are normalised over the options; the mass on
  every other token is returned as ``p_outside``. This is exact, with no sampling.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

from .models import LoadedModel, ModelError

#: part of every shard fingerprint: results of another engine version are never mixed with these
ENGINE_VERSION = "2"


@dataclass(frozen=True)
class Generation:
    response: str  # stripped, cut at the first newline after content
    raw: str  # everything decoded, special tokens removed
    n_new_tokens: int
    finish: str  # eos | newline | length
    option_probs: tuple[float, ...] | None = None  # normalised over the options
    p_outside: float | None = None  # next-token mass on tokens that are none of the options


def cut_response(text: str) -> tuple[str, bool]:
    """Strip, and cut at the first newline after non-whitespace content. Returns (response, was_cut)."""
    stripped = text.lstrip()
    cut = stripped.find("\n")
    if cut == -1:
        return stripped.strip(), False
    return stripped[:cut].strip(), True


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts, stable across processes and platforms (unlike ``hash``)."""
    h = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") & ((1 << 63) - 1)


class _NewlineAfterContent(StoppingCriteria):
    """Per-row stop once a newline token follows a token with visible content."""

    def __init__(self, newline: torch.Tensor, content: torch.Tensor, prompt_len: int):
        self.newline, self.content, self.prompt_len = newline, content, prompt_len

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.BoolTensor:
        gen = input_ids[:, self.prompt_len:]
        if gen.shape[1] < 2:
            return torch.zeros(gen.shape[0], dtype=torch.bool, device=gen.device)
        seen_content = self.content[gen[:, :-1]].cumsum(1) > 0  # content strictly before position j
        return (self.newline[gen[:, 1:]] & seen_content).any(1)


class Engine:
    #: shorter common prefixes are not worth a separate forward pass
    MIN_SHARED_PREFIX = 8

    def __init__(self, lm: LoadedModel, batch_size: int = 32, share_prefix: bool = True):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.lm, self.batch_size, self.share_prefix = lm, batch_size, share_prefix
        tok = lm.tokenizer
        eos = lm.model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        if tok.eos_token_id is not None:
            eos.append(tok.eos_token_id)
        self.eos_ids = sorted(set(eos))
        special = set(tok.all_special_ids)
        special |= {i for i, t in tok.added_tokens_decoder.items() if getattr(t, "special", False)}
        self.suppress_ids = sorted(special - set(self.eos_ids) - {tok.pad_token_id})
        vocab = self.vocab_texts()
        dev = lm.device
        self._newline = torch.tensor(["\n" in t for t in vocab], device=dev)
        self._content = torch.tensor([bool(t.strip()) for t in vocab], device=dev)
        self._option_cache: dict[tuple[str, ...], list[list[int]]] = {}

    def vocab_texts(self) -> list[str]:
        tok = self.lm.tokenizer
        n = max(len(tok), self.lm.model.get_output_embeddings().weight.shape[0])
        return tok.batch_decode([[i] for i in range(n)])

    # ------------------------------------------------------------------ options
    def option_token_ids(self, options: Sequence[str]) -> list[list[int]]:
        """For each option, the ids of its single-token surface forms (case and leading-space variants)."""
        key = tuple(options)
        if key in self._option_cache:
            return self._option_cache[key]
        tok = self.lm.tokenizer
        owner: dict[int, str] = {}
        result = []
        for o in options:
            ids = set()
            for v in {o, o.lower(), o.upper(), o.capitalize()}:
                for surface in (v, " " + v):
                    enc = tok.encode(surface, add_special_tokens=False)
                    if len(enc) == 1:
                        ids.add(enc[0])
            if not ids:
                raise ModelError(f"option {o!r} has no single-token form in {self.lm.name}'s vocabulary; "
                                 "it cannot be scored from one forward pass")
            for i in ids:
                if owner.setdefault(i, o) != o:
                    raise ModelError(f"token {i} of {self.lm.name} stands for both {owner[i]!r} and {o!r}")
            result.append(sorted(ids))
        self._option_cache[key] = result
        return result

    def _distribution(self, logits: torch.Tensor, options: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        probs = torch.softmax(logits.float(), dim=-1)
        groups = self.option_token_ids(options)
        mass = torch.stack([probs[:, ids].sum(-1) for ids in groups], dim=-1)
        inside = mass.sum(-1, keepdim=True)
        norm = mass / inside.clamp_min(1e-30)
        return norm.cpu().numpy(), (1.0 - inside.squeeze(-1)).clamp_min(0.0).cpu().numpy()

    # --------------------------------------------------------------- generation
    def render(self, prompts: Sequence[str]) -> list[str]:
        return [self.lm.format.render(p) for p in prompts]

    @staticmethod
    def _batches(lengths: list[int], size: int) -> list[list[int]]:
        order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        return [order[i:i + size] for i in range(0, len(order), size)]

    def _shared_prefix(self, ids: list[list[int]]) -> int:
        """Length of the token prefix common to every prompt (leaving each at least one token of its own)."""
        if not self.share_prefix or not ids:
            return 0
        first, n = ids[0], min(len(x) for x in ids) - 1
        p = 0
        while p < n and all(x[p] == first[p] for x in ids):
            p += 1
        return p if p >= self.MIN_SHARED_PREFIX else 0

    def _prefix_cache(self, prefix: list[int]):
        out = self.lm.model(input_ids=torch.tensor([prefix], device=self.lm.device), use_cache=True, logits_to_keep=1)
        return out.past_key_values

    def _batch_inputs(self, prefix: list[int], suffixes: list[list[int]]) -> dict[str, torch.Tensor]:
        """Prefix, then each suffix left-padded to the longest: [prefix | pad ... | suffix]."""
        width = max(len(x) for x in suffixes)
        pad = self.lm.tokenizer.pad_token_id
        ids = [prefix + [pad] * (width - len(x)) + x for x in suffixes]
        mask = [[1] * len(prefix) + [0] * (width - len(x)) + [1] * len(x) for x in suffixes]
        dev = self.lm.device
        return {"input_ids": torch.tensor(ids, device=dev), "attention_mask": torch.tensor(mask, device=dev)}

    @torch.inference_mode()
    def generate(
        self,
        prompts: Sequence[str],
        max_new_tokens: int,
        *,
        n: int = 1,
        temperature: float | None = None,
        seed: int = 0,
        options: Sequence[Sequence[str] | None] | None = None,
        progress: str | None = None,
    ) -> list[list[Generation]]:
        """Generate for each prompt: greedy (``temperature=None``) or ``n`` samples at ``temperature``.

        ``options[i]`` (greedy only) asks for the option distribution of prompt ``i``. Returns one list of
        ``n`` generations per prompt, in input order. Sampling is seeded per batch from ``seed``, so the same
        prompts, batch size and seed give the same samples.
        """
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        sample = temperature is not None
        if options is not None and sample:
            raise ValueError("option distributions come from greedy runs; pass temperature=None")
        if options is not None and len(options) != len(prompts):
            raise ValueError("options must have one entry per prompt")
        tok, model = self.lm.tokenizer, self.lm.model
        texts = self.render(prompts)
        ids = tok(texts, add_special_tokens=self.lm.format.add_special_tokens)["input_ids"]
        results: list[list[Generation] | None] = [None] * len(texts)
        k = n if sample else 1  # sequences per prompt
        # a batch holds at most batch_size sequences: with n samples per prompt, batch_size // n prompts
        batches = self._batches([len(x) for x in ids], max(1, self.batch_size // k))
        shared = self._shared_prefix(ids)
        prefix = ids[0][:shared] if shared else []
        prefix_cache = self._prefix_cache(prefix) if shared else None
        bar = tqdm(total=len(texts), desc=progress, unit="prompt", disable=progress is None, leave=False)
        want_logits = options is not None and any(o is not None for o in options)
        for b, idx in enumerate(batches):
            # each prompt's row repeated k times (what num_return_sequences would do, but the cache must match)
            enc = self._batch_inputs(prefix, [ids[i][shared:] for i in idx for _ in range(k)])
            cache = None
            if prefix_cache is not None:
                cache = copy.deepcopy(prefix_cache)
                cache.batch_repeat_interleave(len(idx) * k)
            plen = enc["input_ids"].shape[1]
            config = GenerationConfig(
                max_new_tokens=max_new_tokens, do_sample=sample, num_return_sequences=1,
                temperature=temperature if sample else None, top_k=0 if sample else None, top_p=1.0 if sample else None,
                pad_token_id=tok.pad_token_id, eos_token_id=self.eos_ids,
                suppress_tokens=self.suppress_ids or None, return_dict_in_generate=True, output_logits=want_logits,
            )
            if sample:
                torch.manual_seed(derive_seed(seed, b))
            stop = StoppingCriteriaList([_NewlineAfterContent(self._newline, self._content, plen)])
            out = model.generate(**enc, past_key_values=cache, generation_config=config, stopping_criteria=stop)
            gen = out.sequences[:, plen:].cpu()
            dists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            if want_logits:
                first = out.logits[0]
                by_options: dict[tuple[str, ...], list[int]] = {}
                for row, i in enumerate(idx):
                    if options[i] is not None:
                        by_options.setdefault(tuple(options[i]), []).append(row)
                for opts, rows in by_options.items():
                    probs, outside = self._distribution(first[rows], opts)
                    for r, row in enumerate(rows):
                        dists[row] = (probs[r], outside[r])
            for row, i in enumerate(idx):
                gens = []
                for j in range(k):
                    new = gen[row * k + j].tolist()
                    finish = "length"
                    for pos, t in enumerate(new):
                        if t in self.eos_ids:
                            new, finish = new[:pos], "eos"
                            break
                    raw = tok.decode(new, skip_special_tokens=True)
                    response, was_cut = cut_response(raw)
                    if was_cut:
                        finish = "newline"
                    row_probs, outside = dists.get(row, (None, None))
                    gens.append(Generation(
                        response=response, raw=raw, n_new_tokens=len(new), finish=finish,
                        option_probs=None if row_probs is None else tuple(float(x) for x in row_probs),
                        p_outside=None if outside is None else float(outside),
                    ))
                results[i] = gens
            bar.update(len(idx))
        bar.close()
        return results  # type: ignore[return-value]
