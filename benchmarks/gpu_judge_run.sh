#!/usr/bin/env bash
# The judge's GPU check in one run, for a GPU machine without network (see judge_truth.py):
# what this machine is, `cuship doctor` over its environment, doctor against loading and kernel
# launches for its packages and for the wheels in WHEELS (each in a venv of its own), and
# `cuship resolve` with the real GPU detection against an index of those wheels.
# Usage: OUT=dir WHEELS=dir benchmarks/gpu_judge_run.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
WHEELS=${WHEELS:-.cache-real/cp312}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src"
{
    nvidia-smi || true
    $PY --version
    $PY -m pip list 2>/dev/null | grep -iE "torch|triton|numba|cuda|nvidia|cupy|numpy" || true
} > "$OUT/env.txt" 2>&1
$PY -m cuship env --json > "$OUT/cuship-env.json" 2> "$OUT/cuship-env.err"
$PY -m cuship doctor > "$OUT/doctor-all.txt" 2>&1
echo "doctor exit $?" >> "$OUT/env.txt"
$PY -m cuship doctor --json > "$OUT/doctor-all.json" 2> "$OUT/doctor-all.err"
timeout "${TRUTH_TIMEOUT:-400}" $PY benchmarks/judge_truth.py --wheels "$WHEELS" \
    --packages "${PACKAGES:-torch,triton,numba-cuda,cuda-bindings,cupy-cuda12x,cupy-cuda13x}" \
    -o "$OUT/truth" > "$OUT/truth.log" 2>&1
echo "truth exit $?" >> "$OUT/env.txt"
rm -rf "$OUT/truth/venvs"
site=$(mktemp -d)
$PY -m cuship index "$WHEELS"/*.whl -o "$site/site" > "$OUT/index.log" 2>&1
for p in torchvision xformers torchao bitsandbytes; do
    $PY -m cuship resolve "$p" --index "file://$site/site/simple" --json \
        > "$OUT/resolve-$p.json" 2>> "$OUT/resolve.err"
    echo "resolve $p exit $?" >> "$OUT/env.txt"
done
cat "$OUT/truth/judge-truth.txt" 2>/dev/null
tail -5 "$OUT/env.txt"
