#!/usr/bin/env bash
# The device check of issue 18, for a lent GPU machine: run from the repository root.
#
#   OUT=/some/dir bash benchmarks/gpu_check.sh
#
# Python: where the machine's python3 (or $PY) already has CuPy, as the lent H200's image does,
# that interpreter, with the wheels under $WHEELS (default .whl) installed beside it into a
# target folder: that machine reaches no package registry, so what its image lacks travels as
# wheels, which `bash benchmarks/gpu_wheels.sh .whl` downloads beforehand on a machine that
# reaches PyPI. Elsewhere, a fresh venv with the test and dace extras and the CuPy wheel from
# the registry. Then nvcc: a system one of a CUDA release the driver runs, else (online only)
# the nvcc wheel of the driver's release. Then the requires_gpu tests (the DSL corpus on
# embedded_cupy, cuda_gpu and dace_gpu against NumPy; cuda_gpu's and dace_gpu's own GPU tests)
# and the harness's GPU rows (python -m benchmarks.gpu). Everything it finds lands under $OUT:
# nvidia-smi, the install log, the test log and JUnit XML, gpu-results.json and summary.txt
# (which holds the backends found and the rows' table): six files, so that a lent machine's
# tool, which returns eight at most, has room for more.
# Each stage has its own time limit (install 120 s, nvcc 60 s, tests 180 s, rows 200 s) so that
# the whole stays under 10 minutes; a stage that runs out says so in summary.txt and the next
# one still runs. The rows compile about 40 programs (dace_gpu's take the longest): where the
# rows stage runs out, rerun it alone with the cache the first run filled.
set -uo pipefail

OUT="${OUT:-$PWD/gpu-check}"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "[$(date +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$SUMMARY"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || note "nvidia-smi failed (no driver?)"
DRIVER_CUDA="$(grep -o 'CUDA Version: [0-9]*' "$OUT/nvidia-smi.txt" | grep -o '[0-9]*$' || true)"
DRIVER_CUDA="${DRIVER_CUDA:-12}"
note "driver supports CUDA $DRIVER_CUDA; $(nproc) cores"

PY="${PY:-python3}"
WHEELS="${WHEELS:-.whl}"
ONLINE=1
if "$PY" -c "import cupy" > /dev/null 2>&1; then
    ONLINE=0
    SITE="${SITE:-/tmp/stencilforge-gpu-site}"
    note "$PY has CuPy: using it, with the wheels in $WHEELS installed into $SITE (offline)"
    if compgen -G "$WHEELS/*.whl" > /dev/null; then
        timeout 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --upgrade --target "$SITE" "$WHEELS"/*.whl > "$OUT/install.log" 2>&1 \
            || note "installing the wheels failed or timed out: see install.log"
    else
        note "no wheels in $WHEELS: only what $PY has (run benchmarks/gpu_wheels.sh first)"
    fi
    export PYTHONPATH="$SITE:$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
else
    VENV="${VENV:-/tmp/stencilforge-gpu-venv}"
    python3 -m venv "$VENV"
    PY="$VENV/bin/python"
    if [ "$DRIVER_CUDA" -ge 13 ]; then CUPY="cupy-cuda13x[ctk]"; else CUPY="cupy-cuda12x[ctk]"; fi
    note "installing .[test,dace] and $CUPY"
    timeout 120 "$PY" -m pip install -q -e '.[test,dace]' "$CUPY" > "$OUT/install.log" 2>&1 \
        || note "install failed or timed out: see install.log"
fi
if [ "$DRIVER_CUDA" -ge 13 ]; then NVCC_WHEEL="nvidia-cuda-nvcc"
else NVCC_WHEEL="nvidia-cuda-nvcc-cu12 nvidia-cuda-runtime-cu12"; fi
"$PY" - >> "$OUT/install.log" 2>&1 <<'PYEOF' || note "a package the check needs is missing: see install.log"
import importlib, sys
missing = []
for name in ("numpy", "attrs", "cachetools", "diskcache", "platformdirs", "filelock", "tqdm",
             "pytest", "xdist", "hypothesis", "cupy", "dace"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"))
    except Exception as error:  # noqa: BLE001
        print(name, "MISSING:", type(error).__name__, error)
        missing.append(name)
sys.exit(1 if missing else 0)
PYEOF

# nvcc: a system one of a release the driver runs, else the wheel of the driver's release.
NVCC_FOUND="$(command -v nvcc || true)"
[ -z "$NVCC_FOUND" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC_FOUND=/usr/local/cuda/bin/nvcc
NVCC_RELEASE="$([ -n "$NVCC_FOUND" ] && "$NVCC_FOUND" --version | grep -o 'release [0-9]*' | grep -o '[0-9]*$' || true)"
if [ "$ONLINE" = 1 ] && { [ -z "$NVCC_FOUND" ] || [ "${NVCC_RELEASE:-99}" -gt "$DRIVER_CUDA" ]; }; then
    note "nvcc ${NVCC_FOUND:-absent} (release ${NVCC_RELEASE:-none}) does not suit the driver: installing $NVCC_WHEEL"
    # shellcheck disable=SC2086  (two package names for CUDA 12)
    timeout 60 "$PY" -m pip install -q $NVCC_WHEEL >> "$OUT/install.log" 2>&1 || note "nvcc wheel install failed"
    NVCC_FOUND="$(find "$VENV" -path '*/bin/nvcc' -type f | head -1)"
    INCLUDE="$(find "$VENV" -name cuda_runtime.h -path '*include*' | head -1)"
    if [ -n "$INCLUDE" ]; then export NVCC_PREPEND_FLAGS="-I$(dirname "$INCLUDE")"; fi
fi
if [ -n "$NVCC_FOUND" ]; then export NVCC="$NVCC_FOUND"; note "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
else note "no nvcc: cuda_gpu will be unavailable and its tests fail"; fi

"$PY" - >> "$SUMMARY" 2>&1 <<'PYEOF'
import backends
for name in ("embedded_cupy", "cuda_gpu", "dace_gpu"):
    try:
        backend = getattr(backends, name)
        print(name, "available:", str(backend)[:160])
    except AttributeError as error:
        print(name, "unavailable:", error)
PYEOF

export STENCILFORGE_CACHE_DIR="${TMPDIR:-/tmp}/stencilforge-gpu-cache"
note "GPU tests: the DSL corpus on the GPU backends, cuda_gpu's and dace_gpu's own"
timeout 180 "$PY" -m pytest -q -p no:cacheprovider -n 12 --tb=short -m "not slow" \
    -k "cuda_gpu or embedded_cupy or dace_gpu or requires_gpu" \
    --junitxml="$OUT/gpu-tests.xml" \
    tests/dsl/test_corpus.py tests/backends/test_cuda.py tests/backends/test_dace.py \
    > "$OUT/gpu-tests.log" 2>&1
note "GPU tests exit $? (the last line: $(tail -1 "$OUT/gpu-tests.log"))"

note "harness GPU rows (512x512x80 and 16x16x8 float64; four workloads, the solvers in two layouts)"
timeout 200 "$PY" -m benchmarks.gpu --output "$OUT" --repeat 10 >> "$SUMMARY" 2>&1
note "GPU rows exit $?"
note "done"
