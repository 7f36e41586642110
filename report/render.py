"""Rendering ``paper/index.qmd``: Quarto when installed, else pandoc with the project's Lua filter (HTML)
and typst (PDF)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path


import yaml

from reproduce.errors import UsageError
from reproduce.io import atomic_path
from report.formatting import FILTER, PAPER, REPORT, ReportError
from report.layout import page_settings


def pandoc_path() -> str:
    """pandoc from PATH if it is version 3+, else the binary inside ``pypandoc-binary``."""
    exe = shutil.which("pandoc")
    if exe:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        m = re.match(r"pandoc\S* (\d+)", out)
        if m and int(m.group(1)) >= 3:
            return exe
    try:
        import pypandoc

        return pypandoc.get_pandoc_path()
    except (ImportError, OSError) as e:
        raise ReportError("pandoc 3 is needed to render the report without Quarto: "
                          "`pip install pypandoc-binary` (scripts/setup.sh does) or install Quarto") from e


def _pandoc(args: list[str], cwd: Path) -> str:
    proc = subprocess.run([pandoc_path(), *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReportError(f"pandoc failed ({proc.returncode}):\n{proc.stderr.strip()}")
    bad = [line for line in proc.stderr.splitlines() if "not found" in line or "Could not" in line]
    if bad:
        raise ReportError("pandoc could not resolve: " + "; ".join(bad))
    return proc.stderr


#: pandoc's markdown without example lists: there a line that starts with a reference in parentheses,
#: "(@tbl-x) ...", would start a numbered example and turn every "(@tbl-x)" into its number
MARKDOWN = "markdown-example_lists"


def render_pandoc(paper: Path = PAPER, out: Path = REPORT, pdf: bool = True) -> dict[str, Path]:
    """The fallback renderer: pandoc + the project's Lua filter + citeproc -> HTML; -> typst -> PDF."""
    paper, out = Path(paper).resolve(), Path(out).resolve()
    common = ["index.qmd", "--from", MARKDOWN, "--metadata-file", "_generated/numbers.yml",
              "--lua-filter", FILTER, "--citeproc", "--bibliography", "references.bib",
              "--resource-path", str(paper), "--number-sections"]
    paths = {}
    with atomic_path(out / "index.html") as tmp:
        _pandoc(common + ["--to", "html5", "--standalone", "--embed-resources", "--mathml", "--toc",
                          "--css", "style.css", "--metadata", "lang=en", "--output", str(tmp)], paper)
    paths["html"] = out / "index.html"
    if pdf:
        import typst

        # the .typ lives in paper/ because its image paths are relative to it (figures are in paper/_generated)
        fd, typ = tempfile.mkstemp(dir=paper, prefix=".index-", suffix=".typ")
        os.close(fd)
        fd, page = tempfile.mkstemp(dir=paper, prefix=".page-", suffix=".yml")
        os.close(fd)
        try:  # the paper size and margins that _quarto.yml gives Quarto's typst, which the layout check reads
            Path(page).write_text(yaml.safe_dump(page_settings(paper)))
            _pandoc(common + ["--to", "typst", "--standalone", "--include-in-header", "typst-header.typ",
                              "--metadata-file", page, "--output", typ], paper)
            with atomic_path(out / "index.pdf") as tmp:
                typst.compile(typ, output=str(tmp), root=str(paper), timestamp=0)
        finally:
            Path(typ).unlink(missing_ok=True)
            Path(page).unlink(missing_ok=True)
        paths["pdf"] = out / "index.pdf"
    return paths


def render_quarto(paper: Path = PAPER, out: Path = REPORT) -> dict[str, Path]:
    """``quarto render`` (HTML and typst PDF, as ``_quarto.yml`` says), then the results copied to ``out``."""
    proc = subprocess.run(["quarto", "render", str(paper)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReportError(f"quarto render failed:\n{proc.stderr.strip()[-4000:]}")
    paths = {}
    for kind, name in (("html", "index.html"), ("pdf", "index.pdf")):
        src = Path(paper) / "_output" / name
        if src.exists():
            with atomic_path(Path(out) / name) as tmp:
                shutil.copyfile(src, tmp)
            paths[kind] = Path(out) / name
    return paths


def render(paper: Path = PAPER, out: Path = REPORT, engine: str = "auto") -> dict[str, Path]:
    if engine not in ("auto", "quarto", "pandoc"):
        raise UsageError(f"engine must be auto, quarto or pandoc, got {engine!r}")
    if engine == "quarto" or (engine == "auto" and shutil.which("quarto")):
        return render_quarto(paper, out)
    return render_pandoc(paper, out)

