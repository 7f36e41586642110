"""Shared fixtures: a tiny real profile and the two embedded models, loaded once per session."""

import contextlib

import pytest

from reproduce.config import Profile


# tests that use these fixtures load the embedded models: always the slow lane, whatever else they do
MODEL_FIXTURES = {"models", "run"}
# the tiny end-to-end pipeline of test_experiments.py (10 finetunes, the analysis, figures and report):
# the slowest tier; the module's tests that use none of these run in the lanes their other fixtures say
PIPELINE_FIXTURES = {"trained", "calibration", "changed", "analysed", "drawn", "rendered"}


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if PIPELINE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slowest)
        # the slowest tier is part of the slow lane
        if MODEL_FIXTURES & fixtures or item.get_closest_marker("slowest"):
            item.add_marker(pytest.mark.slow)


def tiny_profile(**overrides) -> Profile:
    """A profile small enough to run the real embedded models in seconds."""
    base = dict(
        seed=0, models=["smollm2-135m", "gemma3-270m"], dtype="float32", device="cpu", threads=None,
        batch_size=4, system_prompt=None,
        tasks={"train": ["numbers"], "test": ["animals", "survival_instinct"]},
        items_per_task={"train": 3, "test": 3}, properties=None,
        sampling={"n_samples": 3, "items_per_task": 2, "temperature": 1.0},
    )
    base.update(overrides)
    return Profile.model_validate(base)


@pytest.fixture(scope="session")
def models():
    from reproduce.engine import Engine
    from reproduce.models import load

    out = {}
    for spec in ("smollm2-135m", "gemma3-270m"):
        lm = load(spec, dtype="float32", device="cpu")
        out[spec] = (lm, Engine(lm, batch_size=4))
    return out


@contextlib.contextmanager
def declared(stage: str):
    """Run a stage's function and assert that dvc.yaml lists every setting it read (``params:``)."""
    from reproduce import pipeline
    from reproduce.config import record_reads

    reads = record_reads()
    yield reads
    assert pipeline.undeclared(stage, reads=reads) == [], f"dvc.yaml stage {stage} reads more than it lists"


def run_all(profile, root):
    """The object_level and meta_untrained stages of ``profile`` into ``root``, and their tables."""
    import pandas as pd

    from reproduce.stages import Plan, run_meta_untrained, run_object_level

    with declared("object_level"):
        plan = Plan(profile)
        run_object_level(plan, root / "object_level", root / "object_samples", root / "work")
    with declared("meta_untrained"):
        run_meta_untrained(plan, root / "object_level", root / "meta.parquet", root / "work")
    return {
        "root": root,
        "object": {m: pd.read_parquet(root / "object_level" / f"{m}.parquet") for m in profile.models},
        "samples": {m: pd.read_parquet(root / "object_samples" / f"{m}.parquet") for m in profile.models},
        "meta": pd.read_parquet(root / "meta.parquet"),
    }


@pytest.fixture(scope="session")
def run(tmp_path_factory):
    """The foundation stages on the tiny profile, shared by the pipeline and experiment tests."""
    return run_all(tiny_profile(), tmp_path_factory.mktemp("run1"))


def data_uri_figure_bytes(html: str, name: str) -> bytes:
    """The embedded PNG bytes of the figure ``name`` in a rendered report."""
    import base64
    import re

    from report.checks import _figure_segment
    from report.formatting import fig_id

    segment = _figure_segment(html, fig_id(name)) or ""
    m = re.search(r'src="data:image/png;base64,([^"]+)"', segment)
    assert m, f"no embedded PNG for {fig_id(name)}"
    return base64.b64decode(m.group(1))
