"""The generated pipelines run for real: GitLab's under gitlab-ci-local (shell executor),
GitHub's under the stand-in of :mod:`tests.integration.gha_standin`.

Used by the opt-in test (tests/integration/test_ci_engine.py, marker ``ci_engine``) and by
benchmarks/bench_ci_engine.py. A repository is laid out as a user's would be (the example under
``examples/cuvecops``, its CI files written by ``cuship ci init``, committed on ``main``). Kept
small: the copy's matrix is narrowed to the Python running this (no interpreter download; the
CUDA axis is kept, so the build is still sharded), said in :func:`narrow_to_python`. cuship is
the wheel built from this checkout, pinned as an index install (``cuship[all]==X.Y.Z``) and
found through ``UV_FIND_LINKS``, so each job installs it exactly as a runner would from an index.

GitLab: each job runs in its own gitlab-ci-local invocation, in stage order, artifacts passed
by the engine (``--no-artifacts-to-source``: a later job sees only what its ``needs`` bring).
gitlab-ci-local names a ``parallel: matrix`` job ``build: [v1,v2,...]`` (values joined by a bare
comma; GitLab's own UI writes ``, ``): the names come from ``--list-json``, never rebuilt.
A job runs when every job it needs (``needs:``, else every job of the earlier stages) passed or
was skipped by rule; after a failure, what needs it is not run, as in GitLab.

What the shell executor cannot do is skipped by rule, and each skip is listed (:data:`RULES`).
The PyTorch CPU index (``TORCH_INDEX``) cannot be reached from this machine: :func:`torch_index`
stands in for it, a local PEP 503 index of the same CPU build of torch and its dependencies,
given to both pipelines as their ``TORCH_INDEX`` (a GitLab pipeline variable; on GitHub, over
the workflow's ``env``), so the check jobs run every engine they require, as on a runner.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
PROJECT = "examples/cuvecops"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# The planted kernel bug: the NumPy saxpy adds y where it should... subtract it instead.
PLANTED = ("src/cuvecops/cpu.py", "np.float32(a) * xs + ys", "np.float32(a) * xs - ys")
GITLAB_JOBS = ("matrix-drift", "build", "check-quick", "index", "pages")
GITHUB_JOBS = ("prepare", "build", "check")

RULES = {
    "image": "build shard of a CUDA other than this host's nvcc ({cuda}): a runner pulls its image",
    "tags": "runs only on runners tagged {tags}: the shell executor here has no such tags",
    "never": "not in this pipeline (its rules: schedules only)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRun:
    name: str
    exit_code: int
    seconds: float
    tail: str
    failed_step: str | None = None


@dataclass(slots=True, kw_only=True)
class PipelineRun:
    """The jobs run (in order) and the jobs skipped, each with its reason."""

    engine: str
    runs: list[JobRun] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.runs if r.exit_code != 0]

    def report(self) -> str:
        lines = [f"{self.engine}:"]
        for r in self.runs:
            at = f"  (failed at: {r.failed_step})" if r.failed_step else ""
            lines.append(f"  {r.name:72} exit {r.exit_code:3}  {r.seconds:7.1f} s{at}")
        lines += [f"  {name:72} skipped: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "jobs": [
                {"name": r.name, "exit": r.exit_code, "seconds": round(r.seconds, 1)}
                | ({"failed_step": r.failed_step} if r.failed_step else {})
                for r in self.runs
            ],
            "skipped": self.skipped,
        }


def install_engine() -> Path:
    """gitlab-ci-local through tools/ci-engine (npm)."""
    done = subprocess.run(
        [str(REPO / "tools" / "ci-engine")], capture_output=True, text=True, check=True
    )
    return Path(done.stdout.strip().splitlines()[-1])


def build_cuship_wheel(dest: Path) -> Path:
    """The sdist and wheel of this checkout in ``dest/dist``, by ``python -m build`` from a copy
    of the tree (a build in place would leave an egg-info in src/ that shadows any installed
    cuship; the wheel is built from the sdist, so the sdist is proven complete too)."""
    tree = dest / "tree"
    keep = ("src", "pyproject.toml", "README.md", "LICENSE")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    tree.mkdir(parents=True, exist_ok=True)
    for name in keep:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=ignore)
        else:
            shutil.copy2(source, tree / name)
    out = dest / "dist"
    argv = [sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(tree)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(argv, check=True, capture_output=True, text=True, env=env)
    return out


def narrow_to_python(project: Path, python: str = PYTHON) -> None:
    """The copy's matrix and CI jobs on ``python`` only: a runner of the shell executor has the
    host's interpreters, and uv would download any other from GitHub (not reachable here)."""
    config = project / "cuship.toml"
    text = config.read_text(encoding="utf-8")
    narrowed, count = re.subn(r"(?m)^python = \[.*\]$", f'python = ["{python}"]', text)
    narrowed, ci = re.subn(r"(?m)^\[ci\]$", f'[ci]\npython = "{python}"', narrowed)
    assert count == 1 and ci == 1, f"{config}: no [matrix] python list or no [ci] table"
    config.write_text(narrowed, encoding="utf-8")


def prepare_repository(
    root: Path, requirement: str, *, plant: bool = False, providers: tuple[str, ...] = ("gitlab",)
) -> Path:
    """A git repository with the example and its generated CI files (pinned to
    ``requirement``), committed on main."""
    ignore = shutil.ignore_patterns("build", "dist", "__pycache__", ".cuship", "*.egg-info")
    project = root / PROJECT
    shutil.copytree(EXAMPLE, project, ignore=ignore)
    narrow_to_python(project)
    if plant:
        path, old, new = PLANTED
        text = (project / path).read_text(encoding="utf-8")
        assert old in text, f"the planted bug's line is gone from {path}"
        (project / path).write_text(text.replace(old, new), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    init = [sys.executable, "-m", "cuship", "ci", "init", PROJECT, "-o", "."]
    init += [arg for p in providers for arg in ("--provider", p)] + ["--cuship", requirement]
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


def torch_index(work: Path) -> str:
    """The ``file:`` URL of a PEP 503 index holding the torch this interpreter has (its CPU
    build) and its dependencies, downloaded with the machine's own pip configuration."""
    from hashlib import sha256
    from importlib.metadata import version

    from packaging.utils import canonicalize_name, parse_wheel_filename

    files = work / "torch-files"
    argv = [sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:"]
    argv += ["-d", str(files), f"torch=={version('torch')}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (
        f"cannot download torch's CPU build for TORCH_INDEX:\n{done.stderr}"
    )
    simple = work / "torch-index" / "simple"
    projects: dict[str, list[Path]] = {}
    for wheel in sorted(files.glob("*.whl")):
        projects.setdefault(canonicalize_name(parse_wheel_filename(wheel.name)[0]), []).append(
            wheel
        )
    for name, wheels in projects.items():
        links = [
            f'<a href="{w.resolve().as_uri()}#sha256={sha256(w.read_bytes()).hexdigest()}">'
            f"{w.name}</a><br>"
            for w in wheels
        ]
        (simple / name).mkdir(parents=True)
        (simple / name / "index.html").write_text(
            "<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>", encoding="utf-8"
        )
    root = "".join(f'<a href="{n}/">{n}</a><br>' for n in projects)
    (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>{root}</body></html>")
    return simple.as_uri()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def job_environment(work: Path) -> Iterator[dict[str, str]]:
    """What every job of a run gets besides its pipeline's own variables: the cuship wheel's
    folder is set by the caller; here a TMPDIR under ``work`` (the jobs' venvs go there, not
    into the host's /tmp), a compile cache under ``work`` (gitlab-ci-local's shell executor
    gives ``$CI_PROJECT_DIR`` its container path, /builds/..., which the pipeline's cache
    variable names) and an sccache server port of its own (not another build's server on this
    machine), stopped afterwards."""
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    port = str(_free_port())
    env = {"TMPDIR": str(tmp), "SCCACHE_DIR": str(work / "sccache"), "SCCACHE_SERVER_PORT": port}
    try:
        yield env
    finally:
        sccache = shutil.which("sccache")
        if sccache is not None:
            stop = {**os.environ, "SCCACHE_SERVER_PORT": port}
            subprocess.run([sccache, "--stop-server"], env=stop, capture_output=True, check=False)


# --- GitLab under gitlab-ci-local ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Planned:
    name: str
    needs: tuple[str, ...]


def _engine_jobs(engine: Path, root: Path) -> list[dict[str, Any]]:
    """The jobs as gitlab-ci-local names them (``--list-json``: name, stage, when)."""
    done = subprocess.run(
        [str(engine), "--list-json"], cwd=root, capture_output=True, text=True, check=True
    )
    listed: list[dict[str, Any]] = json.loads(done.stdout[done.stdout.index("[") :])
    return listed


def _shards(doc: Mapping[str, Any], listed: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each job's engine names: one, or one per ``parallel: matrix`` entry, matched to the
    entry by its values (gitlab-ci-local: ``job: [v1,v2,...]``)."""
    names = [str(j["name"]) for j in listed]
    shards: dict[str, list[str]] = {}
    for job, body in doc.items():
        matrix = (body.get("parallel") or {}).get("matrix") if isinstance(body, dict) else None
        if matrix is None:
            if job in names:
                shards[job] = [job]
            continue
        shards[job] = []
        for entry in matrix:
            name = f"{job}: [{','.join(str(v) for v in entry.values())}]"
            assert name in names, f"gitlab-ci-local names no job {name!r}; it lists {names}"
            shards[job].append(name)
    return shards


def _needs(
    job: str, body: Mapping[str, Any], shards: Mapping[str, list[str]], earlier: list[str]
) -> tuple[str, ...]:
    if "needs" not in body:
        return tuple(earlier)
    out: list[str] = []
    for need in body["needs"]:
        need = {"job": need} if isinstance(need, str) else need
        names = shards.get(need["job"], [])
        matrix = (need.get("parallel") or {}).get("matrix")
        if matrix is not None:
            wanted = {f"{need['job']}: [{','.join(str(v) for v in e.values())}]" for e in matrix}
            names = [n for n in names if n in wanted]
        out += names
    return tuple(out)


def plan_gitlab(engine: Path, root: Path) -> tuple[list[_Planned], dict[str, str]]:
    """The jobs to run in stage order with what each waits for, and each skipped job's rule."""
    doc = yaml.safe_load((root / ".gitlab-ci.yml").read_text(encoding="utf-8"))
    listed = _engine_jobs(engine, root)
    shards = _shards(doc, listed)
    cuda = host_cuda()
    stages = [".pre", *doc.get("stages", []), ".post"]
    order = sorted(listed, key=lambda j: stages.index(j["stage"]))
    planned: list[_Planned] = []
    skipped: dict[str, str] = {}
    for job in order:
        name = str(job["name"])
        base = name.split(": [", 1)[0]
        body = doc[base]
        entry = _entry(body, name)
        if job.get("when") == "never":
            skipped[name] = RULES["never"]
        elif body.get("tags"):
            skipped[name] = RULES["tags"].format(tags=", ".join(body["tags"]))
        elif "CUDA" in entry and (cuda is None or not str(entry["CUDA"]).startswith(cuda + ".")):
            skipped[name] = RULES["image"].format(cuda=cuda)
        else:
            earlier = [p.name for p in planned if _stage(doc, p.name) != job["stage"]]
            earlier += [n for n in skipped if _stage(doc, n) != job["stage"]]
            planned.append(_Planned(name=name, needs=_needs(base, body, shards, earlier)))
    return planned, skipped


def _stage(doc: Mapping[str, Any], name: str) -> str:
    return str(doc[name.split(": [", 1)[0]].get("stage", "test"))


def _entry(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    for entry in (body.get("parallel") or {}).get("matrix") or []:
        if name.endswith(f"[{','.join(str(v) for v in entry.values())}]"):
            return dict(entry)
    return {}


def run_gitlab_job(
    engine: Path, root: Path, name: str, variables: Mapping[str, str], timeout: float
) -> JobRun:
    """One job under gitlab-ci-local's shell executor; its exit code and wall time."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    argv = [str(engine), "--force-shell-executor", "--shell-isolation", "--no-color"]
    argv += ["--no-artifacts-to-source"]
    argv += [arg for k, v in variables.items() for arg in ("--variable", f"{k}={v}")]
    start = time.monotonic()
    try:
        done = subprocess.run(
            [*argv, name], cwd=root, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as err:
        out = err.stdout if isinstance(err.stdout, str) else ""
        return JobRun(name=name, exit_code=124, seconds=time.monotonic() - start, tail=out[-6000:])
    tail = (done.stdout + done.stderr)[-20000:]
    return JobRun(name=name, exit_code=done.returncode, seconds=time.monotonic() - start, tail=tail)


def _clear_venvs(variables: Mapping[str, str]) -> None:
    """The job's venvs (``mktemp -d`` under its TMPDIR): a shell runner keeps them, and each
    holds cuship[all] (torch too, in the check job); later jobs make their own."""
    tmp = variables.get("TMPDIR")
    for made in Path(tmp).glob("tmp.*") if tmp else ():
        shutil.rmtree(made, ignore_errors=True)


def run_gitlab(
    engine: Path, root: Path, variables: Mapping[str, str], *, timeout: float = 1800
) -> PipelineRun:
    """Every runnable job in stage order; a job whose needs failed is not run (listed)."""
    planned, skipped = plan_gitlab(engine, root)
    result = PipelineRun(engine="gitlab-ci-local (shell executor)", skipped=skipped)
    outcome: dict[str, str] = dict.fromkeys(skipped, "skipped")
    for job in planned:
        bad = [n for n in job.needs if outcome.get(n) not in ("passed", "skipped")]
        if bad or (job.needs and all(outcome.get(n) == "skipped" for n in job.needs)):
            why = f"needs {bad[0]}, which failed" if bad else "nothing it needs ran here"
            result.skipped[job.name] = f"not run: {why}"
            outcome[job.name] = "not run"
            continue
        run = run_gitlab_job(engine, root, job.name, variables, timeout)
        _clear_venvs(variables)
        result.runs.append(run)
        outcome[job.name] = "passed" if run.exit_code == 0 else "failed"
    return result


# --- GitHub under the stand-in ---------------------------------------------------------------


def run_github(
    root: Path, work: Path, variables: Mapping[str, str], *, timeout: float = 1800
) -> PipelineRun:
    """The workflow's build and check jobs (and the prepare job whose matrix they use)."""
    from tests.integration.gha_standin import StandIn

    overrides = {k: v for k, v in variables.items() if k == "TORCH_INDEX"}
    stand_in = StandIn(
        root,
        ".github/workflows/cuship.yml",
        work,
        host_cuda=host_cuda(),
        extra_env=variables,
        overrides=overrides,
        timeout=timeout,
    )
    stand_in.run(GITHUB_JOBS)
    result = PipelineRun(engine="GitHub stand-in (tests/integration/gha_standin.py)")
    result.skipped = dict(stand_in.skipped)
    for job in stand_in.runs:
        tail = job.tail
        result.runs.append(
            JobRun(
                name=job.name,
                exit_code=job.exit_code,
                seconds=job.seconds,
                tail=tail,
                failed_step=job.failed_step,
            )
        )
    return result


# --- what a run should show ------------------------------------------------------------------

CHECK_JOB = {"gitlab": "check-quick", "github": "check (quick)"}


def unexpected(run: PipelineRun, *, planted: bool, check: str) -> str | None:
    """None when ``run`` is what it should be: every job green on the example (and some ran);
    on the planted bug, the quick check job red and no other."""
    if not run.runs:
        return "no job ran"
    if not planted:
        return f"failed: {run.failed}" if run.failed else None
    if run.failed != [check]:
        return f"expected only {check!r} to fail, failed: {run.failed}"
    return None
