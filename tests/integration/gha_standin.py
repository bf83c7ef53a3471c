"""A stand-in for a GitHub Actions runner: a generated workflow's jobs, their ``run:`` steps
executed in order on this host with the environment GitHub gives them.

Not GitHub, and it says where it differs (docs/generated-ci.md, "Run locally"): each job gets a
fresh workspace and ``RUNNER_TEMP``, the ``GITHUB_*``/``RUNNER_*`` variables, ``CI=true``, and
the ``GITHUB_ENV``/``GITHUB_OUTPUT``/``GITHUB_PATH``/``GITHUB_STEP_SUMMARY`` files honoured
between steps (a step's ``env:`` over ``GITHUB_ENV`` over the job's and the workflow's
``env:``); ``${{ }}`` expressions, ``if:`` conditions, job ``outputs``, ``needs`` and a matrix
from an earlier job's output are evaluated (:mod:`tests.integration.gha_expr`). ``run:``
scripts run as GitHub runs them, ``bash -e {0}``. Actions are replaced, each by rule
(:data:`STANDS_IN`): checkout by a clone of the repository, setup-uv and setup-python by this
host's uv and Python on PATH, upload/download-artifact by copies under the run's folder,
sccache-action by this host's sccache with a local cache (GitHub's cache service is not here).
Any other action fails its step. A job in a container runs on the host instead when the
container's CUDA is this host's nvcc, and is skipped by rule otherwise; self-hosted jobs (GPU
runners) are skipped by rule. Each skip is listed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.integration.gha_expr import condition, read_command_file, substitute, text_of

__all__ = ["STANDS_IN", "GhaJob", "GhaStep", "StandIn"]

STANDS_IN = {
    "actions/checkout": "a clone of the repository at its HEAD",
    "astral-sh/setup-uv": "this host's uv on PATH",
    "actions/setup-python": "this host's Python on PATH",
    "actions/upload-artifact": "a copy under the run's artifacts folder",
    "actions/download-artifact": "a copy from the run's artifacts folder",
    "mozilla-actions/sccache-action": "this host's sccache on PATH, a local cache "
    "(SCCACHE_GHA_ENABLED dropped: GitHub's cache service is not here)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class GhaStep:
    name: str
    exit_code: int | None  # None: not run (its if: was false)
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GhaJob:
    name: str
    exit_code: int
    seconds: float
    steps: tuple[GhaStep, ...]
    tail: str

    @property
    def failed_step(self) -> str | None:
        return next((s.name for s in self.steps if s.exit_code not in (0, None)), None)


@dataclass(slots=True)
class _JobState:
    """What a job's steps share: its folders, environment from the runner files, PATH
    additions, step outputs and status."""

    workspace: Path
    temp: Path
    env: dict[str, str] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)
    steps: dict[str, Any] = field(default_factory=dict)
    status: str = "success"
    log: list[str] = field(default_factory=list)


class StandIn:
    """Runs jobs of one workflow file of the git repository ``repo`` under ``work``."""

    def __init__(
        self,
        repo: Path,
        workflow: str,
        work: Path,
        *,
        host_cuda: str | None,
        extra_env: Mapping[str, str] | None = None,
        overrides: Mapping[str, str] | None = None,
        timeout: float = 1800,
    ) -> None:
        """``extra_env``: added to the runner's environment (under the workflow's ``env``);
        ``overrides``: over the workflow's and jobs' ``env`` (a stand-in for a service this
        host cannot reach, such as torch's index)."""
        self.repo = repo
        self.doc: dict[str, Any] = yaml.safe_load((repo / workflow).read_text(encoding="utf-8"))
        self.workflow = workflow
        self.work = work
        self.host_cuda = host_cuda
        self.extra_env = dict(extra_env or {})
        self.overrides = dict(overrides or {})
        self.timeout = timeout
        self.sha = _git(repo, "rev-parse", "HEAD")
        self.needs: dict[str, dict[str, Any]] = {}  # job id -> {"result", "outputs"}
        self.runs: list[GhaJob] = []
        self.skipped: dict[str, str] = {}

    # --- contexts and environment -------------------------------------------------------

    def github(self, job: str) -> dict[str, Any]:
        return {
            "event_name": "push",
            "event": {"ref": "refs/heads/main", "after": self.sha},
            "ref": "refs/heads/main",
            "ref_name": "main",
            "sha": self.sha,
            "repository": "local/example",
            "repository_owner": "local",
            "workflow": self.doc.get("name", ""),
            "job": job,
            "run_id": "1",
            "run_number": "1",
            "server_url": "https://github.com",
            "workspace": str(self.work / job / "workspace"),
        }

    def contexts(self, job: str, matrix: Mapping[str, Any], state: _JobState) -> dict[str, Any]:
        return {
            "github": self.github(job),
            "env": {**self._declared(self.doc), **state.env},
            "matrix": dict(matrix),
            "needs": self.needs,
            "steps": state.steps,
            "runner": {"os": "Linux", "arch": "X64", "temp": str(state.temp)},
            "inputs": {},
            "secrets": {},
            "vars": {},
        }

    @staticmethod
    def _declared(block: Mapping[str, Any]) -> dict[str, str]:
        return {k: text_of(v) for k, v in (block.get("env") or {}).items()}

    def base_env(self, job: str, state: _JobState) -> dict[str, str]:
        """The host's environment (no PYTHONPATH/VIRTUAL_ENV of the caller) and what GitHub sets."""
        drop = ("PYTHONPATH", "VIRTUAL_ENV", "GITHUB_", "RUNNER_", "ACTIONS_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        github = self.github(job)
        env.update(
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(state.workspace),
            GITHUB_EVENT_NAME=github["event_name"],
            GITHUB_EVENT_PATH=str(state.temp / "_event.json"),
            GITHUB_REF=github["ref"],
            GITHUB_REF_NAME=github["ref_name"],
            GITHUB_REF_TYPE="branch",
            GITHUB_SHA=self.sha,
            GITHUB_REPOSITORY=github["repository"],
            GITHUB_REPOSITORY_OWNER=github["repository_owner"],
            GITHUB_WORKFLOW=github["workflow"],
            GITHUB_JOB=job,
            GITHUB_RUN_ID="1",
            GITHUB_RUN_NUMBER="1",
            GITHUB_RUN_ATTEMPT="1",
            GITHUB_SERVER_URL="https://github.com",
            GITHUB_API_URL="https://api.github.com",
            RUNNER_OS="Linux",
            RUNNER_ARCH="X64",
            RUNNER_NAME="cuship-stand-in",
            RUNNER_TEMP=str(state.temp),
            RUNNER_TOOL_CACHE=str(self.work / "toolcache"),
            TMPDIR=str(state.temp),
        )
        return env | self.extra_env

    # --- jobs -----------------------------------------------------------------------------

    def run(self, jobs: tuple[str, ...]) -> None:
        """Run ``jobs`` (ids) in the workflow's order, each once its ``needs`` ended; every other
        job is listed with the rule that keeps it out (its ``if:``, a self-hosted runner) or as
        not asked for."""
        for job_id, job in self.doc["jobs"].items():
            if job_id in jobs:
                self._run_job(job_id, job)
                continue
            why = self._blocked(job_id, job) or "not asked for in this run"
            self.skipped[job_id] = why
            self.needs[job_id] = {"result": "skipped", "outputs": {}}

    def _blocked(self, job_id: str, job: Mapping[str, Any]) -> str | None:
        needs = job.get("needs") or []
        for need in [needs] if isinstance(needs, str) else needs:
            result = self.needs.get(need, {}).get("result")
            if result != "success":
                return f"not run: needs {need}, which ended {result or 'unrun'}"
        labels = job.get("runs-on") or []
        labels = [labels] if isinstance(labels, str) else labels
        if "self-hosted" in labels:
            return f"runs on self-hosted runners labelled {', '.join(labels)}: no such runner here"
        contexts = self.contexts(job_id, {}, _JobState(self.work, self.work))
        if not condition(job.get("if"), contexts, status="success"):
            return f"its if: ({job['if']}) is false for a push to main"
        return None

    def _matrix(self, job_id: str, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        strategy = job.get("strategy") or {}
        matrix = strategy.get("matrix")
        if matrix is None:
            return [{}]
        contexts = self.contexts(job_id, {}, _JobState(self.work, self.work))
        value = substitute(matrix, contexts) if isinstance(matrix, str) else matrix
        include = value.get("include") if isinstance(value, dict) else None
        if not include or set(value) != {"include"}:
            raise ValueError(f"{job_id}: the stand-in reads a matrix of include entries only")
        return list(include)

    def _run_job(self, job_id: str, job: Mapping[str, Any]) -> None:
        why = self._blocked(job_id, job)
        if why is not None:
            self.skipped[job_id] = why
            self.needs[job_id] = {"result": "skipped", "outputs": {}}
            return
        results: list[str] = []
        outputs: dict[str, str] = {}
        for index, entry in enumerate(self._matrix(job_id, job)):
            shard = f"{job_id}-{index}" if entry else job_id
            name = text_of(substitute(str(job.get("name", job_id)), {"matrix": entry}))
            image_why = self._container_rule(job, entry)
            if image_why is not None:
                self.skipped[name] = image_why
                continue
            run, outputs = self._run_shard(shard, name, job, entry)
            self.runs.append(run)
            results.append("success" if run.exit_code == 0 else "failure")
        result = "skipped" if not results else "success"
        if "failure" in results:
            result = "failure"
        self.needs[job_id] = {"result": result, "outputs": outputs}

    def _container_rule(self, job: Mapping[str, Any], entry: Mapping[str, Any]) -> str | None:
        container = job.get("container")
        if container is None:
            return None
        cuda = text_of(entry.get("cuda", ""))
        image = text_of(substitute(str(container.get("image", "")), {"matrix": dict(entry)}))
        if self.host_cuda and cuda.startswith(self.host_cuda + "."):
            return None
        return f"container {image}: its CUDA {cuda} is not this host's nvcc ({self.host_cuda})"

    def _run_shard(
        self, shard: str, name: str, job: Mapping[str, Any], entry: Mapping[str, Any]
    ) -> tuple[GhaJob, dict[str, str]]:
        root = self.work / shard
        state = _JobState(workspace=root / "workspace", temp=root / "temp")
        state.workspace.mkdir(parents=True)
        state.temp.mkdir(parents=True)
        (state.temp / "_event.json").write_text(json.dumps(self.github(shard)["event"]))
        start = time.monotonic()
        steps = [
            self._step(shard, index, step, job, entry, state)
            for index, step in enumerate(job.get("steps") or [])
        ]
        contexts = self.contexts(shard, entry, state)
        outputs = {
            k: text_of(substitute(str(v), contexts)) for k, v in (job.get("outputs") or {}).items()
        }
        code = 0 if state.status == "success" else 1
        shutil.rmtree(root, ignore_errors=True)  # its venv and workspace; artifacts are kept
        tail = "\n".join(state.log)[-20000:]
        run = GhaJob(
            name=name,
            exit_code=code,
            seconds=time.monotonic() - start,
            steps=tuple(steps),
            tail=tail,
        )
        return run, outputs

    # --- steps ----------------------------------------------------------------------------

    def _step(
        self,
        job_id: str,
        index: int,
        step: Mapping[str, Any],
        job: Mapping[str, Any],
        entry: Mapping[str, Any],
        state: _JobState,
    ) -> GhaStep:
        name = str(step.get("name") or step.get("uses") or step.get("run", "")).splitlines()[0]
        contexts = self.contexts(job_id, entry, state)
        name = text_of(substitute(name, contexts))
        if not condition(step.get("if"), contexts, status=state.status):
            return GhaStep(name=name, exit_code=None, seconds=0.0)
        start = time.monotonic()
        env = self._step_env(job_id, job, step, contexts, state)
        files = {n: state.temp / f"_{n.lower()}_{index}" for n in ("GITHUB_ENV", "GITHUB_OUTPUT")}
        files["GITHUB_PATH"] = state.temp / f"_path_{index}"
        files["GITHUB_STEP_SUMMARY"] = state.temp / f"_summary_{index}"
        for path in files.values():
            path.touch()
        env |= {n: str(p) for n, p in files.items()}
        if "uses" in step:
            code = self._action(str(step["uses"]), step, contexts, env, state)
        else:
            code = self._script(index, text_of(substitute(str(step["run"]), contexts)), env, state)
        self._read_files(step, files, state)
        state.log.append(f"[{name}] exit {code}")
        if code != 0:
            state.status = "failure"
        return GhaStep(name=name, exit_code=code, seconds=time.monotonic() - start)

    def _step_env(
        self,
        job_id: str,
        job: Mapping[str, Any],
        step: Mapping[str, Any],
        contexts: Mapping[str, Any],
        state: _JobState,
    ) -> dict[str, str]:
        env = self.base_env(job_id, state)
        for block in (self.doc, job):
            env |= {k: text_of(substitute(v, contexts)) for k, v in self._declared(block).items()}
        env |= self.overrides
        env |= state.env  # GITHUB_ENV over the job's and workflow's env
        env |= {k: text_of(substitute(v, contexts)) for k, v in self._declared(step).items()}
        if state.path:
            env["PATH"] = os.pathsep.join([*reversed(state.path), env.get("PATH", "")])
        return env

    def _read_files(
        self, step: Mapping[str, Any], files: Mapping[str, Path], state: _JobState
    ) -> None:
        state.env |= read_command_file(files["GITHUB_ENV"].read_text(encoding="utf-8"))
        outputs = read_command_file(files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))
        if "id" in step:
            state.steps[str(step["id"])] = {"outputs": outputs}
        added = files["GITHUB_PATH"].read_text(encoding="utf-8").splitlines()
        state.path += [line for line in added if line.strip()]
        summary = files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8")
        if summary:
            state.log.append(f"(step summary: {len(summary)} characters)")

    def _script(self, index: int, script: str, env: Mapping[str, str], state: _JobState) -> int:
        path = state.temp / f"_step_{index}.sh"
        path.write_text(script, encoding="utf-8")
        try:
            done = subprocess.run(
                ["bash", "-e", str(path)],
                cwd=state.workspace,
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            state.log.append(f"timed out after {self.timeout} s")
            return 124
        state.log.append((done.stdout + done.stderr)[-4000:])
        return done.returncode

    # --- actions ---------------------------------------------------------------------------

    def _action(
        self,
        uses: str,
        step: Mapping[str, Any],
        contexts: Mapping[str, Any],
        env: Mapping[str, str],
        state: _JobState,
    ) -> int:
        action = uses.split("@", 1)[0]
        given = {
            k: text_of(substitute(str(v), contexts)) for k, v in (step.get("with") or {}).items()
        }
        if action == "actions/checkout":
            _git(self.repo, "clone", "-q", str(self.repo), str(state.workspace))
            return 0
        if action == "astral-sh/setup-uv":
            return self._on_path(shutil.which("uv"), state)
        if action == "actions/setup-python":
            return self._on_path(sys.executable, state)
        if action == "mozilla-actions/sccache-action":
            state.env["SCCACHE_GHA_ENABLED"] = "false"
            return self._on_path(shutil.which("sccache"), state)
        if action == "actions/upload-artifact":
            return self._upload(given, state)
        if action == "actions/download-artifact":
            return self._download(given, state)
        state.log.append(f"{uses}: no stand-in for this action")
        return 1

    @staticmethod
    def _on_path(program: str | None, state: _JobState) -> int:
        if program is None:
            state.log.append("the program this action sets up is not on this host")
            return 1
        state.path.append(str(Path(program).parent))
        return 0

    def _upload(self, given: Mapping[str, str], state: _JobState) -> int:
        dest = self.work / "artifacts" / given["name"]
        found = [
            p.relative_to(state.workspace)
            for line in given["path"].splitlines()
            if line.strip()
            for p in sorted(state.workspace.glob(line.strip()))
        ]
        if not found and given.get("if-no-files-found", "warn") == "error":
            state.log.append(f"upload {given['name']}: no files match {given['path']!r}")
            return 1
        dest.mkdir(parents=True, exist_ok=True)
        for rel in found:
            source = state.workspace / rel
            if source.is_file():
                shutil.copy2(source, dest / rel.name)
            else:
                shutil.copytree(source, dest / rel.name, dirs_exist_ok=True)
        return 0

    def _download(self, given: Mapping[str, str], state: _JobState) -> int:
        store = self.work / "artifacts"
        path = state.workspace / given.get("path", ".")
        names = (
            [given["name"]]
            if "name" in given
            else [p.name for p in sorted(store.glob(given.get("pattern", "*")))]
        )
        for name in names:
            if not (store / name).is_dir():
                state.log.append(f"download {name}: no such artifact")
                return 1
            target = (
                path if "name" in given or given.get("merge-multiple") == "true" else path / name
            )
            shutil.copytree(store / name, target, dirs_exist_ok=True)
        return 0


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def iter_failed(runs: list[GhaJob]) -> Iterator[tuple[str, str | None]]:
    for run in runs:
        if run.exit_code != 0:
            yield run.name, run.failed_step
