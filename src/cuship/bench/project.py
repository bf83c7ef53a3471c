"""Where the benchmarks of a project come from: a project directory (its ``[bench]`` config) or
a single benchmark module given as a ``.py`` path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cuship.config import BenchSection, load_config
from cuship.errors import NothingToDo, UsageError
from cuship.provenance import project_packages
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


def _paths(root: Path, entries: tuple[str, ...]) -> tuple[Path, ...]:
    return tuple((root / p).resolve() for p in entries if (root / p).is_dir())


def find_project(path: Path, *, installed: bool = False) -> BenchProject:
    """Read the bench configuration for ``path`` (a project directory or a benchmark module).

    ``installed``: the project's package must be imported as installed (a wheel under test), so
    ``[bench] pythonpath`` directories that hold it (``src/``) are left off ``sys.path``.
    """
    if path.is_file() and path.suffix == ".py":
        if installed:
            raise UsageError(
                "--installed needs a project directory (its [project] name)",
                hint=f"pass the project, not {str(path)!r}",
            )
        root = path.parent.resolve()
        config = BenchSection(modules=(path.name,))
        if (root / "cuship.toml").is_file():  # settings of the module's project, if any
            config = replace(load_config(root).bench, modules=(path.name,))
        return BenchProject(
            root=root,
            name=path.stem,
            package=None,
            config=config,
            pythonpath=_paths(root, config.pythonpath),
            packages=project_packages(None, config.packages),
        )
    loaded = load_config(path)
    config = loaded.bench
    if not config.modules:
        raise NothingToDo(
            f"{str(loaded.source)!r} names no benchmark modules",
            hint='add [bench] modules = ["benchmarks/bench_ops.py"] to cuship.toml',
        )
    pythonpath = _paths(loaded.root, config.pythonpath)
    dist: InstalledDist | None = None
    if installed:
        from cuship.provenance.installed import project_dist, without_shadowing

        dist = project_dist(loaded.project.name, loaded.source)
        pythonpath = without_shadowing(pythonpath, dist)
    return BenchProject(
        root=loaded.root,
        name=loaded.project.name or loaded.root.name,
        package=loaded.project.name,
        config=config,
        pythonpath=pythonpath,
        packages=project_packages(loaded.project.name, config.packages),
        installed=dist,
    )
