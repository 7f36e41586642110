"""Atomic file writes: a reader (or a killed stage) never sees a half-written file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from reproduce.errors import MissingInput
from reproduce.schema import Schema, SchemaError


_UMASK = os.umask(0)
os.umask(_UMASK)


def cache_base() -> Path:
    """The package's per-user cache (converted models, the hardware probe, the digests of model files):
    ``$LOOKING_INWARD_CACHE``, else ``$XDG_CACHE_HOME/looking-inward`` (``~/.cache/looking-inward``)."""
    env = os.environ.get("LOOKING_INWARD_CACHE")
    return Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "looking-inward"


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for a writer to fill; on success it replaces ``path``, on
    failure it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


@contextmanager
def atomic_dir(dest: str | Path) -> Iterator[Path]:
    """Yield an empty folder beside ``dest``; on success it replaces ``dest``, on failure it is removed."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        yield tmp
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def exclusive(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) across processes, so that several processes
    that would build the same cached file (parallel test workers, ranks of a distributed launch) build it
    once and the others wait for it. Where the system has no ``fcntl`` (Windows), no lock is taken."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def strict_json(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, infinity) as None: JSON has no NaN, and a file holding a bare
    ``NaN`` is not JSON to most readers (a missing number is ``null``)."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """``obj`` as strict JSON (no NaN: :func:`strict_json`), indented, keys in their given order."""
    text = json.dumps(strict_json(obj), indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False)
    atomic_write_bytes(path, (text + "\n").encode())


def atomic_write_parquet(path: str | Path, df: pd.DataFrame, schema: Schema | None = None) -> None:
    """``df`` as parquet at ``path``; checked against ``schema`` first, so a table that breaks it is never
    written."""
    if schema is not None:
        schema.check(df, f"writing {path}")
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def stack_frames(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """``frames`` one under the other, with exactly ``columns`` in that order (a missing one as NaN; none:
    an empty table with those columns)."""
    frames = [f for f in frames if not f.empty]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    for c in columns:
        if c not in df.columns:
            df[c] = float("nan")
    return df[columns]


def write_stage_tables(out_dir: str | Path, tables: dict[str, pd.DataFrame], run: dict,
                       schemas: dict[str, Schema] | None = None) -> dict[str, Path]:
    """``out_dir/<name>.parquet`` for every table and ``run.json``, replacing ``out_dir`` as one atomic step
    (every table checked against its entry of ``schemas`` first)."""
    out_dir = Path(out_dir)
    for name, df in tables.items():
        if schemas and name in schemas:
            schemas[name].check(df, f"writing {out_dir / name}.parquet")
    with atomic_dir(out_dir) as tmp:
        for name, df in tables.items():
            df.to_parquet(Path(tmp) / f"{name}.parquet", index=False)
        (Path(tmp) / "run.json").write_text(json.dumps(run, indent=2, sort_keys=True))
    return {name: out_dir / f"{name}.parquet" for name in tables}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


#: digests already taken in this process (see :func:`file_digest`)
_DIGESTS: dict[str, str] = {}
#: cache folders found not writable in this process (their warning is given once)
_UNWRITABLE: set[Path] = set()


def _stat_key(p: Path) -> str:
    st = p.stat()
    return f"{p}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


def file_digest(path: str | Path) -> str:
    """The sha256 of a file, remembered by its resolved path, size and modification and change times, in this
    process and in ``<cache>/digests.json``: a model's weights are keyed by their content, and a multi-gigabyte
    file is read once rather than at every stage. A file rewritten in place gets a new change time (which no
    tool can set back on Linux) and is read again.

    Processes that start together (the ranks of a distributed run) hash a file once: the first takes the
    cache's lock, the others wait and read its digest. A digest is stored only when the file was the same
    before and after it was read, and it replaces the entries of earlier versions of that path. Where the cache
    cannot be written, the file is hashed in each process, with one warning per process."""
    p = Path(path).resolve()
    key = _stat_key(p)
    if key in _DIGESTS:
        return _DIGESTS[key]
    store = cache_base() / "digests.json"

    def known() -> dict:
        try:
            return json.loads(store.read_text())
        except (OSError, ValueError):
            return {}

    def take() -> str:
        size = p.stat().st_size
        if size > 1 << 30:
            print(f"hashing {p} ({size / 2**30:.1f} GiB) once, to key results by the weights' content",
                  file=sys.stderr)
        return sha256_file(p)

    digest = known().get(key)
    if digest is None:
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            writable = os.access(store.parent, os.W_OK)
        except OSError:
            writable = False
        if not writable:
            if store.parent not in _UNWRITABLE:  # once per process and folder, not once per file
                _UNWRITABLE.add(store.parent)
                print(f"warning: cannot keep file digests in {store.parent} (not writable), so each process "
                      f"hashes the weights again; set LOOKING_INWARD_CACHE to a writable folder", file=sys.stderr)
            digest = take()
        else:
            with exclusive(store.with_name(".digests.json.lock")):
                entries = known()
                digest = entries.get(key) or take()
                if key not in entries and _stat_key(p) == key:  # unchanged while it was read
                    stale = [k for k in entries if k.rsplit("|", 3)[0] == str(p)]
                    atomic_write_json(store, {**{k: v for k, v in entries.items() if k not in stale}, key: digest})
    if _stat_key(p) == key:
        _DIGESTS[key] = digest
    return digest


def short_hash(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def read_stage_table(path: str | Path, stage: str, schema: Schema | None = None) -> pd.DataFrame:
    """A stage's parquet table, or a clear error naming the stage to run first; checked against ``schema``
    (a table another version of the package wrote is refused with the fix)."""
    path = Path(path)
    if not path.exists():
        raise MissingInput(f"{path} is missing; run the {stage} stage first (`dvc repro {stage}`)")
    df = pd.read_parquet(path)
    if schema is not None and (problems := schema.problems(df)):
        raise SchemaError(f"{path} does not have the columns this version of the package writes ("
                          + "; ".join(problems) + f"); re-run the {stage} stage (`dvc repro {stage}`)")
    return df


def keep_only(folder: str | Path, keep: set[str], pattern: str = "*.parquet") -> list[str]:
    """Remove the files matching ``pattern`` in ``folder`` that are not named in ``keep``: after a stage has written
    its tables, its folder holds exactly the current settings' outputs (a model removed from ``models`` leaves no
    table behind for a later stage to read). Returns the names removed."""
    removed = []
    for path in sorted(Path(folder).glob(pattern)):
        if path.name not in keep:
            path.unlink()
            removed.append(path.name)
    return removed
