"""One ``domain=`` per output of a tuple result (issue 41): ``domain=(dom_x, (dom_y, dom_z))``
nested like ``out=``. A call whose outputs have different domains runs as one stencil per
domain; each domain's reach is checked on its own. The corpus module ``output_domains`` runs
such programs against NumPy. No ``from __future__ import annotations``.
"""

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLSyntaxError,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    program,
)

I, J = Dimension("I"), Dimension("J")  # noqa: E741
F = Field[[I, J], float64]
SHAPE = (6, 5)


@field_operator
def shifted_and_doubled(a: F) -> tuple[F, F]:
    return a(I + 1), a * 2.0


@field_operator
def three(a: F) -> tuple[F, tuple[F, F]]:
    return a, (a * 2.0, a * 3.0)


def _frontend_error(program_, error, match):
    with pytest.raises(error, match=match) as caught:
        program_.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


@program
def reach_program(a: F, x: F, y: F):
    shifted_and_doubled(a, out=(x, y), domain=({I: (0, 5)}, {I: (0, 6)}))


def test_each_domain_is_checked_for_its_own_reach(dsl_backend, to_backend_array, to_numpy,
                                                  run_program, bind_program):
    a = np.random.default_rng(2).uniform(-1, 1, SHAPE)
    x, y = np.zeros(SHAPE), np.zeros(SHAPE)
    # y's domain reaches the last row, which only x's shifted read could not cover.
    written = run_program(reach_program, dsl_backend, to_backend_array(a, dsl_backend),
                          x=to_backend_array(x, dsl_backend),
                          y=to_backend_array(y, dsl_backend), written=("x", "y"))
    np.testing.assert_array_equal(to_numpy(written["x"])[:5], a[1:])
    np.testing.assert_array_equal(to_numpy(written["y"]), a * 2.0)

    @program
    def too_far(a: F, x: F, y: F):
        shifted_and_doubled(a, out=(x, y), domain=({I: (0, 6)}, {I: (0, 5)}))

    with pytest.raises(DomainError, match=r"field 'a' is too small along I"):
        bind_program(too_far, dsl_backend)(*(to_backend_array(v, dsl_backend) for v in (a, x, y)))


def test_the_program_runs_one_stencil_per_domain():
    @program
    def two_domains(a: F, x: F, y: F, z: F):
        three(a, out=(x, (y, z)), domain=({I: (0, 3)}, ({J: (1, 4)}, {I: (0, 3)})))

    stencils = two_domains.frontend().ir.stencils
    assert [[t.name for t in s.outputs] for s in stencils] == [["x", "z"], ["y"]]


def test_a_domain_tuple_nested_unlike_out_names_both_nestings():
    @program
    def flat_domains(a: F, x: F, y: F, z: F):
        three(a, out=(x, (y, z)), domain=({I: (0, 3)}, {I: (0, 3)}, {I: (0, 3)}))

    message = _frontend_error(flat_domains, DSLTypeError,
                              r"domain= gives one domain per output, nested like out=, which "
                              r"is \(value, \(value, value\)\); this domain= is nested as "
                              r"\(value, value, value\)")
    assert "three(a, out=(x, (y, z)), domain=" in message


def test_a_domain_tuple_for_a_single_output_is_refused():
    @field_operator
    def single(a: F) -> F:
        return a

    @program
    def one_output(a: F, x: F):
        single(a, out=x, domain=({I: (0, 3)},))

    _frontend_error(one_output, DSLTypeError, r"nested like out=, which is value; this domain= "
                                              r"is nested as \(value\)")


def test_an_item_of_a_domain_tuple_that_is_no_dict_is_refused_at_its_place():
    @program
    def not_a_dict(a: F, x: F, y: F):
        shifted_and_doubled(a, out=(x, y), domain=({I: (0, 3)}, I))

    _frontend_error(not_a_dict, DSLSyntaxError, r"domain= is a dict like \{I: \(0, n\)")


def test_a_domain_that_reads_what_another_domain_writes_is_refused():
    @program
    def overwrites_its_input(a: F, y: F):
        shifted_and_doubled(a, out=(a, y), domain=({I: (0, 3)}, {I: (0, 5)}))

    _frontend_error(overwrites_its_input, DSLTypeError,
                    r"writes fields over different dimensions or domains and also reads 'a'")
