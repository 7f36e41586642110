"""Importer for the dataset release of "Looking Inward" (Binder et al. 2024, MIT licence).

The release has one jsonl file per (task, property) under ``train/`` and ``test/``; each row carries
``original_question``, ``original_dataset``, ``object_level_prompt`` and ``hypothetical_prompt`` (chat message
lists), ``behavioral_property`` and ``option_matching_ethical_stance``. The importer groups rows by
``original_dataset`` into one task per dataset (items keyed by their question, so an item asked under seven
properties is one item with seven hypothetical prompts) and writes the same ``data_raw/<task>/`` format the
project's own tasks use. Prompts are kept verbatim except for two known flaws of the release, repaired
unless ``fix_known_flaws=False`` and listed in the manifest:

- a U+2029 (paragraph separator) that replaced ``"\\nP"`` of ``"Please answer"`` in wealth_seeking prompts;
- a stray closing ``"`` after the starts_with_vowel question.

Properties this package does not define (e.g. ``identity``) are skipped, counted per dataset in its manifest,
and reported.

Nothing is written unless every dataset imports: the datasets are written into a staging folder beside ``out``
and moved into place at the end. An existing dataset of the same name is replaced only with ``force=True``; the
error names every dataset it would replace. Each imported dataset's card says where it came from (the original
study's release, MIT), which repairs were applied and which properties were skipped.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from reproduce.citation import generator_name
from reproduce.datasets import DatasetError
from reproduce.self_prediction.task_data import write_task
from reproduce.io import short_hash
from reproduce.self_prediction.properties import AB_CHOICE, MULTIPLE_CHOICE, NUMBER_SEQUENCE, PROPERTIES, WORD_SEQUENCE

RELEASE_KEYS = ("original_question", "original_dataset", "object_level_prompt", "hypothetical_prompt",
                "behavioral_property")
RELEASE_LICENCE = "MIT (Looking Inward dataset release, Binder et al. 2024)"
#: where an imported dataset comes from, for its manifest and card
RELEASE_SOURCE = ("the dataset release of Binder et al. (2024), \"Looking Inward: Language Models Can Learn About "
                  "Themselves by Introspection\" (arXiv:2410.13787; github.com/felixbinder/introspection_self_prediction), "
                  "MIT licence")
#: the fields of a release row that must be text
TEXT_KEYS = ("original_question", "original_dataset", "behavioral_property")
FIXES = {
    "u2029_please": ("\u2029lease answer", "\nPlease answer"),
    "u2029": ("\u2029", "\n"),
    "starts_with_vowel_quote": ("for no.\"\n", "for no.\n"),
}


#: the importer's version, named in each imported manifest's generator
IMPORTER_VERSION = "1.0.0"

def _family(props: set[str], name: str) -> str:
    if "ethical_stance" in props:
        family = AB_CHOICE
    elif props & {"among_a_or_c", "among_b_or_d"}:
        family = MULTIPLE_CHOICE
    elif "is_even" in props:
        family = NUMBER_SEQUENCE
    else:
        family = WORD_SEQUENCE
    misfit = sorted(p for p in props if family not in PROPERTIES[p].families)
    if misfit:
        raise DatasetError(f"release dataset {name!r} mixes properties of different task families: {sorted(props)}")
    return family


def _user_text(messages: Any, where: str) -> str:
    if not isinstance(messages, list) or not messages:
        raise DatasetError(f"{where}: expected a non-empty list of chat messages")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if len(users) != 1 or not isinstance(users[0].get("content"), str):
        raise DatasetError(f"{where}: expected exactly one user message with text content")
    return users[0]["content"]


def _fix(text: str, applied: set[str]) -> str:
    for key, (old, new) in FIXES.items():
        if old in text:
            text = text.replace(old, new)
            applied.add(key)
    return text


def read_release_file(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):  # not splitlines: U+2029 is in the data
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}:{n}: not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1}); "
                               "a release file is UTF-8 jsonl") from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{n}: not valid JSON ({exc.msg}); is this a Looking Inward release file?") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{n}: expected a JSON object per line")
        missing = [k for k in RELEASE_KEYS if k not in row]
        if missing:
            raise DatasetError(f"{path}:{n}: missing keys {missing}; a release row has {list(RELEASE_KEYS)}")
        for key in TEXT_KEYS:
            if not isinstance(row[key], str) or not row[key].strip():
                raise DatasetError(f"{path}:{n}: {key} must be non-empty text, got {row[key]!r}")
        rows.append(row)
    if not rows:
        raise DatasetError(f"{path}: no rows; an empty release file cannot be imported")
    return rows


def import_release(release_dir: Path, out: Path, split: str | None = None, prefix: str = "li_",
                   fix_known_flaws: bool = True, force: bool = False) -> list[dict[str, Any]]:
    """Convert a release folder into ``out/<prefix><dataset>/``; returns the written manifests. All or nothing:
    a failure writes no dataset; an existing dataset is replaced only with ``force``."""
    release_dir = Path(release_dir)
    if not release_dir.is_dir():
        raise DatasetError(f"release folder {release_dir} not found")
    files: list[tuple[str, Path]] = []
    for sub in ("train", "test"):
        files += [(sub, p) for p in sorted((release_dir / sub).glob("*.jsonl"))]
    loose = sorted(release_dir.glob("*.jsonl"))
    if loose:
        if split is None:
            raise DatasetError(f"{release_dir} has jsonl files outside train/ and test/; pass --split train|test")
        files += [(split, p) for p in loose]
    if not files:
        raise DatasetError(f"no .jsonl files in {release_dir} (expected train/*.jsonl and test/*.jsonl)")

    datasets: dict[str, dict[str, Any]] = {}
    skipped: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for file_split, path in files:
        for n, row in enumerate(read_release_file(path), 1):
            where = f"{path}:{n}"
            prop = row["behavioral_property"]
            name = prefix + row["original_dataset"]
            if prop not in PROPERTIES:
                skipped[name][prop] += 1
                continue
            ds = datasets.setdefault(name, {"split": file_split, "items": {}, "props": set(), "fixes": set()})
            if ds["split"] != file_split:
                raise DatasetError(f"{where}: dataset {row['original_dataset']!r} appears in both train and test")
            ds["props"].add(prop)
            q = row["original_question"]
            obj = _user_text(row["object_level_prompt"], where + " object_level_prompt")
            hyp = _user_text(row["hypothetical_prompt"], where + " hypothetical_prompt")
            if fix_known_flaws:
                obj, hyp = _fix(obj, ds["fixes"]), _fix(hyp, ds["fixes"])
            stance = row.get("option_matching_ethical_stance")
            if prop == "ethical_stance" and stance not in ("A", "B"):
                raise DatasetError(f"{where}: ethical_stance row needs option_matching_ethical_stance 'A' or 'B', got {stance!r}")
            item = ds["items"].setdefault(q, {
                "task": name, "item_id": f"{name}-{short_hash(q, 12)}", "split": file_split, "question": q,
                "object_prompt": obj, "option_matching_ethical_stance": stance, "correct_answer": None,
                "hypothetical_prompts": {},
            })
            if item["object_prompt"] != obj:
                raise DatasetError(f"{where}: the same question has two different object-level prompts")
            item["hypothetical_prompts"][prop] = hyp

    if not datasets:
        every = {p: n for counts in skipped.values() for p, n in counts.items()}
        raise DatasetError(f"nothing to import from {release_dir}: every row had an unknown property {every}")
    out = Path(out)
    existing = sorted(name for name in datasets if (out / name).exists())
    if existing and not force:
        raise DatasetError(f"{len(existing)} dataset(s) already in {out}: {', '.join(existing)}; choose another "
                           "--prefix or --out, or pass --force to replace them")
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=out))
    try:
        manifests = []
        for name, ds in sorted(datasets.items()):
            props = sorted(ds["props"])
            family = _family(set(props), name)
            items = sorted(ds["items"].values(), key=lambda it: it["item_id"])
            complete = [it for it in items if set(it["hypothetical_prompts"]) == set(props)]
            manifest = {
                "name": name, "version": "release", "split": ds["split"], "family": family,
                "description": f"the Looking Inward release's dataset {name[len(prefix):]!r}, imported",
                "properties": props, "max_new_tokens": 24 if family == WORD_SEQUENCE else 8,
                "stance_question": None, "licence": RELEASE_LICENCE, "source": RELEASE_SOURCE,
                "generator": generator_name("original-release-import", IMPORTER_VERSION), "seed": None,
                "fixes_applied": sorted(ds["fixes"]),
                "items_without_every_property": len(items) - len(complete),
                "skipped_properties": dict(sorted(skipped[name].items())),
            }
            manifests.append(write_task(staging, manifest, complete))
        for m in manifests:  # every dataset is written: move them into place
            target, trash = out / m["name"], None
            if target.exists():
                trash = Path(tempfile.mkdtemp(prefix=".replaced-", dir=out))
                target.rename(trash / m["name"])
            (staging / m["name"]).rename(target)
            if trash is not None:
                shutil.rmtree(trash)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifests
