"""The measurements a process deferred: run when the interpreter exits, or when asked.

A build that predicted a stencil's variant (``backends.c.tuning``, schedule ``"exit"``)
leaves the measurement of its candidates here. They run one at a time, in the order they
were deferred, when the interpreter exits (an ``atexit`` handler, registered with the first
one), or earlier when the program asks (``measure_deferred``, e.g. after a model's first
time step), so they never run beside the program's own work: a measurement takes every core
and tens of MiB of memory bandwidth, and a choice measured beside other work records a
disturbed ranking for good.

What this module keeps is the process's queue: a documented piece of mutable state, private
to the process. A child made by ``fork`` starts with an empty queue (what its parent
deferred is the parent's to measure), and a worker of a ``multiprocessing`` pool (e.g.
``compile_many``'s) defers nothing: its exit would hold up the pool's shutdown, and so the
caller's results. Nothing here starts a thread or leaves a process behind: a measurement is
a subprocess that is waited for.

At exit the measurements stop starting after ``EXIT_BUDGET_SECONDS`` (or at an interrupt);
the stencils left are predicted again by a later process and measured at its exit.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable

__all__ = ["EXIT_BUDGET_SECONDS", "defer", "deferred", "measure_deferred"]

_log = logging.getLogger(__name__)

#: Seconds of measuring at the interpreter's exit after which no further measurement starts.
EXIT_BUDGET_SECONDS = 30.0


class _Queue:
    """The process's deferred measurements: key -> what measures it, in the order deferred
    (dicts keep it), under a lock (builds may run in several threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.measurements: dict[str, Callable[[], None]] = {}
        self.registered = False

    def forget(self) -> None:
        """Empty, in a forked child: a new lock, since the parent's may have been held by
        another thread at the fork."""
        self.lock = threading.Lock()
        self.measurements.clear()


_queue = _Queue()


def defer(key: str, measure: Callable[[], None]) -> bool:
    """Queue ``measure`` (a measurement that records its own result, and logs rather than
    raises when it fails) under ``key`` (once per key), to run at the interpreter's exit or
    at ``measure_deferred``.

    Returns:
        Whether it was queued: False in a ``multiprocessing`` worker, which defers nothing.
    """
    if multiprocessing.parent_process() is not None:
        return False
    with _queue.lock:
        _queue.measurements.setdefault(key, measure)
        if not _queue.registered:
            atexit.register(_at_exit)
            _queue.registered = True
    return True


def deferred() -> tuple[str, ...]:
    """The keys of the measurements not yet run, in the order they will run."""
    with _queue.lock:
        return tuple(_queue.measurements)


def measure_deferred(budget_seconds: float | None = None) -> int:
    """Run the deferred measurements in the caller, one at a time, in the order deferred.

    Args:
        budget_seconds: no measurement starts after this many seconds (None: no bound); the
            ones not started stay queued.

    Returns:
        How many ran (a failed one logged its failure and is not queued again: its stencil
        keeps the predicted variant until a later process measures it).
    """
    start = time.monotonic()
    done = 0
    while budget_seconds is None or time.monotonic() - start < budget_seconds:
        with _queue.lock:
            if not _queue.measurements:
                break
            key = next(iter(_queue.measurements))
            measure = _queue.measurements.pop(key)
        measure()
        done += 1
    return done


def _at_exit() -> None:
    left = len(deferred())
    if not left:
        return
    _log.info("measuring the variants of %d stencil(s) before the interpreter exits", left)
    try:
        measure_deferred(EXIT_BUDGET_SECONDS)
    except KeyboardInterrupt:
        # The user wants out: the measurement's subprocess is killed, nothing is recorded.
        _log.info("deferred measurements interrupted: a later process measures them")
        return
    if deferred():
        _log.info(
            "%d deferred measurement(s) left after %.0f s: a later process measures them",
            len(deferred()),
            EXIT_BUDGET_SECONDS,
        )


os.register_at_fork(after_in_child=_queue.forget)
