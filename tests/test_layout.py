"""The package's shape: one home per experiment family above a shared layer that knows none of them.

Read from the source (every import, at module level or inside a function):

- a family (``self_prediction``, ``injection``, ``mirror`` under ``reproduce/``, ``analysis/``, ``figures/`` and
  ``report/``) imports the shared layer and its own modules, never another family's;
- the shared layer imports no family, except the two composition roots that assemble them: the command line
  (``looking_inward/``) and the manuscript (``report/stage.py`` and ``report/__init__.py``);
- no import circle between modules;
- no private name (``_x``) is imported from another package;
- no module of over 600 lines, unless one job needs the length (:data:`LONG`, with the reason).

The tests themselves may import private names of the modules they pin.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # tests/ lies at the top of the repository
PACKAGES = ("reproduce", "analysis", "figures", "report", "looking_inward")
FAMILIES = ("self_prediction", "injection", "mirror")
ROOTS = ("looking_inward.cli", "looking_inward.__main__", "looking_inward", "report.stage")
#: modules allowed past 600 lines, and why
LONG = {"reproduce/lm/engine.py": "one job: batched generation with prefix sharing, option scoring and the split cache",
        "looking_inward/cli.py": "one job: the argument parser of some 35 commands, each with its help text, and "
                                 "their dispatch; every command's body lives with what it runs"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package(name: str, path: Path) -> list[str]:
    return name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]


def _imports(name: str, path: Path) -> list[tuple[str, str | None]]:
    """(module imported, name imported from it or None) for every project import in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] in PACKAGES]
        elif isinstance(node, ast.ImportFrom):
            pkg = _package(name, path)
            mod = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            if mod.split(".")[0] not in PACKAGES:
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((sub, None) if sub in MODULES else (mod, a.name))
    return out


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] != "looking_inward" and parts[1] in FAMILIES else None


EDGES = {name: _imports(name, path) for name, path in MODULES.items()}


def test_a_family_imports_no_other_family():
    bad = [f"{m} -> {t}" for m, edges in EDGES.items() for t, _ in edges
           if _family(m) and _family(t) and _family(t) != _family(m)]
    assert bad == []


def test_the_shared_layer_imports_no_family():
    bad = [f"{m} -> {t}" for m, edges in EDGES.items() for t, _ in edges
           if m not in ROOTS and not _family(m) and _family(t)]
    assert bad == []


def test_no_import_circles():
    graph = {m: {t for t, _ in edges if t in MODULES and t != m} for m, edges in EDGES.items()}
    # a package's __init__ that re-exports its own modules is not a circle with them
    for m in graph:
        graph[m] = {t for t in graph[m] if not (MODULES[t].name == "__init__.py" and m.startswith(t + "."))}
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert circles == []


def test_no_private_name_is_imported_from_another_package():
    bad = []
    for m, edges in EDGES.items():
        here = ".".join(_package(m, MODULES[m]))
        for t, name in edges:
            if name and name.startswith("_") and not name.startswith("__") and t in MODULES:
                there = ".".join(_package(t, MODULES[t]))
                if there != here:
                    bad.append(f"{m} imports {name} from {t}")
    assert bad == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_does_more_than_600_lines_of_work(name):
    rel = MODULES[name].relative_to(ROOT).as_posix()
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= 600 or rel in LONG, f"{rel}: {lines} lines"


def test_no_two_modules_of_one_name_mean_different_things():
    """``models.py``, ``tables.py`` and ``checks.py`` once meant two things each; each such name is one module now."""
    for stem in ("models", "tables", "checks"):
        assert len([p for p in MODULES.values() if p.stem == stem]) <= 1, stem
