"""The dataset card (``README.md`` beside ``items.jsonl``) of a task dataset of experiments 1-3, written from its
manifest alone, never by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reproduce.citation import dataset_citation, generator_name
from reproduce.experiment_data import changes_text
from reproduce.io import atomic_write_bytes

#: what each version of the task generator (reproduce.self_prediction.tasks.GENERATOR_VERSION) changed
CHANGES = {
    "1.1.0": "the prompts follow the original study's wording byte for byte (1.0.0: \"What are the next 5 ...\", one "
             "prompt for all four word tasks, no closing newline)",
    "1.2.0": "the manifest names the generator by a stable name (`looking-inward-local/tasks`) instead of a module "
             "path, so that moving code never changes a citation; `items.jsonl` is byte-identical to 1.1.0's",
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


def dataset_card(manifest: dict[str, Any]) -> str:
    """The dataset card (markdown) written beside the items: the package's own generated data, or (a manifest with
    a ``source``) data imported from elsewhere."""
    m = manifest
    if m.get("source"):
        return imported_card(m)
    family = m["family"]
    props = ", ".join(f"`{p}`" for p in m["properties"])
    stance = f"\n- **Stance question:** {m['stance_question']}" if m.get("stance_question") else ""
    changes = changes_text(m, CHANGES) if m.get("generator", "").startswith(generator_name("tasks", "")) else ""
    fixes = (f"\n- **Repairs applied on import:** {', '.join(m['fixes_applied'])}" if m.get("fixes_applied") else "")
    return f"""# Dataset card: {m['name']} (version {m['version']})

<!-- written by `looking-inward datasets` from manifest.json; do not edit by hand -->

**What.** {m['description'][:1].upper() + m['description'][1:]}. {m['n_items']} items, split `{m['split']}`
({'held out: only ever evaluated' if m['split'] == 'test' else 'used to build finetuning examples'}),
task family `{family}`. Properties asked about: {props}.{stance}

**How it was generated.** {m['generator']}, seed `{m['seed']}`. Each line of `items.jsonl` is one item: the
object-level prompt and one hypothetical (meta-level) prompt per property. The same generator version and
seed reproduce every byte.{fixes}{changes}

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


def imported_card(manifest: dict[str, Any]) -> str:
    """The card of a dataset imported by ``looking-inward import-release``: what was imported, from where, under
    which licence, the repairs applied and the properties left out."""
    m = manifest
    props = ", ".join(f"`{p}`" for p in m["properties"])
    fixes = ", ".join(f"`{f}`" for f in m.get("fixes_applied", [])) or "none"
    skipped = m.get("skipped_properties") or {}
    skipped_text = (", ".join(f"`{p}` ({n} rows)" for p, n in skipped.items()) + ": properties this package does not "
                    "define") if skipped else "none"
    incomplete = m.get("items_without_every_property", 0)
    return f"""# Dataset card: {m['name']} (imported, version {m['version']})

<!-- written by `looking-inward import-release` from manifest.json; do not edit by hand -->

**What.** {m['description'][:1].upper() + m['description'][1:]}: {m['n_items']} items, split `{m['split']}`, task
family `{m['family']}` (inferred from its properties). Properties asked about: {props}.

**Source.** Imported from {m['source']}. The prompts are the release's own, verbatim but for the repairs below;
items are the release's questions, one item per question with a hypothetical prompt per property.

- **Repairs applied on import:** {fixes}
- **Properties skipped:** {skipped_text}
- **Questions left out** because the release lacks one of the properties above for them: {incomplete}

| field | value |
|---|---|
| items | {m['n_items']} |
| sha256 of `items.jsonl` | `{m['sha256']}` |
| release sha256 (cite this) | `{m['release_sha256']}` |
| licence | {m['licence']} |
| imported by | {m['generator']} |

**Cite as.** The original study's release (above), and this import as: {dataset_citation(m)}
"""


def write_card(folder: Path, manifest: dict[str, Any]) -> None:
    atomic_write_bytes(Path(folder) / "README.md", dataset_card(manifest).encode())
