#!/usr/bin/env bash
# Wheel variants on a real GPU, with uv's own detection (no forced machine): uv 0.13.8 with and
# without --preview-features wheel-variants and pip install cuvecops from an index of its variant
# wheels (G/site, G/uv: see the issue note), each into a venv over the machine's packages; then
# which build each got, whether its kernels run (the example's smoke kernels), what doctor says
# of it there, and what `cuship resolve` picks with the same real detection.
# Usage: OUT=dir G=.cache-gpu benchmarks/gpu_variants_run.sh
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
G=${G:-.cache-gpu}
PY=${PYTHON:-python3}
INDEX="file://$PWD/$G/site/simple"
SRC="$PWD/src"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
for mode in uv-variants uv pip; do
    venv="/tmp/venv-$mode"
    rm -rf "$venv" && $PY -m venv --system-site-packages "$venv"
    # the venv sees every site directory of the machine's Python, its user site too
    $PY -c 'import site, sys; print("\n".join(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))))' \
        > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_machine.pth"
    case $mode in
        uv-variants) "$G/uv" pip install -v --no-config --no-deps --python "$venv/bin/python" \
            --index-url "$INDEX" --preview-features wheel-variants cuvecops ;;
        uv) "$G/uv" pip install --no-config --no-deps --python "$venv/bin/python" \
            --index-url "$INDEX" cuvecops ;;
        pip) "$venv/bin/python" -m pip install --no-deps --index-url "$INDEX" cuvecops ;;
    esac > "$OUT/install-$mode.log" 2>&1
    label=$("$venv/bin/python" - <<'PYEOF'
import json, pathlib, sys
found = [p for p in map(pathlib.Path, sys.path) if p.is_dir() for p in p.glob("cuvecops-*.dist-info")]
variant = found[0] / "variant.json" if found else None
print(next(iter(json.loads(variant.read_text())["variants"])) if variant and variant.exists() else "plain")
PYEOF
)
    echo "$mode: installed $label" >> "$OUT/summary.txt"
    (cd /tmp && CUVECOPS_BACKEND=cuda "$venv/bin/python" "$OLDPWD/benchmarks/gpu_kernels_smoke.py") \
        >> "$OUT/summary.txt" 2>&1
    (cd /tmp && PYTHONPATH="$SRC" "$venv/bin/python" -m cuship doctor cuvecops) > "$OUT/doctor-$mode.txt" 2>&1
    echo "$mode: doctor exit $?" >> "$OUT/summary.txt"
done
grep -iE "nvidia|variant|cuda|sm_arch" "$OUT/install-uv-variants.log" | head -40 > "$OUT/uv-detection.txt"
PYTHONPATH="$SRC" $PY -m cuship resolve cuvecops --index "$INDEX" --json > "$OUT/resolve.json" 2> "$OUT/resolve.err"
echo "resolve exit $?" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
