"""Recipe ``Fusion.OTF``: DaCe's ``OTFMapFusion``, applied consumers first.

``OTFMapFusion`` replicates a producer map's body into its consumer, once per distinct
access the consumer makes, and drops the producer once nothing else reads it. Left to DaCe's
pattern matcher (``apply_transformations_repeated``) it fuses in whatever order matches come:
in hdiff it fused ``lap`` into each flux first (two replicas each), then each flux into the
output, which copied those replicas again: 8 ``lap`` replicas for 5 distinct shifts, 13
tasklets. Fusing into the last map first (the fluxes into the output, then ``lap`` into the
output) lets DaCe group the output's reads of ``lap`` by access, so each distinct shift is
replicated once: 10 tasklets, three applications instead of four, and less code to generate
and compile. The matches are the ones the translation built (a map's exit, the transient it
writes, a map reading it, all at the state's top level); each is still checked by DaCe's own
``can_be_applied`` before DaCe applies it.

DaCe solves the index equations of every match with SymPy (``OTFMapFusion.solve``, twice
per access: to check, then to apply), most of a cold translation. The translation's accesses
are shifted points, ``p + c`` written and ``q + d`` read, whose answer is ``p = q + d - c``:
while the recipe runs (under the translation's lock on DaCe), ``OTFMapFusion.solve`` answers
those in closed form and hands anything else to DaCe's own solver.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["fuse_on_the_fly", "shifted_point_solution"]


def fuse_on_the_fly(dace: Any, sdfg: Any) -> int:
    """Apply ``OTFMapFusion`` to every state of ``sdfg`` until no match of the top-level
    maps applies, consumers first; return how many fusions were applied."""
    from dace.transformation.dataflow import OTFMapFusion  # noqa: PLC0415  (optional package)

    applied = 0
    with _closed_form_solver(OTFMapFusion):
        for state in list(sdfg.states()):
            while _fuse_one(dace, sdfg, state, OTFMapFusion):
                applied += 1
    return applied


def _fuse_one(dace: Any, sdfg: Any, state: Any, otf: Any) -> bool:
    """Apply the first match DaCe accepts, a match into a map that feeds no other map
    first; False when none applies."""
    candidates = []
    for entry in state.nodes():
        if not isinstance(entry, dace.nodes.MapEntry) or state.entry_node(entry) is not None:
            continue
        feeds_a_map = any(
            isinstance(reader.dst, dace.nodes.MapEntry)
            for written in state.out_edges(state.exit_node(entry))
            for reader in state.out_edges(written.dst)
        )
        for edge in state.in_edges(entry):
            data = edge.src
            if not isinstance(data, dace.nodes.AccessNode) or not sdfg.arrays[data.data].transient:
                continue
            producers = [e.src for e in state.in_edges(data)]
            if len(producers) == 1 and isinstance(producers[0], dace.nodes.MapExit):
                candidates.append((feeds_a_map, producers[0], data, entry))
    # Stable: the translation's order among equals.
    candidates.sort(key=lambda candidate: candidate[0])
    tried = set()
    for _, producer, data, consumer in candidates:
        if (producer, data, consumer) in tried:
            continue
        tried.add((producer, data, consumer))
        fusion = otf()
        fusion.setup_match(
            sdfg,
            state.parent_graph.cfg_id,
            state.block_id,
            {
                otf.first_map_exit: state.node_id(producer),
                otf.array: state.node_id(data),
                otf.second_map_entry: state.node_id(consumer),
            },
            0,
        )
        if fusion.can_be_applied(state, 0, sdfg):
            fusion.apply(state, sdfg)
            return True
    return False


def shifted_point_solution(
    first_params: Any, write_accesses: Any, second_params: Any, read_accesses: Any
) -> dict[Any, Any] | None:
    """``OTFMapFusion.solve``'s answer where every dimension is a point written at ``p + c``
    (``p`` one of ``first_params``, each used once) and read at ``e`` (at most one of
    ``second_params`` in it): ``p = e - c``; None where an access has another form (the
    caller then asks SymPy)."""
    from dace import symbolic  # noqa: PLC0415  (optional package)

    first, second = set(map(str, first_params)), set(map(str, second_params))
    solution: dict[Any, Any] = {}
    for (begin0, end0, _), (begin1, end1, _) in zip(write_accesses, read_accesses, strict=True):
        if isinstance(end0, symbolic.SymExpr) or isinstance(end1, symbolic.SymExpr):
            return None
        written = symbolic.pystr_to_symbolic(begin0)
        read = symbolic.pystr_to_symbolic(begin1)
        if written != symbolic.pystr_to_symbolic(end0) or read != symbolic.pystr_to_symbolic(end1):
            return None  # a range, not a point
        params = [s for s in written.free_symbols if str(s) in first]
        if len(params) != 1 or len([s for s in read.free_symbols if str(s) in second]) > 1:
            return None
        (param,) = params
        offset = written - param
        if param in offset.free_symbols or param in solution:
            return None  # not p + c, or p in two dimensions
        solution[param] = read - offset
    return solution


@contextlib.contextmanager
def _closed_form_solver(otf: Any) -> Iterator[None]:
    """``otf.solve`` answers shifted points in closed form while the block runs (the
    translation holds ``DACE_CONFIG_LOCK``), then DaCe's own solver is back."""
    sympy_solve = otf.__dict__["solve"]

    def solve(
        first_params: Any, write_accesses: Any, second_params: Any, read_accesses: Any
    ) -> Any:
        answer = shifted_point_solution(first_params, write_accesses, second_params, read_accesses)
        if answer is None:
            return sympy_solve.__func__(first_params, write_accesses, second_params, read_accesses)
        return answer

    otf.solve = staticmethod(solve)
    try:
        yield
    finally:
        otf.solve = sympy_solve
