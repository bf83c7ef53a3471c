"""The generated GitLab pipeline run by a real CI engine: gitlab-ci-local with its shell executor.

Used by the opt-in test (tests/integration/test_ci_engine.py, marker ``ci_engine``) and by
benchmarks/bench_ci_engine.py. A repository is laid out as a user's would be (the example under
``examples/cuvecops``, its ``.gitlab-ci.yml`` written by ``cuship ci init``, committed on
``main``); cuship is the wheel built from this checkout, pinned as an index install
(``cuship[all]==X.Y.Z``) and found through ``UV_FIND_LINKS``, so each job installs it exactly as
a runner would from an index. Each job runs in its own gitlab-ci-local invocation, in stage
order, artifacts passed by the engine.

What the shell executor cannot do is skipped by rule, and each skip is listed (:data:`RULES`):
a build shard whose CUDA is not this host's nvcc (a runner pulls that CUDA image; the shell
executor has only the host), GPU jobs (no GPU), jobs of other pipeline sources (the nightly
check runs on schedules). The PyTorch CPU index cannot be reached from this machine: the run sets
``TORCH_INDEX=`` and ``ENGINES=allow-missing``, the generated pipeline's own switches for such a
runner, and the check's summary names the engine left out (the Triton interpreter).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
PROJECT = "examples/cuvecops"
# The planted kernel bug: the NumPy saxpy kernel adds where it should... subtract y instead.
PLANTED = ("src/cuvecops/cpu.py", "np.float32(a) * xs + ys", "np.float32(a) * xs - ys")

RULES = {
    "image": "build shard of a CUDA other than this host's nvcc: a runner pulls its image",
    "gpu": "GPU job: no GPU here",
    "source": "not in this pipeline: runs on schedules only",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRun:
    name: str
    exit_code: int
    seconds: float
    tail: str


def install_engine() -> Path:
    """gitlab-ci-local through tools/ci-engine (npm)."""
    done = subprocess.run(
        [str(REPO / "tools" / "ci-engine")], capture_output=True, text=True, check=True
    )
    return Path(done.stdout.strip().splitlines()[-1])


def build_cuship_wheel(dest: Path) -> Path:
    """The wheel of this checkout, built by ``python -m build`` from a copy of the tree (a
    build in place would leave an egg-info in src/ that shadows any installed cuship)."""
    tree = dest / "tree"
    keep = ("src", "pyproject.toml", "README.md", "LICENSE")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in keep:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=ignore)
        else:
            tree.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    out = dest / "dist"
    argv = [sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(tree)]
    subprocess.run(argv, check=True, capture_output=True, text=True)
    return out


def prepare_repository(root: Path, version: str, *, plant: bool = False) -> Path:
    """A git repository with the example and its generated .gitlab-ci.yml, on main."""
    ignore = shutil.ignore_patterns("build", "dist", "__pycache__", ".cuship", "*.egg-info")
    project = root / PROJECT
    shutil.copytree(EXAMPLE, project, ignore=ignore)
    if plant:
        path, old, new = PLANTED
        text = (project / path).read_text(encoding="utf-8")
        assert old in text, f"the planted bug's line is gone from {path}"
        (project / path).write_text(text.replace(old, new), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    init = [sys.executable, "-m", "cuship", "ci", "init", PROJECT, "--provider", "gitlab"]
    init += ["-o", ".", "--cuship", f"cuship[all]=={version}"]
    subprocess.run(init, cwd=root, env=env, check=True, capture_output=True, text=True)
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "example"],
    ):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    return root


def host_cuda() -> str | None:
    """This host's nvcc release (``13.0``), or None."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(nvcc).is_file():
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"release (\d+\.\d+)", out)
    return found.group(1) if found else None


def plan_jobs(root: Path, pythons: set[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The jobs to run in stage order, and each skipped job with its rule."""
    import yaml

    doc = yaml.safe_load((root / ".gitlab-ci.yml").read_text(encoding="utf-8"))
    cuda = host_cuda()
    run: list[str] = ["matrix-drift"]
    skipped: dict[str, str] = {}
    for entry in doc["build"]["parallel"]["matrix"]:
        name = f"build: [{', '.join(str(v) for v in entry.values())}]"
        if cuda is None or not str(entry["CUDA"]).startswith(cuda + "."):
            skipped[name] = RULES["image"]
        elif pythons is not None and entry["PYTHON"] not in pythons:
            skipped[name] = "left out of this run (its Python is not asked for)"
        else:
            run.append(name)
    run += ["check-quick", "index", "pages"]
    for name in doc:
        if name.startswith("gpu-"):
            skipped[name] = RULES["gpu"]
        elif name == "check-nightly":
            skipped[name] = RULES["source"]
    return run, skipped


def run_job(engine: Path, root: Path, name: str, wheels: Path, timeout: float) -> JobRun:
    """One job under gitlab-ci-local's shell executor; its exit code and wall time."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    variables = {"UV_FIND_LINKS": str(wheels), "TORCH_INDEX": "", "ENGINES": "allow-missing"}
    argv = [str(engine), "--force-shell-executor", "--shell-isolation", "--no-color"]
    argv += [arg for k, v in variables.items() for arg in ("--variable", f"{k}={v}")]
    start = time.monotonic()
    done = subprocess.run(
        [*argv, name], cwd=root, env=env, capture_output=True, text=True, timeout=timeout
    )
    tail = (done.stdout + done.stderr)[-6000:]
    return JobRun(name=name, exit_code=done.returncode, seconds=time.monotonic() - start, tail=tail)


def run_pipeline(
    engine: Path,
    root: Path,
    wheels: Path,
    *,
    pythons: set[str] | None = None,
    timeout: float = 1800,
) -> tuple[list[JobRun], dict[str, str]]:
    """Every runnable job in stage order (a failed job stops the ones after it, as its
    pipeline would); the skipped jobs with their rules."""
    names, skipped = plan_jobs(root, pythons)
    runs: list[JobRun] = []
    for name in names:
        if runs and runs[-1].exit_code != 0 and runs[-1].name != "matrix-drift":
            skipped[name] = f"not run: {runs[-1].name} failed before it"
            continue
        runs.append(run_job(engine, root, name, wheels, timeout))
    return runs, skipped


def report(runs: list[JobRun], skipped: dict[str, str]) -> str:
    lines = [f"{r.name:60} exit {r.exit_code:3}  {r.seconds:7.1f} s" for r in runs]
    lines += [f"{name:60} skipped: {why}" for name, why in skipped.items()]
    return "\n".join(lines)


def as_json(runs: list[JobRun], skipped: dict[str, str]) -> str:
    return json.dumps(
        {
            "jobs": [{"name": r.name, "exit": r.exit_code, "seconds": r.seconds} for r in runs],
            "skipped": skipped,
        },
        indent=1,
    )
