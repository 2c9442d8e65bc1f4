"""The loop a scan of a slicing plan runs: its generated step, plane by plane along its axis."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["sweep"]


def sweep(
    step: Callable[..., tuple[Any, ...]],
    axis: int,
    forward: bool,
    init: tuple[Any, ...],
    dtypes: tuple[np.dtype[Any], ...],
    args: tuple[Any, ...],
) -> list[np.ndarray[Any, Any]]:
    """Run ``step`` plane by plane along ``axis`` (up or down): the carry components over
    the arguments' common shape, one array each."""
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    first_plane: tuple[slice | int, ...] = (*(slice(None),) * axis, 0)
    others = tuple(d for d in range(len(shape)) if d != axis)
    planes: list[Iterator[Any]] = []
    for a in args:
        if not (isinstance(a, np.ndarray) and a.ndim):
            planes.append(itertools.repeat(a))
        elif a.shape[axis] == 1:  # broadcast along the axis: the same plane at every point
            planes.append(itertools.repeat(a[first_plane]))
        else:
            moved = a.transpose(axis, *others)
            planes.append(iter(moved if forward else moved[::-1]))
    points = range(shape[axis]) if forward else range(shape[axis] - 1, -1, -1)
    # The axis first in memory: each step stores its planes contiguously (the arguments,
    # K-contiguous in the harness, are read strided as NumPy slicing would), and a sweep
    # reading this one reads them contiguously.
    first = (shape[axis], *shape[:axis], *shape[axis + 1 :])
    results = [np.empty(first, dtype) for dtype in dtypes]
    carry = init
    # Broadcast arguments repeat without end: the points bound the loop.
    for point, values in zip(points, zip(*planes, strict=False), strict=False):
        carry = step(*carry, *values)
        for result, value in zip(results, carry, strict=True):
            result[point] = value
    back = (*range(1, axis + 1), 0, *range(axis + 1, len(shape)))
    return [result.transpose(back) for result in results]
