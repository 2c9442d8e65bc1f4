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


def _unpickled_counting(step, log):
    with open(log, "a") as file:
        file.write(f"{os.getpid()}\n")
    return CountsUnpickling(step, log)


@attrs.frozen
class CountsUnpickling:
    """Wraps a step; each unpickling appends the unpickling process's id to ``log``."""

    step: object
    log: str

    def __call__(self, inp):
        return self.step(inp)

    def __reduce__(self):
        return (_unpickled_counting, (self.step, self.log))


def _unpickled_only_in(step, pid):
    if os.getpid() != pid:
        raise ModuleNotFoundError("No module named 'steps_only_the_caller_has'")
    return UnpicklableInWorkers(step, pid)


@attrs.frozen
class UnpicklableInWorkers:
    """Wraps a step; pickles in the caller (process ``pid``), fails to unpickle elsewhere, as
    a step from a module that the workers cannot import."""

    step: object
    pid: int

    def __call__(self, inp):
        return self.step(inp)

    def __reduce__(self):
        return (_unpickled_only_in, (self.step, self.pid))
