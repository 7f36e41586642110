"""Versions that decide whether stored results are still valid.

A fingerprint that names only parameters misses two causes of different numbers: a change to the code that
computes them (the loss, the option scoring, a property's parser) and a change of the libraries under it
(torch kernels, transformers' chat templates and attention). :func:`code_version` hashes the source text of
the modules a stage runs, so editing any of them starts fresh shards or retrains; :func:`runtime_versions`
names the installed libraries. Both are cheap and depend on nothing but the installed files.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
from types import ModuleType

from reproduce.io import short_hash

#: libraries whose versions can change the numbers; those not installed are left out
RUNTIME_PACKAGES = ("torch", "transformers", "peft")


def code_version(*modules: str | ModuleType) -> str:
    """A short hash of the source text of ``modules`` (names or module objects), in the order given, each
    labelled by its name: any edit to any of them changes the version, comments and docstrings included."""
    if not modules:
        raise ValueError("code_version needs at least one module")
    parts = []
    for m in modules:
        module = importlib.import_module(m) if isinstance(m, str) else m
        parts.append(f"{module.__name__}\x00{inspect.getsource(module)}")
    return short_hash("\x00\x00".join(parts))


def runtime_versions() -> dict[str, str]:
    """The installed versions of :data:`RUNTIME_PACKAGES`, by package name."""
    return package_versions(RUNTIME_PACKAGES)


def package_versions(names) -> dict[str, str]:
    """The installed versions of the distributions ``names``, by name (those not installed left out)."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def chat_template_hash(lm) -> str | None:
    """A short hash of a loaded model's chat template (None for a model without one): a tokenizer update can
    change the rendered prompts without any change to the code or the weights."""
    template = getattr(lm.tokenizer, "chat_template", None)
    return None if template is None else short_hash(json.dumps(template, sort_keys=True))
