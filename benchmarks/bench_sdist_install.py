"""`pip install SDIST` of a CUDA package: the prebuilt wheel via cuship.backend vs a source build.

    python3 benchmarks/bench_sdist_install.py [--runs 3] [--cache-dir /tmp/cuship-bench-sdist]

Setup (not timed): cuship's wheel and its dependencies' wheels (the wheelhouse pip's build
environments read, with scikit-build-core for the source build); the example's wheel built with
nvcc for its default arches (sm_80/90/100/120 + PTX 80/120), labelled ``+cu130``, indexed with
``cuship index`` and served on loopback by ``cuship serve``; a copy of examples/cuvecops with
``build-backend = "cuship.backend"`` in front of scikit-build-core, made into an sdist by
``python -m build --sdist``.

Each run creates two fresh venvs (not timed), then times, alternating, for a fake H100 with a
CUDA 13.0 driver (``--no-deps --no-index --find-links WHEELHOUSE``: only the sdist's own path):

* prebuilt: ``pip install SDIST`` -- cuship.backend downloads the +cu130 wheel, checks its sha256
  and hands it over; nothing is compiled and nothing from build-requires is installed;
* source: the same with ``CUSHIP_FORCE_BUILD=1`` -- pip installs scikit-build-core, which runs
  CMake and nvcc for the same six arches.

Printed: median, min and max wall time of each, the ratio, every package pip installed (build
environment, backend dependencies, the venv) and what the installed cuship.json says.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "cuvecops"
MACHINE = {"CUSHIP_GPUS": "H100", "CUSHIP_DRIVER_CUDA": "13.0"}
HEADER = (
    '[build-system]\nrequires = ["cuship"]\nbuild-backend = "cuship.backend"\n\n'
    '[tool.cuship.prebuilt]\nindex = "{index}"\nbackend = "scikit_build_core.build"\n'
    'build-requires = ["scikit-build-core>=0.10"]\n\n'
)
_STAGE = re.compile(r"Installing (build|backend) dependencies: (started|finished)")


def installed_by_stage(log: str) -> dict[str, list[str]]:
    """The packages pip -v says it installed, per stage: build env, backend deps, the venv."""
    stages: dict[str, list[str]] = {"build environment": [], "backend dependencies": [], "venv": []}
    stage = "venv"
    for line in log.splitlines():
        marker = _STAGE.search(line)
        if marker:
            started = marker[2] == "started"
            names = {"build": "build environment", "backend": "backend dependencies"}
            stage = names[marker[1]] if started else "venv"
        elif "Successfully installed " in line:
            stages[stage] += line.split("Successfully installed ", 1)[1].split()
    return stages


def _run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    """Run ``args``; stdout and stderr interleaved as a terminal shows them (pip's stages)."""
    done = subprocess.run(
        args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{args[:6]} failed:\n{done.stdout[-5000:]}")
    return done.stdout


def _env(**extra: str) -> dict[str, str]:
    """No pip/uv configuration, no cuship settings; cuship itself comes from the wheelhouse."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "CUSHIP_"))}
    env.pop("PYTHONPATH", None)
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    env.update(extra)
    return env


def wheelhouse(cache: Path) -> Path:
    """cuship's wheel and the wheels of its dependencies and of scikit-build-core."""
    out = cache / "wheelhouse"
    shutil.rmtree(out, ignore_errors=True)
    pip = [sys.executable, "-m", "pip"]
    machine = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the machine's pip config
    _run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(REPO)],
        machine,
        cwd=cache,
    )
    needs = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    _run([*pip, "download", "-q", "-d", str(out), *needs, "scikit-build-core>=0.10"], machine)
    return out


def prebuilt_site(cache: Path) -> Path:
    """The example's wheel built with nvcc (cached), labelled +cu130 and indexed by cuship."""
    built = cache / "built"
    if not list(built.glob("cuvecops-*.whl")):
        pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        _run(
            [*pip, "-w", str(built), str(EXAMPLE)],
            {**os.environ, "CUDACXX": shutil.which("nvcc") or "nvcc"},
        )
    (wheel,) = built.glob("cuvecops-*.whl")
    site, labelled = cache / "site", cache / "labelled"
    shutil.rmtree(site, ignore_errors=True)
    shutil.rmtree(labelled, ignore_errors=True)
    cuship = [sys.executable, "-m", "cuship"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    _run([*cuship, "retag", str(wheel), "--local", "cu130", "-w", str(labelled)], env)
    _run([*cuship, "index", str(labelled), "-o", str(site)], env)
    return site


def make_sdist(cache: Path, index: str, wheels: Path) -> Path:
    """The example with cuship.backend in front, made into an sdist by `python -m build`."""
    project = cache / "cuvecops"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(
        EXAMPLE, project, ignore=shutil.ignore_patterns("build", "dist", ".*", "__pycache__")
    )
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        HEADER.format(index=index) + text[text.index("[project]") :]
    )
    out = cache / "dist"
    shutil.rmtree(out, ignore_errors=True)
    env = _env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    _run([sys.executable, "-m", "build", "--sdist", "-o", str(out), str(project)], env)
    (sdist,) = out.glob("*.tar.gz")
    return sdist


def install(
    sdist: Path, wheels: Path, venv: Path, **extra: str
) -> tuple[float, dict[str, list[str]], dict[str, object]]:
    """Time `pip install SDIST` into a fresh venv: seconds, packages per pip install, cuship.json."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    args = [str(python), "-m", "pip", "install", "-v", "--no-deps", "--no-index"]
    env = _env(**MACHINE, **extra)
    start = time.perf_counter()
    log = _run([*args, "--find-links", str(wheels), str(sdist)], env)
    took = time.perf_counter() - start
    installed = installed_by_stage(log)
    read = (
        "import importlib.metadata as m; print(m.distribution('cuvecops').read_text('cuship.json'))"
    )
    provenance = json.loads(_run([str(python), "-c", read], env))
    shutil.rmtree(venv)
    return took, installed, provenance


def _report(
    name: str, times: list[float], installed: dict[str, list[str]], provenance: dict[str, object]
) -> None:
    print(
        f"{name:9} median {statistics.median(times):7.2f} s  (min {min(times):.2f}, max {max(times):.2f})"
    )
    for stage, packages in installed.items():
        print(f"          {stage}: {len(packages)} packages: {' '.join(packages) or '-'}")
    keys = ("kind", "filename", "label", "why")
    print("          cuship.json: " + "; ".join(f"{k}={provenance.get(k)}" for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuship-bench-sdist"
    )
    args = parser.parse_args()
    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    wheels = wheelhouse(cache)
    site = prebuilt_site(cache)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    server = subprocess.Popen(
        [sys.executable, "-m", "cuship", "serve", str(site), "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        index = server.stdout.readline().strip() + "simple"
        sdist = make_sdist(cache, index, wheels)
        results: dict[str, tuple[list[float], dict[str, list[str]], dict[str, object]]] = {}
        for run in range(args.runs):
            for name, extra in (("prebuilt", {}), ("source", {"CUSHIP_FORCE_BUILD": "1"})):
                took, installed, provenance = install(
                    sdist, wheels, cache / f"venv-{name}-{run}", **extra
                )
                times = results.setdefault(name, ([], installed, provenance))[0]
                times.append(took)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(
        f"pip install {sdist.name} (fresh venv, --no-deps), {args.runs} runs each, fake {MACHINE}"
    )
    for name, (times, installed, provenance) in results.items():
        _report(name, times, installed, provenance)
    ratio = statistics.median(results["source"][0]) / statistics.median(results["prebuilt"][0])
    print(f"source / prebuilt: {ratio:.1f}x")


if __name__ == "__main__":
    main()
