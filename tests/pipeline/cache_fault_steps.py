"""A disk-cached step and a driver for the cache fault tests, run in fresh interpreters.

``python cache_fault_steps.py DIRECTORY LOG X [X ...]`` computes ``Doubling(LOG)`` of each X
through ``CachedStep.on_disk(..., directory=DIRECTORY)`` and prints one JSON line: the
results, the warnings raised and the cache's counters. Every computation appends a line to
LOG, so a test sees what was recomputed.
"""

from __future__ import annotations

import json
import sys
import warnings

import attrs


@attrs.frozen
class Doubling:
    log: str
    size: int = 0

    def __call__(self, x: int) -> dict[str, object]:
        with open(self.log, "a") as log:
            log.write(f"{x}\n")
        return {"x": x, "twice": 2 * x, "padding": "." * self.size}


def main(directory: str, log: str, size: int, xs: list[int]) -> None:
    from cache_fault_steps import Doubling as step  # noqa: PLC0415  (by name, not __main__)
    from pipeline import CachedStep  # noqa: PLC0415

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cached = CachedStep.on_disk(step(log, size), directory=directory)
        results = [cached(x)["twice"] for x in xs]
    stats = cached.cache.stats
    print(json.dumps({
        "results": results,
        "warnings": [str(w.message) for w in caught],
        "hits": stats.hits,
        "misses": stats.misses,
        "damaged": stats.damaged,
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(x) for x in sys.argv[4:]])
