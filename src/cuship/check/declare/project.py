"""Where the checks of a project come from: a project directory (its ``[check]`` config) or a
single check module given as a ``.py`` path (read by :func:`cuship.project.locate`)."""

from __future__ import annotations

from pathlib import Path

from cuship.config import CheckSection
from cuship.project import Located, locate

__all__ = ["CheckProject", "find_project"]

CheckProject = Located[CheckSection]


def find_project(path: Path, *, installed: bool = False) -> CheckProject:
    """The check configuration for ``path`` (a project directory or a check module file)."""
    return locate(path, "check", CheckSection(), installed=installed)
