"""Shared fixtures: a tiny real profile and the two embedded models, loaded once per session."""

import pytest

from reproduce.config import Profile


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
