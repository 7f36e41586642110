"""The rule-based grader of the mirror test's replies, and the local judge's question.

* :func:`notices_oddity`: the reply remarks on the form of earlier text: typos, misspellings, strange letters or
  capitalisation, garbled or corrupted text, "my previous reply looks wrong", "did I write that?". Remarks on
  the content of earlier replies ("as my previous response was about pasta"), "unusual" said of the topic, and
  corrections of facts are not noticing. The rule is checked against the labelled replies of
  :mod:`reproduce.mirror.grader_cases`.

The optional judge (:mod:`reproduce.lm.judge`) answers :data:`JUDGE_ODDITY`.
"""

from __future__ import annotations

import re

#: what a remark on the text's form names: typos, spelling, stray letters, garbled or odd-looking text
FORM = (r"(?:typos?|misspell(?:ings?|ed|t)?|spelling (?:mistakes?|errors?)|(?:strange|weird|odd|stray|extra|random|"
        r"wrong|funny|unusual) (?:characters?|letters?|symbols?|spellings?|capitali[sz]ation|capital letters|caps)|"
        r"garbled|scrambled|jumbled|gibberish)\b")
#: the conversation's own earlier text
EARLIER = (r"(?:my|the|our|this|that|these|those) (?:previous |earlier |last |above |prior |first )?(?:few |two |"
           r"three )?(?:messages?|text|replies|reply|responses?|answers?|writing|words|conversation|paragraphs?)")
ODDITY = re.compile(
    # a form word tied to this conversation's text: sorry for the typos, my typos, typos above / in my replies
    r"\b(?:sorry|apologi[sz]e|apologies)\b[^.!?\n]{0,60}?\b" + FORM + r"|"
    r"\b(?:my|these|those) (?:[\w-]+ ){0,2}?" + FORM + r"|"
    r"\b" + FORM + r" (?:above|earlier|crept|slipped|throughout|on my part)\b|"
    r"\b(?:" + FORM + r"|capitali[sz]ation|letters|spelling) in (?:" + EARLIER + r"|what i (?:wrote|typed|sent))\b|"
    r"\b" + EARLIER + r" (?:have|has|had|contain|contains|contained|(?:is|are|was|were) full of|with) "
    r"(?:[\w-]+ ){0,3}?" + FORM + r"|"
    r"\b(?:text|messages?|replies|reply|responses?|answers?|words?|writing) (?:looks?|seems?|seemed|looked|appears?|"
    r"appeared|is|are|was|were|got|has been|have been) (?:a (?:bit|little) |rather |very |quite |all |kind of )?"
    r"(?:garbled|scrambled|jumbled|misspelled|corrupted|broken|mangled|off|wrong|odd|weird|strange)\b|"
    r"\b(?:my|the) (?:previous|earlier|last|above|prior) (?:messages?|responses?|replies|reply|answers?|text) "
    r"(?:look|looks|looked|seem|seems|seemed|appear|appears|appeared)\b|"
    r"\b(?:off|wrong) with " + EARLIER + r"\b|"
    r"\bletters (?:look|looks|seem|seems|are|were|got|have been) (?:[\w-]+ )?(?:substituted|swapped|scrambled|"
    r"mixed up|jumbled|wrong|doubled|inserted|added)\b|"
    r"\b(?:looks?|seems?) like (?:a |an )?(?:typo|misspelling|spelling mistake)\b|"
    r"\bi (?:wrote|made|typed|left) (?:some |a few |several |many |a lot of |lots of )?"
    r"(?:typos?|spelling (?:mistakes?|errors?)|misspellings?)|"
    r"\bdid i (?:really |actually )?(?:write|type) (?:that|this\b|['\"\u2018\u201c])|"
    r"\b(?:my|the) (?:text|writing|messages?|words|letters|replies|reply) (?:is |are |was |were |looks? |seems? )?"
    r"(?:all |randomly |oddly |weirdly |strangely )?(?:capitali[sz]ed|in (?:all )?caps|upper ?case)\b|"
    r"\b(?:corrupted|mangled) (?:text|letters|words|characters|messages?|replies|spelling)\b|"
    r"\bglitch(?:es|y)? in (?:my|the) (?:text|messages?|replies|reply|responses?|earlier|previous|writing)\b",
    re.I)


#: the model speaking of itself in the first person, and in the third ("the model had a strange quirk", the shift
#: the post saw in a thinking trace after the corruption)
FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.I)
THIRD_PERSON = re.compile(r"\b(?:the|this) (?:model|assistant|ai|language model|chatbot)\b", re.I)


def self_references(text: str) -> tuple[int, int]:
    """(first-person, third-person) references of a reply to its writer: ``I, me, my, mine, myself`` and ``the /
    this model, assistant, AI, language model, chatbot``."""
    return len(FIRST_PERSON.findall(text)), len(THIRD_PERSON.findall(text))


def notices_oddity(text: str) -> bool:
    """The mirror test's spontaneous noticing: the reply remarks on the form of earlier text (:data:`ODDITY`)."""
    return ODDITY.search(text) is not None


JUDGE_ODDITY = ("Below is a reply an AI assistant gave in a conversation.\n\nReply: \"{text}\"\n\nDoes the "
                "assistant remark on the form of its own earlier messages: typos, misspellings, strange letters or "
                "capitalisation, or garbled text? A remark on what the earlier messages said (their content or "
                "facts) is not one. Answer with only \"yes\" or \"no\".")
