"""The ``report`` stage: the manuscript in ``paper/`` rendered to self-contained HTML and PDF.

1. :func:`prepare` turns the analysis outputs into the manuscript's inputs under ``paper/_generated/``:
   ``numbers.yml`` (every number the text quotes, formatted, read by ``{{< meta n.KEY >}}`` shortcodes) and
   one markdown table per key table (``{{< include _generated/tables/NAME.md >}}``). Nothing in
   ``index.qmd`` is a typed result.
2. :func:`render` uses ``quarto render`` when Quarto is on the PATH; otherwise pandoc 3 from
   ``pypandoc-binary`` with the project's Lua filter (``paper/filters/quarto-compat.lua``: includes, meta
   shortcodes, cross-references, callouts) and citeproc gives ``index.html`` (self-contained: figures,
   styles and MathML inline) and, through pandoc's typst writer and the ``typst`` package, ``index.pdf``.
3. :func:`check_html` lists what a reader must never see: an unresolved cross-reference, citation or
   shortcode, or a figure that is not embedded. The stage fails on any.

:func:`screenshot` (the ``screenshot`` command) opens the HTML in headless Chromium and saves a PNG.

Modules: :mod:`.formatting`, :mod:`.render`, :mod:`.checks`, :mod:`.stage` (the stage, which assembles every
family's section), :mod:`.provenance` (``docs/figures.md``); one folder per family: :mod:`.self_prediction`
(numbers, sentences, tables), :mod:`.injection` and :mod:`.mirror` (their sections).
"""

import importlib

_WHERE = {"blank_fraction": "checks", "check_html": "checks", "embedded_images": "checks", "find_chromium": "checks",
          "screenshot": "checks", "ANALYSIS": "formatting", "FIGURES": "formatting", "MINUS": "formatting",
          "PAPER": "formatting", "REPORT": "formatting", "ReportError": "formatting", "fig_id": "formatting",
          "fmt": "formatting", "fmt_prob": "formatting", "format_key": "formatting",
          "HEADLINES": "self_prediction.numbers", "build_numbers": "self_prediction.numbers",
          "pandoc_path": "render", "render": "render", "render_pandoc": "render", "render_quarto": "render",
          "prepare": "stage", "run_report": "stage", "build_tables": "self_prediction.tables"}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    """The names above, imported when first asked for: importing one of this package's modules loads no other."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
