"""The mirror test's corruptor and imitation measure, on hand-written text."""

import pytest

from reproduce.mirror.corrupt import KINDS, CorruptionError, corrupt, eligible
from reproduce.mirror.imitation import (grade_replies, pattern_counts, pattern_rate, reference_vocabularies, typo_of,
                                 vocabulary, words)

TEXT = ("Growing tomatoes is a good hobby. Give them a sunny spot, regular watering and a strong stake; "
        "by August the big vines will bring a generous harvest of bright red fruit, and maybe a few green ones. ") * 3


@pytest.mark.parametrize("kind", KINDS)
def test_the_corruptor_is_deterministic_under_a_seed(kind):
    a, b = corrupt(TEXT, kind, 0.3, seed=7), corrupt(TEXT, kind, 0.3, seed=7)
    assert a == b and a.text != TEXT
    assert corrupt(TEXT, kind, 0.3, seed=8).text != a.text


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rate", [0.1, 0.3, 0.6])
def test_it_hits_the_requested_rate_and_never_touches_short_words(kind, rate):
    out = corrupt(TEXT, kind, rate, seed=1)
    n = sum(eligible(w, kind) for w in words(TEXT))
    assert out.eligible == n
    assert abs(out.changed - rate * n) <= 0.5 + 1e-9  # exactly round(rate * n)
    assert abs(out.rate - rate) <= 0.5 / n + 1e-9
    changed = [(a, b) for a, b in zip(TEXT.split(" "), out.text.split(" ")) if a != b] if kind != "drop" else []
    assert all(len(a.strip(".,;")) >= 3 for a, _ in changed)
    # every one- and two-letter word is where it was
    import re
    short = lambda t: [m.group() for m in re.finditer(r"\b[A-Za-z]{1,2}\b", t)]  # noqa: E731
    assert short(out.text) == short(TEXT) or kind == "drop"


def test_drop_leaves_short_words_alone_too():
    out = corrupt("a an the big dog is on it", "drop", 1.0, seed=0)
    kept = out.text.split(" ")
    assert kept[0] == "a" and kept[1] == "an" and kept[5] == "is" and kept[6] == "on" and kept[7] == "it"
    assert out.changed == 3  # the, big, dog


@pytest.mark.parametrize("kind", KINDS)
def test_the_control_level_is_byte_identical(kind):
    assert corrupt(TEXT, kind, 0.0, seed=3).text == TEXT
    assert corrupt(TEXT, kind, 0.0, seed=3).changed == 0


def test_insertion_is_the_g_to_sg_pattern():
    out = corrupt("Going to the garden again, George", "insertion", 1.0, seed=0)
    assert out.text == "SGoinsg to the sgarden asgain, SGeorsge"


def test_capitalisation_and_swap_keep_the_letters():
    cap = corrupt(TEXT, "capitalisation", 0.6, seed=2)
    assert cap.text.lower() == TEXT.lower()
    sw = corrupt(TEXT, "swap", 0.6, seed=2)
    assert sorted(sw.text) == sorted(TEXT)


@pytest.mark.parametrize("kind, rate", [("typo", 0.1), ("insertion", 1.5), ("swap", -0.1), ("drop", "0.3"),
                                        ("drop", float("nan"))])
def test_bad_input_is_refused(kind, rate):
    with pytest.raises(CorruptionError):
        corrupt(TEXT, kind, rate, seed=0)


def test_pattern_rate_on_hand_written_replies():
    assert pattern_rate("A sgood day for sgardening, and a big dog", "insertion") == pytest.approx(2 / 4)
    # with a vocabulary, only a word whose s taken out is a known word: not one spelled with "sg"
    known = vocabulary(["a good day for gardening"])
    assert pattern_counts("sgood sgardening disguise misguided", "insertion", known) == (2, 4)
    assert pattern_rate("Nothing here has that letter", "insertion") == pytest.approx(0.0)
    assert pattern_rate("I", "insertion") != pattern_rate("I", "insertion")  # NaN: no eligible word
    cased = vocabulary(["The tomato is NASA red, on YouTube"], cased=True)
    assert pattern_rate("The tOmato is NASA red", "capitalisation", cased=cased) == pytest.approx(1 / 4)
    # every form the corruptor makes of a known word counts, all capitals and a first capital included; a word
    # the clean texts write the same way ("YouTube") does not, nor a capital first letter where a sentence, a line
    # or a quotation opens or on a word outside the vocabulary (a name)
    words = vocabulary(["The tomato is NASA red, on YouTube"])
    for form in ("tHe", "thE", "THe", "tHE", "ThE", "THE", "Tomato", "RED"):
        assert pattern_counts(f"so {form}", "capitalisation", words, cased) == (1, 1), form
    for same in ("The", "YouTube", "NASA", "tomato"):
        assert pattern_counts(same, "capitalisation", words, cased) == (0, 1), same
    for ordinary in ("Tomato", "ok. Tomato", "ok\nTomato", 'said "Tomato', "see the Alhambra"):
        assert pattern_counts(ordinary, "capitalisation", words, cased)[0] == 0, ordinary
    with pytest.raises(CorruptionError, match="cased vocabulary"):
        pattern_counts("tHe", "capitalisation")
    vocab = vocabulary(["the tomato plant needs water"])
    # "plnat" is a swap of "plant"; "tomoto" is outside the vocabulary but no swap of a word in it
    assert pattern_rate("the tomoto plnat needs water", "swap", vocab) == pytest.approx(1 / 5)
    with pytest.raises(CorruptionError, match="vocabulary"):
        pattern_rate("x", "drop")


def test_a_new_ordinary_word_is_no_typo_and_each_kind_recognises_its_own_typos():
    vocab = vocabulary(["Let the sauce simmer for a while, then taste it"])
    assert not typo_of("hours", "substitution", vocab) and not typo_of("idea", "drop", vocab)
    assert typo_of("sauxe", "substitution", vocab)  # c -> x, QWERTY neighbours
    assert not typo_of("sauke", "substitution", vocab)  # c -> k: not neighbours
    assert typo_of("smimer", "swap", vocab) and not typo_of("smimer", "drop", vocab)
    assert typo_of("simer", "drop", vocab) and typo_of("Taste".replace("a", ""), "drop", vocab)
    assert not typo_of("simmer", "drop", vocab)  # in the vocabulary: no typo
    # a reply that only uses new, correctly spelled words shows no pattern however different it is
    assert pattern_counts("It's a good idea to wait a few hours", "substitution", vocab) == (0, 5)


@pytest.mark.parametrize("kind", ["substitution", "swap", "drop"])
def test_every_corrupted_word_reads_as_a_typo_of_its_kind(kind):
    vocab = vocabulary([TEXT])
    out = corrupt(TEXT, kind, 0.6, seed=3)
    changed = [b for a, b in zip(words(TEXT), words(out.text)) if a != b]
    assert changed and all(typo_of(w, kind, vocab) or w.lower() in vocab for w in changed)


def test_each_reply_is_graded_against_a_vocabulary_without_its_own_clean_reply():
    """The control reply at (script, turn) is the clean reply there; graded against a vocabulary that held it,
    no word of it could be a typo and the control's rate would be zero by construction. Left out, a correctly
    spelled word one change away from a known word ("bet" beside "get") counts in the control exactly as in a
    reply after an altered history."""
    import pandas as pd

    clean = pd.DataFrame({"script_id": ["a", "a", "b"], "turn": [2, 3, 2],
                          "reply": ["You can get seeds at the store.", "I bet the harvest will be good.",
                                    "Water them every morning."]})
    users = ["Where do I find seeds?", "Will it grow?"]
    vocab = reference_vocabularies({(s, t): r for s, t, r in zip(clean["script_id"], clean["turn"], clean["reply"])},
                                   users)
    # every other clean reply and every user turn; the own clean reply only where another text shares a word
    assert vocab[("a", 3)] == vocabulary([clean["reply"][0], clean["reply"][2], *users])
    assert "harvest" not in vocab[("a", 3)] and "harvest" in vocab[("a", 2)] and "the" in vocab[("a", 3)]
    rows = pd.DataFrame({"script_id": ["a", "a", "a"], "turn": [3, 3, 3],
                         "condition": ["control", "corrupted", "corrupted"],
                         "reply": [clean["reply"][1], clean["reply"][1], "I bet the harvset will be good."]})
    graded = grade_replies(rows, clean, users)
    # bet, the, harvest, will, good: "bet" is a substitution of "get" in the control and in the altered row alike
    assert list(graded["pattern_k_substitution"]) == [1, 1, 1] and list(graded["pattern_n_substitution"]) == [5] * 3
    assert list(graded["pattern_k_swap"]) == [0, 0, 0]  # "harvset" would be a swap of "harvest", known only here
    assert pattern_counts(clean["reply"][1], "substitution", vocabulary([*clean["reply"], *users])) == (0, 5)
    assert list(graded.columns) == [*rows.columns,
                                    *[f"pattern_{c}_{k}" for k in KINDS for c in ("k", "n", "copied")]]
    assert (graded[[f"pattern_copied_{k}" for k in KINDS]] == 0).all().all()  # no history shown: nothing copied
    # a reply that writes a corrupted word of its shown history again copies it; a new typo is adopted
    shown = [frozenset({"bet"})] * len(rows)
    again = grade_replies(rows, clean, users, shown)
    assert list(again["pattern_copied_substitution"]) == [1, 1, 1] == list(again["pattern_k_substitution"])
