"""``build-backend = "cuship.backend"``: PEP 517 hooks that take a verified prebuilt wheel for
this machine when one fits, and otherwise delegate to the project's real backend.

See :mod:`cuship.resolve.backend` for the ``[tool.cuship.prebuilt]`` table and the environment
variables. This module is an entry point like the CLI: it reads the environment, says on stderr
what it decided, and turns a :class:`~cuship.errors.CushipError` into its message, its hint and
an exit status (the frontend shows them; no traceback). Every PEP 517/660 hook is defined here,
so a frontend that asks which hooks exist (pip does, before ``-e``) needs only cuship; the sdist
and editable hooks ask for the real backend first (``get_requires_for_build_*``), then use it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cuship import settings
from cuship.errors import CushipError
from cuship.events import INTERVAL, Cadence, Emit, Event, progress_interval

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

_T = TypeVar("_T")


def _cadence() -> Cadence:
    seconds = progress_interval(os.environ.get(settings.PROGRESS_INTERVAL))
    return Cadence(INTERVAL if seconds is None else seconds)


def _stderr(cadence: Cadence) -> Emit:
    """Events as lines on stderr (the frontend shows them with -v); progress events as
    ``cadence`` picks them (a large download's megabytes)."""

    def emit(event: Event) -> None:
        # fetch's "downloaded … verified" is said again, with the URL and why, by the backend
        quiet = event.level == "debug" or (event.topic == "fetch" and event.level == "info")
        if quiet or (event.level == "progress" and not cadence.admit(event)):
            return
        sys.stderr.write(f"cuship.backend: {event.message}\n")
        sys.stderr.flush()

    return emit


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
    from cuship.resolve.backend import Prebuilt
    from cuship.resolve.http import fetch_options
    from cuship.resolve.stash import frontend_key

    return Prebuilt(
        project=Path.cwd(),
        environ=os.environ,
        emit=_stderr(_cadence()),
        options=fetch_options(os.environ),
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
def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Any = None
) -> str:
    result: str = _hooks().prepare_metadata_for_build_editable(metadata_directory, config_settings)
    return result


@_hook
def build_editable(
    wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None
) -> str:
    result: str = _hooks().build_editable(wheel_directory, config_settings, metadata_directory)
    return result
