"""Releases a run's data can be cited by: DVC artifacts for the task datasets and the model-behaviour tables,
and a card for each behaviour table.

- The task datasets (``data_raw/<task>``) are declared in dvc.yaml's ``artifacts:`` section, each with its
  version and hashes from its manifest, so ``dvc artifacts get`` and data registries find them by name
  (``dataset-animals``). ``looking-inward artifacts`` writes that section from the manifests;
  ``--check`` fails when it is out of step (a test runs it).
- The behaviour tables of a run (object level and meta level, base and self-trained models) are declared the
  same way (``behaviour-object-level`` ...). The ``release`` stage writes a card for each into
  ``data/release/`` (committed to git): the models, the profile and its edits, the dtype, the hardware, the
  code version, row counts and the sha256 of every file and of the whole artifact, so a run's behaviour data
  can be cited by version and hash.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pandas as pd

from reproduce import __version__
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


def _git(root: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=timeout)


def git_commit(root: Path) -> str | None:
    try:
        out = _git(root, "rev-parse", "HEAD", timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def code_hash(stage: str, root: Path = CODE_ROOT) -> str:
    """sha256 over the source of every project module the stage's command imports (:mod:`reproduce.pipeline`)."""
    from reproduce.pipeline import stage_modules

    h = hashlib.sha256()
    for rel in sorted(stage_modules(stage, root)):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


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


# ------------------------------------------------------------------------------ dvc.yaml's artifacts section
def _artifact_name(task: str) -> str:
    return "dataset-" + re.sub(r"[^a-z0-9]+", "-", task.lower()).strip("-")


def artifacts_block(manifests: list[dict]) -> str:
    """dvc.yaml's ``artifacts:`` section: every dataset (version and hashes from its manifest) and every
    behaviour table (its card's path)."""
    out = ["artifacts:   # written by `looking-inward artifacts` from data_raw/*/manifest.json; do not edit by hand"]
    for m in sorted(manifests, key=lambda m: m["name"]):
        labels = [x for x in (m.get("split"), m.get("family"), m.get("licence")) if x]
        out += [f"  {_artifact_name(m['name'])}:",
                f"    path: data_raw/{m['name']}",
                "    type: dataset",
                f"    desc: {json.dumps((m.get('description') or m['name']).split('. ')[0])}",
                f"    labels: [{', '.join(json.dumps(x) for x in labels)}]",
                f"    meta: {{version: {json.dumps(m['version'])}, release_sha256: {m['release_sha256']}, "
                f"card: data_raw/{m['name']}/README.md}}"]
    for name, (rel, stage, desc) in BEHAVIOUR.items():
        out += [f"  {name}:",
                f"    path: {rel}",
                "    type: dataset",
                f"    desc: {json.dumps(desc + ' (a run output)')}",
                f"    labels: [behaviour, {stage}]",
                f"    meta: {{card: data/release/{name}.json}}"]
    return "\n".join(out) + "\n"


def sync_artifacts(manifests: list[dict], dvc_yaml: Path = REPO_ROOT / "dvc.yaml", write: bool = True) -> bool:
    """Whether dvc.yaml's ``artifacts:`` section matches ``manifests``; with ``write``, make it so (the section
    sits before ``stages:``)."""
    text = dvc_yaml.read_text()
    block = artifacts_block(manifests)
    m = re.search(r"(?ms)^artifacts:.*?(?=^\S)", text)
    current = m.group(0) if m else None
    if current is not None and current.rstrip() + "\n" == block:
        return True
    if write:
        new = text.replace(current, block + "\n") if current else text.replace("\nstages:", "\n" + block + "\nstages:", 1)
        atomic_write_bytes(dvc_yaml, new.encode())
    return False


def tag_datasets(manifests: list[dict], root: Path = REPO_ROOT) -> list[str]:
    """Register every dataset version as an artifact version: an annotated git tag ``dataset-<task>@v<version>``
    at HEAD (the GTO convention ``dvc artifacts get`` resolves), for each that is not tagged yet."""
    if _git(root, "rev-parse", "--git-dir").returncode != 0:
        raise MissingInput(f"{root} is not a git repository; artifact versions are git tags")
    made = []
    for m in sorted(manifests, key=lambda m: m["name"]):
        tag = f"{_artifact_name(m['name'])}@v{m['version']}"
        if _git(root, "rev-parse", "-q", "--verify", f"refs/tags/{tag}").returncode == 0:
            continue
        out = _git(root, "tag", "-a", tag, "-m", f"{m['name']} {m['version']} (release sha256 {m['release_sha256']})")
        if out.returncode != 0:
            raise MissingInput(f"git tag {tag} failed: {out.stderr.strip()}")
        made.append(tag)
    return made


def artifacts(data_raw: Path, tag: bool = False, check: bool = False) -> list[str]:
    """``looking-inward artifacts``: rewrite dvc.yaml's artifacts section from the dataset manifests under
    ``data_raw`` (``check``: fail when it is out of step instead; ``tag``: tag each dataset version in git).
    Returns what to print."""
    from reproduce.citation import read_manifests
    from reproduce.errors import DataError

    manifests = read_manifests(Path(data_raw), "all")
    if not manifests:  # an empty section would drop every dataset from dvc.yaml
        raise DataError(f"no dataset manifests (*/manifest.json) under {data_raw}: pass --data-raw with the "
                        f"project's datasets folder, or run `looking-inward datasets` first")
    if tag:
        return [f"tagged {t}" for t in tag_datasets(manifests)]
    in_step = sync_artifacts(manifests, write=not check)
    if in_step:
        return ["dvc.yaml's artifacts are in step with the dataset manifests"]
    if check:
        raise DataError("dvc.yaml's artifacts section is out of step with data_raw/*/manifest.json; run "
                        "`looking-inward artifacts` to rewrite it")
    return ["dvc.yaml: artifacts section rewritten from the dataset manifests"]
