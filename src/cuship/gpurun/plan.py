"""The plan of a GPU run, pure: how the chosen wheel is installed and which stage runs how.

Every stage runs with the interpreter the wheel was installed for, as a subprocess with the
project as working directory and :data:`STAGE_ENV` on top of the caller's environment:

- ``TRITON_INTERPRET=0``, ``NUMBA_ENABLE_CUDASIM=0``: the CPU interpreters/simulators are off,
  whatever the shell exported (a GPU run that silently interprets is not a GPU run);
- ``PYTHONSAFEPATH=1`` (Python 3.11+): ``python -m`` does not put the working directory, the
  project, first on ``sys.path``, where a flat-layout package would shadow the installed one.

pytest runs with ``--import-mode=append`` (test files and conftest.py put their directories
at the end of ``sys.path``: helpers such as ``tests/references.py`` still import, but a
flat-layout package at the project root comes after the installed one), ``-o pythonpath=``
(an ini ``pythonpath = ["src"]`` is undone) and ``-p no:cacheprovider`` (nothing written into
the checkout); ``[ci] pytest_args`` come last and may override any of these.
``cuship check``/``bench`` run with ``--installed`` (``[check]``/``[bench] pythonpath``
directories holding the package are left off ``sys.path``, and a module imported from
elsewhere fails the run). What each process really imported is verified after the run.
``check-ptx`` runs the quick check again with ``--force-ptx`` (the extension's PTX, JIT-compiled
by the driver under ``CUDA_FORCE_PTX_JIT=1``), unless the wheel carries no PTX.
The ``sanitize`` stage runs the quick check again under compute-sanitizer's four tools
(``cuship check --sanitize``); it is skipped when the GPU is faked (``CUSHIP_GPUS``: the tools
need a real one) or with ``--skip-sanitize``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cuship import settings
from cuship.config import Config
from cuship.errors import ConfigError
from cuship.machine.interpreter import Interpreter
from cuship.machine.sites import layer_text
from cuship.resolve.model import WheelFacts

__all__ = [
    "STAGE_ENV",
    "Inside",
    "InstallPlan",
    "ProjectFacts",
    "StagePlan",
    "plan_install",
    "plan_stages",
    "project_facts",
    "stage_env",
]

STAGE_ENV: Mapping[str, str] = {
    "TRITON_INTERPRET": "0",
    "NUMBA_ENABLE_CUDASIM": "0",
    "PYTHONSAFEPATH": "1",
}
_PIP = ("-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check")
LAYER_PTH = "_cuship_gpu_run_layer.pth"

StageName = Literal["pytest", "check", "check-ptx", "sanitize", "bench"]
SANITIZE_TOOLS = "memcheck,racecheck,initcheck,synccheck"
_NO_CHECK = "no [check] modules configured"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectFacts:
    """What the run needs from the project's configuration."""

    root: Path
    name: str
    pytest_args: tuple[str, ...] = ()
    check: bool = False  # [check] modules are configured
    bench: bool = False  # [bench] modules are configured and [ci] bench is on


def project_facts(config: Config) -> ProjectFacts:
    """From a loaded config; a project without a distribution name is a :class:`ConfigError`."""
    name = config.project.name
    if not name:
        raise ConfigError(
            str(config.source),
            "project.name",
            "no distribution name: gpu-run needs it to find the installed wheel",
            hint="set [project] name in pyproject.toml",
        )
    return ProjectFacts(
        root=config.root,
        name=name,
        pytest_args=config.ci.pytest_args,
        check=bool(config.check.modules),
        bench=bool(config.bench.modules) and config.ci.bench,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Inside:
    """What cuship reported from inside an interpreter (:mod:`cuship.gpurun._inside`): the
    interpreter (the one probe's record), its torch (``version``, ``cxx11abi``), where a venv of
    it at the directory asked keeps packages, and the installed distribution asked for."""

    interpreter: Interpreter
    torch: Mapping[str, Any] | None = None
    venv_purelib: str | None = None
    dist: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallPlan:
    """How the wheel gets installed: commands in order, and a ``.pth`` file to write."""

    mode: Literal["venv", "in-place"]
    python: str  # the interpreter every stage runs with
    commands: tuple[tuple[str, ...], ...]
    venv: Path | None = None
    layer: tuple[Path, str] | None = None  # (path, text) written after the venv is made

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "python": self.python,
            "venv": None if self.venv is None else str(self.venv),
            "commands": [list(c) for c in self.commands],
            "layer": None if self.layer is None else str(self.layer[0]),
        }


def plan_install(
    wheel: Path, inside: Inside, *, in_place: bool, venv: Path | None = None
) -> InstallPlan:
    """Install ``wheel`` (no dependencies: they are checked, not fetched) into ``base`` itself
    (``in_place``) or into a fresh venv at ``venv`` that sees what ``base`` sees: its site
    directories, layered by a ``.pth`` file (:mod:`cuship.machine.sites`; a venv of a venv
    given ``--system-site-packages`` would see the base Python's instead)."""
    base = inside.interpreter
    if in_place:
        command = (base.executable, *_PIP, "--force-reinstall", str(wheel))
        return InstallPlan(mode="in-place", python=base.executable, commands=(command,))
    if venv is None or inside.venv_purelib is None:
        raise ValueError("a venv install needs the venv directory and its purelib")
    python = str(venv / "bin" / "python")
    make = [base.executable, "-m", "venv", "--clear"]
    layer = None
    if base.site:
        layer = (Path(inside.venv_purelib) / LAYER_PTH, layer_text(base.site))
    else:  # a probe that named no site directory: the base interpreter's, as venv gives them
        make.append("--system-site-packages")
    if base.has("pip"):
        make.append("--without-pip")  # pip comes from the base through the layer
    install = (python, *_PIP, "--ignore-installed", str(wheel))
    return InstallPlan(
        mode="venv",
        python=python,
        commands=((*make, str(venv)), install),
        venv=venv,
        layer=layer,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class StagePlan:
    """One stage: the command, the environment it adds, its log and the files it writes."""

    name: StageName
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    log: Path
    outputs: tuple[Path, ...] = ()
    skipped: str | None = None  # why the stage does not run
    extra: Mapping[str, Path] = field(default_factory=dict)  # stage-specific files

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "command": list(self.argv),
            "env": dict(self.env),
            "cwd": str(self.cwd),
            "log": str(self.log),
            "outputs": [str(p) for p in self.outputs],
            "skipped": self.skipped,
        }


def stage_env(results: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """:data:`STAGE_ENV`, plus the results store in the results directory unless one is set."""
    env = dict(STAGE_ENV)
    if settings.STORE not in environ:
        env[settings.STORE] = str(results / "results.db")
    return env


def _pytest(project: ProjectFacts, python: str, results: Path, env: Mapping[str, str]) -> StagePlan:
    junit, origins = results / "pytest.xml", results / "pytest-origins.jsonl"
    argv = (
        python, "-m", "pytest", "--require-gpu",
        "--import-mode=append", "-o", "pythonpath=", "-p", "no:cacheprovider",
        "-p", "cuship.gpurun.origins",
        f"--cuship-origins={origins}", f"--cuship-origins-dist={project.name}",
        f"--junitxml={junit}",
        *project.pytest_args,
    )  # fmt: skip
    return StagePlan(
        name="pytest",
        argv=argv,
        env=env,
        cwd=project.root,
        log=results / "pytest.log",
        outputs=(junit,),
        extra={"origins": origins},
    )


def _check_stage(
    name: StageName,
    flags: tuple[str, ...],
    project: ProjectFacts,
    python: str,
    results: Path,
    env: Mapping[str, str],
    skipped: str | None,
) -> StagePlan:
    """``cuship check --installed --device cuda FLAGS`` writing ``NAME.json`` (and ``NAME.xml``
    rendered from it after the run)."""
    report, junit = results / f"{name}.json", results / f"{name}.xml"
    argv: tuple[str, ...] = (python, "-m", "cuship", "check", str(project.root), "--installed")
    argv += ("--device", "cuda", *flags, "--format", "json", "-o", str(report))
    return StagePlan(
        name=name,
        argv=argv,
        env=env,
        cwd=project.root,
        log=results / f"{name}.log",
        outputs=(report, junit),
        extra={"json": report, "junit": junit},
        skipped=skipped,
    )


def _ptx_skip(project: ProjectFacts, wheel: WheelFacts | None, skip: bool) -> str | None:
    if skip:
        return "--skip-ptx"
    if not project.check:
        return _NO_CHECK
    if wheel is not None and not (wheel.sass or wheel.ptx):
        return "the wheel has no CUDA device code: no PTX to run"
    if wheel is not None and not wheel.ptx:
        return (
            "the wheel carries no PTX (SASS only): nothing for the driver to JIT; "
            "add +PTX to an arch in [matrix] arch to ship and test that path"
        )
    return None


def _bench(
    project: ProjectFacts,
    python: str,
    results: Path,
    env: Mapping[str, str],
    skip: bool,
    profile: str | None = None,
) -> StagePlan:
    out = results / "bench"
    argv: tuple[str, ...] = (python, "-m", "cuship", "bench", str(project.root))
    argv += (
        "--timer",
        "cuda",
        "--assert-floors",
        "--installed",
        "--export",
        "json",
        "-o",
        str(out),
    )
    if profile is not None:  # --profile ncu: after the timing, each point once under ncu
        argv += ("--profile", profile)
    reason = None
    if skip:
        reason = "--skip-bench"
    elif not project.bench:
        reason = "no [bench] modules configured, or [ci] bench = false"
    return StagePlan(
        name="bench",
        argv=argv,
        env=env,
        cwd=project.root,
        log=results / "bench.log",
        outputs=(out,),
        skipped=reason,
    )


def plan_stages(
    project: ProjectFacts,
    python: str,
    results: Path,
    *,
    environ: Mapping[str, str],
    skip_bench: bool = False,
    profile: str | None = None,
    skip_sanitize: bool = False,
    gpu_faked: bool = False,
    skip_ptx: bool = False,
    wheel: WheelFacts | None = None,
) -> tuple[StagePlan, ...]:
    """pytest, check, check-ptx, sanitize and bench for ``project`` with interpreter ``python``
    (pure); ``profile`` ("ncu") is passed to the bench stage as ``--profile``.

    ``wheel``: what the chosen wheel carries; check-ptx is skipped for a wheel without PTX.
    """
    env = stage_env(results, environ)
    facts = (project, python, results, env)
    ptx_skip = _ptx_skip(project, wheel, skip_ptx)
    no_sanitize = None
    if not project.check:
        no_sanitize = _NO_CHECK
    elif skip_sanitize:
        no_sanitize = "--skip-sanitize"
    elif gpu_faked:
        no_sanitize = "the GPU is faked (CUSHIP_GPUS): compute-sanitizer needs a real one"
    return (
        _pytest(project, python, results, env),
        _check_stage("check", (), *facts, None if project.check else _NO_CHECK),
        # The quick check again from the extension's PTX, JIT-compiled (exit 3 when no GPU
        # here can JIT the wheel's PTX), then under compute-sanitizer's tools.
        _check_stage("check-ptx", ("--quick", "--force-ptx"), *facts, ptx_skip),
        _check_stage("sanitize", ("--quick", "--sanitize", SANITIZE_TOOLS), *facts, no_sanitize),
        _bench(project, python, results, env, skip_bench, profile),
    )
