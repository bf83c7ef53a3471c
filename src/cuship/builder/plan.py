"""Turn a :class:`~cuship.matrix.BuildJob` into a :class:`BuildPlan`: exact commands and environment.

Pure: it reads a host description (:class:`Host`) and the config, never the machine. Whether this
host can build a job locally is decided here too, with the reason when it cannot.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version

from cuship.config import BuildSection, Config
from cuship.machine import Fingerprint
from cuship.matrix import BuildJob

__all__ = [
    "BuildPlan",
    "Host",
    "Step",
    "host_of",
    "job_env",
    "max_jobs",
    "pip_wheel_argv",
    "plan_job",
    "wheel_step",
]

Mode = Literal["local", "container"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """What the planner needs to know about the machine that would run the build."""

    python: str  # "3.11"
    python_exe: str
    nvcc: str | None
    cuda: str | None  # "13.0.88"
    cuda_home: str | None = None
    cpus: int
    memory_available_gib: float | None
    sccache: str | None = None
    engine: str | None = None


def host_of(fp: Fingerprint, *, python_exe: str, sccache: str | None, engine: str | None) -> Host:
    """The planner's view of a fingerprinted machine."""
    return Host(
        python=".".join(fp.python.split(".")[:2]),
        python_exe=python_exe,
        nvcc=fp.toolkit.nvcc if fp.toolkit else None,
        cuda=fp.toolkit.version if fp.toolkit else None,
        cuda_home=fp.toolkit.cuda_home if fp.toolkit else None,
        cpus=fp.cpus,
        memory_available_gib=fp.memory_available_gib,
        sccache=sccache,
        engine=engine,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One thing to do. ``argv`` steps are commands; the others are done by cuship itself."""

    name: str
    description: str
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def shell(self) -> str:
        """The step as one line a person could paste into a shell."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        cmd = shlex.join(self.argv) if self.argv else f"# cuship: {self.description}"
        return f"{env} {cmd}".strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildPlan:
    job: BuildJob
    mode: Mode
    runnable: bool
    reason: str | None
    steps: tuple[Step, ...]
    raw_dir: Path
    out_dir: Path
    log: Path
    test_import: str | None = None


def max_jobs(
    *, cpus: int, available_gib: float | None, per_thread_gib: float, nvcc_threads: int
) -> int:
    """Parallel compile jobs: cores, capped so each nvcc thread gets ``per_thread_gib`` of memory."""
    if available_gib is None:
        return max(1, cpus)
    by_memory = math.floor(available_gib / (per_thread_gib * nvcc_threads))
    return max(1, min(cpus, by_memory))


def job_env(job: BuildJob, build: BuildSection, host: Host) -> dict[str, str]:
    """Environment a job's build sees: arch lists in every spelling, parallelism, compiler cache."""
    jobs = build.max_jobs or max_jobs(
        cpus=host.cpus,
        available_gib=host.memory_available_gib,
        per_thread_gib=build.memory_per_job_gib,
        nvcc_threads=build.nvcc_threads,
    )
    cmake_args = [f"-DCMAKE_CUDA_ARCHITECTURES={job.arch.cmake}"]
    env = {
        "CUSHIP_CUDA_ARCHS": job.arch.cmake,
        "CUDAARCHS": job.arch.cmake,
        "TORCH_CUDA_ARCH_LIST": job.arch.torch,
        "MAX_JOBS": str(jobs),
        "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs),
        "NVCC_THREADS": str(build.nvcc_threads),
        "NVCC_APPEND_FLAGS": f"--threads={build.nvcc_threads}",
        "CUSHIP_LOCAL_VERSION": job.label,
    }
    if host.nvcc:
        env["CUDACXX"] = host.nvcc
        env["CUDA_HOME"] = host.cuda_home or str(Path(host.nvcc).parent.parent)
    if build.cache == "sccache" and host.sccache:
        for lang in ("CUDA", "CXX", "C"):
            cmake_args.append(f"-DCMAKE_{lang}_COMPILER_LAUNCHER={host.sccache}")
            env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = host.sccache
    env["CMAKE_ARGS"] = " ".join(cmake_args)
    return env


def _local_blocker(job: BuildJob, host: Host) -> str | None:
    if job.python != host.python:
        return f"needs Python {job.python}; this host runs {host.python}"
    if host.nvcc is None or host.cuda is None:
        return "needs nvcc; none found (set CUDA_HOME or put nvcc on PATH)"
    try:
        have = Version(host.cuda)
    except InvalidVersion:
        return f"cannot read this host's CUDA version {host.cuda!r}"
    if (have.major, have.minor) != (job.cuda.major, job.cuda.minor):
        return (
            f"needs CUDA {job.cuda.major}.{job.cuda.minor}; this host has {have.major}.{have.minor}"
        )
    return None


def pip_wheel_argv(config: Config, python: str, out: str, source: str) -> list[str]:
    """``pip wheel`` of the project at ``source`` (or its sdist from PyPI for a packages.yml
    entry) into ``out``; the same command on the host and inside a container."""
    build = config.build
    argv = [python, "-m", "pip", "wheel", "--no-deps", "-w", out]
    if not build.isolation:
        argv.append("--no-build-isolation")
    if config.requirement is not None:
        name = config.requirement.split("==")[0]
        argv += [*build.build_args, "--no-binary", name, config.requirement]
    else:
        argv += [*build.build_args, source]
    return argv


def wheel_step(job_id: str, config: Config, python: str, raw_dir: Path) -> Step:
    """The host's ``pip wheel`` step into ``raw_dir``."""
    argv = pip_wheel_argv(config, python, str(raw_dir), str(config.source_dir))
    return Step(
        name="build-wheel", description=f"build the raw wheel of {job_id}", argv=tuple(argv)
    )


def _post_steps(job: BuildJob, config: Config) -> tuple[Step, ...]:
    steps = [
        Step(name="repair", description="auditwheel repair, excluding CUDA and torch libraries"),
        Step(name="retag", description=f"add the local label +{job.label}"),
        Step(name="verify", description=f"check SASS/PTX for {job.arch.torch} and the label"),
    ]
    if config.build.test_import:
        steps.append(
            Step(name="smoke", description=f"import {config.build.test_import} in a fresh venv")
        )
    return tuple(steps)


def _deps_step(job: BuildJob, config: Config, python: str) -> Step | None:
    deps = list(config.build.extra_deps)
    if not deps:
        return None
    argv = [python, "-m", "pip", "install"]
    wants_torch = any(d.split("=")[0].split(">")[0].split("<")[0].strip() == "torch" for d in deps)
    if wants_torch and job.torch_version is not None and job.torch_cuda is not None:
        deps = [d for d in deps if not d.startswith("torch")] + [f"torch=={job.torch_version}"]
        variant = "cu" + job.torch_cuda.replace(".", "")
        argv += ["--extra-index-url", config.build.torch_index.format(variant=variant)]
    return Step(name="build-deps", description="install build dependencies", argv=(*argv, *deps))


def plan_job(job: BuildJob, config: Config, host: Host, *, mode: Mode, out_dir: Path) -> BuildPlan:
    """Every step of building ``job`` on ``host`` in ``mode``; pure."""
    raw_dir = out_dir / "raw" / job.id
    log = out_dir / "logs" / f"{job.id}.log"
    if mode == "container":
        from cuship.builder.container import container_steps

        blocker = None if host.engine else "no container engine (docker or podman) on PATH"
        steps = container_steps(job, config, host, raw_dir)
    else:
        blocker = _local_blocker(job, host)
        env = job_env(job, config.build, host)
        deps = _deps_step(job, config, host.python_exe)
        local = (*((deps,) if deps else ()), wheel_step(job.id, config, host.python_exe, raw_dir))
        steps = tuple(
            Step(name=s.name, description=s.description, argv=s.argv, env=env) for s in local
        )
    return BuildPlan(
        job=job,
        mode=mode,
        runnable=blocker is None,
        reason=blocker,
        steps=(*steps, *_post_steps(job, config)),
        raw_dir=raw_dir,
        out_dir=out_dir,
        log=log,
        test_import=config.build.test_import,
    )
