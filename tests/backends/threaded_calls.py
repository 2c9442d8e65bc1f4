"""Concurrent calls of one stencil on several grids, checked against a reference.

Compiled calls run without the GIL and keep per-thread (c_cpu) or per-library (dace_cpu)
state for their temporaries; calls from several threads at once, on grids of different sizes,
must not disturb each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

Call = Callable[[np.ndarray, np.ndarray], object]

#: Grids below and above the size where the compiled backends switch to OpenMP (32768 points).
GRIDS: Sequence[tuple[int, ...]] = ((12, 11, 5), (40, 44, 24), (9, 30, 7), (52, 36, 20))


def calls_agree_across_threads(
    call: Call,
    reference: Call,
    *,
    seed: int,
    shapes: Sequence[tuple[int, ...]] = GRIDS,
    repeats: int = 20,
    threads: int = 4,
) -> bool:
    """Whether ``call(inp, out)`` matches ``reference(inp, out)`` every time when ``threads``
    threads call it ``repeats`` times each, two threads per grid of ``shapes``."""
    rng = np.random.default_rng(seed)
    inputs = [rng.uniform(-1.0, 1.0, shape) for shape in shapes]
    expected = []
    for inp in inputs:
        out = np.zeros_like(inp)
        reference(inp, out)
        expected.append(out)

    def run(index: int) -> bool:
        grid = index % len(inputs)
        for _ in range(repeats):
            out = np.zeros_like(inputs[grid])
            call(inputs[grid], out)
            if not np.allclose(out, expected[grid], rtol=1e-12, atol=1e-13):
                return False
        return True

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return all(pool.map(run, range(2 * len(shapes))))
