"""Per-call metrics of programs, kept under ``"<program name>@<backend name>"``.

Off by default. Switch on for the whole process with ``STENCILFORGE_METRICS=1``, or for a
block with ``with pipeline.metrics.collect(): ...``. Read with ``get(key)`` or ``snapshot()``.
The registry below is the module's documented global state.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from pipeline import config

__all__ = [
    "ACTIVE",
    "ProgramMetrics",
    "collect",
    "enabled",
    "get",
    "record_call",
    "record_compile",
    "reset",
    "snapshot",
]


@attrs.define
class ProgramMetrics:
    """Timings of one program on one backend."""

    count: int = 0
    compile_seconds: list[float] = attrs.field(factory=list)
    run_seconds: list[float] = attrs.field(factory=list)

    @property
    def median_run_seconds(self) -> float:
        """The median of the recorded calls (NaN before any call)."""
        return statistics.median(self.run_seconds) if self.run_seconds else float("nan")


_lock = threading.Lock()
_registry: dict[str, ProgramMetrics] = {}
_depth = 0
_from_environment = config.metrics()
# Read on every program call: kept equal to enabled() so the hot path is one global lookup.
ACTIVE = _from_environment


def enabled() -> bool:
    """Whether calls are being recorded now."""
    return _from_environment or _depth > 0


@contextmanager
def collect() -> Iterator[None]:
    """Record metrics inside the block (nestable, thread-global)."""
    global _depth, ACTIVE  # noqa: PLW0603  (the documented switch)
    with _lock:
        _depth += 1
        ACTIVE = True
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            ACTIVE = _from_environment or _depth > 0


def _entry(key: str) -> ProgramMetrics:
    entry = _registry.get(key)
    if entry is None:
        entry = _registry.setdefault(key, ProgramMetrics())
    return entry


def record_call(key: str, seconds: float) -> None:
    """Add one call of ``seconds`` under ``key``."""
    with _lock:
        entry = _entry(key)
        entry.count += 1
        entry.run_seconds.append(seconds)


def record_compile(key: str, seconds: float) -> None:
    """Add one compilation (definition -> executable) of ``seconds`` under ``key``."""
    with _lock:
        _entry(key).compile_seconds.append(seconds)


def get(key: str) -> ProgramMetrics:
    """The metrics under ``key`` (``"lap@c_cpu"``); raises ``KeyError`` if none were recorded."""
    with _lock:
        return _copy(_registry[key])


def snapshot() -> dict[str, ProgramMetrics]:
    """A copy of every entry."""
    with _lock:
        return {k: _copy(v) for k, v in _registry.items()}


def _copy(entry: ProgramMetrics) -> ProgramMetrics:
    return ProgramMetrics(entry.count, list(entry.compile_seconds), list(entry.run_seconds))


def reset() -> None:
    """Forget every entry."""
    with _lock:
        _registry.clear()
