"""How numbers are written in the manuscript (one formatter per kind), and the report's paths."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any


import pandas as pd

from reproduce.config import REPO_ROOT
from reproduce.errors import ProjectError
from reproduce.io import atomic_write_bytes


PAPER = REPO_ROOT / "paper"


ANALYSIS = REPO_ROOT / "data" / "analysis"


FIGURES = REPO_ROOT / "data" / "figures"


REPORT = REPO_ROOT / "data" / "report"


DATA_RAW = REPO_ROOT / "data_raw"


FILTER = "filters/quarto-compat.lua"


MINUS = "\u2212"


class ReportError(ProjectError, RuntimeError):
    """The report cannot be built or failed its checks; the message says what to run or fix."""


def known(value) -> bool:
    """Whether a number is there: not None, not NaN (what :func:`fmt` prints as 'n/a')."""
    return not (value is None or (isinstance(value, float) and math.isnan(value)))


def fmt(value: float, digits: int = 1) -> str:
    """A number as the manuscript prints it: fixed decimals, a true minus sign, no '-0.0'."""
    if not known(value):
        return "n/a"
    s = f"{value:.{digits}f}"
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", MINUS)


def signed(value: float, digits: int = 1) -> str:
    """A number with its sign always shown: '+' or a true minus sign (as :func:`fmt`, no '-0.0')."""
    s = fmt(value, digits)
    return s if s.startswith(MINUS) or s == "n/a" else "+" + s


def fmt_prob(p: float) -> str:
    """A posterior probability: two decimals, with the ends stated as bounds (never '1.00'); 'n/a' when the
    analysis had nothing to compute it from (a missing value)."""
    from analysis.verdicts import probability_text

    return "n/a" if p is None or p != p else probability_text(p)


def count_text(v) -> str:
    return f"{int(round(v)):,}"


def format_key(key: str, value: Any) -> str:
    """Format one entry of ``numbers.json`` by the convention of its name: probabilities (``p_positive``,
    ``p_value``, ``model_p_*``) as probabilities, counts (``_k``, ``_n``, ``n_*``, ``evaluated``, ``changed``) as integers,
    shares (``_share``/``_low``/``_high`` of a share) as percentages, everything else (already percentage points)
    with one decimal (:func:`key_scale`)."""
    if key.endswith(PROBABILITIES):
        return fmt_prob(value)
    how = key_scale(key)
    if how is None:
        return count_text(value)
    scale, digits = how
    bound = fmt_bound if key.endswith(("_low", "_high")) else fmt  # a nonzero bound never prints as 0.0
    return bound(None if value is None else scale * value, digits)


#: the ends of the names of ``numbers.json``'s probabilities
PROBABILITIES = ("p_positive", "p_value", "p_every_direction")


def key_scale(key: str) -> tuple[float, int] | None:
    """How :func:`format_key` prints a number quantity of ``numbers.json``: (scale, decimals); ``None`` for
    probabilities and counts."""
    if key.endswith(PROBABILITIES):
        return None
    if key.startswith("calibration_log_score_") or "_logit_" in key:  # nats per sample; log-odds
        return 1.0, 2
    if key.startswith("behaviour_model_p_"):
        return 100.0, 1
    if (key.endswith(("_k", "_n", "_n_informative")) or key.startswith("n_")
            or key in ("behaviour_evaluated", "behaviour_changed", "behaviour_comparable")):
        return None
    if key.startswith(("behaviour_share_", "behaviour_changed_share")):
        return 100.0, 1
    return 1.0, 1


#: the names an interval's estimate goes by beside its ``_low`` and ``_high`` in ``numbers.json``
CENTRES = ("_mean", "_estimate", "_mad", "_difference", "")


def format_numbers(numbers: dict, edges=lambda key: ()) -> dict[str, str]:
    """Every entry of ``numbers.json`` as :func:`format_key` prints it, then every interval (``<stem>_low``,
    ``<stem>_high`` and its estimate, :data:`CENTRES`) with one number of decimals for all three, as many as its
    most demanding bound needs (:func:`bound_digits`, against the ``edges(key)`` of its quantity: the ends of a
    region of practical equivalence, say)."""
    n = {k: format_key(k, v) for k, v in numbers.items()}
    for low_key in numbers:
        if not low_key.endswith("_low"):
            continue
        stem = low_key[:-4]
        high_key, how = stem + "_high", key_scale(low_key)
        if high_key not in numbers or how is None:
            continue
        scale, digits = how
        lo, hi = numbers[low_key], numbers[high_key]
        if not (known(lo) and known(hi)):
            continue
        e = tuple(edges(stem))
        d = max(bound_digits(scale * lo, digits, e), bound_digits(scale * hi, digits, e))
        n[low_key], n[high_key] = fmt(scale * lo, d), fmt(scale * hi, d)
        centre = next((stem + c for c in CENTRES if stem + c in numbers and stem + c != low_key), None)
        if centre is not None and known(numbers[centre]) and isinstance(numbers[centre], (int, float)):
            n[centre] = fmt(scale * numbers[centre], d)
    return n


def fmt_bound(value: float, digits: int = 1) -> str:
    """An interval bound as :func:`fmt` prints it, with more decimals (up to three more) where a bound other
    than zero would print as 0.0: an interval that excludes zero must not read as touching it."""
    return fmt(value, bound_digits(value, digits))


def bound_digits(value: float, digits: int = 1, edges: tuple[float, ...] = ()) -> int:
    """The decimals a bound needs, from ``digits`` up to three more: enough that a bound other than zero does not
    print as zero, and that a bound other than an ``edge`` (a region of practical equivalence's ends, say) does not
    print as that edge, so the side it lies on shows."""
    if not known(value):
        return digits
    for d in range(digits, digits + 4):
        shown = float(f"{value:.{d}f}")
        if (value == 0 or shown != 0) and all(value == e or shown != e for e in edges):
            return d
    return digits  # beyond three more decimals: zero (or the edge) as printed


def ci_text(estimate: float, low: float, high: float, scale: float = 1.0, digits: int = 1,
            edges: tuple[float, ...] = ()) -> str:
    """An estimate with its interval, ``"4.2 [3.0, 5.8]"``; ``scale=100`` turns shares into percentages. One number
    of decimals for the whole row: ``digits``, or more where a bound needs them (:func:`bound_digits`: a bound that
    is not zero never prints as zero, nor one that is not an edge in ``edges``, on the printed scale, as that
    edge)."""
    def scaled(v):  # a missing value (a cross-check that could not be computed) stays missing: fmt says n/a
        return None if v is None else scale * v

    d = max(bound_digits(scaled(low), digits, edges), bound_digits(scaled(high), digits, edges))
    return f"{fmt(scaled(estimate), d)} [{fmt(scaled(low), d)}, {fmt(scaled(high), d)}]"


def interval_text(d: dict, key: str = "mean", scale: float = 1.0, edges: tuple[float, ...] = ()) -> str:
    """:func:`ci_text` of a summary dict with ``key``, ``low`` and ``high``."""
    return ci_text(d[key], d["low"], d["high"], scale, edges=edges)


def fig_id(name: str) -> str:
    """The manuscript's label of a figure of :data:`figures.self_prediction.plots.FIGURES` (``self_vs_cross`` ->
    ``fig-self-vs-cross``)."""
    return "fig-" + name.replace("_", "-")


def run_seconds(models: dict) -> str:
    """Each model's wall time in a stage's ``run.json``, and, where the run read finished shards of an earlier
    run instead of computing them, how many (the time then does not cover their computation)."""
    parts, notes = [], False
    for m, v in models.items():
        sh = v.get("shards", {})
        reused, total = sh.get("reused", 0), sh.get("reused", 0) + sh.get("computed", 0)
        note = "" if not reused else (
            f", reading {'all' if reused == total else f'{reused} of'} {total} parts of its results computed by an "
            "earlier run")
        notes = notes or bool(note)
        parts.append(f"{m} {v['seconds']:.0f} s{note}")
    return ("; " if notes else ", ").join(parts)


def gate_sentence(diagnostics: list[dict]) -> str:
    """The sentence that every fit of a stage passed the gate, for its ``diagnostics`` list (``{"model", "fit",
    "diagnostics"}``), naming the fits that passed only at the longer sampling, or only at the higher target
    acceptance, of :func:`analysis.self_prediction.hierarchical.sample_gated`."""
    def fits(key: str) -> list[str]:  # the fits whose diagnostics record ``key``
        return [f"{d['fit']} ({d['model']})" if d["model"] != "all" else d["fit"]
                for d in diagnostics if key in d["diagnostics"]]

    again = ""
    for key, how in (("refit", "at a sampling with twice the draws, after missing it at a shorter one"),
                     ("diverged", "at a higher target acceptance, after divergent transitions at a lower one")):
        if named := fits(key):
            again += f"; {len(named)} of them {how}: {', '.join(named)}"
    n = len(diagnostics)
    return f"Every fit passed the convergence gate ({n} fit{'' if n == 1 else 's'}{again})."


def write_parts(gen: Path, name: str, main: str, supplement: str | None = None) -> None:
    """Write a family's generated section in its two parts: ``gen/<name>.md``, which the main text includes, and
    ``gen/<name>_supplement.md``, which the supplement includes (the same text where ``supplement`` is None: the
    sentence that says the family's stages did not run)."""
    atomic_write_bytes(Path(gen) / f"{name}.md", main.encode())
    atomic_write_bytes(Path(gen) / f"{name}_supplement.md", (main if supplement is None else supplement).encode())


def read_json(path: Path, what: str) -> dict:
    if not path.exists():
        raise ReportError(f"{path} is missing: run the {what} stage first (`dvc repro {what}`)")
    return json.loads(path.read_text())


#: the class of the span that holds text a model wrote, quoted verbatim (:func:`model_text`)
MODEL_TEXT_CLASS = "model-text"
_MD_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()<>#+\-.!@?~^=$%&'\";:,/])")


def model_text(s: str) -> str:
    """Text a model wrote, for a markdown table cell: every markdown-active character backslash-escaped (so a
    reply that contains ``@fig-x``, ``{{< meta >}}``, ``[@key]``, ``*`` or ``<b>`` is printed as written, never
    read as markup), on one line, in a ``[...]{.model-text}`` span that :func:`report.checks.check_html`
    leaves out of its search for unresolved references (a model may well write "??"). ``|`` is left to the
    table writer."""
    one_line = " ".join(str(s).split())
    if not one_line:
        return ""
    escaped = _MD_PUNCTUATION.sub(lambda m: "\\" + m.group(1), one_line)
    return f"[{escaped}]{{.{MODEL_TEXT_CLASS}}}"


def md_table(df: pd.DataFrame, caption: str, label: str) -> str:
    """A pipe table with a Quarto caption and label; cells are strings already. Column widths are relative
    to the longest word and cell of each column (the dashes of the separator line say so to pandoc, which
    then wraps cells to the page width in HTML and PDF alike)."""
    cols = list(df.columns)
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    weight = [max([len(w) for w in str(c).split()] + [len(str(v)) ** 0.5 * 3 + max(map(len, str(v).split() or [""]))
                                                     for v in df[c]]) for c in cols]
    dashes = [max(3, round(100 * w / sum(weight))) for w in weight]
    lines = ["| " + " | ".join(esc(c) for c in cols) + " |", "|" + "|".join("-" * d for d in dashes) + "|"]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + f"\n\n: {caption} {{#{label}}}\n"


def percent_interval(d: dict) -> str:
    """A probability (or difference of probabilities) with its interval, in percent."""
    return f"{fmt(100 * d['mean'])}% [{fmt(100 * d['low'])}, {fmt(100 * d['high'])}]"


def points_interval(d: dict) -> str:
    return f"{signed(100 * d['mean'])} points [{signed(100 * d['low'])}, {signed(100 * d['high'])}]"


def kappa_text(k: float | None, undefined: str = "undefined") -> str:
    """Cohen's kappa to two decimals (a rounding to zero printed as 0.00, not -0.00); ``undefined`` for None."""
    return undefined if k is None else fmt(k, 2)


def join_words(words: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def markdown_safe(meta):
    """Metadata values are read as Markdown (by Quarto and by pandoc's ``--metadata-file``): a value that
    starts with ``>`` (``"> 0.99"``) would become a block quote and lose its sign, so it is escaped."""
    if isinstance(meta, dict):
        return {k: markdown_safe(v) for k, v in meta.items()}
    if isinstance(meta, str) and meta.startswith((">", "<")):
        return "\\" + meta
    return meta


def labelled_agreement_text(a: dict) -> str:
    """A grader's agreement with labelled cases (``n``, ``agree``, ``false_positives``, ``false_negatives``):
    "36 of 40 (2 false positives, 2 false negatives)"."""
    errors = [f"{a[k]} false {k.split('_')[1][:-1]}{'' if a[k] == 1 else 's'}"
              for k in ("false_positives", "false_negatives") if a[k]]
    return f"{a['agree']} of {a['n']}" + (f" ({', '.join(errors)})" if errors else "")
