"""dvc.yaml declares what each stage uses: the modules its command imports, and the settings it reads."""

import inspect
from pathlib import Path

import pytest

import reproduce.pipeline as pipeline
from reproduce.config import DEFAULT_PARAMS, read_params

STAGES = pipeline.read_stages()


@pytest.mark.slow
@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_module_a_stage_imports_is_a_declared_dependency(stage):
    modules = pipeline.stage_modules(stage)
    assert modules, stage
    assert pipeline.undeclared(stage, modules) == []


@pytest.mark.slow
def test_code_deps_are_exactly_the_imported_modules():
    """No stage lists a module it does not import (`looking-inward dvc-deps` rewrites the lists)."""
    assert pipeline.sync_code_deps(write=False) == []


def test_model_stages_do_not_depend_on_later_stages_code():
    """A change to finetuning or the analysis re-runs neither the object level nor the meta level."""
    for stage in ("object_level", "meta_untrained"):
        deps = pipeline.declared(stage)[0]
        assert "reproduce/lm/finetune.py" not in deps and "reproduce/self_prediction/finetuning.py" not in deps
        assert not any(d.startswith(("analysis", "figures", "report")) for d in deps)
        assert "finetune" not in pipeline.declared(stage)[1] and "analysis" not in pipeline.declared(stage)[1]


@pytest.mark.slow
def test_declared_settings_exist_in_params_yaml():
    """DVC fails on a listed key that params.yaml lacks; every listed key is a top-level setting."""
    keys = set(read_params(DEFAULT_PARAMS)[1])
    for stage in STAGES:
        params = pipeline.declared(stage)[1]
        if params is not None:
            assert set(params) <= keys, (stage, set(params) - keys)


def test_an_undeclared_setting_or_module_is_named(monkeypatch, capsys):
    reads = {"seed", "analysis", "finetune"}
    modules = {"analysis/self_prediction/stage.py", "reproduce/lm/finetune.py"}
    assert pipeline.undeclared("analysis", modules, reads) == ["module reproduce/lm/finetune.py", "setting finetune"]
    monkeypatch.setattr(pipeline, "loaded_modules", lambda root=None: modules)
    pipeline.check_stage("analysis", reads)
    assert "does not declare what it used: module reproduce/lm/finetune.py, setting finetune" in capsys.readouterr().err
    monkeypatch.setenv(pipeline.STRICT_ENV, "1")
    with pytest.raises(pipeline.UndeclaredDependency, match="setting finetune"):
        pipeline.check_stage("analysis", reads)
    pipeline.check_stage("not-a-dvc-stage", reads)  # helpers outside dvc.yaml are not checked


def _dvc(cwd):
    """A function running dvc in ``cwd`` that returns its stdout and fails the test with its stderr."""
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("dvc")
    dvc = [str(exe)] if exe.exists() else ["dvc"]

    def run(*args):
        out = subprocess.run(dvc + list(args), cwd=cwd, capture_output=True, text=True)
        assert out.returncode == 0, f"dvc {' '.join(args)}: {out.stderr[-1500:]}"
        return out.stdout

    return run


def _project_copy(dest, stand_in: Path | None = None):
    """The files dvc.yaml names (code, params, profiles, paper, datasets) in a new DVC project at ``dest``,
    with every stage's outputs as placeholders, committed to dvc.lock as if the pipeline had run.

    ``stand_in``: every stage's command is replaced by one that writes the placeholders again and appends the
    stage's name to that file, and the project is a git repository with everything committed (what
    ``dvc exp run`` needs)."""
    import shutil
    import subprocess
    import sys

    import yaml

    from reproduce.config import REPO_ROOT

    for name in ("reproduce", "analysis", "figures", "report", "looking_inward", "paper", "data_raw", "profiles"):
        shutil.copytree(REPO_ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "_generated",
                                                                                    "_output"))
    for name in ("dvc.yaml", "params.yaml", "CITATION.cff"):
        shutil.copy(REPO_ROOT / name, dest / name)
    for spec in STAGES.values():
        for out in spec.get("outs", []) + spec.get("metrics", []) + spec.get("plots", []) + spec.get("deps", []):
            path = dest / (out if isinstance(out, str) else next(iter(out)))
            if not path.exists():
                _placeholder(path)
    run = _dvc(dest)
    if stand_in is None:
        run("init", "--no-scm", "-q")
        run("commit", "-f")
        return run
    (dest / "stand_in.py").write_text(STAND_IN)
    spec = yaml.safe_load((dest / "dvc.yaml").read_text())
    for name, stage in spec["stages"].items():
        stage["cmd"] = f"{sys.executable} stand_in.py {name} {stand_in}"
    (dest / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    git = lambda *a: subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *a], cwd=dest,  # noqa: E731
                                    check=True, capture_output=True)
    git("init", "-q")
    run("init", "-q")
    run("commit", "-f")
    git("add", "-A")
    git("commit", "-qm", "a finished run")
    return run


def _placeholder(path):
    """A stand-in for a stage output: a folder holding one file for a folder output, a file otherwise."""
    if path.suffix:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    else:
        path.mkdir(parents=True, exist_ok=True)
        (path / "placeholder").write_text("x")


# a stage command for tests: the stage's outputs as placeholders again, and its name appended to a log
STAND_IN = """import sys
from pathlib import Path

import yaml

""" + inspect.getsource(_placeholder) + """

stage, log = sys.argv[1], Path(sys.argv[2])
spec = yaml.safe_load(Path("dvc.yaml").read_text())["stages"][stage]
for out in spec.get("outs", []) + spec.get("metrics", []) + spec.get("plots", []):
    _placeholder(Path(out if isinstance(out, str) else next(iter(out))))
with log.open("a") as f:
    f.write(stage + "\\n")
"""


def _stale(run) -> set[str]:
    import json

    return set(json.loads(run("status", "--json")))


@pytest.mark.slow
def test_a_changed_setting_makes_stale_only_the_stages_that_read_it(tmp_path):
    """`dvc exp run -S analysis.bootstrap=500` / an edit of params.yaml: the analysis stages and the report
    re-run; no model stage does. A finetuning knob re-runs finetuning and what reads it, nothing before it."""
    import yaml

    run = _project_copy(tmp_path)
    assert _stale(run) == set()
    params = tmp_path / "params.yaml"
    original = params.read_text()

    raw = yaml.safe_load(original)
    raw["analysis"]["bootstrap"] = 500
    params.write_text(yaml.safe_dump(raw))
    # the report and the behaviour cards quote the whole configuration, so they follow every setting
    assert _stale(run) == {"check", "analysis", "power", "null_simulation", "mirror_analysis", "injection_analysis",
                           "report", "release"}

    raw = yaml.safe_load(original)
    raw["finetune"]["lora_rank"] = 32
    params.write_text(yaml.safe_dump(raw))
    assert _stale(run) == {"check", "finetune_self", "object_level_trained", "finetune_cross", "meta_trained",
                           "calibration", "behaviour_change", "policy_reports", "report", "release"}

    params.write_text(original)
    cli = tmp_path / "looking_inward" / "cli.py"
    cli.write_text(cli.read_text() + "\n# edit\n")
    assert _stale(run) == set()  # the command line is no stage's dependency
    finetune = tmp_path / "reproduce" / "lm" / "finetune.py"
    finetune.write_text(finetune.read_text() + "\n# edit\n")
    stale = _stale(run)
    assert {"finetune_self", "finetune_cross", "behaviour_change"} <= stale
    assert not stale & {"object_level", "meta_untrained", "concept_injection", "mirror", "analysis"}


FAMILY_STAGES = {
    "self_prediction": {"datasets", "object_level", "meta_untrained", "finetune_self", "object_level_trained",
                        "finetune_cross", "meta_trained", "calibration", "behaviour_change", "policy_reports",
                        "analysis", "power", "null_simulation", "figures", "release"},
    "injection": {"injection_datasets", "concept_injection", "injection_analysis", "injection_figures"},
    "mirror": {"mirror_datasets", "mirror", "mirror_analysis", "mirror_figures"},
}
#: the stages every family shares: the settings' check, the citation record and the manuscript
COMMON_STAGES = {"check", "citation", "report"}
#: one module of each family in each phase
FAMILY_MODULES = {
    "self_prediction": ["reproduce/self_prediction/tasks.py", "reproduce/self_prediction/meta_level.py",
                        "analysis/self_prediction/tidy.py", "figures/self_prediction/plots.py",
                        "report/self_prediction/sentences.py"],
    "injection": ["reproduce/injection/content.py", "reproduce/injection/experiment.py",
                  "analysis/injection/detection.py", "figures/injection/plots.py", "report/injection/section.py"],
    "mirror": ["reproduce/mirror/content.py", "reproduce/mirror/corrupt.py", "analysis/mirror/design.py",
               "figures/mirror/plots.py", "report/mirror/section.py"],
}


def test_the_families_stages_partition_dvc_yaml():
    assert set().union(*FAMILY_STAGES.values()) | COMMON_STAGES == set(STAGES)


@pytest.mark.slow
def test_an_edit_to_one_familys_module_leaves_every_other_familys_stages_up_to_date(tmp_path):
    """Each family's stages depend on its own modules and the shared layer only: editing a mirror-only module
    makes no Looking Inward or concept-injection stage stale, and every way round."""
    import yaml

    run = _project_copy(tmp_path)
    assert _stale(run) == set()
    stages = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]
    for family, modules in FAMILY_MODULES.items():
        for rel in modules:  # each module is a dependency of one of its family's stages (so its edit is seen)
            assert any(rel in stages[st].get("deps", []) for st in FAMILY_STAGES[family] | COMMON_STAGES), rel
        # every module of the family edited at once (one `dvc status` per family): no other family's stage is stale
        originals = {rel: (tmp_path / rel).read_text() for rel in modules}
        for rel, text in originals.items():
            (tmp_path / rel).write_text(text + "\n# edit\n")
        stale = _stale(run)
        for rel, text in originals.items():
            (tmp_path / rel).write_text(text)
        assert stale, family  # the edits are seen
        assert stale <= FAMILY_STAGES[family] | COMMON_STAGES, (family, stale - FAMILY_STAGES[family])
    assert _stale(run) == set()


@pytest.mark.slow
def test_a_misspelt_setting_stops_dvc_repro_before_any_output_is_removed(tmp_path):
    """`dvc repro object_level` with `items_per_task` misspelt: the check stage (first in the DAG) fails with the
    package's own line, and object_level's outputs are still there."""
    import subprocess
    import sys
    from pathlib import Path

    _project_copy(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(params.read_text().replace("items_per_task:", "items_per_tsk:"))
    outputs = [tmp_path / "data" / "object_level" / "placeholder", tmp_path / "data" / "object_samples" / "placeholder"]
    assert all(p.exists() for p in outputs)
    import os

    exe = Path(sys.executable).with_name("dvc")
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    out = subprocess.run([str(exe) if exe.exists() else "dvc", "repro", "object_level"], cwd=tmp_path,
                         capture_output=True, text=True, env=env)
    assert out.returncode != 0
    assert "did you mean items_per_task?" in out.stderr + out.stdout
    assert all(p.exists() for p in outputs)  # nothing removed


@pytest.mark.slowest
def test_dvc_exp_run_with_a_changed_setting_runs_only_the_stages_that_read_it(tmp_path):
    """The literal `dvc exp run -S finetune.lora_rank=32` (stage commands stood in for): finetuning and what
    follows run, nothing before it; `dvc exp show` lists the experiment with its setting and `dvc params diff`
    names the one key."""
    import json

    import yaml

    log = tmp_path / "ran.log"
    run = _project_copy(tmp_path / "project", stand_in=log)
    run("exp", "run", "-S", "finetune.lora_rank=32", "-n", "rank32")
    ran = log.read_text().split()
    # the check reads every setting (and writes the same output again, so nothing follows from it alone)
    assert set(ran) == {"check", "finetune_self", "object_level_trained", "finetune_cross", "meta_trained",
                        "calibration", "behaviour_change", "policy_reports", "report", "release"}
    assert len(ran) == len(set(ran))
    assert ran.index("finetune_self") < ran.index("object_level_trained") < ran.index("meta_trained")
    assert yaml.safe_load((tmp_path / "project" / "params.yaml").read_text())["finetune"]["lora_rank"] == 32
    assert json.loads(run("params", "diff", "--json")) == {
        "params.yaml": {"finetune.lora_rank": {"old": 16, "new": 32, "diff": 16}}}
    shown = json.loads(run("exp", "show", "--json"))
    exps = [e for row in shown for e in (row.get("experiments") or [])]
    names = [r.get("name") for e in exps for r in (e.get("revs") or [])]
    assert "rank32" in names, shown


@pytest.mark.slow
def test_a_finished_run_travels_through_a_remote_without_recomputation(tmp_path):
    """`dvc push` a run, clone it (git's files only: code, params, dvc.lock, datasets, the committed metrics),
    `dvc pull`: every stage is up to date and the report is there, with nothing recomputed."""
    import shutil

    src, clone, remote = tmp_path / "run", tmp_path / "clone", tmp_path / "remote"
    src.mkdir()
    run = _project_copy(src)
    (src / "data" / "report" / "placeholder").write_text("the rendered report")
    run("commit", "-f")
    run("remote", "add", "-d", "store", str(remote))
    run("push")
    # what git carries: everything but the DVC-cached outputs and DVC's cache
    cached = {src / o for spec in STAGES.values() for o in spec.get("outs", []) + spec.get("plots", [])
              if isinstance(o, str)}
    skip = cached | {src / ".dvc" / "cache", src / ".dvc" / "tmp"}
    shutil.copytree(src, clone, ignore=lambda d, names: [n for n in names if Path(d) / n in skip])
    assert not (clone / "data" / "report").exists()
    pull = _dvc(clone)
    pull("pull")
    assert (clone / "data" / "report" / "placeholder").read_text() == "the rendered report"
    assert _stale(pull) == set()


def test_dvc_yaml_declares_every_dataset_as_an_artifact_in_step_with_its_manifest():
    import yaml

    from reproduce.cards import sync_artifacts
    from reproduce.self_prediction.release import BEHAVIOUR
    from reproduce.citation import read_manifests
    from reproduce.config import REPO_ROOT

    manifests = read_manifests(REPO_ROOT / "data_raw", "all")
    assert sync_artifacts(manifests, BEHAVIOUR, write=False), "run `looking-inward artifacts`"
    artifacts = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["artifacts"]
    for m in manifests:
        a = artifacts["dataset-" + m["name"].replace("_", "-")]
        assert a["path"] == f"data_raw/{m['name']}" and a["type"] == "dataset"
        assert a["meta"]["version"] == m["version"] and a["meta"]["release_sha256"] == m["release_sha256"]
    assert set(BEHAVIOUR) <= set(artifacts)


@pytest.mark.slow
def test_a_tagged_dataset_version_is_fetched_by_name(tmp_path):
    """`looking-inward artifacts --tag` registers the versions; `dvc artifacts get` then finds a dataset."""
    import shutil
    import subprocess

    from reproduce.cards import tag_datasets
    from reproduce.citation import read_manifests
    from reproduce.config import REPO_ROOT

    repo = tmp_path / "repo"
    (repo / "data_raw").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "dvc.yaml", repo / "dvc.yaml")
    shutil.copytree(REPO_ROOT / "data_raw" / "animals", repo / "data_raw" / "animals")
    git = lambda *a: subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *a], cwd=repo,  # noqa: E731
                                    capture_output=True, text=True, check=True)
    git("init", "-q")
    _dvc(repo)("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "datasets")
    manifests = read_manifests(repo / "data_raw", "all")
    assert tag_datasets(manifests, repo) == [f"dataset-animals@v{manifests[0]['version']}"]
    assert tag_datasets(manifests, repo) == []  # once
    _dvc(tmp_path)("artifacts", "get", str(repo), "dataset-animals", "-o", str(tmp_path / "got"))
    assert (tmp_path / "got" / "items.jsonl").read_bytes() == (REPO_ROOT / "data_raw/animals/items.jsonl").read_bytes()


@pytest.mark.slow
def test_behaviour_cards_name_models_profile_dtype_hardware_and_hashes(tmp_path):
    import hashlib
    import json

    import pandas as pd

    from reproduce.self_prediction.release import BEHAVIOUR, write_cards
    from reproduce.config import PROFILES_DIR

    data = tmp_path / "data"
    frame = lambda col, names: pd.DataFrame({col: names, "dtype": "float32", "x": range(len(names))})  # noqa: E731
    for d in ("object_level", "object_samples", "object_level_trained"):
        (data / d).mkdir(parents=True)
        frame("model", ["m1", "m1", "m1"]).to_parquet(data / d / "m1.parquet")
        frame("model", ["m2"]).to_parquet(data / d / "m2.parquet")
    for f in ("meta_untrained", "meta_trained"):
        frame("predictor", ["m1", "m2"]).to_parquet(data / f"{f}.parquet")
    (data / "timings.json").write_text(json.dumps({"stages": {"object-level": {
        "hardware": "CPU test [avx2], kernels AVX2, 2 threads", "finished": "2026-11-23T00:00:00+00:00"}}}))
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "smoke.yaml").write_text((PROFILES_DIR / "smoke.yaml").read_text())
    params = tmp_path / "params.yaml"
    params.write_text((PROFILES_DIR / "smoke.yaml").read_text().replace("batch_size: 16", "batch_size: 8"))

    written = write_cards(tmp_path, tmp_path / "release", params)
    assert set(written) == set(BEHAVIOUR)
    card = json.loads(written["behaviour-object-level"].read_text())
    assert card["rows"] == 4 and card["models"] == ["m1", "m2"] and card["dtype"] == ["float32"]
    assert card["profile"] == "smoke" and card["edited_settings"] == ["batch_size"]
    assert card["hardware"].startswith("CPU test") and len(card["code"]["stage_modules_sha256"]) == 64
    files = {f["file"]: f for f in card["files"]}
    raw = (data / "object_level" / "m1.parquet").read_bytes()
    assert files["data/object_level/m1.parquet"] == {"file": "data/object_level/m1.parquet", "rows": 3,
                                                     "sha256": hashlib.sha256(raw).hexdigest()}
    # the artifact's hash changes with any file's bytes
    before = card["sha256"]
    frame("model", ["m2", "m2"]).to_parquet(data / "object_level" / "m2.parquet")
    assert json.loads(write_cards(tmp_path, tmp_path / "release", params)["behaviour-object-level"]
                      .read_text())["sha256"] != before
    assert "behaviour-meta-trained" in (tmp_path / "release" / "README.md").read_text()


def test_every_figure_is_a_dvc_plot():
    import yaml

    from figures.injection.plots import FIGURES as INJECTION
    from figures.mirror.plots import FIGURES as MIRROR
    from figures.self_prediction.plots import FIGURES
    from reproduce.config import REPO_ROOT

    plots = set(yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["plots"])
    assert plots == ({f"data/figures/{n}.png" for n in FIGURES} | {f"data/injection/figures/{n}.png" for n in INJECTION}
                     | {f"data/mirror/figures/{n}.png" for n in MIRROR})


def test_the_report_stage_declares_every_stage_folder_its_sections_read(tmp_path, monkeypatch):
    """The concept-injection and mirror sections quote their run.json (hardware, times): a rerun of those stages
    must make the report stale. Every file the section writers open under a stage folder lies under a
    declared dependency of the report stage."""
    from pathlib import Path

    import yaml

    from reproduce.config import REPO_ROOT
    import report.injection.section as injection
    import report.mirror.section as mirror

    deps = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]["report"]["deps"]
    opened = []
    for method in ("read_text", "read_bytes"):
        real = getattr(Path, method)
        monkeypatch.setattr(Path, method, lambda self, *a, _real=real, **k: (opened.append(self), _real(self, *a, **k))[1])
    for module, name in ((injection, "injection"), (mirror, "mirror")):
        root = tmp_path / name  # every file the writer may read, empty or minimal: it fails after opening them
        for sub in ("raw", "analysis", "figures"):
            (root / sub).mkdir(parents=True)
        for f in ("analysis/numbers.json", "figures/index.json", "raw/run.json"):
            (root / f).write_text("{}")
        try:
            module.write_section(tmp_path / "gen", root)
        except Exception:
            pass
    read = {(p.relative_to(tmp_path).parts[0], p.relative_to(tmp_path).parts[1]) for p in opened
            if p.is_relative_to(tmp_path) and p.relative_to(tmp_path).parts[0] in ("injection", "mirror")}
    assert {("injection", "raw"), ("mirror", "raw")} <= read
    for name, sub in read:
        assert f"data/{name}/{sub}" in deps, (name, sub)


def test_no_layer_imports_a_later_one():
    """reproduce -> analysis -> figures -> report; the command line (looking_inward/) composes them."""
    from reproduce.config import CODE_ROOT

    order = ["reproduce", "analysis", "figures", "report"]
    upward = {}
    for i, layer in enumerate(order):
        for f in sorted((CODE_ROOT / layer).rglob("*.py")):
            bad = {m for m in pipeline._imports(f, CODE_ROOT) if m.split(".")[0] in order[i + 1:] + ["looking_inward"]}
            if bad:
                upward[f.relative_to(CODE_ROOT).as_posix()] = sorted(bad)
    assert upward == {}


def test_modules_hashed_into_a_fingerprint_by_name_are_dependencies():
    """A module named in a code_version call is imported at run time and hashed into a fingerprint: it is a
    dependency though no import statement names it; and the shards' keys no longer hash the task generators,
    whose edits reach the model stages through the datasets they release."""
    import ast

    tree = ast.parse('def key():\n    return code_version("reproduce.lm.engine", "reproduce.self_prediction.tasks")\n')
    assert {"reproduce.lm.engine", "reproduce.self_prediction.tasks"} <= pipeline._imports_in(tree, ["reproduce"])
    assert "reproduce/lm/split_cache.py" in pipeline.declared("object_level")[0]
    assert "reproduce/self_prediction/tasks.py" not in pipeline.stage_modules("object_level")
    assert "reproduce/self_prediction/tasks.py" in pipeline.declared("datasets")[0]
