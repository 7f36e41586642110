"""Verdicts from intervals and a region of practical equivalence (ROPE), never from point estimates.

For an effect in accuracy points with a 94% posterior interval ``[low, high]`` and a ROPE of ``+/- rope``
points (``analysis.rope`` in params.yaml):

* ``positive``: the interval lies above the ROPE (``low > rope``);
* ``negative``: the interval lies below it (``high < -rope``);
* ``practically null``: the interval lies inside it;
* ``inconclusive``: anything else. An interval that merely includes zero is inconclusive, not evidence of
  absence.

Every qualitative sentence of the manuscript is one of these, or a combination of them defined here.
"""

from __future__ import annotations

POSITIVE, NEGATIVE, NULL, INCONCLUSIVE = "positive", "negative", "practically null", "inconclusive"


def verdict(low: float, high: float, rope: float) -> str:
    if low > rope:
        return POSITIVE
    if high < -rope:
        return NEGATIVE
    if -rope <= low and high <= rope:
        return NULL
    return INCONCLUSIVE


def headline(delta: str, directions: list[str]) -> str:
    """The paper's criterion, an advantage in every direction (each direction's interval above the ROPE),
    combined with the verdict on delta, the advantage at equal predicting skill with directions weighted
    equally."""
    if directions and all(d == POSITIVE for d in directions):
        return "advantage in every direction"
    if delta == POSITIVE:
        return "advantage on average, not in every direction"
    if delta == NEGATIVE:
        return "reverse advantage"
    if delta == NULL:
        return "practically null"
    return "inconclusive"


def probability_text(p: float) -> str:
    """A posterior probability as the manuscript and the figures write it: two decimals, with the ends stated
    as bounds (``> 0.99``, ``< 0.01``), never 1.00 or 0.00."""
    if p > 0.995:
        return "> 0.99"
    if p < 0.005:
        return "< 0.01"
    return f"{p:.2f}"


def interval_side(low: float, high: float) -> str:
    """Where an interval lies against zero, for effects that carry no region of practical equivalence:
    "above", "below" or "unclear" (it contains zero)."""
    return "above" if low > 0 else "below" if high < 0 else "unclear"
