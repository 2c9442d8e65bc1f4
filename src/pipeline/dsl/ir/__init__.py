"""The stencil DSL's IR, as a backend's translation reads it: the nodes (``nodes``), the
index regions of ``concat_where`` and ``domain=`` bounds, the field and scalar types, and the
traversal helpers of the passes. ``from pipeline.dsl import ir`` then ``ir.BinaryOp``."""

from __future__ import annotations

from pipeline.dsl.ir.nodes import (
    Assign,
    BinaryOp,
    Call,
    Cast,
    ConcatWhere,
    DimExtent,
    Expr,
    FieldExtent,
    FieldOperatorIR,
    GuardedRead,
    Literal,
    OperatorCall,
    OutputTarget,
    Param,
    ProgramIR,
    Ref,
    Scan,
    ScanOperatorIR,
    SourceLocation,
    Stencil,
    Type,
    UnaryOp,
)
from pipeline.dsl.passes.traversal import children, contains_scan, map_children, substitute, walk
from pipeline.dsl.regions import Bound, Interval, Region
from pipeline.dsl.types import FieldType, ScalarType

__all__ = [
    "Assign",
    "BinaryOp",
    "Bound",
    "Call",
    "Cast",
    "ConcatWhere",
    "DimExtent",
    "Expr",
    "FieldExtent",
    "FieldOperatorIR",
    "FieldType",
    "GuardedRead",
    "Interval",
    "Literal",
    "OperatorCall",
    "OutputTarget",
    "Param",
    "ProgramIR",
    "Ref",
    "Region",
    "ScalarType",
    "Scan",
    "ScanOperatorIR",
    "SourceLocation",
    "Stencil",
    "Type",
    "UnaryOp",
    "children",
    "contains_scan",
    "map_children",
    "substitute",
    "walk",
]
