"""The ``report`` stage: numbers and tables, then rendering, then the checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from reproduce.citation import read_manifests
from reproduce.config import Profile
from reproduce.io import atomic_write_bytes
from report.checks import check_html
from report.layout import pdf_problems
from report.formatting import ANALYSIS, DATA_RAW, FIGURES, PAPER, REPORT, ReportError, markdown_safe, read_json
from report.self_prediction.numbers import build_numbers
from report.render import render
from report.self_prediction.tables import build_tables


def provenance_inputs() -> tuple[tuple, dict]:
    """What the figure provenance page (``docs/figures.md``, :mod:`report.provenance`) lists: each family's
    figures module with the folder its reads are relative to, and the generated parts of the manuscript that place
    figures, each with the module that writes it and which of its parts it is."""
    import figures.injection.plots as injection_figures
    import figures.mirror.plots as mirror_figures
    import figures.self_prediction.plots as self_prediction_figures
    import report.injection.section as injection_section
    import report.mirror.section as mirror_section
    import report.self_prediction.policy as policy_section
    import report.self_prediction.sibling as sibling_section

    families = ((self_prediction_figures, "data/analysis"), (injection_figures, "data/injection/analysis"),
                (mirror_figures, "data/mirror/analysis"))
    sections = {f"_generated/{name}{suffix}.md": (module, part)
                for name, module in (("injection", injection_section), ("mirror", mirror_section),
                                     ("sibling", sibling_section), ("policy", policy_section))
                for suffix, part in (("", "main"), ("_supplement", "supplement"))}
    return families, sections


def prepare(profile: Profile, profile_name: str, analysis: Path = ANALYSIS, figures: Path = FIGURES,
            paper: Path = PAPER, data_raw: Path = DATA_RAW, injection: Path | None = None) -> dict:
    """Write ``paper/_generated/`` (numbers.yml, tables/*.md, figures/*.png) from the pipeline's outputs;
    returns the figures' index (``data/figures/index.json``)."""
    numbers = read_json(Path(analysis) / "numbers.json", "analysis")
    metrics = read_json(Path(analysis) / "metrics.json", "analysis")
    index = read_json(Path(figures) / "index.json", "figures")
    missing = [f"{name}.png" for name in index if not (Path(figures) / f"{name}.png").exists()]
    if missing:
        raise ReportError(f"figures missing under {figures}: {', '.join(missing)}; run `dvc repro figures`")
    manifests = read_manifests(data_raw)
    used = set(profile.tasks.train) | set(profile.tasks.test)
    manifests = [m for m in manifests if m["name"] in used]
    reference = yaml.safe_load((Path(paper) / "reference_results.yml").read_text())
    gen = Path(paper) / "_generated"
    power = read_json(Path(analysis) / "power" / "power.json", "power")
    null = read_json(Path(analysis) / "null" / "null.json", "null_simulation")
    experiments = read_manifests(data_raw, "experiment")
    counts = {m["name"]: m.get("counts", {}) for m in experiments}
    # the experiment datasets the run's stages read (a profile without a section skips its stage)
    ran = {"mirror_test": profile.mirror is not None,
           "policy_reports": "policy" in metrics}  # experiment 4 asks where experiment 3 has an A/B task
    if profile.injection is not None:  # the concept-injection dataset the run chose (its own, or a preset)
        ran[profile.injection.dataset] = True
    experiments = [m for m in experiments if ran.get(m["name"], False)]
    meta = build_numbers(numbers, metrics, profile, profile_name, power, counts, null)
    from report.self_prediction.sentences import dataset_source_text

    meta["text"].update(dataset_source_text(manifests))
    from report.injection.section import INJECTION, write_section
    from report.self_prediction.abstract import abstract_text

    injection = Path(injection if injection is not None else Path(analysis).parent / INJECTION.name)
    mirror = Path(analysis).parent / "mirror"
    # the side experiments' analysis numbers, each read once: their findings enter the abstract where they ran
    side = {name: json.loads(p.read_text()) if (p := folder / "analysis" / "numbers.json").exists() else None
            for name, folder in (("injection", injection), ("mirror", mirror))}
    ran = {"injection": profile.injection is not None, "mirror": profile.mirror is not None}
    meta["text"]["abstract"] = abstract_text(meta, metrics, null, **{
        name: (side[name] or True) if ran[name] else None for name in side})
    # pandoc reads numbers.yml as metadata, where citeproc would take "@tbl-x" for an unknown citation
    crossrefs = sorted(f"{part}.{k}" for part, d in meta.items() if isinstance(d, dict) for k, v in d.items()
                       if isinstance(v, str) and re.search(r"@(tbl|fig|sec)-", v))
    if crossrefs:
        raise ReportError(f"generated text holds a cross-reference, which the manuscript must make instead: "
                          f"{', '.join(crossrefs)}")
    # the concept-injection analysis's coherence rule, which the methods quote (n/a where that stage did not run)
    rule = (side["injection"] or {}).get("coherence_rule", {})
    meta["run"]["coherence_perplexity_factor"] = f"{rule['perplexity_factor']:g}" if rule else "n/a"
    atomic_write_bytes(gen / "numbers.yml", yaml.safe_dump(markdown_safe(meta), sort_keys=True,
                                                           allow_unicode=True).encode())
    for name in index:  # the figures travel with the manuscript, so that it renders from paper/ alone
        atomic_write_bytes(gen / "figures" / f"{name}.png", (Path(figures) / f"{name}.png").read_bytes())
    for name, md in build_tables(analysis, metrics, manifests, reference, experiments).items():
        atomic_write_bytes(gen / "tables" / f"{name}.md", md.encode())
    write_section(gen, injection, Path(paper),
                  temperature=profile.injection.free_text.temperature if profile.injection else None)
    from report.self_prediction.sibling import write_section as write_sibling

    write_sibling(gen, metrics, null)
    from report.self_prediction.policy import write_section as write_policy

    write_policy(gen, metrics)
    from report.mirror.section import write_section as write_mirror

    write_mirror(gen, mirror)
    return index


def run_report(profile: Profile, profile_name: str, analysis: Path = ANALYSIS, figures: Path = FIGURES,
               paper: Path = PAPER, out: Path = REPORT, engine: str = "auto") -> dict[str, Path]:
    index = prepare(profile, profile_name, analysis, figures, paper)
    paths = render(paper, out, engine)
    problems = check_html(paths["html"], list(index))
    if "pdf" in paths:
        problems += pdf_problems(paths["pdf"], paths["html"], paper)
    if problems:
        raise ReportError("the rendered report has problems:\n  " + "\n  ".join(problems))
    return paths

