"""What a release of a run's data is cited by: DVC artifacts and the code's version.

- The datasets (``data_raw/<name>``) are declared in dvc.yaml's ``artifacts:`` section, each with its version and
  hashes from its manifest, so ``dvc artifacts get`` and data registries find them by name (``dataset-animals``).
  ``looking-inward artifacts`` writes that section from the manifests; ``--check`` fails when it is out of step
  (a test runs it).
- A family's run outputs are declared the same way, from the table its caller passes (``outputs``: the
  self-prediction behaviour tables, :data:`reproduce.self_prediction.release.BEHAVIOUR`, whose cards the
  ``release`` stage writes).
- :func:`git_commit` and :func:`code_hash` name the code a card was written by.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from reproduce.config import CODE_ROOT, REPO_ROOT
from reproduce.errors import MissingInput
from reproduce.io import atomic_write_bytes


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


# ------------------------------------------------------------------------------ dvc.yaml's artifacts section
def _artifact_name(task: str) -> str:
    return "dataset-" + re.sub(r"[^a-z0-9]+", "-", task.lower()).strip("-")


def artifacts_block(manifests: list[dict], outputs: dict) -> str:
    """dvc.yaml's ``artifacts:`` section: every dataset (version and hashes from its manifest) and every run output
    of ``outputs`` (name -> (path, stage, description); declared with its card under ``data/release/``)."""
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
    for name, (rel, stage, desc) in outputs.items():
        out += [f"  {name}:",
                f"    path: {rel}",
                "    type: dataset",
                f"    desc: {json.dumps(desc + ' (a run output)')}",
                f"    labels: [behaviour, {stage}]",
                f"    meta: {{card: data/release/{name}.json}}"]
    return "\n".join(out) + "\n"


def sync_artifacts(manifests: list[dict], outputs: dict, dvc_yaml: Path = REPO_ROOT / "dvc.yaml",
                   write: bool = True) -> bool:
    """Whether dvc.yaml's ``artifacts:`` section matches ``manifests`` and ``outputs`` (:func:`artifacts_block`);
    with ``write``, make it so (the section sits before ``stages:``)."""
    text = dvc_yaml.read_text()
    block = artifacts_block(manifests, outputs)
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


def artifacts(data_raw: Path, outputs: dict, tag: bool = False, check: bool = False) -> list[str]:
    """``looking-inward artifacts``: rewrite dvc.yaml's artifacts section from the dataset manifests under
    ``data_raw`` and the run outputs ``outputs`` (:func:`artifacts_block`; ``check``: fail when it is out of step
    instead; ``tag``: tag each dataset version in git). Returns what to print."""
    from reproduce.citation import read_manifests
    from reproduce.errors import DataError

    manifests = read_manifests(Path(data_raw), "all")
    if not manifests:  # an empty section would drop every dataset from dvc.yaml
        raise DataError(f"no dataset manifests (*/manifest.json) under {data_raw}: pass --data-raw with the "
                        f"project's datasets folder, or run `looking-inward datasets` first")
    if tag:
        return [f"tagged {t}" for t in tag_datasets(manifests)]
    in_step = sync_artifacts(manifests, outputs, write=not check)
    if in_step:
        return ["dvc.yaml's artifacts are in step with the dataset manifests"]
    if check:
        raise DataError("dvc.yaml's artifacts section is out of step with data_raw/*/manifest.json; run "
                        "`looking-inward artifacts` to rewrite it")
    return ["dvc.yaml: artifacts section rewritten from the dataset manifests"]
