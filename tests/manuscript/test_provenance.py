"""docs/figures.md: where each figure comes from, read from the code, dvc.yaml and the dataset manifests."""

import ast
import inspect

import pytest

import figures.injection.plots as injection_figures
import figures.mirror.plots as mirror_figures
import figures.self_prediction.plots as sp_figures
from report import provenance
from report.stage import provenance_inputs
from reproduce.config import REPO_ROOT

FAMILIES, SECTIONS = provenance_inputs()


def test_the_committed_page_is_up_to_date():
    """`dvc repro report` rewrites it."""
    assert (REPO_ROOT / "docs" / "figures.md").read_text() == provenance.page(FAMILIES, SECTIONS)


def test_every_figure_of_every_family_has_a_row_with_its_own_familys_provenance():
    rows = {r["label"]: r for r in provenance.rows(FAMILIES, SECTIONS)}
    assert len(rows) == len(sp_figures.FIGURES) + len(injection_figures.FIGURES) + len(mirror_figures.FIGURES)
    assert sorted(r["number"] for r in rows.values()) == list(range(1, len(rows) + 1))  # each shown, numbered once
    sv = rows["fig-self-vs-cross"]
    assert sv["function"] == "figures.self_prediction.plots.self_vs_cross" and sv["stages"] == ["analysis"]
    assert sv["drawn_in"] == "figures" and rows["fig-injection-detection"]["drawn_in"] == "injection_figures"
    assert {"models", "tasks", "finetune", "items_per_task", "analysis"} <= set(sv["settings"])
    assert "injection" not in sv["settings"] and "mirror" not in sv["settings"]
    assert all(d.split()[0] not in ("concept_injection", "mirror_test") for d in sv["datasets"]) and sv["datasets"]
    assert rows["fig-power"]["stages"] == ["power"]
    inj = rows["fig-injection-detection"]
    # the analysis's tables, and the hardware line of the trials' run.json
    assert inj["stages"] == ["concept_injection", "injection_analysis"] and inj["datasets"] == [d for d in inj["datasets"]
                                                                           if d.startswith("concept_injection")]
    # the project's own dataset and the published-protocol presets (`injection.dataset` picks one)
    assert [d.split()[0] for d in inj["datasets"]] == ["concept_injection", "concept_injection_lindsey",
                                                       "concept_injection_lindsey_info"]
    assert "injection" in inj["settings"] and not {"tasks", "finetune", "mirror"} & set(inj["settings"])
    mir = rows["fig-mirror-surprise"]
    assert "data/mirror/raw/run.json" in mir["reads"] and "data/injection/raw/run.json" in inj["reads"]
    assert mir["stages"] == ["mirror", "mirror_analysis"] and "mirror" in mir["settings"] and "injection" not in mir["settings"]


def _literal_tables(fn) -> set[str]:
    tree = ast.parse(inspect.getsource(fn))
    return {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", None)
            == "table" and n.args and isinstance(n.args[0], ast.Constant)}


@pytest.mark.parametrize("module", [injection_figures, mirror_figures, sp_figures], ids=lambda m: m.__name__)
def test_the_declared_reads_are_the_tables_each_figure_asks_for(module):
    """Every ``.table("name")`` a figure function calls is declared in its family's READS (names built at run time,
    the posterior-predictive figure's, are checked on a real run below)."""
    assert set(module.READS) == set(module.FIGURES)
    for name, fn in module.FIGURES.items():
        declared = {r.removeprefix("tables/").removesuffix(".parquet") for r in module.READS[name]}
        assert _literal_tables(fn) <= declared, name


def test_a_figure_reading_something_undeclared_fails_the_check(monkeypatch):
    monkeypatch.setitem(sp_figures.READS, "self_vs_cross", [])
    with pytest.raises(AssertionError, match="self_vs_cross"):
        test_the_declared_reads_are_the_tables_each_figure_asks_for(sp_figures)


def test_each_generated_part_declares_the_figures_its_module_places():
    """A section module's FIGURE_LABELS name every figure label in its source, each in one part: the page orders
    the supplement's figures where the supplement includes them (a figure moved between parts without its label
    moving would be listed out of order; the small runs' section tests check the parts' written text)."""
    for mod in {module for module, _ in SECTIONS.values()}:
        module = mod.__name__
        parts = mod.FIGURE_LABELS
        declared = [label for part in ("main", "supplement") for label in parts[part]]
        assert len(declared) == len(set(declared)), module
        assert sorted(declared) == sorted(set(provenance.LABEL.findall(inspect.getsource(mod)))), module
    order = provenance.manuscript_order(REPO_ROOT, SECTIONS)
    # the supplement comes after the references: its figures after every main-text figure
    assert order.index("fig-injection-two-turn") > order.index("fig-mirror-outcomes")
    assert order.index("fig-similarity") > order.index("fig-mirror-outcomes")
