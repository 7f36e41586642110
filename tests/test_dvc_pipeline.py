"""dvc.yaml declares what each stage uses: the modules its command imports, and the settings it reads."""

import pytest

from reproduce import pipeline
from reproduce.config import DEFAULT_PARAMS, read_params

STAGES = pipeline.read_stages()


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_module_a_stage_imports_is_a_declared_dependency(stage):
    modules = pipeline.stage_modules(stage)
    assert modules, stage
    assert pipeline.undeclared(stage, modules) == []


def test_model_stages_do_not_depend_on_later_stages_code():
    """A change to finetuning or the analysis re-runs neither the object level nor the meta level."""
    for stage in ("object_level", "meta_untrained"):
        deps = pipeline.declared(stage)[0]
        assert "reproduce/finetune.py" not in deps and "reproduce/stages/finetuning.py" not in deps
        assert not any(d.startswith(("analysis", "figures", "report")) for d in deps)
        assert "finetune" not in pipeline.declared(stage)[1] and "analysis" not in pipeline.declared(stage)[1]


def test_declared_settings_exist_in_params_yaml():
    """DVC fails on a listed key that params.yaml lacks; every listed key is a top-level setting."""
    keys = set(read_params(DEFAULT_PARAMS)[1])
    for stage in STAGES:
        params = pipeline.declared(stage)[1]
        if params is not None:
            assert set(params) <= keys, (stage, set(params) - keys)


def test_an_undeclared_setting_or_module_is_named(monkeypatch, capsys):
    reads = {"seed", "analysis", "finetune"}
    modules = {"analysis/stage.py", "reproduce/finetune.py"}
    assert pipeline.undeclared("analysis", modules, reads) == ["module reproduce/finetune.py", "setting finetune"]
    monkeypatch.setattr(pipeline, "loaded_modules", lambda root=None: modules)
    pipeline.check_stage("analysis", reads)
    assert "does not declare what it used: module reproduce/finetune.py, setting finetune" in capsys.readouterr().err
    monkeypatch.setenv(pipeline.STRICT_ENV, "1")
    with pytest.raises(pipeline.UndeclaredDependency, match="setting finetune"):
        pipeline.check_stage("analysis", reads)
    pipeline.check_stage("not-a-dvc-stage", reads)  # helpers outside dvc.yaml are not checked


def _project_copy(dest):
    """The files dvc.yaml names (code, params, profiles, paper, datasets) in a new DVC project at ``dest``,
    with every stage's outputs as placeholders, committed to dvc.lock as if the pipeline had run."""
    import shutil
    import subprocess

    from reproduce.config import REPO_ROOT

    for name in ("reproduce", "analysis", "figures", "report", "paper", "data_raw", "profiles"):
        shutil.copytree(REPO_ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "_generated",
                                                                                    "_output"))
    for name in ("dvc.yaml", "params.yaml", "CITATION.cff"):
        shutil.copy(REPO_ROOT / name, dest / name)
    for spec in STAGES.values():
        for out in spec.get("outs", []) + spec.get("metrics", []) + spec.get("plots", []) + spec.get("deps", []):
            path = dest / (out if isinstance(out, str) else next(iter(out)))
            if not path.exists():  # a placeholder: a folder for a folder output, a file otherwise
                if path.suffix:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text("{}")
                else:
                    path.mkdir(parents=True)
                    (path / "placeholder").write_text("x")
    dvc = [str(REPO_ROOT / ".venv" / "bin" / "dvc")] if (REPO_ROOT / ".venv" / "bin" / "dvc").exists() else ["dvc"]

    def run(*args):
        out = subprocess.run(dvc + list(args), cwd=dest, capture_output=True, text=True)
        assert out.returncode == 0, f"dvc {' '.join(args)}: {out.stderr[-1500:]}"
        return out.stdout

    run("init", "--no-scm", "-q")
    run("commit", "-f")
    return run


def _stale(run) -> set[str]:
    import json

    return set(json.loads(run("status", "--json")))


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
    assert _stale(run) == {"analysis", "power", "mirror_analysis", "injection_analysis", "report"}

    raw = yaml.safe_load(original)
    raw["finetune"]["lora_rank"] = 32
    params.write_text(yaml.safe_dump(raw))
    assert _stale(run) == {"finetune_self", "object_level_trained", "finetune_cross", "meta_trained", "calibration",
                           "behaviour_change", "report"}

    params.write_text(original)
    (tmp_path / "reproduce" / "cli.py").write_text((tmp_path / "reproduce" / "cli.py").read_text() + "\n# edit\n")
    assert _stale(run) == set()  # the command line is no stage's dependency
    finetune = tmp_path / "reproduce" / "finetune.py"
    finetune.write_text(finetune.read_text() + "\n# edit\n")
    stale = _stale(run)
    assert {"finetune_self", "finetune_cross", "behaviour_change"} <= stale
    assert not stale & {"object_level", "meta_untrained", "concept_injection", "mirror", "analysis"}
