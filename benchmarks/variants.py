"""A/B of backends and step options: ``python -m benchmarks.variants WORKLOAD VARIANT...``.

Each ``VARIANT`` is one of
- ``NAME:STAGE.OPTION=VALUE[;STAGE.OPTION=VALUE...]``: the base backend (``--base``, default
  ``c_cpu``) with the innermost step of ``STAGE`` evolved (``CompilePipeline.evolve_step``),
  e.g. ``o2:compilation.flags=-O2`` or ``notemp:translation.temporaries=False``. Values are
  Python literals, or else plain text (a tuple option takes text split at spaces). Without a
  ``STAGE.`` the option is the translation's (``nopf:prefetch_distance=0``);
- ``NAME=REFERENCE``: another backend, a registered name or ``module:attribute``
  (``dace=dace_cpu``).
The base runs as ``default``. The variants run in alternating rounds, every row timed beside
the copy kernel (ADR 0010, also on a small grid), so a drift of the machine hits all of them
alike. The output is, per variant: the largest difference from the NumPy reference, the
median fraction of the copy bandwidth over the rounds, the median call time, the speed ratio
against ``default`` (>1: faster; the median of the rounds' ratios), and every round's value.
Exit status: 1 when a variant failed (a wrong result or an error), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

import backends
from benchmarks.arrays import output_of, synchronize, to_numpy
from benchmarks.machine import copy_kernel
from benchmarks.measure import backend_arguments, expected_output, measure_backend
from benchmarks.report import seconds
from benchmarks.results import OK
from benchmarks.selection import resolve_backend
from benchmarks.timing import paired_ratio
from benchmarks.workloads import SIZES, WORKLOADS, Workload

__all__ = ["main", "option_variant", "parse_variant", "translation_variant"]

STAGES = ("frontend", "translation", "compilation", "loading")


def _value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``"NAME:OPTION=VALUE;..."`` -> ``(NAME, {OPTION: value})`` (``OPTION`` may be
    ``STAGE.OPTION``; a value that is no Python literal stays text).

    Raises:
        ValueError: the text is not of that form.
    """
    name, colon, options = text.partition(":")
    if not colon or not name:
        raise ValueError(
            f"variant {text!r}: expected NAME:[STAGE.]OPTION=VALUE[;...] or NAME=BACKEND"
        )
    parsed = {}
    for assignment in filter(None, options.split(";")):
        option, equals, value = assignment.partition("=")
        if not equals or not option.strip():
            raise ValueError(f"variant {name!r}: {assignment!r} is not OPTION=VALUE")
        parsed[option.strip()] = _value(value.strip())
    return name, parsed


def option_variant(name: str, base: Any, options: Mapping[str, Any]) -> Any:
    """``base`` named ``name`` with each ``STAGE.OPTION`` (bare: translation) evolved.

    Raises:
        TypeError: an option the stage's step does not have (the message lists its options).
        ValueError: an unknown stage, or a value the step's validators refuse.
    """
    by_stage: dict[str, dict[str, Any]] = {}
    for key, value in options.items():
        stage, dot, option = key.rpartition(".")
        stage = stage if dot else "translation"
        if stage not in STAGES:
            raise ValueError(f"variant {name!r}: {stage!r} is not a stage ({', '.join(STAGES)})")
        by_stage.setdefault(stage, {})[option] = value
    pipeline = base.pipeline
    for stage, changes in by_stage.items():
        current = _innermost(getattr(pipeline, stage))
        for option, value in changes.items():
            if isinstance(value, str) and isinstance(getattr(current, option, None), tuple):
                changes[option] = tuple(value.split())
        pipeline = pipeline.evolve_step(stage, **changes)
    return attrs.evolve(base, name=name, pipeline=pipeline)


def _innermost(step: Any) -> Any:
    while attrs.has(type(step)) and "step" in attrs.fields_dict(type(step)):
        step = step.step
    return step


def translation_variant(name: str, options: Mapping[str, Any]) -> Any:
    """c_cpu named ``name`` with its translation evolved by ``options``."""
    return option_variant(name, backends.c_cpu, options)


def _largest_difference(workload: Workload, size: str, backend: Any) -> float:
    """The largest absolute difference between the backend's result and NumPy's."""
    arguments = backend_arguments(workload, workload.host_arguments(SIZES[size]), backend)
    result = workload.program.with_backend(backend)(*arguments)
    output = output_of(result, arguments[-1])
    synchronize(output)
    difference = np.abs(to_numpy(output) - expected_output(workload, SIZES[size]))
    return float(np.nanmax(difference, initial=0.0))


_EPILOG = """\
variants:
  NAME:STAGE.OPTION=VALUE[;STAGE.OPTION=VALUE...]
      the base backend with the innermost step of STAGE (frontend, translation,
      compilation, loading) evolved: o2:compilation.flags=-O2
  NAME:OPTION=VALUE[;...]
      the same for the translation's options: nopf:prefetch_distance=0
  NAME=BACKEND
      another backend, a registered name or module:attribute: dace=dace_cpu
  VALUE is a Python literal, or else text (split at spaces for a tuple option).

output, per variant and over the rounds:
  diff          the largest absolute difference from the NumPy reference
  median        the median fraction of the copy kernel's bandwidth (bytes per second of
                the variant / of a copy timed beside it; 1.0 is as fast as a copy)
  per call      the median time of one call (s, ms, us, ns)
  Nx default    the speed against the base (>1: faster)
  rounds        each round's fraction of the copy bandwidth
"""


def main(argv: list[str] | None = None) -> int:
    """Run the A/B; the exit status is 1 when a variant failed, 2 for bad arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.variants",
        description=__doc__.split("\n\n")[0],
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("workload", choices=list(WORKLOADS))
    parser.add_argument(
        "variants", nargs="+", metavar="VARIANT", help="NAME:[STAGE.]OPTION=VALUE[;...] "
        "(an option of the base's step; without STAGE the translation's) or NAME=BACKEND"
    )
    parser.add_argument("--base", default="c_cpu",
                        help="the backend the options vary (default: c_cpu)")
    parser.add_argument("--size", choices=list(SIZES), default="large")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per row")
    args = parser.parse_args(argv)
    try:
        base = resolve_backend(args.base)
        chosen: dict[str, Any] = {"default": base}
        for text in args.variants:
            name, equals, reference = text.partition("=")
            if equals and ":" not in name:
                chosen[name] = resolve_backend(reference)
            else:
                name, options = parse_variant(text)
                chosen[name] = option_variant(name, base, options)
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    workload = WORKLOADS[args.workload]
    differences = {}
    for name, backend in chosen.items():
        try:
            differences[name] = _largest_difference(workload, args.size, backend)
        except Exception as error:  # whatever a broken variant raises is the report
            print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
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
    print(
        f"{args.workload} {args.size}: largest difference from NumPy; median fraction of the "
        "copy bandwidth timed beside each row, time per call, speed against default; each "
        "round's fraction"
    )
    for name, values in fractions.items():
        rounds = " ".join(f"{value:.3f}" for value in values)
        median = statistics.median(medians[name])
        # Round by round, as the harness compares rows timed together (ADR 0010).
        speed = paired_ratio(medians["default"], medians[name])
        print(
            f"  {name:<16} diff {differences[name]:.1e}  median {statistics.median(values):.3f} "
            f"of copy bandwidth ({seconds(median)} per call, {speed:.2f}x default)   "
            f"rounds: {rounds}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
