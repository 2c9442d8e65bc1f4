"""A/B of c_cpu translation options: ``python -m benchmarks.variants WORKLOAD VARIANT...``.

Each ``VARIANT`` is ``NAME:OPTION=VALUE[;OPTION=VALUE...]`` with ``CTranslation`` options and
Python literals for values, e.g. ``nopf:prefetch_distance=0`` or ``wide:tile_sizes=(16,64)``;
c_cpu's own translation runs as ``default``. The variants run in alternating rounds, every row
timed beside the copy kernel (ADR 0010, also on a small grid), so a drift of the machine hits
all of them alike; the output is each variant's median fraction of the copy bandwidth over the
rounds, its median call time, and every round's value. Exit status: 1 when a variant failed
(a wrong result or an error), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
from collections.abc import Mapping
from typing import Any

import attrs

import allocators
import backends
from backends import CompiledBackend
from benchmarks.machine import copy_kernel
from benchmarks.measure import measure_backend
from benchmarks.report import seconds
from benchmarks.results import OK
from benchmarks.workloads import SIZES, WORKLOADS

__all__ = ["main", "parse_variant", "translation_variant"]


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``"NAME:OPTION=VALUE;..."`` -> ``(NAME, {OPTION: value})``.

    Raises:
        ValueError: the text is not of that form, or a value is not a Python literal.
    """
    name, colon, options = text.partition(":")
    if not colon or not name:
        raise ValueError(f"variant {text!r}: expected NAME:OPTION=VALUE[;OPTION=VALUE...]")
    parsed = {}
    for assignment in filter(None, options.split(";")):
        option, equals, value = assignment.partition("=")
        if not equals:
            raise ValueError(f"variant {name!r}: {assignment!r} is not OPTION=VALUE")
        try:
            parsed[option.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError) as error:
            raise ValueError(
                f"variant {name!r}: the value of {option.strip()!r} is not a Python literal: "
                f"{value!r}"
            ) from error
    return name, parsed


def translation_variant(name: str, options: Mapping[str, Any]) -> CompiledBackend:
    """c_cpu with its translation step evolved by ``options``, named ``name``.

    Raises:
        TypeError: an option that ``CTranslation`` does not have.
        ValueError: a value its validators refuse.
    """
    pipeline = backends.c_cpu.pipeline
    step = attrs.evolve(pipeline.translation.step, **options)
    return CompiledBackend(
        name,
        allocators.NumPyBufferAllocator(),
        attrs.evolve(pipeline, translation=attrs.evolve(pipeline.translation, step=step)),
    )


def main(argv: list[str] | None = None) -> int:
    """Run the A/B; the exit status is 1 when a variant failed, 2 for bad arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.variants", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("workload", choices=list(WORKLOADS))
    parser.add_argument("variants", nargs="+", metavar="NAME:OPTION=VALUE[;...]")
    parser.add_argument("--size", choices=list(SIZES), default="large")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per row")
    args = parser.parse_args(argv)
    try:
        chosen = {"default": backends.c_cpu}
        for text in args.variants:
            name, options = parse_variant(text)
            chosen[name] = translation_variant(name, options)
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    workload = WORKLOADS[args.workload]
    kernel = copy_kernel()
    fractions: dict[str, list[float]] = {name: [] for name in chosen}
    medians: dict[str, list[float]] = {name: [] for name in chosen}
    for _ in range(max(args.rounds, 1)):
        for name, backend in chosen.items():
            row = measure_backend(workload, args.size, name, backend, args.repeat, kernel)
            if row.status != OK or row.median is None or row.copy_bandwidth is None:
                print(f"{name}: {row.status}: {row.message}", file=sys.stderr)
                return 1
            fractions[name].append(row.bytes_per_call / row.median / row.copy_bandwidth)
            medians[name].append(row.median)
    print(f"{args.workload} {args.size}: fraction of the copy bandwidth timed beside each row")
    for name, values in fractions.items():
        rounds = " ".join(f"{value:.3f}" for value in values)
        print(
            f"  {name:<16} median {statistics.median(values):.3f} "
            f"({seconds(statistics.median(medians[name]))} per call)   rounds: {rounds}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
