"""Word lists and A/B scenario banks for the "Looking Inward" reproduction, read from versioned data files.

The content lives in ``reproduce/self_prediction/content/words.yaml`` (colors, countries, animals, english_words) and
``reproduce/self_prediction/content/scenarios.yaml`` (the A/B scenario banks of the four stance tasks). These are the
project's own word lists and scenarios, written for this package (not copied from any existing dataset).
The task-dataset generators draw from them with a fixed seed, so the datasets are produced deterministically
from these files.

Editing ANY entry (adding, removing, reordering or rewording) changes the generated datasets and therefore
their hashes: bump the dataset version whenever a content file changes.

``python -m reproduce.self_prediction.task_content`` checks the invariants (see :func:`validate`).
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import yaml

CONTENT = Path(__file__).resolve().parent / "content"


def _frozen(x):
    """Lists as tuples, recursively: the content is read-only."""
    if isinstance(x, list):
        return tuple(_frozen(v) for v in x)
    if isinstance(x, dict):
        return {k: _frozen(v) for k, v in x.items()}
    return x


def _load(name: str) -> dict:
    return _frozen(yaml.safe_load((CONTENT / name).read_text(encoding="utf-8")))


_WORDS = _load("words.yaml")
_SCENARIOS = _load("scenarios.yaml")
#: the content files' versions (recorded beside the generator version)
CONTENT_VERSION = {"words": _WORDS["version"], "scenarios": _SCENARIOS["version"]}

# Word lists (lowercase, letters a-z only, pairwise disjoint)
COLORS: tuple[str, ...] = _WORDS["colors"]
COUNTRIES: tuple[str, ...] = _WORDS["countries"]
ANIMALS: tuple[str, ...] = _WORDS["animals"]
ENGLISH_WORDS: tuple[str, ...] = _WORDS["english_words"]

# A/B scenario banks: each scenario is a template with {slot} placeholders, the values of every slot, the
# answer matching the stance ("matching") and the other. For myopic_reward the smaller-sooner quantity lives
# in the slot "sooner" and the larger-later one in "later"; validate() checks every "later" is larger.
AB_SCENARIOS: dict[str, tuple[dict, ...]] = {
    task: _SCENARIOS[task] for task in ("power_seeking", "wealth_seeking", "myopic_reward", "survival_instinct")}


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------

_WORD_RE = re.compile(r"^[a-z]+$")
_SLOT_RE = re.compile(r"^[a-z_]+$")
_NUM_RE = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _check_text(s: object, where: str) -> None:
    assert isinstance(s, str), f"{where}: expected str, got {type(s).__name__}"
    assert s.strip() == s and s, f"{where}: empty or has surrounding whitespace: {s!r}"
    assert s.isascii(), f"{where}: non-ASCII text: {s!r}"
    assert "\n" not in s and "\r" not in s, f"{where}: contains a newline: {s!r}"


def _placeholders(text: str, where: str) -> set[str]:
    names: set[str] = set()
    for literal, field, spec, conv in string.Formatter().parse(text):
        assert "{" not in literal and "}" not in literal, f"{where}: stray/escaped brace in {text!r}"
        if field is None:
            continue
        assert _SLOT_RE.match(field), f"{where}: bad placeholder {{{field}}} in {text!r}"
        assert not spec and conv is None, f"{where}: format spec/conversion not allowed in {text!r}"
        names.add(field)
    return names


def _first_number(s: str) -> float:
    m = _NUM_RE.search(s)
    assert m, f"myopic_reward: no number in quantity {s!r}"
    return float(m.group(0).replace(",", ""))


def validate() -> None:
    lists = {
        "COLORS": (COLORS, 60),
        "COUNTRIES": (COUNTRIES, 80),
        "ANIMALS": (ANIMALS, 80),
        "ENGLISH_WORDS": (ENGLISH_WORDS, 300),
    }
    for name, (words, minimum) in lists.items():
        assert isinstance(words, tuple), f"{name} must be a tuple"
        assert len(words) >= minimum, f"{name} has {len(words)} entries, need >= {minimum}"
        dupes = sorted({w for w in words if words.count(w) > 1})
        assert not dupes, f"{name} has duplicates: {dupes}"
        bad = [w for w in words if not (isinstance(w, str) and _WORD_RE.match(w))]
        assert not bad, f"{name} has entries that are not lowercase a-z words: {bad}"
    bad_len = [w for w in ENGLISH_WORDS if not 3 <= len(w) <= 12]
    assert not bad_len, f"ENGLISH_WORDS entries outside 3-12 letters: {bad_len}"
    first_letters = {w[0] for w in ENGLISH_WORDS}
    assert len(first_letters) >= 20, f"ENGLISH_WORDS first letters too narrow: {sorted(first_letters)}"
    n_vowel = sum(w[0] in "aeiou" for w in ENGLISH_WORDS)
    assert n_vowel >= 0.15 * len(ENGLISH_WORDS), f"ENGLISH_WORDS: only {n_vowel} start with a vowel"

    names = list(lists)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(lists[a][0]) & set(lists[b][0]))
            assert not common, f"{a} and {b} overlap: {common}"

    expected = {"power_seeking", "wealth_seeking", "myopic_reward", "survival_instinct"}
    assert set(AB_SCENARIOS) == expected, f"AB_SCENARIOS keys {sorted(AB_SCENARIOS)} != {sorted(expected)}"
    for task, scenarios in AB_SCENARIOS.items():
        assert isinstance(scenarios, tuple), f"{task}: scenarios must be a tuple"
        assert len(scenarios) >= 14, f"{task}: {len(scenarios)} scenarios, need >= 14"
        seen_templates: set[str] = set()
        for idx, sc in enumerate(scenarios):
            where = f"{task}[{idx}]"
            assert isinstance(sc, dict), f"{where}: must be a dict"
            assert set(sc) == {"template", "slots", "matching", "other"}, f"{where}: keys are {sorted(sc)}"
            slots = sc["slots"]
            assert isinstance(slots, dict), f"{where}: slots must be a dict"
            used: set[str] = set()
            for field in ("template", "matching", "other"):
                text = sc[field]
                _check_text(text, f"{where}.{field}")
                assert "Choices" not in text, f"{where}.{field}: must not contain 'Choices'"
                assert not re.match(r"^\(?[AB](?:\)|\.|:| -)", text), f"{where}.{field}: must not start with an option letter"
                used |= _placeholders(text, f"{where}.{field}")
            assert sc["template"] not in seen_templates, f"{where}: duplicate template"
            seen_templates.add(sc["template"])
            assert sc["matching"] != sc["other"], f"{where}: matching and other are identical"
            missing = used - set(slots)
            assert not missing, f"{where}: placeholders without slots: {sorted(missing)}"
            unused = set(slots) - used
            assert not unused, f"{where}: slots never used: {sorted(unused)}"
            product = 1
            for key, values in slots.items():
                assert _SLOT_RE.match(key), f"{where}: bad slot name {key!r}"
                assert isinstance(values, tuple), f"{where}.slots[{key}] must be a tuple"
                assert len(values) >= 3, f"{where}.slots[{key}] has {len(values)} values, need >= 3"
                assert len(set(values)) == len(values), f"{where}.slots[{key}] has duplicates"
                for v in values:
                    _check_text(v, f"{where}.slots[{key}]")
                    assert "{" not in v and "}" not in v, f"{where}.slots[{key}]: braces in {v!r}"
                product *= len(values)
            if not slots:
                assert len(scenarios) >= 8 * 14, f"{where}: empty slots need a much larger scenario bank"
            else:
                assert product >= 8, f"{where}: slot product {product} < 8"
            first = {k: v[0] for k, v in slots.items()}
            for field in ("template", "matching", "other"):
                sc[field].format(**first)
            if task == "myopic_reward":
                assert "sooner" in slots and "later" in slots, f"{where}: needs 'sooner' and 'later' slots"
                hi_sooner = max(_first_number(v) for v in slots["sooner"])
                lo_later = min(_first_number(v) for v in slots["later"])
                assert lo_later >= 2 * hi_sooner, (
                    f"{where}: later reward not clearly larger ({lo_later} vs {hi_sooner})"
                )


def _min_products() -> dict[str, int]:
    out = {}
    for task, scenarios in AB_SCENARIOS.items():
        prods = []
        for sc in scenarios:
            p = 1
            for v in sc["slots"].values():
                p *= len(v)
            prods.append(p)
        out[task] = min(prods)
    return out


if __name__ == "__main__":
    validate()
    print("ok")
