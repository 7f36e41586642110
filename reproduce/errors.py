"""The project's expected failures: bad params, a missing model or input, data that cannot be analysed.

The command line prints a :class:`ProjectError` as one line that names the problem and the fix, and exits
with status 2; anything else is a bug and shows its traceback (``looking-inward --debug`` shows the
traceback of a ProjectError too). Each subclass keeps the built-in type it refines, so callers that catch
``ValueError`` or ``FileNotFoundError`` still catch it.
"""

from __future__ import annotations


class ProjectError(Exception):
    """An expected failure, stated in terms of what the user must change."""


class MissingInput(ProjectError, FileNotFoundError):
    """An input a stage needs has not been produced yet (run the stage that writes it)."""


class DataError(ProjectError, ValueError):
    """Inputs that exist but cannot be analysed as they are (too small, stale, or inconsistent)."""


class UsageError(ProjectError, ValueError):
    """A command-line argument that names something the project does not have (a figure, an engine)."""


class ModelError(ProjectError, RuntimeError):
    """A model that cannot be resolved or loaded offline, with what to do about it."""
