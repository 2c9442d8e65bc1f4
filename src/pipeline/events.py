"""Stage events: what each step of a pipeline run reports, and who hears it.

``subscribe(callback)`` registers a callback for every ``StageEvent`` of every pipeline run in
this process (the registry is this module's one piece of global state, under a lock).
``STENCILFORGE_DUMP_STAGES`` names a directory where ``StageDump`` writes every artifact.
A compile worker records its events (``recorded``) and its caller delivers them (``deliver``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import attrs

from pipeline.config import DUMP_STAGES_VARIABLE, dump_stages
from pipeline.steps import ReportsCacheHits, step_name

__all__ = [
    "DUMP_STAGES_VARIABLE",
    "StageDump",
    "StageEvent",
    "StageSubscription",
    "deliver",
    "dump_directory",
    "recorded",
    "run_step",
    "subscribe",
]

T = TypeVar("T")


@attrs.frozen
class StageEvent:
    """Emitted after each step of a pipeline run.

    Attributes:
        stage: the pipeline field that ran (``"frontend"``, ``"translation"``, ...).
        step: the name of the step object (see ``step_name``).
        artifact: what the step returned.
        seconds: wall-clock duration of the step.
        cache_hit: whether a cached step answered from its cache.
    """

    stage: str
    step: str
    artifact: object = attrs.field(repr=False)
    seconds: float
    cache_hit: bool = False


_subscribers_lock = threading.Lock()
# Registry of stage-event callbacks: the one piece of mutable global state of this module.
_subscribers: dict[int, Callable[[StageEvent], None]] = {}
_next_token = 0


@attrs.frozen
class StageSubscription:
    """A registered stage-event callback; ``unsubscribe()`` or ``with`` removes it."""

    token: int

    def unsubscribe(self) -> None:
        """Stop delivering events to the callback (idempotent)."""
        with _subscribers_lock:
            _subscribers.pop(self.token, None)

    def __enter__(self) -> StageSubscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unsubscribe()


def subscribe(callback: Callable[[StageEvent], None]) -> StageSubscription:
    """Deliver every stage event of every pipeline run in this process to ``callback``.

    Callbacks run synchronously on the thread that ran the step; an exception in a callback
    propagates to the caller of the pipeline.

    Returns:
        a handle whose ``unsubscribe()`` removes the callback; it is also a context manager.
    """
    global _next_token  # noqa: PLW0603  (the documented registry)
    with _subscribers_lock:
        _next_token += 1
        _subscribers[_next_token] = callback
        return StageSubscription(_next_token)


def dump_directory() -> Path | None:
    """Where to write every stage artifact of every compile (``STENCILFORGE_DUMP_STAGES``,
    read at each call: ``pipeline.config.dump_stages``)."""
    return dump_stages()


@attrs.define
class StageDump:
    """A stage-event callback that writes every artifact to ``directory``, one file each.

    Files are numbered in order: ``0001-frontend-<step>.txt``; text artifacts (generated
    source, IR) are written as text, others as their ``repr``.
    """

    directory: Path
    count: int = 0

    def __call__(self, event: StageEvent) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.count += 1
        artifact = event.artifact
        text = getattr(artifact, "text", None)
        ir = getattr(artifact, "ir", None)
        body = text if isinstance(text, str) else str(ir) if ir is not None else repr(artifact)
        safe_step = "".join(c if c.isalnum() or c in "._" else "_" for c in event.step)
        name = f"{os.getpid()}-{self.count:04d}-{event.stage}-{safe_step}.txt"
        (self.directory / name).write_text(body)


# Per thread: the list that events of steps run on this thread go to instead of the
# subscribers, while a compile worker records them for its caller (``recorded``).
_recording = threading.local()


def deliver(events: Iterable[StageEvent]) -> None:
    """Hand ``events`` to every subscriber, in order (a compile worker's, in its caller)."""
    with _subscribers_lock:
        callbacks = list(_subscribers.values())
    for event in events:
        for callback in callbacks:
            callback(event)


@contextlib.contextmanager
def recorded() -> Iterator[list[StageEvent]]:
    """Within the block, the events of steps run on this thread go to the list it yields,
    not to the subscribers: a compile worker sends them back to the caller, which
    delivers them (``deliver``) in order with the program's other stages."""
    previous = getattr(_recording, "events", None)
    events: list[StageEvent] = []
    _recording.events = events
    try:
        yield events
    finally:
        _recording.events = previous


def run_step(stage: str, step: Callable[[Any], T], inp: object) -> T:
    """``step(inp)``, timed, with its ``StageEvent`` emitted (``cache_hit`` from steps that
    report it)."""
    start = time.perf_counter()
    if isinstance(step, ReportsCacheHits):
        out, hit = step.call_with_hit(inp)
    else:
        out, hit = step(inp), False
    seconds = time.perf_counter() - start
    events = getattr(_recording, "events", None)
    if events is not None:
        events.append(StageEvent(stage, step_name(step), out, seconds, hit))
    elif _subscribers:
        deliver((StageEvent(stage, step_name(step), out, seconds, hit),))
    return out
