"""What a plan finds out rather than is told, before the matrix is expanded.

- **The CUDA axis of a matrix with no ``cuda``** is what this host can build: its nvcc's CUDA
  (``13.0`` for a 13.0.88 nvcc); with no nvcc and ``[build] toolkits = "fetch"``, the newest
  CUDA cuship assembles from PyPI; with neither, the newest CUDA cuship knows (its jobs then
  need another runner, and the plan says so). The plan says where the default came from, and
  what ``toolkits = "fetch"`` could bring besides. ``CUSHIP_MATRIX_CUDA`` names it instead
  (generated CI sets it to what ``cuship ci init`` planned, whatever a runner's nvcc).
- **A packages.yml entry's sdist** is fetched, unpacked and read (:mod:`~.sdists`): whether it
  holds device code (none: one ``+cpu`` job per Python) and what its setup.py steers.

:func:`with_cuda_default` is pure; :func:`prepare` reads the host (nvcc, pip's configuration,
the network for the sdists) and is what build, ship and matrix call.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping

from packaging.version import InvalidVersion, Version

from cuship import settings
from cuship.compat import Compat, load
from cuship.config import Config
from cuship.errors import CushipError, UsageError
from cuship.events import Emit, Event, discard
from cuship.machine import Toolkit, find_toolkit
from cuship.toolkit import catalog

__all__ = ["fetch_note", "prepare", "with_cuda_default", "with_cuda_given"]


def fetch_note() -> str:
    """What ``[build] toolkits = "fetch"`` brings: ``CUDA 13.0.0 to 13.3.1 from PyPI``."""
    releases = catalog().releases
    if not releases:
        return "no CUDA from PyPI"
    return f"CUDA {releases[0].cuda} to {releases[-1].cuda} from PyPI"


def _minor(version: str | None) -> str | None:
    try:
        parsed = Version(version) if version else None
    except InvalidVersion:
        return None
    return f"{parsed.major}.{parsed.minor}" if parsed else None


def _default(config: Config, toolkit: Toolkit | None, compat: Compat) -> tuple[str, str]:
    """(the CUDA of the default axis, why)."""
    fetch = config.build.toolkits == "fetch"
    brings = fetch_note()
    minor = _minor(toolkit.version) if toolkit is not None else None
    if minor is not None and toolkit is not None:
        try:
            compat.cuda(minor)
        except CushipError:
            minor = None
        else:
            also = "can also build" if fetch else "would build"
            return minor, (
                f"CUDA {minor}, this host's nvcc ({toolkit.nvcc}, {toolkit.version}); "
                f'[build] toolkits = "fetch" {also} {brings}: name those in [matrix] cuda'
            )
    if fetch and catalog().releases:
        newest = catalog().releases[-1].cuda
        return f"{newest.major}.{newest.minor}", (
            f'CUDA {newest.major}.{newest.minor}: no nvcc here, and [build] toolkits = "fetch" '
            f"brings {brings}"
        )
    newest_known = compat.toolkits[-1]
    return newest_known.major_minor, (
        f"CUDA {newest_known.major_minor}, the newest cuship knows: no nvcc on this host "
        f'(its CUDA jobs need a runner with that toolkit, or [build] toolkits = "fetch")'
    )


def with_cuda_default(config: Config, toolkit: Toolkit | None, compat: Compat) -> Config:
    """``config`` with ``[matrix] cuda`` set to what this host builds when it names none, and
    a note of where it came from (``config.found``); unchanged when it names one."""
    if config.matrix.cuda:
        return config
    cuda, why = _default(config, toolkit, compat)
    matrix = dataclasses.replace(config.matrix, cuda=(cuda,))
    found = (*config.found, f"[matrix] cuda not given: {why}")
    return dataclasses.replace(config, matrix=matrix, found=found)


def with_cuda_given(config: Config, given: str, compat: Compat) -> Config:
    """``config`` with ``[matrix] cuda`` set to ``given`` (``CUSHIP_MATRIX_CUDA``: CUDA versions,
    comma-separated) when it names none; unchanged when it names one."""
    if config.matrix.cuda:
        return config
    cudas = tuple(dict.fromkeys(part.strip() for part in given.split(",") if part.strip()))
    for cuda in cudas or (given,):
        try:
            compat.cuda(cuda)
        except CushipError as err:
            raise UsageError(
                f"{settings.MATRIX_CUDA}={given!r}: {cuda!r} is no CUDA cuship knows ({err})",
                hint=f"name CUDA versions such as '13.0' or '12.8,13.0', or unset "
                f"{settings.MATRIX_CUDA} to plan this host's CUDA",
            ) from err
    matrix = dataclasses.replace(config.matrix, cuda=cudas)
    why = f"[matrix] cuda not given: CUDA {', '.join(cudas)} from {settings.MATRIX_CUDA}"
    return dataclasses.replace(config, matrix=matrix, found=(*config.found, why))


def torch_default(config: Config, compat: Compat) -> Config:
    """``config`` with the torch a torch extension's sdist builds against when its entry names
    none: the newest torch release with a build for the first CUDA of the axis (its major, no
    newer minor: the build the matrix pairs with it)."""
    if not config.packages or not config.matrix.cuda:
        return config
    try:
        toolkit = compat.cuda(config.matrix.cuda[0])
    except CushipError:
        return config
    mine = Version(toolkit.major_minor)
    for release in reversed(compat.torch):
        builds = [Version(c) for c in release.cuda]
        if any(b.major == mine.major and b <= mine for b in builds):
            return dataclasses.replace(config, torch_default=release.minor)
    return config


def prepare(
    config: Config,
    environ: Mapping[str, str],
    *,
    emit: Emit = discard,
    sdists: bool = True,
) -> Config:
    """``config`` with what this host and the released sdists say filled in: the default CUDA
    axis, and each packages.yml entry's sdist, fetched and read (unless ``sdists`` is False).
    Each finding is told as an event of topic ``plan``."""
    from cuship.builder.sdists import fetch_sdists, parse_pip_config, sdist_cache

    given = environ.get(settings.MATRIX_CUDA, "").strip()
    if not config.matrix.cuda and given:
        config = with_cuda_given(config, given, load())
    elif not config.matrix.cuda:  # nvcc --version only when its answer is needed
        config = with_cuda_default(config, find_toolkit(environ), load())
    config = torch_default(config, load())
    if sdists and config.packages:
        pip = parse_pip_config(_pip_config_list(environ))
        config = fetch_sdists(config, pip, cache=sdist_cache(environ), emit=emit)
    for note in config.found:
        emit(Event(level="info", topic="plan", message=note))
    return config


def _pip_config_list(environ: Mapping[str, str]) -> str:
    """``pip config list``: pip's settings from every file and ``PIP_*`` variable."""
    from cuship import process

    done = process.run([sys.executable, "-m", "pip", "config", "list"], env=environ, timeout=60)
    return done.stdout if done.returncode == 0 else ""
