"""How a user prompt, or a conversation, becomes a model's input text: the tokenizer's chat template when it
has one, else the plain-text format :data:`PLAIN_TEMPLATE`.

This is the one module that renders prompts for inference and for training alike, so the shards of every
model stage and the fingerprint of every finetune hash its source: an edit here recomputes both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reproduce.errors import ModelError

PLAIN_TEMPLATE = "Question: {prompt}\nAnswer:"


def check_conversation(messages: "Sequence[dict]") -> None:
    """A conversation alternates user and assistant turns, starting with a user turn, each with text."""
    if not messages:
        raise ModelError("a conversation needs at least one user turn")
    for i, m in enumerate(messages):
        want = "user" if i % 2 == 0 else "assistant"
        if not isinstance(m, dict) or m.get("role") != want or not isinstance(m.get("content"), str):
            raise ModelError(f"turn {i} of a conversation must be {{'role': {want!r}, 'content': <text>}}; got {m!r}")


@dataclass
class PromptFormat:
    """How a raw user prompt becomes model input text."""

    kind: str  # chat | plain
    tokenizer: object = field(repr=False)
    system_prompt: str | None = None

    def render(self, prompt: "str | Sequence[dict]") -> str:
        """The model input for one user prompt, or for a conversation: a list of ``{"role": "user" |
        "assistant", "content": ...}`` turns starting with a user turn. A conversation that ends with a user
        turn gets the generation prompt; one that ends with an assistant turn is left open after that turn's
        text (a prefilled answer the model continues). The plain format writes each turn as ``Question: ...``
        / ``Answer: ...`` lines."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        check_conversation(messages)
        open_answer = messages[-1]["role"] == "assistant"
        if self.kind == "chat":
            if self.system_prompt is not None:
                messages.insert(0, {"role": "system", "content": self.system_prompt})
            extra = {"continue_final_message": True} if open_answer else {}
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=not open_answer,
                                                      **extra)
        parts = []
        for m in messages:
            if m["role"] == "user":
                parts.append(PLAIN_TEMPLATE.format(prompt=m["content"]))
            else:
                parts[-1] += " " + m["content"]
        return "\n".join(parts)

    @property
    def add_special_tokens(self) -> bool:
        # a chat template writes its own BOS where the model wants one; plain text lets the tokenizer add it
        return self.kind == "plain"
