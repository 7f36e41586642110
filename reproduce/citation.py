"""Citable datasets and software: each dataset's release hash, its dataset card, and ``CITATION.cff``.

A dataset in ``data_raw/<task>/`` is cited as ``<name> <version>`` with its **release sha256**: the sha256 of
its manifest's canonical JSON (name, version, generator, licence, content hashes and counts; see
:func:`release_sha256`). The content hash alone would not change when only the version does; the release hash
changes with the version, with the licence and with every byte of the data, so a version bump is a new
citation. A manifest names its generator by a stable name and version (:func:`generator_name`), never by a
module path, so moving code changes no citation. Each family writes its datasets' cards
(:mod:`reproduce.self_prediction.task_cards`, :mod:`reproduce.injection.data`, :mod:`reproduce.mirror.data`);
``CITATION.cff`` is written here from every manifest, never by hand.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from reproduce import __version__
from reproduce.config import REPO_ROOT
from reproduce.io import atomic_write_bytes

SOFTWARE_TITLE = "looking-inward-local"
AUTHORS = "The looking-inward-local authors"
REPOSITORY_NOTE = "Local, open-weight reproduction of Binder et al. (2024), with Bayesian hierarchical analysis"
CITATION_PATH = REPO_ROOT / "CITATION.cff"
# fields that are not part of the release identity (derived ones)
_NOT_IDENTITY = ("release_sha256",)

PAPER = {
    "type": "article",
    "title": "Looking Inward: Language Models Can Learn About Themselves by Introspection",
    "authors": ["Felix J. Binder", "James Chua", "Tomek Korbak", "Henry Sleight", "John Hughes", "Robert Long",
                "Ethan Perez", "Miles Turpin", "Owain Evans"],
    "year": 2024,
    "identifier": "arXiv:2410.13787",
    "url": "https://arxiv.org/abs/2410.13787",
}

def generator_name(kind: str, version: str) -> str:
    """How a manifest names what wrote a dataset: the software, the generator's stable name and its version
    (e.g. ``looking-inward-local/tasks 1.2.0``). Neither a module path nor the package version enters it, so
    moving code or releasing the package changes no dataset's citation; changing what a generator writes
    bumps its version."""
    return f"{SOFTWARE_TITLE}/{kind} {version}"


def release_sha256(manifest: dict[str, Any]) -> str:
    """The dataset's citable identity: sha256 of the manifest's canonical JSON (sorted keys, no derived
    fields). It includes the version and the content hash, so a version bump or any edit changes it."""
    ident = {k: v for k, v in manifest.items() if k not in _NOT_IDENTITY}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def dataset_citation(manifest: dict[str, Any]) -> str:
    """One-line citation of a dataset version."""
    return (f"{AUTHORS} ({SOFTWARE_TITLE}). "
            f"Task dataset \u201c{manifest['name']}\u201d, version {manifest['version']}, "
            f"release sha256 {manifest['release_sha256']}. Licence {manifest['licence']}.")


def _yaml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def citation_cff(manifests: list[dict[str, Any]], version: str = __version__) -> str:
    """``CITATION.cff`` (Citation File Format 1.2.0): the software, the original paper it reproduces, and
    every dataset version with its release hash."""
    lines = [
        "# Written by `looking-inward citation` from data_raw/*/manifest.json; do not edit by hand.",
        "cff-version: 1.2.0",
        'message: "If you use this software or its datasets, please cite them as below, and cite the original '
        'study (Binder et al. 2024)."',
        "type: software",
        f"title: {_yaml_str(SOFTWARE_TITLE)}",
        f"abstract: {_yaml_str(REPOSITORY_NOTE)}",
        f"version: {_yaml_str(version)}",
        "license: MIT",
        "authors:",
        f"  - name: {_yaml_str(AUTHORS)}",
        "keywords: [introspection, language models, self-prediction, Bayesian hierarchical models, reproduction]",
        "references:",
        f"  - type: {PAPER['type']}",
        f"    title: {_yaml_str(PAPER['title'])}",
        "    authors:",
    ]
    for a in PAPER["authors"]:
        given, family = a.rsplit(" ", 1)
        lines += [f"      - given-names: {_yaml_str(given)}", f"        family-names: {_yaml_str(family)}"]
    lines += [f"    year: {PAPER['year']}", f"    url: {_yaml_str(PAPER['url'])}",
              "    identifiers:", "      - type: other", f"        value: {_yaml_str(PAPER['identifier'])}"]
    for m in sorted(manifests, key=lambda m: m["name"]):
        if "family" not in m:  # an experiment's dataset of several files
            lines += [
                "  - type: dataset",
                f"    title: {_yaml_str(f'{SOFTWARE_TITLE} dataset: ' + m['name'])}",
                f"    version: {_yaml_str(str(m['version']))}",
                "    authors:",
                f"      - name: {_yaml_str(AUTHORS)}",
                f"    license: {_yaml_str(m['licence'])}",
                "    identifiers:",
                "      - type: other",
                f"        value: {_yaml_str('release-sha256:' + m['release_sha256'])}",
                f"    abstract: {_yaml_str(m['description'])}",
            ]
            continue
        lines += [
            "  - type: dataset",
            f"    title: {_yaml_str(f'{SOFTWARE_TITLE} task dataset: ' + m['name'])}",
            f"    version: {_yaml_str(str(m['version']))}",
            "    authors:",
            f"      - name: {_yaml_str(AUTHORS)}",
            f"    license: {_yaml_str(m['licence'])}" if _is_spdx(m["licence"]) else
            f"    notes: {_yaml_str('licence: ' + m['licence'])}",
            "    identifiers:",
            "      - type: other",
            f"        value: {_yaml_str('release-sha256:' + m['release_sha256'])}",
            "      - type: other",
            f"        value: {_yaml_str('items-sha256:' + m['sha256'])}",
            f"    abstract: {_yaml_str('{} ({} items, split {})'.format(m['description'], m['n_items'], m['split']))}",
        ]
    return "\n".join(lines) + "\n"


def _is_spdx(licence: str) -> bool:
    return licence in ("CC-BY-4.0", "MIT", "CC0-1.0", "Apache-2.0")


def write_citation(manifests: list[dict[str, Any]], path: Path = CITATION_PATH) -> Path:
    atomic_write_bytes(path, citation_cff(manifests).encode())
    return path


def read_manifests(root: Path, kind: str = "task") -> list[dict[str, Any]]:
    """The manifests under ``root``: ``kind="task"`` the task datasets (one ``items.jsonl`` each, with a task
    family), ``"experiment"`` the other experiments' datasets (several files, ``file_sha256``), ``"all"`` both."""
    out = [json.loads(p.read_text()) for p in sorted(Path(root).glob("*/manifest.json"))]
    if kind == "all":
        return out
    return [m for m in out if ("family" in m) == (kind == "task")]
