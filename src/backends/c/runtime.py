"""C helpers shared by every generated module: NumPy's integer and float semantics.

C's ``/`` and ``%`` truncate, signed overflow is undefined and ``fmin`` drops NaN; NumPy
floors, wraps and propagates NaN. These inline functions give the generated code NumPy's
results, so compiled and embedded backends agree bit for bit on integer code.
"""

from __future__ import annotations

__all__ = ["BOOL_TYPEDEF", "RUNTIME_C", "runtime_functions"]

#: The C type of DSL booleans (NumPy's one-byte bool); every unit that names it needs this.
BOOL_TYPEDEF = "typedef unsigned char sf_bool;"

_INTEGER_TEMPLATE = """
static inline {t} sf_floordiv_{s}({t} a, {t} b) {{
    if (b == 0) return 0;
    if (b == -1) return ({t})(0u - ({u})a);
    {t} q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}}
static inline {t} sf_mod_{s}({t} a, {t} b) {{
    if (b == 0 || b == -1) return 0;
    {t} r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}}
static inline {t} sf_pow_{s}({t} a, {t} b) {{
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    {u} result = 1, base = ({u})a;
    while (b) {{ if (b & 1) result *= base; base *= base; b >>= 1; }}
    return ({t})result;
}}
static inline {t} sf_fmod_{s}({t} a, {t} b) {{
    if (b == 0 || b == -1) return 0;
    return a % b;
}}
static inline {t} sf_min_{s}({t} a, {t} b) {{ return a < b ? a : b; }}
static inline {t} sf_max_{s}({t} a, {t} b) {{ return a > b ? a : b; }}
static inline {t} sf_abs_{s}({t} a) {{ return a < 0 ? ({t})(0u - ({u})a) : a; }}
"""

_FLOAT_TEMPLATE = """
static inline {t} sf_divmod_{s}({t} a, {t} b, {t} *modulus) {{
    {t} mod = fmod{f}(a, b);
    if (!b) {{ *modulus = mod; return a / b; }}
    {t} div = (a - mod) / b;
    if (mod) {{
        if ((b < 0) != (mod < 0)) {{ mod += b; div -= 1; }}
    }} else {{
        mod = copysign{f}(({t})0, b);
    }}
    {t} floordiv;
    if (div) {{
        floordiv = floor{f}(div);
        if (div - floordiv > 0.5{lit}) floordiv += 1;
    }} else {{
        floordiv = copysign{f}(({t})0, a / b);
    }}
    *modulus = mod;
    return floordiv;
}}
static inline {t} sf_floordiv_{s}({t} a, {t} b) {{
    {t} mod;
    if (!b) return a / b;
    return sf_divmod_{s}(a, b, &mod);
}}
static inline {t} sf_mod_{s}({t} a, {t} b) {{
    {t} mod;
    if (!b) return fmod{f}(a, b);
    sf_divmod_{s}(a, b, &mod);
    return mod;
}}
static inline {t} sf_min_{s}({t} a, {t} b) {{ return (a < b || a != a) ? a : b; }}
static inline {t} sf_max_{s}({t} a, {t} b) {{ return (a > b || a != a) ? a : b; }}
"""

def runtime_functions(qualifiers: str = "static inline") -> str:
    """The helper functions alone (no ``#include``), each declared with ``qualifiers``
    (CUDA code passes ``"static inline __device__"``)."""
    text = "\n".join(
        [
            _INTEGER_TEMPLATE.format(t="int32_t", u="uint32_t", s="i32"),
            _INTEGER_TEMPLATE.format(t="int64_t", u="uint64_t", s="i64"),
            _FLOAT_TEMPLATE.format(t="float", s="f32", f="f", lit="f"),
            _FLOAT_TEMPLATE.format(t="double", s="f64", f="", lit=""),
        ]
    )
    return text.replace("static inline", qualifiers)


RUNTIME_C = "\n".join(
    [
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        BOOL_TYPEDEF,
        runtime_functions(),
    ]
)
