"""A second toolchain on stencilforge's framework: elementwise expressions compiled to C.

    ElementwiseFunction("a * 2 + b", backend)(a, b, out)        # out[i] = a[i] * 2 + b[i]
    "a * 2 + b" --parse--> Program --to_c--> C source --cc--> .so --ctypes--> executable

Nothing here is a stencil; the framework gives it dispatch (a table per dtype, checks before
native code runs, metrics), lower()/compile(), disk caches, compile_many and stage events.
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

import pipeline as sf
from allocators import DeviceType

C = sf.SourceFormat("c", DeviceType.CPU)
C_TYPES = {"float64": "double", "float32": "float"}
OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


class ExpressionError(sf.SourceError, ValueError):
    """An expression this toolchain cannot compile (shown without our frames)."""


@attrs.frozen
class Expression:  # the definition: what the user wrote, and the name messages use
    text: str
    name: str


@attrs.frozen
class Program:  # the frontend's output: the inputs in order, and the expression as C
    name: str
    inputs: tuple[str, ...]
    c_expression: str
    compile_time_args: sf.CompileTimeArgs


def _to_c(node: ast.expr, text: str) -> str:
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        op = OPERATORS[type(node.op)]
        return f"({_to_c(node.left, text)} {op} {_to_c(node.right, text)})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_to_c(node.operand, text)})"
    if isinstance(node, ast.Name) and node.id != "out":
        return f"v_{node.id}[i]"  # prefixed: a vector called n or i is no C variable of ours
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return repr(float(node.value))
    where = f"{text!r}, column {node.col_offset + 1}: {ast.unparse(node)!r}"
    raise ExpressionError(f"{where} is not a name, a number or + - * / of them")


def parse(concrete: sf.ConcreteDefinition[Expression]) -> Program:
    """Frontend: ``Expression`` (with its compile-time arguments) -> ``Program``."""
    text = concrete.definition.text
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"{text!r}: {error.msg} at column {error.offset}") from None
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
    body = _to_c(tree.body, text)
    return Program(concrete.definition.name, tuple(names), body, concrete.compile_time_args)


def to_c(program: Program) -> sf.ProgramSource:  # translation: a C loop for the dtype
    scalar = C_TYPES[program.compile_time_args.get("dtype")]
    inputs = "".join(f"const {scalar}* restrict v_{name}, " for name in program.inputs)
    text = (
        f"#include <stdint.h>\nvoid sf_elementwise(int64_t n, {inputs}{scalar}* restrict out)"
        f" {{\n    for (int64_t i = 0; i < n; ++i) out[i] = {program.c_expression};\n}}\n"
    )
    return sf.ProgramSource(C, text, "sf_elementwise")


@attrs.frozen
class CCompile:
    """Compilation: ``cc`` into ``directory``, published atomically under the source's hash."""

    directory: str
    flags: tuple[str, ...] = ("-O2", "-shared", "-fPIC")
    accepts: sf.SourceFormat = C

    def __call__(self, source: sf.ProgramSource) -> sf.CompiledArtifact:
        Path(self.directory).mkdir(mode=0o700, parents=True, exist_ok=True)
        digest = hashlib.sha256((source.text + repr(self.flags)).encode()).hexdigest()
        target = Path(self.directory, f"{digest[:32]}.so")
        with tempfile.TemporaryDirectory(dir=self.directory) as scratch:
            c_file, built = Path(scratch, "expression.c"), Path(scratch, "expression.so")
            c_file.write_text(source.text)
            subprocess.run(["cc", *self.flags, str(c_file), "-o", str(built)], check=True)
            built.replace(target)
        content = hashlib.sha256(target.read_bytes()).hexdigest()
        return sf.CompiledArtifact(str(target), content, source.entry_point, source)


def intact(artifact: sf.CompiledArtifact) -> bool:  # else the cache rebuilds it
    path = Path(artifact.path)
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == artifact.content_hash


def load(artifact: sf.CompiledArtifact) -> Callable[..., None]:
    """Loading: the entry point through ctypes; arguments are checked arrays."""
    entry = getattr(ctypes.CDLL(artifact.path), artifact.entry_point)

    def run(*arrays: np.ndarray) -> None:
        entry(ctypes.c_int64(arrays[0].size), *(a.ctypes.data_as(ctypes.c_void_p) for a in arrays))

    return run


Pipeline = sf.CompilePipeline[Any, Program, sf.ProgramSource, Any, Any]


def expression_pipeline(cache: Path) -> Pipeline:
    """The four steps, translation and compilation cached on disk under ``cache``."""
    return sf.CompilePipeline(
        frontend=parse,
        translation=sf.CachedStep.on_disk(to_c, directory=cache / "sources"),
        compilation=sf.CachedStep.on_disk(
            CCompile(str(cache / "builds")), directory=cache / "artifacts", validate=intact
        ),
        loading=load,
    )


@attrs.frozen
class ExpressionBackend:  # a backend: a name and a pipeline; calls specialize on the dtype
    name: str
    pipeline: Pipeline

    def compile_time_args(self, args: tuple[Any, ...]) -> sf.CompileTimeArgs:
        dtype = str(getattr(args[0], "dtype", None)) if args else None
        if dtype not in C_TYPES:
            raise sf.ArgumentError(f"expressions run on float64 or float32 arrays, got {dtype}")
        return sf.CompileTimeArgs((("dtype", dtype),))


class ExpressionCalls:
    """The ``CallConvention``: the inputs, then ``out``; 1-D contiguous arrays alike."""

    def definition_key(self, definition: Expression) -> None:
        return None

    def program(self, output: object) -> Program:
        if not isinstance(output, Program):
            raise TypeError("an expression frontend must return a Program")
        return output

    def parameters(self, program: Program) -> Sequence[str]:
        return (*program.inputs, "out")

    def argument_check(self, program: Program, backend: object) -> Callable[..., None]:
        names = self.parameters(program)
        dtype = program.compile_time_args.get("dtype")

        def check(args: tuple[Any, ...]) -> None:
            for name, value in zip(names, args, strict=True):
                if not isinstance(value, np.ndarray) or str(value.dtype) != dtype:
                    raise sf.ArgumentError(f"{program.name}(): {name} must be a {dtype} array")
                if value.ndim != 1 or not value.flags.c_contiguous or value.size != args[0].size:
                    raise sf.ArgumentError(
                        f"{program.name}(): {name} must be 1-D, contiguous and as long as "
                        f"{names[0]} ({args[0].size}), got shape {value.shape}"
                    )
            if not args[-1].flags.writeable:
                raise sf.ArgumentError(f"{program.name}(): out must be writable")

        return check


class ElementwiseFunction:
    """``ElementwiseFunction("a * 2 + b", backend)(a, b, out)``: the user's handle."""

    def __init__(self, text: str, backend: ExpressionBackend, name: str = "expression") -> None:
        self.definition = Expression(text, name)
        self.dispatcher = sf.Dispatcher(backend, ExpressionCalls(), f"{name}@{backend.name}")
        self.name = name

    def __call__(self, *args: Any) -> None:
        fast = self.dispatcher.fast
        if fast is not None and fast(*args) is not NotImplemented:
            return
        self.dispatcher.call(self.definition, args)

    def compile_target(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> sf.CompileTarget[Expression, Program]:  # what compile_many compiles for a call
        if kwargs:
            raise TypeError(f"{self.name}() takes its arrays by position, got {sorted(kwargs)}")
        return sf.CompileTarget(self.dispatcher, self.definition, args)

    def lower(self, *args: Any) -> sf.Lowered[Expression, Program]:
        return sf.Lowered.of(self.dispatcher, self.definition, args)

    def compile(self, *args: Any) -> Any:
        return self.lower(*args).compile()
