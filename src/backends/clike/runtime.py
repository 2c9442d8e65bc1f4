"""C helpers shared by every generated module: NumPy's integer and float semantics.

C's ``/`` and ``%`` truncate, signed overflow is undefined and ``fmin`` drops NaN; NumPy
floors, wraps and propagates NaN. These inline functions give the generated code NumPy's
results, so compiled and embedded backends agree bit for bit on integer code.

A c_cpu unit takes only what its code names (``runtime_for``): the helpers it calls, and
``<math.h>`` only where something calls libm. Parsing ``<math.h>``, ``<stdlib.h>`` and
``<string.h>`` took 70 M of the 763 M instructions gcc ran for hdiff (ADR 0018); unused
inline helpers cost little to parse, but the float ones need ``<math.h>``.
"""

from __future__ import annotations

import re

__all__ = ["BOOL_TYPEDEF", "MATH_NAMES", "RUNTIME_C", "runtime_for", "runtime_functions"]

#: The C type of DSL booleans (NumPy's one-byte bool); every unit that names it needs this.
BOOL_TYPEDEF = "typedef unsigned char sf_bool;"

_MATH_FUNCTIONS = (
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "tgamma", "lgamma", "erf", "erfc", "floor", "ceil", "trunc", "round", "rint", "nearbyint",
    "fabs", "pow", "fmod", "remainder", "copysign", "fmin", "fmax", "hypot",
)

#: What generated code may name from ``<math.h>``: its functions in ``double`` and ``float``
#: forms, the classification macros and the constants. A unit that names none of them does
#: not include the header.
MATH_NAMES = frozenset(
    [
        *_MATH_FUNCTIONS,
        *(f"{name}f" for name in _MATH_FUNCTIONS),
        *("isfinite", "isinf", "isnan", "signbit", "NAN", "INFINITY", "HUGE_VAL", "HUGE_VALF"),
    ]
)

# Without a declaration, C (before C23) would call an undeclared function as returning int:
# a header that should have been included is a compile error, never a wrong result.
_DECLARE_OR_FAIL = '#pragma GCC diagnostic error "-Wimplicit-function-declaration"'

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


def _helpers() -> dict[str, str]:
    """Every helper by its C name, each after the helpers it calls."""
    found: dict[str, str] = {}
    text = runtime_functions()
    starts = [m.start() for m in re.finditer(r"^static inline ", text, flags=re.MULTILINE)]
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        definition = text[start:end].strip()
        name = re.match(r"static inline [\w ]+?\b(sf_\w+)\(", definition)
        assert name is not None, definition
        found[name.group(1)] = definition
    return found


_HELPERS = _helpers()

#: Macros a unit defines where its code names them. ``SF_NOCLONE``: gcc's IPA-CP would
#: specialize a tile function for the constants of its single-tile call (``pf = 0``,
#: ``nt = 0``) and build the whole sweep twice (hdiff with streaming stores: 1.5 times the
#: instructions without the attribute, ADR 0018); other compilers have no such attribute.
_MACROS = {
    "SF_NOCLONE": "\n".join(
        [
            "#if defined(__GNUC__) && !defined(__clang__)",
            "#define SF_NOCLONE __attribute__((noclone))",
            "#else",
            "#define SF_NOCLONE",
            "#endif",
        ]
    ),
}
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def runtime_for(code: str) -> str:
    """The runtime part of a C unit whose other code is ``code``: ``<stdint.h>``, the bool
    type, the macros and helpers ``code`` names (helpers with those they call, each defined
    before its callers) and ``<math.h>`` where any of that names one of ``MATH_NAMES``.
    Identifiers are found in the text as it is: a name in a comment only costs an unneeded
    definition.
    """
    names = set(_IDENTIFIER.findall(code))
    wanted = {name for name in _HELPERS if name in names}
    pending = list(wanted)
    while pending:
        for callee in _IDENTIFIER.findall(_HELPERS[pending.pop()]):
            if callee in _HELPERS and callee not in wanted:
                wanted.add(callee)
                pending.append(callee)
    helpers = [text for name, text in _HELPERS.items() if name in wanted]
    for helper in helpers:
        names.update(_IDENTIFIER.findall(helper))
    lines = [_DECLARE_OR_FAIL]
    if names & MATH_NAMES:
        lines.append("#include <math.h>")
    macros = [text for name, text in _MACROS.items() if name in names]
    return "\n".join([*lines, "#include <stdint.h>", BOOL_TYPEDEF, *macros, *helpers])


#: Every helper and the headers they need, for translations that do not pick (DaCe's code).
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
