"""The self-prediction family's release: a card for each model-behaviour table of a run (object level and meta
level, base and self-trained models), written by the ``release`` stage into ``data/release/`` (committed to git):
the models, the profile and its edits, the dtype, the hardware, the code version, row counts and the sha256 of every
file and of the whole artifact, so a run's behaviour data can be cited by version and hash. The tables are declared
as DVC artifacts beside the datasets (:func:`reproduce.cards.artifacts`, given :data:`BEHAVIOUR`)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from reproduce import __version__
from reproduce.cards import code_hash, git_commit
from reproduce.config import CODE_ROOT, DEFAULT_PARAMS, REPO_ROOT, edits
from reproduce.errors import MissingInput
from reproduce.io import atomic_write_bytes, atomic_write_json, sha256_bytes, sha256_file

RELEASE = REPO_ROOT / "data" / "release"
#: artifact name -> (path in the project, the stage that writes it, what it holds)
BEHAVIOUR = {
    "behaviour-object-level": ("data/object_level", "object_level",
                               "greedy object-level answers of every base model, one row per item x property"),
    "behaviour-object-samples": ("data/object_samples", "object_level",
                                 "temperature-1 object-level samples of every base model on the calibration subset"),
    "behaviour-object-level-trained": ("data/object_level_trained", "object_level_trained",
                                       "greedy object-level answers of every self-trained model (experiment 1's "
                                       "ground truth)"),
    "behaviour-meta-untrained": ("data/meta_untrained.parquet", "meta_untrained",
                                 "every untrained predictor's hypothetical answers, scored against every target"),
    "behaviour-meta-trained": ("data/meta_trained.parquet", "meta_trained",
                               "every trained self- and cross-predictor's hypothetical answers, scored"),
}



def behaviour_card(name: str, root: Path = REPO_ROOT, params: Path = DEFAULT_PARAMS,
                   code_root: Path = CODE_ROOT) -> dict:
    """The card of one behaviour artifact of the run under ``root`` (its code under ``code_root``)."""
    rel, stage, desc = BEHAVIOUR[name]
    path = root / rel
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    if not files or not all(f.exists() for f in files):
        raise MissingInput(f"{rel} is missing; run the {stage} stage first (`dvc repro {stage}`)")
    entries, models, dtypes = [], set(), set()
    for f in files:
        df = pd.read_parquet(f)
        models.update(df["model" if "model" in df else "predictor"].unique().tolist())
        if "dtype" in df:
            dtypes.update(df["dtype"].unique().tolist())
        entries.append({"file": f.relative_to(root).as_posix(), "rows": len(df), "sha256": sha256_file(f)})
    timings = root / "data" / "timings.json"
    ran = json.loads(timings.read_text()).get("stages", {}).get(stage.replace("_", "-"), {}) \
        if timings.exists() else {}
    label, changed = edits(params)
    return {
        "artifact": name, "path": rel, "description": desc, "stage": stage,
        "sha256": sha256_bytes("".join(f"{e['file']}\0{e['sha256']}\0" for e in entries).encode()),
        "rows": sum(e["rows"] for e in entries), "files": entries,
        "models": sorted(models), "dtype": sorted(dtypes),
        "profile": label, "edited_settings": changed,
        "hardware": ran.get("hardware"), "finished": ran.get("finished"),
        "code": {"package": __version__, "git_commit": git_commit(code_root),
                 "stage_modules_sha256": code_hash(stage, code_root)},
        "licence": "CC-BY-4.0 (the answers); the models' own licences apply to the models",
    }


def write_cards(root: Path = REPO_ROOT, out: Path = RELEASE, params: Path = DEFAULT_PARAMS,
                code_root: Path = CODE_ROOT) -> dict[str, Path]:
    """A card (JSON) per behaviour artifact and an index (README.md) under ``out``."""
    cards = {name: behaviour_card(name, root, params, code_root) for name in BEHAVIOUR}
    written = {}
    for name, card in cards.items():
        atomic_write_json(out / f"{name}.json", card)
        written[name] = out / f"{name}.json"
    lines = ["# Behaviour data of this run", "",
             "Each table is a DVC artifact (`dvc artifacts get . <name>`, or `dvc pull` in a clone). Cite it by "
             "name and sha256; the card beside this file lists its models, profile, dtype, hardware, code version "
             "and every file's hash.", "",
             "| artifact | rows | models | dtype | sha256 |", "|---|---|---|---|---|"]
    lines += [f"| `{n}` | {c['rows']:,} | {', '.join(c['models'])} | {', '.join(c['dtype'])} | `{c['sha256'][:16]}` |"
              for n, c in cards.items()]
    atomic_write_bytes(out / "README.md", ("\n".join(lines) + "\n").encode())
    return written
