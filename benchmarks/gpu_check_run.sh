#!/usr/bin/env bash
# The GPU job and the kernel checks on a GPU machine without network, in one run with a deadline:
#   1. (background) the test suite's GPU-only tests: force-PTX on the planted divergence and on
#      the example's PTX, each compute-sanitizer tool catching its planted bug;
#   2. where the tool finder finds ncu, compute-sanitizer, cuobjdump and nvcc on a real toolkit;
#   3. `cuship gpu-run examples/cuvecops` on the wheels in W (the generated CI's GPU job: wheel
#      choice, install into a venv layered on the machine's packages, pytest --require-gpu,
#      check --device cuda in forked workers, check-ptx, sanitize, bench --assert-floors);
#   4. a timed-out GPU job's process group killed by cuship's runner, vs subprocess.run;
#   5. the Triton kernels written in real libraries' idioms (tests/fixtures/idioms) compiled by
#      real Triton on the GPU, quick and thorough;
#   6. wheel variants chosen by uv's real GPU detection (gpu_variants_run.sh over the index in
#      G); then 5's planted bugs through real Triton, as time allows;
#   7. where numba-cuda cannot run with the image's NumPy (numba 0.6x on NumPy 2.5), the
#      sanitizer test's planted Numba kernels again in a venv over the machine's packages with
#      the NumPy wheel in NP (e.g. numpy 2.3) first.
# STEPS (comma-separated, default all): tests, gpurun, groupkill, idioms, variants, planted,
# numba-sanitize.
# Tools the image lacks (auditwheel, pyelftools, patchelf) come from $T.
# Usage: OUT=dir W=.cache-gpu/w T=.cache-gpu/tools G=.cache-gpu NP=.cache-gpu/np SECONDS_TOTAL=540 \
#        [STEPS=gpurun,planted] benchmarks/gpu_check_run.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
W=${W:-.cache-gpu/w}
T=${T:-.cache-gpu/tools}
G=${G:-.cache-gpu}
NP=${NP:-.cache-gpu/np}
STEPS=${STEPS:-tests,gpurun,groupkill,idioms,variants,planted,numba-sanitize}
PY=${PYTHON:-python3}
TOTAL=${SECONDS_TOTAL:-540}
ROOT=$PWD
START=$(date +%s)
L=/tmp/gpu-check-logs  # detail logs, packed into $OUT/logs.tgz at the end with /tmp/gr
mkdir -p "$OUT" "$L"
left() { echo $(( TOTAL - ($(date +%s) - START) )); }
cap() { local l; l=$(left); [ "$1" -lt "$l" ] && echo "$1" || echo $(( l > 5 ? l - 5 : 1 )); }
want() { [[ ",$STEPS," == *",$1,"* ]]; }
say() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$OUT/summary.txt"; }

{
    nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv
    $PY --version
    $PY -c 'import torch, triton; print("torch", torch.__version__, torch.version.cuda, "triton", triton.__version__)'
    nproc
} > "$OUT/summary.txt" 2>&1
$PY -m pip install -q --no-index --no-deps --target /tmp/tools "$T"/*.whl > "$L/setup.log" 2>&1
$PY -m pip install -q --no-index --no-deps --no-build-isolation -e . >> "$L/setup.log" 2>&1
say "setup exit $? (cuship installed editable from this checkout)"
export PATH="/tmp/tools/bin:$PATH" PYTHONPATH="$ROOT/src:/tmp/tools" PYTHONUNBUFFERED=1

# 1. the GPU-only tests, in the background (mostly nvcc on the CPUs)
TESTS=
want tests && ( timeout "$(cap 360)" $PY -m pytest -p no:cacheprovider -n 3 -q -rA \
    "tests/integration/test_check_sanitize.py::test_each_planted_bug_is_caught_by_its_tool_on_a_gpu" \
    "tests/integration/test_force_ptx.py::test_on_a_9_0_gpu_the_planted_divergence_is_caught_only_from_ptx" \
    "tests/integration/test_force_ptx.py::test_on_a_gpu_the_example_quick_check_passes_from_its_ptx" \
    > "$L/gpu-tests.log" 2>&1; echo "exit $?" >> "$L/gpu-tests.log" ) &
want tests && TESTS=$!

# 2. the tool finder on a real toolkit
$PY - >> "$OUT/summary.txt" 2>&1 <<'PYEOF'
import os
from cuship.tools import find_tool
for name in ("nvcc", "ncu", "compute-sanitizer", "cuobjdump"):
    try:
        print("tool", name, "->", find_tool(name, os.environ))
    except Exception as err:
        print("tool", name, "-> not found:", err)
PYEOF
$PY -m cuship env > "$L/env.txt" 2>&1

# 3. the GPU job
if want gpurun; then
    say "gpu-run starts"
    timeout "$(cap 240)" $PY -m cuship gpu-run examples/cuvecops --wheels "$W" -o /tmp/gr \
        --venv /tmp/gr-venv > "$L/gpu-run.txt" 2>&1
    say "gpu-run exit $?"
    tail -14 "$L/gpu-run.txt" >> "$OUT/summary.txt"
fi

# 4. a timed-out GPU job
if want groupkill; then
    timeout "$(cap 90)" $PY benchmarks/gpu_group_kill.py >> "$OUT/summary.txt" 2>&1
    say "group kill exit $?"
fi

# 5. real Triton on the GPU
want idioms && for mode in --quick ""; do
    s=$(date +%s)
    timeout "$(cap 150)" $PY -m cuship check tests/fixtures/idioms --device cuda $mode --no-store \
        > "$L/idioms${mode}.txt" 2>&1
    say "idioms check${mode:- thorough} on cuda: exit $? in $(( $(date +%s) - s )) s"
    tail -4 "$L/idioms${mode}.txt" >> "$OUT/summary.txt"
done
# 6. wheel variants with uv's own GPU detection (benchmarks/gpu_variants_run.sh, index in $G)
if want variants; then
    OUT="$L/variants" G="$G" timeout "$(cap 90)" bash benchmarks/gpu_variants_run.sh > /dev/null 2>&1
    say "variants exit $?"
    cat "$L/variants/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
fi
if want planted; then
    timeout "$(cap 200)" $PY benchmarks/bench_planted_bugs.py --device cuda --no-pytest \
        --only rms-missing-load-mask --only swiglu-tail-block-skipped \
        --only layernorm-missing-fp32-upcast --only rope-missing-store-mask \
        > "$L/planted.txt" 2>&1
    say "planted bugs on cuda exit $?"
fi

# 7. the sanitizer's planted Numba kernels with a NumPy numba-cuda runs on
if want numba-sanitize && ls "$NP"/numpy-*.whl > /dev/null 2>&1; then
    rm -rf /tmp/nv && $PY -m venv /tmp/nv
    $PY -c 'import sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
        > "$(/tmp/nv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_machine.pth"
    /tmp/nv/bin/python -m pip install -q --no-index --no-deps "$NP"/numpy-*.whl > "$L/numba-sanitize.log" 2>&1
    # the raw report of one planted Numba kernel, as this numba-cuda names it (a parser fixture)
    /tmp/nv/bin/python -c 'from importlib.metadata import version as v
print(*(f"{n} {v(n)}" for n in ("numba", "numba-cuda", "numpy")))' >> "$OUT/summary.txt" 2>&1
    timeout "$(cap 60)" compute-sanitizer --tool memcheck --print-limit 20 \
        --log-file "$OUT/sanitizer-numba-memcheck-oob.txt" \
        /tmp/nv/bin/python tests/fixtures/h100/planted_numba.py oob >> "$L/numba-sanitize.log" 2>&1
    say "memcheck of the planted Numba oob kernel: exit $?"
    timeout "$(cap 300)" /tmp/nv/bin/python -m pytest -p no:cacheprovider -q -rA \
        "tests/integration/test_check_sanitize.py::test_each_planted_bug_is_caught_by_its_tool_on_a_gpu" \
        >> "$L/numba-sanitize.log" 2>&1
    rc=$?
    say "sanitizer test with $(basename "$NP"/numpy-*.whl): exit $rc — $(tail -1 "$L/numba-sanitize.log")"
fi

[ -n "$TESTS" ] && wait "$TESTS" && say "gpu tests: $(tail -3 "$L/gpu-tests.log" | tr '\n' ' ')"
cp "$L/gpu-run.txt" "$L/gpu-tests.log" "$L/planted.txt" "$L/numba-sanitize.log" "$OUT/" 2>/dev/null
tar czf "$OUT/logs.tgz" -C /tmp gr gpu-check-logs 2>/dev/null
cat "$OUT/summary.txt"
