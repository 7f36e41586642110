"""The concept-injection dataset in ``data_raw/concept_injection/``: written from
:mod:`reproduce.injection.content`, hashed, carded and loaded back with checks.

The folder holds five content files (``concepts.jsonl``, ``prompts.json``, ``yes_bias.jsonl``,
``prefill.jsonl``, ``intention.jsonl``), a ``manifest.json`` with each file's sha256 and line count and the
release sha256 that cites this version (computed as :func:`reproduce.citation.release_sha256` computes it for
the task datasets), and a dataset card ``README.md``. Loading checks every hash, so wording edited by hand
is refused instead of silently producing different results under the same name and version. A deliberate
change (for instance swapping in another study's wording) is made by editing the files, bumping the
version and running :func:`rehash_injection_dataset` (``python -m reproduce.injection.data rehash``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reproduce.injection.content as content
from reproduce.citation import generator_name
from reproduce.datasets import DATA_RAW, DatasetError
from reproduce.experiment_data import (FileDataset, VersionedData, card_tables, changes_text, citation, jsonl,
                                      parse_jsonl, placeholders)

NAME = "concept_injection"
LICENCE = "CC-BY-4.0"
DESCRIPTION = ("concept words, baseline words and conversation wording for a concept-injection "
               "(injected thoughts) experiment on language-model introspection")
STUDY = ('Lindsey, J. (2025). "Emergent introspective awareness in large language models". '
         "Transformer Circuits Thread. https://transformer-circuits.pub/2025/introspection/index.html")

CONCEPTS_FILE = "concepts.jsonl"
PROMPTS_FILE = "prompts.json"
YES_BIAS_FILE = "yes_bias.jsonl"
PREFILL_FILE = "prefill.jsonl"
INTENTION_FILE = "intention.jsonl"
FILES: tuple[str, ...] = (CONCEPTS_FILE, PROMPTS_FILE, YES_BIAS_FILE, PREFILL_FILE, INTENTION_FILE)
CONCEPTS_DISPLAY = f"data_raw/{NAME}/{CONCEPTS_FILE}"

ROLES = ("concept", "baseline")
MIN_CONCEPTS = 2
MIN_BASELINES = 10
# each template in prompts.json and exactly the placeholders it must have
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {
    "concept_prompt": frozenset({"word"}),
    "preamble": frozenset(),
    "acknowledgement": frozenset(),
    "trial": frozenset({"n"}),
    "identify_prefill": frozenset(),
    "steer_question": frozenset(),
    "steer_prefill": frozenset(),
    "two_turn_notice": frozenset(),
    "two_turn_reply": frozenset(),
    "two_turn_question": frozenset(),
    "two_turn_prefill": frozenset(),
    "prefill_instruction": frozenset({"sentence"}),
    "prefill_question": frozenset(),
    "think": frozenset({"sentence", "word"}),
    "dont_think": frozenset({"sentence", "word"}),
}
#: the forced-choice detection question: a list of wordings, each with exactly the placeholder {n}, asked in turn by
#: trial slot; at least this many, so that the control trials' false-positive rate spans wording variation
WORDINGS_KEY = "trial_forced"
MIN_WORDINGS = 8
REHASH_COMMAND = "python -m reproduce.injection.data rehash"
WRITE_COMMAND = "python -m reproduce.injection.data write"


@dataclass(frozen=True)
class InjectionData(VersionedData):
    """The loaded, verified dataset: word lists, the prompts dict and the three item lists."""

    concepts: tuple[str, ...]
    baselines: tuple[str, ...]
    prompts: dict[str, Any]
    yes_bias: tuple[dict[str, str], ...]
    prefill: tuple[dict[str, str], ...]
    intention: tuple[dict[str, str], ...]
    manifest: dict[str, Any]

    def concept_index(self, word: str) -> int:
        """Position of ``word`` in the concept list (the row of its concept vector)."""
        try:
            return self.concepts.index(word)
        except ValueError:
            raise DatasetError(f"concept {word!r} is not in the concept list "
                               f"({len(self.concepts)} words in {CONCEPTS_DISPLAY})") from None


# ------------------------------------------------------------------------------------------------ content
def content_prompts() -> dict[str, Any]:
    """The templates, answer options and trial count of :mod:`reproduce.injection.content`, as written to
    ``prompts.json`` (JSON types: the options are a list)."""
    return {
        "concept_prompt": content.CONCEPT_PROMPT,
        "preamble": content.PREAMBLE,
        "acknowledgement": content.ACKNOWLEDGEMENT,
        "trial": content.TRIAL,
        WORDINGS_KEY: list(content.TRIAL_FORCED_WORDINGS),
        "identify_prefill": content.IDENTIFY_PREFILL,
        "steer_question": content.STEER_QUESTION,
        "steer_prefill": content.STEER_PREFILL,
        "two_turn_notice": content.TWO_TURN_NOTICE,
        "two_turn_reply": content.TWO_TURN_REPLY,
        "two_turn_question": content.TWO_TURN_QUESTION,
        "two_turn_prefill": content.TWO_TURN_PREFILL,
        "prefill_instruction": content.PREFILL_INSTRUCTION,
        "prefill_question": content.PREFILL_QUESTION,
        "prefill_options": list(content.PREFILL_OPTIONS),
        "think": content.THINK,
        "dont_think": content.DONT_THINK,
    }


def changes(manifest: dict[str, Any]) -> str:
    """The card's list of what each version up to the manifest's changed (:data:`content.CHANGES`)."""
    return changes_text(manifest, content.CHANGES)


def generator_string() -> str:
    """What wrote the files: the generator's stable name and the dataset version (:func:`reproduce.citation.generator_name`)."""
    return generator_name("concept-injection", content.INJECTION_DATASET_VERSION)


def encode_files(concepts: Sequence[str], baselines: Sequence[str], prompts: dict[str, Any],
                 yes_bias: Sequence[dict], prefill: Sequence[dict], intention: Sequence[dict]) -> dict[str, bytes]:
    """The five content files' bytes (sorted keys, one JSON object a line): the same content always gives
    the same bytes, hence the same hashes."""
    words = [{"word": w, "role": "concept"} for w in concepts] + [{"word": w, "role": "baseline"} for w in baselines]
    return {
        CONCEPTS_FILE: jsonl(words),
        PROMPTS_FILE: (json.dumps(prompts, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode(),
        YES_BIAS_FILE: jsonl(yes_bias),
        PREFILL_FILE: jsonl(prefill),
        INTENTION_FILE: jsonl(intention),
    }


def _content_files() -> dict[str, bytes]:
    return encode_files(content.CONCEPTS, content.BASELINES, content_prompts(), content.YES_BIAS,
                        content.PREFILL_PAIRS, content.INTENTION_SENTENCES)


# ------------------------------------------------------------------------------------------------ parsing
def _parse_words(path: Path, rows: list[dict[str, Any]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    by_role: dict[str, list[str]] = {r: [] for r in ROLES}
    for i, row in enumerate(rows, 1):
        word, role = row.get("word"), row.get("role")
        if role not in ROLES:
            raise DatasetError(f"{path}, line {i}: role must be one of {ROLES}, got {role!r}")
        if not isinstance(word, str) or not word.strip() or word != word.strip():
            raise DatasetError(f"{path}, line {i}: word must be a non-empty string without surrounding "
                               f"spaces, got {word!r}")
        by_role[role].append(word)
    return tuple(by_role["concept"]), tuple(by_role["baseline"])


def _parse_files(folder: Path, files: dict[str, bytes]) -> dict[str, Any]:
    """The five files' content as Python values (no cross-checks yet)."""
    concepts, baselines = _parse_words(folder / CONCEPTS_FILE,
                                       parse_jsonl(folder / CONCEPTS_FILE, files[CONCEPTS_FILE]))
    try:
        prompts = json.loads(files[PROMPTS_FILE].decode())
    except json.JSONDecodeError as e:
        raise DatasetError(f"{folder / PROMPTS_FILE}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(prompts, dict):
        raise DatasetError(f"{folder / PROMPTS_FILE}: expected a JSON object of templates")
    return {
        "concepts": concepts,
        "baselines": baselines,
        "prompts": prompts,
        "yes_bias": tuple(parse_jsonl(folder / YES_BIAS_FILE, files[YES_BIAS_FILE])),
        "prefill": tuple(parse_jsonl(folder / PREFILL_FILE, files[PREFILL_FILE])),
        "intention": tuple(parse_jsonl(folder / INTENTION_FILE, files[INTENTION_FILE])),
    }


# ------------------------------------------------------------------------------------------------ validation
def mentions(sentence: str, word: str) -> bool:
    """Whether ``word`` (or its plural) occurs as a word of ``sentence``, ignoring case."""
    w = word.casefold()
    if not w.isalpha():
        return w in sentence.casefold()
    return any(t in (w, w + "s", w + "es") for t in re.findall(r"[^\W\d_]+", sentence.casefold()))


def _check_words(concepts: Sequence[str], baselines: Sequence[str], path: Path) -> None:
    if len(concepts) < MIN_CONCEPTS:
        raise DatasetError(f"{path}: {len(concepts)} concept words; at least {MIN_CONCEPTS} are needed")
    if len(baselines) < MIN_BASELINES:
        raise DatasetError(f"{path}: {len(baselines)} baseline words; at least {MIN_BASELINES} are needed "
                           "for a stable mean activation")
    for role, words in (("concept", concepts), ("baseline", baselines)):
        seen: set[str] = set()
        for w in words:
            if w.casefold() in seen:
                raise DatasetError(f"{path}: duplicate {role} word {w!r}")
            seen.add(w.casefold())
    overlap = sorted({w.casefold() for w in concepts} & {w.casefold() for w in baselines})
    if overlap:
        raise DatasetError(f"{path}: baseline words must not be concepts, but {overlap} are both")


def _check_prompts(prompts: dict[str, Any], path: Path) -> None:
    for key, wanted in TEMPLATE_FIELDS.items():
        text = prompts.get(key)
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{path}: template {key!r} is missing or empty")
        have = placeholders(text, f"{path}: template {key!r}")
        missing, unknown = sorted(wanted - have), sorted(have - wanted)
        if missing:
            raise DatasetError(f"{path}: template {key!r} lacks the placeholder {{{missing[0]}}}")
        if unknown:
            allowed = ", ".join(f"{{{n}}}" for n in sorted(wanted)) or "none"
            raise DatasetError(f"{path}: template {key!r} has the unknown placeholder {{{unknown[0]}}} "
                               f"(allowed: {allowed})")
    wordings = prompts.get(WORDINGS_KEY)
    if not isinstance(wordings, list) or len(wordings) < MIN_WORDINGS:
        raise DatasetError(f"{path}: {WORDINGS_KEY!r} must be a list of at least {MIN_WORDINGS} wordings of the "
                           f"forced-choice detection question, got "
                           f"{len(wordings) if isinstance(wordings, list) else type(wordings).__name__}")
    for i, text in enumerate(wordings):
        where = f"{path}: {WORDINGS_KEY!r} wording {i + 1}"
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{where} is empty or not text")
        if placeholders(text, where) != {"n"}:
            raise DatasetError(f"{where} must have exactly the placeholder {{n}} (the trial number)")
    if len(set(wordings)) != len(wordings):
        raise DatasetError(f"{path}: {WORDINGS_KEY!r} repeats a wording; each must differ")
    for key in ("identify_prefill", "steer_prefill", "two_turn_prefill"):
        if prompts[key] != prompts[key].rstrip():
            raise DatasetError(f"{path}: template {key!r} must not end with a space: the word read "
                               "next is the next token, which carries its own leading space")
    options = prompts.get("prefill_options")
    if (not isinstance(options, list) or len(options) != 2 or not all(isinstance(o, str) and o for o in options)
            or options[0] == options[1]):
        raise DatasetError(f"{path}: 'prefill_options' must be two different words, got {options!r}")
    unknown = sorted(set(prompts) - set(TEMPLATE_FIELDS) - {"prefill_options", WORDINGS_KEY})
    if unknown:
        raise DatasetError(f"{path}: unknown keys {unknown}")


def _check_items(rows: Sequence[dict[str, Any]], text_key: str, path: Path) -> None:
    ids: set[str] = set()
    for i, row in enumerate(rows, 1):
        item_id, text = row.get("id"), row.get(text_key)
        if not isinstance(item_id, str) or not item_id:
            raise DatasetError(f"{path}, item {i}: missing 'id'")
        if item_id in ids:
            raise DatasetError(f"{path}: duplicate id {item_id!r}")
        ids.add(item_id)
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{path}: {item_id}: missing or empty {text_key!r}")
    if not rows:
        raise DatasetError(f"{path}: no items")


def _check_word_items(rows: Sequence[dict[str, Any]], concepts: Sequence[str], path: Path) -> None:
    _check_items(rows, "sentence", path)
    known = set(concepts)
    for row in rows:
        word = row.get("word")
        if word not in known:
            raise DatasetError(f"{path}: {row['id']}: word {word!r} is not in the concept list "
                               f"({len(concepts)} words in {CONCEPTS_FILE}), so it has no concept vector")
        if mentions(row["sentence"], word):
            raise DatasetError(f"{path}: {row['id']}: word {word!r} occurs in its sentence "
                               f"{row['sentence']!r}; it must be out of place there")


def validate_content(parts: dict[str, Any], folder: Path) -> None:
    """Cross-check the parsed files (``parts`` as :func:`_parse_files` returns them); raises
    :class:`DatasetError` naming the file, the item or template key, and what is wrong."""
    folder = Path(folder)
    _check_words(parts["concepts"], parts["baselines"], folder / CONCEPTS_FILE)
    _check_prompts(parts["prompts"], folder / PROMPTS_FILE)
    _check_items(parts["yes_bias"], "question", folder / YES_BIAS_FILE)
    _check_word_items(parts["prefill"], parts["concepts"], folder / PREFILL_FILE)
    _check_word_items(parts["intention"], parts["concepts"], folder / INTENTION_FILE)


# ------------------------------------------------------------------------------------------------ manifest
def _counts(parts: dict[str, Any]) -> dict[str, int]:
    return {"concepts": len(parts["concepts"]), "baselines": len(parts["baselines"]),
            "yes_bias": len(parts["yes_bias"]), "prefill": len(parts["prefill"]),
            "intention": len(parts["intention"]), "wordings": len(parts["prompts"][WORDINGS_KEY])}


def write_injection_dataset(root: Path = DATA_RAW) -> dict[str, Any]:
    """Write ``root/concept_injection/`` from :mod:`reproduce.injection.content` (content files, then the
    manifest, then the card); returns the manifest. The same code writes identical bytes."""
    return SPEC.write(root)


def rehash_injection_dataset(root: Path = DATA_RAW, version: str | None = None) -> dict[str, Any]:
    """Accept deliberate edits of the content files under a new version (:meth:`FileDataset.rehash`)."""
    return SPEC.rehash(root, version)


def load_injection_dataset(root: Path = DATA_RAW) -> InjectionData:
    """Read the project's own dataset, refusing any file whose sha256 differs from the manifest and any content
    that fails :func:`validate_content` (:func:`reproduce.injection.catalog.load_dataset` reads any of them)."""
    manifest, parts = SPEC.load(root)
    return InjectionData(manifest=manifest, **parts)


# ------------------------------------------------------------------------------------------------ card
def injection_citation(manifest: dict[str, Any]) -> str:
    """One-line citation of a version of the dataset."""
    return citation(manifest)


def injection_card(manifest: dict[str, Any]) -> str:
    """The dataset card (markdown) written beside the files, from the manifest alone."""
    m = manifest
    c = m["counts"]
    description = m["description"][:1].upper() + m["description"][1:]
    return f"""# Dataset card: {m['name']} (version {m['version']})

<!-- written by `looking-inward injection-datasets` from manifest.json; do not edit by hand -->

**What.** {description}: {c['concepts']} concept words (each becomes a concept vector),
{c['baselines']} baseline words (their mean activation is subtracted from every concept's), the
conversation wording of the injected-thought trials (the forced-choice detection question in
{c.get('wordings', 1)} wordings, asked in turn by trial slot; a two-turn trial, after the design of Pearson-Vogel
et al. 2026, in this package's words), {c['yes_bias']} yes/no
control questions whose true answer is "no", {c['prefill']} sentence/word pairs for detecting a prefilled
(unintended) word, and {c['intention']} sentences for the think / do-not-think control.

**Study.** The experiment follows the design of {m.get('study', 'the concept-injection study')}.
The words and sentences of version 1.0.0 were written for this package; none is taken from that study or
from a replication of it.

**How it was generated.** {m['generator']}.
The files are written with sorted keys, one JSON object a line, so the same code reproduces every byte.{changes(m)}

{card_tables(m, [("concepts / baselines", f"{c['concepts']} / {c['baselines']}"),
                     ("yes-bias / prefill / intention items", f"{c['yes_bias']} / {c['prefill']} / {c['intention']}")])}

**Intended use.** Research on whether a language model notices, and can name, a concept added to its
activations: detection and identification trials, the yes-bias control (does injection alone push answers
towards "yes"), prefill detection (does the model disown a word put in its mouth, and does injecting that
word beforehand make it claim the word as intended), and the think / do-not-think control of a concept's
representation. Loading refuses a copy whose files do not match the sha256s above.

**Known limitations.** The word lists are short, English-only and chosen by hand, not sampled from a
frequency list; the concepts mix concrete and abstract nouns unevenly across domains, and a single-word
prompt defines each concept vector, so a vector may also carry the word's spelling or frequency. "Out of
place" in the prefill pairs and "no" in the yes-bias questions are the authors' judgement, not rated by
people. The files contain no personal data.

**Swapping in other wording.** To run the experiment with other words or prompts (for instance the
original study's wording, used deliberately), edit the files above, keeping their format and placeholders
(`{{word}}`, `{{n}}`, `{{sentence}}`), then give the result a new version and re-hash it:
`{REHASH_COMMAND} --version X.Y.Z` (or edit `version` in `manifest.json` and run `{REHASH_COMMAND}`). This
validates the files and rewrites `manifest.json` and this card; loading refuses edited files until then.

**Cite as.** {injection_citation(m)}
"""


# ------------------------------------------------------------------------------------------------ command line
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reproduce.injection.data write|rehash [--root DIR] [--version X.Y.Z]``."""
    return SPEC.main(argv, __doc__.split("\n")[0])


SPEC = FileDataset(
    name=NAME, module="reproduce.injection.data", files=FILES,
    fixed=lambda: {"name": NAME, "version": content.INJECTION_DATASET_VERSION, "description": DESCRIPTION,
                   "licence": LICENCE, "study": STUDY},
    content_files=_content_files, parse=_parse_files, validate=validate_content, counts=_counts, card=injection_card,
    generator=generator_string, version_name="INJECTION_DATASET_VERSION")


if __name__ == "__main__":
    sys.exit(main())
