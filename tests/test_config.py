"""params.yaml: the committed profiles validate; bad values fail at once with the key named."""

import copy

import pytest
import yaml

from looking_inward.cli import main
from reproduce.config import DEFAULT_PARAMS, ConfigError, load_params

from reproduce.config import PROFILES_DIR, edits, use_profile

RAW = yaml.safe_load((PROFILES_DIR / "smoke.yaml").read_text())


@pytest.mark.parametrize("profile", ["smoke", "default", "paper"])
def test_committed_profiles_validate(profile):
    name, p = load_params(DEFAULT_PARAMS, profile)
    assert name == profile and len(p.models) >= 2


def test_params_yaml_is_the_default_profile():
    """The committed params.yaml is profiles/default.yaml as `use-profile default` writes it."""
    assert load_params(DEFAULT_PARAMS) == load_params(DEFAULT_PARAMS, "default")
    assert edits(DEFAULT_PARAMS) == ("default", [])


def _write(tmp_path, mutate):
    raw = copy.deepcopy(RAW)
    mutate(raw)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize("mutate,match", [
    (lambda r: r.update(batch_size=0), r"^invalid params.yaml:\n  batch_size: .*\(got 0\)$"),
    (lambda r: r.update(dtype="float8"), r"  dtype: "),
    (lambda r: r.update(batchsize=4), r"  batchsize: not a setting \(got 4\); did you mean batch_size\?"),
    (lambda r: r["tasks"].update(test=["colors"]), "both train and test"),
    (lambda r: r.update(models=["a", "a"]), r"models lists \['a'\] more than once; list each model once"),
    (lambda r: r["tasks"].update(test=["animals", "years", "animals"]),
     r"tasks\.test lists \['animals'\] more than once; list each task once"),
    (lambda r: r["tasks"].update(train=["colors", "colors"]), r"tasks\.train lists \['colors'\] more than once"),
    (lambda r: r["behaviour_change"].update(tasks=["animals", "animals"]),
     r"behaviour_change\.tasks lists \['animals'\] more than once"),
    (lambda r: r["sampling"].update(n_samples=0), r"sampling\.n_samples"),
    (lambda r: r.update(profiles={"default": {}}), "old layout"),
    (lambda r: r["analysis"].update(target_accept_retry=0.8), r"target_accept_retry \(0.8\) is below "
                                                               r"analysis.target_accept \(0.9\)"),
    (lambda r: r.update(batch_size=True), r"  batch_size: .*\(got True\)"),  # a boolean is no batch size
    (lambda r: r.update(seed="1"), r"  seed: "),  # nor is a string a number
    (lambda r: r["mirror"].update(turns=[-1, 0]), r"mirror\.turns: .*each 2 or later"),
    (lambda r: r["mirror"].update(turns=[2, 2]), r"mirror\.turns: .*each turn once"),
])
def test_bad_params_are_clear_errors(tmp_path, mutate, match):
    path = _write(tmp_path, mutate)
    with pytest.raises(ConfigError, match=match):
        load_params(path)


def test_a_yaml_syntax_error_is_one_line_naming_the_place(tmp_path, capsys):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 0\nmodels: [a, b\nbatch_size: 4\n")
    with pytest.raises(ConfigError, match=r"params.yaml:\d+:\d+: .*fix the YAML there"):
        load_params(path)
    assert main(["object-level", "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_unknown_profile_names_the_known_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"profile 'huge' is not one of \['default', 'paper', 'smoke'\]"):
        load_params(DEFAULT_PARAMS, "huge")


def test_cli_reports_bad_params_without_a_traceback(tmp_path, capsys):
    path = _write(tmp_path, lambda r: r.update(batch_size=-1))
    assert main(["object-level", "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert "batch_size" in err and len(err.splitlines()) == 2  # the key and the value, not the whole file


def test_use_profile_copies_the_profile_and_keeps_edits_unless_forced(tmp_path):
    path = tmp_path / "params.yaml"
    use_profile("default", path)  # a new file
    assert load_params(path) == load_params(DEFAULT_PARAMS, "default")
    assert main(["use-profile", "smoke", "--params", str(path)]) == 0
    assert load_params(path) == load_params(DEFAULT_PARAMS, "smoke")
    smoke = (PROFILES_DIR / "smoke.yaml").read_text()
    assert path.read_text().count("#") >= smoke.count("#") - 2  # comments kept (the profile's own header aside)
    # an edit is named, and kept, unless --force
    path.write_text(path.read_text().replace("batch_size: 16", "batch_size: 32"))
    assert edits(path) == ("smoke", ["batch_size"])
    before = path.read_text()
    with pytest.raises(ConfigError, match=r"differ from profiles/smoke.yaml \(batch_size\)"):
        use_profile("default", path)
    assert path.read_text() == before
    assert main(["use-profile", "default", "--params", str(path), "--force"]) == 0
    assert load_params(path) == load_params(DEFAULT_PARAMS, "default")
    assert main(["use-profile", "nope", "--params", str(path)]) == 2


def test_profile_reads_are_recorded():
    """Stage commands check the settings they read against dvc.yaml (reproduce.pipeline)."""
    from reproduce.config import record_reads

    _, p = load_params(DEFAULT_PARAMS, "smoke")
    reads = record_reads()
    p.batch_size, p.finetune.lora_rank
    assert reads == {"batch_size", "finetune"}


def test_models_command_fails_for_an_unavailable_model(capsys):
    assert main(["models", "smollm2-135m", "no-org/no-model"]) == 2
    out = capsys.readouterr()
    assert "smollm2-135m" in out.out and "1 of 2 model specs" in out.err


def test_each_stage_records_its_wall_time_and_hardware(tmp_path, capsys):
    import json

    from looking_inward.cli import cmd_timings
    from reproduce.timings import record_timing

    path = tmp_path / "timings.json"
    record_timing("object-level", 125.04, path)
    record_timing("analysis", 60.0, path)
    record_timing("object-level", 100.0, path)  # a re-run replaces the stage's entry
    stages = json.loads(path.read_text())["stages"]
    assert set(stages) == {"object-level", "analysis"} and stages["object-level"]["seconds"] == 100.0
    assert "CPU" in stages["analysis"]["hardware"] or "GPU" in stages["analysis"]["hardware"]
    cmd_timings(type("Args", (), {"file": str(path), "save_reference": None, "all": False}))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "no complete run recorded: each stage's latest time"
    assert out[1].startswith("object-level") and out[2].startswith("analysis")  # pipeline order
    assert out[-1].split()[:2] == ["total", "2.7"]  # 160 s in minutes


def test_a_quick_rerun_does_not_replace_the_last_complete_runs_time(tmp_path, monkeypatch):
    """A whole run, then every stage again in seconds (its shards reused): both runs are kept, and `timings`
    shows the last complete one; `--all` lists them."""
    import json

    import reproduce.time_estimate as time_estimate
    import reproduce.timings as timings

    path = tmp_path / "timings.json"
    monkeypatch.setattr(time_estimate, "pipeline_stages", lambda: {"object-level", "analysis"})
    timings.record_timing("object-level", 600.0, path)
    timings.record_timing("analysis", 120.0, path)  # a whole run: 12 minutes
    timings.record_timing("object-level", 6.0, path)  # a rerun of one stage, all reused
    data = json.loads(path.read_text())
    assert [len(r["stages"]) for r in data["runs"]] == [2, 1] and data["stages"]["object-level"]["seconds"] == 6.0
    text = timings.timings_text(path)
    assert "the last complete run" in text and text.splitlines()[-1].split()[:2] == ["total", "12.0"]
    timings.record_timing("analysis", 3.0, path)  # the rerun completes: now it is the last complete run
    assert timings.timings_text(path).splitlines()[-1].split()[:2] == ["total", "0.1"]
    listed = timings.timings_text(path, every_run=True).splitlines()
    assert listed[0].startswith("run 1") and "12.0 min  complete" in listed[0] and "complete" in listed[1]


def test_timings_without_a_run_is_a_clear_error(tmp_path):
    from looking_inward.cli import main

    assert main(["timings", "--file", str(tmp_path / "none.json")]) == 2


def test_the_random_weights_gpu_params_file_is_valid():
    from reproduce.config import REPO_ROOT, load_params

    name, p = load_params(REPO_ROOT / "benchmarks" / "random-gpu.params.yaml")
    assert name == "random-gpu" and all("random:" in m for m in p.models)


def test_an_expected_error_is_one_short_line_and_a_bug_shows_its_traceback(tmp_path, capsys, monkeypatch):
    import looking_inward.cli as cli

    path = _write(tmp_path, lambda r: r.update(seed=-1))
    assert main(["analysis", "--params", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("error: invalid params.yaml") and "seed" in err[1] and "-1" in err[1]
    assert len("\n".join(err)) < 300  # the key and the value, not the whole params dictionary back
    with pytest.raises(ConfigError):  # --debug shows the expected error's traceback too
        main(["--debug", "analysis", "--params", str(path)])

    def bug(args):
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "cmd_timings", bug)
    parser = cli.build_parser  # the subcommand keeps the function it was built with: rebuild with the bug
    monkeypatch.setattr(cli, "build_parser", lambda: _with_func(parser(), "timings", bug))
    with pytest.raises(KeyError, match="a bug"):
        main(["timings"])


def _with_func(parser, command, func):
    for action in parser._subparsers._group_actions:
        action.choices[command].set_defaults(func=func)
    return parser


@pytest.mark.slow
def test_the_project_root_is_found_from_the_working_directory_not_the_module(tmp_path, monkeypatch):
    import shutil
    import subprocess
    import sys

    from reproduce.config import CODE_ROOT, ROOT_ENV, find_root

    project = tmp_path / "project"
    (project / "sub" / "deeper").mkdir(parents=True)
    (project / "dvc.yaml").write_text("stages: {}\n")
    shutil.copy(PROFILES_DIR / "smoke.yaml", project / "params.yaml")
    shutil.copytree(PROFILES_DIR, project / "profiles")
    monkeypatch.delenv(ROOT_ENV, raising=False)
    assert find_root(project / "sub" / "deeper") == project
    assert find_root(tmp_path) == CODE_ROOT  # no project here: the source checkout this runs from
    monkeypatch.setenv(ROOT_ENV, str(project))
    assert find_root(tmp_path) == project
    # --root: the command works on that project, from anywhere
    env = {k: v for k, v in __import__("os").environ.items() if k != ROOT_ENV}
    out = subprocess.run([sys.executable, "-m", "looking_inward", "--root", str(project), "use-profile", "default",
                          "--force"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert load_params(project / "params.yaml")[0] == "default"
    assert main(["--root", str(project), "timings"]) == 2  # in a process already at another root: refused


def _rename(section: dict, old: str, new: str) -> None:
    section[new] = section.pop(old)


@pytest.mark.parametrize("mutate, line", [
    (lambda r: _rename(r, "batch_size", "batch_sise"), "  batch_sise: not a setting (got 16); did you mean batch_size?"),
    (lambda r: _rename(r["finetune"], "lora_rank", "lora_rnak"),
     "  finetune.lora_rnak: not a setting (got 8); did you mean lora_rank?"),
    (lambda r: r["analysis"].update(dravs=5), "  analysis.dravs: not a setting (got 5); did you mean draws?"),
])
def test_a_misspelt_setting_is_one_line_that_names_the_setting_meant(tmp_path, mutate, line):
    with pytest.raises(ConfigError) as info:
        load_params(_write(tmp_path, mutate))
    assert str(info.value).splitlines() == ["invalid params.yaml:", line]  # the 'required' error it caused folded in


def test_an_unknown_profile_for_use_profile_says_how_to_add_one(tmp_path, capsys):
    assert main(["use-profile", "nope", "--params", str(tmp_path / "params.yaml")]) == 2
    err = capsys.readouterr().err
    assert "add nope.yaml there" in err and "--params" not in err and not (tmp_path / "params.yaml").exists()
    with pytest.raises(ConfigError, match="or pass --params FILE instead of --profile"):
        load_params(DEFAULT_PARAMS, "nope")


def test_every_path_a_command_defaults_to_is_in_the_project_not_the_working_directory():
    from looking_inward.cli import build_parser
    from reproduce.config import REPO_ROOT

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    paths = {(name, a.dest): a.default for name, sub in commands.items() for a in sub._actions
             if isinstance(a.default, str) and ("/" in a.default or a.default.endswith((".cff", ".json", ".yaml")))}
    assert ("report", "out") in paths and ("artifacts", "data_raw") in paths
    outside = {k: v for k, v in paths.items() if not v.startswith(str(REPO_ROOT))}
    assert not outside, outside


def test_every_command_explains_itself_and_every_stage_command_names_its_dvc_stage():
    from looking_inward.cli import build_parser
    from reproduce.config import REPO_ROOT

    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    for name, sub in build_parser()._subparsers._group_actions[0].choices.items():
        assert sub.description and sub.description[0].isupper(), name
        if name.replace("-", "_") in stages and name != "datasets":  # a stage command names its stage
            assert sub.description.split("Stage `")[1].split("`")[0] == name.replace("-", "_"), name


def test_artifacts_without_dataset_manifests_stops_before_touching_dvc_yaml(tmp_path, monkeypatch, capsys):
    import reproduce.cards

    monkeypatch.setattr(reproduce.cards, "sync_artifacts", lambda *a, **k: pytest.fail("dvc.yaml would be rewritten"))
    assert main(["artifacts", "--data-raw", str(tmp_path)]) == 2
    assert "no dataset manifests" in capsys.readouterr().err


def test_a_misspelling_beside_a_bad_value_of_the_setting_meant_keeps_both_errors(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_params(_write(tmp_path, lambda r: r.update(batch_size=0, batch_sise=4)))
    lines = str(info.value).splitlines()
    assert "  batch_sise: not a setting (got 4); did you mean batch_size?" in lines
    assert any(line.startswith("  batch_size: ") and "(got 0)" in line for line in lines)
    # a section with a missing setting still offers its other settings for a misspelling
    with pytest.raises(ConfigError, match=r"dtyp: not a setting \(got 'auto'\); did you mean dtype\?"):
        load_params(_write(tmp_path, lambda r: (r.pop("models"), _rename(r, "dtype", "dtyp"))))
