#!/usr/bin/env bash
# The wheels gpu_check.sh installs on a lent GPU machine that reaches no package registry:
# what the test and dace extras need beyond that machine's image (Python 3.12, with NumPy,
# attrs, filelock, tqdm, pytest, pytest-xdist, hypothesis, CuPy, networkx, sympy, PyYAML,
# CMake and ninja already there). Run here, where PyPI is reachable:
#
#   bash benchmarks/gpu_wheels.sh .whl     # then carry .whl (about 9 MB) with the run
#
# DaCe 2.0.0b1 publishes no wheel, so it is built from its sdist (pure Python).
set -euo pipefail
DEST="${1:?usage: gpu_wheels.sh DIRECTORY}"
PYTHON_VERSION="${PYTHON_VERSION:-3.12}"
mkdir -p "$DEST"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYTHON_VERSION" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$DEST" \
    cachetools diskcache platformdirs array-api-strict \
    astunparse ply fparser dill ordered-set scikit-build distro
python3 -m pip wheel -q --no-deps -w "$DEST" "dace==2.0.0b1"
ls "$DEST"
