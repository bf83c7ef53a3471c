"""Import a built wheel in a fresh virtual environment of the job's own interpreter, as a user's
machine would.

Two kinds of venv (``[build] smoke``):

- ``isolated``: an empty venv; the wheel is installed with its dependencies from the index (by
  ``uv pip install`` when uv is on PATH, given pip's ``PIP_INDEX_URL``/``PIP_EXTRA_INDEX_URL``/
  ``PIP_FIND_LINKS``/``PIP_NO_INDEX``; else by pip);
- ``system-site``: a venv with ``--system-site-packages`` that also sees the builder's
  site-packages (a ``.pth`` file adds them, see :mod:`cuship.machine.sites`), the wheel installed with ``--no-deps --no-index``:
  no network. Its requirements must then be met by what the builder has (``pip check``); when
  they are not, the import is not tried and the outcome says which are missing.

``auto`` (the default) tries isolated and falls back to system-site when pip cannot install
there (an offline host, an unreachable index): a good wheel is never failed by a missing
network. The venv lives in the job's own directory and is removed afterwards.

A wheel that links torch is tested with the torch it was built against, never whatever an index
offers (a CPU torch from the machine's wheel folder fails a CUDA extension's import with
``libc10_cuda.so: cannot open shared object file``): its venv is a system-site one over the build
environment that holds that torch, and the import test imports torch first, as the package's
users do. Where no build environment holds it (an isolated build's torch is gone), the import is
not tried and the outcome says why.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from packaging.utils import canonicalize_name, parse_wheel_filename

from cuship.builder.model import Step
from cuship.builder.run.commands import BuildFailed, Runner, checked, run_command
from cuship.builder.run.job import JobWork, SmokeMode
from cuship.events import Emit, Event, discard
from cuship.machine import sites

__all__ = ["Smoke", "SmokeEnv", "SmokeMode", "smoke_test", "uv_index_flags"]

SmokeEnv = Literal["isolated", "system-site"]

_MARK = "cuship-smoke:"  # the import's own line, told apart from warnings on stderr
_ORIGIN = "cuship-origin:"
LAYER_PTH = "_cuship_smoke_layer.pth"


@dataclass(frozen=True, slots=True, kw_only=True)
class Smoke:
    """How the smoke test went: what the import said (None: not tried), in which venv, and why
    that venv or why no import (a fallback, missing requirements)."""

    said: str | None
    env: SmokeEnv
    note: str | None = None

    def summary(self) -> str:
        """One line for tables: ``cpu: numpy (system-site)``."""
        head = self.said if self.said is not None else "not run"
        return head if self.env == "isolated" else f"{head} ({self.env})"


def _has_pip() -> bool:
    from importlib.util import find_spec

    return find_spec("pip") is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Venv:
    """A smoke venv. Made without pip when cuship's interpreter has pip (ensurepip takes ~10 s
    on two cores): that pip installs into it with ``--python``."""

    root: Path
    log: Path
    environ: Mapping[str, str]
    runner: Runner = run_command
    outer_pip: bool = dataclasses.field(default_factory=_has_pip)

    def run(self, step: Step) -> tuple[int, str]:
        return self.runner(step, self.log, self.environ)

    def must(self, step: Step) -> str:
        """Run ``step``; BuildFailed (with the tool's own lines) when it fails."""
        return checked(step, *self.run(step), self.log)

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def step(self, name: str, description: str, *argv: str) -> Step:
        return Step(name=name, description=description, argv=argv, cwd=str(self.root.parent))

    def create(self, python: str, *flags: str) -> Step:
        lean = ("--without-pip",) if self.outer_pip else ()
        argv = (python, "-m", "venv", *lean, *flags, str(self.root))
        return self.step(
            "smoke-venv",
            "a fresh venv" + (" over the builder's site-packages" if flags else ""),
            *argv,
        )

    def pip(self, *args: str) -> tuple[str, ...]:
        if self.outer_pip:
            return (sys.executable, "-m", "pip", "--python", self.python, *args)
        return (self.python, "-m", "pip", *args)


def builder_site(python: str) -> tuple[str, ...]:
    """The site directories of the interpreter that built, when it is cuship's own (known
    in-process: :func:`cuship.machine.sites.site_dirs`); another interpreter's are its venv's,
    which the planner names."""
    if os.path.realpath(python) != os.path.realpath(sys.executable):
        return ()
    return sites.site_dirs()


def smoke_test(
    wheel: Path,
    job: JobWork,
    *,
    links_torch: bool,
    environ: Mapping[str, str],
    emit: Emit = discard,
    runner: Runner = run_command,
    uv: str | None = None,
) -> Smoke:
    """Install ``wheel``, the wheel ``job`` built, into a new venv of the job's interpreter (in
    its ``raw_dir``'s ``tmp``) and import its ``test_import``, in the venv its ``smoke`` asks.

    ``job.smoke.site_dirs``: the builder's site-packages a system-site venv sees (besides the
    interpreter's own). ``links_torch``: the wheel links torch, and is tested over the torch
    ``job`` was built against. Raises BuildFailed (exit 1) with pip's or Python's own message
    when the wheel does not install or does not import.
    """
    module = job.test_import
    if module is None:
        raise BuildFailed(f"{job.job_id}: no [build] test_import to smoke-test {wheel.name} with")
    python = job.smoke.python.executable if job.smoke.python is not None else sys.executable
    builder = (python, *job.smoke.site_dirs)
    work_dir = job.raw_dir / "tmp"
    work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cuship-smoke-", dir=work_dir) as tmp:

        def venv(name: str) -> _Venv:
            return _Venv(root=Path(tmp) / name, log=job.log, environ=environ, runner=runner)

        if links_torch:
            torch = job.torch or "unknown"
            return _over_torch(venv("system-site"), wheel, module, builder, torch, emit)
        note = "[build] smoke = 'system-site'"
        if job.smoke.mode != "system-site":
            isolated = venv("venv")
            failure = _isolated(isolated, wheel, python, uv)
            if failure is None:
                return Smoke(said=_import(isolated, module), env="isolated")
            if job.smoke.mode == "isolated":
                raise BuildFailed(
                    f"smoke-install: pip could not install {wheel.name}: {failure}",
                    hint=f"full log: {job.log}; [build] smoke = 'auto' falls back to a venv over "
                    "the builder's site-packages",
                )
            note = f"the isolated install failed ({failure}); used a venv over the builder's site-packages"
            message = f"smoke test of {wheel.name}: {note}"
            emit(Event(level="warning", topic="build", message=message))
        return _system_site(venv("system-site"), wheel, module, builder, note)


def _over_torch(
    venv: _Venv, wheel: Path, module: str, builder: tuple[str, ...], torch: str, emit: Emit
) -> Smoke:
    """The smoke test of a wheel that links ``torch``: over the build environment that holds
    that torch (the interpreter and site directories ``builder``), or not tried, saying why."""
    found = builder_torch(builder)
    if found is None or not _same_minor(found, torch):
        had = (
            f"the build environment has torch {found}"
            if found
            else "no build environment holds torch (an isolated build's is gone)"
        )
        why = (
            f"links torch {torch}; {had}: not imported (build with [build] isolation = "
            "false and torch in extra_deps to test it with the job's torch)"
        )
        emit(Event(level="warning", topic="build", message=f"{wheel.name}: {why}"))
        return Smoke(said=None, env="system-site", note=why)
    note = f"over the build environment's torch {found}, the one it was built against"
    return _system_site(venv, wheel, module, builder, note, torch_first=True)


_TRUE = ("1", "true", "yes", "on")


def uv_index_flags(environ: Mapping[str, str]) -> tuple[str, ...]:
    """pip's index settings in the environment, as ``uv pip install`` flags: uv reads its own
    (``UV_*``, uv.toml), not pip's, and the smoke test must ask the index pip would."""
    flags: list[str] = []
    url = environ.get("PIP_INDEX_URL")
    if url and not (environ.get("UV_INDEX_URL") or environ.get("UV_DEFAULT_INDEX")):
        flags += ["--index-url", url]
    for extra in environ.get("PIP_EXTRA_INDEX_URL", "").split():
        flags += ["--extra-index-url", extra]
    for link in environ.get("PIP_FIND_LINKS", "").split():
        flags += ["--find-links", link]
    if environ.get("PIP_NO_INDEX", "").strip().lower() in _TRUE:
        flags.append("--no-index")
    return tuple(flags)


def _isolated(venv: _Venv, wheel: Path, python: str, uv: str | None) -> str | None:
    """A fresh venv, then the wheel installed with its dependencies (by uv when it is there:
    seconds less per job than pip): None, or the installer's own error line."""
    venv.must(venv.create(python))
    install: tuple[str, ...] = venv.pip("install", "-q", str(wheel))
    if uv is not None:
        flags = uv_index_flags(venv.environ)
        install = (uv, "pip", "install", "-q", "--python", venv.python, *flags, str(wheel))
    code, output = venv.run(venv.step("smoke-install", f"install {wheel.name}", *install))
    if code == 0:
        return None
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR", "error:"))]
    causes = [line.removeprefix("cause:").strip() for line in lines if line.startswith("cause:")]
    said = (errors or lines or ["no output"])[-1]
    return f"{said} ({causes[-1]})" if causes else said


def _purelib(venv: _Venv) -> Path:
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    step = venv.step("smoke-site", "its site-packages", venv.python, "-c", code)
    return Path(venv.must(step).strip().splitlines()[-1])


def _same_minor(a: str, b: str) -> bool:
    return a.split("+")[0].split(".")[:2] == b.split("+")[0].split(".")[:2]


def builder_torch(builder: Sequence[str]) -> str | None:
    """The torch version installed where a system-site venv over ``builder`` (the interpreter,
    then its build venv's site directories) would find it, from its dist-info."""
    python, site_dirs = builder[0], builder[1:]
    for directory in (*site_dirs, *builder_site(python)):
        for info in sorted(Path(directory).glob("torch-*.dist-info")):
            version = info.name.removeprefix("torch-").removesuffix(".dist-info")
            if (info / "METADATA").is_file():
                return version
    return None


def _system_site(
    venv: _Venv,
    wheel: Path,
    module: str,
    builder: tuple[str, ...],
    note: str,
    *,
    torch_first: bool = False,
) -> Smoke:
    """``builder``: the job's interpreter, then the site directories of its build venv."""
    python, site_dirs = builder[0], builder[1:]
    layer = tuple(dict.fromkeys([*site_dirs, *builder_site(python)]))
    venv.must(venv.create(python, "--system-site-packages"))
    if layer:
        (_purelib(venv) / LAYER_PTH).write_text(sites.layer_text(layer), "utf-8")
    install = venv.pip("install", "-q", "--no-deps", "--no-index", "--force-reinstall", str(wheel))
    step = venv.step("smoke-install", f"install {wheel.name} (no deps, no index)", *install)
    venv.must(step)
    missing = _missing_requirements(venv, wheel)
    if missing:
        why = f"{note}; not imported: its requirements are not met here: {'; '.join(missing)}"
        return Smoke(said=None, env="system-site", note=why)
    return Smoke(said=_import(venv, module, torch_first), env="system-site", note=note)


def _missing_requirements(venv: _Venv, wheel: Path) -> list[str]:
    """``pip check``'s complaints about the wheel's own distribution (others are not ours)."""
    name = canonicalize_name(parse_wheel_filename(wheel.name)[0])
    step = venv.step("smoke-check", "pip check", *venv.pip("check"))
    _, output = venv.run(step)
    return [
        line.strip()
        for line in output.splitlines()
        if line.split() and canonicalize_name(line.split()[0]) == name
    ]


def _import(venv: _Venv, module: str, torch_first: bool = False) -> str:
    """Import ``module`` in the venv (after torch, for a wheel that links it): what it printed,
    with the torch it was imported over; it must come from the venv's install."""
    over = ", f'(over torch {torch.__version__})'" if torch_first else ""
    code = ("import torch; " if torch_first else "") + (
        f"import {module} as m; print({_MARK!r}, m.__name__, getattr(m, '__version__', ''),"
        f" m.backend() if callable(getattr(m, 'backend', None)) else ''{over}); "
        f"print({_ORIGIN!r}, getattr(m, '__file__', None) or '')"
    )
    step = venv.step("smoke-import", f"import {module}", venv.python, "-c", code)
    output = venv.must(step)
    lines = output.splitlines()
    origin = next((ln.removeprefix(_ORIGIN).strip() for ln in lines if ln.startswith(_ORIGIN)), "")
    root = os.path.realpath(venv.root)
    if origin and not os.path.realpath(origin).startswith(root + os.sep):
        raise BuildFailed(
            f"smoke-import: {module} was imported from {origin!r}, not from the wheel "
            f"installed in {str(venv.root)!r}",
            hint="another copy (an editable install?) shadows the wheel in the builder's "
            "site-packages",
        )
    said = [line for line in lines if line.startswith(_MARK)]
    return said[-1].removeprefix(_MARK).strip() if said else output.strip()
