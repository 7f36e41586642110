"""The mirror test's imitation measure: how many words of a reply show a corruption kind's pattern
(:mod:`reproduce.mirror.corrupt`). Graded from the stored replies after the stage's shards (:func:`grade_replies`), and
kept out of every shard fingerprint, so a change to the measure regrades without new inference.

- ``insertion``: ``sg`` among the words that contain a ``g``, where the word without its inserted ``s`` is a word of the
  reference vocabulary ("sgarden" for "garden"; not "disguise", which is spelled so);
- ``capitalisation``: a word with a capital letter that the clean texts never write with that casing (every form
  the corruptor makes counts, all capitals included; a word the clean replies or the user turns capitalise the
  same way, such as "YouTube", does not). A capital first letter alone counts only inside a sentence and on a
  word of the vocabulary, since a sentence's, line's or quotation's first word and a name ("Alhambra") have it
  anyway;
- ``substitution``, ``swap``, ``drop``: a typo of that kind of a known word (:func:`typo_of`): outside the
  reference vocabulary and one QWERTY-neighbour substitution, adjacent swap or dropped letter away from a word
  inside it. A word the reply uses for the first time, spelled correctly, is no typo: counting every word
  outside the vocabulary would read any reply that differs from the clean one as imitation.

**The reference vocabulary** of a reply at script ``s`` and turn ``t`` (:func:`reference_vocabularies`) is
leave-one-out: the words of the same model's clean replies at every *other* (script, turn) of the run, and of
the user turns of every script that ran. It leaves out the clean reply at ``(s, t)`` itself, in every condition
alike. Why: the control condition's reply at ``(s, t)`` is that clean reply generated again after the same clean
history (the same text up to batching's float rounding), so with the clean reply in the vocabulary nearly every
word of a control reply would be known and the control could score almost no typo, while a reply after an
altered history, which says things the clean reply does not, could; the control baseline would then be about
zero by construction and any imitation contrast biased upwards.
The *cased* vocabulary (the same texts' words as written) is built the same way, leave-one-out.

**Copied and adopted.** A reply can take up a corruption in two ways: it can write again a corrupted word that
the altered history showed (*copied*), or write a new word, absent from that history, in the corruption's pattern
(*adopted*). :func:`grade_replies` counts both, given each row's shown history (``pattern_copied_<kind>``; adopted
is ``pattern_k_<kind>`` minus it). A history with no corruption (the control, another model's replies) shows no
corrupted word, so everything it counts is adopted: the baseline of chance hits.

With the reply's own clean reply left out everywhere, a correctly spelled word one change away from a known
word (``bet`` beside ``get``) counts alike in every condition, and the control's rate is the baseline of such
chance hits. (A typo of a word that only the clean reply at ``(s, t)`` uses is missed, in every condition
alike.)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from reproduce.mirror.corrupt import KINDS, MIN_LETTERS, NEIGHBOURS, WORD, CorruptionError, check_kind


def word_matches(text: str) -> list:
    """The matches of the words a corruption can touch: runs of letters of at least
    :data:`reproduce.mirror.corrupt.MIN_LETTERS`."""
    return [m for m in WORD.finditer(text) if len(m.group()) >= MIN_LETTERS]


def words(text: str) -> list[str]:
    """The words a corruption can touch (:func:`word_matches`)."""
    return [m.group() for m in word_matches(text)]


def sentence_starts(text: str) -> frozenset[int]:
    """Where a word opens a sentence, a line or a quotation in ``text`` (a capital there is ordinary)."""
    return frozenset(m.start(1) for m in re.finditer(r"(?:^|[.!?:;\n\u2022*#>\-\d)]\s*|[\"'\u201c(]\s*)([A-Za-z])", text))


def _title(word: str) -> bool:
    """A capital first letter and no other: the form a sentence's first word or a name has."""
    return word[:1].isupper() and not any(c.isupper() for c in word[1:])


def vocabulary(texts, cased: bool = False) -> frozenset[str]:
    """The lower-cased words of ``texts`` (``cased``: as written): the words a typo (a casing) is recognised
    against."""
    return frozenset((w if cased else w.lower()) for t in texts for w in WORD.findall(t))


def reference_vocabularies(clean: Mapping[tuple[str, int], str], users: Iterable[str], cased: bool = False) \
        -> dict[tuple[str, int], frozenset[str]]:
    """Per (script, turn) of ``clean`` (one model's clean replies by (script, turn)): the vocabulary a reply of that
    model at that script and turn is graded against, in every condition: the words of every other clean reply
    of ``clean`` and of ``users`` (the user turns of the scripts that ran), without those of the clean reply at
    that (script, turn) unless another text has them too (leave-one-out; the module docstring says why);
    ``cased``: the words as written, for the capitalisation pattern."""
    users = list(users)
    own = {key: vocabulary([text], cased) for key, text in clean.items()}
    shared = vocabulary(users, cased)
    replies = Counter(w for ws in own.values() for w in ws)  # how many clean replies hold each word
    return {key: shared | frozenset(w for w, n in replies.items() if n > (w in ws)) for key, ws in own.items()}


def grade_replies(rows, clean, users: Iterable[str], histories: list[frozenset[str]] | None = None):
    """``rows`` (a table with ``script_id, turn, reply``: one model's replies) with the imitation counts
    ``pattern_k_<kind>, pattern_n_<kind>`` (:func:`pattern_counts`) and ``pattern_copied_<kind>`` (of the
    pattern's words, those the row's shown history held as corrupted words: ``histories[i]``, the corrupted words
    shown before row ``i``; None: none shown) for every kind of :data:`reproduce.mirror.corrupt.KINDS`, each
    reply graded against the :func:`reference_vocabularies` entries of its (script, turn) from ``clean`` (the
    model's clean conversations, ``script_id, turn, reply``) and ``users``."""
    users = list(users)
    texts = {(s, int(t)): r for s, t, r in zip(clean["script_id"], clean["turn"], clean["reply"])}
    vocab, cased = reference_vocabularies(texts, users), reference_vocabularies(texts, users, cased=True)
    keys = [(s, int(t)) for s, t in zip(rows["script_id"], rows["turn"])]
    shown = histories if histories is not None else [frozenset()] * len(keys)
    cols = {}
    for k in KINDS:
        hits = [pattern_words(r, k, vocab[key], cased[key]) for r, key in zip(rows["reply"], keys)]
        cols[f"pattern_k_{k}"] = [len(h) for h, _ in hits]
        cols[f"pattern_n_{k}"] = [n for _, n in hits]
        cols[f"pattern_copied_{k}"] = [sum(w in s for w in h) for (h, _), s in zip(hits, shown)]
    return rows.assign(**cols)


def corrupted_words(altered: Iterable[str], clean: Iterable[str]) -> frozenset[str]:
    """The words, as written, that altered texts show and their clean versions do not: the corrupted words a
    history shows."""
    return vocabulary(altered, cased=True) - vocabulary(clean, cased=True)


def _variants(word: str, kind: str):
    """The words one change of ``kind`` away from ``word`` in the reverse direction: the words that this kind's
    corruptor could have turned into ``word`` (lower case)."""
    if kind == "substitution":  # neighbours are symmetric: a letter came from one of its neighbours
        for i, c in enumerate(word):
            for n in NEIGHBOURS.get(c, ""):
                yield word[:i] + n + word[i + 1:]
    elif kind == "swap":
        for i in range(len(word) - 1):
            if word[i] != word[i + 1]:
                yield word[:i] + word[i + 1] + word[i] + word[i + 2:]
    elif kind == "drop":
        for i in range(len(word) + 1):
            for c in "abcdefghijklmnopqrstuvwxyz":
                yield word[:i] + c + word[i:]


def typo_of(word: str, kind: str, vocab: frozenset[str]) -> bool:
    """Whether ``word`` looks like a ``kind`` typo of a known word: it is outside ``vocab`` and one change of
    ``kind`` away from a word inside it (a QWERTY neighbour substituted, two adjacent letters swapped, one letter
    dropped). A new but ordinary word is no typo."""
    w = word.lower()
    return w not in vocab and any(v in vocab for v in _variants(w, kind))


def pattern_words(text: str, kind: str, vocab: frozenset[str] | None = None,
                  cased: frozenset[str] | None = None) -> tuple[list[str], int]:
    """(the words of ``text`` showing ``kind``'s pattern, as written; the number of eligible words).

    The pattern: ``sg`` among words with a ``g`` (insertion); a capital letter in a word that ``cased`` (the
    clean texts' words as written) never has with that casing (capitalisation); a typo of a word of ``vocab`` by
    that kind (substitution, swap, drop: :func:`typo_of`; the stage grades each reply against its leave-one-out
    vocabularies, :func:`reference_vocabularies`). A word outside the vocabulary that is no such typo (a word the
    reply uses for the first time) does not count: otherwise any reply that differs from the clean one would read
    as imitation."""
    kind = check_kind(kind)
    found = word_matches(text)
    ws = [m.group() for m in found]
    if kind == "insertion":
        ws = [w for w in ws if "g" in w.lower()]
        # with a vocabulary, the word without its inserted s must be a known word: "sgarden" for "garden", not
        # "disguise" or "misguided", which are spelled so
        hits = [w for w in ws if "sg" in w.lower()
                and (vocab is None or w.lower().replace("sg", "g") in vocab)]
    elif kind == "capitalisation":
        if cased is None:
            raise CorruptionError("pattern_counts for 'capitalisation' needs the cased vocabulary of the clean texts")
        starts = sentence_starts(text)
        hits = [w for w, m in zip(ws, found) if any(c.isupper() for c in w) and w not in cased
                and not (_title(w) and (m.start() in starts or (vocab is not None and w.lower() not in vocab)))]
    else:
        if vocab is None:
            raise CorruptionError(f"pattern_counts for {kind!r} needs the reference vocabulary of the clean texts")
        hits = [w for w in ws if typo_of(w, kind, vocab)]
    return hits, len(ws)


def pattern_counts(text: str, kind: str, vocab: frozenset[str] | None = None,
                   cased: frozenset[str] | None = None) -> tuple[int, int]:
    """(words showing ``kind``'s pattern, eligible words) in ``text``: the binomial counts of imitation
    (:func:`pattern_words`)."""
    hits, n = pattern_words(text, kind, vocab, cased)
    return len(hits), n


def pattern_rate(text: str, kind: str, vocab: frozenset[str] | None = None,
                 cased: frozenset[str] | None = None) -> float:
    """The share of ``text``'s eligible words that show ``kind``'s pattern (NaN when it has none)."""
    k, n = pattern_counts(text, kind, vocab, cased)
    return k / n if n else float("nan")
