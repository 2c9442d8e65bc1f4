"""Named collections (a dataclass, a NamedTuple) as a scan's carry: read by field in the scan,
received as a collection of fields by a field operator, written by a program and a direct
call into ``out=`` collections.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

import dataclasses
from typing import NamedTuple

import numpy as np

from pipeline.dsl import field_operator, float64, maximum, program, scan_operator

from .cases import OUT, F, Feature, arguments
from .direct_calls import DirectCall
from .grid import IJK, K

SCAN_COLLECTIONS = Feature("collections as scan carries")


@dataclasses.dataclass(frozen=True)
class Column:
    total: float64
    peak: float64


@dataclasses.dataclass(frozen=True)
class ColumnFields:
    total: IJK
    peak: IJK


class Running(NamedTuple):
    low: float64
    count: float64


@scan_operator(axis=K, forward=True, init=Column(0.0, -1.0))
def column_peaks(column: Column, x: float64) -> Column:
    total = column.total + x
    return Column(total=total, peak=maximum(column.peak, total))


@scan_operator(axis=K, forward=False, init=Running(0.0, 0.0))
def running_from_top(running: Running, x: float64) -> Running:
    low, _ = running
    return Running(low * 0.5 + x, running.count + 1.0)


@field_operator
def peaks_and_lows(f: IJK) -> IJK:
    c = column_peaks(f)
    r = running_from_top(f(K + 1))
    return c.peak - c.total + r.low * r[1]


@program
def peaks_and_lows_program(f: IJK, out: IJK):
    peaks_and_lows(f, out=out[:, :, :-1])


def _peaks(f):
    total = np.cumsum(f, axis=-1)
    return total, np.maximum.accumulate(np.maximum(total, -1.0), axis=-1)


def peaks_and_lows_reference(f, out):
    above = f[..., 1:]
    total, peak = _peaks(f[..., :-1])
    low = np.zeros(above.shape)
    running = np.zeros(above.shape[:-1])
    for k in reversed(range(above.shape[-1])):
        running = running * 0.5 + above[..., k]
        low[..., k] = running
    count = np.arange(above.shape[-1], 0, -1, dtype=np.float64)
    out[..., :-1] = peak - total + low * count


SCAN_COLLECTIONS.add("scan_collection_carries_read_by_field", peaks_and_lows_program,
                     arguments(f=F(), out=OUT()), peaks_and_lows_reference, rtol=1e-12)


@program
def column_peaks_program(f: IJK, out: ColumnFields):
    column_peaks(f, out=ColumnFields(out.total[1:, :, :], out.peak[1:, :, :]))


def column_peaks_reference(f, out):
    total, peak = _peaks(f[1:])
    out.total[1:], out.peak[1:] = total, peak


def _column_outputs(rng):
    return ColumnFields(OUT()(rng), OUT()(rng))


SCAN_COLLECTIONS.add("scan_collection_carry_into_out_collection", column_peaks_program,
                     arguments(f=F(), out=_column_outputs), column_peaks_reference,
                     rtol=1e-12)


def column_peaks_direct_reference(x, out):
    out.total[...], out.peak[...] = _peaks(x)


_direct_arguments = arguments(x=F(), out=_column_outputs)
SCAN_COLLECTIONS.add("scan_collection_carry_called_directly",
                     DirectCall(column_peaks, _direct_arguments), _direct_arguments,
                     column_peaks_direct_reference, rtol=1e-12)
