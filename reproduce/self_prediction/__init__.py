"""The DVC stages, one module each: ``datasets``, ``object_level``, ``meta_untrained``, ``finetune_self``,
``object_level_trained``, ``finetune_cross``, ``meta_trained``, ``calibration`` and ``behaviour_change``.

Experiment 1 follows the original study (Binder et al. 2024; felixbinder/introspection_self_prediction): each
model M1 is self-trained on its own base behaviour, giving M1' (once per finetuning seed); M1' answers the
object-level prompts again; the cross-predictor M2 is trained on M1''s train-task behaviour; both trained
predictors are scored against M1''s test-task behaviour. Every trained row is also scored against the base
model's behaviour, a labelled sensitivity variant (``ground_truth = base``).

Each stage validates everything it can (params, datasets, properties, model specs) before loading a model,
works in resumable shards (:mod:`reproduce.shards`) and writes its final tables atomically.

Output tables (parquet, one row per observation):

``data/object_level/<model>.parquet`` -- greedy (temperature 0) object-level behaviour, one row per
item x property: ``model, dtype, task, split, family, item_id, prompt_hash, response, response_raw, finish,
n_new_tokens, property, value, compliant``.

``data/object_samples/<model>.parquet`` -- temperature-1 samples on the calibration subset (the first
``sampling.items_per_task`` items of each test task), one row per item x sample x property:
``model, dtype, task, split, family, item_id, sample, response, property, value, compliant``.

``data/object_level_trained/<model>+self-s<seed>.parquet`` and ``data/object_samples_trained/...`` -- the
same for every self-trained model (``model`` is its name, :func:`trained_model_name`), plus ``base_model``
and ``seed``.

``data/meta_untrained.parquet`` -- every predictor's hypothetical (meta-level) answers on the test tasks,
before any training, joined with every target's object-level behaviour (self and cross), one row per
predictor x target x item x property: ``predictor, dtype, target, object_model, ground_truth, seed, kind
(self|cross), task, split, family, item_id, property, meta_prompt_hash, meta_response, meta_value,
meta_compliant, options, option_probs, p_outside, option_position, object_value, object_compliant,
p_object_value, correct``.
``object_model`` names the exact behaviour a row is scored against (here the untrained target, ``ground_truth
= base``; ``seed`` is missing). ``options``/``option_probs`` are empty for open-set properties (words);
``option_probs`` is renormalised over the options and ``p_outside`` is the mass outside them, both read at
the first generated token that carries content (``option_position``; an opening quote is skipped, so the
distribution describes the same token as the parsed ``meta_value``);
``p_object_value`` is the normalised probability the predictor gave the target's actual value (missing when
the value is outside the options or non-compliant).

``data/finetuned/self/runs.json`` and ``data/finetuned/cross/runs.json`` -- one entry per finetune: ``run,
predictor, target, kind, seed, trained_on`` (the behaviour its pairs describe), ``n_examples, scaling, steps,
first_loss, final_loss, mixed_precision, base_dtype`` (as resolved on the hardware), ``fingerprint``; each run's
``adapter/``, ``train_log.tsv`` (step, loss) and ``summary.json`` beside it, and the training pairs in
``examples/``.

``data/meta_trained.parquet`` -- like ``meta_untrained`` for every trained predictor about its own target,
twice: ``ground_truth = trained`` (scored against the self-trained target of the run's seed, ``object_model =
<target>+self-s<seed>``: the main result) and ``ground_truth = base`` (scored against the untrained target);
with ``seed, run, trained_on, n_examples, scaling, mixed_precision, base_dtype`` (``scaling`` marks the smaller
cross-prediction runs of the sweep). Every model-run table has a ``dtype`` column: the dtype inference ran
at, ``auto`` resolved.

``data/calibration.parquet`` (experiment 2) and ``data/behaviour_change.parquet`` (experiment 3): see
:func:`run_calibration` and :func:`run_behaviour_change`.

Modules: :mod:`.runs` (the validated plan with the task datasets, the finetuning runs), :mod:`.task_datasets`,
:mod:`.object_level`, :mod:`.meta_level`, :mod:`.finetuning`, :mod:`.calibration`, :mod:`.behaviour_change` (one per
stage); :mod:`.tasks`, :mod:`.task_content`, :mod:`.task_data`, :mod:`.properties`, :mod:`.schemas`,
:mod:`.training_pairs`, :mod:`.workloads`, :mod:`.original_release`. The kit every model stage shares is
:mod:`reproduce.stage`.
Each stage's command imports only its own module, so dvc.yaml lists exactly the code each stage runs
(:mod:`reproduce.pipeline`). The names below are re-exported lazily, so importing this package loads none of
them.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "behaviour_change_plan": "behaviour_change",
    "run_behaviour_change": "behaviour_change",
    "object_distribution": "calibration",
    "run_calibration": "calibration",
    "Plan": "runs",
    "TrainingRun": "runs",
    "cross_runs": "runs",
    "self_runs": "runs",
    "trained_model_name": "runs",
    "run_datasets": "task_datasets",
    "run_finetune_cross": "finetuning",
    "run_finetune_self": "finetuning",
    "META_MAX_NEW_TOKENS": "properties",
    "join_targets": "meta_level",
    "meta_predictions": "meta_level",
    "run_meta_trained": "meta_level",
    "run_meta_untrained": "meta_level",
    "OBJECT_COLUMNS": "object_level",
    "SAMPLE_COLUMNS": "object_level",
    "object_behaviour": "object_level",
    "object_samples": "object_level",
    "run_object_level": "object_level",
    "run_object_level_trained": "object_level",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
