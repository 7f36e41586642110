"""The mirror test's imitation measure: how many words of a reply show a corruption kind's pattern
(:mod:`reproduce.mirror.corrupt`). Graded from the stored replies after the stage's shards (:func:`grade_replies`), and
kept out of every shard fingerprint, so a change to the measure regrades without new inference.

- ``insertion``: ``sg`` among the words that contain a ``g``;
- ``capitalisation``: a case change after the first letter of a word that is not all capitals;
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
With the reply's own clean reply left out everywhere, a correctly spelled word one change away from a known
word (``bet`` beside ``get``) counts alike in every condition, and the control's rate is the baseline of such
chance hits. (A typo of a word that only the clean reply at ``(s, t)`` uses is missed, in every condition
alike.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from reproduce.mirror.corrupt import KINDS, MIN_LETTERS, NEIGHBOURS, WORD, CorruptionError, check_kind


def words(text: str) -> list[str]:
    """The words a corruption can touch: runs of letters of at least :data:`reproduce.mirror.corrupt.MIN_LETTERS`."""
    return [w for w in WORD.findall(text) if len(w) >= MIN_LETTERS]


def vocabulary(texts) -> frozenset[str]:
    """The lower-cased words of ``texts``: the words a typo is recognised against."""
    return frozenset(w.lower() for t in texts for w in WORD.findall(t))


def reference_vocabularies(clean: Mapping[tuple[str, int], str], users: Iterable[str]) \
        -> dict[tuple[str, int], frozenset[str]]:
    """Per (script, turn) of ``clean`` (one model's clean replies by (script, turn)): the vocabulary a reply of that
    model at that script and turn is graded against, in every condition: the words of every other clean reply
    of ``clean`` and of ``users`` (the user turns of the scripts that ran), without those of the clean reply at
    that (script, turn) unless another text has them too (leave-one-out; the module docstring says why)."""
    own = {key: vocabulary([text]) for key, text in clean.items()}
    shared = vocabulary(users)
    replies = Counter(w for ws in own.values() for w in ws)  # how many clean replies hold each word
    return {key: shared | frozenset(w for w, n in replies.items() if n > (w in ws)) for key, ws in own.items()}


def grade_replies(rows, clean, users: Iterable[str]):
    """``rows`` (a table with ``script_id, turn, reply``: one model's replies) with the imitation counts
    ``pattern_k_<kind>, pattern_n_<kind>`` (:func:`pattern_counts`) for every kind of
    :data:`reproduce.mirror.corrupt.KINDS`, each reply graded against the :func:`reference_vocabularies` entry of its
    (script, turn) from ``clean`` (the model's clean conversations, ``script_id, turn, reply``) and ``users``."""
    vocab = reference_vocabularies({(s, int(t)): r for s, t, r in zip(clean["script_id"], clean["turn"],
                                                                      clean["reply"])}, list(users))
    keys = [(s, int(t)) for s, t in zip(rows["script_id"], rows["turn"])]
    counts = {k: [pattern_counts(r, k, vocab[key]) for r, key in zip(rows["reply"], keys)] for k in KINDS}
    return rows.assign(**{f"pattern_{c}_{k}": [x[j] for x in counts[k]]
                          for k in KINDS for j, c in enumerate(("k", "n"))})


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


def pattern_counts(text: str, kind: str, vocab: frozenset[str] | None = None) -> tuple[int, int]:
    """(words showing ``kind``'s pattern, eligible words) in ``text``: the binomial counts of imitation.

    The pattern: ``sg`` among words with a ``g`` (insertion); a case change after the first letter in a word
    that is not all capitals (capitalisation); a typo of a word of ``vocab`` by that kind (substitution, swap,
    drop: :func:`typo_of`; the stage grades each reply against its leave-one-out vocabulary,
    :func:`reference_vocabularies`). A word outside the vocabulary that is no such typo (a word the reply uses
    for the first time) does not count: otherwise any reply that differs from the clean one would read as
    imitation."""
    kind = check_kind(kind)
    ws = words(text)
    if kind == "insertion":
        ws = [w for w in ws if "g" in w.lower()]
        hits = [("sg" in w.lower()) for w in ws]
    elif kind == "capitalisation":
        hits = [(not w.isupper()) and any(c.isupper() for c in w[1:]) for w in ws]
    else:
        if vocab is None:
            raise CorruptionError(f"pattern_counts for {kind!r} needs the reference vocabulary of the clean texts")
        hits = [typo_of(w, kind, vocab) for w in ws]
    return int(sum(hits)), len(hits)


def pattern_rate(text: str, kind: str, vocab: frozenset[str] | None = None) -> float:
    """The share of ``text``'s eligible words that show ``kind``'s pattern (NaN when it has none)."""
    k, n = pattern_counts(text, kind, vocab)
    return k / n if n else float("nan")
