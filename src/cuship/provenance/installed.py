"""An installed distribution as this interpreter sees it: where it lives, which top-level
modules it provides, whether a module was imported from it, and which dependencies are missing.

Used where a wheel under test must be imported as installed, not from the project's source tree:
``cuship check --installed`` / ``cuship bench --installed`` (leave source directories that would
shadow it off ``sys.path``) and ``cuship gpu-run`` (its probe inside the target interpreter and
its pytest plugin that records where the package was imported from).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path, PurePosixPath

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cuship import _read
from cuship._record import frozen
from cuship.errors import CheckFailed, ConfigError, ToolMissing

__all__ = [
    "InstalledDist",
    "check_imported",
    "find_installed",
    "imported_problems",
    "installed_dist",
    "missing_requirements",
    "origin_of",
    "project_dist",
    "without_shadowing",
]


@frozen
class InstalledDist:
    """One installed distribution: its files are what a test of the wheel must import."""

    name: str
    version: str
    location: Path  # the site directory that holds its .dist-info
    top_level: tuple[str, ...]
    files: frozenset[Path]  # resolved paths of the files its RECORD lists (empty: no RECORD)
    editable_root: str | None = None  # the source directory of an editable install (real path)

    def owns(self, file: str | Path) -> bool:
        """Whether ``file`` is one of this distribution's installed files."""
        path = Path(file).resolve()
        if self.files:
            return path in self.files
        return self.location.resolve() in path.parents


def _top_level(dist: metadata.Distribution) -> tuple[str, ...]:
    listed = _read.dist_text(dist, "top_level.txt")
    if listed:
        return tuple(dict.fromkeys(n.strip() for n in listed.splitlines() if n.strip()))
    names: list[str] = []
    for file in _read.dist_files(dist) or ():
        parts = PurePosixPath(str(file)).parts
        first = parts[0] if parts else ""
        if not first or first == ".." or first.endswith((".dist-info", ".data")):
            continue
        if len(parts) == 1 and not first.endswith((".py", ".so", ".pyd")):
            continue  # a stray file at the top (e.g. a .pth), not an importable module
        name = first.split(".", 1)[0] if len(parts) == 1 else first
        if name.isidentifier():
            names.append(name)
    return tuple(dict.fromkeys(names))


def _editable_root(dist: metadata.Distribution) -> str | None:
    """The source directory of an editable install (PEP 610 ``direct_url.json``), else None."""
    import os
    from urllib.parse import unquote, urlparse

    try:
        raw = _read.loads(_read.dist_text(dist, "direct_url.json") or "{}")
    except _read.Refused:
        return None
    info = raw.get("dir_info") if isinstance(raw, dict) else None
    if not isinstance(info, dict) or info.get("editable") is not True:
        return None
    url = urlparse(str(raw.get("url", "")))
    return os.path.realpath(unquote(url.path)) if url.scheme == "file" else None


def installed_dist(dist: metadata.Distribution, name: str = "") -> InstalledDist:
    """``dist`` (from importlib.metadata) as an :class:`InstalledDist`; its METADATA and
    RECORD read by :mod:`cuship._read` (a FIFO or a 1 GB RECORD is an InputError)."""
    return InstalledDist(
        name=_read.dist_field(dist, "Name") or name,
        version=_read.dist_field(dist, "Version") or "?",
        location=Path(str(dist.locate_file(""))).resolve(),
        top_level=_top_level(dist),
        files=frozenset(
            Path(str(dist.locate_file(f))).resolve() for f in _read.dist_files(dist) or ()
        ),
        editable_root=_editable_root(dist),
    )


def find_installed(name: str) -> InstalledDist:
    """The distribution ``name`` as installed for this interpreter (:class:`ToolMissing` if not)."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError as err:
        raise ToolMissing(
            f"{name!r} is not installed for this interpreter",
            hint="install the wheel under test first (cuship gpu-run does), or drop --installed",
        ) from err
    return installed_dist(dist, name)


def project_dist(name: str | None, source: str | Path) -> InstalledDist:
    """The installed distribution of a project whose config (``source``) names it ``name``."""
    if not name:
        raise ConfigError(
            str(source),
            "project.name",
            "--installed needs the distribution name",
            hint="set [project] name in pyproject.toml",
        )
    return find_installed(name)


def origin_of(module: str) -> str | None:
    """Where ``import module`` would load it from (found, not imported); None when it is absent."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
        return spec.origin
    locations = list(spec.submodule_search_locations or ())
    return str(locations[0]) if locations else spec.origin


def _holds(directory: Path, name: str) -> bool:
    if (directory / name).is_dir() or (directory / f"{name}.py").is_file():
        return True
    return any(directory.glob(f"{name}.*.so"))


def without_shadowing(paths: Sequence[Path], dist: InstalledDist) -> tuple[Path, ...]:
    """``paths`` less the directories holding one of ``dist``'s top-level modules (e.g. ``src/``),
    which would shadow the installed copy when put first on ``sys.path``."""
    return tuple(p for p in paths if not any(_holds(p, n) for n in dist.top_level))


def imported_problems(dist: InstalledDist, modules: Mapping[str, object]) -> tuple[str, ...]:
    """For each of ``dist``'s top-level modules found in ``modules`` (``sys.modules``), a line
    when it was imported from somewhere else than the installed distribution."""
    problems = []
    for name in dist.top_level:
        module = modules.get(name)
        file = getattr(module, "__file__", None) if module is not None else None
        if file is not None and not dist.owns(file):
            problems.append(
                f"{name!r} was imported from {file!r}, not from the installed {dist.name} "
                f"{dist.version} in {str(dist.location)!r}"
            )
    return tuple(problems)


def check_imported(dist: InstalledDist, modules: Mapping[str, object]) -> None:
    """:class:`CheckFailed` when a module of ``dist`` came from elsewhere (a source tree)."""
    problems = imported_problems(dist, modules)
    if problems:
        raise CheckFailed(
            "; ".join(problems),
            hint="the project's source directory shadows the wheel under test: run from "
            "elsewhere, or drop it from [check]/[bench] pythonpath",
        )


def _unmet(text: str, versions: Mapping[str, str]) -> str | None:
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return f"{text!r}: unreadable requirement"
    try:
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            return None
    except UndefinedEnvironmentName:
        return None
    have = versions.get(canonicalize_name(req.name))
    if have is None:
        return f"{req}: not installed"
    if req.specifier and not req.specifier.contains(have, prereleases=True):
        return f"{req}: {have} installed"
    return None


def missing_requirements(
    requires: Iterable[str], versions: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The requirements (``Requires-Dist`` lines, extras off) not met by ``versions`` (canonical
    name → version; default: what this interpreter has installed)."""
    if versions is None:
        versions = {}
        for dist in metadata.distributions():
            try:
                name, version = _read.dist_field(dist, "Name"), _read.dist_field(dist, "Version")
            except _read.Refused:
                continue  # a METADATA cuship will not read: that one counts as not installed
            if name and version:
                versions.setdefault(canonicalize_name(name), version)
    found = (_unmet(text, versions) for text in requires)
    return tuple(line for line in found if line is not None)
