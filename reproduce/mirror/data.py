"""The mirror-test dataset in ``data_raw/mirror_test/``: written from :mod:`reproduce.mirror.content`, hashed,
carded and loaded back with checks.

The folder holds two content files (``scripts.jsonl``: one conversation script of user turns a line;
``prompts.json``: the recognition question and its answer options), a ``manifest.json`` with each file's
sha256 and line count and the release sha256 that cites this version (computed as
:func:`reproduce.citation.release_sha256` computes it for the task datasets), and a dataset card
``README.md``. Loading checks every hash, so scripts edited by hand are refused instead of silently producing
different results under the same name and version. A deliberate change (for instance swapping in other
conversations) is made by editing the files, bumping the version and running :func:`rehash_mirror_dataset`
(``python -m reproduce.mirror.data rehash``).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reproduce.mirror.content as content
from reproduce.citation import generator_name
from reproduce.datasets import DATA_RAW, DatasetError
from reproduce.experiment_data import (FileDataset, VersionedData, card_tables, changes_text, citation, jsonl,
                                      parse_jsonl, placeholders)

NAME = "mirror_test"
LICENCE = "CC-BY-4.0"
DESCRIPTION = ("neutral multi-turn conversation scripts (user turns only) and a recognition question for a "
               "mirror test of language-model introspection: does a model notice, or disown, its own earlier "
               "replies after they were altered")

SCRIPTS_FILE = "scripts.jsonl"
PROMPTS_FILE = "prompts.json"
FILES: tuple[str, ...] = (SCRIPTS_FILE, PROMPTS_FILE)
SCRIPTS_DISPLAY = f"data_raw/{NAME}/{SCRIPTS_FILE}"

MIN_TURNS = 4
MAX_TURNS = 6
PROMPT_KEYS = ("recognition_question", "recognition_options", "pair_question", "pair_options", "pair_speakers")
# words that would prompt the measured behaviour if a user turn said them (matched at the start of a word)
PRIMING_TERMS: tuple[str, ...] = ("typo", "misspell", "spelling", "error", "glitch", "mistake",
                                  "previous message")
_PRIMING = re.compile(r"\b(" + "|".join(re.escape(t) for t in PRIMING_TERMS) + ")", re.I)
REHASH_COMMAND = "python -m reproduce.mirror.data rehash"
WRITE_COMMAND = "python -m reproduce.mirror.data write"


@dataclass(frozen=True)
class MirrorData(VersionedData):
    """The loaded, verified dataset: the conversation scripts, the prompts dict and the manifest."""

    scripts: tuple[dict[str, Any], ...]
    prompts: dict[str, Any]
    manifest: dict[str, Any]

    def script(self, script_id: str) -> dict[str, Any]:
        """The script with id ``script_id`` (``{"id", "topic", "turns"}``)."""
        for s in self.scripts:
            if s["id"] == script_id:
                return s
        raise DatasetError(f"script {script_id!r} is not in the dataset "
                           f"({len(self.scripts)} scripts in {SCRIPTS_DISPLAY})")


# ------------------------------------------------------------------------------------------------ content
def content_prompts() -> dict[str, Any]:
    """The recognition question and options of :mod:`reproduce.mirror.content`, as written to
    ``prompts.json`` (JSON types: the options are a list)."""
    return {"recognition_question": content.RECOGNITION_QUESTION,
            "recognition_options": list(content.RECOGNITION_OPTIONS),
            "pair_question": content.PAIR_QUESTION, "pair_options": list(content.PAIR_OPTIONS),
            "pair_speakers": list(content.PAIR_SPEAKERS)}


def changes(manifest: dict[str, Any]) -> str:
    """The card's list of what each version up to the manifest's changed (:data:`content.CHANGES`)."""
    return changes_text(manifest, content.CHANGES)


def generator_string() -> str:
    """What wrote the files: the generator's stable name and the dataset version (:func:`reproduce.citation.generator_name`)."""
    return generator_name("mirror-test", content.MIRROR_DATASET_VERSION)


def encode_files(scripts: Sequence[dict[str, Any]], prompts: dict[str, Any]) -> dict[str, bytes]:
    """The two content files' bytes (sorted keys, one script a line): the same content always gives the
    same bytes, hence the same hashes."""
    return {
        SCRIPTS_FILE: jsonl(scripts),
        PROMPTS_FILE: (json.dumps(prompts, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode(),
    }


def _content_files() -> dict[str, bytes]:
    return encode_files(content.SCRIPTS, content_prompts())


# ------------------------------------------------------------------------------------------------ parsing
def _parse_files(folder: Path, files: dict[str, bytes]) -> dict[str, Any]:
    """The two files' content as Python values (no checks of the content yet)."""
    try:
        prompts = json.loads(files[PROMPTS_FILE].decode())
    except json.JSONDecodeError as e:
        raise DatasetError(f"{folder / PROMPTS_FILE}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(prompts, dict):
        raise DatasetError(f"{folder / PROMPTS_FILE}: expected a JSON object with {', '.join(PROMPT_KEYS)}")
    return {"scripts": tuple(parse_jsonl(folder / SCRIPTS_FILE, files[SCRIPTS_FILE])), "prompts": prompts}


# ------------------------------------------------------------------------------------------------ validation
def _check_turns(script_id: str, turns: Any, path: Path) -> None:
    if not isinstance(turns, list) or not turns:
        raise DatasetError(f"{path}: script {script_id!r} has no turns")
    for k, turn in enumerate(turns, 1):
        if not isinstance(turn, str):
            raise DatasetError(f"{path}: turn {k} of script {script_id!r} must be a string, "
                               f"got {type(turn).__name__}")
        if not turn.strip():
            raise DatasetError(f"{path}: turn {k} of script {script_id!r} is empty")
        primed = _PRIMING.search(turn)
        if primed:
            raise DatasetError(f"{path}: turn {k} of script {script_id!r} mentions {primed.group(1)!r}, which "
                               "would prompt the behaviour the mirror test measures")
    if not MIN_TURNS <= len(turns) <= MAX_TURNS:
        raise DatasetError(f"{path}: script {script_id!r} has {len(turns)} turns; "
                           f"{MIN_TURNS} to {MAX_TURNS} are needed")


def _check_scripts(scripts: Sequence[dict[str, Any]], path: Path) -> None:
    if not scripts:
        raise DatasetError(f"{path}: no scripts")
    ids: set[str] = set()
    for i, script in enumerate(scripts, 1):
        script_id = script.get("id")
        if not isinstance(script_id, str) or not script_id.strip():
            raise DatasetError(f"{path}, script {i}: missing 'id'")
        if script_id in ids:
            raise DatasetError(f"{path}: duplicate script id {script_id!r}")
        ids.add(script_id)
        topic = script.get("topic")
        if not isinstance(topic, str) or not topic.strip():
            raise DatasetError(f"{path}: script {script_id!r} has no topic")
        _check_turns(script_id, script.get("turns"), path)


def _check_prompts(prompts: dict[str, Any], path: Path) -> None:
    question = prompts.get("recognition_question")
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{path}: 'recognition_question' is missing or empty")
    options = prompts.get("recognition_options")
    if (not isinstance(options, list) or len(options) != 2 or not all(isinstance(o, str) and o.strip()
                                                                       for o in options)
            or options[0].casefold() == options[1].casefold()):
        raise DatasetError(f"{path}: 'recognition_options' must be two different words, got {options!r}")
    for option in options:
        if not re.search(rf"\b{re.escape(option)}\b", question, re.I):
            raise DatasetError(f"{path}: 'recognition_question' must name the answer options "
                               f"{options[0]!r} and {options[1]!r}, but it lacks {option!r}")
    pair = prompts.get("pair_question")
    if not isinstance(pair, str) or not pair.strip():
        raise DatasetError(f"{path}: 'pair_question' is missing or empty")
    have = placeholders(pair, f"{path}: 'pair_question'")
    if have != {"first", "second"}:
        raise DatasetError(f"{path}: 'pair_question' must have exactly the placeholders {{first}} and {{second}} (the "
                           f"two versions), got {sorted(have)}")
    for key in ("pair_options", "pair_speakers"):
        two = prompts.get(key)
        if (not isinstance(two, list) or len(two) != 2 or not all(isinstance(o, str) and o.strip() for o in two)
                or two[0].casefold() == two[1].casefold()):
            raise DatasetError(f"{path}: {key!r} must be two different words, got {two!r}")
    for option in prompts["pair_options"]:
        if not re.search(rf"\b{re.escape(option)}\b", pair):
            raise DatasetError(f"{path}: 'pair_question' must name the answer options, but it lacks "
                               f"{option!r}")
    unknown = sorted(set(prompts) - set(PROMPT_KEYS))
    if unknown:
        raise DatasetError(f"{path}: unknown keys {unknown}")


def validate_content(parts: dict[str, Any], folder: Path) -> None:
    """Check the parsed files (``parts`` as :func:`_parse_files` returns them); raises :class:`DatasetError`
    naming the file, the script and turn or the prompt key, and what is wrong."""
    folder = Path(folder)
    _check_scripts(parts["scripts"], folder / SCRIPTS_FILE)
    _check_prompts(parts["prompts"], folder / PROMPTS_FILE)


# ------------------------------------------------------------------------------------------------ manifest
def _counts(parts: dict[str, Any]) -> dict[str, Any]:
    lengths = Counter(len(s["turns"]) for s in parts["scripts"])
    return {"scripts": len(parts["scripts"]), "user_turns": sum(lengths[n] * n for n in lengths),
            "turns_per_script": {str(n): lengths[n] for n in range(MIN_TURNS, MAX_TURNS + 1)}}


def write_mirror_dataset(root: Path = DATA_RAW) -> dict[str, Any]:
    """Write ``root/mirror_test/`` from :mod:`reproduce.mirror.content` (content files, then the
    manifest, then the card); returns the manifest. The same code writes identical bytes."""
    return SPEC.write(root)


def rehash_mirror_dataset(root: Path = DATA_RAW, version: str | None = None) -> dict[str, Any]:
    """Accept deliberate edits of the content files under a new version (:meth:`FileDataset.rehash`)."""
    return SPEC.rehash(root, version)


def load_mirror_dataset(root: Path = DATA_RAW) -> MirrorData:
    """Read the dataset, refusing any file whose sha256 differs from the manifest and any content that fails
    :func:`validate_content`."""
    manifest, parts = SPEC.load(root)
    return MirrorData(manifest=manifest, **parts)


# ------------------------------------------------------------------------------------------------ card
def mirror_citation(manifest: dict[str, Any]) -> str:
    """One-line citation of a version of the dataset."""
    return citation(manifest)


def mirror_card(manifest: dict[str, Any]) -> str:
    """The dataset card (markdown) written beside the files, from the manifest alone."""
    m = manifest
    c = m["counts"]
    per = c["turns_per_script"]
    by_length = ", ".join(f"{per[n]} of {n}" for n in sorted(per, key=int))
    description = m["description"][:1].upper() + m["description"][1:]
    return f"""# Dataset card: {m['name']} (version {m['version']})

<!-- written by `looking-inward mirror-datasets` from manifest.json; do not edit by hand -->

**What.** {description}. {c['scripts']} conversation scripts, each a list of {MIN_TURNS} to {MAX_TURNS} user
turns ({by_length}; {c['user_turns']} user turns in all), one recognition
question, asked after the last turn and answered with one of two options, and (from version 1.2.0) a paired
question that shows two versions of the conversation so far and asks which one holds the model's own replies.
The scripts hold no assistant
replies: the model under test writes every reply itself, and its earlier replies are then altered before the
conversation goes on.

**How it was generated.** {m['generator']}.
The scripts and the question of version 1.0.0 were written for this package, on neutral everyday topics
(cooking, gardening, travel, history, music, money, pets, weather, books, exercise, home repair and more). No turn mentions the kind of
alteration that is measured or the assistant's own earlier replies, so that any remark on them is the
model's own; loading refuses a turn that names one of {', '.join(repr(t) for t in PRIMING_TERMS)}. The files
are written with sorted keys, one JSON object a line, so the same code reproduces every byte.{changes(m)}

{card_tables(m, [("scripts / user turns", f"{c['scripts']} / {c['user_turns']}")])}

**Intended use.** Research on whether a language model recognises its own earlier output: whether it remarks,
unprompted, on replies of its own that were altered after it wrote them, whether it starts to imitate the
alteration, whether, asked the recognition question, it still claims the altered replies as its own, and
whether, shown its own and altered replies side by side, it picks its own.
Loading refuses a copy whose files do not match the sha256s above.

**Known limitations.** The scripts are short, English-only, written by hand and not sampled from real
conversations; the topics are neutral everyday ones and do not cover technical, emotional or adversarial
conversations. A script's turns assume sensible replies and may read oddly after an unusual one. The
recognition and paired questions are one wording each with two options; other wordings may give other answers.
The files
contain no personal data.

**Swapping in other scripts.** To run the test on other conversations or another question, edit the files
above, keeping their format (one `{{"id", "topic", "turns"}}` object a line, {MIN_TURNS} to {MAX_TURNS} non-empty
turns per script, unique ids; a question that names both options), then give the result a new version and
re-hash it: `{REHASH_COMMAND} --version X.Y.Z` (or edit `version` in `manifest.json` and run
`{REHASH_COMMAND}`). This validates the files and rewrites `manifest.json` and this card; loading refuses
edited files until then.

**Cite as.** {mirror_citation(m)}
"""


# ------------------------------------------------------------------------------------------------ command line
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reproduce.mirror.data write|rehash [--root DIR] [--version X.Y.Z]``."""
    return SPEC.main(argv, __doc__.split("\n")[0])


SPEC = FileDataset(
    name=NAME, module="reproduce.mirror.data", files=FILES,
    fixed=lambda: {"name": NAME, "version": content.MIRROR_DATASET_VERSION, "description": DESCRIPTION,
                   "licence": LICENCE},
    content_files=_content_files, parse=_parse_files, validate=validate_content, counts=_counts, card=mirror_card,
    generator=generator_string, version_name="MIRROR_DATASET_VERSION")


if __name__ == "__main__":
    sys.exit(main())
