"""Reading and validating ``params.yaml``.

``params.yaml`` is the active configuration, the file DVC tracks: every setting at the top level, so that
each stage of dvc.yaml lists the keys it reads (``dvc params diff`` and ``dvc exp run -S finetune.lora_rank=32``
work on them) and a changed setting re-runs only the stages that read it. ``profiles/*.yaml`` are the named
starting points (smoke, default, paper); ``looking-inward use-profile NAME`` copies one to params.yaml, whose
``profile:`` key keeps the name. Every stage validates its settings here first, so a typo fails in a second
with a message naming the key, instead of after minutes of inference.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import typing
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reproduce.errors import ProjectError

ROOT_ENV = "LOOKING_INWARD_ROOT"
#: where the package's own source lives (the modules dvc.yaml lists as stage dependencies)
CODE_ROOT = Path(__file__).resolve().parents[1]


def find_root(start: Path | None = None) -> Path:
    """The project a command works on: ``$LOOKING_INWARD_ROOT`` (``looking-inward --root DIR`` sets it); else
    the nearest folder at or above the working directory with a ``dvc.yaml`` and a ``params.yaml``; else the
    source checkout, when the package runs from one; else the working directory. Never an installed
    package's folder, so a non-editable install writes nothing into site-packages."""
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "dvc.yaml").is_file() and (d / "params.yaml").is_file():
            return d
    return CODE_ROOT if (CODE_ROOT / "dvc.yaml").is_file() else here


#: the project root: params.yaml, profiles/, data_raw/ and data/ live here (:func:`find_root`)
REPO_ROOT = find_root()
DEFAULT_PARAMS = REPO_ROOT / "params.yaml"
PROFILES_DIR = REPO_ROOT / "profiles"


class ConfigError(ProjectError, ValueError):
    """A params.yaml problem, stated in terms of the key a user must change."""


class _Strict(BaseModel):
    # strict: a boolean is no number and a number no string ("batch_size: true" is an error, not 1); YAML gives
    # every setting its native type, so nothing valid is refused
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SplitSizes(_Strict):
    """How many items of each task a stage uses (the first n of the dataset's fixed order)."""

    train: int = Field(gt=0)
    test: int = Field(gt=0)


def _distinct(key: str, names: list[str], noun: str = "task") -> list[str]:
    """``names`` unchanged, or an error naming the ones listed twice: a task or model listed twice would be
    run, and counted, twice."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{key} lists {twice} more than once; list each {noun} once")
    return names


class TaskSelection(_Strict):
    train: list[str] = Field(min_length=1)
    test: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _distinct_and_disjoint(self) -> "TaskSelection":
        for split in ("train", "test"):
            _distinct(f"tasks.{split}", getattr(self, split))
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
    examples_per_cell: int | None = Field(
        default=None, ge=1, description="the original's construction (evals/create_finetuning_dataset.py): at most "
                                        "this many compliant pairs drawn (seeded) from each train task x property "
                                        "before the pairs are shuffled and max_examples applies; null: every "
                                        "compliant pair, shuffled together")
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
    sibling: bool = Field(default=False, description=(
        "train a sibling predictor per model and seed: a second copy of the model's base weights trained on its "
        "self-trained version's train-task behaviour, with the cross-predictor's pairs and settings and another "
        "training seed; self minus sibling is the advantage that identical weights do not explain"))
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

    @field_validator("tasks")
    @classmethod
    def _distinct_tasks(cls, v: list[str] | None) -> list[str] | None:
        return v if v is None else _distinct("behaviour_change.tasks", v)


class Analysis(_Strict):
    """The statistics stage: NUTS settings for every Bayesian model and the bootstrap size."""

    sampler: Literal["numpyro", "nutpie", "pymc"] = Field(
        default="numpyro", description="NUTS backend; numpyro is the fastest measured on a CPU")
    draws: int = Field(default=1000, ge=100)
    tune: int = Field(default=1000, ge=100)
    chains: int = Field(default=4, ge=2, description="at least 2, for r_hat")
    target_accept: float = Field(default=0.9, gt=0.5, lt=1, description=(
        "NUTS's target acceptance rate at a fit's first sampling (a higher one takes smaller steps: longer "
        "trajectories, fewer divergences)"))
    target_accept_retry: float = Field(default=0.99, gt=0.5, lt=1, description=(
        "a fit with divergent transitions is sampled once more, from the same seed, at this target acceptance, "
        "and must then pass the whole convergence gate; the fits whose geometry needs it (the training-effect "
        "and calibration log-score models) start at it. Equal to target_accept: a divergence stops the stage"))
    bootstrap: int = Field(default=2000, ge=2000, description="cluster-bootstrap resamples")
    rope: float = Field(default=2.0, ge=0, description=(
        "region of practical equivalence, +/- this many accuracy points: a verdict is 'advantage' when the 94% "
        "interval lies above it, 'practically null' inside it, 'inconclusive' otherwise"))
    rope_log_score: float = Field(default=0.05, ge=0, description=(
        "region of practical equivalence for the calibration log-score difference, +/- nats per sample"))
    null_reps: int = Field(default=30, ge=0, description=(
        "replicates per null world of the false-positive simulation of experiment 1's verdict rules (the null "
        "stage; each is one Bayesian fit, as the analysis fits the run, at null_draws draws per chain); 0 measures "
        "nothing, and the headline then carries no verdict word"))
    null_reps_sibling: int | None = Field(default=None, ge=0, description=(
        "replicates per null world of the sibling control's two contrasts (null: null_reps); fewer keeps the "
        "sibling's cost within the run's budget, at a wider interval on those contrasts' false-positive rates"))
    null_draws: int = Field(default=500, ge=100, description=(
        "kept draws per chain of each null-simulation fit (the analysis's chains, tuning steps, target acceptances "
        "and convergence gate)"))
    prior_sensitivity: list[float] = Field(default=[0.5, 2.0], description=(
        "refit the advantage model with every prior scale multiplied by each of these factors and report delta, "
        "gamma and the verdicts beside the main fit ([] skips it; each refit costs about as much as the main one)"))

    @model_validator(mode="after")
    def _retry_not_below_first(self):
        if self.target_accept_retry < self.target_accept:
            raise ValueError(f"analysis.target_accept_retry ({self.target_accept_retry}) is below "
                             f"analysis.target_accept ({self.target_accept}): a fit that diverged would be "
                             "sampled again with larger steps; set it at or above target_accept")
        return self


class FreeText(_Strict):
    """Sampled free-text answers to the open detection question, graded by rules (and the optional judge)."""

    concepts: int = Field(default=8, ge=0, description="the first n concepts get free-text trials at every cell")
    samples: int = Field(default=3, ge=1, le=100, description=(
        "samples per trial: several per concept and cell, so that one sampled answer does not decide a cell"))
    max_new_tokens: int = Field(default=100, ge=8, le=1024)
    temperature: float = Field(default=1.0, gt=0, le=5)


class Injection(_Strict):
    """Concept injection (Lindsey 2025): concept vectors added to the residual stream at a fraction of depth
    and a strength (in units of the mean residual norm there). See reproduce/injection/experiment.py."""

    layer_fractions: list[float] = Field(default=[0.4, 0.6, 0.8], min_length=1, description=(
        "where to inject, as fractions of depth in [0, 1] (layer = round(f * (n_layers - 1)))"))
    strengths: list[float] = Field(default=[1.0, 2.0, 4.0, 8.0], min_length=1, description=(
        "injection strengths, in units of the mean residual norm at the layer (strength_units: raw: multiples of "
        "the unnormalised concept vector)"))
    strength_units: Literal["residual_norm", "raw"] = Field(default="residual_norm", description=(
        "residual_norm: strength x unit concept vector x mean residual norm at the layer; raw: strength x the "
        "concept vector as computed (Lindsey 2025 and its replications), whose norm differs by word and layer"))
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
    dataset: Literal["concept_injection", "concept_injection_lindsey", "concept_injection_lindsey_info"] = Field(
        default="concept_injection", description=(
            "the words and wording: the project's own; Lindsey (2025)'s 50 concept words, baseline words and trial "
            "conversation (`concept_injection_lindsey`); or those with Pearson-Vogel et al. (2026)'s information "
            "prompt after the preamble (`concept_injection_lindsey_info`)"))

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
    conversation goes on. See reproduce/mirror/experiment.py."""

    scripts: int | None = Field(default=None, ge=1, description="the first n conversation scripts (null: all)")
    kinds: list[Literal["insertion", "substitution", "swap", "drop", "capitalisation"]] = Field(
        default=["insertion", "substitution", "swap", "drop", "capitalisation"], min_length=1)
    levels: list[float] = Field(default=[0.1, 0.3, 0.6], min_length=1, description=(
        "shares of eligible words corrupted, each in (0, 1]; the control (0) always runs"))
    turns: list[int] | None = Field(default=None, description="turns measured (>= 2; null: every turn from 2)")
    other_model: bool = Field(default=True, description="also show another model's replies as the model's own")
    blog: bool = Field(default=False, description=(
        "also run the manipulation of the \"Do LLMs pass the mirror test?\" post: insertion (every g of a word "
        "becomes sg) in every eligible word (level 1.0), whatever kinds and levels list"))
    max_new_tokens: int = Field(default=60, ge=8, le=1024, description="tokens per reply")
    judge: str | None = Field(default=None, description="a model spec for an optional local judge of noticing")

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 0.0 < x <= 1.0]
        if bad:
            raise ValueError(f"corruption levels must lie in (0, 1] (the control, 0, always runs); got {bad}")
        return v

    @field_validator("turns")
    @classmethod
    def _turns(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        bad = [t for t in v if t < 2]
        if bad or not v:
            raise ValueError(f"turns are the conversation turns measured, each 2 or later (turn 1 has no earlier "
                             f"reply to alter); got {v}")
        if len(set(v)) != len(v):
            raise ValueError(f"each turn once; got {v}")
        return v


class Profile(_Strict):
    """The pipeline's settings: params.yaml (the active configuration) or one of profiles/*.yaml."""

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

    def __getattribute__(self, name: str):
        if name in _FIELDS:
            _note_read(name)
        return super().__getattribute__(name)

    def behaviour_change_eval_items(self) -> int:
        """Experiment 3's evaluated items per task: ``behaviour_change.eval_items``, else ``items_per_task.test``."""
        if self.behaviour_change is None:
            raise ConfigError("params.yaml has no `behaviour_change:` section; add one (see profiles/smoke.yaml)")
        return self.behaviour_change.eval_items or self.items_per_task.test

    def behaviour_change_tasks(self) -> list[str]:
        """Experiment 3's tasks: ``behaviour_change.tasks``, else every test task."""
        if self.behaviour_change is None:
            raise ConfigError("params.yaml has no `behaviour_change:` section; add one (see profiles/smoke.yaml)")
        return list(self.behaviour_change.tasks or self.tasks.test)

    @field_validator("models")
    @classmethod
    def _distinct_models(cls, v: list[str]) -> list[str]:
        return _distinct("models", v, "model")


def _validation_error(path: Path, exc: ValidationError) -> ConfigError:
    """One line per problem. A key that is not a setting is named with the setting it most resembles, and
    that setting's own "required" error, which the misspelling caused, is folded into the same line."""
    errors = exc.errors()
    unknown = {tuple(e["loc"]) for e in errors if e["type"] == "extra_forbidden"}
    missing = {tuple(e["loc"]) for e in errors if e["type"] == "missing"}
    guesses, folded = {}, set()
    for loc in unknown:
        near = list(dict.fromkeys([str(m[-1]) for m in missing if m[:-1] == loc[:-1]] + _settings_at(loc[:-1])))
        match = difflib.get_close_matches(str(loc[-1]), near, n=1, cutoff=0.6)
        if match:
            guesses[loc] = match[0]
            if loc[:-1] + (match[0],) in missing:  # only a 'required' error is the misspelling's own doing
                folded.add(loc[:-1] + (match[0],))
    lines = [f"invalid {path.name}:"]
    for err in errors:
        loc_t = tuple(err["loc"])
        if loc_t in folded:
            continue
        loc = ".".join(str(p) for p in loc_t)
        got = err.get("input")
        shown = repr(got)
        # the offending value only: a whole section (a model-level check's input) is not repeated back
        value = "" if isinstance(got, (dict, list)) or len(shown) > 80 else f" (got {shown})"
        if loc_t in guesses:
            lines.append(f"  {loc}: not a setting{value}; did you mean {guesses[loc_t]}?")
        else:
            lines.append(f"  {loc or 'params'}: {err['msg']}{value}")
    return ConfigError("\n".join(lines))


def _settings_at(section: tuple) -> list[str]:
    """The setting names of a section of the params file (``()``: the top level); [] where it has none."""
    model = Profile
    for part in section:
        field = model.model_fields.get(str(part))
        if field is None:
            return []
        inner = [a for a in (field.annotation, *typing.get_args(field.annotation))
                 if isinstance(a, type) and issubclass(a, BaseModel)]
        if not inner:
            return []
        model = inner[0]
    return list(model.model_fields)


def profile_path(name: str, profiles_dir: str | Path = PROFILES_DIR,
                 otherwise: str = ", or pass --params FILE instead of --profile") -> Path:
    """``profiles/<name>.yaml``; an unknown name is an error that lists the known ones and the fix
    (``otherwise``: the caller's alternative to adding the file)."""
    path = Path(profiles_dir) / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in Path(profiles_dir).glob("*.yaml"))
        raise ConfigError(f"profile {name!r} is not one of {known} (files in {profiles_dir}); add "
                          f"{path.name} there{otherwise}")
    return path


def _profiles_beside(params: Path) -> Path:
    """The profiles folder of a params file: ``profiles/`` beside it, else the project's."""
    here = params.parent / "profiles"
    return here if here.is_dir() else PROFILES_DIR


def read_params(path: str | Path) -> tuple[str, dict]:
    """The raw mapping of a params file and its ``profile`` label (``custom`` when it has none)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"params file {path} not found; run from the repository root, pass --params FILE, "
                          f"or create it with `looking-inward use-profile default`")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
                          f"write a fresh file with `looking-inward use-profile default --force`") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{where}: {problem}; fix the YAML there (an indentation or a missing colon, often), or "
                          f"write a fresh file with `looking-inward use-profile default --force`") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must be a YAML mapping of the pipeline's settings (see profiles/default.yaml)")
    if "profiles" in raw:
        raise ConfigError(f"{path} has the old layout (`profile:` + `profiles:`); the settings now sit at the top "
                          f"level and the profiles in profiles/*.yaml. Run `looking-inward use-profile "
                          f"{raw.get('profile', 'default')} --force` and carry any edits of yours over by hand")
    raw = dict(raw)
    label = raw.pop("profile", None) or "custom"
    return str(label), raw


def validate(raw: dict, path: Path) -> Profile:
    try:
        return Profile.model_validate(raw)
    except ValidationError as exc:
        raise _validation_error(path, exc) from None


def load_params(path: str | Path = DEFAULT_PARAMS, profile: str | None = None) -> tuple[str, Profile]:
    """Return ``(profile_name, settings)``: from ``path`` (``params.yaml``, the configuration `dvc repro` runs),
    or, with ``profile``, from ``profiles/<profile>.yaml`` beside it (the stage then runs that profile as it is
    written, ignoring params.yaml)."""
    path = Path(path)
    if profile is not None:
        path = profile_path(profile, _profiles_beside(path))
    label, raw = read_params(path)
    return label, validate(raw, path)


def edits(path: str | Path = DEFAULT_PARAMS, profiles_dir: str | Path | None = None) -> tuple[str, list[str] | None]:
    """``(label, keys)``: the settings of ``path`` that differ from its labelled profile, as dotted keys (None
    when the label names no profile file). Quoted in the report, so a run that was edited says how."""
    path = Path(path)
    label, raw = read_params(path)
    profiles_dir = Path(profiles_dir) if profiles_dir else _profiles_beside(path)
    base_path = profiles_dir / f"{label}.yaml"
    if not base_path.exists():
        return label, None
    base = validate(read_params(base_path)[1], base_path).model_dump()
    mine = validate(raw, path).model_dump()
    return label, _diff(base, mine)


def _diff(a, b, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]


PARAMS_HEADER = (
    "# The configuration `dvc repro` runs: every setting of the pipeline, each stage of dvc.yaml listing the keys it\n"
    "# reads. Start from a profile with `looking-inward use-profile NAME` (profiles/: smoke, default, paper); change a\n"
    "# setting here, or per experiment with `dvc exp run -S finetune.lora_rank=32`. Written from profiles/{name}.yaml.\n")


def use_profile(name: str, params: str | Path = DEFAULT_PARAMS, force: bool = False) -> Path:
    """Write ``profiles/<name>.yaml`` to ``params`` (comments kept). Settings edited in ``params`` since it was
    written from its own profile are not overwritten unless ``force``: the error names them."""
    params = Path(params)
    src = profile_path(name, _profiles_beside(params), otherwise="")
    validate(read_params(src)[1], src)
    if params.exists() and not force:
        try:
            label, changed = edits(params, src.parent)
        except ConfigError as exc:
            raise ConfigError(f"{exc}\n(use-profile keeps {params.name} as it is; --force replaces it)") from None
        if changed is None:
            changed = [f"profile: {label} (no such profile)"]
        if changed:
            shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
            raise ConfigError(f"{params} has settings that differ from profiles/{label}.yaml ({shown}); "
                              f"--force replaces them, or save the file as profiles/<name>.yaml first to keep them")
    lines = src.read_text().splitlines(keepends=True)
    while lines and lines[0].startswith("#"):  # the profile file's own header
        lines.pop(0)
    from reproduce.io import atomic_write_bytes

    atomic_write_bytes(params, (PARAMS_HEADER.format(name=name) + "".join(lines)).encode())
    return params


# --------------------------------------------------------------------------- which settings a stage reads
_READ: set[str] | None = None


def record_reads() -> set[str]:
    """Start recording which top-level settings every :class:`Profile` is asked for; returns the live set.
    A stage command records its reads and checks them against the ``params:`` it declares in dvc.yaml."""
    global _READ
    _READ = set()
    return _READ


@contextlib.contextmanager
def unrecorded():
    """Reads inside this block are not recorded: for code that reads settings without changing any output
    (the GPU memory plan's warnings)."""
    global _READ
    saved, _READ = _READ, None
    try:
        yield
    finally:
        _READ = saved


def _note_read(name: str) -> None:
    if _READ is not None:
        _READ.add(name)


_FIELDS = frozenset(Profile.model_fields)


CHECKED = REPO_ROOT / "data" / "params.checked"


def check_params(path: Path = DEFAULT_PARAMS, dvc_yaml: Path | None = None) -> Path:
    """The ``check`` stage, at the head of the pipeline: ``path`` is valid (every key known, every value in
    range) and holds every setting a stage of dvc.yaml declares, else one error naming the key and the fix.
    DVC runs this stage before any stage that reads the settings, so a misspelt key stops ``dvc repro`` (or
    ``dvc exp run``) here, with the package's message, before DVC removes any stage's outputs. Writes
    :data:`CHECKED`, whose content never changes, so a valid edit re-runs only the stages that read it."""
    import yaml as _yaml

    from reproduce.io import atomic_write_bytes

    _name, profile = load_params(path)
    dvc_yaml = Path(dvc_yaml) if dvc_yaml is not None else Path(path).with_name("dvc.yaml")
    if dvc_yaml.exists():
        raw = read_params(path)[1]
        declared: dict[str, list[str]] = {}
        for stage, spec in (_yaml.safe_load(dvc_yaml.read_text()).get("stages") or {}).items():
            for key in spec.get("params") or []:
                if isinstance(key, str):
                    declared.setdefault(key.split(".")[0], []).append(stage)
        missing = {k: v for k, v in declared.items() if k not in raw}
        if missing:
            k, stages = next(iter(sorted(missing.items())))
            raise ConfigError(f"{path} has no `{k}:` section, which the stage(s) {', '.join(stages)} read; copy "
                              f"it from profiles/default.yaml (or `looking-inward use-profile default --force`)")
    atomic_write_bytes(CHECKED, b"params.yaml: valid\n")
    return CHECKED
