"""`cuship toolkit install 13.0`: cold (download + assemble) and warm (cache) wall time, beside a
plain `pip download` of the same wheels and the CUDA installers CI otherwise runs.

Run: python benchmarks/bench_toolkit.py [--runs N] [--version 13.0]

Each cold run starts from an empty toolkit cache (a fresh CUSHIP_TOOLKITS directory) and goes to
the network (PyPI, or CUSHIP_TOOLKIT_INDEX); pip's own cache is not involved (cuship downloads
itself, and the baseline passes --no-cache-dir). Warm runs reuse the toolkit the last cold run
made: `cuship toolkit install` as a fresh process, and `ensure()` in-process (no interpreter
start-up). Medians are printed with the spread.

The anchors are what CI spends today to get a toolkit (numbers from public reports, cited):
  * Jimver/cuda-toolkit (GitHub Action, runfile method on a hosted Linux runner): about 3 min a
    run for CUDA 11.2.2 (https://github.com/Jimver/cuda-toolkit/issues/13), 6 min, 4 min with the
    installer cached (the maintainer, same issue); about 2:30 min with the network method, 28 s
    with only the nvcc + cudart sub-packages (https://github.com/Jimver/cuda-toolkit/issues/253).
  * The network install of the sub-packages a build needs downloads about 230 MB
    (https://github.com/ggml-org/llama.cpp/issues/3232); the full CUDA 12.8 toolkit takes
    4.79 GB installed (https://github.com/unslothai/llama.cpp/pull/75).
The runfile itself cannot be measured here: developer.download.nvidia.com does not answer from
this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from cuship.toolkit import catalog, ensure  # noqa: E402


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "CUSHIP_TOOLKITS": str(root)}


def _install(root: Path, version: str) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "toolkit", "install", version, "--json"],
        env=_env(root),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"cuship toolkit install {version} failed:\n{done.stderr}")
    return wall, json.loads(done.stdout)


def _pip_download(pins: tuple[str, ...], into: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-cache-dir",
         "--only-binary", ":all:", "-d", str(into), *pins],
        check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def _du(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} s  (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--version", default="13.0")
    args = parser.parse_args()
    release = catalog().find(args.version)
    with tempfile.TemporaryDirectory(prefix="bench-toolkit-") as tmp:
        base = Path(tmp)
        cold, made = [], {}
        for run in range(args.runs):
            root = base / f"cold-{run}"
            wall, made = _install(root, args.version)
            assert made["reused"] is False
            cold.append(wall)
            if run < args.runs - 1:
                subprocess.run(["rm", "-rf", str(root)], check=True)
        warm_root = base / f"cold-{args.runs - 1}"
        warm = [_install(warm_root, args.version)[0] for _ in range(args.runs)]
        in_process = []
        for _ in range(args.runs):
            start = time.perf_counter()
            assert ensure(args.version, {"CUSHIP_TOOLKITS": str(warm_root)}).reused
            in_process.append(time.perf_counter() - start)
        pip = [_pip_download(release.pins(), base / f"pip-{run}") for run in range(args.runs)]
        prefix = Path(str(made["prefix"]))
        size = _du(prefix)
    downloaded = int(str(made["downloaded_bytes"]))
    print(f"cuship toolkit install {args.version} -> CUDA {release.cuda} (nvcc {release.nvcc})")
    print(f"  wheels: {', '.join(release.pins())}")
    print(f"  download {downloaded / 1e6:.1f} MB, prefix on disk {size / 1e6:.0f} MB")
    print(f"  cold (download + assemble), {args.runs} runs: {_spread(cold)}")
    print(f"  warm (cache, new process):            {_spread(warm)}")
    print(f"  warm (cache, in-process ensure()):    {statistics.median(in_process) * 1e3:7.2f} ms")
    print(f"  pip download --no-deps (same wheels): {_spread(pip)}")
    throughput = downloaded / 1e6 / statistics.median(cold)
    print(f"  cold throughput: {throughput:.0f} MB/s of wheels, end to end")
    print("anchors (CI today, cited in this file's docstring): runfile action ~3-6 min a run,")
    print("  network sub-packages 28 s-2.5 min; ~230 MB for the needed sub-packages;")
    print("  4.79 GB for a full CUDA 12.8 toolkit installed.")


if __name__ == "__main__":
    main()
