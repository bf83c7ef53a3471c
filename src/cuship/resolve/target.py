"""The environment a frontend installs into, seen from the PEP 517 backend it runs.

The backend decides for the environment the wheel will land in, never for the isolated build
environment it runs in (its torch, if any, is whatever the build requirements pulled in):

1. ``CUSHIP_TARGET_PYTHON``: that interpreter, as the user says;
2. pip (``PIP_BUILD_TRACKER`` set): pip runs the hooks with the target environment's own
   interpreter and hides its site directories behind ``PYTHONPATH``; the interpreter run with
   ``-I`` (no ``PYTHONPATH``) shows them;
3. uv (``UV_INTERNAL__BUILD_DIR`` set): the hooks run in a build venv of uv's; the target is read
   from uv's own process (its ``--python``, else its ``VIRTUAL_ENV``), where ``/proc`` shows it;
4. anything else: this interpreter, when it is no build environment (``--no-build-isolation``).

None found: the caller says so and takes no torch-linked wheel (see :mod:`cuship.resolve.decide`).
The target is an :class:`~cuship.machine.interpreter.Interpreter` (``source``: how it was found,
``paths``: its ``sys.path``), asked with the one interpreter probe (``-I``, 60 s at most, 1 MiB
of answer), ``packaging`` lent from this process for its tags.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from cuship import _read, settings
from cuship.errors import TimedOut, ToolMissing
from cuship.machine.interpreter import Interpreter, NoAnswer, probe, running

__all__ = ["find_target"]

_TIMEOUT = 60.0


def _from_uv(parent: int) -> tuple[str, str] | None:
    """The interpreter uv (the process ``parent``) installs into: its ``--python`` argument,
    else its ``VIRTUAL_ENV``."""
    try:
        argv = _read.read_bytes(f"/proc/{parent}/cmdline", _read.SYSTEM_FILE).split(b"\0")
        environ = _read.read_bytes(f"/proc/{parent}/environ", _read.SYSTEM_FILE).split(b"\0")
    except (OSError, _read.Refused):
        return None
    args = [a.decode(errors="replace") for a in argv if a]
    for index, arg in enumerate(args):
        if arg in ("--python", "-p") and index + 1 < len(args):
            return args[index + 1], "uv's --python"
        if arg.startswith("--python="):
            return arg.partition("=")[2], "uv's --python"
    values = dict(e.decode(errors="replace").partition("=")[::2] for e in environ if b"=" in e)
    venv = values.get("VIRTUAL_ENV")
    if venv:
        return str(Path(venv) / "bin" / "python"), "uv's VIRTUAL_ENV"
    return None


def _candidate(environ: Mapping[str, str], parent: int) -> tuple[str, str] | None:
    told = environ.get(settings.TARGET_PYTHON)
    if told:
        return told, settings.TARGET_PYTHON
    if environ.get("UV_INTERNAL__BUILD_DIR") and environ.get("UV"):
        return _from_uv(parent)
    if environ.get("PIP_BUILD_TRACKER"):
        return sys.executable, "the interpreter pip installs for"
    if "pip-build-env-" in os.pathsep.join(sys.path) or "/builds-v0/" in sys.prefix:
        return None  # an isolated build environment of an unknown frontend
    return sys.executable, "this interpreter (no build isolation)"


def find_target(
    environ: Mapping[str, str], *, parent: int | None = None, packaging_site: str | None = None
) -> Interpreter | str:
    """The target environment, or why it cannot be seen. ``packaging_site``: a directory
    holding ``packaging`` for the probe (default: this process's)."""
    found = _candidate(environ, os.getppid() if parent is None else parent)
    if found is None:
        return (
            "the environment the frontend installs into cannot be seen from its build "
            f"environment (set {settings.TARGET_PYTHON}, or build without isolation)"
        )
    python, how = found
    if python == sys.executable and not environ.get("PIP_BUILD_TRACKER"):
        return running(how)
    if packaging_site is None:
        import packaging

        packaging_site = str(Path(next(iter(packaging.__path__))).parent)
    return _probe(python, how, packaging_site)


@functools.lru_cache(maxsize=8)
def _probe(python: str, how: str, packaging_site: str) -> Interpreter | str:
    """Run ``python`` once to list its site directories and tags: a hook asks more than once
    (to decide, to pin torch, to check the build's torch), and the answer stays the same."""
    try:
        found = probe(python, os.environ, timeout=_TIMEOUT, source=how, lend=packaging_site)
    except (ToolMissing, TimedOut) as err:
        return f"{how} ({python}) did not answer: {err}"
    except NoAnswer as err:
        return f"{how} ({python}) did not answer: {err.problem}"
    if not found.tags:
        return f"{how} ({python}) did not answer: it cannot import packaging for its tags"
    return found
