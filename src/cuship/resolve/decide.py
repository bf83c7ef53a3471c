"""Prebuilt or source? The decision of ``cuship.backend``, and the words that explain it.

:func:`decide` resolves the project's own version against ``[tool.cuship.prebuilt]`` (an index
or a url template) for this machine. Network and index trouble mean a source build, said in
``why``; nothing here downloads the wheel (see :mod:`cuship.resolve.backend`).
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Mapping
from urllib.parse import unquote

from packaging.version import Version

from cuship import _read, settings
from cuship._record import frozen
from cuship.errors import CushipError
from cuship.events import Emit, Event, discard
from cuship.machine import fingerprint
from cuship.machine.interpreter import Interpreter
from cuship.resolve._template import format_url, template_values
from cuship.resolve.fetch import fetch_page
from cuship.resolve.http import DEFAULT_OPTIONS, FetchOptions, get
from cuship.resolve.install import target_from_env
from cuship.resolve.select import (
    Candidate,
    Resolution,
    Target,
    parse_requirement,
    select,
    target_of,
)
from cuship.resolve.settings import PrebuiltConfig
from cuship.resolve.target import find_target

__all__ = ["Decision", "decide", "explain", "flag", "machine_target", "prebuilt_candidate"]

_ON = ("1", "true", "yes", "on")
_COVERAGE = {  # no-gpu and unknown: the resolver's notes say it
    "sass": "native SASS for every GPU here",
    "ptx": "PTX that the driver compiles for a GPU here",
    "cpu": "no CUDA code",
}


@frozen
class Decision:
    """Use ``candidate`` (downloaded and verified later), or build from source because of ``why``."""

    candidate: Candidate | None
    why: str
    resolution: Resolution | None = None
    index: str | None = None  # where it was resolved: the index, or the url template


def flag(environ: Mapping[str, str], name: str) -> bool:
    """Whether the environment variable ``name`` is switched on (1, true, yes, on)."""
    return environ.get(name, "").strip().lower() in _ON


def explain(resolution: Resolution) -> str:
    """Why the chosen file was chosen, in a line: the machine, the wheel, the competition."""
    chosen = resolution.chosen
    assert chosen is not None
    target = resolution.target
    offer = resolution.target.offer
    gpus = ", ".join(f"{name} (sm_{(cc or '?').replace('.', '')})" for name, cc in offer.gpus)
    driver = f"driver CUDA {offer.driver_cuda}" if offer.driver_cuda else "no CUDA driver"
    machine = f"Python {target.python}, {gpus or 'no GPU'}, {driver}"
    wheel = [f"CUDA {chosen.cuda}"] if chosen.cuda else []
    wheel += [_COVERAGE[chosen.coverage]] if chosen.coverage in _COVERAGE else []
    wheel += list(chosen.notes)
    count = f"best of {len(resolution.ranked)} fitting, {len(resolution.rejected)} rejected"
    return f"fits this machine ({machine}); {count}: " + "; ".join(wheel or ["fits"])


def _torch_in(environ: Mapping[str, str], found: Interpreter) -> str | None:
    """The torch version installed in ``found``'s site directories (read from its files)."""
    fp = fingerprint({**environ, settings.NVCC: "none"}, toolkit=False, site_dirs=found.paths)
    return fp.torch.version if fp.torch is not None else None


def target_torch(environ: Mapping[str, str]) -> str | None:
    """The torch version installed where the frontend installs (read from its files), if any."""
    found = find_target(environ)
    return None if isinstance(found, str) else _torch_in(environ, found)


def build_torch_problem(environ: Mapping[str, str]) -> str | None:
    """Why a source build here would not build against the target's torch: the build
    environment (where the real backend runs) holds another torch minor than the environment
    the wheel is for, or that one cannot be seen; None when both agree or no torch is in the
    build environment."""
    here = _read.installed_version("torch")
    if here is None:
        return None
    found = find_target(environ)
    if isinstance(found, str):
        return f"the build environment holds torch {here}, and {found}"
    if found.executable == sys.executable and not environ.get("PIP_BUILD_TRACKER"):
        return None  # no isolation: the build environment is the one installed into
    target = _torch_in(environ, found)
    if target is None:
        return (
            f"the build environment holds torch {here}; {found.executable} ({found.source}) has "
            "no torch: the wheel would need the build environment's"
        )
    if Version(here).release[:2] != Version(target).release[:2]:
        return (
            f"the build environment holds torch {here}, the environment installed into "
            f"({found.executable}, {found.source}) torch {target}: an extension compiled here "
            "would not load there"
        )
    return None


def machine_target(environ: Mapping[str, str], found: Interpreter | str | None = None) -> Target:
    """This machine as the resolver sees it for the environment the frontend installs into
    (``found``, see :mod:`cuship.resolve.target`; its torch and NVIDIA libraries are read from
    its site directories, its tags from its interpreter), without running nvcc: choosing a
    wheel never needs the CUDA toolkit, and the toolkit of a machine that installs a prebuilt
    wheel may be broken, slow or absent (the prebuilt path runs no compiler, not even
    ``nvcc --version``). Target unseen: this process's view, its torch unknown."""
    env = {**environ, settings.NVCC: "none"}
    if not isinstance(found, Interpreter):
        return target_from_env(env)
    fp = fingerprint(env, toolkit=False, site_dirs=found.paths)
    return target_of(fp, tags=found.tags, python=found.python)


def prebuilt_candidate(
    config: PrebuiltConfig,
    environ: Mapping[str, str],
    *,
    options: FetchOptions,
    emit: Emit,
    target: Target | None = None,
) -> Candidate | str:
    """The candidate a ``url`` template names for ``target`` (default: this machine), or why
    there is none."""
    assert config.url is not None
    target = target or machine_target(environ)
    values = template_values(
        name=config.name,
        version=config.version,
        target=target,
        machine_platform=sysconfig.get_platform(),
    )
    url = format_url(config.url, values)
    if url is None:
        return f"the url template needs values this machine lacks ({sorted(values)} known)"
    answer = get(url + ".sha256", options=options, emit=emit)
    sha = answer.body.decode("utf-8", "replace").split()
    if not sha or len(sha[0]) != 64:
        return f"{url + '.sha256'!r} holds no sha256"
    filename = url.rsplit("/", 1)[-1]
    return Candidate(filename=unquote(filename), url=url, sha256=sha[0].lower())


def _resolve(
    config: PrebuiltConfig,
    index: str | None,
    environ: Mapping[str, str],
    options: FetchOptions,
    emit: Emit,
) -> Resolution | str:
    requirement = config.requirement
    found = find_target(environ)
    if isinstance(found, str):
        emit(
            Event(
                level="warning", topic="backend", message=f"{found}: no torch-linked wheel is taken"
            )
        )
    target = machine_target(environ, found)
    if not isinstance(found, str):
        version = target.offer.torch.version if target.offer.torch else None
        torch = f"torch {version}" if version else "no torch"
        said = f"judging for {found.executable} ({found.source}): {torch}"
        emit(Event(level="info", topic="backend", message=said))
    unseen = found if isinstance(found, str) else None
    if index:
        page = fetch_page(index, parse_requirement(requirement).name, options=options, emit=emit)
        return select(
            requirement, page.candidates, target, variants=page.variants, torch_unseen=unseen
        )
    if config.url:
        candidate = prebuilt_candidate(config, environ, options=options, emit=emit, target=target)
        if isinstance(candidate, str):
            return candidate
        return select(requirement, [candidate], target, torch_unseen=unseen)
    return "[tool.cuship.prebuilt] names no index or url"


def decide(
    config: PrebuiltConfig,
    environ: Mapping[str, str],
    *,
    options: FetchOptions = DEFAULT_OPTIONS,
    emit: Emit = discard,
) -> Decision:
    """Prebuilt or source? Network and index trouble mean source (said in ``why``)."""
    if flag(environ, settings.FORCE_BUILD):
        return Decision(candidate=None, why="CUSHIP_FORCE_BUILD=1")
    if config.version is None:  # a wheel of another version would not match what pip expects
        why = "the version is dynamic and no PKG-INFO states it (a source tree, not an sdist)"
        return Decision(candidate=None, why=why)
    index = environ.get(settings.PREBUILT_INDEX) or config.index
    where = index or config.url
    try:
        resolution = _resolve(config, index, environ, options, emit)
    except CushipError as err:
        return Decision(candidate=None, why=f"no prebuilt wheel: {err.message}", index=where)
    if isinstance(resolution, str):
        return Decision(candidate=None, why=resolution, index=where)
    if resolution.chosen is None:
        reasons = "; ".join(f"{v.candidate.filename}: {v.reason}" for v in resolution.rejected)
        why = f"no prebuilt wheel of {config.requirement} fits ({reasons or 'none listed'})"
        return Decision(candidate=None, why=why, resolution=resolution, index=where)
    return Decision(
        candidate=resolution.chosen.candidate,
        why=explain(resolution),
        resolution=resolution,
        index=where,
    )
