"""What each DVC stage depends on, and a check that dvc.yaml declares it.

DVC re-runs a stage when one of its declared ``deps`` or ``params`` changes, and only then. So a stage that
reads a setting or imports a module it does not declare can go stale silently, and one that declares the
whole ``reproduce/`` folder and every setting re-runs for edits that cannot change its outputs. Two checks
keep dvc.yaml exact:

- modules, statically: :func:`stage_modules` follows the imports of the stage's command in ``looking_inward/cli.py``
  through the project's packages (imports inside functions included), and :func:`undeclared` names any such
  file that no ``deps`` entry of the stage covers (a test runs this for every stage);
- settings, at run time: every stage command records the top-level settings it reads
  (:func:`reproduce.config.record_reads`) and warns, naming the key, when dvc.yaml does not list it
  (``LOOKING_INWARD_STRICT_DEPS=1`` turns the warning into an error, as the pipeline test sets).

The command line itself (``looking_inward/cli.py``, which parses arguments and dispatches) and this module are
no stage's dependency: a change there does not change any stage's outputs.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import yaml

from reproduce.config import CODE_ROOT, REPO_ROOT
from reproduce.errors import ProjectError

PACKAGES = ("reproduce", "analysis", "figures", "report", "looking_inward")
CLI = "looking_inward/cli.py"
#: the composition root and this check: imported by every stage command, part of none
EXEMPT = (CLI, "reproduce/pipeline.py")
STRICT_ENV = "LOOKING_INWARD_STRICT_DEPS"


class UndeclaredDependency(ProjectError):
    """dvc.yaml does not declare something a stage reads."""


def _module_file(name: str, root: Path) -> Path | None:
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _imports(path: Path, root: Path) -> set[str]:
    """Project modules imported anywhere in ``path`` (module level and inside functions)."""
    # a/b/c.py and a/b/__init__.py both sit in a.b
    return _imports_in(ast.parse(path.read_text()), list(path.relative_to(root).parts[:-1]))


def _imports_in(tree: ast.AST, package: list[str]) -> set[str]:
    """Project modules imported anywhere under ``tree``, a module or one function of it in ``package``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{alias.name}" for alias in node.names)  # `from pkg import module`
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "code_version":
            # modules named by string, imported and hashed into a fingerprint (reproduce.versioning)
            out.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return {m for m in out if m.split(".")[0] in PACKAGES}


def _closure(start: set[str], root: Path) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            sub = ".".join(parts[:i])
            path = _module_file(sub, root)
            if path is None:
                continue
            rel = path.relative_to(root).as_posix()
            if rel in seen:
                continue
            seen.add(rel)
            todo.extend(_imports(path, root))
    return seen


def command_function(stage: str) -> str:
    """The CLI function that runs a dvc.yaml stage: ``object_level`` -> ``cmd_object_level``."""
    return f"cmd_{stage}"


def stage_modules(stage: str, root: Path = CODE_ROOT) -> set[str]:
    """The project files (relative paths) the stage's command imports, directly or through other modules."""
    tree = ast.parse((root / CLI).read_text())
    start = _imports_in(_cli_function(tree, command_function(stage), stage), ["looking_inward"])
    # the command line's own module-level imports serve every stage (the settings loader, the errors)
    start |= {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
              and n.module.split(".")[0] in PACKAGES}
    return {m for m in _closure(start, root) if m not in EXEMPT}


def _cli_function(tree: ast.Module, name: str, stage: str | None = None) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise KeyError(f"{CLI} has no {name}()" + (f" for the dvc.yaml stage {stage!r}" if stage else ""))


def read_stages(dvc_yaml: Path = REPO_ROOT / "dvc.yaml") -> dict:
    return yaml.safe_load(dvc_yaml.read_text())["stages"]


def declared(stage: str, dvc_yaml: Path = REPO_ROOT / "dvc.yaml") -> tuple[list[str], list[str] | None]:
    """``(deps, params)`` of a stage as dvc.yaml lists them; params None means the whole params file."""
    spec = read_stages(dvc_yaml)[stage]
    deps = [str(d) for d in spec.get("deps", [])]
    params: list[str] | None = []
    for entry in spec.get("params", []):
        if isinstance(entry, str):
            params.append(entry)
        else:  # {file: [keys]} or {file: null}: the whole file
            for _file, keys in entry.items():
                if not keys:
                    params = None
                    break
                params.extend(keys)
        if params is None:
            break
    return deps, params


def _covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


def undeclared(stage: str, modules: set[str] | None = None, reads: set[str] | None = None,
               dvc_yaml: Path = REPO_ROOT / "dvc.yaml") -> list[str]:
    """What ``stage`` imports (``modules``: project files) or reads (``reads``: top-level settings) that its
    dvc.yaml entry does not declare, one line each."""
    deps, params = declared(stage, dvc_yaml)
    out = [f"module {m}" for m in sorted(modules or ()) if not _covered(m, deps)]
    if params is not None:
        out += [f"setting {k}" for k in sorted(reads or ()) if not any(k == p or k.startswith(p + ".")
                                                                       or p.startswith(k + ".") for p in params)]
    return out


def _cli_machinery(root: Path = CODE_ROOT) -> set[str]:
    """What the command line's ``main()`` imports for itself (timing, the process barrier, this check): loaded
    by every command, part of no stage's outputs."""
    main = _cli_function(ast.parse((root / CLI).read_text()), "main")
    return _closure(_imports_in(main, ["looking_inward"]), root)


def loaded_modules(root: Path = CODE_ROOT) -> set[str]:
    """The project files this process has imported, less the command line's own (``looking_inward/``, and
    what its ``main()`` imports for itself)."""
    out = set()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        try:
            rel = Path(f).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if rel.split("/")[0] in PACKAGES and rel not in EXEMPT and not rel.startswith("looking_inward/"):
            out.add(rel)
    return out - _cli_machinery(root)


def check_stage(command: str, reads: set[str], root: Path = REPO_ROOT) -> None:
    """After a stage command: warn (or, with ``LOOKING_INWARD_STRICT_DEPS=1``, fail) when dvc.yaml does not
    declare a setting the stage read or a module it imported. Silent outside a project checkout."""
    dvc_yaml = root / "dvc.yaml"
    stage = command.replace("-", "_")
    if not dvc_yaml.exists() or stage not in read_stages(dvc_yaml):
        return
    missing = undeclared(stage, loaded_modules(), reads, dvc_yaml)
    if not missing:
        return
    msg = (f"dvc.yaml's stage {stage!r} does not declare what it used: {', '.join(missing)}; add them to its "
           f"deps/params, or DVC will not re-run it when they change")
    if os.environ.get(STRICT_ENV) == "1":
        raise UndeclaredDependency(msg)
    print(f"warning: {msg}", file=sys.stderr)


def _is_code(dep: str) -> bool:
    return dep.split("/")[0] in PACKAGES and (dep.endswith(".py") or "/" not in dep)


def sync_code_deps(dvc_yaml: Path = REPO_ROOT / "dvc.yaml", write: bool = True) -> list[str]:
    """Make every stage's code ``deps`` in dvc.yaml exactly :func:`stage_modules` (data deps and comments are
    kept); returns the stages whose list changed (``write=False``: only report them)."""
    lines = dvc_yaml.read_text().split("\n")
    out, changed, stage, in_stages, i = [], [], None, False, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("stages:"):
            in_stages = True
        elif in_stages and (m := re.match(r"^  (\w+):", line)):
            stage = m.group(1)
        if in_stages and stage and line == "    deps:":
            out.append(line)
            i += 1
            block = []
            while i < len(lines) and lines[i].startswith("      - "):
                block.append(lines[i])
                i += 1
            data = [b for b in block if not _is_code(b[8:].split("#")[0].strip())]
            code = [f"      - {m}" for m in sorted(stage_modules(stage))]
            if [b for b in block if b not in data] != code:
                changed.append(stage)
            out += data + code
            continue
        out.append(line)
        i += 1
    if changed and write:
        from reproduce.io import atomic_write_bytes

        atomic_write_bytes(dvc_yaml, "\n".join(out).encode())
    return changed
