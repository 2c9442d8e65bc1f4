"""The plain-C face of a c_cpu program: its argument table and its domain checks.

A program's shared object has no Python in it. Beside the stencil functions it exports
``sf_program_descriptor`` (``backends.c.launch_abi``): one ``sf_parameter`` per parameter
(kind, dtype, rank, whether the program writes it, whether the code assumes its last
dimension contiguous, and where its pointer, shape and strides go in ``sf_args``), and two
functions. ``check`` resolves each stencil's domain from the outputs' shapes and slices and
refuses (returns 1) when outputs disagree, an input's extent does not cover the domain plus
the stencil's reach, a guarded read would leave its field, or an output's byte range overlaps
another field of its stencil; it reads only the numbers the launcher wrote, never the arrays'
memory. ``run`` runs the stencils whose domain is not empty.

The launcher (``backends.c.launcher``) checks each argument with the NumPy C API as the table
describes it before ``check`` and ``run`` are called, and returns ``NotImplemented`` on any
refusal; the dispatcher's ``ArgumentChecker`` then raises the precise error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from backends.c.launch_abi import DESCRIPTOR_C, DESCRIPTOR_SYMBOL, DTYPE_CODES
from backends.c.stencil_code import StencilCode
from backends.c.units import join_units
from backends.clike.expressions import C_TYPES
from backends.clike.runtime import runtime_for
from pipeline.dsl.arguments import overlap_pairs
from pipeline.dsl.ir.nodes import GuardedRead, ProgramIR, Stencil
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType, ScalarType

__all__ = ["argument_struct", "generate_module"]

_SF_OVERLAP = """
static inline int sf_overlap(const char* a0, const char* a1, const char* b0, const char* b1) {
    return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}
"""


def resolved_slice(size: str, start: int | None, stop: int | None) -> tuple[str, str]:
    """C expressions of ``slice(start, stop).indices(n)`` for step 1, where ``n`` is the
    value of the C expression ``size`` (an array's extent, never negative): the lower bound,
    and the upper bound in terms of ``l``, the variable that holds the lower one.

    The constants are folded here rather than passed to a general resolver: hdiff's three
    resolver calls, inlined, cost gcc 10 M instructions more than the folded text.
    """
    if not start:
        low = "0"
    elif start > 0:
        low = f"({size} < {start} ? {size} : {start})"
    else:
        low = f"({size} + {start} > 0 ? {size} + {start} : 0)"
    if stop is None:
        return low, size
    end = f"({size} < {stop} ? {size} : {stop})" if stop >= 0 else f"{size} + {stop}"
    # l >= 0, so the larger of the end and l is never negative.
    return low, f"({end} > l ? {end} : l)"


def argument_struct(program: ProgramIR) -> list[str]:
    """The C declaration of ``sf_args``: each parameter's pointer, shape and strides (in
    elements), or scalar value (every unit that calls or defines a stencil function needs
    it; the launcher fills it at the offsets the descriptor records)."""
    lines = ["typedef struct {"]
    for param in program.params:
        if isinstance(param.type, ScalarType):
            lines.append(f"    {C_TYPES[param.type.dtype]} sc_{param.name};")
        else:
            rank = len(param.type.dims)
            lines.append(f"    char* p_{param.name};")
            lines.append(f"    int64_t n_{param.name}[{rank}];")
            lines.append(f"    int64_t s_{param.name}[{rank}];")
    lines.append("    char sf_end;  /* so that a program without parameters has a struct */")
    lines.append("} sf_args;")
    return lines


def _stencil_checks(
    program: ProgramIR, stencil: Stencil, code: StencilCode, index: int
) -> list[str]:
    """Resolve the domain (into ``d``), check outputs agree, extents fit and nothing aliases;
    ``run{index}`` says whether the domain is not empty. Any failure returns 1."""
    dims = code.iteration_dims
    lines = [f"    int64_t* lo{index} = dom->lo{index}; int64_t* hi{index} = dom->hi{index};", "    {"]
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
                size = f"a->n_{target.name}[{axis}]"
                low = _bound_text(start) if start is not None else "0"
                high = _bound_text(stop) if stop is not None else size
                lines.append(f"        l = {low}; h = {high};")
                lines.append(f"        if (l < 0 || h < l || h > {size}) return 1;")
            else:
                low, high = resolved_slice(f"a->n_{target.name}[{axis}]", start, stop)
                lines.append(f"        l = {low}; h = {high};")
            if position == 0:
                lines.append(f"        lo{index}[{slot}] = l; hi{index}[{slot}] = h;")
            else:
                lines.append(
                    f"        if (lo{index}[{slot}] != l || hi{index}[{slot}] != h) return 1;"
                )
    empty = " || ".join(f"hi{index}[{i}] <= lo{index}[{i}]" for i in range(len(dims)))
    lines.append(f"        run{index} = !({empty or '0'});")
    if code.inner_extent is not None:
        # The code runs for one inner extent only (backends.c.specialization).
        last = len(dims) - 1
        lines.append(
            f"        if (run{index} && hi{index}[{last}] - lo{index}[{last}] != "
            f"{code.inner_extent}) return 1;"
        )
    lines.append(f"        if (run{index}) {{")
    for extent in stencil.extents:
        for axis, bound in enumerate(extent.dims):
            if bound.dim not in dims:
                continue
            slot = dims.index(bound.dim)
            lines.append(
                f"            if (lo{index}[{slot}] + ({bound.lower}) < 0 || "
                f"hi{index}[{slot}] + ({bound.upper}) > a->n_{extent.name}[{axis}]) return 1;"
            )
    for read in stencil.guarded:
        lines += _guarded_check(program, read, dims, index)
    # No output may overlap another field argument its stencil reads or writes.
    for out, other in overlap_pairs(stencil):
        lines.append(
            f"            if (check_overlaps && sf_overlap(b0_{out}, b1_{out}, b0_{other}, b1_{other})) return 1;"
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
    return f"((int64_t)a->sc_{bound.param} + {bound.offset}LL)"


def _guarded_check(
    program: ProgramIR, read: GuardedRead, dims: Sequence[str], index: int
) -> list[str]:
    """Check a read that happens only in a region: the box around the region's part of the
    domain, moved by the read's offsets, must lie inside the field (as
    ``pipeline.dsl.arguments.guarded_reach`` computes it)."""
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
            f"gl[{slot}] + ({shift}) < 0 || gh[{slot}] + ({shift}) > a->n_{read.name}[{axis}]"
        )
    if checks:
        lines.append(f"                if (seen && ({' || '.join(checks)})) return 1;")
    lines += ["                (void)gl; (void)gh; (void)seen;", "            }"]
    return lines




def generate_module(
    program: ProgramIR,
    module_name: str,
    stencils: Sequence[tuple[Stencil, StencilCode]],
    unit_stride: Mapping[str, bool],
    runtime: str,
) -> str:
    """The complete C source of the program ``module_name``, plain C without Python or NumPy
    headers: ``runtime``, the stencil functions and the descriptor (with ``check`` and
    ``run``) in one translation unit; or, where stencils have edge functions
    (``StencilCode.edges``), two units that the compiler builds at the same time: the
    stencils, and ``<module_name>_edges`` with the edge functions and the descriptor (the
    two about even for hdiff: ADR 0018).
    """
    struct = argument_struct(program)
    launch = [
        DESCRIPTOR_C,
        _SF_OVERLAP if any(overlap_pairs(stencil) for stencil, _ in stencils) else "",
        *_descriptor(program, module_name, stencils, unit_stride),
    ]
    code = [code.text for _, code in stencils]
    edges = [code.edges for _, code in stencils if code.edges]
    if not edges:
        return "\n".join([runtime, *struct, *code, *launch])
    helpers = list(dict.fromkeys(h for _, code in stencils if code.edges for h in code.helpers))
    declarations = [f"{code.signature};" for _, code in stencils]
    rest = [*helpers, *struct, *edges, *declarations, *launch]
    return join_units(
        {
            module_name: "\n".join([runtime, *struct, *code]),
            f"{module_name}_edges": "\n".join([runtime_for("\n".join(rest)), *rest]),
        }
    )


def _domains_struct(stencils: Sequence[tuple[Stencil, StencilCode]]) -> list[str]:
    """``sf_domains``: each stencil's domain (``lo``/``hi`` per iteration dimension, at least
    one slot: a 0-D stencil computes one point) and whether it is not empty."""
    lines = ["typedef struct {"]
    for index, (_, code) in enumerate(stencils):
        slots = max(1, len(code.iteration_dims))
        lines.append(f"    int64_t lo{index}[{slots}], hi{index}[{slots}];")
        lines.append(f"    int run{index};")
    lines.append("    char sf_end;")
    lines.append("} sf_domains;")
    return lines


def _parameter_table(program: ProgramIR, unit_stride: Mapping[str, bool]) -> list[str]:
    written = {t.name for s in program.stencils for t in s.outputs}
    rows = []
    for param in program.params:
        if isinstance(param.type, FieldType):
            field = param.type
            rows.append(
                f"    {{SF_FIELD, {DTYPE_CODES[field.dtype]}, {len(field.dims)}, "
                f"{int(param.name in written)}, {int(unit_stride.get(param.name, False))}, 0, "
                f"{np.dtype(field.dtype).itemsize}, offsetof(sf_args, p_{param.name}), "
                f"offsetof(sf_args, n_{param.name}), offsetof(sf_args, s_{param.name})}},"
            )
        else:
            assert isinstance(param.type, ScalarType)
            dtype = param.type.dtype
            rows.append(
                f"    {{SF_SCALAR, {DTYPE_CODES[dtype]}, 0, 0, 0, 0, {np.dtype(dtype).itemsize}, "
                f"offsetof(sf_args, sc_{param.name}), 0, 0}},"
            )
    # (A dummy row for a program without parameters: C has no empty arrays.)
    rows = rows or ["    {SF_SCALAR, 0, 0, 0, 0, 0, 1, 0, 0, 0},"]
    return ["static const sf_parameter sf_parameters[] = {", *rows, "};"]


def _descriptor(
    program: ProgramIR,
    module_name: str,
    stencils: Sequence[tuple[Stencil, StencilCode]],
    unit_stride: Mapping[str, bool],
) -> list[str]:
    out = [*_domains_struct(stencils), *_parameter_table(program, unit_stride)]
    out.append(
        "static int sf_check(const void* args, const char* const* bounds, int check_overlaps, "
        "void* domains) {"
    )
    out.append("    const sf_args* a = (const sf_args*)args;")
    out.append("    sf_domains* dom = (sf_domains*)domains;")
    out.append("    (void)a; (void)dom; (void)bounds; (void)check_overlaps;")
    index_of = {param.name: i for i, param in enumerate(program.params)}
    for name in sorted({name for s, _ in stencils for pair in overlap_pairs(s) for name in pair}):
        i = index_of[name]
        out.append(f"    const char *b0_{name} = bounds[{2 * i}], *b1_{name} = bounds[{2 * i + 1}];")
    for index, (stencil, code) in enumerate(stencils):
        out.append(f"    int run{index} = 0;")
        out += _stencil_checks(program, stencil, code, index)
        out.append(f"    dom->run{index} = run{index};")
    out.append("    return 0;")
    out.append("}")
    out.append("static int sf_run(const void* args, const void* domains) {")
    out.append("    const sf_args* a = (const sf_args*)args;")
    out.append("    const sf_domains* dom = (const sf_domains*)domains;")
    out.append("    (void)a; (void)dom;")
    out.append("    int status = 0;")
    for index, (_, code) in enumerate(stencils):
        out.append(
            f"    if (status == 0 && dom->run{index}) "
            f"status = {code.name}(a, dom->lo{index}, dom->hi{index});"
        )
    out.append("    return status;")
    out.append("}")
    out.append(
        f'__attribute__((visibility("default"))) const sf_program {DESCRIPTOR_SYMBOL} = {{'
    )
    out.append(
        f'    SF_LAUNCH_ABI, sizeof(sf_program), sizeof(sf_parameter), {len(program.params)}, '
        f'"{module_name}", sizeof(sf_args), sizeof(sf_domains), sf_parameters, sf_check, sf_run'
    )
    out.append("};")
    return out
