"""Where the benchmarks of a project come from: a project directory (its ``[bench]`` config) or
a single benchmark module given as a ``.py`` path (read by :func:`cuship.project.locate`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuship.config import BenchSection
from cuship.project import locate
from cuship.store import store_path

if TYPE_CHECKING:
    from cuship.provenance.installed import InstalledDist

__all__ = ["BenchProject", "find_project"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchProject:
    root: Path
    name: str
    package: str | None
    config: BenchSection
    pythonpath: tuple[Path, ...]
    packages: tuple[str, ...] = ()  # top-level packages whose provenance a run records
    installed: InstalledDist | None = None  # --installed: the distribution the cases must import

    def store_path(self, environ: Mapping[str, str]) -> Path:
        """The results store: ``CUSHIP_STORE``, else ``[bench] store`` under the project."""
        return store_path(self.root, self.config.store, environ)

    def threshold(self, name: str, key: str) -> float:
        """The effect-size threshold of a point: ``[bench.cases.<key or name>]``, else global."""
        for label in (key, name):
            entry = self.config.cases.get(label)
            if entry is not None and entry.threshold is not None:
                return entry.threshold
        return self.config.threshold

    def floors(self, name: str, key: str) -> Mapping[str, str]:
        """The floors of a point: the case's own when it has any, else ``[bench.floors]``."""
        for label in (key, name):
            entry = self.config.cases.get(label)
            if entry is not None and entry.floors:
                return entry.floors
        return self.config.floors


def find_project(path: Path, *, installed: bool = False) -> BenchProject:
    """The bench configuration for ``path`` (a project directory or a benchmark module file)."""
    found = locate(path, "bench", BenchSection(), installed=installed)
    return BenchProject(
        root=found.root,
        name=found.name,
        package=found.package,
        config=found.config,
        pythonpath=found.pythonpath,
        packages=found.packages,
        installed=found.installed,
    )
