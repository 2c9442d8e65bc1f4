"""An example backend written against stencilforge's public kit: IR -> NumPy source.

The guide (``docs/backend-guide.md``) walks through it. Four steps, each a small value:

    shared frontend -> NumPyTranslation (disk-cached) -> PythonCompilation -> load_python
    ProgramDefinition   CompilableProgram -> ProgramSource("python")  -> PythonArtifact -> run()

The translation turns each stencil into NumPy slicing over the output domain, with locals
inlined (recomputed at each shift) and fields of fewer dimensions broadcast. The backend
checks nothing itself: the dispatcher checks every argument before ``run`` is called, with
the same messages as ``c_cpu``. The test suite runs it on the whole DSL corpus.

    import backends
    from numpy_source_backend import numpy_source
    backends.register(numpy_source)
    program.with_backend(backends.numpy_source)(inp, out)
"""

from __future__ import annotations

import marshal
import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

import allocators
from backends import CompiledBackend
from backends.cache import cache_directory
from pipeline import (
    CachedStep,
    CompilePipeline,
    ConcreteDefinition,
    DeviceType,
    ProgramSource,
    SourceFormat,
)
from pipeline.dsl import CompilableProgram, ProgramDefinition, builtins, shared_frontend
from pipeline.dsl import ir as dsl_ir

__all__ = ["PYTHON_SOURCE", "NumPyTranslation", "PythonArtifact", "load_python", "numpy_source"]

PYTHON_SOURCE = SourceFormat("python", DeviceType.CPU)

_NUMPY_FUNCTIONS = {
    "abs": "np.abs",
    "sqrt": "np.sqrt",
    "exp": "np.exp",
    "log": "np.log",
    "sin": "np.sin",
    "cos": "np.cos",
    "tan": "np.tan",
    "arcsin": "np.arcsin",
    "arccos": "np.arccos",
    "arctan": "np.arctan",
    "sinh": "np.sinh",
    "cosh": "np.cosh",
    "tanh": "np.tanh",
    "floor": "np.floor",
    "ceil": "np.ceil",
    "minimum": "np.minimum",
    "maximum": "np.maximum",
    "power": "np.power",
    "where": "np.where",
    "arcsinh": "np.arcsinh",
    "arccosh": "np.arccosh",
    "arctanh": "np.arctanh",
    "cbrt": "np.cbrt",
    "trunc": "np.trunc",
    "fmod": "np.fmod",
    "isfinite": "np.isfinite",
    "isinf": "np.isinf",
    "isnan": "np.isnan",
    "gamma": "_gamma",
}


# --------------------------------------------------------------------------- translation


@attrs.frozen
class NumPyTranslation:
    """``CompilableProgram -> ProgramSource``: a Python function of NumPy slicing.

    A step with configuration is a frozen attrs class: ``evolve_step("translation",
    comments=False)`` makes a variant, and the option joins the disk-cache key.

    Attributes:
        comments: write the stencil's name above its code.
    """

    comments: bool = True
    emits: SourceFormat = attrs.field(default=PYTHON_SOURCE, init=False)

    def __call__(self, program: CompilableProgram, /) -> ProgramSource:
        ir = program.ir
        names = [p.name for p in ir.params]
        lines = [f"def {ir.name}({', '.join(names)}):"]
        for param in ir.params:
            if not isinstance(param.type, dsl_ir.FieldType):  # scalars are strong, typed numbers
                dtype = "bool_" if param.type.dtype == np.bool_ else param.type.dtype.name
                lines.append(f"    {param.name} = np.{dtype}({param.name})")
        for index, stencil in enumerate(ir.stencils):
            lines += _stencil_lines(ir, stencil, index, self.comments)
        lines.append("    return None")
        return ProgramSource(self.emits, "\n".join(lines) + "\n", ir.name)


def _stencil_lines(
    ir: dsl_ir.ProgramIR, stencil: dsl_ir.Stencil, index: int, comments: bool
) -> list[str]:
    """``out[domain] = expression`` for each output, with the stencil's locals inlined."""
    locals_: dict[str, dsl_ir.Expr] = {}
    for assign in stencil.body:
        (local,) = assign.targets
        locals_[local] = _inline(assign.value, locals_)
    lines = [f"    # stencil {index}: {stencil.operator_name}"] if comments else []
    results = [_inline(result, locals_) for result in stencil.results]
    scans = [
        node for result in results for node in dsl_ir.walk(result) if isinstance(node, dsl_ir.Scan)
    ]
    if scans:
        return lines + _sweep_lines(ir, stencil, results, scans)
    for target, result in zip(stencil.outputs, stencil.results, strict=True):
        out_type = ir.param(target.name).type
        assert isinstance(out_type, dsl_ir.FieldType)
        bounds = [_bounds(dim, axis) for axis, dim in enumerate(out_type.dim_names)]
        value = _expression(ir, _inline(result, locals_), out_type.dim_names, bounds)
        if not bounds:  # a 0-d output
            lines.append(f"    {target.name}[...] = {value}")
            continue
        unpacked = ", ".join(f"({lo}, {hi})" for lo, hi in bounds)
        lines.append(f"    {unpacked}, = _domain({target.name}, {_slices_text(target)})")
        nonempty = " and ".join(f"{hi} > {lo}" for lo, hi in bounds)
        window = ", ".join(f"{lo}:{hi}" for lo, hi in bounds)
        lines.append(f"    if {nonempty}:")
        lines.append(f"        {target.name}[{window}] = {value}")
    return lines


def _sweep_lines(
    ir: dsl_ir.ProgramIR,
    stencil: dsl_ir.Stencil,
    results: list[dsl_ir.Expr],
    scans: list[dsl_ir.Scan],
) -> list[str]:
    """A stencil that runs scans: each scan, in an order where it follows the scans it
    reads, is a Python loop along its axis over planes (its carry an array over the plane)
    whose results are joined into an array over the domain; then the outputs, as usual."""
    first = ir.param(stencil.outputs[0].name).type
    assert isinstance(first, dsl_ir.FieldType)
    dims = first.dim_names
    bounds = [_bounds(dim, axis) for axis, dim in enumerate(dims)]
    position = dims.index(scans[0].operator.axis)
    lo, hi = bounds[position]
    target = stencil.outputs[0]
    unpacked = ", ".join(f"({a}, {b})" for a, b in bounds)
    lines = [f"    {unpacked}, = _domain({target.name}, {_slices_text(target)})"]
    lines.append(f"    if {' and '.join(f'{b} > {a}' for a, b in bounds)}:")
    step = [*bounds]
    step[position] = ("k_", "k_ + 1")
    sweeps: Sweeps = {}
    for scan in _in_dependency_order(scans):
        operator, args = scan.operator, scan.args
        n = len(sweeps)
        # The scans this one reads, at the step's plane of their results.
        plane_of = {
            key: tuple(f"{name}[{_plane(position, lo)}]" for name in names)
            for key, names in sweeps.items()
        }
        values = {param.name: f"c{n}_{i}" for i, param in enumerate(operator.carry)}
        for i, (param, init) in enumerate(zip(operator.carry, operator.init, strict=True)):
            dtype = _dtype_name(param.type.dtype)
            lines.append(f"        c{n}_{i} = np.asarray({_literal(init)}, dtype=np.{dtype})")
            lines.append(f"        p{n}_{i} = []")
        order = f"range({lo}, {hi})" if operator.forward else f"range({hi} - 1, {lo} - 1, -1)"
        lines.append(f"        for k_ in {order}:")
        for param, arg in zip(operator.params, args, strict=True):
            values[param.name] = f"s{n}_{param.name}"
            text = _expression(ir, arg, dims, step, sweeps=plane_of)
            lines.append(f"            s{n}_{param.name} = {text}")
        for assign in operator.body:
            (local,) = assign.targets
            values[local] = f"s{n}_{local}"
            text = _expression(ir, assign.value, dims, step, values)
            lines.append(f"            s{n}_{local} = {text}")
        shape = ", ".join(
            "1" if d == dims[position] else f"{b} - {a}"
            for d, (a, b) in zip(dims, bounds, strict=True)
        )
        for i, (param, result) in enumerate(zip(operator.carry, operator.results, strict=True)):
            text = _expression(ir, result, dims, step, values)
            dtype = _dtype_name(param.type.dtype)
            lines.append(
                f"            c{n}_{i} = np.broadcast_to(np.asarray({text}, dtype=np.{dtype}), "
                f"({shape},))"
            )
            lines.append(f"            p{n}_{i}.append(c{n}_{i})")
        names = tuple(f"r{n}_{i}" for i in range(len(operator.carry)))
        for i, name in enumerate(names):
            planes = f"p{n}_{i}" if operator.forward else f"p{n}_{i}[::-1]"
            lines.append(f"        {name} = np.concatenate({planes}, axis={position})")
        sweeps[(operator, args)] = names
    window = ", ".join(f"{a}:{b}" for a, b in bounds)
    for output, result in zip(stencil.outputs, results, strict=True):
        value = _expression(ir, result, dims, bounds, sweeps=sweeps)
        lines.append(f"        {output.name}[{window}] = {value}")
    return lines


def _plane(position: int, lo: str) -> str:
    """The index of the step's plane in an array over the domain."""
    return ", ".join([*(":" for _ in range(position)), f"k_ - {lo}:k_ - {lo} + 1", "..."])


def _in_dependency_order(scans: list[dsl_ir.Scan]) -> list[dsl_ir.Scan]:
    """One scan per sweep, each after the scans its arguments read."""
    order: list[dsl_ir.Scan] = []
    seen: set[tuple[dsl_ir.ScanOperatorIR, tuple[dsl_ir.Expr, ...]]] = set()

    def visit(scan: dsl_ir.Scan) -> None:
        key = (scan.operator, scan.args)
        if key in seen:
            return
        seen.add(key)
        for arg in scan.args:
            for node in dsl_ir.walk(arg):
                if isinstance(node, dsl_ir.Scan):
                    visit(node)
        order.append(scan)

    for scan in scans:
        visit(scan)
    return order


#: The scans of a stencil, by operator and arguments: the names of their new carries.
Sweeps = dict[tuple[dsl_ir.ScanOperatorIR, tuple[dsl_ir.Expr, ...]], tuple[str, ...]]


def _dtype_name(dtype: np.dtype[Any]) -> str:
    return "bool_" if dtype == np.bool_ else dtype.name


def _bounds(dim: str, axis: int) -> tuple[str, str]:
    """The names of the domain's bounds along ``dim`` in the generated code (``I0``, ``I1``)."""
    stem = dim if dim.isidentifier() else f"axis{axis}_"
    return f"{stem}0", f"{stem}1"


def _inline(expr: dsl_ir.Expr, locals_: dict[str, dsl_ir.Expr]) -> dsl_ir.Expr:
    """``expr`` with every read of a local replaced by the local's value, shifted."""
    if isinstance(expr, dsl_ir.Ref) and expr.name in locals_:
        return _shift(locals_[expr.name], expr.offsets)
    return dsl_ir.map_children(expr, lambda child: _inline(child, locals_))


def _shift(expr: dsl_ir.Expr, offsets: tuple[tuple[str, int], ...]) -> dsl_ir.Expr:
    """``expr`` read at ``offsets``: every field read moves (scalars do not)."""
    if isinstance(expr, dsl_ir.Ref):
        return expr.shifted(offsets) if isinstance(expr.type, dsl_ir.FieldType) else expr
    if isinstance(expr, dsl_ir.ConcatWhere):  # chosen at x + offset: the region moves back
        expr = attrs.evolve(expr, region=expr.region.shifted({d: -v for d, v in offsets}))
    return dsl_ir.map_children(expr, lambda child: _shift(child, offsets))


def _expression(
    ir: dsl_ir.ProgramIR,
    expr: dsl_ir.Expr,
    dims: tuple[str, ...],
    bounds: list[tuple[str, str]],
    values: dict[str, str] | None = None,
    sweeps: Sweeps | None = None,
) -> str:
    """Python text of ``expr`` over the domain ``bounds``; ``values`` names the variables
    that hold a scan body's names, ``sweeps`` the new carries of the scans."""
    values = values or {}
    # Inside a branch of concat_where, reads may reach outside their arrays where the
    # other branch is chosen: they go through _window, which fills such points with zeros.
    windowed = False

    def emit(node: dsl_ir.Expr) -> str:
        nonlocal windowed
        match node:
            case dsl_ir.ConcatWhere(region=region, inside=inside, outside=outside):
                outer, windowed = windowed, True
                chosen = (emit(inside), emit(outside))
                windowed = outer
                return f"np.where({_region(region, dims, bounds)}, {chosen[0]}, {chosen[1]})"
            case dsl_ir.Literal(value=value):
                return _literal(value)
            case dsl_ir.Ref(name=name) if name in values:
                return values[name]
            case dsl_ir.Scan(operator=operator, args=args, component=component):
                assert sweeps is not None
                return sweeps[(operator, args)][component]
            case dsl_ir.Ref(name=name, offsets=offsets):
                param_type = ir.param(name).type
                if not isinstance(param_type, dsl_ir.FieldType):
                    return name
                return _read(name, param_type.dim_names, dict(offsets), dims, bounds, windowed)
            case dsl_ir.UnaryOp(op=op, operand=operand):
                return f"({op}{emit(operand)})"
            case dsl_ir.BinaryOp(op=op, left=left, right=right):
                return f"({emit(left)} {op} {emit(right)})"
            case dsl_ir.Call(function=function, args=args):
                if (
                    function in {"floor", "ceil", "trunc"}
                    and args[0].type is not None
                    and (args[0].type.dtype.kind in "iu")
                ):
                    return emit(args[0])  # integers stay integers (NumPy would give float64)
                return f"{_NUMPY_FUNCTIONS[function]}({', '.join(emit(a) for a in args)})"
            case dsl_ir.Cast(value=value, dtype=dtype):
                name = "bool_" if dtype == np.bool_ else dtype.name
                return f"np.asarray({emit(value)}).astype(np.{name})"
        raise NotImplementedError(f"the NumPy translation has no rule for {type(node).__name__}")

    return emit(expr)


def _literal(value: bool | int | float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def _region(region: dsl_ir.Region, dims: tuple[str, ...], bounds: list[tuple[str, str]]) -> str:
    """Python text of a boolean array over the domain: where ``region`` holds."""
    boxes = []
    for box in region.boxes:
        terms = []
        for interval in box:
            axis = dims.index(interval.dim)
            lo, hi = bounds[axis]
            shape = ", ".join("-1" if a == axis else "1" for a in range(len(dims)))
            index = f"np.arange({lo}, {hi}).reshape(({shape},))"
            terms += [f"({index} >= {_bound_text(b)})" for b in interval.lowers]
            terms += [f"({index} < {_bound_text(b)})" for b in interval.uppers]
        boxes.append(" & ".join(terms) or "True")
    return " | ".join(f"({b})" for b in boxes) or "False"


def _bound_text(bound: dsl_ir.Bound) -> str:
    return str(bound.offset) if bound.param is None else f"(int({bound.param}) + {bound.offset})"


def _read(
    name: str,
    field_dims: tuple[str, ...],
    offsets: dict[str, int],
    dims: tuple[str, ...],
    bounds: list[tuple[str, str]],
    windowed: bool = False,
) -> str:
    """``name`` sliced over the output domain shifted by ``offsets``, laid out along ``dims``
    (inputs share the output's index origin: index 0 of every array is the same point);
    ``windowed``: through ``_window``, zeros where the window leaves the array."""
    parts = []
    for dim in field_dims:
        (lo, hi), shift = bounds[dims.index(dim)], offsets.get(dim, 0)
        delta = f" + {shift}" if shift > 0 else f" - {-shift}" if shift < 0 else ""
        parts.append(f"({lo}{delta}, {hi}{delta})" if windowed else f"{lo}{delta}:{hi}{delta}")
    if windowed and parts:
        view = f"_window({name}, ({', '.join(parts)},))"
    else:
        view = f"{name}[{', '.join(parts)}]" if parts else name
    present = sorted(field_dims, key=dims.index)
    if list(present) != list(field_dims):
        view = f"{view}.transpose({tuple(field_dims.index(d) for d in present)!r})"
    if len(present) < len(dims):
        index = ", ".join(":" if d in field_dims else "None" for d in dims)
        view = f"{view}[{index}]"
    return view


# --------------------------------------------------------------------------- compilation


@attrs.frozen(repr=False)
class PythonArtifact:
    """A compiled translation: the marshalled code object and the source it came from.

    Plain bytes, so it pickles and the compilation can be cached on disk (marshal's format
    is the interpreter's; disk keys are salted with the interpreter version).
    """

    code: bytes
    source: ProgramSource

    def __repr__(self) -> str:
        return f"PythonArtifact({self.source.entry_point}, {len(self.code)} bytes of code)"


@attrs.frozen
class PythonCompilation:
    """``ProgramSource -> PythonArtifact``: Python's own compiler."""

    accepts: SourceFormat = attrs.field(default=PYTHON_SOURCE, init=False)

    def __call__(self, source: ProgramSource, /) -> PythonArtifact:
        filename = f"<stencilforge numpy source of {source.entry_point}>"
        return PythonArtifact(marshal.dumps(compile(source.text, filename, "exec")), source)


# --------------------------------------------------------------------------- loading


def _window(array: Any, window: tuple[tuple[int, int], ...]) -> Any:
    """``array`` over ``window`` (start, stop per axis), zeros where it leaves the array."""
    result = np.zeros(tuple(stop - start for start, stop in window), dtype=array.dtype)
    inside = tuple(
        slice(max(start, 0), max(start, 0, min(stop, size)))
        for (start, stop), size in zip(window, array.shape, strict=True)
    )
    placed = tuple(
        slice(s.start - start, s.stop - start) for s, (start, _) in zip(inside, window, strict=True)
    )
    result[placed] = array[inside]
    return result


def _gamma(values: Any) -> Any:
    """C's ``tgamma`` elementwise (NumPy has no gamma function)."""
    values = np.asarray(values)
    dtype = values.dtype if values.dtype.kind == "f" else np.dtype(np.float64)
    return np.vectorize(builtins.scalar_gamma, otypes=[dtype])(values)


def _slices_text(target: dsl_ir.OutputTarget) -> str:
    """Python text of the output's slices for ``_domain``: a ``domain=`` bound (absolute,
    maybe a scalar parameter's value) as ``("domain", start, stop)``."""
    items = []
    for start, stop in target.slices:
        if isinstance(start, dsl_ir.Bound) or isinstance(stop, dsl_ir.Bound):
            low = _bound_text(start) if isinstance(start, dsl_ir.Bound) else repr(start or 0)
            high = _bound_text(stop) if isinstance(stop, dsl_ir.Bound) else repr(stop)
            items.append(f"('domain', {low}, {high})")
        else:
            items.append(repr((start, stop)))
    return f"({', '.join(items)},)"


def _domain(out: Any, slices: tuple[tuple[Any, ...], ...]) -> tuple[tuple[int, int], ...]:
    """The output domain: ``(start, stop)`` per dimension of ``out`` sliced by ``slices``
    (``("domain", start, stop)``: absolute indices, ``None`` the end)."""
    result = []
    for item, n in zip(slices, out.shape, strict=True):
        if item[0] == "domain":
            result.append((item[1], n if item[2] is None else item[2]))
        else:
            result.append(slice(*item).indices(n)[:2])
    return tuple(result)


def load_python(artifact: PythonArtifact, /) -> Callable[..., None]:
    """``PythonArtifact -> run(*args)``: the function, run with NumPy's warnings silenced (the
    DSL's integer division by zero gives 0, as in C, without a warning)."""
    namespace: dict[str, Any] = {
        "np": np,
        "_domain": _domain,
        "_gamma": _gamma,
        "_window": _window,
    }
    exec(marshal.loads(artifact.code), namespace)
    function = namespace[artifact.source.entry_point]

    def run(*args: Any) -> None:
        with np.errstate(all="ignore"):
            function(*args)

    run.__qualname__ = f"numpy_source.{artifact.source.entry_point}"
    return run


def numpy_source_pipeline() -> CompilePipeline[
    ConcreteDefinition[ProgramDefinition],
    CompilableProgram,
    ProgramSource,
    PythonArtifact,
    Callable[..., None],
]:
    """The four steps; translation and compilation are cached on disk in the build cache."""
    directory = cache_directory() / "numpy_source"
    return CompilePipeline(
        frontend=shared_frontend,
        translation=CachedStep.on_disk(NumPyTranslation(), directory=directory / "translations"),
        compilation=CachedStep.on_disk(PythonCompilation(), directory=directory / "artifacts"),
        loading=load_python,
    )


#: The backend: NumPy buffers on the CPU, the pipeline above.
numpy_source = CompiledBackend(
    "numpy_source", allocators.NumPyBufferAllocator(), numpy_source_pipeline()
)
