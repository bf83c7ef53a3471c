"""Cold build vs warm sccache rebuild of examples/cuvecops for 3 arches, and the packaging floor.

Run: python benchmarks/bench_build.py

Each run goes through `cuship build` (pip wheel with scikit-build-core → auditwheel repair → retag
→ verify). Cold: an empty sccache directory; warm: the same build again. The floor is the same
pipeline on a copy whose CUDA source compiles nothing (an empty translation unit), so what is left
is configure, link, packaging, repair and verification: the time no compiler cache can remove.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
CONFIG = """\
[matrix]
python = ["{py}"]
cuda = ["{cuda}"]
arch = "8.0;9.0;12.0+PTX"
[build]
cache = "sccache"
isolation = false
"""


def host_cuda() -> str:
    sys.path.insert(0, str(REPO / "src"))
    from cuship.machine import fingerprint

    fp = fingerprint()
    assert fp.toolkit is not None and fp.toolkit.version, "needs nvcc"
    return ".".join(fp.toolkit.version.split(".")[:2])


def project(root: Path, *, empty_kernels: bool) -> Path:
    dest = root / ("floor" if empty_kernels else "cuvecops")
    shutil.copytree(
        EXAMPLE, dest, ignore=shutil.ignore_patterns("build", "dist", "__pycache__", "tests")
    )
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    (dest / "cuship.toml").write_text(CONFIG.format(py=py, cuda=host_cuda()))
    if empty_kernels:
        (dest / "csrc" / "ops.cu").write_text('#include "ops.h"\n')
        (dest / "csrc" / "module.cpp").write_text(
            '#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_cuda", 0, -1, 0};\n'
            "PyMODINIT_FUNC PyInit__cuda(void) { return PyModule_Create(&m); }\n"
        )
    return dest


def timed_build(path: Path, out: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "build", str(path), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"build failed:\n{done.stderr[-3000:]}")
    return elapsed


def main() -> None:
    sccache = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {**os.environ, "SCCACHE_DIR": str(root / "cache"), "PYTHONPATH": str(REPO / "src")}
        subprocess.run([sccache, "--stop-server"], capture_output=True, check=False)
        subprocess.run([sccache, "--start-server"], env=env, capture_output=True, check=False)
        real = project(root, empty_kernels=False)
        floor_src = project(root, empty_kernels=True)
        cold = timed_build(real, root / "out-cold", env)
        warm = timed_build(real, root / "out-warm", env)
        floor = timed_build(floor_src, root / "out-floor", env)
        subprocess.run([sccache, "--stop-server"], capture_output=True, check=False)
    print(f"{'build (3 arches: sm_80, sm_90, sm_120+PTX)':<48} {'seconds':>8}")
    print(f"{'cold (empty sccache)':<48} {cold:8.1f}")
    print(f"{'warm (sccache hits)':<48} {warm:8.1f}")
    print(f"{'floor (same pipeline, nothing to compile)':<48} {floor:8.1f}")
    print(
        f"cold / warm = {cold / warm:.2f}x   (warm - floor) = {warm - floor:.1f} s   cold / floor = {cold / floor:.2f}x"
    )


if __name__ == "__main__":
    main()
