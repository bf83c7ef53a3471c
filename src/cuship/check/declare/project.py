"""Where the checks of a project come from: a project directory (its ``[check]`` config) or a
single check module given as a ``.py`` path (read by :func:`cuship.project.locate`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuship.config import CheckSection
from cuship.project import locate
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


def find_project(path: Path, *, installed: bool = False) -> CheckProject:
    """The check configuration for ``path`` (a project directory or a check module file)."""
    found = locate(path, "check", CheckSection(), installed=installed)
    return CheckProject(
        root=found.root,
        name=found.name,
        config=found.config,
        pythonpath=found.pythonpath,
        packages=found.packages,
        installed=found.installed,
    )
