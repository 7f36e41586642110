"""The statistics of the concept-injection experiments (Lindsey 2025, "Emergent introspective awareness in
large language models"): detection of an injected thought, identification of its concept, prefill
"accidents" and intentional control of an internal representation.

A concept vector is added to a model's residual stream at a layer (reported as a fraction of the model's
depth) with a strength; each (condition, layer fraction, strength) combination is a *cell*. Every model is
fitted on its own rows only: models differ in depth, so a layer fraction means different layers in each,
and nothing is pooled across models.

The package, one job per module (every public name is re-exported here):

* :mod:`.design`: the constants and priors, the table checks and the cell coding (and the common choices
  behind them); :mod:`.likelihood`: the likelihood pieces and posterior-draw helpers the models share;
* one model family each, with its design and summary: :mod:`.detection`, :mod:`.yes_bias`,
  :mod:`.identification`, :mod:`.prefill`, :mod:`.intention`;
* :mod:`.fit`: every per-model fit through the convergence gate (:func:`fit_all`) and the frequentist
  cross-check;
* :mod:`.simulate`: simulated tables with known truth, for the recovery tests.
"""

from analysis.injection.design import (INTERVAL, Q_LOW, Q_HIGH, LOGIT_SD, SCALE_SD, COLUMNS, CONDITIONS, QUESTIONS, INSTRUCTIONS,
                     INJECTED, CELL, check_table)
from analysis.injection.detection import DetectionDesign, detection_design, detection_model, detection_summary
from analysis.injection.yes_bias import YesBiasDesign, yes_bias_design, yes_bias_model, yes_bias_summary
from analysis.injection.identification import IdentificationDesign, identification_design, identification_model, identification_summary
from analysis.injection.prefill import PrefillDesign, prefill_design, prefill_model, prefill_summary
from analysis.injection.intention import IntentionDesign, intention_design, intention_model, intention_summary
from analysis.injection.fit import RESULTS, fit_all, frequentist_summary
from analysis.injection.simulate import (detection_truth_logit, simulate_detection, identification_truth_logit, simulate_identification,
                       simulate_prefill, intention_truth, simulate_intention)

__all__ = ["INTERVAL", "Q_LOW", "Q_HIGH", "LOGIT_SD", "SCALE_SD", "COLUMNS", "CONDITIONS", "QUESTIONS",
           "INSTRUCTIONS", "INJECTED", "CELL", "check_table", "DetectionDesign", "detection_design",
           "detection_model", "detection_summary", "YesBiasDesign", "yes_bias_design", "yes_bias_model",
           "yes_bias_summary", "IdentificationDesign", "identification_design", "identification_model",
           "identification_summary", "PrefillDesign", "prefill_design", "prefill_model", "prefill_summary",
           "IntentionDesign", "intention_design", "intention_model", "intention_summary", "RESULTS", "fit_all",
           "frequentist_summary", "detection_truth_logit", "simulate_detection", "identification_truth_logit",
           "simulate_identification", "simulate_prefill", "intention_truth", "simulate_intention"]
