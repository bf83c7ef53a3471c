"""``build-backend = "cuship.backend"``: PEP 517 hooks that take a verified prebuilt wheel for
this machine when one fits, and otherwise delegate to the project's real backend.

See :mod:`cuship.resolve.backend` for the ``[tool.cuship.prebuilt]`` table and the environment
variables. This module is an entry point like the CLI: it reads the environment, says on stderr
what it decided, and turns a :class:`~cuship.errors.CushipError` into its message, its hint and
an exit status (the frontend shows them; no traceback). Every hook works in a build environment
that holds only cuship: the sdist and editable hooks ask for the real backend first.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cuship.errors import CushipError
from cuship.events import Event

__all__ = [
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_wheel",
]

_DELEGATED = frozenset({"prepare_metadata_for_build_editable", "build_editable"})
_T = TypeVar("_T")


def _stderr(event: Event) -> None:
    if event.level != "debug":
        sys.stderr.write(f"cuship.backend: {event.message}\n")
        sys.stderr.flush()


def _hook(function: Callable[..., _T]) -> Callable[..., _T]:
    """Report a CushipError as the frontend's build error: message, hint, exit status."""

    @functools.wraps(function)
    def hook(*args: Any, **kwargs: Any) -> _T:
        try:
            return function(*args, **kwargs)
        except CushipError as err:
            sys.stderr.write(f"cuship.backend: error: {err}\n")
            sys.stderr.flush()
            raise SystemExit(err.exit_code) from None

    return hook


def _hooks() -> Any:
    from cuship.resolve._stash import frontend_key
    from cuship.resolve.backend import Prebuilt

    return Prebuilt(
        project=Path.cwd(),
        environ=os.environ,
        emit=_stderr,
        frontend=frontend_key(os.getppid()),
    )


@_hook
def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    result: list[str] = _hooks().get_requires_for_build_sdist(config_settings)
    return result


@_hook
def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    result: str = _hooks().build_sdist(sdist_directory, config_settings)
    return result


@_hook
def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    result: list[str] = _hooks().get_requires_for_build_wheel(config_settings)
    return result


@_hook
def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    result: str = _hooks().prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    return result


@_hook
def build_wheel(
    wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None
) -> str:
    result: str = _hooks().build_wheel(wheel_directory, config_settings, metadata_directory)
    return result


@_hook
def get_requires_for_build_editable(config_settings: Any = None) -> list[str]:
    result: list[str] = _hooks().get_requires_for_build_editable(config_settings)
    return result


@_hook
def _real_hook(name: str) -> Any:
    from cuship.resolve.backend import load_backend
    from cuship.resolve.settings import read_config

    config = read_config(Path.cwd() / "pyproject.toml")
    _hooks().real_backend(config, "editable", None)  # a clear error when it cannot be imported
    return getattr(load_backend(config.backend), name)


def __getattr__(name: str) -> Any:
    """The real backend's optional editable hooks (PEP 562): missing there, missing here."""
    if name not in _DELEGATED:
        raise AttributeError(name)
    return _real_hook(name)
