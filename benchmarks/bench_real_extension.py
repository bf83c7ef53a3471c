"""A real-style torch extension from its sdist: the prebuilt wheel via cuship.backend vs the
source build, under pip (isolated), pip --no-build-isolation and uv.

    python3 benchmarks/bench_real_extension.py [--runs 1] [--cache-dir /tmp/cuship-bench-ext]

The project is tests/fixtures/shapeconv: causal-conv1d's setup.py traits (``import torch`` at
the top, no ``[project]`` table, a version read from ``__init__.py``, its own ``-gencode`` for
sm_75/80/90, a download command switched off by ``SHAPECONV_FORCE_BUILD``).

Setup (not timed): a wheelhouse (cuship's wheel and dependencies, setuptools, and the installed
torch with its dependencies, from the machine's pip configuration); the fixture built by
``cuship build`` for ``arch = "9.0"`` (its time and the archs nvcc compiled are printed),
indexed by ``cuship index`` and served on loopback; the sdist with ``cuship.backend`` in front of
setuptools. For each frontend, each run makes a fresh user environment holding the installed
torch (pip: a venv over this interpreter's site-packages; uv: a venv with torch installed by uv,
since uv counts only what the venv itself holds), then times the install of the sdist:

* prebuilt: the index is up; cuship.backend downloads the matching wheel, checks its sha256;
* source: the index is down (connection refused); the real backend compiles, against the
  user's torch version (an isolated build environment gets ``torch==<the user's>``).

Printed per frontend and path: median wall time, what the install put where (pip's stages, uv's
"Installed" lines), the user's torch before and after, and the installed cuship.json's kind.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.integration's helpers
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sdist_install import installed_by_stage
from tests.integration.indexsite import REPO, clean_env
from tests.integration.shapeconv import FIXTURE, make_sdist

DOWN = "http://127.0.0.1:1/simple"
FRONTENDS = ("pip", "pip --no-build-isolation", "uv")


def _run(args: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{args[:6]} failed:\n{done.stdout[-5000:]}")
    return done.stdout


def _machine_env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("CUSHIP_")
    }


def wheelhouse(cache: Path, torch: str) -> Path:
    out = cache / "wheelhouse"
    if (out / ".done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    env = _machine_env()
    _run([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(REPO)], env)
    _run([*pip, "download", "-q", "-d", str(out), str(REPO), "setuptools>=68"], env)
    _run([*pip, "download", "-q", "--only-binary", ":all:", "-d", str(out), f"torch=={torch}"], env)
    (out / ".done").write_text("")
    return out


def build_fixture(cache: Path) -> tuple[Path, float, dict[str, object]]:
    """The fixture built by cuship build: its wheels folder, seconds, the job's JSON."""
    source = cache / "shapeconv"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(FIXTURE, source, ignore=shutil.ignore_patterns("dist", "build", "*.egg-info"))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "build", str(source), "--json"],
        env=_machine_env(),
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"cuship build failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    (job,) = json.loads(done.stdout)
    return source / "dist" / "cuship" / "wheels", took, job


def _env(tmp: Path, wheels: Path) -> dict[str, str]:
    """No pip/uv configuration, no cuship settings; every install reads only ``wheels``."""
    env = clean_env(tmp, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    env.pop("PYTHONPATH")
    env.pop("CUSHIP_NVCC")
    return env


def user_env(frontend: str, tmp: Path, wheels: Path, torch: str, env: dict[str, str]) -> Path:
    venv = tmp / "venv"
    if frontend == "uv":
        _run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], env)
        python = venv / "bin" / "python"
        uv = ["uv", "pip", "install", "-q", "--python", str(python), "--no-index"]
        _run([*uv, "--find-links", str(wheels), f"torch=={torch}"], env)
        return python
    _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], env)
    python = venv / "bin" / "python"
    if frontend == "pip --no-build-isolation":  # the user installs the build requirements first
        where = ["--no-index", "--find-links", str(wheels)]
        _run([str(python), "-m", "pip", "install", "-q", *where, "setuptools>=68"], env)
    return python


def install(frontend: str, python: Path, sdist: Path, wheels: Path, env: dict[str, str]) -> str:
    where = ["--no-index", "--find-links", str(wheels)]
    if frontend == "uv":
        return _run(
            ["uv", "pip", "install", "-v", "--python", str(python), *where, str(sdist)], env
        )
    if frontend == "pip --no-build-isolation":
        env = {**env, "PYTHONPATH": str(REPO / "src")}  # the user installed cuship first
        return _run(
            [str(python), "-m", "pip", "install", "-v", "--no-build-isolation", str(sdist)], env
        )
    return _run([str(python), "-m", "pip", "install", "-v", *where, str(sdist)], env)


def _torch_of(python: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('torch'))"
    return _run([str(python), "-c", code]).strip()


def _kind(python: Path) -> str:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.loads(m.distribution('shapeconv').read_text('cuship.json') or '{}')"
        ".get('kind', 'no cuship.json'))"
    )
    return _run([str(python), "-c", code]).strip()


def _what(frontend: str, log: str) -> str:
    if frontend == "uv":
        plus = [ln[3:].strip() for ln in log.splitlines() if ln.startswith(" + ")]
        return f"into the venv: {' '.join(plus) or '-'}"
    stages = installed_by_stage(log)
    return "; ".join(f"{k}: {' '.join(v) or '-'}" for k, v in stages.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "cuship-bench-ext"
    )
    args = parser.parse_args()
    import torch as installed

    from cuship.index import write
    from cuship.index.describe import describe_wheel
    from cuship.serve.site import serve

    torch = installed.__version__
    cache = args.cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    wheels = wheelhouse(cache, torch)
    built, took, job = build_fixture(cache)
    nvcc = job.get("nvcc") or {}
    print(f"cuship build (arch 9.0): {took:.1f} s, {job['status']}: {job['detail']}")
    print(f"  setup.py asked nvcc for {nvcc.get('asked')}; compiled {nvcc.get('compiled')}")
    print(f"  smoke: {job.get('smoke')} ({job.get('smoke_env')}: {job.get('smoke_note')})")
    site = cache / "site"
    shutil.rmtree(site, ignore_errors=True)
    write([built], site, describe=describe_wheel)
    with serve(site, "127.0.0.1", 0) as server:
        sdists = {
            "prebuilt": make_sdist(cache, f"{server.url}simple", cache / "sdist-up"),
            "source": make_sdist(cache, DOWN, cache / "sdist-down"),
        }
        times: dict[tuple[str, str], list[float]] = {}
        notes: dict[tuple[str, str], str] = {}
        for _ in range(args.runs):
            for frontend in FRONTENDS:
                for path, sdist in sdists.items():
                    with tempfile.TemporaryDirectory(dir=cache) as tmp:
                        env = _env(Path(tmp), wheels)
                        python = user_env(frontend, Path(tmp), wheels, torch, env)
                        before = _torch_of(python)
                        start = time.perf_counter()
                        log = install(frontend, python, sdist, wheels, env)
                        seconds = time.perf_counter() - start
                        after = _torch_of(python)
                        times.setdefault((frontend, path), []).append(seconds)
                        notes[(frontend, path)] = (
                            f"torch {before} -> {after} ({'kept' if before == after else 'REPLACED'}); "
                            f"cuship.json kind {_kind(python)}; {_what(frontend, log)}"
                        )
    print(f"\n{'frontend':28} {'path':9} {'median s':>9}  source/prebuilt")
    for frontend in FRONTENDS:
        pre = statistics.median(times[(frontend, "prebuilt")])
        src = statistics.median(times[(frontend, "source")])
        print(f"{frontend:28} {'prebuilt':9} {pre:9.1f}")
        print(f"{frontend:28} {'source':9} {src:9.1f}  {src / pre:.1f}x")
    print()
    for key, note in notes.items():
        print(f"{key[0]} / {key[1]}: {note}")


if __name__ == "__main__":
    main()
