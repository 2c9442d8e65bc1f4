"""``python -m benchmarks``: every backend side by side with NumPy and the machine's limit.

Prints the results table, writes ``results.json``, ``results.csv`` and ``results.png`` into
``--output`` (default ``bench-results/``), with ``roofline-<workload>.png`` for each workload
timed against its roofline, and exits with status 1 when any row FAILED (a
backend's result differed from NumPy or it raised), 2 for bad options. ``--quick`` is the smoke
run CI uses. The CachedStep hit micro-benchmark alone is ``python -m benchmarks.cache_hits``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import chart, report
from benchmarks.comparison import load_rows
from benchmarks.harness import Options, run
from benchmarks.results import FAILED
from benchmarks.workloads import SIZES, WORKLOADS


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def parse_options(argv: list[str] | None = None) -> Options:
    """The ``Options`` of a command line (argparse exits with status 2 on bad options)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run the stencil workloads on every available backend, verified against "
        "NumPy, timed, and compared with the machine's copy bandwidth.",
    )
    parser.add_argument("--backends", type=_names, help="comma-separated backend names "
                        "(default: every backend available here)")
    parser.add_argument("--workloads", type=_names,
                        help=f"comma-separated workloads (default: {','.join(WORKLOADS)})")
    parser.add_argument("--sizes", type=_names, default=tuple(SIZES),
                        help=f"comma-separated sizes (default: {','.join(SIZES)}; "
                        + ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in SIZES.items())
                        + ")")
    parser.add_argument("--repeat", type=int, help="timed calls per measurement (default: "
                        "200 small, 20 large; --quick: 5 and 2)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run in a few seconds (tiny repeat counts, fewer probes)")
    parser.add_argument("--compare", type=Path, metavar="OLD.json",
                        help="also show speedups against the results.json of an earlier run")
    parser.add_argument("--output", type=Path, default=Path("bench-results"), metavar="DIR",
                        help="directory for results.json/.csv/.png (default: bench-results/)")
    parser.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the Numba and JAX versions of the workloads, those "
                        "installed (default; `pip install -e '.[peers]'`); --no-peers: only "
                        "NumPy and the backends")
    args = parser.parse_args(argv)

    unknown = [size for size in args.sizes if size not in SIZES]
    if unknown or not args.sizes:
        parser.error(f"--sizes: unknown {unknown}; choose from {','.join(SIZES)}")
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    compare_rows = None
    if args.compare is not None:
        try:
            compare_rows = tuple(load_rows(args.compare))
        except (OSError, ValueError) as error:
            parser.error(f"--compare: {error}")
    return Options(
        backends=args.backends or None,
        workloads=args.workloads or None,
        sizes=args.sizes,
        repeat=args.repeat,
        quick=args.quick,
        compare=compare_rows,
        compare_path=str(args.compare) if args.compare else None,
        peers=args.peers,
        output=args.output,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; the exit status is 0 when every row verified, else 1."""
    options = parse_options(argv)
    try:
        result = run(options)
    except ValueError as error:
        print(f"python -m benchmarks: error: {error}", file=sys.stderr)
        return 2
    options.output.mkdir(parents=True, exist_ok=True)
    report.write_json(result, options.output / "results.json")
    report.write_csv(result.rows, options.output / "results.csv")
    charts, note = chart.write_charts(
        result.rows, options.output,
        f"stencilforge on {result.machine.cpu} ({result.machine.cores} cores)",
    )
    print(report.format_report(result))
    if note:
        print(f"note: {note}")
    print(f"\nwritten: {options.output}/results.json, results.csv"
          + "".join(f", {path.name}" for path in charts))
    return 1 if any(row.status == FAILED for row in result.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
