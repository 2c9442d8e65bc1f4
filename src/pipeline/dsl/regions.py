"""Index regions: the conditions of ``concat_where``, like ``(K == 0) | (I >= n)``.

A ``Region`` is a union of boxes; a box bounds some dimensions, each by an ``Interval``
``max(lowers) <= x < min(uppers)`` (no lower: from minus infinity; no upper: to infinity).
A bound is an integer, or a scalar parameter plus an integer (``n - 1``), so a region can
be written once in the IR and resolved at each call with the scalars' values. Comparing a
``Dimension`` with an integer makes one (``K == 0``); ``&``, ``|`` and ``~`` combine them,
exactly on all integers: a located array's grid indices may be negative (ADR 0026). Element
indices are not: ``nonnegative()`` drops the boxes below index 0, for regions in the outputs'
elements (the IR's, from the ``array_origins`` pass on).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

import attrs

__all__ = ["Bound", "Interval", "Region", "compare"]


@attrs.frozen
class Bound:
    """``scalars[param] + offset``, or ``offset`` alone without a parameter."""

    offset: int
    param: str | None = None

    def value(self, scalars: Mapping[str, int]) -> int:
        return self.offset + (int(scalars[self.param]) if self.param is not None else 0)

    def __add__(self, amount: int) -> Bound:
        return attrs.evolve(self, offset=self.offset + amount)

    def __str__(self) -> str:
        if self.param is None:
            return str(self.offset)
        sign = "+" if self.offset >= 0 else "-"
        return f"{self.param} {sign} {abs(self.offset)}" if self.offset else self.param


@attrs.frozen
class Interval:
    """``max(lowers) <= index < min(uppers)`` along ``dim``."""

    dim: str
    lowers: tuple[Bound, ...] = ()
    uppers: tuple[Bound, ...] = ()

    def meet(self, other: Interval) -> Interval:
        return Interval(
            self.dim,
            _tightest(self.lowers + other.lowers, max),
            _tightest(self.uppers + other.uppers, min),
        )

    def shifted(self, amount: int) -> Interval:
        return Interval(
            self.dim, tuple(b + amount for b in self.lowers), tuple(b + amount for b in self.uppers)
        )

    def resolve(self, scalars: Mapping[str, int]) -> tuple[int | None, int | None]:
        lows = [b.value(scalars) for b in self.lowers]
        highs = [b.value(scalars) for b in self.uppers]
        return (max(lows) if lows else None, min(highs) if highs else None)


def _tightest(bounds: tuple[Bound, ...], pick: object) -> tuple[Bound, ...]:
    """Distinct bounds, the literal ones reduced to the tightest (``pick`` is max or min)."""
    literal = [b.offset for b in bounds if b.param is None]
    symbolic = sorted({b for b in bounds if b.param is not None}, key=lambda b: (b.param, b.offset))
    kept = [Bound(pick(literal))] if literal else []  # type: ignore[operator]
    return tuple(kept + symbolic)


Box = tuple[Interval, ...]


def _meet_boxes(a: Box, b: Box) -> Box | None:
    """The intersection of two boxes (None when it is empty for every value of the scalars:
    only literal bounds can tell)."""
    by_dim = {i.dim: i for i in a}
    for interval in b:
        by_dim[interval.dim] = (
            by_dim[interval.dim].meet(interval) if interval.dim in by_dim else interval
        )
    box = tuple(by_dim[d] for d in sorted(by_dim))
    for interval in box:
        lows = [x.offset for x in interval.lowers if x.param is None]
        highs = [x.offset for x in interval.uppers if x.param is None]
        if lows and highs and max(lows) >= min(highs):
            return None
    return box


def _below_zero(box: Box) -> bool:
    """Whether ``box`` lies below index 0 along some dimension, whatever the scalars."""
    for interval in box:
        highs = [x.offset for x in interval.uppers if x.param is None]
        if highs and min(highs) <= 0:
            return True
    return False


@attrs.frozen
class Region:
    """A union of boxes of indices (see the module docstring).

    Attributes:
        boxes: the boxes; an empty tuple is the empty region, a box without intervals
            everything.
    """

    boxes: tuple[Box, ...]

    @classmethod
    def everywhere(cls) -> Region:
        return cls(((),))

    @property
    def dims(self) -> frozenset[str]:
        """The dimensions the region constrains."""
        return frozenset(i.dim for box in self.boxes for i in box)

    @property
    def params(self) -> frozenset[str]:
        """The scalar parameters its bounds name."""
        return frozenset(
            b.param
            for box in self.boxes
            for i in box
            for b in (*i.lowers, *i.uppers)
            if b.param is not None
        )

    def __and__(self, other: Region) -> Region:
        boxes = []
        for a, b in itertools.product(self.boxes, other.boxes):
            box = _meet_boxes(a, b)
            if box is not None and box not in boxes:
                boxes.append(box)
        return Region(tuple(boxes))

    def __or__(self, other: Region) -> Region:
        return Region(self.boxes + tuple(b for b in other.boxes if b not in self.boxes))

    def __invert__(self) -> Region:
        result = Region.everywhere()
        for box in self.boxes:
            outside: list[Box] = []
            for interval in box:
                outside += [(Interval(interval.dim, (), (b,)),) for b in interval.lowers]
                outside += [(Interval(interval.dim, (b,), ()),) for b in interval.uppers]
            result = result & Region(tuple(outside))
        return result

    def nonnegative(self) -> Region:
        """The region without its boxes below index 0 (for element indices, never negative)."""
        return Region(tuple(box for box in self.boxes if not _below_zero(box)))

    def __bool__(self) -> bool:
        raise TypeError("an index condition has no truth value; use it in concat_where(cond, a, b)")

    def shifted(self, offsets: Mapping[str, int]) -> Region:
        """The region moved by ``offsets`` (point ``x`` is in the result when ``x - offset``
        is in this one)."""
        return Region(
            tuple(tuple(i.shifted(offsets.get(i.dim, 0)) for i in box) for box in self.boxes)
        )

    def renamed(self, bounds: Mapping[str, Bound]) -> Region:
        """The region with each parameter named in ``bounds`` replaced by its bound (a
        field operator's parameter by the argument of a call)."""

        def replace(bound: Bound) -> Bound:
            if bound.param is None or bound.param not in bounds:
                return bound
            return bounds[bound.param] + bound.offset

        return Region(
            tuple(
                tuple(
                    Interval(
                        i.dim,
                        tuple(replace(b) for b in i.lowers),
                        tuple(replace(b) for b in i.uppers),
                    )
                    for i in box
                )
                for box in self.boxes
            )
        )

    def resolve(
        self, scalars: Mapping[str, int]
    ) -> Iterator[dict[str, tuple[int | None, int | None]]]:
        """The boxes with the scalars' values, each as (start, stop) per constrained
        dimension (None: unbounded), empty ones left out."""
        for box in self.boxes:
            resolved = {i.dim: i.resolve(scalars) for i in box}
            if all(lo is None or hi is None or lo < hi for lo, hi in resolved.values()):
                yield resolved

    def bounding(
        self, domain: Mapping[str, tuple[int, int]], scalars: Mapping[str, int]
    ) -> dict[str, tuple[int, int]] | None:
        """The smallest box holding this region's part of ``domain`` (start, stop per
        dimension of the domain), or None when that part is empty."""
        found: dict[str, tuple[int, int]] | None = None
        for box in self.resolve(scalars):
            cut = {}
            for dim, (start, stop) in domain.items():
                lo, hi = box.get(dim, (None, None))
                low = start if lo is None else max(start, lo)
                high = stop if hi is None else min(stop, hi)
                cut[dim] = (low, high)
            if any(low >= high for low, high in cut.values()):
                continue
            if found is None:
                found = cut
            else:
                found = {
                    d: (min(found[d][0], cut[d][0]), max(found[d][1], cut[d][1])) for d in found
                }
        return found

    def __str__(self) -> str:
        if not self.boxes:
            return "nowhere"
        parts = []
        for box in self.boxes:
            terms = []
            for interval in box:
                terms += [f"{interval.dim} >= {b}" for b in interval.lowers]
                terms += [f"{interval.dim} < {b}" for b in interval.uppers]
            parts.append(" & ".join(terms) or "everywhere")
        return " | ".join(f"({p})" if len(parts) > 1 else p for p in parts)


def compare(dim: str, op: str, bound: Bound) -> Region:
    """The region where ``index(dim) <op> bound`` (``op`` a Python comparison)."""
    if op == "==":
        return Region(((Interval(dim, (bound,), (bound + 1,)),),))
    if op == "!=":
        return ~compare(dim, "==", bound)
    if op == "<":
        return Region(((Interval(dim, (), (bound,)),),))
    if op == "<=":
        return Region(((Interval(dim, (), (bound + 1,)),),))
    if op == ">":
        return Region(((Interval(dim, (bound + 1,), ()),),))
    if op == ">=":
        return Region(((Interval(dim, (bound,), ()),),))
    raise ValueError(f"not a comparison: {op!r}")
