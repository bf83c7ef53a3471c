"""A project's user code that ``cuship check`` and ``cuship bench`` run: where it is, and how it is
imported.

:func:`locate` reads a project directory (its ``[check]`` or ``[bench]`` section) or a single
module given as a ``.py`` path, and answers the same questions for both commands: the project's
root and name, its section, the directories put on ``sys.path``, the packages whose provenance a
run records, and — with ``installed`` — the installed distribution the code must import instead
of the source tree. :mod:`cuship.project.declared` imports the declaration modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

from cuship.config import BenchSection, CheckSection, has_config, load_config
from cuship.errors import ConfigError, NothingToDo, UsageError
from cuship.provenance import project_packages
from cuship.store import store_path

if TYPE_CHECKING:
    from cuship.provenance.installed import InstalledDist

__all__ = ["Located", "locate"]

Section = TypeVar("Section", CheckSection, BenchSection)

_EXAMPLE = {
    "check": ("check modules", '[check] modules = ["checks/my_checks.py"]'),
    "bench": ("benchmark modules", '[bench] modules = ["benchmarks/bench_ops.py"]'),
}


@dataclass(frozen=True, kw_only=True)
class Located(Generic[Section]):
    """What check and bench need to know of a project before importing any of its code: the
    one shape of a located project (``CheckProject`` and ``BenchProject`` are this type)."""

    root: Path
    name: str
    package: str | None  # [project] name; None for a lone module
    config: Section
    pythonpath: tuple[Path, ...]
    packages: tuple[str, ...] = ()  # top-level packages whose provenance a run records
    installed: InstalledDist | None = None  # --installed: the distribution the code must import

    def store_path(self, environ: Mapping[str, str]) -> Path:
        """The results store: ``CUSHIP_STORE``, else the section's ``store`` under the project."""
        return store_path(self.root, self.config.store, environ)


def _paths(root: Path, entries: tuple[str, ...]) -> tuple[Path, ...]:
    return tuple((root / p).resolve() for p in entries if (root / p).is_dir())


def _lone_module(path: Path, kind: Literal["check", "bench"], default: Section) -> Located[Section]:
    """A module given as a file, with the settings of the nearest directory at or above it that
    holds a cuship configuration (root, pythonpath, packages: a ``src`` layout imports as its
    project does), itself the only module; with none, the defaults rooted beside it."""
    module = path.resolve()
    root = next((d for d in module.parents if has_config(d)), None)
    config, package = default, None
    if root is None:
        root = module.parent
    else:
        loaded = load_config(root)
        config = loaded.check if kind == "check" else loaded.bench  # type: ignore[assignment]
        package = loaded.project.name
    config = replace(config, modules=(module.relative_to(root).as_posix(),))
    return Located(
        root=root,
        name=path.stem,
        package=None,
        config=config,
        pythonpath=_paths(root, config.pythonpath),
        packages=project_packages(package, config.packages),
    )


def locate(
    path: Path, kind: Literal["check", "bench"], default: Section, *, installed: bool = False
) -> Located[Section]:
    """Read the ``[kind]`` configuration for ``path`` (a project directory or one module file).

    ``default`` is the empty section of that kind (its type is the section's type). A lone module
    takes the settings of the nearest project at or above it that has a cuship configuration,
    if any, with itself as the only module.
    ``installed``: the project's package must be imported as installed (a wheel under test), so
    ``pythonpath`` directories that hold it (``src/``) are left off ``sys.path``.
    """
    if path.is_file() and path.suffix == ".py":
        if installed:
            raise UsageError(
                "--installed needs a project directory (its [project] name)",
                hint=f"pass the project, not {str(path)!r}",
            )
        return _lone_module(path, kind, default)
    loaded = load_config(path)
    section: Section = loaded.check if kind == "check" else loaded.bench  # type: ignore[assignment]
    what, example = _EXAMPLE[kind]
    if not section.modules:
        raise NothingToDo(
            f"{str(loaded.source)!r} names no {what}", hint=f"add {example} to cuship.toml"
        )
    if kind == "check" and not section.pythonpath:  # the check worker runs from it
        raise ConfigError(str(loaded.source), f"{kind}.pythonpath", "is empty", hint='use ["."]')
    pythonpath = _paths(loaded.root, section.pythonpath)
    dist: InstalledDist | None = None
    if installed:
        from cuship.provenance.installed import project_dist, without_shadowing

        dist = project_dist(loaded.project.name, loaded.source)
        pythonpath = without_shadowing(pythonpath, dist)
    return Located(
        root=loaded.root,
        name=loaded.project.name or loaded.root.name,
        package=loaded.project.name,
        config=section,
        pythonpath=pythonpath,
        packages=project_packages(loaded.project.name, section.packages),
        installed=dist,
    )
