"""The rule-based grader of the mirror test's replies, and the local judge's question.

* :func:`notices_oddity`: the reply remarks on the form of earlier text: typos, misspellings, strange letters or
  capitalisation, garbled or corrupted text, "my previous reply looks wrong", "did I write that?", or names the
  change itself ("every g in my last reply became sg", "I wrote 'sgoing' instead of 'going'"). Remarks on
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
#: a single letter named, bare or quoted: 'g', "s", g
LETTER = r"(?:['\"\u2018\u201c][a-z]['\"\u2019\u201d]|\b[a-z]\b)(?:'?s\b)?"
#: one or two letters quoted: 'sg', "g"
LETTERS = r"['\"\u2018\u201c][a-z]{1,2}['\"\u2019\u201d]"
#: a quoted word: 'sgoing', "sgood"
QUOTED = r"['\"\u2018\u201c][a-z]+['\"\u2019\u201d]"
#: what the writer's earlier text is called: "reply", "messages", "turns", "msgs"
TEXT_NOUN = (r"(?:messages?|msgs|text|replies|reply|responses?|answers?|writing|sentences?|words|paragraphs?|turns?|"
             r"typing)")
#: the words that may stand between "my" and :data:`TEXT_NOUN`: "my last couple of replies", "my own earlier text"
FILLER = (r"(?:(?:previous|earlier|last|prior|above|first|past|recent|original|own|few|two|three|couple|of|several|"
          r"the|whole) ){0,4}")
ODDITY = re.compile(
    # a form word tied to this conversation's text: sorry for the typos, my typos, typos above / in my replies
    r"\b(?:sorry|apologi[sz]e|apologies)\b[^.!?\n]{0,60}?\b" + FORM + r"|"
    r"\b(?:my|these|those) (?:[\w-]+ ){0,2}?" + FORM + r"|"
    r"\b" + FORM + r" (?:above|earlier|crept|slipped|throughout|on my part)\b|"
    r"\b(?:" + FORM + r"|capitali[sz]ation|letters|spelling) in (?:" + EARLIER + r"|what i (?:wrote|typed|sent))\b|"
    r"\b" + EARLIER + r" (?:have|has|had|contain|contains|contained|(?:is|are|was|were) full of|with) "
    r"(?:[\w-]+ ){0,3}?" + FORM + r"|"
    r"\b(?:text|messages?|replies|reply|responses?|answers?|words?|writing) (?:(?:looks?|seems?|seemed|looked|appears?|"
    r"appeared) (?:a (?:bit|little) |rather |very |quite |all |kind of )?(?:garbled|scrambled|jumbled|misspelled|"
    r"corrupted|broken|mangled|off|wrong|odd|weird|strange)|(?:is|are|was|were|got|has been|have been) "
    r"(?:a (?:bit|little) |rather |very |quite |all |kind of )?(?:garbled|scrambled|jumbled|misspelled|corrupted|"
    r"mangled))\b|"
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
    r"\bglitch(?:es|y)? in (?:my|the) (?:text|messages?|replies|reply|responses?|earlier|previous|writing)\b|"
    # naming the change itself: a letter replaced throughout, a word written one way instead of another
    r"\b(?:every|each|all(?: the)?) " + LETTER
    + r"(?=[^.!?\n]{0,50}?\b(?:my " + FILLER + TEXT_NOUN + r"|i (?:wrote|typed)|above|earlier|previous)\b)"
    r"[^.!?\n]{0,60}?\b(?:replaced|became|become|turned into|changed (?:to|into)|written as|rendered as|shown as|"
    r"swapped|doubled|dropped|inserted|added)\b|"
    r"\b(?:every|each) " + LETTER + r" (?:[\w-]+ ){0,2}?(?:an )?extra " + LETTER + r"|"
    r"\bextra " + LETTER + r" (?:before|after|in front of|next to) (?:every|each|all|the) " + LETTER + r"|"
    r"\bi (?:wrote|typed|spelled|spelt) " + QUOTED + r" (?:instead of|rather than) " + QUOTED + r"|"
    r"\b(?:words|text|spelling) (?:i|that i) (?:used|wrote|typed)\b[^.!?\n]{0,20}?\b(?:oddly|strangely|weirdly|wrongly|"
    r"badly) (?:spelled|spelt)\b|"
    r"\b(?:doesn't|does not|don't|do not) (?:look|sound|read) like (?:something|anything|what) i (?:wrote|typed|"
    r"(?:would|normally|usually) (?:write|type|spell))\b(?! (?:to|in|for|about|if)\b)",
    re.I)


#: the model speaking of itself in the first person, and in the third ("the model had a strange quirk", the shift
#: the post saw in a thinking trace after the corruption)
FIRST_PERSON = re.compile(r"(?<!\bwar )(?<!\bpart )(?<!\bsection )(?<!\bchapter )(?<!\bact )(?<!\btype )"
                          r"(?<!\bclass )(?<!\bphase )(?<!\bhenry )(?<!\blouis )(?<!\bgeorge )(?<!\bjames )"
                          r"(?<!\bedward )(?<!\bwilliam )(?<!\bcharles )(?<!\belizabeth )"
                          r"\b(?:i(?![/&])|me|my|mine|myself)\b", re.I)
#: "the model" etc. counted as a self-reference where a verb, a possessive or the clause's end follows: "the model had
#: a strange quirk", "the assistant's reply", "I asked the model."; not a compound noun ("the model railway", "the
#: assistant manager")
THIRD_PERSON = re.compile(
    r"\b(?:the|this) (?:model|assistant|ai|language model|chatbot)(?:(?:'s|\u2019s)\b|(?=\s*(?:[.,;:!?)\u2014\n]|$))|"
    r"(?=\s+(?:(?:also|then|now|just|clearly|apparently|probably|seemingly|still|never|always|often) )?(?:is|was|are|"
    r"were|has|had|does|did|can|could|will|would|should|may|might|must|seems?|seemed|appears?|appeared|wrote|writes|"
    r"made|makes|said|says|notices?|noticed|thinks?|thought|tends?|tended|keeps?|kept|used|uses|itself|"
    r"[a-z]{2,}[a-df-z]ed)\b))", re.I)


def self_references(text: str) -> tuple[int, int]:
    """(first-person, third-person) references of a reply to its writer: ``I, me, my, mine, myself`` and ``the /
    this model, assistant, AI, language model, chatbot``."""
    return len(FIRST_PERSON.findall(text)), len(THIRD_PERSON.findall(text))


#: the writer's own earlier text: "my previous reply", "my own earlier messages", "the assistant's last message",
#: "the earlier assistant replies", "what I wrote", "my typing", "I (seem to have) written / misspelled ... above"
SELF_TEXT = re.compile(
    r"\b(?:my " + FILLER + TEXT_NOUN + r"\b|(?:the assistant's|the model's) " + FILLER + r"(?:" + TEXT_NOUN
    + r"|outputs?)\b|(?:previous|earlier|prior|last|above) assistant (?:" + TEXT_NOUN + r"|outputs?)\b|"
    r"what i (?:wrote|typed|sent)\b|(?:i|have) (?:wrote|written|typed|"
    r"misspell(?:ed|t)|spell(?:ed|t))\b(?= (?:\S+ ){0,6}?(?:above|earlier|before|previously)\b)|"
    r"(?:i|the model|the assistant|this model|this assistant)(?:'ve| have| has)? (?:seem to have )?(?:keeps? |kept |"
    r"been |is |was )?(?:writing|typing|spelling)\b)", re.I)
#: a word for an oddity of form, for :data:`SELF_TEXT` in the same sentence
FORM_WORD = re.compile(
    r"(?<!\w)(?:typos?|misspell\w*|(?:odd|strange|weird|funny|unusual|random)(?:ly)? (?:[\w-]+ ){0,2}?"
    r"(?:spellings?|capitali[sz]ation|capitals|capital letters|caps|letters?|symbols|formatted|formatting)|wrong "
    r"(?:letters?|spellings?)|(?:stray|missing) (?:letters?|characters?|caps|"
    r"capitals|" + QUOTED + r"s?)|" + QUOTED + r" everywhere|letters? (?:swapped|switched|shifted|missing|added|"
    r"inserted|doubled|substitutions|swaps|additions|insertions)|keyboard[- ]slips?|transpositions|mixed[- ]case|"
    r"corruption|(?:reads?|looks?) (?:as though|as if|like) someone (?:ran|typed|mashed|scrambled|garbled|edited|"
    r"messed|jumbled)|(?:writing|typing|wrote|typed|written|putting|put) " + LETTERS
    + r" (?:for|instead of|in place of|where(?: an?)?(?: [\w-]+)?) " + LETTERS + r"|"
    r"\b[a-z]{1,2} ?(?:->|\u2192|=>) ?[a-z]{1,3}\b|fingers shifted|capital letters in "
    r"the middle|garbled|scrambled|jumbled|corrupted|(?:has|have|had) been (?:altered|tampered with)(?! to\b)|"
    r"introduced (?:errors|typos|mistakes)|letter [a-z] (?:[\w-]+ ){0,2}?(?:showing|shows|show|showed|turning|turns) "
    r"up as|" + QUOTED + r"(?: and " + QUOTED + r")? (?:\S+ ){0,6}?(?:should (?:[\w-]+ ){0,2}?be|are typos for) "
    + QUOTED + r"|an? " + LETTER + r" (?:before|in front of) (?:every|each) " + LETTER + r")", re.I)
#: what, said just before a form word, makes it a topic rather than a remark: "about typos", "avoid typos", "your
#: typos", "mentioned the garbled audio", "marked the misspellings"
TOPIC = re.compile(r"\b(?:about|on|regarding|concerning|listed|list of|avoid(?:ing)?|fix(?:ing)?|correct(?:ing)?|"
                   r"check(?:ing)?(?: \w+)? for|catch(?:ing)?|spot(?:ting)?|common|your|user's|mentioned|described|"
                   r"noted|marked|highlighted|flagged|underlined|found|rarely|never|seldom)\s+(?:[\w-]+\s+){0,2}$",
                   re.I)
#: a sentence about a word game, whose letters are scrambled on purpose
GAME = re.compile(r"\b(?:word games?|puzzles?|anagrams?|unscrambl\w*|riddles?|crosswords?|scrabble)\b", re.I)
SENTENCE = re.compile(r"[^.!?\n]+")


def remarks_on_own_form(text: str) -> bool:
    """A sentence of ``text`` names the writer's own earlier text (:data:`SELF_TEXT`) and an oddity of form
    (:data:`FORM_WORD`) within 100 characters of each other, the form word not said as a topic (:data:`TOPIC`) nor
    in a sentence about a word game (:data:`GAME`)."""
    for m in SENTENCE.finditer(text):
        sent = m.group()
        selves = [s.start() for s in SELF_TEXT.finditer(sent)]
        if not selves or GAME.search(sent):
            continue
        for f in FORM_WORD.finditer(sent):
            if TOPIC.search(sent[:f.start()]) is None and min(abs(f.start() - s) for s in selves) <= 100:
                return True
    return False


def notices_oddity(text: str) -> bool:
    """The mirror test's spontaneous noticing: the reply remarks on the form of earlier text (:data:`ODDITY`, or
    :func:`remarks_on_own_form`)."""
    return ODDITY.search(text) is not None or remarks_on_own_form(text)


#: the judge's question (:mod:`reproduce.mirror.judging`): ``changes`` lists words of the assistant's earlier
#: messages as they were shown to it, in every condition (a sham list where nothing was changed), so that the list
#: tells the judge what a remark on the changes looks like without telling it the condition
JUDGE_ODDITY = ("Below is a reply an AI assistant gave in a conversation. Before it wrote the reply, some words of its "
                "own earlier messages in that conversation may have been shown to it changed: {changes}.\n\nReply: "
                "\"{text}\"\n\nDoes the assistant remark on the form of its own earlier messages: typos, "
                "misspellings, strange letters or capitalisation, garbled text, or changed words like those? A remark "
                "on what the earlier messages said (their content or facts) is not one. Answer with only \"yes\" or "
                "\"no\".")
