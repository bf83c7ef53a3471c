"""A community index of real PyPI packages, shipped three times from one packages.yml.

    python3 benchmarks/bench_community_index.py [--work /tmp/cuship-bench-community]
        [--torch-site /path/to/site-packages/with/torch-cuda]

The packages.yml (written here) holds two real packages from PyPI sdists:

* torchsort 0.1.9: a torch C++/CUDA extension (``extra_deps: [torch]``, so each job installs its
  own torch build: ``torch===2.13.0``, PyPI's CUDA 13.0 wheel), compiled for sm_90 only;
* bottleneck 1.5.0: a plain C/NumPy extension (``matrix: {device_code: false}``), built in
  pip's isolated build environment (its pyproject.toml needs versioneer and NumPy).

No CUDA extension without torch that builds here in minutes was found, so there is none.

Three ``cuship ship`` runs: the first; a rerun with nothing changed; a rerun after adding
torchsort 0.1.10. Printed per run: wall time, jobs built / up to date / failed, and the sha256
of every published file, with the check that none changed between runs. Then each package is
installed in a fresh venv by the lines ``ship`` printed, with pip and with uv, from the site
served on loopback by ``cuship serve``, and imported. torch for CUDA 13 is several GB: the
install venvs see an existing one through a ``.pth`` file (``--torch-site``; default: the one
the torchsort job's build venv installed), as a user with torch already installed would.

Network: PyPI (the sdists, torch and its NVIDIA wheels). Heavy: minutes of compile, GB of
downloads on a first run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

PYPI = "https://pypi.org/simple"


def _packages(root: Path, torchsort: list[str]) -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "packages.yml").write_text(
        f'matrix:\n  python: ["{python}"]\n  cuda: ["13.0"]\n  arch: ["9.0"]\n'
        "packages:\n"
        "  torchsort:\n"
        f"    versions: {json.dumps(torchsort)}\n"
        '    build_args: "--no-build-isolation"\n'
        '    extra_deps: ["torch", "numpy"]\n'
        "    test_import: torchsort\n"
        "    description: Fast differentiable sorting and ranking\n"
        '    matrix: {torch: ["2.13"]}\n'
        "  bottleneck:\n"
        '    versions: ["1.5.0"]\n'
        "    test_import: bottleneck\n"
        "    matrix: {device_code: false}\n",
        encoding="utf-8",
    )


def _ship(root: Path) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "ship", str(root), "-o", str(root / "out"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    (root / f"ship-{int(start)}.log").write_text(done.stderr, encoding="utf-8")
    if not done.stdout.strip():
        sys.exit(f"ship printed nothing (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout)


def _published(root: Path) -> dict[str, str]:
    files = root / "out" / "site" / "files"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files.glob("*.whl"))}


def _summary(seconds: float, shipped: dict[str, object]) -> str:
    jobs = shipped["jobs"]
    assert isinstance(jobs, list)
    up = sum("up to date" in j["detail"] for j in jobs)
    built = sum(j["status"] == "built" for j in jobs) - up
    failed = [j for j in jobs if j["status"] == "failed"]
    line = f"{seconds:7.1f} s  built {built}, up to date {up}, failed {len(failed)}"
    return line + "".join(f"\n    failed {j['job']}: {j['detail'][:300]}" for j in failed)


def _venv(where: Path, torch_site: Path | None) -> Path:
    subprocess.run([sys.executable, "-m", "uv", "venv", "-q", str(where)], check=True)
    if torch_site is not None:
        site = next((where / "lib").glob("python*/site-packages"))
        (site / "torch-cuda.pth").write_text(str(torch_site) + "\n", encoding="utf-8")
    return where / "bin" / "python"


def _install(line: str, url: str, python: Path) -> subprocess.CompletedProcess[str]:
    words = [url if w.startswith("file://") else w for w in shlex.split(line)]
    if words[0] == "pip":
        argv = [sys.executable, "-m", "pip", "--python", str(python), *words[1:]]
    else:
        argv = [sys.executable, "-m", "uv", *words[1:3], "--python", str(python), *words[3:]]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/cuship-bench-community"))
    parser.add_argument("--torch-site", type=Path, default=None)
    args = parser.parse_args()
    root = args.work
    shutil.rmtree(root, ignore_errors=True)
    _packages(root, ["0.1.9"])
    runs = []
    for name, change in (("first", None), ("unchanged", None), ("+0.1.10", ["0.1.9", "0.1.10"])):
        if change:
            _packages(root, change)
        seconds, shipped = _ship(root)
        runs.append((name, seconds, shipped, _published(root)))
        print(f"{name:10} {_summary(seconds, shipped)}", flush=True)
    first = runs[0][3]
    for name, _, _, files in runs[1:]:
        changed = [f for f in first if f in files and files[f] != first[f]]
        print(f"{name:10} published files changed since the first run: {changed or 'none'}")
    for f, digest in runs[-1][3].items():
        print(f"  {digest[:16]}  {f}")
    installs = runs[-1][2].get("installs")
    assert isinstance(installs, list)
    torch_site = args.torch_site or next(
        (root / "out" / "wheels" / "envs").glob("*torch*/lib/python*/site-packages"), None
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "cuship", "serve", str(root / "out" / "site"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = ""
        while not url and server.stdout is not None:
            line = server.stdout.readline()
            if not line:
                break
            url = next((w for w in line.split() if w.startswith("http://")), "")
        url = url.rstrip("/") + "/simple/"
        for each in installs:
            for tool in ("pip", "uv"):
                python = _venv(root / f"venv-{each['project']}-{tool}", torch_site)
                start = time.perf_counter()
                done = _install(each[tool], url, python)
                seconds = time.perf_counter() - start
                imported = subprocess.run(
                    [str(python), "-c", f"import {each['project']}; print('ok')"],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                print(
                    f"{each['project']:10} {tool:3} install exit {done.returncode} in "
                    f"{seconds:5.1f} s, import {'ok' if imported.returncode == 0 else 'FAILED'}"
                    + ("" if done.returncode == 0 else f"\n    {done.stderr[-500:]}")
                    + ("" if imported.returncode == 0 else f"\n    {imported.stderr[-500:]}")
                )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
