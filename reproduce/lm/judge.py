"""The optional local judge: a language model asked a yes/no question about a free-text answer, read as P(yes)
(normalised over yes / no) from one forward pass. Each experiment family writes its own questions."""

from __future__ import annotations


def judge(engine, questions: list[str], progress: str | None = None) -> list[float]:
    """A local judge model's P(yes) (normalised over yes / no) for each question, from one forward pass each."""
    gens = engine.generate(questions, 3, options=[("yes", "no")] * len(questions), progress=progress)
    return [g[0].option_probs[0] for g in gens]


def quoted(text: str, limit: int = 1500) -> str:
    """A reply as the judge's prompts quote it: double quotes made single, cut to ``limit`` characters."""
    return text.replace('"', "'")[:limit]
