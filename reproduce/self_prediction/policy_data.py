"""The policy-report dataset in ``data_raw/policy_reports/`` (experiment 4): written from
:mod:`reproduce.self_prediction.policy_content`, hashed, carded and loaded back with checks.

The folder holds ``questions.jsonl`` (one general question about a tendency a line: its task, its wording for
the model itself and for an observer, and its two answer options), ``prompts.json`` (the prompts the questions
are asked in), a ``manifest.json`` with each file's sha256 and line count and the release sha256 that cites this
version, and a dataset card ``README.md``. Loading checks every hash. A deliberate change is made by editing the
files, bumping the version and running ``python -m reproduce.self_prediction.policy_data rehash``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import reproduce.self_prediction.policy_content as content
from reproduce.citation import generator_name
from reproduce.datasets import DATA_RAW, DatasetError
from reproduce.experiment_data import (FileDataset, VersionedData, card_tables, changes_text, citation, jsonl,
                                      parse_jsonl)

NAME = "policy_reports"
LICENCE = "CC-BY-4.0"
DESCRIPTION = ("general questions about a language model's own tendency on four A/B-choice tasks (myopic reward, "
               "survival instinct, power seeking, wealth seeking), each in a wording for the model itself and one "
               "for an observer, with two answer options")
QUESTIONS_FILE = "questions.jsonl"
PROMPTS_FILE = "prompts.json"
FILES: tuple[str, ...] = (QUESTIONS_FILE, PROMPTS_FILE)
QUESTION_KEYS = ("id", "task", "self", "observer", "tendency", "other")
PROMPT_FIELDS = {"self": ("{question}", "{option_a}", "{option_b}"),
                 "observer": ("{question}", "{option_a}", "{option_b}", "{examples}"),
                 "example": ("{question}", "{answer}")}
REHASH_COMMAND = "python -m reproduce.self_prediction.policy_data rehash"


@dataclass(frozen=True)
class PolicyData(VersionedData):
    """The loaded, verified dataset."""

    questions: tuple[dict[str, Any], ...]
    prompts: dict[str, str]
    manifest: dict[str, Any]

    def for_task(self, task: str) -> list[dict[str, Any]]:
        """The questions about ``task``, in file order."""
        return [q for q in self.questions if q["task"] == task]


def generator_string() -> str:
    return generator_name("policy-reports", content.POLICY_DATASET_VERSION)


def encode_files(questions: Sequence[dict[str, Any]], prompts: dict[str, str]) -> dict[str, bytes]:
    """The two files' bytes (sorted keys): the same content always gives the same bytes."""
    return {QUESTIONS_FILE: jsonl(questions),
            PROMPTS_FILE: (json.dumps(prompts, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode()}


def _content_files() -> dict[str, bytes]:
    return encode_files(content.QUESTIONS, content.PROMPTS)


def _parse_files(folder: Path, files: dict[str, bytes]) -> dict[str, Any]:
    try:
        prompts = json.loads(files[PROMPTS_FILE].decode())
    except UnicodeDecodeError:
        raise DatasetError(f"{folder / PROMPTS_FILE}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{folder / PROMPTS_FILE}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(prompts, dict):
        raise DatasetError(f"{folder / PROMPTS_FILE}: expected a JSON object with {', '.join(PROMPT_FIELDS)}")
    return {"questions": tuple(parse_jsonl(folder / QUESTIONS_FILE, files[QUESTIONS_FILE])), "prompts": prompts}


def validate_content(parts: dict[str, Any], folder: Path) -> None:
    """Check the parsed files; raises :class:`DatasetError` naming the file, the question and what is wrong."""
    path = Path(folder) / QUESTIONS_FILE
    questions = parts["questions"]
    if not questions:
        raise DatasetError(f"{path}: no questions")
    ids = set()
    for i, q in enumerate(questions, 1):
        if not isinstance(q, dict) or sorted(q) != sorted(QUESTION_KEYS):
            raise DatasetError(f"{path}, line {i}: a question has exactly the keys {', '.join(QUESTION_KEYS)}")
        for key in QUESTION_KEYS:
            if not isinstance(q[key], str) or not q[key].strip():
                raise DatasetError(f"{path}, line {i}: {key!r} must be a non-empty string")
        if q["id"] in ids:
            raise DatasetError(f"{path}: duplicate question id {q['id']!r}")
        ids.add(q["id"])
        if q["tendency"].casefold() == q["other"].casefold():
            raise DatasetError(f"{path}: question {q['id']!r} has the same text for both options")
    ppath = Path(folder) / PROMPTS_FILE
    prompts = parts["prompts"]
    if sorted(prompts) != sorted(PROMPT_FIELDS):
        raise DatasetError(f"{ppath}: expected exactly the prompts {', '.join(PROMPT_FIELDS)}, got {sorted(prompts)}")
    for name, fields in PROMPT_FIELDS.items():
        text = prompts[name]
        missing = [f for f in fields if not isinstance(text, str) or f not in text]
        if missing:
            raise DatasetError(f"{ppath}: prompt {name!r} lacks {', '.join(missing)}")


def _counts(parts: dict[str, Any]) -> dict[str, Any]:
    per = Counter(q["task"] for q in parts["questions"])
    return {"questions": len(parts["questions"]), "per_task": {t: per[t] for t in sorted(per)}}


def write_policy_dataset(root: Path = DATA_RAW) -> dict[str, Any]:
    """Write ``root/policy_reports/`` from the content module; returns the manifest (identical bytes each time)."""
    return SPEC.write(root)


def rehash_policy_dataset(root: Path = DATA_RAW, version: str | None = None) -> dict[str, Any]:
    """Accept deliberate edits of the content files under a new version."""
    return SPEC.rehash(root, version)


def load_policy_dataset(root: Path = DATA_RAW) -> PolicyData:
    """Read the dataset, refusing any file whose sha256 differs from the manifest and any invalid content."""
    manifest, parts = SPEC.load(root)
    return PolicyData(manifest=manifest, **parts)


def policy_card(manifest: dict[str, Any]) -> str:
    """The dataset card (markdown), from the manifest alone."""
    m = manifest
    c = m["counts"]
    per = ", ".join(f"{n} about `{t}`" for t, n in c["per_task"].items())
    description = m["description"][:1].upper() + m["description"][1:]
    return f"""# Dataset card: {m['name']} (version {m['version']})

<!-- written by `looking-inward datasets` from manifest.json; do not edit by hand -->

**What.** {description}. {c['questions']} questions ({per}). Each has a wording for the model itself
("When you are offered ...") and one for an observer ("When this assistant is offered ..."), and two options:
`tendency`, the answer that reports the behaviour the task's `ethical_stance` property counts, and `other`.
`prompts.json` holds the prompts the questions are asked in: the model's own (`self`), the observer's, which
first shows the other model's answers to some of the task's questions (`observer`, `example`).

**How it was generated.** {m['generator']}. The questions and prompts were written for this package,
following the design of Betley et al. (ICLR 2025, "Tell me about yourself: LLMs are aware of their learned
behaviors"), who ask finetuned models to describe the policy they learned; the wording is ours. The files are
written with sorted keys, one JSON object a line, so the same code reproduces every byte.{changes_text(m, content.CHANGES)}

{card_tables(m, [("questions", c['questions'])])}

**Intended use.** Experiment 4 of this package: each question is asked in both option orders, before and
after experiment 3 changes a model's behaviour on the task, and scored by the probability of the `tendency`
option at the first answer token (normalised over A and B), with no free text.

**Known limitations.** Three questions per task, English only, written by hand; a model's answer to a general
question about itself may follow the wording more than its behaviour, which is what the experiment measures
against the behaviour rates. The files contain no personal data.

**Editing.** Edit the files (one `{{"id", "task", "self", "observer", "tendency", "other"}}` object a line,
unique ids; prompts that keep their fields), then `{REHASH_COMMAND} --version X.Y.Z`; loading refuses edited
files until then.

**Cite as.** {citation(m)}
"""


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reproduce.self_prediction.policy_data write|rehash [--root DIR] [--version X.Y.Z]``."""
    return SPEC.main(argv, __doc__.split("\n")[0])


SPEC = FileDataset(
    name=NAME, module="reproduce.self_prediction.policy_data", files=FILES,
    fixed=lambda: {"name": NAME, "version": content.POLICY_DATASET_VERSION, "description": DESCRIPTION,
                   "licence": LICENCE},
    content_files=_content_files, parse=_parse_files, validate=validate_content, counts=_counts, card=policy_card,
    generator=generator_string, version_name="POLICY_DATASET_VERSION")


if __name__ == "__main__":
    sys.exit(main())
