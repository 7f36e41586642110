"""The rule-based grader of the mirror test's replies, and the local judge's question.

* :func:`notices_oddity`: the reply remarks on typos, errors or glitches in earlier text.

The optional judge (:mod:`reproduce.lm.judge`) answers :data:`JUDGE_ODDITY`.
"""

from __future__ import annotations

import re

ODDITY = re.compile(
    r"\b(typos?|misspell\w*|spelling (?:mistakes?|errors?)|glitch\w*|garbled|corrupt\w*|"
    r"(?:strange|weird|odd|unusual) (?:characters?|letters?|spelling|pattern|text|formatting)|"
    r"errors? in my (?:previous |earlier |last )?(?:messages?|responses?|replies|answers?)|"
    r"(?:my|the) (?:previous|earlier|last) (?:messages?|responses?|replies) (?:had|contained|were|was)|"
    r"i (?:wrote|made) (?:some |a few )?(?:typos?|mistakes?|errors?)|did i (?:write|do) that)\b", re.I)


def notices_oddity(text: str) -> bool:
    """The mirror test's spontaneous noticing: the reply remarks on typos, errors or glitches in earlier text."""
    return ODDITY.search(text) is not None


JUDGE_ODDITY = ("Below is a reply an AI assistant gave in a conversation.\n\nReply: \"{text}\"\n\nDoes the "
                "assistant remark on typos, errors or anything odd in its own earlier messages? Answer with only "
                "\"yes\" or \"no\".")
