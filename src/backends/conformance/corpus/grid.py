"""The corpus's grid: its dimensions, the field types of its cases and the default shape.

The words every case is written in, apart from the means of building a case
(:mod:`backends.conformance.corpus.cases`). No ``from __future__ import annotations``: the
DSL reads annotations made of these types.
"""

from pipeline.dsl import Dimension, Field, bool_, float32, float64, int32, int64

__all__ = ["IJ", "IJK", "IJK32", "IK", "KF", "SHAPE", "SHAPE_2D", "I", "IJKb", "IJKi32",
           "IJKi64", "J", "K"]

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741

IJK = Field[[I, J, K], float64]
IJK32 = Field[[I, J, K], float32]
IJKi32 = Field[[I, J, K], int32]
IJKi64 = Field[[I, J, K], int64]
IJKb = Field[[I, J, K], bool_]
IJ = Field[[I, J], float64]
IK = Field[[I, K], float64]
KF = Field[[K], float64]

#: The default grid: no two extents equal, so a transposed index cannot pass unnoticed.
SHAPE = (10, 9, 6)
SHAPE_2D = SHAPE[:2]
