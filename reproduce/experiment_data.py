"""Versioned datasets of several files (the concept-injection and mirror-test datasets): the writing, hashing,
re-hashing, loading and command line they share. Each dataset module supplies its content, parsing,
validation, counts and card (:class:`FileDataset`); this module never looks inside the files.

A folder holds the content files, a ``manifest.json`` with each file's sha256 and line count and the release
sha256 that cites this version (computed as :func:`reproduce.citation.release_sha256` computes it for the
task datasets), and a dataset card ``README.md``. Loading checks every hash; a deliberate edit is accepted by
``rehash`` under a new version.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reproduce import __version__
from reproduce.citation import AUTHORS, SOFTWARE_TITLE, release_sha256
from reproduce.datasets import DATA_RAW, DatasetError, parse_json_lines
from reproduce.io import atomic_write_bytes, atomic_write_json, sha256_bytes

#: manifest fields computed from the files (everything else is kept on a rehash)
COMPUTED = ("generator", "files", "file_sha256", "file_lines", "counts", "release_sha256")


def jsonl(rows: Iterable[dict[str, Any]]) -> bytes:
    """One JSON object a line, sorted keys: the same content always gives the same bytes."""
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode()


def parse_jsonl(path: Path, data: bytes) -> list[dict[str, Any]]:
    """The rows of a dataset file; a bad line is one error naming ``path:line``."""
    return parse_json_lines(path, data, "restore the dataset (`git checkout data_raw`) or rehash a deliberate edit")


def placeholders(template: str, where: str) -> set[str]:
    """The ``{name}`` fields of a ``str.format`` template (``{{`` and ``}}`` are literal braces); ``where`` names the
    template in the error for malformed braces."""
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as e:
        raise DatasetError(f"{where}: malformed braces ({e}); write a literal brace as {{{{ or }}}}") from None
    return fields


def card_tables(m: dict[str, Any], fields: Sequence[tuple[str, Any]]) -> str:
    """A dataset card's two tables from its manifest ``m``: every file with its lines and sha256, then the version,
    ``fields`` (name, value) and the release hash and licence."""
    files = "\n".join(f"| `{f}` | {m['file_lines'][f]} | `{m['file_sha256'][f]}` |" for f in m["files"])
    rows = [("version", m["version"]), *fields, ("release sha256 (cite this)", f"`{m['release_sha256']}`"),
            ("licence", m["licence"])]
    return ("| file | lines | sha256 |\n|---|---|---|\n" + files + "\n\n| field | value |\n|---|---|\n"
            + "\n".join(f"| {k} | {v} |" for k, v in rows))


def changes_text(manifest: dict[str, Any], changes: dict[str, str]) -> str:
    """A card's list of what each version up to the manifest's changed (``changes``: version -> what changed)."""
    def key(v: str) -> tuple:
        return tuple(int(x) if x.isdigit() else -1 for x in str(v).split("."))

    lines = [f"- {v}: {text}" for v, text in changes.items() if key(v) <= key(manifest["version"])]
    return "\n\n**Changes.**\n" + "\n".join(lines) if lines else ""


def citation(manifest: dict[str, Any]) -> str:
    """One-line citation of a version of a dataset."""
    return (f"{AUTHORS} ({SOFTWARE_TITLE}). Dataset \u201c{manifest['name']}\u201d, version {manifest['version']}, "
            f"release sha256 {manifest['release_sha256']}. Licence {manifest['licence']}.")


class VersionedData:
    """What every loaded dataset of this kind answers from its ``manifest``: the version and the release sha256
    that cite it."""

    manifest: dict[str, Any]

    @property
    def version(self) -> str:
        return self.manifest["version"]

    @property
    def release_sha256(self) -> str:
        return self.manifest["release_sha256"]


@dataclass(frozen=True)
class FileDataset:
    """One dataset of several files. ``module`` is the dataset module (``reproduce.injection.data``), whose
    ``write`` / ``rehash`` commands the messages name; ``fixed`` the manifest fields ``write`` sets (name,
    version, description, licence, ...); ``content_files`` the files' bytes from the content module;
    ``parse(folder, files)`` their values, ``validate(parts, folder)`` their checks, ``counts(parts)`` the
    manifest's counts, ``card(manifest)`` the card; ``generator()`` names what wrote the files and
    ``version_name`` the content module's version constant (for the command line's help)."""

    name: str
    module: str
    files: tuple[str, ...]
    fixed: Callable[[], dict[str, Any]]
    content_files: Callable[[], dict[str, bytes]]
    parse: Callable[[Path, dict[str, bytes]], dict[str, Any]]
    validate: Callable[[dict[str, Any], Path], None]
    counts: Callable[[dict[str, Any]], dict[str, Any]]
    card: Callable[[dict[str, Any]], str]
    generator: Callable[[], str]
    version_name: str

    @property
    def write_command(self) -> str:
        return f"python -m {self.module} write"

    @property
    def rehash_command(self) -> str:
        return f"python -m {self.module} rehash"

    def finish_manifest(self, kept: dict[str, Any], files: dict[str, bytes], parts: dict[str, Any],
                        generator: str) -> dict[str, Any]:
        """``kept`` (name, version, description, ...) plus the hashes, counts and release hash of ``files``."""
        manifest = {k: v for k, v in kept.items() if k not in COMPUTED}
        manifest.update(generator=generator, files=list(self.files),
                        file_sha256={f: sha256_bytes(files[f]) for f in self.files},
                        file_lines={f: files[f].count(b"\n") for f in self.files}, counts=self.counts(parts))
        manifest["release_sha256"] = release_sha256(manifest)
        return manifest

    def _write_meta(self, folder: Path, manifest: dict[str, Any]) -> None:
        atomic_write_json(folder / "manifest.json", manifest)
        atomic_write_bytes(folder / "README.md", self.card(manifest).encode())

    def write(self, root: Path = DATA_RAW) -> dict[str, Any]:
        """Write ``root/<name>/`` from the content module (content files, then the manifest, then the card);
        returns the manifest. The same code writes identical bytes."""
        folder = Path(root) / self.name
        files = self.content_files()
        parts = self.parse(folder, files)
        self.validate(parts, folder)  # never write a dataset the loader would refuse
        manifest = self.finish_manifest(self.fixed(), files, parts, self.generator())
        for name in self.files:
            atomic_write_bytes(folder / name, files[name])
        self._write_meta(folder, manifest)
        return manifest

    def read_manifest(self, folder: Path) -> dict[str, Any]:
        path = folder / "manifest.json"
        if not path.exists():
            raise DatasetError(f"{path} is missing; write the dataset with `{self.write_command}`")
        try:
            manifest = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError:
            raise DatasetError(f"{path}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise DatasetError(f"{path}: not valid JSON ({e.msg}, line {e.lineno})") from None
        name = manifest.get("name") if isinstance(manifest, dict) else None
        if name != self.name:
            raise DatasetError(f"{path}: not a {self.name} manifest (its name is {name!r})")
        return manifest

    def read_files(self, folder: Path) -> dict[str, bytes]:
        files = {}
        for name in self.files:
            path = folder / name
            if not path.exists():
                raise DatasetError(f"{path} is missing; restore it (git checkout) or rewrite the dataset with "
                                   f"`{self.write_command}`")
            files[name] = path.read_bytes()
        return files

    def rehash(self, root: Path = DATA_RAW, version: str | None = None) -> dict[str, Any]:
        """Accept deliberate edits of the content files: validate them, recompute their hashes, line counts
        and the release hash, and rewrite the manifest and the card; returns the new manifest.

        Changed content needs a new version, so that a citation of ``name version`` keeps naming one set of
        bytes: bump ``version`` in ``manifest.json`` by hand or pass ``version``. Other hand-set manifest
        fields (description, licence, ...) are kept."""
        folder = Path(root) / self.name
        old = self.read_manifest(folder)
        files = self.read_files(folder)
        parts = self.parse(folder, files)
        self.validate(parts, folder)
        kept = dict(old)
        if version is not None:
            kept["version"] = version
        if not isinstance(kept.get("version"), str) or not kept["version"]:
            raise DatasetError(f"{folder / 'manifest.json'}: 'version' must be a non-empty string")
        changed = [f for f in self.files if (old.get("file_sha256") or {}).get(f) != sha256_bytes(files[f])]
        certified = old.get("version") if old.get("release_sha256") == release_sha256(old) else None
        if changed and kept["version"] == certified:
            raise DatasetError(
                f"{', '.join(changed)} in {folder} changed but the version is still {certified}: give the new "
                f"content a new version (edit 'version' in manifest.json, or `{self.rehash_command} --version X.Y.Z`)")
        generator = (self.generator() if files == self.content_files() else
                     f"edited by hand; re-hashed by {self.module} (looking-inward-local {__version__})")
        manifest = self.finish_manifest(kept, files, parts, generator)
        self._write_meta(folder, manifest)
        return manifest

    def load(self, root: Path = DATA_RAW) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(manifest, parts)`` of ``root/<name>/``, refusing any file whose sha256 differs from the manifest
        and any content that fails validation."""
        folder = Path(root) / self.name
        manifest = self.read_manifest(folder)
        files = self.read_files(folder)
        recorded = manifest.get("file_sha256") or {}
        rehash_fn = f"rehash_{self.module.rsplit('.', 1)[-1].removesuffix('_data')}_dataset"
        for name in self.files:
            if sha256_bytes(files[name]) != recorded.get(name):
                raise DatasetError(
                    f"{folder / name} does not match the sha256 in its manifest: it was edited after the dataset "
                    f"was written. Restore it (git checkout, or `{self.write_command}`) or, for a deliberate "
                    f"change, bump 'version' in manifest.json and run `{self.rehash_command}` ({rehash_fn})")
        if manifest.get("release_sha256") != release_sha256(manifest):
            raise DatasetError(f"{folder / 'manifest.json'} was edited after hashing (its release_sha256 no "
                               f"longer matches); run `{self.rehash_command}` to re-hash it")
        parts = self.parse(folder, files)
        self.validate(parts, folder)
        return manifest, parts

    def main(self, argv: Sequence[str] | None = None, description: str = "") -> int:
        """``python -m <module> write|rehash [--root DIR] [--version X.Y.Z]``."""
        content = self.module.replace("_data", "_content")
        p = argparse.ArgumentParser(prog=f"python -m {self.module}", description=description)
        p.add_argument("action", choices=("write", "rehash"),
                       help=f"write: from {content}; rehash: accept hand edits under a new version")
        p.add_argument("--root", default=str(DATA_RAW), help=f"folder holding {self.name}/ (default: %(default)s)")
        p.add_argument("--version", default=None, help="rehash only: the new version of the edited content")
        args = p.parse_args(argv)
        try:
            if args.action == "write":
                if args.version is not None:
                    p.error(f"--version applies to rehash; `write` uses {self.version_name}")
                m = self.write(Path(args.root))
            else:
                m = self.rehash(Path(args.root), args.version)
        except DatasetError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"{m['name']} {m['version']}  release sha256 {m['release_sha256'][:12]}  "
              f"({Path(args.root) / self.name})")
        return 0
