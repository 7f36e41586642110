"""The mirror test's corruptor: deterministic, seeded typos in a model's earlier replies, and the string
measure of whether a reply imitates them.

**Words** are runs of letters (``[A-Za-z]+``); words of two letters or fewer are never touched. At level
``rate`` exactly ``round(rate * n)`` of the ``n`` eligible words of a text are corrupted (chosen without
replacement by a generator seeded from the seed, the kind, the rate and the text), so the realised rate
equals the requested one up to rounding, and level 0 returns the text byte for byte.

**Kinds** (one change per chosen word):

- ``insertion``: the pattern of the informal experiment: every ``g`` of the word becomes ``sg`` (``G`` ->
  ``SG``). Eligible words are those that contain a ``g``.
- ``substitution``: one letter replaced by a neighbour on a QWERTY keyboard (case kept).
- ``swap``: two adjacent, different letters exchanged.
- ``drop``: one letter removed (a word keeps at least two letters).
- ``capitalisation``: the case of each letter flipped with probability 1/2, at least one letter flipped.

Whether a reply imitates the corruption is graded from its text by :func:`reproduce.mirror.imitation.pattern_counts`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from reproduce.lm.engine import derive_seed
from reproduce.errors import ProjectError

KINDS = ("insertion", "substitution", "swap", "drop", "capitalisation")
WORD = re.compile(r"[A-Za-z]+")
MIN_LETTERS = 3  # words of two letters or fewer are left alone
QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


class CorruptionError(ProjectError, ValueError):
    """An unknown corruption kind or a rate that is not a number in [0, 1]."""


def _neighbours() -> dict[str, str]:
    pos = {c: (r, i) for r, row in enumerate(QWERTY_ROWS) for i, c in enumerate(row)}
    out = {}
    for c, (r, i) in pos.items():
        near = [d for d, (r2, i2) in pos.items() if d != c and abs(r2 - r) <= 1 and abs(i2 - i) <= 1]
        out[c] = "".join(sorted(near))
    return out


NEIGHBOURS = _neighbours()


def check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise CorruptionError(f"unknown corruption kind {kind!r}; use one of {', '.join(KINDS)}")
    return str(kind)


def check_rate(rate: object) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(float(rate)) \
            or not 0.0 <= float(rate) <= 1.0:
        raise CorruptionError(f"corruption rate {rate!r} must be a number in [0, 1] (the share of eligible words "
                              "changed); e.g. mirror.levels: [0.1, 0.3, 0.6]")
    return float(rate)


def eligible(word: str, kind: str) -> bool:
    return len(word) >= MIN_LETTERS and (kind != "insertion" or "g" in word.lower())


@dataclass(frozen=True)
class Corrupted:
    text: str
    eligible: int  # eligible words
    changed: int  # words changed

    @property
    def rate(self) -> float:
        return self.changed / self.eligible if self.eligible else float("nan")


def corrupt_word(word: str, kind: str, rng: np.random.Generator) -> str:
    """One change of ``kind`` to ``word`` (an eligible word)."""
    if kind == "insertion":
        return word.replace("g", "sg").replace("G", "SG")
    if kind == "substitution":
        i = int(rng.integers(len(word)))
        c = word[i]
        options = NEIGHBOURS.get(c.lower(), "")
        new = options[int(rng.integers(len(options)))] if options else c
        return word[:i] + (new.upper() if c.isupper() else new) + word[i + 1:]
    if kind == "swap":
        spots = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
        if not spots:
            return word[:-1]  # "eee": nothing to swap; drop a letter instead, so the word still changes
        i = spots[int(rng.integers(len(spots)))]
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "drop":
        i = int(rng.integers(len(word)))
        return word[:i] + word[i + 1:]
    if kind == "capitalisation":
        while True:
            flips = rng.random(len(word)) < 0.5
            if flips.any():
                return "".join(c.swapcase() if f else c for c, f in zip(word, flips))
    raise CorruptionError(f"unknown corruption kind {kind!r}")


def corrupt(text: str, kind: str, rate: float, seed: int) -> Corrupted:
    """``text`` with ``round(rate * n)`` of its ``n`` eligible words changed by ``kind``."""
    kind, rate = check_kind(kind), check_rate(rate)
    spans = [m for m in WORD.finditer(text) if eligible(m.group(), kind)]
    k = int(round(rate * len(spans)))
    if k == 0:
        return Corrupted(text, len(spans), 0)
    rng = np.random.default_rng(derive_seed(seed, kind, rate, text))
    chosen = sorted(int(i) for i in rng.choice(len(spans), size=k, replace=False))
    out, last, changed = [], 0, 0
    for i in chosen:
        m = spans[i]
        new = corrupt_word(m.group(), kind, rng)
        changed += new != m.group()
        out += [text[last:m.start()], new]
        last = m.end()
    out.append(text[last:])
    return Corrupted("".join(out), len(spans), changed)


def corrupt_reply(reply: str, kind: str, level: float, seed: int, model: str, script: str, index: int) -> Corrupted:
    """Reply ``index`` (0-based) of ``model``'s clean conversation ``script`` corrupted by ``kind`` at ``level``
    (:func:`corrupt`), seeded per model, script and turn: the same reply is corrupted the same way at every later
    turn."""
    return corrupt(reply, kind, level, derive_seed(seed, "mirror", model, script, index))


def changed_words(clean: str, shown: str) -> list[tuple[str, str]]:
    """The words of ``clean`` that ``shown``, its corrupted version, changed, as (written, shown) pairs in text
    order. A change keeps a word a run of letters, so the two texts' words pair up one to one."""
    a, b = WORD.findall(clean), WORD.findall(shown)
    if len(a) != len(b):
        raise CorruptionError("the shown text is not a corruption of the clean one (their words do not pair up)")
    return [(x, y) for x, y in zip(a, b) if x != y]
