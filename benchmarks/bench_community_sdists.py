"""A community index's first packages.yml, as a new maintainer writes it: real PyPI sdists,
their versions and a Python, nothing else (no ``cuda``, ``device_code``, ``arch``, ``torch``,
``extra_deps`` or ``build_args``).

    nice -n 10 python3 benchmarks/bench_community_sdists.py [--work /tmp/cuship-bench-found]
        [--wheel-cache ~/.cache/cuship/wheels] [-o results.json]

The packages: bitarray 3.7.1 and pyahocorasick 2.1.0 (plain C extensions), cytoolz 1.0.1
(Cython), chamferdist 1.0.3 (a torch CUDA extension whose setup.py compiles CUDA only behind
FORCE_CUDA). Printed: the plan (``cuship matrix`` and what it found out), the first ship's wall
time, an unchanged rerun's, then each package installed by the line ship printed, in a fresh
venv, and imported. The install venvs read pip's configuration from nowhere (``PIP_CONFIG_FILE``
is ``/dev/null``): the site and PyPI only. For chamferdist the torch PyPI serves is its CUDA 13.0
build (several GB): ``--wheel-cache`` (the folder the job's ``torch-download`` step filled with
PyPI's files) is given to pip as ``--find-links`` so that it is not downloaded a third time.

Network: PyPI. Heavy: chamferdist compiles for the default arch list on a runner without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = {
    "bitarray": ("3.7.1", "bitarray", "plain C"),
    "pyahocorasick": ("2.1.0", "ahocorasick", "plain C"),
    "cytoolz": ("1.0.1", "cytoolz", "Cython"),
    "chamferdist": ("1.0.3", "chamferdist", "torch CUDA extension"),
}
PYPI = "https://pypi.org/simple"


def _write(root: Path) -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    entries = "".join(f'  {n}:\n    versions: ["{v[0]}"]\n' for n, v in PACKAGES.items())
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "packages.yml").write_text(
        f'matrix:\n  python: ["{python}"]\npackages:\n{entries}', encoding="utf-8"
    )


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=7200, check=False)


def _ship(root: Path) -> tuple[float, dict[str, object], str]:
    start = time.perf_counter()
    done = _run([sys.executable, "-m", "cuship", "ship", str(root), "-o", str(root / "out"),
                 "--no-check", "--json"])  # fmt: skip
    wall = time.perf_counter() - start
    try:
        return wall, json.loads(done.stdout), done.stderr
    except ValueError:
        return wall, {"error": done.stderr[-3000:]}, done.stderr


def _install(work: Path, line: str, module: str, cache: Path | None) -> dict[str, object]:
    venv = work / "venvs" / module
    _run([sys.executable, "-m", "venv", "--clear", str(venv)])
    words = shlex.split(line)[1:]  # "pip install ..." as printed: its words after "pip"
    extra = ["--find-links", str(cache)] if cache is not None and module == "chamferdist" else []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    start = time.perf_counter()
    done = _run([str(venv / "bin" / "python"), "-m", "pip", *words, *extra], env=env)
    took = time.perf_counter() - start
    code = f"import {module} as m; print(m.__name__, getattr(m, '__version__', ''), m.__file__)"
    if module == "chamferdist":
        code = "import torch; " + code + "; print('torch', torch.__version__)"
    imported = _run([str(venv / "bin" / "python"), "-c", code], env=env)
    return {
        "line": line + (" " + shlex.join(extra) if extra else ""),
        "install_exit": done.returncode,
        "install_s": round(took, 1),
        "install_tail": done.stderr[-600:] if done.returncode else "",
        "import": (imported.stdout or imported.stderr).strip()[-600:],
    }


def _installs(root: Path, shipped: dict[str, object], cache: Path) -> dict[str, object]:
    installs: dict[str, object] = {}
    for each in shipped.get("installs", []):  # type: ignore[attr-defined]
        module = next(v[1] for n, v in PACKAGES.items() if n == each["project"])
        installs[each["project"]] = _install(root, each["pip"], module, cache)
    return installs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/cuship-bench-found"))
    parser.add_argument(
        "--wheel-cache", type=Path, default=Path.home() / ".cache" / "cuship" / "wheels"
    )
    parser.add_argument("-o", "--out", type=Path, default=None)
    parser.add_argument(
        "--installs-only", action="store_true", help="Only the installs, from -o's last ship."
    )
    args = parser.parse_args()
    os.environ.setdefault("CUSHIP_PROGRESS_INTERVAL", "60")
    root = args.work
    if args.installs_only and args.out:
        before = json.loads(args.out.read_text(encoding="utf-8"))
        _, shipped, _ = _ship(root)  # an unchanged rerun: up to date, and its install lines
        before["installs"] = _installs(root, shipped, args.wheel_cache)
        args.out.write_text(json.dumps(before, indent=1), encoding="utf-8")
        print(json.dumps(before["installs"], indent=1))
        return
    _write(root)
    plan = _run([sys.executable, "-m", "cuship", "matrix", str(root), "--format", "json"])
    result: dict[str, object] = {
        "packages_yml": (root / "config" / "packages.yml").read_text(encoding="utf-8"),
        "plan_jobs": [j["id"] for j in json.loads(plan.stdout)["jobs"]] if plan.stdout else [],
        "plan_said": [ln for ln in plan.stderr.splitlines() if not ln.startswith("downloaded")],
    }
    first, shipped, _ = _ship(root)
    again, rerun, _ = _ship(root)
    result.update(
        first_ship_s=round(first, 1),
        first_jobs=[(j["job"], j["status"], j["detail"][-300:]) for j in shipped.get("jobs", [])],  # type: ignore[attr-defined]
        rerun_s=round(again, 1),
        rerun_jobs=[(j["job"], j["status"], j["detail"][-120:]) for j in rerun.get("jobs", [])],  # type: ignore[attr-defined]
        stages=shipped.get("stages"),
    )
    result["installs"] = _installs(root, shipped, args.wheel_cache)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
