"""Real torch CUDA extensions from their PyPI sdists, unmodified, from a packages.yml with no
``env:``, on a machine without a GPU.

    nice -n 10 python3 benchmarks/bench_torch_sdists.py [--work /tmp/cuship-bench-torch]
        [--only NAME ...] [--arch 9.0] [-o results.json]

Each package is shipped alone (one ``cuship ship`` at a time: two shared cores), from a
packages.yml holding only its name, version, ``build_args: --no-build-isolation``,
``extra_deps: [torch]`` and ``test_import``, with ``python``, ``torch`` and ``arch`` in the
matrix: no ``cuda`` (the host's is planned), no ``device_code`` (found in the sdist), no ``env:``
(the CUDA gate, FORCE_BUILD switches and the NVIDIA headers are cuship's to set). The torch is
PyPI's CUDA 13.0 build, installed in each job's venv: the CPU torch cannot link a CUDAExtension
(``-lc10_cuda``, ``-ltorch_cuda``: libraries a CPU build of torch does not ship).

Per package: the sdist's kind, the archs setup.py asked for and the ones compiled (cuship's
nvcc log), the ship's wall time, the smoke test's line, and ``cuship inspect``'s line for the
wheel. Network: PyPI (the sdists; torch and its NVIDIA wheels once, into the shared wheel cache).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = {
    # name: (version, import name, what makes it a test of cuship)
    "chamferdist": ("1.0.3", "chamferdist", "FORCE_CUDA gate, setup.py only"),
    "torch-cluster": ("1.6.3", "torch_cluster", "PyG family: FORCE_CUDA gate, cpu+cuda variants"),
    "torch-scatter": ("2.1.2", "torch_scatter", "PyG family: FORCE_CUDA gate, cpu+cuda variants"),
    "causal-conv1d": ("1.7.0", "causal_conv1d", "hard-coded -gencode list, FORCE_BUILD switch"),
    "pytorch-fast-transformers": (
        "0.4.0",
        "fast_transformers",
        "hard-coded -arch=compute_50 (below what CUDA 13's nvcc compiles), the gate an nvcc on PATH",
    ),
    "grouped-gemm": (
        "0.3.0",
        "grouped_gemm",
        "arch from the build machine's GPU unless TORCH_CUDA_ARCH_LIST, CUTLASS, cuBLAS headers",
    ),
}


def _packages_yml(root: Path, name: str, arch: str) -> None:
    version, module, _ = PACKAGES[name]
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "packages.yml").write_text(
        f'matrix:\n  python: ["{python}"]\n  torch: ["2.13"]\n  arch: ["{arch}"]\n'
        f"packages:\n  {name}:\n"
        f'    versions: ["{version}"]\n'
        '    build_args: "--no-build-isolation"\n'
        '    extra_deps: ["torch"]\n'
        f"    test_import: {module}\n",
        encoding="utf-8",
    )


def _cuship(*args: str, timeout: float = 7200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cuship", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _one(work: Path, name: str, arch: str) -> dict[str, object]:
    root = work / name
    _packages_yml(root, name, arch)
    dry = _cuship("build", str(root), "--dry-run", "--mode", "local", "-o", str(root / "out"))
    gate = [line.strip() for line in dry.stdout.splitlines() if "# CUDA gate" in line]
    arch_line = [
        line.strip() for line in dry.stdout.splitlines() if line.strip().startswith("# arch")
    ]
    start = time.perf_counter()
    done = _cuship("ship", str(root), "-o", str(root / "out"), "--no-check", "--json")
    wall = time.perf_counter() - start
    result: dict[str, object] = {
        "package": f"{name}=={PACKAGES[name][0]}",
        "kind": PACKAGES[name][2],
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "dry_run_gate": gate,
        "dry_run_arch": arch_line,
    }
    try:
        shipped = json.loads(done.stdout)
    except ValueError:
        result["error"] = done.stderr[-3000:]
        return result
    for job in shipped["jobs"]:
        nvcc = job.get("nvcc") or {}
        result.update(
            job=job["job"],
            status=job["status"],
            detail=job["detail"][-1500:],
            asked=nvcc.get("asked"),
            compiled=nvcc.get("compiled"),
            device_compiles=nvcc.get("device_compiles"),
            smoke=job.get("smoke"),
            smoke_note=job.get("smoke_note"),
        )
        if job.get("wheel"):
            inspected = _cuship("inspect", job["wheel"])
            result["inspect"] = inspected.stdout.strip().splitlines()[:6]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/cuship-bench-torch"))
    parser.add_argument("--only", nargs="*", default=list(PACKAGES))
    parser.add_argument("--arch", default="9.0")
    parser.add_argument("-o", "--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("CUSHIP_PROGRESS_INTERVAL", "60")
    results = []
    for name in args.only:
        result = _one(args.work, name, args.arch)
        print(json.dumps(result, indent=1), flush=True)
        results.append(result)
        if args.out:
            args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
