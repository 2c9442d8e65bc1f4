"""Several C translation units in one source text.

A source may hold several translation units, so that the compilation can build them
concurrently: the variant measurements do, and so does a c_cpu program whose stencils have
edge loops (its stencils in one unit, the edge functions and the descriptor in another, ADR
0018). They travel as one text (what ``translate()`` shows and the cache keys hash), each
unit opened by a marker line.
"""

from __future__ import annotations

import re

__all__ = ["join_units", "split_units"]

_MARKER = "/* stencilforge translation unit: {name} */"
_MARKER_LINE = re.compile(r"^/\* stencilforge translation unit: ([A-Za-z0-9_]+) \*/$", re.MULTILINE)


def join_units(units: dict[str, str]) -> str:
    """One text holding ``units`` (name -> C source), in order.

    Raises:
        ValueError: a name is not a C identifier-like word.
    """
    parts = []
    for name, text in units.items():
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise ValueError(f"translation unit name {name!r} must be letters, digits or '_'")
        parts.append(f"{_MARKER.format(name=name)}\n{text}")
    return "\n".join(parts)


def split_units(text: str, default_name: str) -> list[tuple[str, str]]:
    """The (name, source) units of ``text``; a text without markers is one unit.

    Raises:
        ValueError: two units share a name, or text precedes the first marker.
    """
    markers = list(_MARKER_LINE.finditer(text))
    if not markers:
        return [(default_name, text)]
    if text[: markers[0].start()].strip():
        raise ValueError("source text before the first translation-unit marker")
    units = []
    for marker, following in zip(markers, [*markers[1:], None], strict=True):
        # A marker opens a line: the newline before the next one separates, it is not source.
        end = following.start() - 1 if following is not None else len(text)
        units.append((marker.group(1), text[marker.end() + 1 : end]))
    names = [name for name, _ in units]
    if len(set(names)) != len(names):
        raise ValueError(f"translation unit names repeat: {names}")
    return units
