"""The environment a job builds in when its interpreter is not the one cuship runs in (pure).

The running interpreter builds as it always has: in itself (``[build] isolation = false`` takes
the build requirements from cuship's own environment, e.g. ``cuship[build]``). Another
interpreter (pyenv's 3.12, a uv-managed 3.13) has none of them, and cuship must not install
into it; so each gets a venv of its own under the output directory, ``<out>/envs/cp312-<key>``
(the key: the interpreter's path and version), made once and reused by later runs:

- ``isolation = false``: the project's build-system requirements are installed into it (torch
  excepted: a job's torch comes from ``[build] extra_deps``, installed by the deps step), and
  ``pip wheel --no-build-isolation`` runs from it;
- ``isolation = true``: it holds only ``extra_deps``; pip makes an isolated build environment
  per build, as it does for the running interpreter.

A job that installs its own torch (torch among ``[build] extra_deps``) always builds in a venv,
the running interpreter's jobs too, one per torch build (``cp311-<key>-torch2.13.0-cu130``): a
torch installed for one job is never another job's, and never lands in cuship's own
environment. The deps step spells that torch so nothing else satisfies it
(:func:`~cuship.builder.model.job_deps`), and the ``torch-check`` step reads what was installed
from torch's files before anything compiles.

The venv is made ``--without-pip`` (ensurepip takes ~10 s on two cores): the running
interpreter's pip acts on it with ``--python`` (see :func:`pip_prefix`). Its build
requirements are installed once: a marker ``.cuship-deps-<digest of the pip command>`` in the
venv skips the step for later builds that would install the same (pip would find them
satisfied, after seconds of start-up).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from cuship.builder.host.interpreters import Interpreter
from cuship.builder.model import Step, names_torch, requirement_name
from cuship.config import Config
from cuship.matrix import BuildJob

__all__ = [
    "BuildEnv",
    "build_env",
    "env_dir",
    "env_of",
    "env_requirements",
    "env_site",
    "pip_prefix",
    "through_pip",
    "torch_key",
]

_PIP = ("-m", "pip", "install", "--disable-pip-version-check", "--no-input")


def torch_key(job: BuildJob, config: Config) -> str | None:
    """``torch2.13.0-cu130`` for a job that installs its own torch build; None otherwise."""
    if job.torch_version is None or not names_torch(config.build.extra_deps):
        return None
    return f"torch{job.torch_version}-{job.torch_variant}"


def env_dir(out_dir: Path, python: Interpreter, torch: str | None = None) -> Path:
    """Where the build venv of ``python`` (holding the ``torch`` build, if any) lives."""
    key = hashlib.sha256(f"{python.executable}\0{python.full}".encode()).hexdigest()[:10]
    return out_dir / "envs" / "-".join(filter(None, (python.tag, key, torch)))


def env_of(python: Interpreter | None, out_dir: Path, torch: str | None = None) -> Path | None:
    """The build venv a job of ``python`` uses under ``out_dir``; None: it builds in ``python``."""
    if python is None or (python.running and torch is None):
        return None
    return env_dir(out_dir, python, torch)


def env_site(env: Path, python: Interpreter) -> str:
    """The site-packages of the build venv ``env`` of ``python`` (the POSIX venv layout)."""
    return str(env / "lib" / f"python{python.version}" / "site-packages")


def env_requirements(config: Config) -> tuple[str, ...]:
    """What a build venv needs beyond pip: the build-system requirements when the build is
    not isolated, without torch (the job's own torch is installed by the deps step); a
    packages.yml sdist, whose requirements cuship does not read before building, gets what PEP
    517 assumes for a project that declares none, setuptools and wheel."""
    if config.build.isolation:
        return ()
    unread = config.requirement is not None and not config.build_requires
    declared = ("setuptools>=40.8.0", "wheel") if unread else config.build_requires
    return tuple(r for r in declared if requirement_name(r) != "torch")


BuildEnv = tuple[tuple[Step, ...], str, Path | None]
"""(the steps that make the env, the python the build runs, the env's directory or None)."""


def pip_prefix(runner: str, python: str) -> tuple[str, ...]:
    """``pip`` acting on ``python``: its own, or (another interpreter's venv, made without pip)
    the running interpreter's pip with ``--python`` (pip >= 22.3), which runs pip, and so the
    build backend, inside that interpreter; the venv needs no ensurepip (seconds each)."""
    if python == runner:
        return (python, "-m", "pip")
    return (runner, "-m", "pip", "--python", python)


def through_pip(step: Step, runner: str, python: str) -> Step:
    """``step`` (``python -m pip …``) run by :func:`pip_prefix`'s pip."""
    if step.argv[:3] != (python, "-m", "pip"):
        return step
    return dataclasses.replace(step, argv=(*pip_prefix(runner, python), *step.argv[3:]))


def build_env(
    config: Config, python: Interpreter, out_dir: Path, runner: str, torch: str | None = None
) -> BuildEnv:
    """The steps that make (or reuse) the build venv of ``python``; nothing for the running one
    unless the job installs its own ``torch`` build (see :func:`torch_key`).

    ``runner``: the running interpreter, whose pip installs into the venv (see :func:`pip_prefix`).
    """
    if python.running and torch is None:
        return (), python.executable, None
    env = env_dir(out_dir, python, torch)
    env_python = str(env / "bin" / "python")
    steps = [
        Step(
            name="build-env",
            description=f"a build venv of Python {python.full} ({python.source})",
            argv=(python.executable, "-m", "venv", "--without-pip", str(env)),
            creates=env_python,
        )
    ]
    requirements = env_requirements(config)
    if requirements:
        argv = (*pip_prefix(runner, env_python), *_PIP[2:], *requirements)
        steps.append(
            Step(
                name="build-env-deps",
                description="install the build requirements into it",
                argv=argv,
                creates=str(env / f".cuship-deps-{_digest(argv)}"),
                stamp=True,
            )
        )
    return tuple(steps), env_python, env


def _digest(argv: tuple[str, ...]) -> str:
    """The name of the marker a venv gets once ``argv`` installed into it: a later build with
    the same requirements (and the same pip acting on the same venv) installs nothing again."""
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
