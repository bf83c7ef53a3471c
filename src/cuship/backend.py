"""``build-backend = "cuship.backend"``: PEP 517 hooks that take a verified prebuilt wheel for
this machine when one fits, and otherwise delegate to the project's real backend.

See :mod:`cuship.resolve.backend` for the ``[tool.cuship.prebuilt]`` table and the environment
variables. This module is an entry point like the CLI: it reads the environment, and says on
stderr what it decided. Hooks it does not define (sdist, editable, ...) come from the real
backend.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from cuship.events import Event

__all__ = ["build_wheel", "get_requires_for_build_wheel", "prepare_metadata_for_build_wheel"]

_DELEGATED = frozenset(
    {
        "get_requires_for_build_sdist",
        "build_sdist",
        "get_requires_for_build_editable",
        "prepare_metadata_for_build_editable",
        "build_editable",
    }
)


def _stderr(event: Event) -> None:
    if event.level != "debug":
        sys.stderr.write(f"cuship.backend: {event.message}\n")
        sys.stderr.flush()


def _hooks() -> Any:
    from cuship.resolve.backend import Prebuilt

    return Prebuilt(project=Path.cwd(), environ=os.environ, emit=_stderr)


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    result: list[str] = _hooks().get_requires_for_build_wheel(config_settings)
    return result


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    result: str = _hooks().prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    return result


def build_wheel(
    wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None
) -> str:
    result: str = _hooks().build_wheel(wheel_directory, config_settings, metadata_directory)
    return result


def __getattr__(name: str) -> Any:
    """The real backend's hook for everything but the wheel hooks (PEP 562)."""
    if name not in _DELEGATED:
        raise AttributeError(name)
    from cuship.resolve.backend import load_backend
    from cuship.resolve.settings import read_config

    real = load_backend(read_config(Path.cwd() / "pyproject.toml").backend)
    return getattr(real, name)
