"""Reading and validating ``params.yaml``.

``params.yaml`` holds ``profile`` (the active one) and ``profiles`` (smoke, default, paper). Every stage
validates the active profile here first, so a typo fails in a second with a message naming the key,
instead of after minutes of inference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ProjectError

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PARAMS = REPO_ROOT / "params.yaml"


class ConfigError(ProjectError, ValueError):
    """A params.yaml problem, stated in terms of the key a user must change."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SplitSizes(_Strict):
    """How many items of each task a stage uses (the first n of the dataset's fixed order)."""

    train: int = Field(gt=0)
    test: int = Field(gt=0)


class TaskSelection(_Strict):
    train: list[str] = Field(min_length=1)
    test: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _disjoint(self) -> "TaskSelection":
        both = set(self.train) & set(self.test)
        if both:
            raise ValueError(f"tasks {sorted(both)} are listed in both train and test; held-out tasks must be disjoint")
        return self


class Sampling(_Strict):
    """Temperature-1 object-level samples for calibration, on the first ``items_per_task`` test items."""

    n_samples: int = Field(ge=1, le=1000)
    items_per_task: int = Field(ge=0)
    temperature: float = Field(gt=0, le=5)


class Finetune(_Strict):
    """LoRA supervised finetuning on (hypothetical prompt -> property of the target's answer) pairs."""

    lora_rank: int = Field(ge=1, le=1024)
    lora_alpha: float = Field(gt=0)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    learning_rate: float = Field(gt=0, le=1)
    epochs: float = Field(gt=0, le=100)
    batch_size: int = Field(ge=1, le=4096)
    max_examples: int | None = Field(default=None, ge=1, description="cap on training pairs per target")
    mixed_precision: Literal["auto", "no", "bf16", "fp16"] = Field(
        default="auto", description="auto: bf16 autocast where bf16 is measured fast on the device, else none")
    base_dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto", description="dtype of the frozen base weights while training LoRA; auto: bfloat16 on a CUDA "
                                    "device with bf16 (half the memory; the adapter itself stays float32), float32 "
                                    "elsewhere")
    gradient_checkpointing: bool | Literal["auto"] = Field(
        default="auto", description="recompute activations in the backward pass instead of storing them (less "
                                    "memory, about a third more compute); auto: on for CUDA, off on a CPU")
    checkpoint_every: int = Field(default=50, ge=1, description="steps between resumable checkpoints")
    max_length: int = Field(default=512, ge=16, description="longest prompt + answer, in tokens")
    scaling_sizes: list[int] = Field(default_factory=list, description="cross-prediction training-set sizes")
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1,
                             description="finetuning seeds: every self/cross run is repeated once per seed (the "
                                         "training-pair order and the LoRA initialisation); the scaling sweep and "
                                         "behaviour change use the first")

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, v: list[int]) -> list[int]:
        if any(s < 0 for s in v) or len(set(v)) != len(v):
            raise ValueError(f"seeds must be distinct non-negative integers, got {v}")
        return v

    @field_validator("scaling_sizes")
    @classmethod
    def _positive_sizes(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v) or len(set(v)) != len(v):
            raise ValueError(f"scaling_sizes must be distinct positive integers, got {v}")
        return sorted(v)


class BehaviourChange(_Strict):
    """Experiment 3: the self-trained model finetuned further on the OTHER model's object-level answers.

    The first ``eval_items`` items of each task are evaluated (before and after the change); the training
    items are the ``train_items`` items right after them, so the evaluated items stay held out. LoRA rank,
    batch size, precision and checkpoints come from ``finetune``."""

    tasks: list[str] | None = Field(default=None, description="test tasks to change behaviour on; null: all")
    eval_items: int | None = Field(default=None, ge=1, description="evaluated items per task; null: items_per_task.test")
    train_items: int = Field(ge=1, description="items per task answered by the other model, for training")
    learning_rate: float = Field(gt=0, le=1)
    epochs: float = Field(gt=0, le=100)


class Analysis(_Strict):
    """The statistics stage: NUTS settings for every Bayesian model and the bootstrap size."""

    sampler: Literal["numpyro", "nutpie", "pymc"] = Field(
        default="numpyro", description="NUTS backend; numpyro is the fastest measured on a CPU")
    draws: int = Field(default=1000, ge=100)
    tune: int = Field(default=1000, ge=100)
    chains: int = Field(default=4, ge=2, description="at least 2, for r_hat")
    target_accept: float = Field(default=0.98, gt=0.5, lt=1)
    bootstrap: int = Field(default=2000, ge=2000, description="cluster-bootstrap resamples")
    rope: float = Field(default=2.0, ge=0, description=(
        "region of practical equivalence, +/- this many accuracy points: a verdict is 'advantage' when the 94% "
        "interval lies above it, 'practically null' inside it, 'inconclusive' otherwise"))
    rope_log_score: float = Field(default=0.05, ge=0, description=(
        "region of practical equivalence for the calibration log-score difference, +/- nats per sample"))
    prior_sensitivity: list[float] = Field(default=[0.5, 2.0], description=(
        "refit the advantage model with every prior scale multiplied by each of these factors and report delta, "
        "gamma and the verdicts beside the main fit ([] skips it; each refit costs about as much as the main one)"))


class FreeText(_Strict):
    """Sampled free-text answers to the open detection question, graded by rules (and the optional judge)."""

    concepts: int = Field(default=8, ge=0, description="the first n concepts get free-text trials at every cell")
    samples: int = Field(default=1, ge=1, le=100, description="samples per trial")
    max_new_tokens: int = Field(default=100, ge=8, le=1024)
    temperature: float = Field(default=1.0, gt=0, le=5)


class Injection(_Strict):
    """Concept injection (Lindsey 2025): concept vectors added to the residual stream at a fraction of depth
    and a strength (in units of the mean residual norm there). See reproduce/injection.py."""

    layer_fractions: list[float] = Field(default=[0.4, 0.6, 0.8], min_length=1, description=(
        "where to inject, as fractions of depth in [0, 1] (layer = round(f * (n_layers - 1)))"))
    strengths: list[float] = Field(default=[1.0, 2.0, 4.0, 8.0], min_length=1, description=(
        "injection strengths, in units of the mean residual norm at the layer"))
    concepts: int | list[str] | None = Field(default=None, description=(
        "null: every concept in data_raw/concept_injection; n: the first n; or a list of concept words"))
    controls: list[Literal["random", "negated", "yes_bias"]] = Field(default=["random", "negated", "yes_bias"])
    control_fractions: list[float] | None = Field(default=None, description=(
        "layer fractions (among layer_fractions) where the random and negated controls run; null: all"))
    prefill_fractions: list[float] | None = Field(default=None, description=(
        "layer fractions (among layer_fractions) where prefill detection runs; null: all"))
    identification: bool = Field(default=True, description="teacher-forced P(concept) after a detection prefill")
    prefill_pairs: int | None = Field(default=None, ge=0, description="prefill-detection pairs (null: all)")
    intention_sentences: int | None = Field(default=None, ge=0, description="intentional-control sentences (null: all)")
    free_text: FreeText = Field(default_factory=FreeText)
    judge: str | None = Field(default=None, description=(
        "a model spec for an optional local judge of the free text (any spec the registry loads); null: rules only"))

    @field_validator("layer_fractions")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        bad = [f for f in v if not 0.0 <= f <= 1.0]
        if bad:
            raise ValueError(f"layer fractions must lie in [0, 1] (0 = first block, 1 = last); got {bad}")
        if len(set(v)) != len(v):
            raise ValueError(f"layer fractions must be distinct, got {v}")
        return v

    @model_validator(mode="after")
    def _control_fractions(self) -> "Injection":
        for key in ("control_fractions", "prefill_fractions"):
            extra = set(getattr(self, key) or []) - set(self.layer_fractions)
            if extra:
                raise ValueError(f"{key} {sorted(extra)} are not among layer_fractions {self.layer_fractions}")
        return self

    @field_validator("strengths")
    @classmethod
    def _strengths(cls, v: list[float]) -> list[float]:
        import math

        bad = [s for s in v if not math.isfinite(s) or s <= 0]
        if bad:
            raise ValueError(f"strengths must be finite numbers > 0 (controls have no injection); got {bad}")
        return v


class Mirror(_Strict):
    """The mirror test: a model's own earlier replies corrupted (or another model's shown as its own), then the
    conversation goes on. See reproduce/mirror.py."""

    scripts: int | None = Field(default=None, ge=1, description="the first n conversation scripts (null: all)")
    kinds: list[Literal["insertion", "substitution", "swap", "drop", "capitalisation"]] = Field(
        default=["insertion", "substitution", "swap", "drop", "capitalisation"], min_length=1)
    levels: list[float] = Field(default=[0.1, 0.3, 0.6], min_length=1, description=(
        "shares of eligible words corrupted, each in (0, 1]; the control (0) always runs"))
    turns: list[int] | None = Field(default=None, description="turns measured (>= 2; null: every turn from 2)")
    other_model: bool = Field(default=True, description="also show another model's replies as the model's own")
    max_new_tokens: int = Field(default=60, ge=8, le=1024, description="tokens per reply")
    judge: str | None = Field(default=None, description="a model spec for an optional local judge of noticing")

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 0.0 < x <= 1.0]
        if bad:
            raise ValueError(f"corruption levels must lie in (0, 1] (the control, 0, always runs); got {bad}")
        return v


class Profile(_Strict):
    seed: int = Field(ge=0)
    models: list[str] = Field(min_length=1)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="auto: bfloat16 where it is measured fast (CUDA with bf16, a CPU with native "
                                    "bf16), float32 elsewhere; see reproduce.hardware")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    device_map: Literal["auto"] | None = Field(
        default=None, description="auto: spread each model's layers over every visible GPU, then CPU memory, for "
                                  "inference on a model that does not fit one GPU (training still needs one device)")
    max_memory: dict[int | str, str] | None = Field(
        default=None, description="with device_map: the most each device may hold, e.g. {0: 70GiB, cpu: 200GiB}")
    threads: int | None = Field(default=None, ge=1)
    batch_size: int = Field(gt=0, le=4096)
    system_prompt: str | None = Field(
        default=None, description="None keeps each chat template's own default system prompt"
    )
    tasks: TaskSelection
    items_per_task: SplitSizes
    properties: list[str] | None = None
    sampling: Sampling
    finetune: Finetune | None = None
    behaviour_change: BehaviourChange | None = None
    analysis: Analysis = Field(default_factory=Analysis)
    injection: Injection | None = Field(default=None, description="concept injection; null: the stage is skipped")
    mirror: Mirror | None = Field(default=None, description="the mirror test; null: the stage is skipped")

    @field_validator("models")
    @classmethod
    def _unique_models(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"models must be distinct, got {v}")
        return v


class Params(_Strict):
    profile: str
    profiles: dict[str, Profile]

    @model_validator(mode="after")
    def _known_profile(self) -> "Params":
        if self.profile not in self.profiles:
            raise ValueError(f"profile {self.profile!r} is not one of {sorted(self.profiles)}")
        return self

    @property
    def active(self) -> Profile:
        return self.profiles[self.profile]


def load_params(path: str | Path = DEFAULT_PARAMS, profile: str | None = None) -> tuple[str, Profile]:
    """Return ``(profile_name, profile)``; ``profile`` overrides the file's ``profile`` key."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"params file {path} not found; run from the repository root or pass --params")
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must be a YAML mapping with keys 'profile' and 'profiles'")
    if profile is not None:
        raw = {**raw, "profile": profile}
    try:
        params = Params.model_validate(raw)
    except ValidationError as exc:
        lines = [f"invalid {path.name}:"]
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            got = err.get("input")
            shown = repr(got)
            # the offending value only: a whole section (a model-level check's input) is not repeated back
            value = "" if isinstance(got, (dict, list)) or len(shown) > 80 else f" (got {shown})"
            lines.append(f"  {loc or 'params'}: {err['msg']}{value}")
        raise ConfigError("\n".join(lines)) from None
    return params.profile, params.active
