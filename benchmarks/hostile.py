"""Hostile arguments against every backend: ``python -m benchmarks.hostile --cases 10000``.

A case is a recipe (plain JSON) for the input and the output of the laplacian program:
strided, reversed, transposed and Fortran views, broadcast and self-overlapping views,
views claiming memory their buffer lacks, byte-swapped, misaligned, read-only and
buffer-backed arrays, subclasses, masked arrays, wrong dtypes and ranks, arrays too small for
the halo, aliased and interleaved outputs, empty domains. Each backend runs its cases in a
subprocess of its own, so a crash is counted, not fatal. A case is

- **refused**: an ``ArgumentError``/``DomainError``/``TypeError``/``ValueError``;
- **correct**: it ran, the output domain equals NumPy's result on copies of the inputs, and
  no byte of the output's buffer outside that domain changed;
- **wrong**: it ran otherwise; **crashed**: the process died on it.

The output is one row per backend: cases, correct, refused, crashed, wrong, and the cases
whose outcome differs from ``embedded_numpy``'s (every backend must agree on what it refuses).
The test suite runs a fixed-size sample of the same generator (``tests/backends``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["build", "main", "recipe", "run_cases", "run_in_subprocess"]

INPUT_KINDS = (
    "contiguous", "strided", "reversed", "transposed", "fortran", "broadcast", "overlapping",
    "claiming", "byteswapped", "misaligned", "readonly", "bytes", "subclass", "masked",
    "float32", "rank2", "small",
)
OUTPUT_KINDS = (
    "contiguous", "strided", "reversed", "transposed", "fortran", "broadcast", "overlapping",
    "claiming", "byteswapped", "misaligned", "readonly", "bytearray", "subclass", "masked",
    "float32", "rank2", "aliased", "interleaved",
)


class _Subclass(np.ndarray):
    pass


def recipe(rng: random.Random) -> dict[str, Any]:
    """One case: the output's shape, and what kind of input and output to make."""
    shape = [rng.choice((0, 1, 2, 3, 5, 8)) for _ in range(3)]
    return {
        "shape": shape,
        "input": rng.choice(INPUT_KINDS),
        "output": rng.choice(OUTPUT_KINDS),
        "step": [rng.choice((1, 2, 3)) for _ in range(3)],
        "seed": rng.randrange(2**31),
    }


def _array(kind: str, shape: tuple[int, ...], step: list[int], values: np.random.Generator,
           owner: np.ndarray | None = None) -> tuple[Any, np.ndarray]:
    """An array of ``kind`` and ``shape``, and the buffer that owns its memory."""
    n = int(np.prod(shape))
    if kind == "strided":
        big = values.uniform(-1, 1, tuple(s * t + 1 for s, t in zip(shape, step, strict=True)))
        return big[1:, 1:, 1:][:: step[0], :: step[1], :: step[2]][: shape[0], : shape[1],
                                                                    : shape[2]], big
    if kind == "reversed":
        base = values.uniform(-1, 1, shape)
        return base[::-1, :, ::-1], base
    if kind == "transposed":
        base = values.uniform(-1, 1, (shape[2], shape[0], shape[1]))
        return base.transpose(1, 2, 0), base
    if kind == "fortran":
        base = np.asfortranarray(values.uniform(-1, 1, shape))
        return base, base
    if kind == "broadcast":
        base = values.uniform(-1, 1, (1, shape[1], shape[2]))
        return np.broadcast_to(base, shape), base
    if kind == "overlapping":
        base = values.uniform(-1, 1, max(n, 1) + 8)
        return as_strided(base, shape, (8, 8, 8), writeable=True), base
    if kind == "claiming":
        base = values.uniform(-1, 1, shape)
        claimed = tuple(s * 1000 + 1 for s in shape)
        return as_strided(base, claimed, base.strides, writeable=True), base
    if kind == "byteswapped":
        base = values.uniform(-1, 1, shape).astype(">f8")
        return base, base
    if kind == "misaligned":
        raw = np.zeros(n * 8 + 1, np.uint8)
        return np.frombuffer(raw.data, np.float64, count=n, offset=1).reshape(shape), raw
    if kind == "readonly":
        base = values.uniform(-1, 1, shape)
        base.flags.writeable = False
        return base, base
    if kind in {"bytes", "bytearray"}:
        data = values.uniform(-1, 1, shape).tobytes()
        buffer = data if kind == "bytes" else bytearray(data)
        array = np.frombuffer(buffer, np.float64).reshape(shape)
        return array, array
    if kind == "subclass":
        base = values.uniform(-1, 1, shape)
        return base.view(_Subclass), base
    if kind == "masked":
        base = values.uniform(-1, 1, shape)
        return np.ma.masked_array(base, mask=base > 0.5), base
    if kind == "float32":
        base = values.uniform(-1, 1, shape).astype(np.float32)
        return base, base
    if kind == "rank2":
        base = values.uniform(-1, 1, shape[:2])
        return base, base
    if kind == "small":
        base = values.uniform(-1, 1, tuple(max(s - 2, 0) for s in shape))
        return base, base
    base = values.uniform(-1, 1, shape)
    return base, base


def build(case: dict[str, Any]) -> tuple[Any, Any, np.ndarray]:
    """``(inp, out, out's owner buffer)`` for a recipe."""
    shape = tuple(case["shape"])
    values = np.random.default_rng(case["seed"])
    inp, inp_owner = _array(case["input"], shape, case["step"], values)
    kind = case["output"]
    if kind == "aliased":
        out, owner = inp, inp_owner
    elif kind == "interleaved":
        owner = values.uniform(-1, 1, (*shape[:2], 2 * shape[2]))
        inp, out = owner[:, :, ::2], owner[:, :, 1::2]
    else:
        out, owner = _array(kind, shape, case["step"], values)
    return inp, out, np.asarray(owner)


def _expected(inp: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """NumPy's laplacian over the output domain ``[1:-1, 1:-1, :]`` of an output of ``shape``.

    Raises:
        ValueError: ``inp`` does not cover that domain plus the halo.
    """
    nI, nJ, nK = shape
    if not (nI > 2 and nJ > 2 and nK > 0):
        return np.zeros((max(nI - 2, 0), max(nJ - 2, 0), nK))
    f = inp
    if any(have < need for have, need in zip(f.shape, shape, strict=True)):
        raise ValueError("the input is smaller than the output")
    return np.asarray(
        -4.0 * f[1:nI - 1, 1:nJ - 1, :nK] + f[2:nI, 1:nJ - 1, :nK] + f[:nI - 2, 1:nJ - 1, :nK]
        + f[1:nI - 1, 2:nJ, :nK] + f[1:nI - 1, :nJ - 2, :nK]
    )


def _domain_bytes(out: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """A mask over the owner's bytes: those of the output domain's elements."""
    mask = np.zeros(owner.nbytes, bool)
    nI, nJ, nK = out.shape
    if nI > 2 and nJ > 2 and nK > 0:
        start = out.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
        i, j, k = np.meshgrid(range(1, nI - 1), range(1, nJ - 1), range(nK), indexing="ij")
        offsets = start + i * out.strides[0] + j * out.strides[1] + k * out.strides[2]
        for byte in range(out.itemsize):
            mask[(offsets + byte).ravel()] = True
    return mask


def run_case(program: Any, case: dict[str, Any]) -> tuple[str, str]:
    """``(outcome, detail)`` of one case on ``program``'s backend."""
    inp, out, owner = build(case)
    before = owner.tobytes(order="A")  # memory order, also for Fortran-ordered owners
    # A view claiming memory its buffer lacks cannot be copied: if it runs, it is wrong.
    claims = case["input"] == "claiming" and case["output"] != "interleaved"
    copy = None if claims else np.array(inp, dtype=np.float64)
    try:
        program(inp, out)
    except (TypeError, ValueError) as error:  # ArgumentError, DomainError and the like
        return "refused", type(error).__name__
    result = np.asarray(out)
    if copy is None or result.ndim != 3 or copy.ndim != 3 or result.dtype != np.float64:
        return "wrong", "ran on arguments of a kind that must be refused"
    try:
        expected = _expected(copy, result.shape)
    except ValueError:
        return "wrong", "ran although the input does not cover the domain"
    if not np.allclose(result[1:-1, 1:-1], expected, rtol=1e-12, atol=0):
        return "wrong", "output domain differs from NumPy"
    after = np.frombuffer(owner.tobytes(order="A"), np.uint8)
    outside = ~_domain_bytes(result, owner)
    if not np.array_equal(after[outside], np.frombuffer(before, np.uint8)[outside]):
        return "wrong", "bytes outside the output domain changed"
    return "correct", ""


def run_cases(reference: str, cases: list[dict[str, Any]]) -> None:
    """Run ``cases`` on the backend ``reference``, one JSON line per case on stdout (flushed
    before the next case starts, so a crash leaves the case it died on known)."""
    from benchmarks.selection import resolve_backend  # noqa: PLC0415
    from benchmarks.workloads import WORKLOADS  # noqa: PLC0415

    program = WORKLOADS["laplacian"].program.with_backend(resolve_backend(reference))
    print("READY", flush=True)
    for case in cases:
        outcome, detail = run_case(program, case)
        print(json.dumps([outcome, detail]), flush=True)


def run_in_subprocess(
    reference: str, cases: list[dict[str, Any]], timeout: float = 600.0
) -> list[tuple[str, str]]:
    """The outcome of each case; a case the process died on is ``("crashed", signal)``, and
    the cases after it are run again in a new process."""
    outcomes: list[tuple[str, str]] = []
    while len(outcomes) < len(cases):
        pending = cases[len(outcomes):]
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.hostile", "--run", reference],
            input=json.dumps(pending), capture_output=True, text=True, timeout=timeout,
            check=False, env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
        if done.returncode != 0 and not lines and "READY" not in done.stdout:
            # It died before its first case: the backend itself cannot be set up.
            raise RuntimeError(f"{reference}: the runner failed to start: {done.stderr[-600:]}")
        outcomes += [(str(a), str(b)) for a, b in lines]
        if done.returncode != 0 and len(outcomes) < len(cases):
            outcomes.append(("crashed", f"exit {done.returncode}: {done.stderr[-300:]}"))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--backends", default="embedded_numpy,c_cpu,dace_cpu")
    parser.add_argument("--run", metavar="BACKEND", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        run_cases(args.run, json.loads(sys.stdin.read()))
        return 0
    rng = random.Random(args.seed)
    cases = [recipe(rng) for _ in range(args.cases)]
    names = [name.strip() for name in args.backends.split(",") if name.strip()]
    results = {name: run_in_subprocess(name, cases) for name in names}
    reference = results.get("embedded_numpy")
    print(f"{args.cases} hostile cases (seed {args.seed}) per backend")
    print(f"  {'backend':<40} correct  refused  crashed  wrong  differs from embedded")
    failed = False
    for name, outcomes in results.items():
        counts = Counter(outcome for outcome, _ in outcomes)
        differs = 0 if reference is None else sum(
            a[0] != b[0] for a, b in zip(outcomes, reference, strict=True)
        )
        failed |= counts["crashed"] > 0 or counts["wrong"] > 0
        print(f"  {name:<40} {counts['correct']:7d}  {counts['refused']:7d}  "
              f"{counts['crashed']:7d}  {counts['wrong']:5d}  {differs}")
        for index, (outcome, detail) in enumerate(outcomes):
            if outcome in {"crashed", "wrong"}:
                print(f"    case {json.dumps(cases[index])}: {outcome}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
