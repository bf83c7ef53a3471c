"""uv-managed CPythons: find one (``uv python find --managed-python``) or, asked to, install one
(``uv python install``, into uv's own Python directory, said in an event). Both have time limits."""

from __future__ import annotations

from collections.abc import Mapping

from cuship import process
from cuship.errors import TimedOut, ToolMissing
from cuship.events import Emit, Event

__all__ = ["UV_FIND_TIMEOUT", "UV_INSTALL_TIMEOUT", "fetch_python", "uv_find"]

UV_FIND_TIMEOUT = 20.0
UV_INSTALL_TIMEOUT = 600.0


def uv_find(uv: str, version: str, environ: Mapping[str, str]) -> str | None:
    """``uv python find --managed-python 3.X``: a uv-managed CPython's path, or None."""
    argv = [uv, "python", "find", "--managed-python", "--no-project", "--no-config"]
    try:
        done = process.run([*argv, f"cpython@{version}"], env=environ, timeout=UV_FIND_TIMEOUT)
    except (ToolMissing, TimedOut):
        return None
    path = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return path if done.returncode == 0 and path else None


def fetch_python(uv: str, version: str, environ: Mapping[str, str], emit: Emit) -> str | None:
    """``uv python install 3.X`` (uv's own Python directory), then its path; said plainly."""
    argv = [uv, "python", "install", "--no-config", f"cpython@{version}"]
    emit(
        Event(
            level="warning",
            topic="build",
            message=f"--fetch-python: no Python {version} here; downloading CPython {version} "
            f"with `uv {' '.join(argv[1:])}` into uv's managed Python directory",
        )
    )
    try:
        done = process.run(argv, env=environ, timeout=UV_INSTALL_TIMEOUT)
    except TimedOut as err:
        raise ToolMissing(
            f"`uv python install {version}` did not finish within {err.timeout:g} s",
            hint="install it yourself and add its path to [build] pythons",
        ) from err
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        emit(
            Event(
                level="warning",
                topic="build",
                message=f"uv could not install CPython {version}: {said}",
            )
        )
        return None
    return uv_find(uv, version, environ)
