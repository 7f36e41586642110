"""Thinking sections: chat templates that let a model reason in a marked span before its visible reply.

A template is recognised by the markers it writes (:data:`MARKERS`): ``<think> ... </think>`` (Qwen3, QwQ,
DeepSeek-R1 and its distillations) and ``<thinking> ... </thinking>``. Some of these templates open the span in
the generation prompt itself, so the generated text holds only its end; :func:`split` handles both. A model whose
template names neither marker has no thinking section, and its replies are left as they are.
"""

from __future__ import annotations

#: (opening, closing) markers of the thinking sections recognised, in the order they are tried
MARKERS: tuple[tuple[str, str], ...] = (("<think>", "</think>"), ("<thinking>", "</thinking>"))


def markers(chat_template: str | None) -> tuple[str, str] | None:
    """The thinking markers a chat template writes (both the opening and the closing one), or None."""
    if not chat_template:
        return None
    for opening, closing in MARKERS:
        if opening in chat_template and closing in chat_template:
            return opening, closing
    return None


def model_markers(lm) -> tuple[str, str, bool] | None:
    """:func:`markers` of a loaded model's tokenizer (None for the plain format or a template without them), and
    whether the template's generation prompt opens the span itself (the generated text then starts inside it)."""
    marks = markers(getattr(lm.tokenizer, "chat_template", None)) if lm.format.kind == "chat" else None
    if marks is None:
        return None
    opened = lm.format.render([{"role": "user", "content": "Hello."}]).rstrip().endswith(marks[0])
    return marks[0], marks[1], opened


def split(text: str, marks: tuple[str, str, bool] | None) -> tuple[str | None, str]:
    """``(thinking, visible)`` of a generated text, given :func:`model_markers`. With no markers, ``(None,
    text)``. A closed span: the text before the closing marker (its opening marker dropped) is the thinking, the
    text after it the visible reply; later blocks in the same text are thinking too (joined by new lines), and the
    visible pieces around them are joined by a space. A span never closed (the reply ran out of tokens while thinking): everything
    after the opening marker, or the whole text where the prompt opened the span, is thinking, and the visible
    reply is what came before it. A text with neither marker, after a prompt that did not open the span, has no
    thinking section (``None``)."""
    if marks is None:
        return None, text
    opening, closing, opened = marks
    if closing in text:
        head, _, tail = text.partition(closing)
        before, found, inside = head.partition(opening)
        traces, visible = [(inside if found else head).strip()], [before.strip() if found else ""]
        while opening in tail:  # later blocks in the same reply: each trace kept, the text between them visible
            before, _, rest = tail.partition(opening)
            inside, closed, tail = rest.partition(closing)
            visible.append(before.strip())
            traces.append(inside.strip())
            if not closed:
                break
        visible.append(tail.strip())
        return "\n".join(x for x in traces if x), " ".join(x for x in visible if x)
    if opening in text:
        before, _, inside = text.partition(opening)
        return inside.strip(), before.strip()
    if opened:
        return text.strip(), ""
    return None, text
