"""Where each figure of the manuscript comes from: ``docs/figures.md``, written by the ``report`` stage.

One row per figure, in the manuscript's order: its number and label, the function that draws it, the files it
reads (each family's ``READS``), the dvc.yaml stage that wrote them, every setting of params.yaml that stage and
the stages before it read (followed through dvc.yaml's deps and outs), and the versions of the datasets they
start from. Everything is read from the code, ``dvc.yaml``, ``paper/`` and the dataset manifests, none of it
from a run's outputs, so ``tests/manuscript/test_provenance.py`` can check the committed page against the code
(DVC cannot make ``dvc.yaml`` itself a stage's dependency: an edit there that changes a row is caught by that test).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from reproduce.config import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "figures.md"
#: stages that validate what every stage reads and write the same output for every valid input: no figure depends
#: on a setting through them (``check`` reads every setting to validate it)
VALIDATION_STAGES = ("check",)
LABEL = re.compile(r"\{#(fig-[a-z0-9-]+)\}")


def _paths(entries) -> list[str]:
    out = []
    for e in entries or []:
        out.append(next(iter(e)) if isinstance(e, dict) else str(e))
    return out


def _covers(out: str, path: str) -> bool:
    return path == out or path.startswith(out.rstrip("/") + "/")


def writer(path: str, stages: dict) -> str | None:
    """The stage whose outputs hold ``path`` (a file, or a folder some output lies in)."""
    for name, spec in stages.items():
        if any(_covers(o, path) or _covers(path, o) for o in _paths(spec.get("outs")) + _paths(spec.get("metrics"))):
            return name
    return None


def upstream(stage: str, stages: dict) -> list[str]:
    """``stage`` and every stage whose outputs it depends on, directly or through others (dvc.yaml order)."""
    seen, todo = set(), [stage]
    while todo:
        s = todo.pop()
        if s in seen:
            continue
        seen.add(s)
        for dep in _paths(stages[s].get("deps")):
            w = writer(dep, stages)
            if w is not None and w != s:
                todo.append(w)
    return [s for s in stages if s in seen]


def settings(names: list[str], stages: dict) -> list[str] | None:
    """The top-level settings the stages ``names`` declare (None: one of them reads every setting)."""
    keys: set[str] = set()
    for s in names:
        for p in stages[s].get("params", []):
            if isinstance(p, dict):
                if any(v is None for v in p.values()):
                    return None
                keys.update(k for v in p.values() for k in v)
            else:
                keys.add(p)
    return sorted(keys)


def datasets(names: list[str], stages: dict, root: Path) -> list[str]:
    """``name version`` of every dataset folder under data_raw/ that the stages ``names`` read."""
    out = set()
    for s in names:
        for dep in _paths(stages[s].get("deps")):
            if dep.startswith("data_raw/") and (root / dep / "manifest.json").exists():
                m = json.loads((root / dep / "manifest.json").read_text())
                out.add(f"{m['name']} {m['version']}")
    return sorted(out)


def manuscript_order(root: Path, sections: dict) -> list[str]:
    """The figure labels in the order the rendered manuscript numbers them. ``sections``: the generated parts the
    manuscript includes that hold figures, each with the module that writes it and which of its parts it is
    (``{"_generated/mirror.md": (module, "main"), ...}``; each module's ``FIGURE_LABELS`` names the figures of its
    main text and of its supplement part)."""
    order = []
    for line in (root / "paper" / "index.qmd").read_text().splitlines():
        inc = re.search(r"\{\{< include (\S+) >\}\}", line)
        if inc and inc.group(1) in sections:
            module, part = sections[inc.group(1)]
            order += module.FIGURE_LABELS[part]
        order += LABEL.findall(line)
    return order


def drawn_in(name: str, raw: dict) -> str | None:
    """The stage that draws the figure ``name``: the writer of its entry in dvc.yaml's ``plots:`` (``raw``: dvc.yaml)."""
    stages = raw["stages"]
    for entry in _paths(raw.get("plots")):
        if Path(entry).stem == name:
            return writer(entry, stages)
    return None


def rows(families, sections: dict, root: Path = REPO_ROOT) -> list[dict]:
    """One dict per figure of every family's figures module in ``families`` (pairs of a module with ``FIGURES`` and
    ``READS`` and the folder, relative to ``root``, its reads are relative to; ``ALSO_READS``, where a module has
    it, what every figure of it reads besides, relative to ``root``), in manuscript order (:func:`manuscript_order`
    with ``sections``)."""
    from report.formatting import fig_id

    raw = yaml.safe_load((root / "dvc.yaml").read_text())
    stages = raw["stages"]
    order = manuscript_order(root, sections)
    before = {}  # each writer's upstream stages, computed once
    out = []
    for mod, base in families:
        for name, draw in mod.FIGURES.items():
            reads = [f"{base}/{r}" for r in mod.READS[name]] + list(getattr(mod, "ALSO_READS", ()))
            writers = sorted({w for r in reads if (w := writer(r, stages))})
            for w in writers:
                before.setdefault(w, set(upstream(w, stages)))
            chain = [s for s in stages if any(s in before[w] for w in writers) and s not in VALIDATION_STAGES]
            label = fig_id(name)
            out.append({"number": order.index(label) + 1 if label in order else None, "label": label,
                        "function": f"{mod.__name__}.{draw.__name__}", "drawn_in": drawn_in(name, raw),
                        "reads": reads, "stages": writers,
                        "settings": settings(chain, stages), "datasets": datasets(chain, stages, root),
                        "upstream": chain})
    return sorted(out, key=lambda r: (r["number"] is None, r["number"] or 0, r["label"]))


def page(families, sections: dict, root: Path = REPO_ROOT) -> str:
    """``docs/figures.md`` as text, for the figures modules of ``families`` (:func:`rows`)."""
    lines = [
        "# Where each figure comes from",
        "",
        "<!-- written by the report stage (report/provenance.py) from the code, dvc.yaml and the dataset manifests;",
        "     do not edit by hand: tests/manuscript/test_provenance.py fails when it is out of date -->",
        "",
        "One row per figure of the manuscript (`data/report/index.html`), in its order. *Drawn by* is the function",
        "and the dvc.yaml stage that draw it; *reads* are the files the function draws from; *written by* is the",
        "stage that writes them; *settings* are the",
        "top-level keys of `params.yaml` that this stage and every stage before it read (change one and",
        "`dvc repro` redraws the figure); *datasets* are the versions under `data_raw/` those stages start from.",
        "",
        "| figure | label | drawn by | reads | written by | settings | datasets |",
        "|---|---|---|---|---|---|---|",
    ]
    table = rows(families, sections, root)
    for r in table:
        settings_text = "every setting" if r["settings"] is None else ", ".join(f"`{k}`" for k in r["settings"])
        lines.append(
            f"| {r['number'] if r['number'] else '(not shown)'} | `@{r['label']}` | `{r['function']}` "
            f"(stage `{r['drawn_in']}`) | "
            + "<br>".join(f"`{p}`" for p in r["reads"]) + " | "
            + ", ".join(f"`{s}`" for s in r["stages"]) + f" | {settings_text or '(none)'} | "
            + (", ".join(r["datasets"]) or "(none)") + " |")
    lines += ["", "The stages before each writer, from the datasets on:", ""]
    seen = set()
    for r in table:
        key = tuple(r["stages"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"- {', '.join(f'`{s}`' for s in r['stages'])}: "
                     + " -> ".join(f"`{s}`" for s in r["upstream"]))
    return "\n".join(lines) + "\n"


def write_page(families, sections: dict, root: Path = REPO_ROOT, path: Path | None = None) -> Path:
    from reproduce.io import atomic_write_bytes

    path = Path(path) if path is not None else root / "docs" / "figures.md"
    atomic_write_bytes(path, page(families, sections, root).encode())
    return path
