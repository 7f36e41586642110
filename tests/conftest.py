"""Shared fixtures: a tiny real profile and the two embedded models, loaded once per session."""

import contextlib
import os

import pytest

from reproduce.config import Profile

# JAX's persistent compilation cache: many tests fit the same model to the same simulated data (the same analysis
# on the same tables, a replicate refitted to check a rule), and compiling a model is most of a small fit's time.
# A cached executable is the one that would be compiled again, so results are unchanged (the determinism tests run
# with it). Set before JAX is imported, so every xdist worker shares one folder; an explicit setting wins.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(
    os.environ.get("TMPDIR", "/tmp"), "looking-inward-tests-jax-cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")


# tests that use these fixtures load the embedded models: always the slow lane, whatever else they do
MODEL_FIXTURES = {"models", "run"}
# the tiny end-to-end pipeline of test_experiments.py (10 finetunes, the analysis, figures and report):
# the slowest tier; the module's tests that use none of these run in the lanes their other fixtures say
PIPELINE_FIXTURES = {"trained", "calibration", "changed", "analysed", "drawn", "rendered"}


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may use, at most 4 and at most one per 6 GiB of available
    memory (a worker holds both embedded models and its stage outputs, about 5 GiB at its peak)."""
    from reproduce.hardware import usable_cpus

    try:
        with open("/proc/meminfo") as f:
            avail = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable")) / 2**20
    except (OSError, StopIteration):
        avail = 6.0 * 4
    return max(1, min(usable_cpus(), 4, int(avail // 6)))


def pytest_configure(config):
    """Under pytest-xdist (``-n N --dist loadfile``), pin each worker to its share of this process's CPUs, so
    that the workers' torch and BLAS threads (and the stages they start as subprocesses, which read the
    affinity through ``reproduce.hardware.usable_cpus``) never outnumber the cores."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    n = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    mine = cpus[int(worker.removeprefix("gw")) % len(cpus)::max(1, min(n, len(cpus)))]
    os.sched_setaffinity(0, mine)
    import torch

    torch.set_num_threads(len(mine))


def pytest_collection_modifyitems(items):
    # each file's cost class, the costliest first: the tiny pipeline, other slowest-tier files, the slow lane, the
    # fast lane. Under ``--dist loadfile`` the longest file starts first (it is the run's critical path).
    rank: dict[str, int] = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if PIPELINE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slowest)
        # the slowest tier is part of the slow lane
        if MODEL_FIXTURES & fixtures or item.get_closest_marker("slowest"):
            item.add_marker(pytest.mark.slow)
        r = (0 if PIPELINE_FIXTURES & fixtures else 1 if item.get_closest_marker("slowest")
             else 2 if item.get_closest_marker("slow") else 3)
        rank[item.fspath.strpath] = min(r, rank.get(item.fspath.strpath, 3))
    items.sort(key=lambda item: rank[item.fspath.strpath])  # stable: files and tests keep their order within a rank


@contextlib.contextmanager
def fewer_component_refits(components: tuple[str, ...] = ("tau",), factors: tuple[float, ...] = (2.0,)):
    """The analysis stage's per-component prior refits cut to ``components`` x ``factors`` (default one refit, the
    self-slope scales ``tau`` doubled) instead of every variance component halved and doubled: the tests that run
    the whole stage on small tables read the same tables and sentences from fewer refits, at a fraction of the
    fits."""
    from unittest import mock

    import analysis.self_prediction.fits as fits
    import analysis.self_prediction.hierarchical as M

    with mock.patch.object(fits, "COMPONENT_FACTORS", factors), mock.patch.object(M, "VARIANCE_COMPONENTS", components):
        yield


def simulate_edit(monkeypatch, owner, module: str) -> None:
    """Make ``owner``'s ``code_version`` answer as if the source of ``module`` had been edited, every other
    module's version as it is: a key that holds ``module``'s code must then change. Each call replaces the
    previous one (the real :func:`reproduce.versioning.code_version` is always the base)."""
    from reproduce.versioning import code_version

    monkeypatch.setattr(owner, "code_version", lambda *m: ("edited-" if module in m else "") + code_version(*m))


def tiny_profile(**overrides) -> Profile:
    """A profile small enough to run the real embedded models in seconds."""
    base = dict(
        seed=0, models=["smollm2-135m", "gemma3-270m"], dtype="float32", device="cpu", threads=None,
        batch_size=32, system_prompt=None,
        tasks={"train": ["numbers"], "test": ["animals", "survival_instinct"]},
        items_per_task={"train": 3, "test": 3}, properties=None,
        sampling={"n_samples": 3, "items_per_task": 2, "temperature": 1.0},
    )
    base.update(overrides)
    return Profile.model_validate(base)


def sections_after_trials(root, name: str, parts: dict, model: str, store, profile, analyse, draw, write) -> str:
    """A side experiment's stages after its trials, on a real small run: ``parts`` (part -> table) written as its
    stage writes them under ``root/name/raw`` with a ``run.json`` (this test's CPU, 1 s, ``store``'s shard
    counts for ``model``), then its analysis (``analyse``), figures (``draw``; each one drawn, not empty) and
    manuscript section (``write``). Returns the section's text, its main part and its supplement part."""
    import json

    raw, analysis, figures = (root / name / sub for sub in ("raw", "analysis", "figures"))
    raw.mkdir(parents=True)
    for part, df in parts.items():
        df.to_parquet(raw / f"{part}.parquet", index=False)
    (raw / "run.json").write_text(json.dumps({"hardware": "this test's CPU", "judge": None, "models": {
        model: {"seconds": 1.0, "shards": {"computed": store.computed, "reused": store.reused}}}}))
    analyse(profile, raw=raw, out=analysis, metrics=root / "metrics.json")
    drawn = draw(analysis, figures, raw)
    assert drawn and all((figures / f"{n}.png").stat().st_size > 0 for n in drawn)
    (root / "gen" / "figures").mkdir(parents=True)
    assert write(root / "gen", root / name)
    # the section's main text and its supplement part, as the manuscript shows them; each places the figures its
    # module declares for it (docs/figures.md orders them by these declarations)
    import re
    import sys

    texts = [(root / "gen" / f"{part}.md").read_text() for part in (name, f"{name}_supplement")]
    labels = sys.modules[write.__module__].FIGURE_LABELS
    for text, part in zip(texts, ("main", "supplement")):
        assert re.findall(r"\{#(fig-[a-z0-9-]+)\}", text) == list(labels[part]), part
    return "\n".join(texts)


@pytest.fixture(scope="session")
def models():
    from reproduce.lm.engine import Engine
    from reproduce.lm.models import load

    out = {}
    for spec in ("smollm2-135m", "gemma3-270m"):
        lm = load(spec, dtype="float32", device="cpu")
        out[spec] = (lm, Engine(lm, batch_size=4))
    return out


@contextlib.contextmanager
def declared(stage: str):
    """Run a stage's function and assert that dvc.yaml lists every setting it read (``params:``)."""
    import reproduce.pipeline as pipeline
    from reproduce.config import record_reads

    reads = record_reads()
    yield reads
    assert pipeline.undeclared(stage, reads=reads) == [], f"dvc.yaml stage {stage} reads more than it lists"


def run_all(profile, root):
    """The object_level and meta_untrained stages of ``profile`` into ``root``, and their tables."""
    from reproduce.self_prediction import Plan, run_meta_untrained, run_object_level

    with declared("object_level"):
        plan = Plan(profile)
        run_object_level(plan, root / "object_level", root / "object_samples", root / "work")
    with declared("meta_untrained"):
        run_meta_untrained(plan, root / "object_level", root / "meta.parquet", root / "work")
    return read_run(profile, root)


def read_run(profile, root):
    """The tables :func:`run_all` wrote into ``root``."""
    import pandas as pd

    return {
        "root": root,
        "object": {m: pd.read_parquet(root / "object_level" / f"{m}.parquet") for m in profile.models},
        "samples": {m: pd.read_parquet(root / "object_samples" / f"{m}.parquet") for m in profile.models},
        "meta": pd.read_parquet(root / "meta.parquet"),
    }


@pytest.fixture(scope="session")
def run(tmp_path_factory):
    """The foundation stages on the tiny profile, shared by the pipeline and experiment tests. Under
    pytest-xdist the workers share one run: the first to need it computes it into the run's common temporary
    folder while the others wait, then read it (the tests only read it)."""
    from reproduce.io import exclusive

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "run1"
    with exclusive(shared / "run1.lock"):
        if not (root / "complete").exists():
            run_all(tiny_profile(), root)  # resumable: a worker that died half-way left shards to reuse
            (root / "complete").touch()
    return read_run(tiny_profile(), root)


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
