"""``stencilforge``: the command line (``stencilforge cache info|clear|prune``, ``conformance``).

    stencilforge cache info                  where the cache is, each part's size and entries
    stencilforge cache clear                 remove every entry and build
    stencilforge cache prune --max-size 1G   remove the least recently used until it fits
    stencilforge conformance BACKEND [ARGS]  the DSL conformance suite on BACKEND (a name or
                                             module:attribute); ARGS go to pytest

The cache is the one programs use: ``STENCILFORGE_CACHE_DIR``, else the per-user cache
directory.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from backends.cache import cache_directory
from backends.cache_inventory import MAX_SIZE_VARIABLE, inventory, max_size, parse_size, prune
from backends.cache_inventory import clear as clear_cache
from backends.conformance.command import run_conformance

__all__ = ["main"]


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _info(root: Path) -> str:
    parts = inventory(root)
    lines = [f"build cache: {root}", ""]
    lines.append(f"{'part':<28} {'size':>10} {'entries':>8} {'hits':>7} {'misses':>7}")
    for part in parts:
        hits = "-" if part.hits is None else str(part.hits)
        misses = "-" if part.misses is None else str(part.misses)
        lines.append(
            f"{part.name:<28} {_human(part.size):>10} {part.entries:>8} {hits:>7} {misses:>7}"
        )
    bound = max_size()
    limit = _human(bound) if bound else "none"
    total = sum(p.size for p in parts)
    lines += ["", f"total {_human(total)}; bound {limit} ({MAX_SIZE_VARIABLE})"]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stencilforge", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cache = commands.add_parser("cache", help="see and manage the build cache")
    actions = cache.add_subparsers(dest="action", required=True)
    actions.add_parser("info", help="where the cache is, each part's size, entries, hits")
    actions.add_parser("clear", help="remove every entry and build")
    pruning = actions.add_parser("prune", help="remove the least recently used until it fits")
    pruning.add_argument(
        "--max-size", required=True, type=parse_size, help="the size to fit in, e.g. 1G, 500M"
    )
    conformance = commands.add_parser(
        "conformance", help="run the DSL conformance suite on a backend (needs pytest)"
    )
    conformance.add_argument("backend", help="a registered backend name or module:attribute")
    conformance.add_argument(
        "pytest_arguments", nargs=argparse.REMAINDER, help="passed to pytest (-k scans, -x)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status."""
    arguments = _parser().parse_args(argv)
    if arguments.command == "conformance":
        return run_conformance(arguments.backend, arguments.pytest_arguments)
    root = cache_directory()
    if arguments.action == "info":
        print(_info(root))
    elif arguments.action == "clear":
        print(f"freed {_human(clear_cache(root))} in {root}")
    else:
        freed = prune(root, arguments.max_size)
        now = sum(part.size for part in inventory(root))
        print(f"freed {_human(freed)} in {root}; now {_human(now)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
