#!/usr/bin/env bash
# The device check of issue 18, for a lent GPU machine: run from the repository root.
#
#   OUT=/some/dir bash src/benchmarks/gpu_check.sh
#
# Installs what it needs in a fresh venv (the test and dace extras, the CuPy wheel and, where
# the machine has no nvcc of a CUDA release its driver runs, the nvcc wheel of the driver's
# release), then runs the requires_gpu tests (the DSL corpus on embedded_cupy, cuda_gpu and
# dace_gpu against NumPy; cuda_gpu's and dace_gpu's own GPU tests) and the harness's GPU rows
# (python -m benchmarks.gpu). Everything it finds lands under $OUT: nvidia-smi, the install
# log, the test log and JUnit XML, gpu-results.json and summary.txt. Each stage has its own
# time limit (install 180 s, nvcc 60 s, tests 150 s, rows 75 s) so that the whole stays
# under 8 minutes; a stage that runs out says so in
# summary.txt and the next one still runs.
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

VENV="${VENV:-/tmp/stencilforge-gpu-venv}"
python3 -m venv "$VENV"
PY="$VENV/bin/python"
if [ "$DRIVER_CUDA" -ge 13 ]; then CUPY="cupy-cuda13x[ctk]"; NVCC_WHEEL="nvidia-cuda-nvcc"
else CUPY="cupy-cuda12x[ctk]"; NVCC_WHEEL="nvidia-cuda-nvcc-cu12 nvidia-cuda-runtime-cu12"; fi
note "installing .[test,dace] and $CUPY"
timeout 180 "$PY" -m pip install -q -e '.[test,dace]' "$CUPY" > "$OUT/install.log" 2>&1 \
    || note "install failed or timed out: see install.log"

# nvcc: a system one of a release the driver runs, else the wheel of the driver's release.
NVCC_FOUND="$(command -v nvcc || true)"
[ -z "$NVCC_FOUND" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC_FOUND=/usr/local/cuda/bin/nvcc
NVCC_RELEASE="$([ -n "$NVCC_FOUND" ] && "$NVCC_FOUND" --version | grep -o 'release [0-9]*' | grep -o '[0-9]*$' || true)"
if [ -z "$NVCC_FOUND" ] || [ "${NVCC_RELEASE:-99}" -gt "$DRIVER_CUDA" ]; then
    note "nvcc ${NVCC_FOUND:-absent} (release ${NVCC_RELEASE:-none}) does not suit the driver: installing $NVCC_WHEEL"
    # shellcheck disable=SC2086  (two package names for CUDA 12)
    timeout 60 "$PY" -m pip install -q $NVCC_WHEEL >> "$OUT/install.log" 2>&1 || note "nvcc wheel install failed"
    NVCC_FOUND="$(find "$VENV" -path '*/bin/nvcc' -type f | head -1)"
    INCLUDE="$(find "$VENV" -name cuda_runtime.h -path '*include*' | head -1)"
    if [ -n "$INCLUDE" ]; then export NVCC_PREPEND_FLAGS="-I$(dirname "$INCLUDE")"; fi
fi
if [ -n "$NVCC_FOUND" ]; then export NVCC="$NVCC_FOUND"; note "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
else note "no nvcc: cuda_gpu will be unavailable and its tests fail"; fi

"$PY" - > "$OUT/backends.txt" 2>&1 <<'PYEOF'
import backends
for name in ("embedded_cupy", "cuda_gpu", "dace_gpu"):
    try:
        backend = getattr(backends, name)
        print(name, "available:", backend)
    except AttributeError as error:
        print(name, "unavailable:", error)
PYEOF
note "backends: $(tr '\n' ';' < "$OUT/backends.txt" | cut -c1-400)"

export STENCILFORGE_CACHE_DIR="$OUT/cache"
note "GPU tests: the DSL corpus on the GPU backends, cuda_gpu's and dace_gpu's own"
timeout 150 "$PY" -m pytest -q -p no:cacheprovider -n 8 -m "not slow" \
    -k "cuda_gpu or embedded_cupy or dace_gpu or requires_gpu" \
    --junitxml="$OUT/gpu-tests.xml" \
    tests/dsl/test_corpus.py tests/backends/test_cuda.py tests/backends/test_dace.py \
    > "$OUT/gpu-tests.log" 2>&1
note "GPU tests exit $? (the last line: $(tail -1 "$OUT/gpu-tests.log"))"

note "harness GPU rows (512x512x80 and 16x16x8 float64)"
timeout 75 "$PY" -m benchmarks.gpu --output "$OUT" --repeat 10 > "$OUT/gpu-rows.txt" 2>&1
note "GPU rows exit $?"
cat "$OUT/gpu-rows.txt" >> "$SUMMARY"
note "done"
