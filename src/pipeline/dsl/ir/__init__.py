"""The stencil DSL's IR, as a backend's translation reads it: the nodes (``nodes``), the
index regions of ``concat_where`` and ``domain=`` bounds, the field and scalar types, and the
traversal helpers of the passes. ``from pipeline.dsl import ir`` then ``ir.BinaryOp``."""

from __future__ import annotations

from pipeline.dsl.ir import nodes
from pipeline.dsl.ir.nodes import *  # noqa: F403  (the nodes' names, as nodes.__all__ lists them)
from pipeline.dsl.passes.traversal import children, contains_scan, map_children, substitute, walk
from pipeline.dsl.regions import Bound, Interval, Region
from pipeline.dsl.types import FieldType, ScalarType

__all__ = [
    "Bound",
    "FieldType",
    "Interval",
    "Region",
    "ScalarType",
    "children",
    "contains_scan",
    "map_children",
    "substitute",
    "walk",
]
__all__ += nodes.__all__
