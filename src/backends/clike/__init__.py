"""What the C-like translations share: any backend may import it, and it imports no backend.

The C text of IR expressions with NumPy's number semantics, the addressing of strided fields, the C
source format, the scan passes' stores, and the identity of a C compiler: what ``backends.c``,
``backends.cuda`` and ``backends.dace`` would otherwise each write, or import from one another.
"""
