"""The build planner's vocabulary: the host it plans for, a step, a plan, and the environment and
``pip wheel`` command every mode shares. Pure: nothing here reads the machine or runs anything."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from cuship import settings
from cuship.builder.glibc import GlibcFloor
from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.config import BuildSection, Config
from cuship.config.script import gate_env
from cuship.machine import Fingerprint
from cuship.matrix import BuildJob

__all__ = [
    "BuildDir",
    "BuildPlan",
    "Host",
    "Mode",
    "Step",
    "host_of",
    "job_deps",
    "job_env",
    "max_jobs",
    "names_torch",
    "opens_gate",
    "pip_wheel_argv",
    "requirement_name",
    "share",
    "torch_extension",
    "user_env",
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
    torch: str | None = None  # the installed torch's version ("2.13.0+cpu"), if any
    toolkits_root: str | None = None  # where toolkits from PyPI are cached (cuship toolkit)
    wheel_cache: str | None = None  # where a job's torch is downloaded once for every -o
    # every CPython found for the matrix's Python versions; None: only the running one
    interpreters: Interpreters | None = None
    workers: int = 1  # jobs built at once here: each gets its share of MAX_JOBS

    def interpreter(self, version: str) -> Interpreter | None:
        """The interpreter a job for Python ``version`` builds with, if this host has one."""
        if self.interpreters is not None:
            return self.interpreters.get(version)
        if version != self.python:
            return None
        return Interpreter(
            version=self.python, full=self.python, executable=self.python_exe, source="running"
        )

    def no_python(self, version: str) -> str:
        """Why no local build of a Python ``version`` job can run here."""
        if self.interpreters is None:
            return f"needs Python {version}; this host runs {self.python}"
        return self.interpreters.not_found(version)


def host_of(
    fp: Fingerprint,
    *,
    python_exe: str,
    sccache: str | None,
    engine: str | None,
    interpreters: Interpreters | None = None,
) -> Host:
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
        torch=fp.torch.version if fp.torch else None,
        interpreters=interpreters,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One thing to do. ``argv`` steps are commands; the others are done by cuship itself.

    ``creates``: a path the command makes; when it exists the step is skipped (a build
    environment made by an earlier run is reused). ``stamp``: the command makes no such file,
    cuship writes it once the command succeeded (a marker naming what was done). ``holds``: what
    it uses that no other job built at the same time may use meanwhile (see
    :mod:`cuship.builder.run.shared`)."""

    name: str
    description: str
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    creates: str | None = None
    stamp: bool = False
    holds: tuple[str, ...] = ()
    watch: tuple[str, ...] = ()  # folders whose growth is told while it runs (a download)

    def without_compiler_cache(self) -> Step:
        """The step with no compiler launcher (sccache) in its environment or CMake arguments,
        and with torch's own wrapper turned off."""
        env = {k: v for k, v in self.env.items() if not _is_launcher(k)}
        if "CMAKE_ARGS" in env:
            env["CMAKE_ARGS"] = " ".join(
                arg
                for arg in env["CMAKE_ARGS"].split()
                if not _is_launcher(arg.removeprefix("-D").split("=")[0])
            )
        env[NO_TORCH_WRAPPER] = "1"
        return replace(self, env=env)

    @property
    def uses_compiler_cache(self) -> bool:
        return any(_is_launcher(k) for k in self.env)

    def shell(self) -> str:
        """The step as one line a person could paste into a shell."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        cmd = shlex.join(self.argv) if self.argv else f"# cuship: {self.description}"
        line = f"{env} {cmd}".strip()
        if not self.creates:
            return line
        made = shlex.quote(self.creates)
        return (
            f"test -e {made} || {{ {line} && touch {made}; }}"
            if self.stamp
            else f"test -e {made} || {line}"
        )


# torch's cpp_extension (2.13 on) puts ccache or sccache, whichever PATH has, in front of every
# compile unless this is set: a build with [build] cache = "none" sets it, so that "none" holds
# for torch extensions too (an sccache client that has to start its server under a long TMPDIR
# fails every compile with "path must be shorter than SUN_LEN").
NO_TORCH_WRAPPER = "TORCH_NO_COMPILER_WRAPPER"


REPRODUCIBLE_EPOCH = "315532800"  # 1980-01-01, the earliest time a zip archive can hold


def _is_launcher(name: str) -> bool:
    return name.startswith("CMAKE_") and name.endswith("_COMPILER_LAUNCHER")


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildDir:
    """A job's CMake build directory, kept between its builds (see :mod:`cuship.builder.reuse`):
    where it is, and what the planner knows of its key (the rest is read when the job runs)."""

    path: Path
    toolkit: str  # the CUDA version, nvcc and the Python the job builds with
    tools: tuple[str, ...]  # compilers the planner knows by path (nvcc)
    files: tuple[Path, ...]  # project files whose bytes are part of the key
    sites: tuple[str, ...]  # where the build's packages are (empty: the running interpreter's)
    packages: tuple[str, ...]  # the build's packages whose versions are part of the key


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
    torch: str | None = (
        None  # the torch the wheel builds against, when known (its pin comes from it)
    )
    python: Interpreter | None = None  # the interpreter it builds and smoke-tests with (local)
    build_env: Path | None = None  # the venv of that interpreter it builds in, if not itself
    smoke: Literal["auto", "isolated", "system-site"] = "auto"  # [build] smoke
    glibc_floor: GlibcFloor | None = None  # the manylinux floor its wheel is held to
    max_jobs: int | None = None  # the MAX_JOBS its build sees (local builds)
    arch_control: str | None = None  # how its arch list reaches nvcc (said by --dry-run)
    inputs: str | None = None  # the digest of every input of its wheel, when all can be named
    tree: Path | None = None  # the source tree it builds, whose state its inputs leave out
    build_dir: BuildDir | None = None  # its CMake build directory, reused by a rebuild
    repairs: Path | None = None  # where repairs of raw wheels are kept for a rebuild
    notes: tuple[str, ...] = ()  # what its plan found out rather than was told (--dry-run)
    gate: tuple[str, ...] = ()  # the CUDA-gate switches its build sets ("FORCE_CUDA=1")


def max_jobs(
    *, cpus: int, available_gib: float | None, per_thread_gib: float, nvcc_threads: int
) -> int:
    """Parallel compile jobs: cores, capped so each nvcc thread gets ``per_thread_gib`` of memory."""
    if available_gib is None:
        return max(1, cpus)
    by_memory = math.floor(available_gib / (per_thread_gib * nvcc_threads))
    return max(1, min(cpus, by_memory))


def share(jobs: int, workers: int) -> int:
    """A job's part of ``jobs`` compile jobs when ``workers`` jobs build at once (at least one)."""
    return max(1, jobs // max(1, workers))


def user_env(job: BuildJob, config: Config) -> dict[str, str]:
    """The project's own build switches: ``*_FORCE_BUILD`` named in setup.py set to TRUE (so
    it compiles instead of downloading a prebuilt wheel); for a CUDA job of a torch extension
    the switches that open its CUDA gate on a machine without a GPU (:func:`opens_gate`);
    then ``[build] env`` with the job's fields filled in (it overrides both)."""
    fields = {
        "python": job.python,
        "cuda": f"{job.cuda.major}.{job.cuda.minor}",
        "cuda_major": str(job.cuda.major),
        "torch": f"{job.torch.major}.{job.torch.minor}" if job.torch else "",
        "arch": job.arch.torch,
        "label": job.label,
    }
    env = {name: "TRUE" for name in config.script.force_switches}
    if opens_gate(job, config):
        env.update(gate_env(config.script))
    env.update({k: v.format(**fields) for k, v in config.build.env.items()})
    return env


def torch_extension(config: Config) -> bool:
    """Whether the project builds against torch: its setup.py uses torch's cpp_extension, or
    torch is among its build requirements or ``[build] extra_deps``."""
    return (
        config.script.torch_extension
        or names_torch(config.build_requires)
        or names_torch(config.build.extra_deps)
    )


def opens_gate(job: BuildJob, config: Config) -> bool:
    """Whether ``job`` gets the switches that open a torch extension's CUDA gate (FORCE_CUDA=1
    and the spellings its setup.py names): a CUDA job of a torch extension."""
    return not job.cpu and torch_extension(config)


def requirement_name(requirement: str) -> str:
    """The distribution a requirement string names, lower-cased (``"torch>=2.8"`` → ``torch``)."""
    return re.split(r"[\s=<>!~;\[@]", requirement.strip(), maxsplit=1)[0].lower()


def names_torch(requirements: tuple[str, ...]) -> bool:
    """Whether torch is among ``requirements``."""
    return any(requirement_name(r) == "torch" for r in requirements)


def job_deps(job: BuildJob, config: Config, deps: tuple[str, ...]) -> tuple[str, ...]:
    """``pip install`` arguments for ``deps`` in ``job``'s build: a torch among them becomes the
    job's own build, spelled so that no other can satisfy it: ``torch===2.13.0`` where PyPI's
    own wheel is the job's CUDA build (``===`` matches that exact version string, never a
    ``2.13.0+cpu`` from a local wheel folder), else ``torch==2.8.0+cu126`` from the torch index
    of its CUDA. A job with no torch of its own installs them as written."""
    if job.torch_version is None or job.torch_cuda is None:
        return deps
    if not names_torch(deps):
        return deps
    others = tuple(d for d in deps if requirement_name(d) != "torch")
    if job.torch_on_pypi:
        return (*others, f"torch==={job.torch_version}")
    variant = job.torch_variant or ""
    index = config.build.torch_index.format(variant=variant)
    return ("--extra-index-url", index, *others, f"torch=={job.torch_version}+{variant}")


def job_env(job: BuildJob, build: BuildSection, host: Host) -> dict[str, str]:
    """Environment a job's build sees: arch lists in every spelling, parallelism, compiler cache.

    ``MAX_JOBS`` is derived from the host's cores and memory and divided among the jobs it
    builds at once (``host.workers``); ``[build] max_jobs`` fixes it per job, undivided."""
    jobs = build.max_jobs or share(
        max_jobs(
            cpus=host.cpus,
            available_gib=host.memory_available_gib,
            per_thread_gib=build.memory_per_job_gib,
            nvcc_threads=build.nvcc_threads,
        ),
        host.workers,
    )
    cmake_args = [f"-DCMAKE_CUDA_ARCHITECTURES={job.arch.cmake}"]
    env = {
        settings.CUDA_ARCHS: job.arch.cmake,
        "CUDAARCHS": job.arch.cmake,
        "TORCH_CUDA_ARCH_LIST": job.arch.torch,
        "MAX_JOBS": str(jobs),
        "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs),
        "NVCC_THREADS": str(build.nvcc_threads),
        "NVCC_APPEND_FLAGS": f"--threads={build.nvcc_threads}",
        settings.LOCAL_VERSION: job.label,
        # archive timestamps fixed (setuptools, wheel, auditwheel): a rebuild of the same
        # inputs gives the same bytes where the tools allow; [build] env may set another
        "SOURCE_DATE_EPOCH": build.env.get("SOURCE_DATE_EPOCH", REPRODUCIBLE_EPOCH),
    }
    if host.nvcc:
        env["CUDACXX"] = host.nvcc
        env["CUDA_HOME"] = host.cuda_home or str(Path(host.nvcc).parent.parent)
    if build.cache == "sccache" and host.sccache:
        for lang in ("CUDA", "CXX", "C"):
            cmake_args.append(f"-DCMAKE_{lang}_COMPILER_LAUNCHER={host.sccache}")
            env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = host.sccache
    else:
        env[NO_TORCH_WRAPPER] = "1"
    env["CMAKE_ARGS"] = " ".join(cmake_args)
    return env


def pip_wheel_argv(
    config: Config, python: str, out: str, source: str, *, local: bool = False
) -> list[str]:
    """``pip wheel`` of the project at ``source`` (or its sdist from PyPI for a packages.yml
    entry) into ``out``; the same command on the host and inside a container. ``local``: on
    the host, a packages.yml entry builds the sdist file cuship fetched and read."""
    build = config.build
    argv = [python, "-m", "pip", "wheel", "--no-deps", "-w", out]
    if not build.isolation:
        argv.append("--no-build-isolation")
    if local and config.sdist is not None:
        argv += ["--no-cache-dir", *build.build_args, str(config.sdist.archive)]
    elif config.requirement is not None:
        # no pip wheel cache: a wheel it built for other inputs (another arch list) is stale
        name = config.requirement.split("==")[0]
        argv += ["--no-cache-dir", *build.build_args, "--no-binary", name, config.requirement]
    else:
        argv += [*build.build_args, source]
    return argv


def wheel_step(job_id: str, config: Config, python: str, raw_dir: Path) -> Step:
    """The host's ``pip wheel`` step into ``raw_dir``."""
    argv = pip_wheel_argv(config, python, str(raw_dir), str(config.source_dir), local=True)
    return Step(
        name="build-wheel", description=f"build the raw wheel of {job_id}", argv=tuple(argv)
    )
