"""An import error that names a user's file hiding one of stencilforge's packages.

A ``pipeline.py`` (or ``allocators.py``) in the working directory or beside the script comes
first on ``sys.path``, so Python imports it in place of our package, and our imports then fail
with ``No module named 'pipeline.dsl'; 'pipeline' is not a package``, naming neither.
"""

from __future__ import annotations

import sys


def shadowing_error(*packages: str) -> ImportError | None:
    """The error to raise when one of ``packages`` was imported as a plain module (a file of
    the user's); ``None`` when none was, and the original import error stands."""
    for package in packages:
        module = sys.modules.get(package)
        if module is not None and not hasattr(module, "__path__"):
            where = getattr(module, "__file__", None) or repr(module)
            return ImportError(
                f"{where} hides stencilforge's package {package!r}: Python imported that file "
                f"as {package!r}. Rename it (any name but {package}.py) so that "
                f"'import {package}' finds stencilforge.",
                name=package,
                path=where,
            )
    return None
