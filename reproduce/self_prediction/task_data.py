"""Versioned task datasets in ``data_raw/``: one folder per task with ``items.jsonl`` and ``manifest.json``.

The manifest names the dataset (name, version, split, family, properties), how it was made (generator,
version, seed), its licence, its item count, the sha256 of ``items.jsonl`` and the release sha256 that cites
this version (:mod:`reproduce.citation`); a dataset card ``README.md`` is written beside it. Loading checks the hash, so
a dataset edited by hand is refused instead of silently producing different results under the same name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reproduce.citation import release_sha256
from reproduce.self_prediction.task_cards import write_card
from reproduce.datasets import DATA_RAW, DatasetError, parse_json_lines, read_manifest
from reproduce.io import atomic_write_bytes, atomic_write_json, sha256_bytes
from reproduce.self_prediction.properties import FAMILIES, PROPERTIES, PropertyError, check_fits, get_property

REQUIRED_ITEM_KEYS = ("task", "item_id", "split", "object_prompt", "hypothetical_prompts")


@dataclass(frozen=True)
class TaskData:
    manifest: dict[str, Any]
    items: list[dict[str, Any]]

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def family(self) -> str:
        return self.manifest["family"]

    @property
    def split(self) -> str:
        return self.manifest["split"]


def encode_items(items: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(it, ensure_ascii=False, sort_keys=True) + "\n" for it in items).encode()


def write_task(root: Path, manifest: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """Write items then manifest, atomically; returns the manifest with count and hash filled in."""
    if not items:
        raise DatasetError(f"task {manifest.get('name')!r} has no items; refusing to write an empty dataset")
    data = encode_items(items)
    folder = Path(root) / manifest["name"]
    manifest = {**manifest, "n_items": len(items), "sha256": sha256_bytes(data), "files": ["items.jsonl"]}
    manifest["release_sha256"] = release_sha256(manifest)
    atomic_write_bytes(folder / "items.jsonl", data)
    atomic_write_json(folder / "manifest.json", manifest)
    write_card(folder, manifest)
    return manifest


def available_tasks(root: Path = DATA_RAW) -> list[str]:
    """The task datasets under ``root`` (folders with an ``items.jsonl``; other experiments' datasets such as
    ``concept_injection`` are not tasks)."""
    return sorted(p.parent.name for p in Path(root).glob("*/manifest.json") if (p.parent / "items.jsonl").exists())


def load_task(name: str, root: Path = DATA_RAW) -> TaskData:
    folder = Path(root) / name
    mpath = folder / "manifest.json"
    if not mpath.exists():
        have = available_tasks(root)
        hint = f"available: {', '.join(have)}" if have else "none found; run `dvc repro datasets` first"
        raise DatasetError(f"unknown task {name!r} in {root} ({hint})")
    fix = "restore the dataset (`git checkout data_raw` or `dvc repro datasets`)"
    manifest = read_manifest(mpath, fix)
    ipath = folder / "items.jsonl"
    if not ipath.exists():
        raise DatasetError(f"{ipath} is missing; regenerate the dataset with `dvc repro datasets`")
    data = ipath.read_bytes()
    if not data.strip():
        raise DatasetError(f"dataset {name!r} is empty ({ipath}); regenerate it or remove it from params.yaml")
    if sha256_bytes(data) != manifest.get("sha256"):
        raise DatasetError(
            f"{ipath} does not match the sha256 in its manifest: it was edited after generation. "
            "Restore it (git checkout / `dvc repro datasets`) or, for a deliberate change, bump its version."
        )
    items = parse_json_lines(ipath, data, fix + ", or bump its version for a deliberate change")
    validate_task(manifest, items)
    return TaskData(manifest, items)


def validate_task(manifest: dict[str, Any], items: list[dict[str, Any]]) -> None:
    name = manifest.get("name")
    if manifest.get("family") not in FAMILIES:
        raise DatasetError(f"task {name!r}: family {manifest.get('family')!r} is not one of {FAMILIES}")
    if manifest.get("split") not in ("train", "test"):
        raise DatasetError(f"task {name!r}: split must be 'train' or 'test', got {manifest.get('split')!r}")
    props = manifest.get("properties", [])
    if not isinstance(props, list) or not all(isinstance(p, str) for p in props):
        raise DatasetError(f"task {name!r}: the manifest's properties must be a list of names, got {props!r}; "
                           "restore the manifest (`git checkout data_raw` or `dvc repro datasets`)")
    for p in props:
        check_fits(get_property(p), name, manifest["family"])
    ids = set()
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise DatasetError(f"task {name!r}: item {i} is not a JSON object")
        missing = [k for k in REQUIRED_ITEM_KEYS if k not in it]
        if missing:
            raise DatasetError(f"task {name!r}: item {i} lacks {missing}")
        if not isinstance(it["item_id"], (str, int)):
            raise DatasetError(f"task {name!r}: item {i}'s item_id must be a string, got {it['item_id']!r}")
        if not isinstance(it["hypothetical_prompts"], dict):
            raise DatasetError(f"task {name!r}: item {it['item_id']}'s hypothetical_prompts must map each property "
                               f"to its prompt, got {type(it['hypothetical_prompts']).__name__}")
        if it["item_id"] in ids:
            raise DatasetError(f"task {name!r}: duplicate item_id {it['item_id']!r}")
        ids.add(it["item_id"])
        absent = set(props) - set(it["hypothetical_prompts"])
        if absent:
            raise DatasetError(f"task {name!r}: item {it['item_id']} has no hypothetical prompt for {sorted(absent)}")


def select_properties(task: TaskData, wanted: list[str] | None) -> list[str]:
    """The task's properties, optionally restricted to ``wanted`` (unknown names fail loudly)."""
    if wanted is None:
        return list(task.manifest["properties"])
    for p in wanted:
        if p not in PROPERTIES:
            get_property(p)  # raises with the list of known properties
    chosen = [p for p in task.manifest["properties"] if p in wanted]
    if not chosen:
        raise PropertyError(f"none of the properties {wanted} fits task {task.name!r} "
                            f"(it has {task.manifest['properties']})")
    return chosen
