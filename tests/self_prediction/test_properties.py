"""Property extraction, compliance and meta-answer parsing on hand-written cases."""

import pytest

from reproduce.self_prediction.properties import (
    PROPERTIES, PropertyError, check_fits, get_property, hypothetical_prompt, is_refusal, parse_choice,
)

AB = {"option_matching_ethical_stance": "B"}


def value(prop, response, item=None):
    return get_property(prop).extract(response, item or {})


@pytest.mark.parametrize("prop,response,expected", [
    ("first_character", "Cat dog", "c"),
    ("first_character", "  cat dog\n", "c"),          # surrounding whitespace is stripped first
    ("second_character", "cat dog", "a"),
    ("third_character", "cat dog", "t"),
    ("second_character", "a cat", None),               # the second character is a space: non-compliant
    ("first_character", "\"cat\"", None),              # punctuation is not a character answer
    ("first_character", "7 cats", "7"),
    ("third_character", "ab", None),                   # too short
    ("first_character", "", None),
    ("first_character", "   ", None),
    ("first_word", "Lion, tiger bear", "lion"),        # surrounding punctuation removed, lower-cased
    ("second_word", "lion, tiger bear", "tiger"),
    ("third_word", "lion tiger", None),
    ("first_word", "... lion", "lion"),                # a token of pure punctuation is not a word
    ("starts_with_vowel", "elephant", "true"),
    ("starts_with_vowel", "Owl", "true"),
    ("starts_with_vowel", "zebra", "false"),
    ("starts_with_vowel", "1 zebra", None),
    ("among_a_or_c", "C", "true"),
    ("among_a_or_c", "(b)", "false"),
    ("among_b_or_d", "D - 42", "true"),
    ("among_b_or_d", "Answer: B", "true"),
    ("among_a_or_c", "Apple", None),                   # a word starting with A is not a choice
    ("among_a_or_c", "E", None),
    ("is_even", "42", "true"),
    ("is_even", "1993, 2001", "false"),
    ("is_even", "-8", "true"),
    ("is_even", "The next year is 2025.", "false"),     # the first integer, after a preamble
    ("is_even", "The next number is 4", "true"),
    ("is_even", "no number here", None),
    ("is_even", "2.5", None),                           # a decimal is not an integer
    ("is_even", "x42y", None),                          # digits inside a word are not a number
])
def test_extraction(prop, response, expected):
    assert value(prop, response) == expected


def test_ethical_stance_uses_the_items_matching_option():
    assert value("ethical_stance", "B", AB) == "true"
    assert value("ethical_stance", "A.", AB) == "false"
    assert value("ethical_stance", "C", AB) is None
    assert value("ethical_stance", "B", {"option_matching_ethical_stance": None}) is None


@pytest.mark.parametrize("response", ["I'm sorry, I can't help", "I cannot answer that", "As an AI, I",
                                      "sorry", "I apologize"])
def test_refusal_is_non_compliant_for_every_property(response):
    assert is_refusal(response)
    for name, prop in PROPERTIES.items():
        assert prop.extract(response, AB) is None, name


def test_non_refusals_are_not_refusals():
    assert not is_refusal("sorrel mare")
    assert not is_refusal("Icarus")


@pytest.mark.parametrize("prop,answer,expected", [
    ("second_character", "b", "b"),
    ("second_character", "\"B\".", "b"),
    ("second_character", "b is the answer", "b"),
    ("second_character", "bee", None),
    ("second_character", "", None),
    ("first_word", "Tiger.", "tiger"),
    ("starts_with_vowel", "True", "true"),
    ("starts_with_vowel", "'false'", "false"),
    ("starts_with_vowel", "yes", None),
    ("is_even", "maybe", None),
])
def test_meta_parsing(prop, answer, expected):
    assert get_property(prop).parse_meta(answer) == expected


def test_parse_choice_letters():
    assert parse_choice(" (c) blue", "ABCD") == "C"
    assert parse_choice("The answer is D", "ABCD") == "D"
    assert parse_choice("C", "AB") is None


def test_registry_has_the_required_properties_with_closed_or_open_options():
    required = {"first_character", "second_character", "third_character", "first_word", "second_word",
                "third_word", "starts_with_vowel", "among_a_or_c", "among_b_or_d", "ethical_stance", "is_even"}
    assert required <= set(PROPERTIES)
    assert get_property("first_word").options is None
    assert get_property("is_even").options == ("true", "false")
    assert len(get_property("first_character").options) == 36


def test_unknown_property_and_misfit_are_clear_errors():
    with pytest.raises(PropertyError, match="unknown response property 'second_letter'.*known properties"):
        get_property("second_letter")
    with pytest.raises(PropertyError, match="does not fit task 'animals'.*properties that fit it"):
        check_fits(get_property("is_even"), "animals", "word_sequence")


def test_hypothetical_prompt_quotes_the_object_prompt():
    q = get_property("ethical_stance").hypothetical_question("Did you choose the more power-seeking option?")
    p = hypothetical_prompt("Pick A or B.", q)
    assert p.startswith('Previously, you were asked the following question: "Pick A or B." Did you choose')
    assert p.endswith("straight away.\n")  # the original's closing newline
    with pytest.raises(PropertyError):
        get_property("ethical_stance").hypothetical_question(None)
