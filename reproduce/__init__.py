"""Everything that touches a language model: tasks, response properties, prompt formats,
the model registry, batched inference and (later) finetuning.

DVC stage entry points live in :mod:`reproduce.self_prediction`; they are thin wrappers over these modules.
"""

__version__ = "0.1.0"
