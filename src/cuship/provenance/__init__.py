"""Where a project's packages were imported from, and whether their compiled extensions load.

``cuship check`` and ``cuship bench`` run whatever Python finds first under a project's package
name. A source tree without the compiled extension that shadows the installed wheel turns a GPU
run into a run of the CPU fallbacks; this module says, per top-level package, which file was
imported, whether it lies in an installed distribution (its RECORD lists the file), an editable
install or a plain source tree, and which of its extension modules import.

:func:`collect` runs where the project's code runs (the check worker) and imports the packages;
everything else (:func:`classify`, :func:`project_packages`, the dataclasses and their text) is
pure.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from packaging.utils import canonicalize_name

from cuship._record import frozen

if TYPE_CHECKING:  # imported where distributions are read: packaging.requirements is not cheap
    from cuship.provenance.installed import InstalledDist

__all__ = [
    "Extension",
    "Origin",
    "PackageOrigin",
    "Provenance",
    "classify",
    "collect",
    "failed_import",
    "one_line",
    "project_packages",
    "require_built",
    "unbuilt",
]

Origin = Literal["installed", "editable", "source"]

_ORIGIN_TEXT: Mapping[Origin, str] = {
    "installed": "installed wheel",
    "editable": "source tree (editable)",
    "source": "source tree",
}


def one_line(err: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, at most ``limit`` characters."""
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@frozen
class Extension:
    """A compiled extension module (``*.so``/``*.pyd``) under a package, and whether it imports."""

    module: str  # dotted name inside the package: "_cuda", "ops._kernels"
    path: str
    loaded: bool
    error: str | None = None

    def describe(self) -> str:
        return (
            f"{self.module} loaded" if self.loaded else f"{self.module} not loaded ({self.error})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "path": self.path,
            "loaded": self.loaded,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Extension:
        return cls(
            module=str(raw["module"]),
            path=str(raw["path"]),
            loaded=bool(raw["loaded"]),
            error=raw.get("error"),
        )


@frozen
class PackageOrigin:
    """One top-level package: the file imported, where it lies, its extensions."""

    name: str
    file: str
    origin: Origin
    distribution: str | None = None
    version: str | None = None
    extensions: tuple[Extension, ...] = ()
    error: str | None = None  # importing the package itself failed

    @property
    def directory(self) -> str:
        """The package directory (the file itself for a single-module package)."""
        path = Path(self.file)
        return str(path.parent) if path.name.startswith("__init__.") else self.file

    @property
    def from_source(self) -> bool:
        return self.origin in ("source", "editable")

    @property
    def extension_loads(self) -> bool:
        return any(e.loaded for e in self.extensions)

    def describe(self) -> str:
        """``cuvecops 0.1.0 from /…/cuvecops/__init__.py (installed wheel); extensions: …``."""
        head = f"{self.name} {self.version}" if self.version else self.name
        where = self.directory if self.from_source else self.file
        exts = ", ".join(e.describe() for e in self.extensions) or "none found"
        text = f"{head} from {where} ({_ORIGIN_TEXT[self.origin]}); extensions: {exts}"
        return text + (f"; import failed: {self.error}" if self.error else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.file,
            "origin": self.origin,
            "distribution": self.distribution,
            "version": self.version,
            "extensions": [e.to_json() for e in self.extensions],
            "error": self.error,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PackageOrigin:
        return cls(
            name=str(raw["name"]),
            file=str(raw["file"]),
            origin=raw["origin"],
            distribution=raw.get("distribution"),
            version=raw.get("version"),
            extensions=tuple(Extension.from_json(e) for e in raw.get("extensions", ())),
            error=raw.get("error"),
        )


@frozen
class Provenance:
    """The project packages a run used; ``note`` says what could not be traced, and why."""

    packages: tuple[PackageOrigin, ...] = ()
    note: str | None = None

    def lines(self) -> tuple[str, ...]:
        out = tuple(p.describe() for p in self.packages)
        return out + ((self.note,) if self.note else ())

    def import_failures(self) -> tuple[str, ...]:
        """One line per package that failed to import: what a report says first."""
        return tuple(
            f"package {p.name} failed to import from {p.directory}: {p.error}"
            for p in self.packages
            if p.error
        )

    def to_json(self) -> dict[str, Any]:
        return {"packages": [p.to_json() for p in self.packages], "note": self.note}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Provenance:
        return cls(
            packages=tuple(PackageOrigin.from_json(p) for p in raw.get("packages", ())),
            note=raw.get("note"),
        )


def project_packages(distribution: str | None, configured: Sequence[str]) -> tuple[str, ...]:
    """The packages to trace: ``configured`` when given, else the distribution name as a module
    name (``my-pkg`` -> ``my_pkg``)."""
    if configured:
        return tuple(dict.fromkeys(configured))
    if not distribution:
        return ()
    return (canonicalize_name(distribution).replace("-", "_"),)


def unbuilt(provenance: Provenance) -> PackageOrigin | None:
    """The first package imported from a source tree with no compiled extension that loads."""
    return next((p for p in provenance.packages if p.from_source and not p.extension_loads), None)


def require_built(provenance: Provenance, pythonpath_key: str) -> None:
    """Raise ToolMissing (exit 3) when a package came from a source tree whose compiled extension
    does not load: a GPU run of it would time or check the fallbacks. ``pythonpath_key`` names the
    setting that put the source tree on the path (``"[check] pythonpath"``)."""
    from cuship.errors import ToolMissing

    package = unbuilt(provenance)
    if package is None:
        return
    where = "source tree" if package.origin == "source" else "editable source tree"
    if package.extensions:
        which = ", ".join(e.describe() for e in package.extensions)
        what = f"whose compiled extension does not load: {which}"
    else:
        what = "which has no compiled extension"
    wheel = canonicalize_name(package.distribution or package.name).replace("-", "_")
    raise ToolMissing(
        f"{package.name} was imported from the {where} {package.directory!r}, {what}: install "
        f"the built wheel (pip install dist/{wheel}-*.whl) or build in place",
        hint=f"cuship imports the installed package first and the project's {pythonpath_key} "
        "only after site-packages; no installed build of the package was found",
    )


# --- classification (pure) ---------------------------------------------------------------------


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def classify(
    file: str, dists: Sequence[InstalledDist], site_dirs: Sequence[str]
) -> tuple[Origin, InstalledDist | None]:
    """Where ``file`` (a real path) comes from: a RECORD that lists it, an editable install
    whose source holds it, a site directory without a RECORD, or else a source tree."""
    path = Path(file)
    for dist in dists:
        if path in dist.files:
            return "installed", dist
    for dist in dists:
        if dist.editable_root is not None and _under(file, dist.editable_root):
            return "editable", dist
    if any(_under(file, site) for site in site_dirs):
        return "installed", None
    return "source", None


def _extension_module(relative: Path) -> str | None:
    """The dotted module name of an extension file, or None when the file is no module here
    (a bundled ``libfoo.so``, a directory that is not a package name)."""
    name = relative.name
    stem = name.partition(".")[0]
    if name.startswith("lib") and name.endswith(".so") and name.count(".") == 1:
        return None
    parts = [*relative.parent.parts, stem]
    if not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def _wrong_python(path: Path) -> str | None:
    stem = path.name.partition(".")[0]
    if any(path.name == stem + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        return None
    return (
        f"built for another Python: {path.name!r} does not end in one of "
        f"{', '.join(importlib.machinery.EXTENSION_SUFFIXES)}"
    )


# --- collection (imports; runs in the process that runs the project's code) --------------------


def _site_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    dirs += [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    return tuple(dict.fromkeys(os.path.realpath(d) for d in dirs))


def _dists(names: Iterable[str]) -> list[InstalledDist]:
    from importlib import metadata

    from cuship.provenance.installed import installed_dist

    found = []
    for name in dict.fromkeys(names):
        try:
            found.append(installed_dist(metadata.distribution(name), name))
        except metadata.PackageNotFoundError:
            continue
    return found


def _distribution(name: str, file: str) -> tuple[Origin, InstalledDist | None]:
    """Classify ``file``: by the distribution of the same name first (cheap), then, for a file in
    site-packages, by every distribution that provides the top-level name (reads all metadata)."""
    sites = _site_dirs()
    origin, dist = classify(file, _dists([name]), sites)
    if dist is None and origin == "installed":
        from importlib import metadata

        others = metadata.packages_distributions().get(name, [])
        origin, dist = classify(file, _dists(others), sites)
    return origin, dist


def _load_extension(package: str, directory: Path, path: Path) -> Extension | None:
    relative = path.relative_to(directory)
    module = _extension_module(relative)
    if module is None:
        return None
    problem = _wrong_python(path)
    if problem is None:
        try:
            importlib.import_module(f"{package}.{module}")
        except Exception as err:  # the error is the finding
            problem = one_line(err)
    return Extension(module=module, path=str(path), loaded=problem is None, error=problem)


def _extension_files(
    directories: Sequence[Path], dist: InstalledDist | None, name: str
) -> list[tuple[Path, Path]]:
    """(package directory, file) of every ``*.so``/``*.pyd`` under the package; for an editable
    install also those its RECORD places in site-packages."""
    found = [
        (d, f)
        for d in directories
        for pattern in ("*.so", "*.pyd")
        for f in sorted(d.rglob(pattern))
        if "__pycache__" not in f.parts
    ]
    if dist is not None and dist.editable_root is not None:
        for file in sorted(dist.files):
            path = Path(file)
            if path.suffix in (".so", ".pyd") and name in path.parts:
                top = Path(*path.parts[: path.parts.index(name) + 1])
                found.append((top, path))
    return found


def _extensions(
    name: str, directories: Sequence[Path], dist: InstalledDist | None
) -> tuple[Extension, ...]:
    seen: dict[str, Extension] = {}
    for directory, path in _extension_files(directories, dist, name):
        ext = _load_extension(name, directory, path)
        if ext is not None:
            seen.setdefault(ext.module, ext)
    return tuple(seen.values())


def failed_import(err: BaseException) -> str:
    """An import's failure on one line, with where it was raised: the last frame of its
    traceback (``RuntimeError: No device were detected (at .../device.py:87 in get_vendor)``)."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    where = (
        f" (at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    )
    return one_line(err) + where


def _trace(name: str, spec: importlib.machinery.ModuleSpec) -> PackageOrigin:
    error = None
    version = None
    try:
        module = importlib.import_module(name)
        version = getattr(module, "__version__", None)
    except Exception as err:  # the error is the finding
        error = failed_import(err)
    locations = [Path(p) for p in spec.submodule_search_locations or ()]
    file = os.path.realpath(spec.origin if spec.has_location and spec.origin else locations[0])
    origin, dist = _distribution(name, file)
    directories = [Path(os.path.realpath(p)) for p in locations]
    extensions = _extensions(name, directories, dist)
    if not locations and Path(file).suffix in (".so", ".pyd"):  # the package is an extension
        extensions = (Extension(module=name, path=file, loaded=error is None, error=error),)
    return PackageOrigin(
        name=name,
        file=file,
        origin=origin,
        distribution=dist.name if dist is not None else None,
        version=dist.version if dist is not None else (str(version) if version else None),
        extensions=extensions,
        error=error,
    )


def collect(names: Sequence[str]) -> Provenance:
    """Import each top-level package in ``names`` and trace it; those not found are named in
    the note (none found: nothing is recorded, and the note says so)."""
    if not names:
        return Provenance(
            note="no project package to trace: name it in [check] packages (or [project] name)"
        )
    traced, missing = [], []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not (spec.has_location or spec.submodule_search_locations):
            missing.append(name)
        else:
            traced.append(_trace(name, spec))
    note = None
    if missing:
        which = ", ".join(repr(m) for m in missing)
        note = f"not importable here: {which}" + (
            "" if traced else "; no project package traced (set [check] packages)"
        )
    return Provenance(packages=tuple(traced), note=note)
