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

Modules: :mod:`.formatting`, :mod:`.numbers`, :mod:`.tables`, :mod:`.render`, :mod:`.checks`, :mod:`.stage`;
:mod:`.injection` and :mod:`.mirror` write the concept-injection and mirror-test sections.
"""

from report.checks import blank_fraction, check_html, embedded_images, find_chromium, screenshot
from report.formatting import ANALYSIS, FIGURES, MINUS, PAPER, REPORT, ReportError, fig_id, fmt, fmt_prob, format_key
from report.self_prediction.numbers import HEADLINES, build_numbers
from report.render import pandoc_path, render, render_pandoc, render_quarto
from report.stage import prepare, run_report
from report.self_prediction.tables import build_tables

__all__ = ["ANALYSIS", "FIGURES", "HEADLINES", "MINUS", "PAPER", "REPORT", "ReportError", "blank_fraction",
           "build_numbers", "build_tables", "check_html", "embedded_images", "fig_id", "find_chromium", "fmt",
           "fmt_prob", "format_key", "pandoc_path", "prepare", "render", "render_pandoc", "render_quarto",
           "run_report", "screenshot"]
