"""The optional local judge, which both side experiments share: a judge that is not on disk stops either stage
before any model is loaded."""

import pytest

from conftest import tiny_profile
from tests.injection.test_injection import SMALL as INJECTION
from tests.mirror.test_mirror import SMALL


@pytest.mark.parametrize("experiment", ["mirror", "injection"])
def test_a_judge_that_is_not_on_disk_is_refused_before_any_model_is_loaded(tmp_path, monkeypatch, experiment):
    import reproduce.stage as stages
    from reproduce.injection.experiment import run_concept_injection
    from reproduce.mirror.experiment import run_mirror
    from reproduce.lm.models import ModelError

    def no_models(*a, **k):
        raise AssertionError("a model was loaded before the judge was checked")

    monkeypatch.setattr(stages, "load_model", no_models)
    monkeypatch.setattr(stages, "setup_stage", no_models)
    judge = str(tmp_path / "no-such-judge.gguf")
    if experiment == "mirror":
        run, profile = run_mirror, tiny_profile(mirror=dict(SMALL, judge=judge))
    else:
        run, profile = run_concept_injection, tiny_profile(injection=dict(INJECTION, judge=judge))
    with pytest.raises(ModelError, match="no-such-judge.gguf"):
        run(stages.StagePlan(profile), tmp_path / "out", tmp_path / "work")
    assert not (tmp_path / "out").exists()
