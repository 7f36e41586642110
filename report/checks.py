"""Checks on the rendered report: no unresolved reference, citation or shortcode, every figure embedded,
and a headless-browser screenshot that is not blank."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path


from reproduce.io import atomic_path
from report.formatting import MODEL_TEXT_CLASS, ReportError, fig_id


UNRESOLVED = [
    (re.compile(r"\{\{&lt;|\{\{<"), "an unexpanded shortcode"),
    (re.compile(r"\?\?"), "an unresolved cross-reference or citation ('??')"),
    (re.compile(r"@(fig|tbl|sec)-[\w-]+"), "a raw cross-reference"),
    (re.compile(r'class="citation"[^>]*>[^<]*<strong>\?'), "a citation citeproc could not find"),
]


def embedded_images(html: str) -> list[str]:
    """The ``src`` of every ``<img>`` (embedded ones start with ``data:``)."""
    return re.findall(r'<img[^>]*\ssrc="([^"]+)"', html)


def check_html(html_path: Path, figures: list[str]) -> list[str]:
    """Problems a reader would see; empty when the report is clean. ``figures``: names of the figures that
    must be present and embedded (labelled by :func:`fig_id`)."""
    html = Path(html_path).read_text(encoding="utf-8")
    body = re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)
    # text a model wrote is quoted verbatim and may contain anything, "??" included
    body = re.sub(rf'<span class="{MODEL_TEXT_CLASS}">.*?</span>', "", body, flags=re.S)
    body = re.sub(r'src="data:[^"]+"', 'src="data:"', body)
    problems = [f"{what}: ...{body[max(0, m.start() - 60):m.end() + 20]}..."
                for rx, what in UNRESOLVED for m in [rx.search(body)] if m]
    srcs = embedded_images(html)
    problems += [f"an image is not embedded: {s[:80]}" for s in srcs if not s.startswith("data:")]
    for label in map(fig_id, figures):
        segment = _figure_segment(html, label)
        if segment is None:
            problems.append(f"figure {label} is not in the report")
        elif 'src="data:image/' not in segment:
            problems.append(f"figure {label} has no embedded image")
    return problems


def _figure_segment(html: str, fig_id: str) -> str | None:
    """The HTML from the element with ``id=fig_id`` to the next figure (pandoc writes ``<figure id=...>``,
    Quarto a ``<div id=...>`` around it), or None when there is no such element."""
    start = html.find(f'id="{fig_id}"')
    if start < 0:
        return None
    end = html.find('id="fig-', start + len(fig_id) + 5)
    return html[start:end if end > 0 else len(html)]


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def screenshot(html: Path, png: Path, width: int = 1280, height: int = 2400, chromium: str | None = None) -> Path:
    """Open ``html`` in headless Chromium (offline: every resource is embedded) and save a PNG of the page."""
    exe = chromium or find_chromium()
    if not exe:
        raise ReportError("no Chromium found: install Debian's `chromium` (apt-get install chromium) or pass "
                          "--chromium PATH")
    html, png = Path(html).resolve(), Path(png).resolve()
    if not html.exists():
        raise ReportError(f"{html} does not exist: render the report first (`dvc repro report`)")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        shot = Path(work) / "shot.png"  # chromium picks the format from the extension
        proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={work}/profile",
                               f"--window-size={width},{height}", f"--screenshot={shot}", html.as_uri()],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or not shot.exists() or not shot.stat().st_size:
            raise ReportError(f"chromium failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        with atomic_path(png) as tmp:
            shutil.copyfile(shot, tmp)
    return png


def blank_fraction(png: Path) -> float:
    """The share of (near-)white pixels in a screenshot; 1.0 is a blank page."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(png).convert("L"), dtype=float)
    return float((a > 245).mean())

