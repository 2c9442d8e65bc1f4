"""Measure the hit time of an in-memory and an on-disk ``CachedStep``.

Run: ``python -m benchmarks.cache_hits``. Prints the median of many hits of each kind, for a
step whose input is a small attrs value (like a stage artifact).
"""

from __future__ import annotations

import statistics
import tempfile
import time

import attrs

from pipeline import CachedStep


@attrs.frozen
class Artifact:
    source: str
    options: tuple[tuple[str, str], ...]


@attrs.frozen
class Translate:
    optimize: bool = True

    def __call__(self, artifact: Artifact) -> str:
        return artifact.source.upper()


def _median_seconds(function: object, argument: object, repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(argument)  # type: ignore[operator]
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def measure(repeat: int = 2000) -> dict[str, float]:
    """Median hit seconds of an in-memory and an on-disk cached step, and of the key alone."""
    artifact = Artifact(
        "int main(void) { return 0; }\n" * 20, (("opt", "-O3"), ("march", "native"))
    )
    memory = CachedStep.in_memory(Translate())
    with tempfile.TemporaryDirectory() as directory:
        disk = CachedStep.on_disk(Translate(), directory=directory)
        memory(artifact)
        disk(artifact)
        return {
            "key (fingerprint of input)": _median_seconds(memory.cache_key, artifact, repeat),
            "in-memory hit": _median_seconds(memory, artifact, repeat),
            "on-disk hit": _median_seconds(disk, artifact, repeat),
        }


def main() -> None:
    for name, seconds in measure().items():
        print(f"{name:28s} {seconds * 1e6:9.1f} us (median)")


if __name__ == "__main__":
    main()
