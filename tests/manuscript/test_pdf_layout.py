"""The PDF layout check (report.layout) on documents rendered as the report renders them: a long table breaks
across pages and passes; the same table with the manuscript's typst rules taken out runs off its page and
fails; a table cell the PDF lacks is named."""

import shutil

import pytest
import yaml

from reproduce.config import REPO_ROOT
from report import render_pandoc
from report.layout import html_tables, length_pt, page_settings, pdf_problems

PAPER = REPO_ROOT / "paper"
BREAKABLE = "#show figure.where(kind: table): set block(breakable: true)"


def _paper(tmp_path, rows: int, header: str | None = None):
    """A paper folder with the manuscript's settings, filter and typst header, whose text is a paragraph and
    one captioned table of ``rows`` rows, each with a cell long enough to wrap onto two lines."""
    paper = tmp_path / "paper"
    (paper / "_generated").mkdir(parents=True)
    for name in ("_quarto.yml", "references.bib", "style.css", "typst-header.typ"):
        shutil.copy(PAPER / name, paper / name)
    shutil.copytree(PAPER / "filters", paper / "filters")
    if header is not None:
        (paper / "typst-header.typ").write_text(header)
    (paper / "_generated" / "numbers.yml").write_text(yaml.safe_dump({"n": {}, "run": {}}))
    body = "\n".join(f"| row {i} | {i * 1.5:.1f} [{i - 1}, {i + 1}] | a cell whose text is long enough to wrap "
                     f"onto a second line in a narrow column of the table {i} |" for i in range(rows))
    (paper / "index.qmd").write_text(
        "---\ntitle: Layout\n---\n\n# One {#sec-one}\n\nSome text before @tbl-long.\n\n"
        "| row | value | text |\n|-----|-------|------|\n" + body + "\n\n: A long table. {#tbl-long}\n\nAfter it.\n")
    return paper


def test_page_settings_are_the_ones_quarto_gets():
    settings = page_settings()
    assert settings["papersize"] == "a4" and length_pt(settings["margin"]["y"]) == pytest.approx(56.69, abs=0.01)
    with pytest.raises(ValueError, match="not a length"):
        length_pt("2 furlongs")


def test_a_sixty_row_table_breaks_across_pages_and_passes(tmp_path):
    paper = _paper(tmp_path, 60)
    paths = render_pandoc(paper, tmp_path / "out")
    assert pdf_problems(paths["pdf"], paths["html"], paper) == []
    assert len(html_tables(paths["html"].read_text())[0]) == 3 * 61


def test_the_same_table_without_the_manuscripts_rule_runs_off_its_page_and_is_caught(tmp_path):
    header = (PAPER / "typst-header.typ").read_text()
    assert BREAKABLE in header
    paper = _paper(tmp_path, 60, header.replace(BREAKABLE, ""))
    paths = render_pandoc(paper, tmp_path / "out")
    problems = pdf_problems(paths["pdf"], paths["html"], paper)
    assert problems and all(p.startswith("page 2:") for p in problems), problems
    assert any("outside the page's body" in p for p in problems), problems
    assert any("printed over other text" in p for p in problems), problems


def test_a_table_cell_the_pdf_lacks_is_named(tmp_path):
    paper = _paper(tmp_path, 3)
    paths = render_pandoc(paper, tmp_path / "out")
    html = paths["html"].read_text()
    (tmp_path / "more.html").write_text(html.replace("<td>row 2</td>", "<td>row 2</td><td>a cell of the HTML only</td>"))
    problems = pdf_problems(paths["pdf"], tmp_path / "more.html", paper)
    assert problems == ["table 1 of the HTML: cell 'a cell of the HTML only' is not in the PDF after the cells "
                        "before it"]


def test_a_row_split_by_a_page_break_and_an_accented_name_pass(tmp_path):
    """A table row too tall for what is left of its page is split: the PDF's text then gives the first part of
    each of its cells, the next page's header, then the rest of each cell, and every cell is still found. A name
    with an accented letter (typst draws "í" as "ı" and an accent, which the text layer repeats on its own) is not
    text printed over text."""
    paper = _paper(tmp_path, 0)
    left, right = (" ".join(f"{w}{i}" for i in range(260)) for w in ("alpha", "beta"))
    filler = "\n\n".join(["Filler text, Martín Soto and Zoë Núñez. " * 12] * 5)
    (paper / "index.qmd").write_text(
        "---\ntitle: Layout\n---\n\n# One {#sec-one}\n\n" + filler + "\n\nSee @tbl-tall.\n\n"
        "| left | right |\n|------|-------|\n" + f"| left {left} | right {right} |\n| second | row |\n\n"
        ": A table of one tall row. {#tbl-tall}\n")
    paths = render_pandoc(paper, tmp_path / "out")
    from pypdf import PdfReader

    pages = [p.extract_text() for p in PdfReader(str(paths["pdf"])).pages]
    split = [i for i, t in enumerate(pages) if "alpha0" in t and "beta0" in t]
    assert split and all(any(f"{w}259" in t for t in pages[split[0] + 1:]) for w in ("alpha", "beta")), \
        "the row was not split by the page break"
    assert pdf_problems(paths["pdf"], paths["html"], paper) == []


def test_a_missing_cell_is_not_found_inside_the_cell_before_it_nor_far_down_the_next_page():
    """The rules that let a row split by a page break pass do not let a missing cell pass: a short cell is not
    found inside the longer cell before it ("12" in "112"), and a dropped last row is not found in the body text
    far down the next page."""
    from report.layout import PAGE_BREAK, _missing_cells, _plain

    cells = ["model", "n", "rate", "gemma", "112", "12", "smollm", "54", "7.5"]
    pdf = _plain("Table 3: x. model n rate gemma 112 smollm 54 7.5 Then body text.")  # '12' is missing
    assert _missing_cells([cells], pdf) == ["table 1 of the HTML: cell '12' is not in the PDF after the cells before it"]
    cells = ["model", "verdict", "gemma3-270m", "inconclusive", "smollm2-135m", "practically null"]
    page1 = "model verdict gemma3-270m inconclusive Table 2: verdicts by model. " + "lorem ipsum dolor sit amet " * 40
    page2 = "12 " + "filler words here " * 60 + " smollm2-135m was finetuned; the verdict is practically null for it."
    problems = _missing_cells([cells], _plain(page1) + PAGE_BREAK + _plain(page2))
    assert problems == ["table 1 of the HTML: cell 'smollm2-135m' is not in the PDF after the cells before it"]
