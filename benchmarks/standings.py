"""Per workload and size: which timed row was fastest, and our best backend against the best peer.

``standings(rows)`` reads the verified, timed rows of one run and returns one ``Standing`` per
(workload, size), in the order the rows came: the fastest row of any kind (NumPy, a
stencilforge backend, a peer), the fastest stencilforge backend, the fastest peer, and the
ratio of the two (the peer's time over ours, round by round as ``results.ratio`` takes it:
above 1, ours is faster).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from benchmarks.results import BACKEND, OK, PEER, Row, ratio

__all__ = ["Standing", "standings"]


@attrs.frozen
class Standing:
    """How one (workload, size) came out.

    Attributes:
        fastest: the backend (or ``"numpy"``, or the peer) with the smallest median.
        best_ours: the fastest stencilforge backend, ``None`` if none was timed.
        best_peer: the fastest peer, ``None`` if none was timed.
        ratio_to_best_peer: the best peer's time / our best backend's (> 1: ours is faster),
            compared round by round (``results.ratio``); ``None`` without both.
    """

    workload: str
    size: str
    fastest: str
    best_ours: str | None
    best_ours_median: float | None
    best_peer: str | None
    best_peer_median: float | None
    ratio_to_best_peer: float | None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dictionary."""
        return attrs.asdict(self)


def _fastest(rows: list[Row]) -> Row | None:
    return min(rows, key=lambda row: row.median or 0.0, default=None)


def standings(rows: Iterable[Row]) -> tuple[Standing, ...]:
    """One ``Standing`` per (workload, size) that has a timed row (status ok, a median)."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.status == OK and row.median:
            groups.setdefault((row.workload, row.size), []).append(row)
    result = []
    for (workload, size), timed in groups.items():
        fastest = _fastest(timed)
        assert fastest is not None  # a group has at least one row
        ours = _fastest([row for row in timed if row.kind == BACKEND])
        peer = _fastest([row for row in timed if row.kind == PEER])
        result.append(Standing(
            workload, size, fastest.backend,
            ours.backend if ours else None, ours.median if ours else None,
            peer.backend if peer else None, peer.median if peer else None,
            ratio(peer, ours) if peer and ours else None,
        ))
    return tuple(result)
