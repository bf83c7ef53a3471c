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
The target's site directories are listed by running its interpreter (``-I``, 60 s at most).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from cuship import _read, process, settings
from cuship._format import size_text
from cuship._record import frozen
from cuship.errors import InputError, TimedOut, ToolMissing
from cuship.schema.check import check

__all__ = ["TargetEnv", "find_target"]

# the target's own path is read before the directory lending it `packaging` is appended (that
# directory may be on the target's path too: a venv over the interpreter cuship runs in)
_PROBE = (
    "import json, platform, sys; paths = [p for p in sys.path if p]; sys.path.append({site!r})\n"
    "from packaging import tags\n"
    "print(json.dumps([sys.executable, platform.python_version(), paths,"
    " [str(t) for t in tags.sys_tags()]]))"
)
_TIMEOUT = 60.0


@frozen
class TargetEnv:
    """The interpreter a frontend installs for, how it was found, and what it sees."""

    python: str
    how: str
    version: str
    site_dirs: tuple[str, ...]
    tags: tuple[str, ...]


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
) -> TargetEnv | str:
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
        return _this_interpreter(how)
    if packaging_site is None:
        import packaging

        packaging_site = str(Path(next(iter(packaging.__path__))).parent)
    return _probe(python, how, packaging_site)


@functools.lru_cache(maxsize=8)
def _probe(python: str, how: str, packaging_site: str) -> TargetEnv | str:
    """Run ``python`` once to list its site directories and tags: a hook asks more than once
    (to decide, to pin torch, to check the build's torch), and the answer stays the same."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    code = _PROBE.format(site=packaging_site)
    try:
        argv = [python, "-I", "-c", code]
        done = process.run(argv, env=env, timeout=_TIMEOUT, keep=_KEEP, stop_past_keep=True)
    except (ToolMissing, TimedOut) as err:
        return f"{how} ({python}) did not answer: {err}"
    if done.cut:
        return f"{how} ({python}) did not answer: it printed more than {size_text(_KEEP)}"
    try:
        answer = _read.loads(done.stdout)
        check(answer, _ANSWER, "its answer")
    except InputError as err:
        return f"{how} ({python}) did not answer: {err.message}"
    executable, version, paths, tags = answer
    return TargetEnv(
        python=executable, how=how, version=version, site_dirs=tuple(paths), tags=tuple(tags)
    )


_KEEP = 1 << 20  # bytes of the probe's answer: a few KiB (its paths and its tags)
_STRINGS = {"type": "array", "items": {"type": "string", "maxLength": 4096}, "maxItems": 10_000}
_ANSWER = {  # [sys.executable, platform.python_version(), sys.path, tags]
    "type": "array",
    "minItems": 4,
    "maxItems": 4,
    "prefixItems": [{"type": "string", "maxLength": 4096}] * 2 + [_STRINGS] * 2,
}


def _this_interpreter(how: str) -> TargetEnv:
    import platform

    from packaging import tags

    return TargetEnv(
        python=sys.executable,
        how=how,
        version=platform.python_version(),
        site_dirs=tuple(p for p in sys.path if p),
        tags=tuple(str(t) for t in tags.sys_tags()),
    )
