"""Where the checks of a project come from: a project directory (its ``[check]`` config) or a
single check module given as a ``.py`` path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuship.config import CheckSection, load_config
from cuship.errors import ConfigError, NothingToDo, UsageError
from cuship.provenance import project_packages
from cuship.store import store_path

if TYPE_CHECKING:
    from cuship.provenance.installed import InstalledDist

__all__ = ["CheckProject", "find_project"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckProject:
    root: Path
    name: str
    config: CheckSection
    pythonpath: tuple[Path, ...]
    packages: tuple[str, ...] = ()  # top-level packages whose provenance a run records
    installed: InstalledDist | None = None  # --installed: the distribution the checks must import

    def store_path(self, environ: Mapping[str, str]) -> Path:
        """The results store: ``CUSHIP_STORE``, else ``[check] store`` under the project."""
        return store_path(self.root, self.config.store, environ)


def _paths(root: Path, entries: tuple[str, ...]) -> tuple[Path, ...]:
    return tuple((root / p).resolve() for p in entries if (root / p).is_dir())


def find_project(path: Path, *, installed: bool = False) -> CheckProject:
    """Read the check configuration for ``path`` (a project directory or a check module file).

    ``installed``: the project's package must be imported as installed (a wheel under test), so
    ``[check] pythonpath`` directories that hold it (``src/``) are left off ``sys.path``.
    """
    if path.is_file() and path.suffix == ".py":
        if installed:
            raise UsageError(
                "--installed needs a project directory (its [project] name)",
                hint=f"pass the project, not {str(path)!r}",
            )
        root = path.parent.resolve()
        config = CheckSection(modules=(path.name,))
        return CheckProject(
            root=root, name=path.stem, config=config, pythonpath=_paths(root, config.pythonpath)
        )
    loaded = load_config(path)
    config = loaded.check
    if not config.modules:
        raise NothingToDo(
            f"{str(loaded.source)!r} names no check modules",
            hint='add [check] modules = ["checks/my_checks.py"] to cuship.toml',
        )
    if not config.pythonpath:
        raise ConfigError(str(loaded.source), "check.pythonpath", "is empty", hint='use ["."]')
    pythonpath = _paths(loaded.root, config.pythonpath)
    dist: InstalledDist | None = None
    if installed:
        from cuship.provenance.installed import project_dist, without_shadowing

        dist = project_dist(loaded.project.name, loaded.source)
        pythonpath = without_shadowing(pythonpath, dist)
    return CheckProject(
        root=loaded.root,
        name=loaded.project.name or loaded.root.name,
        config=config,
        pythonpath=pythonpath,
        packages=project_packages(loaded.project.name, config.packages),
        installed=dist,
    )
