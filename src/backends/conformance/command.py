"""``stencilforge conformance BACKEND``: the shipped suite on one backend, from any directory.

It runs pytest on ``backends.conformance`` with the plugin, apart from the configuration of
the directory it is started in (a project's ``addopts`` or ``testpaths`` do not apply), and
prints pytest's report with the summary per feature.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence

from benchmarks.selection import resolve_backend

__all__ = ["run_conformance"]

#: The exit status of a command line that cannot start the suite (pytest's own for usage).
USAGE_ERROR = 4


def run_conformance(reference: str, pytest_arguments: Sequence[str] = ()) -> int:
    """Run the conformance suite on the backend ``reference`` names; pytest's exit status.

    Args:
        reference: a registered backend name, an installed entry point's name, or
            ``module:attribute`` importable from the current directory or ``PYTHONPATH``.
        pytest_arguments: more arguments for pytest (``-k scans``, ``-x``, ``-n 4``).

    Returns:
        0 when every check passed; pytest's status otherwise; :data:`USAGE_ERROR` when pytest
        is not installed or ``reference`` finds no backend (the reason is on stderr).
    """
    if importlib.util.find_spec("pytest") is None:
        print("stencilforge conformance needs pytest: pip install pytest", file=sys.stderr)
        return USAGE_ERROR
    try:
        resolve_backend(reference)
    except ValueError as error:
        print(f"stencilforge conformance {reference}: {error}", file=sys.stderr)
        return USAGE_ERROR
    import pytest  # noqa: PLC0415  (an optional dependency: checked above)

    return int(pytest.main([
        "-c", os.devnull,  # no configuration file of the current directory applies
        "-p", "no:cacheprovider",
        "-p", "backends.conformance.plugin",
        "--pyargs", "backends.conformance",
        "--stencilforge-backend", reference,
        *pytest_arguments,
    ]))
