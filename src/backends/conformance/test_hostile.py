"""A fixed sample of hostile arguments: refused or computed right, as ``embedded_numpy`` does.

Shipped with stencilforge: ``stencilforge conformance BACKEND`` runs this module and its
siblings (see ``backends.conformance.plugin``). The sample is NumPy arrays on the CPU, so a
backend whose programs take other arrays skips it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from backends.base import Backend
from backends.conformance.hostile import check_hostile_arguments

#: Fixed seeds: every run of the suite draws the same cases.
SEEDS = (16, 17)


@pytest.mark.stencilforge_feature("hostile arguments")
@pytest.mark.parametrize("seed", SEEDS)
def test_hostile_arguments_are_refused_or_computed_right_like_embedded_numpy(
    seed: int, conformance_backend: Backend, conformance_reference: str
) -> None:
    takes_numpy = (conformance_backend.array_type is np.ndarray
                   or conformance_backend.array_namespace is np)
    if not takes_numpy:
        pytest.skip(f"{conformance_backend.name} does not take NumPy arrays on the CPU")
    check_hostile_arguments(conformance_reference, random.Random(seed))
