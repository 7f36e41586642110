"""Table schemas: what they accept, what they refuse and how; writes that break one leave the old file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import reproduce.self_prediction.schemas as tables
from reproduce.errors import DataError
from reproduce.io import atomic_write_parquet, read_stage_table, write_stage_tables
from reproduce.schema import PROB, Col, Schema, SchemaError

S = Schema("demo", [Col("model", "str", null=False), Col("n", "int", null=False, range=(0, 10)),
                    Col("p", "float", range=PROB), Col("ok", "bool", null=False), Col("probs", "list", range=PROB),
                    Col("split", "str", values=("train", "test")), Col("seed", "int", optional=True)],
           key=["model", "n"])


def good(**change) -> pd.DataFrame:
    df = pd.DataFrame({"model": ["a", "b"], "n": [1, 2], "p": [0.5, np.nan], "ok": [True, False],
                       "probs": [[0.2, 0.8], []], "split": ["train", None]})
    return df.assign(**change)


def test_a_conforming_table_passes_and_is_returned():
    df = good()
    assert S.problems(df) == []
    assert S.check(df) is df
    # optional columns may be present; an int column with missing values stored as floats is still an int column
    assert S.problems(good(seed=[0.0, np.nan])) == []
    assert S.problems(good(seed=pd.array([0, None], dtype="Int64"))) == []


@pytest.mark.parametrize("df, message", [
    (good().drop(columns=["ok"]), "missing columns ['ok']"),
    (good(extra=1), "undeclared columns ['extra']"),
    (good(n=["1", "2"]), "column 'n': expected int, found string"),
    (good(seed=[0.5, 1.0]), "column 'seed': expected int, found floating"),
    (good(model=["a", None]), "column 'model': 1 missing values"),
    (good(p=[1.5, 0.2]), "column 'p': 1 values outside [0.0, 1.0] (e.g. 1.5)"),
    (good(probs=[[0.2, 1.2], []]), "column 'probs': 1 values outside [0.0, 1.0]"),
    (good(probs=["x", []]), "column 'probs': expected a list per row, found ['str']"),
    (good(split=["train", "dev"]), "column 'split': values ['dev'] outside ['train', 'test']"),
    (good(n=[1, 11]), "column 'n': 1 values outside [0, 10]"),
    (good(ok=["yes", "no"]), "column 'ok': expected bool, found string"),
    (good(model=["a", "a"], n=[1, 1]), "2 rows share a key ['model', 'n'] (e.g. {'model': 'a', 'n': 1})"),
])
def test_each_broken_rule_is_named(df, message):
    with pytest.raises(SchemaError) as e:
        S.check(df, "writing x.parquet")
    assert message in str(e.value)
    assert str(e.value).startswith("table 'demo' (writing x.parquet) breaks its schema: ")
    assert isinstance(e.value, DataError)


def test_a_write_that_breaks_the_schema_leaves_the_old_file(tmp_path):
    path = tmp_path / "t.parquet"
    atomic_write_parquet(path, good(), schema=S)
    before = path.read_bytes()
    with pytest.raises(SchemaError, match="missing columns"):
        atomic_write_parquet(path, good().drop(columns=["p"]), schema=S)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]  # no temporary left behind
    # the stage-folder writer checks every table before replacing the folder
    out = tmp_path / "stage"
    write_stage_tables(out, {"demo": good()}, {"run": 1}, {"demo": S})
    with pytest.raises(SchemaError):
        write_stage_tables(out, {"demo": good(n=[-1, 2])}, {"run": 2}, {"demo": S})
    assert json.loads((out / "run.json").read_text()) == {"run": 1}


def test_a_table_round_trips_through_parquet_and_still_conforms(tmp_path):
    path = tmp_path / "t.parquet"
    atomic_write_parquet(path, good(seed=pd.array([0, None], dtype="Int64")), schema=S)
    df = read_stage_table(path, "demo", S)  # lists come back as arrays, Int64 as Int64
    assert isinstance(df["probs"].iloc[0], np.ndarray)


def test_reading_a_table_of_another_version_names_the_stage_to_rerun(tmp_path):
    path = tmp_path / "meta_untrained.parquet"
    good().drop(columns=["ok"]).to_parquet(path)
    with pytest.raises(SchemaError) as e:
        read_stage_table(path, "meta_untrained", S)
    assert "missing columns ['ok']" in str(e.value)
    assert "re-run the meta_untrained stage (`dvc repro meta_untrained`)" in str(e.value)


def test_the_simulated_stage_tables_have_the_real_tables_schemas():
    from analysis.self_prediction.simulate import simulate_stage_tables

    t = simulate_stage_tables(seed=3, items=4, calibration_items=2, n_samples=5,
                              tasks=("animals", "categories", "myopic_reward"))
    for name, schema in [("meta_untrained", tables.META_UNTRAINED), ("meta_trained", tables.META_TRAINED),
                         ("calibration", tables.CALIBRATION), ("behaviour_change", tables.BEHAVIOUR_CHANGE)]:
        assert schema.problems(t[name]) == [], name
        # and the schema is not vacuous: dropping a column or breaking a probability is caught
        assert schema.problems(t[name].drop(columns=["task"])) == ["missing columns ['task']"]
    broken = t["calibration"].assign(p_outside=t["calibration"]["p_outside"] + 2)
    assert any("p_outside" in p for p in tables.CALIBRATION.problems(broken))


def test_kinds_are_checked_when_a_schema_is_declared():
    with pytest.raises(ValueError, match="kind 'text' is not one of"):
        Col("x", "text")


def test_exclusive_lets_one_process_at_a_time_build_a_shared_file(tmp_path):
    """Several processes converting the same model into the cache (test workers, distributed ranks) take
    turns: a read-sleep-write counter under the lock loses no update."""
    import subprocess
    import sys

    counter = tmp_path / "n"
    counter.write_text("0")
    code = ("import sys, time, pathlib; from reproduce.io import exclusive; p = pathlib.Path(sys.argv[1])\n"
            "for _ in range(5):\n"
            "    with exclusive(p.with_suffix('.lock')):\n"
            "        n = int(p.read_text()); time.sleep(0.01); p.write_text(str(n + 1))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(counter)]) for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    assert counter.read_text() == "15"


def test_json_outputs_are_strict_json(tmp_path):
    """A NaN (power.json's minimum detectable effect when no simulated size reaches the power) is written as null."""
    import json

    from reproduce.io import atomic_write_json

    path = tmp_path / "out.json"
    atomic_write_json(path, {"mda": float("nan"), "curve": [1.0, float("inf"), {"x": -float("inf")}], "n": 3})
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) == {
        "mda": None, "curve": [1.0, None, {"x": None}], "n": 3}


def test_a_stage_folder_keeps_exactly_the_tables_of_the_current_models(tmp_path, monkeypatch, capsys):
    """A model removed from `models`: its old table is removed when the stage runs again through the command
    line, so neither the analysis nor the release card reads it."""
    import looking_inward.cli as cli
    import reproduce.stage as stage_kit

    monkeypatch.setattr(stage_kit, "DATA", tmp_path)
    for folder in ("object_level", "object_samples"):
        (tmp_path / folder).mkdir()
        for name in ("kept.parquet", "removed-model.parquet", "notes.txt"):
            (tmp_path / folder / name).write_text("x")
    cli._only_these({"kept": tmp_path / "object_level" / "kept.parquet"}, ("object_level", "object_samples"))
    for folder in ("object_level", "object_samples"):
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == ["kept.parquet", "notes.txt"]
    assert "removed object_level/removed-model.parquet" in capsys.readouterr().out
