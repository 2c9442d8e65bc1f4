"""The readable text form of the IR (``str(program_ir)``)."""

from __future__ import annotations

from pipeline.dsl.ir import nodes as ir

__all__ = ["format_expr", "format_program"]

_PRECEDENCE = {
    "|": 1,
    "&": 2,
    "==": 3,
    "!=": 3,
    "<": 3,
    "<=": 3,
    ">": 3,
    ">=": 3,
    "+": 4,
    "-": 4,
    "*": 5,
    "/": 5,
    "//": 5,
    "%": 5,
    "**": 7,
}
_UNARY_PRECEDENCE = 6


def format_expr(expr: ir.Expr, parent: int = 0) -> str:
    """Python-like text of ``expr``; shifted reads print as ``f[I+1, J-1]``."""
    match expr:
        case ir.Ref(name=name, offsets=offsets):
            if not offsets:
                return name
            return f"{name}[{', '.join(f'{d}{v:+d}' for d, v in offsets)}]"
        case ir.Literal(value=value):
            return repr(value)
        case ir.UnaryOp(op=op, operand=operand):
            text = f"{op}{format_expr(operand, _UNARY_PRECEDENCE)}"
            return f"({text})" if parent > _UNARY_PRECEDENCE else text
        case ir.BinaryOp(op=op, left=left, right=right):
            mine = _PRECEDENCE[op]
            # ** is right-associative; everything else left-associative.
            left_min, right_min = (mine + 1, mine) if op == "**" else (mine, mine + 1)
            text = f"{format_expr(left, left_min)} {op} {format_expr(right, right_min)}"
            return f"({text})" if parent > mine else text
        case ir.Call(function=function, args=args):
            return f"{function}({', '.join(format_expr(a) for a in args)})"
        case ir.Cast(value=value, dtype=dtype):
            return f"astype({format_expr(value)}, {dtype})"
        case ir.OperatorCall(operator=operator, args=args):
            return f"{operator.name}({', '.join(format_expr(a) for a in args)})"
        case ir.ConcatWhere(region=region, inside=inside, outside=outside):
            return f"concat_where({region}, {format_expr(inside)}, {format_expr(outside)})"
        case ir.Scan(operator=operator, args=args, component=component):
            direction = "forward" if operator.forward else "backward"
            carry = f"[{component}]" if len(operator.carry) > 1 else ""
            arguments = ", ".join(format_expr(a) for a in args)
            return f"scan_{direction}[{operator.axis}] {operator.name}({arguments}){carry}"
    raise TypeError(f"not an IR expression: {expr!r}")


def _format_target(target: ir.OutputTarget) -> str:
    parts = []
    for start, stop in target.slices:
        parts.append(f"{'' if start is None else start}:{'' if stop is None else stop}")
    return f"{target.name}[{', '.join(parts)}]"


def _format_assign(assign: ir.Assign) -> str:
    type_text = f"  # {assign.value.type}" if assign.value.type is not None else ""
    return f"{', '.join(assign.targets)} = {format_expr(assign.value)}{type_text}"


def _format_stencil(stencil: ir.Stencil) -> list[str]:
    outputs = ", ".join(_format_target(t) for t in stencil.outputs)
    lines = [f"  stencil {stencil.operator_name} -> {outputs} {{"]
    for extent in stencil.extents:
        reach = ", ".join(f"{d.dim}[{d.lower:+d}, {d.upper:+d}]" for d in extent.dims)
        lines.append(f"    # reads {extent.name} at {reach or 'the point only'}")
    for read in stencil.guarded:
        at = ", ".join(f"{d}{v:+d}" for d, v in read.offsets) or "the point"
        lines.append(f"    # reads {read.name} at {at} where {read.region}")
    lines.extend(f"    {_format_assign(a)}" for a in stencil.body)
    for target, result in zip(stencil.outputs, stencil.results, strict=True):
        lines.append(f"    {target.name} <- {format_expr(result)}")
    lines.append("  }")
    return lines


def format_program(program: ir.ProgramIR) -> str:
    """The whole program, one statement a line."""
    params = ", ".join(f"{p.name}: {p.type}" for p in program.params)
    lines = [f"program {program.name}({params}) {{"]
    for stencil in program.stencils:
        lines.extend(_format_stencil(stencil))
    lines.append("}")
    return "\n".join(lines)
