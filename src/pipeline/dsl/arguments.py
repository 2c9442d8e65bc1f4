"""Checking a program's arguments before anything runs, the same way on every backend.

``ArgumentChecker`` is built once per program from its IR; calling ``check(args)`` verifies
each argument's kind, rank, dtype and device, and that every stencil's inputs cover its output
domain plus the stencil's reach. Errors name the program, the argument and what to change.
Compiled backends check natively on their fast path and call this on failure, so every
backend reports the same message.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from allocators import DeviceType, device_of, disabled_dtype_reason
from pipeline.dispatch import bind_arguments
from pipeline.dsl.errors import DomainError
from pipeline.dsl.ir.nodes import GuardedRead, ProgramIR, Stencil
from pipeline.dsl.memory import layout_problem, shares_element
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType
from pipeline.errors import ArgumentError

__all__ = [
    "ArgumentChecker",
    "domain_problem",
    "dtype_name",
    "guarded_reach",
    "overlap_pairs",
    "resolve_domain",
]


def dtype_name(dtype: object) -> str:
    """A dtype's canonical name (``"float64"``) for NumPy, CuPy, JAX and array_api_strict."""
    if isinstance(dtype, np.dtype):
        return dtype.name
    try:
        return np.dtype(dtype).name  # type: ignore[call-overload, no-any-return]
    except TypeError:
        return str(dtype).rsplit(".", 1)[-1].removesuffix("'>")


def resolve_domain(
    slices: Sequence[tuple[int | Bound | None, int | Bound | None]],
    shape: Sequence[int],
    values: Mapping[str, Any] | None = None,
) -> tuple[tuple[int, int], ...]:
    """Absolute (start, stop) per dimension of ``slices`` applied to an array of ``shape``.

    Integer bounds follow Python's slices; ``Bound`` bounds (``domain=``) are absolute, with
    the scalar arguments ``values`` they name, and are taken as they are (the checker
    refuses those outside the array: ``domain_problem``).
    """
    result = []
    for (start, stop), size in zip(slices, shape, strict=True):
        if isinstance(start, Bound) or isinstance(stop, Bound):
            result.append((_absolute(start, 0, values), _absolute(stop, size, values)))
            continue
        lo, hi, _ = slice(start, stop).indices(size)
        result.append((lo, max(lo, hi)))
    return tuple(result)


def _absolute(bound: int | Bound | None, default: int, values: Mapping[str, Any] | None) -> int:
    if bound is None:
        return default
    if isinstance(bound, Bound):
        scalars = {bound.param: int(values[bound.param])} if bound.param and values else {}
        return bound.value(scalars)
    return bound


def domain_problem(
    slices: Sequence[tuple[int | Bound | None, int | Bound | None]],
    resolved: Sequence[tuple[int, int]],
    shape: Sequence[int],
    dims: Sequence[str],
) -> str | None:
    """What is wrong with a ``domain=`` that ``resolve_domain`` resolved (None: nothing):
    it must lie inside the array and not end before it starts."""
    for (start, stop), (lo, hi), size, dim in zip(slices, resolved, shape, dims, strict=True):
        if not (isinstance(start, Bound) or isinstance(stop, Bound)):
            continue
        if not 0 <= lo <= hi <= size:
            return (
                f"the domain along {dim} is {lo}:{hi}, but the output has {size} point(s) "
                f"along {dim} (indices 0:{size})"
            )
    return None


@attrs.frozen
class ArgumentChecker:
    """The checks for one program, derived from its IR.

    What depends only on the IR (which parameters are fields, which are written, which pairs
    must not overlap) is worked out once; the domain checks, which depend only on the shapes
    and the scalars that domain bounds and conditions name, are remembered per such key for
    the calls they accepted. Everything about the arrays themselves is checked every call.
    """

    ir: ProgramIR
    _written: frozenset[str] = attrs.field(init=False, repr=False, eq=False)
    # Each parameter as the user writes it (a tuple's leaf as t[1]), for the messages.
    _shown: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)
    _domain_scalars: tuple[int, ...] = attrs.field(init=False, repr=False, eq=False)
    _overlaps: tuple[tuple[tuple[int, int], ...], ...] = attrs.field(
        init=False, repr=False, eq=False
    )
    # (shapes, domain scalars) -> the stencils with a non-empty domain, for accepted calls.
    _accepted_domains: dict[tuple[Any, ...], tuple[int, ...]] = attrs.field(
        init=False, repr=False, eq=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        names = self.names
        written = frozenset(t.name for s in self.ir.stencils for t in s.outputs)
        scalars: set[str] = set()
        for stencil in self.ir.stencils:
            for target in stencil.outputs:
                for pair in target.slices:
                    scalars.update(b.param for b in pair if isinstance(b, Bound) and b.param)
            for read in stencil.guarded:
                scalars.update(read.region.params)
        overlaps = tuple(
            tuple((names.index(a), names.index(b)) for a, b in overlap_pairs(stencil))
            for stencil in self.ir.stencils
        )
        object.__setattr__(self, "_written", written)
        object.__setattr__(self, "_shown", tuple(self.ir.shown(name) for name in names))
        object.__setattr__(self, "_domain_scalars", tuple(sorted(map(names.index, scalars))))
        object.__setattr__(self, "_overlaps", overlaps)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.ir.params)

    def check(
        self,
        args: Sequence[Any],
        device_type: DeviceType,
        namespace: object = None,
        *,
        array_type: type | None = None,
    ) -> None:
        """Check positional ``args`` (already bound) for a backend on ``device_type``.

        Args:
            args: one value per program parameter, in order.
            device_type: where the backend runs; arrays elsewhere are refused.
            namespace: for embedded backends, the array namespace the arrays must belong to.
            array_type: for native code, the array class it reads (``numpy.ndarray``).

        Raises:
            ArgumentError: (a ``TypeError``) wrong kind, rank, dtype, device or namespace.
            DomainError: (a ``ValueError``) an input does not cover an output domain plus
                the stencil's reach, or outputs of one call disagree on their domain.
        """
        program = self.ir.name
        if len(args) != len(self.ir.params):
            bind_arguments(program, self.names, args, {})  # raises, naming what is missing
        shapes: list[Any] = []
        # Indexing, as zip(strict=True) costs ~0.5 us a call: this runs on every NumPy call.
        for index, param in enumerate(self.ir.params):
            value = args[index]
            if isinstance(param.type, FieldType):
                name = self._shown[index]
                self._check_field(program, name, param.type, value, device_type, namespace)
                if array_type is not None and not isinstance(value, array_type):
                    raise ArgumentError(
                        f"argument {name!r} of {program}() must be a "
                        f"{array_type.__module__}.{array_type.__qualname__} for this backend; got "
                        f"{type(value).__module__}.{type(value).__qualname__} (convert it with "
                        "numpy.asarray, or allocate with allocators.zeros(..., allocator=<the "
                        "program>))"
                    )
                if isinstance(value, np.ndarray):
                    problem = layout_problem(value, param.name in self._written)
                    if problem is not None:
                        raise ArgumentError(f"argument {name!r} of {program}() {problem}")
                shapes.append(tuple(value.shape))
            else:
                _check_scalar(program, self._shown[index], param.type.dtype, value)
                shapes.append(None)
        key = (*shapes, *(int(args[i]) for i in self._domain_scalars))
        non_empty = self._accepted_domains.get(key)
        if non_empty is None:
            non_empty = self._checked_domains(args)
            if len(self._accepted_domains) < 64:  # bounded for programs on ever new shapes
                self._accepted_domains[key] = non_empty
        for number in non_empty:
            self._check_overlaps(self.ir.stencils[number], self._overlaps[number], args)

    def _checked_domains(self, args: Sequence[Any]) -> tuple[int, ...]:
        """Check every stencil's domain; return the stencils whose domain is non-empty."""
        shapes = {
            p.name: tuple(v.shape)
            for p, v in zip(self.ir.params, args, strict=True)
            if isinstance(p.type, FieldType)
        }
        values = dict(zip(self.names, args, strict=True))
        return tuple(
            number
            for number, stencil in enumerate(self.ir.stencils)
            if self._check_domains(stencil, shapes, values)
        )

    def _check_field(
        self,
        program: str,
        name: str,
        expected: FieldType,
        value: Any,
        device_type: DeviceType,
        namespace: object,
    ) -> None:
        if (
            type(value) is np.ndarray
            and value.ndim == len(expected.dims)
            and value.dtype == expected.dtype
            and device_type is DeviceType.CPU
            and namespace in (None, np)
        ):
            return  # the common case, every check below passes: a NumPy array as declared
        refusal = _refused_array_type(value)
        if refusal is not None:
            raise ArgumentError(f"argument {name!r} of {program}() {refusal}")
        if isinstance(value, np.ndarray):
            # What the memory really holds: a subclass may override these properties.
            shape, dtype = np.ndarray.shape.__get__(value), np.ndarray.dtype.__get__(value)
        else:
            shape = getattr(value, "shape", None)
            dtype = getattr(value, "dtype", None)
        if shape is None or dtype is None or isinstance(value, np.generic):
            raise ArgumentError(
                f"argument {name!r} of {program}() must be an array for {expected}; got "
                f"{_describe(value)}"
            )
        if len(shape) != len(expected.dims):
            raise ArgumentError(
                f"argument {name!r} of {program}() must have {len(expected.dims)} dimension(s) "
                f"({', '.join(expected.dim_names)}); got an array of shape {tuple(shape)}"
            )
        if dtype_name(dtype) != expected.dtype.name:
            disabled = disabled_dtype_reason(namespace, expected.dtype.name)
            advice = (
                f"convert it with .astype({expected.dtype.name})" if disabled is None else disabled
            )
            raise ArgumentError(
                f"argument {name!r} of {program}() must have dtype {expected.dtype}; got "
                f"{dtype_name(dtype)} ({advice})"
            )
        try:
            device = device_of(value).type
        except TypeError:
            device = None
        if device is not None and device != device_type:
            raise ArgumentError(
                f"argument {name!r} of {program}() is on {device.name}, but this backend runs "
                f"on {device_type.name}; allocate it with allocators.zeros(..., allocator=<the "
                f"program>) or {_how_to_move(device, device_type)}"
            )
        if namespace is not None:
            get_namespace = getattr(value, "__array_namespace__", None)
            owner = get_namespace() if get_namespace is not None else None
            if (
                owner is not None
                and owner is not namespace
                and getattr(owner, "__name__", "") != getattr(namespace, "__name__", None)
            ):
                raise ArgumentError(
                    f"argument {name!r} of {program}() is an array of "
                    f"{getattr(owner, '__name__', owner)}, but the backend runs on "
                    f"{getattr(namespace, '__name__', namespace)}; allocate it with the backend"
                )

    def _check_overlaps(
        self, stencil: Stencil, pairs: tuple[tuple[int, int], ...], args: Sequence[Any]
    ) -> None:
        """No output may share memory with another field its stencil reads or writes."""
        for out, other in pairs:
            a, b = args[out], args[other]
            if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and shares_element(a, b):
                names = self._shown
                raise ArgumentError(
                    f"{self.ir.name}(): output {names[out]!r} of {stencil.operator_name!r} "
                    f"shares memory with {names[other]!r}; a stencil cannot update an array it "
                    "reads (results would depend on the order of evaluation), so pass a "
                    "separate output array"
                )

    def _check_domains(
        self,
        stencil: Stencil,
        shapes: Mapping[str, tuple[int, ...]],
        values: Mapping[str, Any],
    ) -> bool:
        """Check the stencil's domain; return whether it is non-empty."""
        domain = self._output_domain(stencil, shapes, values)
        if any(stop <= start for start, stop in domain.values()):
            return False  # an empty domain reads nothing
        self._check_reach(stencil, domain, shapes)
        self._check_guarded_reach(stencil, domain, shapes, values)
        return True

    def _output_domain(
        self,
        stencil: Stencil,
        shapes: Mapping[str, tuple[int, ...]],
        values: Mapping[str, Any],
    ) -> dict[str, tuple[int, int]]:
        """The (start, stop) per dimension that every output of the stencil covers."""
        program = self.ir.name
        domain: dict[str, tuple[int, int]] = {}
        first_output = ""
        for target in stencil.outputs:
            target_type = self.ir.param(target.name).type
            assert isinstance(target_type, FieldType)
            resolved = resolve_domain(target.slices, shapes[target.name], values)
            problem = domain_problem(
                target.slices, resolved, shapes[target.name], target_type.dim_names
            )
            if problem is not None:
                where = f" (line {target.loc.line} of {target.loc.filename})" if target.loc else ""
                raise DomainError(
                    f"{program}(): the call of {stencil.operator_name!r}{where} writes "
                    f"{self.ir.shown(target.name)!r} on a domain outside it: {problem}; change "
                    "domain= or "
                    "pass a larger array"
                )
            for dim, bounds in zip(target_type.dim_names, resolved, strict=True):
                if dim in domain and domain[dim] != bounds:
                    raise DomainError(
                        f"{program}(): the outputs of {stencil.operator_name!r} disagree on "
                        f"their domain along {dim}: {first_output!r} covers "
                        f"{domain[dim][0]}:{domain[dim][1]}, {self.ir.shown(target.name)!r} covers "
                        f"{bounds[0]}:{bounds[1]}; give all outputs the same domain"
                    )
                domain[dim] = bounds
            first_output = first_output or self.ir.shown(target.name)
        return domain

    def _check_reach(
        self,
        stencil: Stencil,
        domain: Mapping[str, tuple[int, int]],
        shapes: Mapping[str, tuple[int, ...]],
    ) -> None:
        """Every field the stencil reads covers the domain plus the stencil's reach."""
        for extent in stencil.extents:
            shape = shapes[extent.name]
            shown = self.ir.shown(extent.name)
            for axis, bound in enumerate(extent.dims):
                if bound.dim not in domain:
                    continue
                start, stop = domain[bound.dim]
                low, high, size = start + bound.lower, stop + bound.upper, shape[axis]
                if low >= 0 and high <= size:
                    continue
                missing_low, missing_high = max(0, -low), max(0, high - size)
                where = " and ".join(
                    text
                    for text, n in (
                        (f"{missing_low} at the lower end", missing_low),
                        (f"{missing_high} at the upper end", missing_high),
                    )
                    if n
                )
                raise DomainError(
                    f"{self.ir.name}(): field {shown!r} is too small along {bound.dim} "
                    f"for {stencil.operator_name!r}: the output domain {start}:{stop} plus the "
                    f"stencil's reach ({bound.lower:+d}, {bound.upper:+d}) needs indices "
                    f"{low}:{high}, but {shown!r} has {size} point(s); missing halo: "
                    f"{where}. Shrink the output slice or pass a larger {shown!r}"
                )

    def _check_guarded_reach(
        self,
        stencil: Stencil,
        domain: Mapping[str, tuple[int, int]],
        shapes: Mapping[str, tuple[int, ...]],
        values: Mapping[str, Any],
    ) -> None:
        """Every read of a ``concat_where`` branch stays inside its field where it happens."""
        for read in stencil.guarded:
            needed = guarded_reach(read, domain, values)
            if needed is None:
                continue
            field_type = self.ir.param(read.name).type
            shown = self.ir.shown(read.name)
            assert isinstance(field_type, FieldType)
            for axis, dim in enumerate(field_type.dim_names):
                low, high = needed.get(dim, (0, 0))
                size = shapes[read.name][axis]
                if low >= 0 and high <= size:
                    continue
                raise DomainError(
                    f"{self.ir.name}(): field {shown!r} is too small along {dim} for "
                    f"{stencil.operator_name!r}: where {read.region} holds, it is read at "
                    f"{dict(read.offsets)}, which needs indices {low}:{high} of the output "
                    f"domain {domain[dim][0]}:{domain[dim][1]}, but {shown!r} has {size} "
                    f"point(s). Shrink the output slice, change the condition, or pass a "
                    f"larger {shown!r}"
                )


def guarded_reach(
    read: GuardedRead, domain: Mapping[str, tuple[int, int]], values: Mapping[str, Any]
) -> dict[str, tuple[int, int]] | None:
    """The indices (start, stop per dimension of ``domain``) that ``read`` touches: the
    smallest box around the part of the output ``domain`` where its region holds, moved by
    its offsets; None when that part is empty. ``values`` holds the scalar arguments the
    region's bounds name."""
    scalars = {name: int(values[name]) for name in read.region.params}
    box = read.region.bounding(domain, scalars)
    if box is None:
        return None
    offsets = dict(read.offsets)
    return {d: (lo + offsets.get(d, 0), hi + offsets.get(d, 0)) for d, (lo, hi) in box.items()}


def overlap_pairs(stencil: Stencil) -> list[tuple[str, str]]:
    """The (output, other field) pairs of ``stencil`` that must not share memory.

    Every output against every other field the stencil reads or writes, each pair once.
    Native checks use the same list, so both refuse exactly the same calls.
    """
    read = {e.name for e in stencil.extents} | {r.name for r in stencil.guarded}
    touched = sorted(read | {t.name for t in stencil.outputs})
    outputs = [t.name for t in stencil.outputs]
    return [
        (out, other)
        for out in outputs
        for other in touched
        if other != out and not (other in outputs and outputs.index(other) < outputs.index(out))
    ]


def _check_scalar(program: str, name: str, dtype: np.dtype[Any], value: object) -> None:
    """A scalar argument: the right kind, and representable in the parameter's dtype."""
    problem = None
    if isinstance(value, np.timedelta64 | np.datetime64):
        problem = "a plain number"
    elif dtype.kind == "b":
        if not isinstance(value, bool | np.bool_):
            problem = "a bool"
    elif dtype.kind in "iu":
        # One rule for Python's and NumPy's bools: wherever a number goes, either is 0 or 1.
        if not isinstance(value, int | np.integer | np.bool_):
            problem = "an integer"
        else:
            info = np.iinfo(dtype)
            if not info.min <= int(value) <= info.max:
                problem = f"an integer in [{info.min}, {info.max}]"
    elif not isinstance(value, int | float | np.integer | np.floating | np.bool_):
        problem = "a real number"
    else:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
            problem = f"a number representable as {dtype}"
        if math.isfinite(number) and abs(number) > float(np.finfo(dtype).max):
            problem = f"a number representable as {dtype}"
    if problem is not None:
        raise ArgumentError(
            f"argument {name!r} of {program}() is a {dtype} scalar and must be {problem}; "
            f"got {_describe(value)}"
        )


def _how_to_move(device: DeviceType, device_type: DeviceType) -> str:
    """How to copy an array from ``device`` to ``device_type``, in the user's terms."""
    gpus = (DeviceType.CUDA, DeviceType.ROCM)
    if device == DeviceType.CPU and device_type in gpus:
        return "copy it to the GPU with cupy.asarray(x)"
    if device in gpus and device_type == DeviceType.CPU:
        return "copy it to the host with cupy.asnumpy(x)"
    return "copy it to the backend's device"


def _refused_array_type(value: object) -> str | None:
    """ndarray subclasses with their own operator semantics are refused on every backend."""
    if type(value) is np.ndarray or not isinstance(value, np.ndarray):
        return None
    if isinstance(value, np.matrix):
        return (
            "is a numpy.matrix, whose operators are matrix algebra, not elementwise; pass "
            "numpy.asarray(x)"
        )
    masked = sys.modules.get("numpy.ma")  # not imported: no masked array can exist
    if masked is not None and isinstance(value, masked.MaskedArray):
        return (
            "is a numpy.ma.MaskedArray: programs do not propagate masks, so its masked values "
            "would be computed with; pass x.filled(value) or numpy.ma.getdata(x)"
        )
    return None


def _describe(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}" if len(text) <= 60 else type(value).__name__
