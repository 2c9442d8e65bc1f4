"""JAX's 64-bit types for a benchmark run: the workloads are float64.

JAX disables its 64-bit types by default, and ``allocators`` then refuses a float64 request on
``jax.numpy`` rather than narrow it. The harness is a program of its own, so, like any program
that wants float64 JAX arrays, it enables them at its start, before it makes any JAX array.
"""

from __future__ import annotations

import sys

__all__ = ["enable_jax_64_bit"]


def enable_jax_64_bit() -> str | None:
    """Turn on ``jax_enable_x64`` if JAX is imported (a JAX backend or peer was created).

    Returns:
        A note for the report when it was turned on here, else ``None``.
    """
    jax = sys.modules.get("jax")
    if jax is None or bool(jax.config.read("jax_enable_x64")):
        return None
    jax.config.update("jax_enable_x64", True)
    return "JAX's 64-bit types enabled for this run (jax_enable_x64; the workloads are float64)"
