"""The C++ code of DaCe tasklets: the shared expression emitter of ``backends.clike.expressions``.

A tasklet sees every value it reads through an input connector (one per distinct field read
and shift); the SDFG translation passes a ``read`` callback that names those connectors. The
NumPy-semantics helpers of ``backends.clike.runtime`` are added to each SDFG as global code, so
``dace_*`` and ``c_cpu`` agree bit for bit.
"""

from __future__ import annotations

from backends.clike.expressions import ExpressionEmitter as TaskletBody
from backends.clike.expressions import Offsets, literal

__all__ = ["Offsets", "TaskletBody", "literal"]
