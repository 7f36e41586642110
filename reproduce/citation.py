"""Citable datasets and software: each dataset's release hash, its dataset card, and ``CITATION.cff``.

A dataset in ``data_raw/<task>/`` is cited as ``<name> <version>`` with its **release sha256**: the sha256 of
its manifest's canonical JSON (name, version, split, family, properties, generator, seed, licence, item count
and the sha256 of ``items.jsonl``; see :func:`release_sha256`). The content hash (``sha256``) alone would
not change when only the version does; the release hash changes with the version, with the licence and
with every byte of the items, so a version bump is a new citation. The dataset card (``README.md`` beside
the items) and ``CITATION.cff`` are written from the manifests, never by hand.
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

# what each family of task is for, and what it cannot tell you
INTENDED_USE = {
    "word_sequence": "object-level answers whose character and word properties (first/second/third "
                     "character or word, starts_with_vowel) a model can be trained or asked to predict",
    "number_sequence": "object-level number answers for the is_even and digit properties",
    "multiple_choice": "four-option questions for the among_a_or_c / among_b_or_d letter properties",
    "ab_choice": "two-option questions whose ethical_stance property records whether the answer shows the "
                 "behaviour named in the manifest's stance question",
}
LIMITATIONS = {
    "word_sequence": "Synthetic: random sequences drawn from a fixed, English-only vocabulary by a seeded "
                     "generator; not natural text, so behaviour on it need not transfer to real prompts.",
    "number_sequence": "Synthetic random integer sequences; the answers of small models are often not numbers "
                       "at all, which makes many items non-compliant.",
    "multiple_choice": "Synthetic, template-generated questions with one unambiguous key; much easier and "
                       "narrower than the MMLU questions of the original study.",
    "ab_choice": "Template-generated scenarios written for this package, not validated with human raters; "
                 "the stance labels follow the template, and small models often answer by position.",
}


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


def dataset_card(manifest: dict[str, Any]) -> str:
    """The dataset card (markdown) written beside the items."""
    m = manifest
    family = m["family"]
    props = ", ".join(f"`{p}`" for p in m["properties"])
    stance = f"\n- **Stance question:** {m['stance_question']}" if m.get("stance_question") else ""
    fixes = (f"\n- **Repairs applied on import:** {', '.join(m['fixes_applied'])}" if m.get("fixes_applied") else "")
    return f"""# Dataset card: {m['name']} (version {m['version']})

<!-- written by `looking-inward datasets` from manifest.json; do not edit by hand -->

**What.** {m['description'][:1].upper() + m['description'][1:]}. {m['n_items']} items, split `{m['split']}`
({'held out: only ever evaluated' if m['split'] == 'test' else 'used to build finetuning examples'}),
task family `{family}`. Properties asked about: {props}.{stance}

**How it was generated.** {m['generator']}, seed `{m['seed']}`. Each line of `items.jsonl` is one item: the
object-level prompt and one hypothetical (meta-level) prompt per property. The same generator version and
seed reproduce every byte.{fixes}

| field | value |
|---|---|
| version | {m['version']} |
| items | {m['n_items']} |
| sha256 of `items.jsonl` | `{m['sha256']}` |
| release sha256 (cite this) | `{m['release_sha256']}` |
| licence | {m['licence']} |

**Intended use.** Research on whether language models can predict properties of their own behaviour:
{INTENDED_USE.get(family, 'see the package documentation')}. Loading refuses a copy whose `items.jsonl` does not
match the sha256 above.

**Known limitations.** {LIMITATIONS.get(family, 'See the manuscript.')} The items carry no personal data.

**Cite as.** {dataset_citation(m)}
"""


def write_card(folder: Path, manifest: dict[str, Any]) -> None:
    atomic_write_bytes(Path(folder) / "README.md", dataset_card(manifest).encode())


def _yaml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def citation_cff(manifests: list[dict[str, Any]], version: str = __version__) -> str:
    """``CITATION.cff`` (Citation File Format 1.2.0): the software, the original paper it reproduces, and
    every dataset version with its release hash."""
    lines = [
        "# Written by `looking-inward datasets` from data_raw/*/manifest.json; do not edit by hand.",
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
