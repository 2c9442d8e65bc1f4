"""The CPython extension wrapper around the generated stencils.

One module per program, with one ``METH_FASTCALL`` function ``run(*args)``. It checks every
argument natively (array type, rank, dtype, byte order, alignment, writability, strides, that
the view lies inside the buffer that owns it and, written, does not overlap itself, the
domain of each stencil against every input's extent, and that no output overlaps another
argument of its stencil) and returns ``NotImplemented`` without touching memory when any
check fails; the Python loader then runs the shared ``ArgumentChecker`` to raise the precise
error. Only arguments that passed every check reach the stencils, which run without the GIL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from backends.c.codegen import StencilCode
from backends.c.expressions import C_TYPES
from backends.c.runtime import BOOL_TYPEDEF
from backends.c.units import join_units
from pipeline.arguments import overlap_pairs
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType, ScalarType, bool_, float32, float64, int32, int64
from pipeline.ir.nodes import GuardedRead, ProgramIR, Stencil

__all__ = ["generate_module"]

_NPY_TYPES = {
    float32: "NPY_FLOAT32",
    float64: "NPY_FLOAT64",
    int32: "NPY_INT32",
    int64: "NPY_INT64",
    bool_: "NPY_BOOL",
}

_HELPERS = r"""
static inline void sf_resolve(int64_t n, int has_start, int64_t start, int has_stop, int64_t stop,
                              int64_t* lo, int64_t* hi) {
    /* Python's slice(start, stop).indices(n) for step 1. */
    int64_t a = has_start ? start : 0, b = has_stop ? stop : n;
    if (a < 0) { a += n; if (a < 0) a = 0; } else if (a > n) a = n;
    if (b < 0) { b += n; if (b < 0) b = 0; } else if (b > n) b = n;
    *lo = a; *hi = b > a ? b : a;
}

static inline int sf_bounds(const char* base, int nd, const int64_t* n, const int64_t* s,
                            int64_t itemsize, const char** first, const char** last) {
    /* The lowest and one-past-highest byte an array touches (empty arrays touch nothing).
       Returns -1 when the reach overflows 64 bits: such a view claims memory no buffer has. */
    int64_t lo = 0, hi = 0;
    *first = base; *last = base;
    for (int d = 0; d < nd; ++d) if (n[d] == 0) return 0;
    for (int d = 0; d < nd; ++d) {
        int64_t reach;
        if (__builtin_mul_overflow(n[d] - 1, s[d], &reach) ||
            __builtin_mul_overflow(reach, itemsize, &reach)) return -1;
        if (reach < 0 ? __builtin_add_overflow(lo, reach, &lo)
                      : __builtin_add_overflow(hi, reach, &hi)) return -1;
    }
    *first = base + lo; *last = base + hi + itemsize;
    return 0;
}

static int sf_inside_owner(PyArrayObject* array, const char* v0, const char* v1) {
    /* Whether [v0, v1) lies inside the buffer that owns the array's memory: the first array
       of its base chain that owns its data, or the first object that exports a buffer;
       objects with a `base` of their own are followed. The same walk as owner_bounds(). */
    PyObject* current = (PyObject*)array;
    PyObject* held = NULL;  /* a reference we own, from getattr */
    int inside = 0;
    for (int depth = 0; depth < 64 && current != NULL; ++depth) {
        if (PyArray_Check(current)) {
            PyArrayObject* a = (PyArrayObject*)current;
            if (PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA)) {
                const char* start = (const char*)PyArray_DATA(a);
                inside = v0 >= start && v1 <= start + PyArray_NBYTES(a);
                break;
            }
            current = PyArray_BASE(a);
            continue;
        }
        if (PyObject_CheckBuffer(current)) {
            Py_buffer view;
            if (PyObject_GetBuffer(current, &view, PyBUF_SIMPLE) != 0) { PyErr_Clear(); break; }
            const char* start = (const char*)view.buf;
            inside = v0 >= start && v1 <= start + view.len;
            PyBuffer_Release(&view);
            break;
        }
        PyObject* base = PyObject_GetAttrString(current, "base");
        if (base == NULL) { PyErr_Clear(); break; }
        Py_XDECREF(held);
        held = base;
        current = base == Py_None ? NULL : base;
    }
    Py_XDECREF(held);
    return inside;
}

static int sf_refused_subclass(PyObject* object) {
    /* numpy.matrix and numpy.ma.MaskedArray are refused, as by the Python checks: their
       operators are not elementwise. Only subclasses get here; an unimported module's class
       cannot have instances. */
    static const char* const names[2][2] = {{"numpy", "matrix"}, {"numpy.ma", "MaskedArray"}};
    PyObject* modules = PyImport_GetModuleDict();
    for (int i = 0; i < 2; ++i) {
        PyObject* module = PyDict_GetItemString(modules, names[i][0]);
        if (module == NULL) continue;
        PyObject* type = PyObject_GetAttrString(module, names[i][1]);
        if (type == NULL) { PyErr_Clear(); continue; }
        int refused = PyObject_IsInstance(object, type);
        Py_DECREF(type);
        if (refused < 0) { PyErr_Clear(); return 1; }
        if (refused) return 1;
    }
    return 0;
}

static int sf_self_overlaps(int nd, const int64_t* n, const int64_t* s) {
    /* Whether two indices may share an address: the strides (in elements), sorted, must each
       reach past the span of the smaller ones (exact for strided layouts, else conservative).
       Called after sf_bounds succeeded, so no product here overflows. */
    int64_t stride[32], size[32];
    int m = 0;
    for (int d = 0; d < nd && m < 32; ++d) {
        if (n[d] <= 1) continue;
        int64_t value = s[d] < 0 ? -s[d] : s[d];
        int k = m++;
        while (k > 0 && stride[k - 1] > value) { stride[k] = stride[k - 1]; size[k] = size[k - 1]; --k; }
        stride[k] = value; size[k] = n[d];
    }
    int64_t span = 1;
    for (int k = 0; k < m; ++k) {
        if (stride[k] < span) return 1;
        span += stride[k] * (size[k] - 1);
    }
    return 0;
}

static inline int sf_overlap(const char* a0, const char* a1, const char* b0, const char* b1) {
    return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}
"""


def argument_struct(program: ProgramIR) -> list[str]:
    """The C declaration of ``sf_args``: each parameter's pointer, shape and strides, or
    scalar value (every unit that calls or defines a stencil function needs it)."""
    lines = ["typedef struct {"]
    for param in program.params:
        if isinstance(param.type, ScalarType):
            lines.append(f"    {C_TYPES[param.type.dtype]} sc_{param.name};")
        else:
            rank = len(param.type.dims)
            lines.append(f"    char* p_{param.name};")
            lines.append(f"    int64_t n_{param.name}[{rank}];")
            lines.append(f"    int64_t s_{param.name}[{rank}];")
    lines.append("} sf_args;")
    return lines


def _parse_field(index: int, name: str, field: FieldType, writable: bool, unit: bool) -> list[str]:
    rank = len(field.dims)
    itemsize = np.dtype(field.dtype).itemsize
    checks = [
        f"PyArray_NDIM(arr) != {rank}",
        f"PyArray_TYPE(arr) != {_NPY_TYPES[field.dtype]}",
        "!PyArray_ISNOTSWAPPED(arr)",
        "!PyArray_ISALIGNED(arr)",
    ]
    if writable:
        checks.append("!PyArray_ISWRITEABLE(arr)")
    lines = [
        f"    if (!PyArray_Check(args[{index}])) Py_RETURN_NOTIMPLEMENTED;",
        f"    if (!PyArray_CheckExact(args[{index}]) && sf_refused_subclass(args[{index}])) Py_RETURN_NOTIMPLEMENTED;",
        f"    const char *b0_{name}, *b1_{name};",
        "    {",
        f"        PyArrayObject* arr = (PyArrayObject*)args[{index}];",
        f"        if ({' || '.join(checks)}) Py_RETURN_NOTIMPLEMENTED;",
        f"        a.p_{name} = (char*)PyArray_DATA(arr);",
        f"        for (int d = 0; d < {rank}; ++d) {{",
        "            npy_intp stride = PyArray_STRIDES(arr)[d];",
        f"            if (stride % {itemsize} != 0) Py_RETURN_NOTIMPLEMENTED;",
        f"            a.n_{name}[d] = PyArray_DIMS(arr)[d];",
        f"            a.s_{name}[d] = stride / {itemsize};",
    ]
    if writable:
        lines.append(
            f"            if (a.s_{name}[d] == 0 && a.n_{name}[d] > 1 && PyArray_SIZE(arr) > 0) Py_RETURN_NOTIMPLEMENTED;"
        )
    lines.append("        }")
    if unit:
        lines.append(
            f"        if (a.n_{name}[{rank - 1}] > 1 && a.s_{name}[{rank - 1}] != 1) Py_RETURN_NOTIMPLEMENTED;"
        )
    # The memory the view claims must be its owner's; a written view must not overlap itself.
    lines.append(
        f"        if (sf_bounds(a.p_{name}, {rank}, a.n_{name}, a.s_{name}, {itemsize}, &b0_{name}, &b1_{name}) != 0) Py_RETURN_NOTIMPLEMENTED;"
    )
    lines.append(
        f"        if (b1_{name} > b0_{name} && !sf_inside_owner(arr, b0_{name}, b1_{name})) Py_RETURN_NOTIMPLEMENTED;"
    )
    if writable:
        lines.append(
            f"        if (b1_{name} > b0_{name} && sf_self_overlaps({rank}, a.n_{name}, a.s_{name})) Py_RETURN_NOTIMPLEMENTED;"
        )
    lines.append("    }")
    return lines


def _parse_scalar(index: int, name: str, scalar: ScalarType) -> list[str]:
    target = f"a.sc_{name}"
    if scalar.dtype == bool_:
        return [
            f"    if (!PyBool_Check(args[{index}])) Py_RETURN_NOTIMPLEMENTED;",
            f"    {target} = (sf_bool)(args[{index}] == Py_True);",
        ]
    if scalar.dtype.kind == "f":
        return [
            f"    if (!PyFloat_Check(args[{index}]) && !PyLong_Check(args[{index}])) Py_RETURN_NOTIMPLEMENTED;",
            "    {",
            f"        double value = PyFloat_AsDouble(args[{index}]);",
            "        if (value == -1.0 && PyErr_Occurred()) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }",
            # A finite double beyond float's range has no float value (the cast is undefined).
            *(
                [
                    "        if (isfinite(value) && fabs(value) > 3.4028234663852886e+38) Py_RETURN_NOTIMPLEMENTED;"
                ]
                if scalar.dtype == float32
                else []
            ),
            f"        {target} = ({C_TYPES[scalar.dtype]})value;",
            "    }",
        ]
    low, high = ("INT32_MIN", "INT32_MAX") if scalar.dtype == int32 else ("INT64_MIN", "INT64_MAX")
    return [
        f"    if (!PyLong_Check(args[{index}])) Py_RETURN_NOTIMPLEMENTED;",
        "    {",
        "        int overflow = 0;",
        f"        long long value = PyLong_AsLongLongAndOverflow(args[{index}], &overflow);",
        "        if (overflow || (value == -1 && PyErr_Occurred())) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }",
        f"        if (value < {low} || value > {high}) Py_RETURN_NOTIMPLEMENTED;",
        f"        {target} = ({C_TYPES[scalar.dtype]})value;",
        "    }",
    ]


def _stencil_checks(
    program: ProgramIR, stencil: Stencil, code: StencilCode, index: int
) -> list[str]:
    """Resolve the domain, check outputs agree, extents fit and nothing aliases; then run."""
    dims = code.iteration_dims
    # (At least one slot: a 0-D stencil computes one point and its bounds are unused.)
    slots = max(1, len(dims))
    lines = [f"    int64_t lo{index}[{slots}], hi{index}[{slots}];", "    {"]
    lines.append("        int64_t l, h;")
    for position, target in enumerate(stencil.outputs):
        field = program.param(target.name).type
        assert isinstance(field, FieldType)
        for axis, ((start, stop), dim) in enumerate(
            zip(target.slices, field.dim_names, strict=True)
        ):
            slot = dims.index(dim)
            if isinstance(start, Bound) or isinstance(stop, Bound):
                # domain=: absolute indices, which must lie inside the output.
                size = f"a.n_{target.name}[{axis}]"
                low = _bound_text(start) if start is not None else "0"
                high = _bound_text(stop) if stop is not None else size
                lines.append(f"        l = {low}; h = {high};")
                lines.append(f"        if (l < 0 || h < l || h > {size}) Py_RETURN_NOTIMPLEMENTED;")
            else:
                lines.append(
                    f"        sf_resolve(a.n_{target.name}[{axis}], {int(start is not None)}, "
                    f"{start or 0}, {int(stop is not None)}, {stop or 0}, &l, &h);"
                )
            if position == 0:
                lines.append(f"        lo{index}[{slot}] = l; hi{index}[{slot}] = h;")
            else:
                lines.append(
                    f"        if (lo{index}[{slot}] != l || hi{index}[{slot}] != h) Py_RETURN_NOTIMPLEMENTED;"
                )
    empty = " || ".join(f"hi{index}[{i}] <= lo{index}[{i}]" for i in range(len(dims)))
    lines.append(f"        run{index} = !({empty or '0'});")
    lines.append(f"        if (run{index}) {{")
    for extent in stencil.extents:
        for axis, bound in enumerate(extent.dims):
            if bound.dim not in dims:
                continue
            slot = dims.index(bound.dim)
            lines.append(
                f"            if (lo{index}[{slot}] + ({bound.lower}) < 0 || "
                f"hi{index}[{slot}] + ({bound.upper}) > a.n_{extent.name}[{axis}]) Py_RETURN_NOTIMPLEMENTED;"
            )
    for read in stencil.guarded:
        lines += _guarded_check(program, read, dims, index)
    # No output may overlap another field argument its stencil reads or writes.
    for out, other in overlap_pairs(stencil):
        lines.append(
            f"            if (check_overlaps && sf_overlap(b0_{out}, b1_{out}, b0_{other}, b1_{other})) Py_RETURN_NOTIMPLEMENTED;"
        )
    lines.append("        }")
    lines.append("    }")
    return lines


def _bound_text(bound: int | Bound) -> str:
    """C text of an index bound (a scalar argument's value, plus an integer)."""
    if isinstance(bound, int):
        return f"{bound}LL"
    if bound.param is None:
        return f"{bound.offset}LL"
    return f"((int64_t)a.sc_{bound.param} + {bound.offset}LL)"


def _guarded_check(
    program: ProgramIR, read: GuardedRead, dims: Sequence[str], index: int
) -> list[str]:
    """Check a read that happens only in a region: the box around the region's part of the
    domain, moved by the read's offsets, must lie inside the field (as
    ``pipeline.arguments.guarded_reach`` computes it)."""
    field = program.param(read.name).type
    assert isinstance(field, FieldType)

    n = len(dims)
    lines = [
        "            {",
        f"                int64_t gl[{n}], gh[{n}]; int seen = 0;",
    ]
    for box in read.region.boxes:
        lines.append("                {")
        lines.append(
            f"                    int64_t l[{n}], h[{n}];"
            f" for (int d = 0; d < {n}; ++d) {{ l[d] = lo{index}[d]; h[d] = hi{index}[d]; }}"
        )
        for interval in box:
            slot = list(dims).index(interval.dim)
            for b in interval.lowers:
                lines.append(
                    f"                    if ({_bound_text(b)} > l[{slot}]) l[{slot}] = {_bound_text(b)};"
                )
            for b in interval.uppers:
                lines.append(
                    f"                    if ({_bound_text(b)} < h[{slot}]) h[{slot}] = {_bound_text(b)};"
                )
        empty = " || ".join(f"l[{d}] >= h[{d}]" for d in range(n)) or "0"
        lines += [
            f"                    if (!({empty})) {{",
            f"                        for (int d = 0; d < {n}; ++d) {{",
            "                            if (!seen || l[d] < gl[d]) gl[d] = l[d];",
            "                            if (!seen || h[d] > gh[d]) gh[d] = h[d];",
            "                        }",
            "                        seen = 1;",
            "                    }",
            "                }",
        ]
    offsets = dict(read.offsets)
    checks = []
    for axis, dim in enumerate(field.dim_names):
        if dim not in dims:
            continue
        slot = list(dims).index(dim)
        shift = offsets.get(dim, 0)
        checks.append(
            f"gl[{slot}] + ({shift}) < 0 || gh[{slot}] + ({shift}) > a.n_{read.name}[{axis}]"
        )
    if checks:
        lines.append(f"                if (seen && ({' || '.join(checks)})) Py_RETURN_NOTIMPLEMENTED;")
    lines += ["                (void)gl; (void)gh; (void)seen;", "            }"]
    return lines


def generate_module(
    program: ProgramIR,
    module_name: str,
    stencils: Sequence[tuple[Stencil, StencilCode]],
    unit_stride: Mapping[str, bool],
    runtime: str,
) -> str:
    """The complete C source of the extension module ``module_name``: two translation units,
    ``stencils`` (``runtime`` and the stencil functions, no Python headers) and ``bindings``
    (the module and its ``run``), built concurrently."""
    kernels = [runtime, *argument_struct(program), *(code.text for _, code in stencils)]
    return join_units(
        {
            "stencils": "\n".join(kernels),
            "bindings": _bindings(program, module_name, stencils, unit_stride),
        }
    )


def _bindings(
    program: ProgramIR,
    module_name: str,
    stencils: Sequence[tuple[Stencil, StencilCode]],
    unit_stride: Mapping[str, bool],
) -> str:
    written = {t.name for s in program.stencils for t in s.outputs}
    out = [
        "#define PY_SSIZE_T_CLEAN",
        "#include <Python.h>",
        "#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION",
        "#include <numpy/arrayobject.h>",
        "#include <stdint.h>",
        BOOL_TYPEDEF,
        *argument_struct(program),
        *(f"{code.signature};" for _, code in stencils),
        _HELPERS,
    ]
    # check_overlaps = 0 only through run_disjoint, which Python calls after proving with
    # numpy.shares_memory that outputs whose byte ranges interleave share no element.
    out.append(
        "static PyObject* sf_call(PyObject* const* args, Py_ssize_t nargs, int check_overlaps) {"
    )
    out.append("    (void)check_overlaps;")
    out.append(f"    if (nargs != {len(program.params)}) Py_RETURN_NOTIMPLEMENTED;")
    out.append("    sf_args a;")
    for index, param in enumerate(program.params):
        if isinstance(param.type, FieldType):
            out += _parse_field(
                index,
                param.name,
                param.type,
                param.name in written,
                unit_stride.get(param.name, False),
            )
        else:
            out += _parse_scalar(index, param.name, param.type)
    for param in program.params:
        if isinstance(param.type, FieldType):
            out.append(f"    (void)b0_{param.name}; (void)b1_{param.name};")
    for index, (stencil, code) in enumerate(stencils):
        out.append(f"    int run{index} = 0;")
        out += _stencil_checks(program, stencil, code, index)
    out.append("    int status = 0;")
    out.append("    Py_BEGIN_ALLOW_THREADS")
    for index, (_, code) in enumerate(stencils):
        out.append(
            f"    if (status == 0 && run{index}) status = {code.name}(&a, lo{index}, hi{index});"
        )
    out.append("    Py_END_ALLOW_THREADS")
    out.append("    if (status != 0) return PyErr_NoMemory();")
    out.append("    Py_RETURN_NONE;")
    out.append("}")
    out.append(f'''
static PyObject* sf_run(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {{
    (void)self;
    return sf_call(args, nargs, 1);
}}

static PyObject* sf_run_disjoint(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {{
    (void)self;
    return sf_call(args, nargs, 0);
}}

static PyMethodDef sf_methods[] = {{
    {{"run", (PyCFunction)(void (*)(void))sf_run, METH_FASTCALL,
     "run(*args): run the program, or return NotImplemented if any argument fails a check."}},
    {{"run_disjoint", (PyCFunction)(void (*)(void))sf_run_disjoint, METH_FASTCALL,
     "run(*args) for arguments whose interleaved byte ranges were shown to share no element."}},
    {{NULL, NULL, 0, NULL}}
}};

static struct PyModuleDef sf_module = {{
    PyModuleDef_HEAD_INIT, "{module_name}", "stencilforge program {program.name}", -1, sf_methods
}};

PyMODINIT_FUNC PyInit_{module_name}(void) {{
    import_array();
    return PyModule_Create(&sf_module);
}}
''')
    return "\n".join(out)
