"""Everything that touches a language model.

The shared layer (plumbing: errors, io, config, schema, shards, versioning, hardware, dist, pipeline, citation,
cards, timings; :mod:`reproduce.stage`, the kit every model stage shares; :mod:`reproduce.lm`, models, prompt
formats, the engine, LoRA finetuning, steering and the judge) knows no experiment. Above it, one subpackage per
experiment family, each importing only the shared layer: :mod:`reproduce.self_prediction` (Looking Inward,
experiments 1-3), :mod:`reproduce.injection` (concept injection) and :mod:`reproduce.mirror` (the mirror test).
"""

__version__ = "0.1.0"
