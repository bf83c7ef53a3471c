"""Turn a :class:`~cuship.matrix.BuildJob` into a :class:`BuildPlan`: exact commands and environment.

Pure: it reads a host description (:class:`Host`) and the config, never the machine. Whether this
host can build a job locally is decided here too, with the reason when it cannot.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

from packaging.version import InvalidVersion, Version

from cuship import settings
from cuship.arch import ArchSpec
from cuship.builder.archflags import arch_control, shim_env, shim_step, wheels_env, wheels_step
from cuship.builder.buildenv import (
    BuildEnv,
    build_env,
    env_of,
    env_site,
    through_pip,
    torch_key,
)
from cuship.builder.container import container_steps
from cuship.builder.glibc import glibc_floor
from cuship.builder.host.interpreters import Interpreter
from cuship.builder.model import (
    BuildDir,
    BuildPlan,
    Host,
    Mode,
    Step,
    job_deps,
    job_env,
    names_torch,
    opens_gate,
    user_env,
    wheel_step,
)
from cuship.builder.reuse import REPAIRS, plan_build_dir, with_build_dir
from cuship.builder.run import shared
from cuship.builder.toolkits import choose_toolkit
from cuship.builder.uptodate import inputs_digest
from cuship.config import Config
from cuship.config.script import gate_env
from cuship.matrix import BuildJob
from cuship.wheel.names import CPU_LABEL

__all__ = ["MODES", "ModeSteps", "plan_cpu", "plan_job"]


def _local_blocker(job: BuildJob, host: Host, note: str | None = None) -> str | None:
    """Why ``host`` cannot build ``job``; ``note`` says where a missing toolkit would come from."""
    also = f" ({note})" if note else ""
    if host.interpreter(job.python) is None:
        return host.no_python(job.python)
    if job.cpu:  # no device code: any host with the Python builds it
        return None
    if host.nvcc is None or host.cuda is None:
        return f"needs nvcc; none found (set CUDA_HOME or put nvcc on PATH){also}"
    try:
        have = Version(host.cuda)
    except InvalidVersion:
        return f"cannot read this host's CUDA version {host.cuda!r}"
    if (have.major, have.minor) != (job.cuda.major, job.cuda.minor):
        return (
            f"needs CUDA {job.cuda.major}.{job.cuda.minor}; this host has "
            f"{have.major}.{have.minor}{also}"
        )
    return None


def _post_steps(job: BuildJob, config: Config) -> tuple[Step, ...]:
    steps = [
        Step(name="repair", description="auditwheel repair, excluding CUDA and torch libraries"),
        Step(name="retag", description=f"add the local label +{job.label}"),
        Step(
            name="verify",
            description="check it holds no device code, and the label"
            if job.cpu
            else f"check SASS/PTX for {job.arch.torch} and the label",
        ),
    ]
    if config.build.test_import:
        steps.append(
            Step(name="smoke", description=f"import {config.build.test_import} in a fresh venv")
        )
    return tuple(steps)


def _installs_torch(config: Config) -> bool:
    """Whether the build installs the job's torch itself (torch among ``[build] extra_deps``)."""
    return names_torch(config.build.extra_deps)


def _torch_blocker(job: BuildJob, config: Config, host: Host) -> str | None:
    """A job for torch X.Y of a project that builds against torch (torch in its build-system
    requires) uses the torch in its build environment: the host's own unless cuship installs X.Y
    first, so the host's must then be X.Y. A project that does not build against torch builds
    any torch's job (its torch axis collapses once the first wheel shows it links no torch)."""
    if _installs_torch(config) or not names_torch(config.build_requires):
        return None
    python = host.interpreter(job.python)
    if python is not None and not python.running:  # its build venv has no torch of the host's
        return (
            f"needs torch to build against in its Python {job.python} build env "
            "(add torch to [build] extra_deps and cuship installs each job's)"
        )
    if job.torch is None:
        return None
    want = f"{job.torch.major}.{job.torch.minor}"
    try:
        have = Version(host.torch) if host.torch else None
    except InvalidVersion:
        have = None
    if have is not None and (have.major, have.minor) == (job.torch.major, job.torch.minor):
        return None
    found = f"this host has torch {host.torch}" if host.torch else "this host has no torch"
    return (
        f"needs torch {want} to build against; {found} "
        "(add torch to [build] extra_deps and cuship installs each job's)"
    )


def _deps_steps(
    job: BuildJob, config: Config, python: str, host: Host, raw_dir: Path
) -> tuple[Step, ...]:
    """Install the job's build dependencies; a job that installs its own torch first downloads
    them once into the host's wheel cache (every output directory shares it; the download is
    told as it grows) and installs from there."""
    deps = job_deps(job, config, config.build.extra_deps)
    if not deps:
        return ()
    install = Step(
        name="build-deps",
        description="install build dependencies",
        argv=(python, "-m", "pip", "install", *deps),
    )
    if host.wheel_cache is None or job.torch_version is None or not names_torch(deps):
        return (install,)
    cache = host.wheel_cache
    key = hashlib.sha256("\0".join((job.python_tag, *deps)).encode()).hexdigest()[:16]
    download = Step(
        name="torch-download",
        description=f"download torch {job.torch_version} ({job.torch_variant}) and the other "
        f"build dependencies once, into {cache}",
        argv=(python, "-m", "pip", "download", "--dest", cache, *deps),
        creates=str(Path(cache) / f".cuship-{key}"),
        stamp=True,
        watch=(cache, str(raw_dir / "tmp")),
    )
    offline = (python, "-m", "pip", "install", "--no-index", "--find-links", cache, *deps)
    return download, dataclasses.replace(install, argv=offline)


def _build_holds(
    config: Config, exe: str, env_dir: Path | None, deps: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the deps step and the wheel step keep from other jobs built at once (see
    :mod:`~cuship.builder.run.shared`): the env the deps go into, until the wheel is built; the
    source tree of an in-tree build."""
    env = (shared.env_key(env_dir or exe),) if deps else ()
    in_tree = config.requirement is None and shared.builds_in_tree(
        config.build_backend, config.build_dir
    )
    source = (shared.source_key(config.source_dir),) if in_tree else ()
    return env, (*env, *source)


def _local_steps(job: BuildJob, config: Config, host: Host, raw_dir: Path) -> ModeSteps:
    toolkit = choose_toolkit(job, config.build, host)
    tmp = {"TMPDIR": str(raw_dir / "tmp")}
    env = {**user_env(job, config), **job_env(job, config.build, toolkit.host), **tmp}
    shim = _shim(job, config, toolkit.host, raw_dir)
    if shim is not None:
        env.update(shim_env(raw_dir))
    python = host.interpreter(job.python)
    none: BuildEnv = ((), f"python{job.python}", None)  # not found: shown by --dry-run only
    runner = host.python_exe
    torch = torch_key(job, config)
    setup, exe, env_dir = (
        build_env(config, python, raw_dir.parent.parent, runner, torch) if python else none
    )
    deps = _deps_steps(job, config, exe, host, raw_dir)
    deps_holds, wheel_holds = _build_holds(config, exe, env_dir, bool(deps))
    check = _torch_check(job, runner, env_dir, python) if torch else None
    wheels = None
    if torch and env_dir is not None and python is not None and not job.cpu:
        wheels = wheels_step(raw_dir, env_site(env_dir, python), runner)
        env.update(wheels_env(raw_dir))
    build = (
        *(dataclasses.replace(step, holds=deps_holds) for step in deps),
        *((dataclasses.replace(check, holds=deps_holds),) if check else ()),
        *((dataclasses.replace(wheels, holds=deps_holds),) if wheels else ()),
        dataclasses.replace(wheel_step(job.id, config, exe, raw_dir), holds=wheel_holds),
    )
    own = (shared.env_key(env_dir),) if env_dir else ()
    steps = (
        *((toolkit.step,) if toolkit.step else ()),
        *((shim,) if shim else ()),
        *(dataclasses.replace(s, env={**s.env, **tmp}, holds=own) for s in setup),
        *(dataclasses.replace(through_pip(s, runner, exe), env={**s.env, **env}) for s in build),
    )
    blocker = _local_blocker(job, toolkit.host, toolkit.note)
    return steps, blocker or _torch_blocker(job, config, host)


def _torch_check(
    job: BuildJob, runner: str, env_dir: Path | None, python: Interpreter | None
) -> Step | None:
    """The step that reads the torch the deps step installed and stops the job unless it is
    the job's build (see :mod:`~cuship.builder.run.torchcheck`)."""
    if env_dir is None or python is None or job.torch_version is None:
        return None
    site = env_site(env_dir, python)
    variant = job.torch_variant or ""
    return Step(
        name="torch-check",
        description=f"check the build env holds torch {job.torch_version} ({variant})",
        argv=(runner, "-m", "cuship.builder.run.torchcheck", site, str(job.torch_version), variant),
    )


def _shim(job: BuildJob, config: Config, host: Host, raw_dir: Path) -> Step | None:
    """The step that puts cuship's nvcc in front of the job's toolkit (see
    :mod:`~cuship.builder.archflags`); None when the project's flags are left alone."""
    if config.build.arch_flags == "project" or not job.arch.targets or host.nvcc is None:
        return None
    home = host.cuda_home or str(Path(host.nvcc).parent.parent)
    return shim_step(job, config, home, raw_dir, host.python_exe)


def _container_steps(job: BuildJob, config: Config, host: Host, raw_dir: Path) -> ModeSteps:
    blocker = None if host.engine else "no container engine (docker or podman) on PATH"
    return container_steps(job, config, host, raw_dir), blocker


ModeSteps = tuple[tuple[Step, ...], str | None]
"""A mode's build commands for one job, and why this host cannot run them (None: it can)."""

MODES: Mapping[Mode, Callable[[BuildJob, Config, Host, Path], ModeSteps]] = {
    "local": _local_steps,
    "container": _container_steps,
}
"""Every build mode and how it plans a job's build commands; repair, label, verify and smoke
follow the same in all of them."""


def _built_against(job: BuildJob, config: Config, host: Host, mode: Mode) -> str | None:
    """The torch a job's wheel builds against: the matrix's, else (a local build without build
    isolation) the host's own; None where cuship cannot know (isolated or container builds)."""
    if job.torch is not None:
        return str(job.torch)
    python = host.interpreter(job.python)
    running = python is not None and python.running
    if mode == "local" and not config.build.isolation and host.torch is not None and running:
        return host.torch
    return None


def plan_job(job: BuildJob, config: Config, host: Host, *, mode: Mode, out_dir: Path) -> BuildPlan:
    """Every step of building ``job`` on ``host`` in ``mode``; pure."""
    raw_dir = out_dir / "raw" / job.id
    log = out_dir / "logs" / f"{job.id}.log"
    steps, blocker = MODES[mode](job, config, host, raw_dir)
    python = host.interpreter(job.python) if mode == "local" else None
    toolkit = f"{host.cuda} python {python.full if python else job.python}"
    env = env_of(python, out_dir, torch_key(job, config)) if mode == "local" else None
    build_dir = _build_dir(job, config, host, python, env, out_dir)
    tree = config.source_dir if config.requirement is None else None
    if build_dir is not None:
        steps = tuple(
            with_build_dir(s, build_dir.path) if s.name == "build-wheel" else s for s in steps
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
        torch=_built_against(job, config, host, mode),
        python=python,
        build_env=env,
        smoke=config.build.smoke,
        glibc_floor=glibc_floor(job, config.build),
        max_jobs=next((int(s.env["MAX_JOBS"]) for s in steps if "MAX_JOBS" in s.env), None),
        arch_control=None
        if job.cpu
        else arch_control(job, config, any(s.name == "arch-flags" for s in steps)),
        inputs=inputs_digest(job.to_json(), config.requirement, steps, toolkit, tree),
        tree=tree,
        build_dir=build_dir,
        repairs=out_dir / REPAIRS / job.id if config.build.incremental else None,
        notes=_notes(job, config),
        gate=_gate(job, config),
    )


def plan_cpu(config: Config, host: Host, *, out_dir: Path, cuda: Version) -> BuildPlan:
    """The one CPU-only job of ``config`` on ``host`` (``[build] cpu_fallback``, a host without
    nvcc), planned as every job is and run by the same runner: one ``pip wheel`` that sees
    ``CUSHIP_CPU_ONLY=1`` (plus ``[build] cpu_env``), its wheel labelled ``+cpu``, held to no
    device code (an empty arch list) and smoke-imported like the CUDA wheels. ``cuda``: the
    toolkit it is nominally of, as a ``device_code = false`` job is of the matrix's first (its
    wheel holds nothing of it). Pure."""
    name = config.project.name or "project"
    version = config.project.version or "0"
    job = BuildJob(
        id=f"{name}-{version}-cp{host.python.replace('.', '')}-{CPU_LABEL}",
        project=name,
        version=version,
        python=host.python,
        cuda=cuda,
        torch=None,
        torch_version=None,
        torch_cuda=None,
        cxx11abi=None,
        arch=ArchSpec(targets=()),
        platform=config.matrix.platform[0] if config.matrix.platform else "linux_x86_64",
        label=CPU_LABEL,
    )
    raw_dir = out_dir / "raw" / job.id
    env = {settings.CPU_ONLY: "1", settings.LOCAL_VERSION: CPU_LABEL, **config.build.cpu_env}
    step = dataclasses.replace(wheel_step(job.id, config, host.python_exe, raw_dir), env=env)
    return BuildPlan(
        job=job,
        mode="local",
        runnable=True,
        reason=None,
        steps=(step,),
        raw_dir=raw_dir,
        out_dir=out_dir,
        log=out_dir / "logs" / f"{job.id}.log",
        test_import=config.build.test_import,
    )


def _gate(job: BuildJob, config: Config) -> tuple[str, ...]:
    """The CUDA-gate switches ``job``'s build sets, as ``NAME=VALUE``."""
    if not opens_gate(job, config):
        return ()
    env = user_env(job, config)
    return tuple(f"{k}={env[k]}" for k in gate_env(config.script) if k in env)


def _notes(job: BuildJob, config: Config) -> tuple[str, ...]:
    """What the plan of ``job`` found out: the default CUDA, the sdist's device code, the
    CUDA gate it opens and why."""
    notes = list(config.found)
    if config.sdist is not None:
        script = config.sdist.script
        read = f"{script.file} read" if script.file else "no setup.py or CMakeLists.txt"
        notes.append(f"built from {config.sdist.archive.name} ({read}, not run)")
    gate = _gate(job, config)
    if gate:
        asks = (
            f"{config.script.file} asks torch.cuda.is_available(), "
            if config.script.cuda_gate
            else ""
        )
        notes.append(
            f"CUDA gate: {' '.join(gate)} ({asks}a torch extension's CUDA sources compile on a "
            "machine without a GPU only so; [build] env sets another value)"
        )
    return tuple(notes)


def _build_dir(
    job: BuildJob,
    config: Config,
    host: Host,
    python: Interpreter | None,
    env: Path | None,
    out_dir: Path,
) -> BuildDir | None:
    """The CMake build directory a local job keeps between its builds, if any."""
    if python is None:
        return None
    return plan_build_dir(
        job.id,
        config,
        out_dir,
        toolkit=f"CUDA {host.cuda} nvcc {host.nvcc} python {python.executable} {python.full}",
        nvcc=host.nvcc,
        sites=(env_site(env, python),) if env else (),
    )
