"""Steps for the runner tests, importable by worker processes (spawn imports them by name)."""

from __future__ import annotations

import os

import attrs


@attrs.frozen
class FailingFor:
    """Wraps a step; raises for programs whose name contains ``marker``."""

    step: object
    marker: str

    def __call__(self, inp):
        name = inp.ir.name if hasattr(inp, "ir") else inp.entry_point
        if self.marker in name:
            raise ValueError(f"refusing {name} on purpose")
        return self.step(inp)


@attrs.frozen
class KillsWorkerFor:
    """Wraps a compilation; the worker process dies (as if killed) on a marked program."""

    step: object
    marker: str

    def __call__(self, source):
        if self.marker in source.entry_point:
            os._exit(9)
        return self.step(source)
