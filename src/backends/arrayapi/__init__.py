"""Running a definition over an array-API namespace: the machinery the embedded backends
and ``jax_jit`` share.

A program's checked arguments become fields (``EmbeddedField``: an array with an origin per
named dimension) and the Python definition runs on them (``EmbeddedExecutable``); on NumPy a
program whose constructs allow it runs instead as its slicing plan (``plan``), written once
from its IR. The embedded backends load this executable directly; ``jax_jit`` traces it.
"""

from backends.arrayapi.execution import EmbeddedExecutable
from backends.arrayapi.fields import EmbeddedField

__all__ = ["EmbeddedExecutable", "EmbeddedField"]
