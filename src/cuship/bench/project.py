"""Where the benchmarks of a project come from: a project directory (its ``[bench]`` config) or
a single benchmark module given as a ``.py`` path (read by :func:`cuship.project.locate`), and
what its configuration says of one point."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cuship.config import BenchSection
from cuship.project import Located, locate

__all__ = ["BenchProject", "find_project", "point_floors", "point_threshold"]

BenchProject = Located[BenchSection]


def find_project(path: Path, *, installed: bool = False) -> BenchProject:
    """The bench configuration for ``path`` (a project directory or a benchmark module file)."""
    return locate(path, "bench", BenchSection(), installed=installed)


def point_threshold(config: BenchSection, name: str, key: str) -> float:
    """The effect-size threshold of a point: ``[bench.cases.<key or name>]``, else global."""
    for label in (key, name):
        entry = config.cases.get(label)
        if entry is not None and entry.threshold is not None:
            return entry.threshold
    return config.threshold


def point_floors(config: BenchSection, name: str, key: str) -> Mapping[str, str]:
    """The floors of a point: the case's own when it has any, else ``[bench.floors]``."""
    for label in (key, name):
        entry = config.cases.get(label)
        if entry is not None and entry.floors:
            return entry.floors
    return config.floors
