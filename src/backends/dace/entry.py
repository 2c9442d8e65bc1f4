"""The C++ entry that calls a CPU SDFG with its arguments packed in one array of words."""

from __future__ import annotations

from typing import Any

__all__ = ["packed_entry"]


def packed_entry(sdfg: Any) -> str:
    """C++ of ``__sf_packed_<name>(state, words)``: the SDFG's entry function called with its
    arguments from one array of 64-bit words (pointers and integers as values, floats as
    their bits), in the entry's order.

    Through ctypes each argument costs about 0.15 us, and a stencil's entry has a dozen or
    more (pointers, sizes, strides, domain bounds, modes); one pointer to prepared words
    costs the same whatever their number.
    """
    name = sdfg.name
    typed = sdfg.signature_arglist(with_types=True, arglist=sdfg.arglist())
    values = []
    for index, declaration in enumerate(typed):
        ctype = declaration.rsplit(" ", 1)[0].strip()
        word = f"w[{index}]"
        if "*" in ctype:
            values.append(f"({ctype})(uintptr_t){word}")
        elif ctype == "double":
            values.append(f"sf_word_f64({word})")
        elif ctype == "float":
            values.append(f"sf_word_f32({word})")
        else:
            values.append(f"({ctype}){word}")
    arguments = ", ".join(["__state", *values])
    return "\n".join(
        [
            "#include <string.h>",
            f"DACE_EXPORTED void __program_{name}({name}_state_t *__state, "
            f"{sdfg.signature(with_types=True, for_call=False)});",
            "static inline double sf_word_f64(int64_t w) "
            "{ double v; memcpy(&v, &w, sizeof v); return v; }",
            "static inline float sf_word_f32(int64_t w) "
            "{ int32_t b = (int32_t)w; float v; memcpy(&v, &b, sizeof v); return v; }",
            f"DACE_EXPORTED void __sf_packed_{name}({name}_state_t *__state, const int64_t *w) {{",
            f"    __program_{name}({arguments});",
            "}",
        ]
    )
