"""Checks on the rendered PDF's layout: no text outside the page's body (a table or figure that ran off the
page), no two pieces of text printed over each other, and every cell of the HTML's tables in the PDF.

The PDF is read with pypdf, which gives each piece of text its starting point and font size but not its
width. Text is therefore called overprinted only where one piece starts inside a lower bound of another's
width on the same baseline (a character is at least ``MIN_CHAR_EM`` of the font size wide), so that two pieces
set side by side on one line are never flagged.
"""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import yaml

from report.formatting import PAPER

#: the narrowest a character of the manuscript's fonts is, in em (a period or an "i" is about 0.25-0.28 em)
MIN_CHAR_EM = 0.2

#: the most characters of other text between two words of one table cell in the PDF's text: a page break inside
#: the cell puts the page's number and the table's repeated header row there
MAX_GAP = 600

#: points per unit of a typst length
UNITS = {"pt": 1.0, "mm": 72 / 25.4, "cm": 72 / 2.54, "in": 72.0}


@dataclass(frozen=True)
class Run:
    """One piece of text as the PDF draws it: its page (1-based), starting point (points from the page's lower
    left corner, on the baseline) and font size."""

    page: int
    x: float
    y: float
    size: float
    text: str


def length_pt(value: str) -> float:
    """A typst length such as "2cm" or "1.25in", in points."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*(pt|mm|cm|in)\s*", str(value))
    if not m:
        raise ValueError(f"not a length in pt, mm, cm or in: {value!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def page_settings(paper: Path = PAPER) -> dict:
    """The PDF's paper size and margins as ``_quarto.yml`` gives them to typst: ``{"papersize": "a4",
    "margin": {"x": "2cm", "y": "2cm"}}``; both renderers use them."""
    typst = yaml.safe_load((Path(paper) / "_quarto.yml").read_text())["format"]["typst"]
    return {"papersize": typst["papersize"], "margin": dict(typst["margin"])}


def text_runs(pdf) -> list[Run]:
    """Every non-blank piece of text of ``pdf`` (a path, or a ``pypdf.PdfReader`` already open) with its position
    and size."""
    from pypdf import PdfReader

    reader = pdf if isinstance(pdf, PdfReader) else PdfReader(str(pdf))
    runs: list[Run] = []
    for number, page in enumerate(reader.pages, start=1):
        def visit(text, cm, tm, font, size, number=number):
            # a math accent (a bar, a hat) is drawn on its own over its letter: only marks, no text to overlap
            if not "".join(c for c in text if unicodedata.category(c) != "Mn").strip():
                return
            # nor is a single letter with its combining accent, which the text layer repeats on its own at the
            # start of the text after it (typst's "í" in a name: "Martı́" then "ı́" where "n Soto" starts)
            bare = text.strip()
            if (any(unicodedata.combining(c) for c in bare) and sum(not unicodedata.combining(c) for c in bare) == 1
                    and runs and runs[-1].page == number and runs[-1].text.rstrip().endswith(bare)):
                return
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            scale = abs(tm[3] * cm[3] + tm[2] * cm[1]) or 1.0
            runs.append(Run(number, x, y, size * scale, text))

        page.extract_text(visitor_text=visit)
    return runs


def _outside(runs: list[Run], height: float, bottom: float, top: float) -> list[str]:
    """Text below the body's bottom edge or above its top edge; the page's number, in the bottom margin, is
    where it belongs."""
    out = []
    for r in runs:
        if r.text.strip() == str(r.page) and r.y < bottom:
            continue
        if r.y < bottom - 0.5 or r.y > height - top + 0.5:
            out.append(f"page {r.page}: text outside the page's body (y = {r.y:.0f} pt, body {bottom:.0f} to "
                       f"{height - top:.0f} pt): {r.text.strip()[:60]!r}")
    return out


def _overprinted(runs: list[Run]) -> list[str]:
    """Pieces of text on one baseline where one starts inside the least width the other can have."""
    out, seen = [], set()
    by_line: dict[tuple[int, int], list[Run]] = {}
    for r in runs:
        by_line.setdefault((r.page, round(r.y)), []).append(r)
    for (page, _), line in sorted(by_line.items()):
        line = sorted(line, key=lambda r: r.x)
        for i, a in enumerate(line):
            # a letter with a combining accent (typst writes "í" as "ı" and U+0301) is one letter wide
            least = MIN_CHAR_EM * a.size * sum(not unicodedata.combining(c) for c in a.text.strip())
            for b in line[i + 1:]:
                if b.x >= a.x + least:
                    break
                if abs(a.y - b.y) < 0.25 * min(a.size, b.size) and (page, a.text, b.text) not in seen:
                    seen.add((page, a.text, b.text))
                    out.append(f"page {page}: text printed over other text at y = {a.y:.0f} pt: "
                               f"{a.text.strip()[:40]!r} and {b.text.strip()[:40]!r}")
    return out


def _grouped(problems: list[str]) -> list[str]:
    """One line per page: its first problem, and how many more of the same kind the page has."""
    out, pages = [], {}
    for p in problems:
        pages.setdefault(p.split(":", 1)[0], []).append(p)
    for first, *rest in pages.values():
        out.append(first + (f" (and {len(rest)} more on that page)" if rest else ""))
    return out


def _plain(text: str) -> str:
    """Text reduced to what survives both renderers: compatibility forms folded; no whitespace, hyphens,
    dashes or minus signs (typst hyphenates narrow cells); no quotes, apostrophes or primes (the HTML's math
    writes a prime as a quote); and no character from U+3000 on (CJK), which the PDF's fonts lack and which a
    model's quoted reply can hold (the PDF's text then has NUL for it)."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"[\s\-\u00ad\u2010-\u2015\u2212'\"\u2018-\u201f\u2032\u2033\x00]+", "", text)
    return "".join(c for c in text if ord(c) < 0x3000)


def html_tables(html: str) -> list[list[str]]:
    """The text of every cell of every ``<table>`` of an HTML page, table by table, row by row."""
    tables = []
    for body in re.findall(r"<table\b.*?</table>", html, flags=re.S):
        cells = [html_lib.unescape(re.sub(r"<[^>]+>", "", c))
                 for c in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", body, flags=re.S)]
        tables.append([c for c in cells if c.strip()])
    return tables


#: where one page's text ends and the next one's begins, in the text the table cells are matched against
PAGE_BREAK = "\x01"


def _near(text: str, word: str, at: int, resume: int | None = None) -> int:
    """Where ``word`` occurs in ``text`` from ``at``: at most :data:`MAX_GAP` characters on, or else on the next
    page within :data:`MAX_GAP` characters of where that page's part of the table resumes (its top, with the page
    number and the repeated header, or ``resume``: where the previous cell of a row that the page break split
    ended there); -1 where neither."""
    found = text.find(word, at)
    if found < 0 or found - at <= MAX_GAP:
        return found
    page = text.find(PAGE_BREAK, at)
    if page < 0:
        return -1
    base = resume if resume is not None and resume > page else page
    found = text.find(word, base, base + MAX_GAP + len(word) + 1)
    return found if found >= 0 and PAGE_BREAK not in text[page + 1:found] else -1


def _match(cells: list[list[str]], text: str, pos: int) -> int:
    """How many of ``cells`` (each a list of words) ``text`` shows in order from ``pos``: within a cell each word
    after the one before it, at most :data:`MAX_GAP` characters on or on the next page (the first word of the
    first cell at ``pos``); a cell's first word after the previous cell's first word and near its last. A row
    that a page break splits shows the first part of each of its cells, then, on the next page, the rest of each:
    a cell's words then skip the other cells' first parts, and a cell starts before the previous one ends."""
    start = end = pos
    resume = None  # where the previous cell ended on the next page, when a page break split it
    for done, words in enumerate(cells):
        # a cell starts after the one before it ends, or, where that one was split, after its first word
        first = text.find(words[0], start if resume is not None else end)
        if first < 0 or (first > end and _near(text, words[0], end) != first):
            return done
        at = first + len(words[0])
        for word in words[1:]:
            found = _near(text, word, at, resume)
            if found < 0:
                return done
            at = found + len(word)
        start, end = first + len(words[0]), at
        resume = at if PAGE_BREAK in text[first:at] else None
    return len(cells)


def _missing_cells(tables: list[list[str]], pdf_text: str) -> list[str]:
    """Table cells of the HTML that the PDF does not show in the same order. A table is matched from each place
    its first word occurs, word by word, each word at most :data:`MAX_GAP` characters after the one before it,
    so that a cell a page break splits (the page's number and the repeated header row come between its words) is
    still found whole; the table is missing a cell where no start matches every cell."""
    out = []
    for number, table in enumerate(tables, start=1):
        # each cell with its words as both renderers show them; a cell with none (only marks) is not looked for
        kept = [(c, words) for c in table if (words := [w for w in map(_plain, c.split()) if w])]
        if not kept:
            continue
        cells = [words for _, words in kept]
        best, start = 0, pdf_text.find(cells[0][0])
        while start >= 0 and best < len(cells):
            best = max(best, _match(cells, pdf_text, start))
            start = pdf_text.find(cells[0][0], start + 1)
        if best < len(cells):
            cell = kept[best][0]
            out.append(f"table {number} of the HTML: cell {cell.strip()[:60]!r} is not in the PDF after the cells "
                       f"before it")
    return out


def pdf_problems(pdf: Path, html: Path | None = None, paper: Path = PAPER) -> list[str]:
    """What a reader of the PDF would see broken: text outside the page's body, text printed over text, and
    (given the HTML) a table cell of the HTML that the PDF lacks. Empty when the PDF is clean."""
    from pypdf import PdfReader

    settings = page_settings(paper)
    reader = PdfReader(str(pdf))  # parsed once, for the page size and the text
    height = float(reader.pages[0].mediabox.height)
    margin = settings["margin"]
    bottom = top = length_pt(margin.get("y", margin.get("bottom", "2cm")))
    runs = text_runs(reader)
    problems = _grouped(_outside(runs, height, bottom, top)) + _grouped(_overprinted(runs))
    if html is not None:
        pages: dict[int, list[str]] = {}
        for r in runs:
            pages.setdefault(r.page, []).append(r.text)
        pdf_text = PAGE_BREAK.join(_plain("".join(texts)) for _, texts in sorted(pages.items()))
        problems += _missing_cells(html_tables(Path(html).read_text(encoding="utf-8")), pdf_text)
    return problems
