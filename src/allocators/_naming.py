"""How error messages name a user's object."""

from __future__ import annotations

import types


def describe(obj: object) -> str:
    """Return ``module 'numpy'``, or the repr (with the type name unless it starts with it).

    Never raises: a failing ``__repr__`` falls back to the type name.
    """
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__!r}"
    try:
        text = repr(obj)
    except Exception:  # a user's broken __repr__ must not hide the real error
        return f"<{type(obj).__qualname__} object>"
    name = type(obj).__qualname__
    return text if text.startswith(name) else f"{text} of type {name}"
