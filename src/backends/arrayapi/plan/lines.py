"""Rewrites of a plan's generated lines that let NumPy reuse memory: values used once are
inlined, variables are deleted after their last use."""

from __future__ import annotations

import re

__all__ = ["free_after_last_use", "inline_single_uses"]

_DEFINITION = re.compile(r"^(\s+)(v\d+) = (.*)$")
_NAME = re.compile(r"\bv\d+\b")


def inline_single_uses(lines: list[str]) -> list[str]:
    """Each value used once written into its user's expression instead of a variable.

    An intermediate array bound to a name has a second reference, so NumPy cannot reuse its
    buffer for the next operation (its temporary elision needs a reference count of one):
    ``(a + b) + c`` allocates once, ``v1 = a + b; v2 = v1 + c`` twice, which on large grids
    costs a page fault per page. Values do not move across a store (outputs may be read).
    """
    uses: dict[str, int] = {}
    for line in lines:
        for name in _NAME.findall(line.partition(" = ")[2] if _DEFINITION.match(line) else line):
            uses[name] = uses.get(name, 0) + 1
    pending: dict[str, tuple[str, str]] = {}  # single-use (indent, definition), by name
    result: list[str] = []
    for line in lines:
        match = _DEFINITION.match(line)
        text = match.group(3) if match else line
        text = _NAME.sub(lambda m: f"({pending.pop(m.group())[1]})" if m.group() in pending else
                         m.group(), text)
        if match and uses.get(match.group(2)) == 1:
            pending[match.group(2)] = (match.group(1), text)
            continue
        if pending and not match:  # a store, a return or a new block: nothing moves past it
            for name, (indent, value) in pending.items():
                result.append(f"{indent}{name} = {value}")
            pending.clear()
        result.append(f"{match.group(1)}{match.group(2)} = {text}" if match else text)
    assert not pending, "every single-use value has its user"
    return result


def free_after_last_use(lines: list[str]) -> list[str]:
    """``del`` each variable after the line that reads it last.

    A variable lives until ``run`` returns otherwise: on large grids an intermediate whose
    memory is given back as soon as it is dead lets the next ones reuse it, instead of
    mapping fresh pages (measured: hdiff 1.15x NumPy's time without, 0.95x with).
    """
    last: dict[str, int] = {}
    for number, line in enumerate(lines):
        for name in _NAME.findall(line):
            last[name] = number
    dead: dict[int, list[str]] = {}
    for name, number in last.items():
        dead.setdefault(number, []).append(name)
    result: list[str] = []
    for number, line in enumerate(lines):
        result.append(line)
        if number in dead:
            indent = line[: len(line) - len(line.lstrip())]
            result.append(f"{indent}del {', '.join(dead[number])}")
    return result
