"""The behaviour tables the model stages write (``data/*.parquet``), one :class:`~reproduce.schema.Schema` each.

Every stage checks its table against the schema here before writing it, and every stage that reads another's
table checks it on reading. The columns are described where each table is built:

==========================  =====================================  ==========================================
schema                      file                                   written by
==========================  =====================================  ==========================================
``OBJECT_LEVEL``            ``object_level/<model>.parquet``       ``object_level``, ``object_level_trained``
``OBJECT_SAMPLES``          ``object_samples/<model>.parquet``     ``object_level``, ``object_level_trained``
``TRAINING_EXAMPLES``       ``finetuned/*/examples/*.parquet``     ``finetune_self``, ``finetune_cross``,
                                                                   ``behaviour_change``
``META_UNTRAINED``          ``meta_untrained.parquet``             ``meta_untrained``
``META_TRAINED``            ``meta_trained.parquet``               ``meta_trained``
``CALIBRATION``             ``calibration.parquet``                ``calibration``
``BEHAVIOUR_CHANGE``        ``behaviour_change.parquet``           ``behaviour_change``
==========================  =====================================  ==========================================

The concept-injection and mirror-test tables have their schemas in :mod:`reproduce.injection.experiment` and
:mod:`reproduce.mirror.experiment`.
"""

from __future__ import annotations

from reproduce.schema import PROB, Col, Schema

SPLITS = ("train", "test")
KINDS = ("self", "cross")
#: the trained predictors of meta_trained: self, cross, and the sibling (the target's base weights, trained on M1')
TRAINED_KINDS = ("self", "cross", "sibling")
GROUND_TRUTHS = ("base", "trained")

_TASK = [Col("task", "str", null=False), Col("split", "str", null=False, values=SPLITS),
         Col("family", "str", null=False), Col("item_id", "str", null=False)]
# object_level_trained adds the base model and the finetuning seed of the self-trained model M1'
_TRAINED = [Col("base_model", "str", null=False, optional=True), Col("seed", "int", null=False, optional=True)]

OBJECT_LEVEL = Schema("object_level", [
    Col("model", "str", null=False), Col("dtype", "str", null=False), *_TASK,
    Col("prompt_hash", "str", null=False), Col("response", "str", null=False), Col("response_raw", "str", null=False),
    Col("finish", "str", null=False), Col("n_new_tokens", "int", null=False, range=(0, float("inf"))),
    Col("property", "str", null=False), Col("value", "str"), Col("compliant", "bool", null=False), *_TRAINED,
], key=["model", "task", "item_id", "property"])

OBJECT_SAMPLES = Schema("object_samples", [
    Col("model", "str", null=False), Col("dtype", "str", null=False), *_TASK,
    Col("sample", "int", null=False, range=(0, float("inf"))), Col("response", "str", null=False),
    Col("property", "str", null=False), Col("value", "str"), Col("compliant", "bool", null=False), *_TRAINED,
], key=["model", "task", "item_id", "sample", "property"])

TRAINING_EXAMPLES = Schema("training_examples", [
    Col("target", "str", null=False), Col("task", "str", null=False), Col("item_id", "str", null=False),
    Col("property", "str", null=False), Col("prompt", "str", null=False), Col("answer", "str", null=False),
], key=["target", "task", "item_id", "property"])

def _meta(kinds: tuple[str, ...]) -> list:
    """The columns of a meta-level table whose predictors are of ``kinds``."""
    return [
        Col("predictor", "str", null=False), Col("dtype", "str", null=False), Col("target", "str", null=False),
        Col("object_model", "str", null=False), Col("ground_truth", "str", null=False, values=GROUND_TRUTHS),
        Col("seed", "int"), Col("kind", "str", null=False, values=kinds), *_TASK, Col("property", "str", null=False),
        Col("meta_prompt_hash", "str", null=False), Col("meta_response", "str", null=False), Col("meta_value", "str"),
        Col("meta_compliant", "bool", null=False), Col("options", "list", null=False),
        Col("option_probs", "list", null=False, range=PROB), Col("p_outside", "float", range=PROB),
        Col("option_position", "int"), Col("object_value", "str"), Col("object_compliant", "bool", null=False),
        Col("p_object_value", "float", range=PROB), Col("correct", "bool", null=False),
    ]


META_UNTRAINED = Schema("meta_untrained", _meta(KINDS), key=["predictor", "target", "task", "item_id", "property"])

META_TRAINED = Schema("meta_trained", [
    *_meta(TRAINED_KINDS), Col("run", "str", null=False), Col("trained_on", "str", null=False),
    Col("n_examples", "int", null=False, range=(1, float("inf"))), Col("scaling", "bool", null=False),
    Col("mixed_precision", "str", null=False), Col("base_dtype", "str", optional=True),
], key=["run", "ground_truth", "target", "task", "item_id", "property"])

CALIBRATION = Schema("calibration", [
    Col("condition", "str", null=False, values=("untrained", "trained")), Col("run", "str"), Col("seed", "int"),
    Col("predictor", "str", null=False), Col("target", "str", null=False), Col("object_model", "str", null=False),
    Col("kind", "str", null=False, values=KINDS), *_TASK, Col("property", "str", null=False),
    Col("options", "list", null=False), Col("n_samples", "int", null=False, range=(1, float("inf"))),
    Col("n_compliant", "int", null=False, range=(0, float("inf"))),
    Col("n_other", "int", null=False, range=(0, float("inf"))), Col("object_counts", "list", null=False),
    Col("object_probs", "list", null=False, range=PROB),
    # each option's first compliant sample (-1: never sampled), the original's tie-break; optional for older tables
    Col("object_first", "list", optional=True), Col("object_value", "str"), Col("meta_value", "str"),
    Col("meta_probs", "list", null=False, range=PROB), Col("p_outside", "float", range=PROB),
], key=["condition", "run", "predictor", "target", "task", "item_id", "property"])

BEHAVIOUR_CHANGE = Schema("behaviour_change", [
    Col("model", "str", null=False), Col("source", "str", null=False), Col("run", "str", null=False),
    Col("seed", "int", null=False), *_TASK, Col("property", "str", null=False), Col("base_value", "str"),
    Col("source_value", "str"), Col("old_response", "str", null=False), Col("old_value", "str"),
    Col("old_compliant", "bool", null=False), Col("new_response", "str", null=False), Col("new_value", "str"),
    Col("new_compliant", "bool", null=False), Col("changed", "bool", null=False), Col("meta_old_value", "str"),
    Col("meta_old_compliant", "bool", null=False), Col("meta_value", "str"), Col("meta_compliant", "bool", null=False),
    Col("options", "list", null=False), Col("option_probs", "list", null=False, range=PROB),
    Col("p_outside", "float", range=PROB), Col("p_old", "float", range=PROB), Col("p_new", "float", range=PROB),
    Col("matches_old", "bool", null=False), Col("matches_new", "bool", null=False),
], key=["run", "task", "item_id", "property"])
