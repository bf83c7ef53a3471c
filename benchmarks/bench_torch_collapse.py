"""The torch axis collapse: jobs and build wall time for examples/cuvecops given a 3-torch axis,
``[matrix] torch_axis = "always"`` vs ``"auto"`` (goal: jobs ÷ 3, time ÷ ≥ 2.5).

Run: python benchmarks/bench_torch_collapse.py

cuvecops links no torch (torch_abi none), so a torch axis only multiplies identical binaries.
Each run is a fresh copy of the example (no ``.cuship/torch-abi.json``) built by `cuship build`
for this host's Python and CUDA, three arches, no compiler cache: "always" builds one wheel per
torch; "auto" builds the first, sees it links no torch, relabels it ``+cuXYZ`` and collapses the
other two onto it. "next run" is what `cuship matrix` plans afterwards, from the record.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
TORCHES = ["2.9", "2.10", "2.11"]  # each publishes CUDA 13.0 wheels for Python 3.10 to 3.14
CONFIG = """\
[matrix]
python = ["{py}"]
cuda = ["{cuda}"]
torch = {torches}
arch = "8.0;9.0;12.0+PTX"
torch_axis = "{axis}"
[build]
isolation = false
"""


def host_cuda() -> str:
    sys.path.insert(0, str(REPO / "src"))
    from cuship.machine import fingerprint

    fp = fingerprint()
    assert fp.toolkit is not None and fp.toolkit.version, "needs nvcc"
    return ".".join(fp.toolkit.version.split(".")[:2])


def project(root: Path, axis: str, cuda: str) -> Path:
    dest = root / axis / "cuvecops"
    shutil.copytree(
        EXAMPLE, dest, ignore=shutil.ignore_patterns("build", "dist", "__pycache__", "tests")
    )
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    (dest / "cuship.toml").write_text(
        CONFIG.format(py=py, cuda=cuda, torches=json.dumps(TORCHES), axis=axis)
    )
    return dest


def cuship(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cuship", *args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"cuship {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def planned(path: Path, env: dict[str, str]) -> int:
    return len(json.loads(cuship(["matrix", str(path), "--format", "json"], env))["jobs"])


def run(root: Path, axis: str, cuda: str, env: dict[str, str]) -> dict[str, float]:
    path = project(root, axis, cuda)
    jobs = planned(path, env)
    start = time.perf_counter()
    outcomes = json.loads(
        cuship(["build", str(path), "-o", str(root / axis / "out"), "--json"], env)
    )
    seconds = time.perf_counter() - start
    built = [o for o in outcomes if o["status"] == "built"]
    return {
        "jobs": jobs,
        "built": len(built),
        "collapsed": sum(o["status"] == "collapsed" for o in outcomes),
        "seconds": seconds,
        "next": planned(path, env),
        "labels": sorted(Path(o["wheel"]).name.split("-")[1] for o in built),  # type: ignore[dict-item]
        "per_job": [round(o["seconds"], 1) for o in built],  # type: ignore[dict-item]
    }


def main() -> None:
    cuda = host_cuda()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        run(Path(tmp) / "warmup", "auto", cuda, env)  # first-build costs (page cache, pip) once
        always = run(Path(tmp), "always", cuda, env)
        auto = run(Path(tmp), "auto", cuda, env)
    print(f"cuvecops, torch axis {', '.join(TORCHES)}, CUDA {cuda}, 3 arches, no compiler cache")
    header = f"{'torch_axis':<12} {'jobs':>5} {'built':>6} {'collapsed':>10} {'seconds':>8} {'next run':>9}  versions"
    print(header)
    for name, r in (("always", always), ("auto", auto)):
        print(
            f"{name:<12} {r['jobs']:>5} {r['built']:>6} {r['collapsed']:>10} "
            f"{r['seconds']:>8.1f} {r['next']:>9}  {', '.join(r['labels'])}"  # type: ignore[arg-type]
            f"  (per wheel: {r['per_job']} s)"
        )
    print(
        f"wheels built ÷ {always['built'] / auto['built']:.2f}   "
        f"jobs planned next run ÷ {always['next'] / auto['next']:.2f}   "
        f"build time ÷ {always['seconds'] / auto['seconds']:.2f}"
    )


if __name__ == "__main__":
    main()
