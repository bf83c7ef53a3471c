"""``[tool.cuship.prebuilt]`` of a project's pyproject.toml, read into a frozen value.

A setup.py project needs no ``[project]`` table: its name and version come from the sdist's
PKG-INFO (where the frontend unpacked it), or ``name`` in the table. ``build-env`` sets
environment variables for a source build; the switches such projects read to skip their own
prebuilt download (``CAUSAL_CONV1D_FORCE_BUILD``, ``FLASH_ATTENTION_FORCE_BUILD``: any
``*_FORCE_BUILD`` setup.py names) are switched on too, so a server outage compiles instead of
failing on GitHub.
"""

from __future__ import annotations

import email.parser
import re
import sys
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from cuship import _read
from cuship._record import frozen
from cuship.config.script import read_build_script
from cuship.errors import ConfigError

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - Python 3.10
    pass

__all__ = ["PrebuiltConfig", "read_config"]

_KEYS = frozenset({"index", "url", "backend", "build-requires", "name", "build-env"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
_BACKEND = re.compile(rf"{_DOTTED}(:{_DOTTED})?")


@frozen
class PrebuiltConfig:
    """Where prebuilt wheels are, and the real backend that builds from source."""

    name: str
    version: str | None  # [project] version, else the sdist's PKG-INFO; None: unknown yet
    index: str | None = None
    url: str | None = None
    backend: str = "setuptools.build_meta"
    build_requires: tuple[str, ...] = ()
    build_env: tuple[tuple[str, str], ...] = ()  # set for a source build (sorted by name)

    @property
    def requirement(self) -> str:
        """``name==version`` (the sdist's own version; labels like +cu128 still match)."""
        return f"{self.name}=={self.version}" if self.version else self.name


def _text(table: dict[str, Any], key: str, source: str) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(source, f"tool.cuship.prebuilt.{key}", f"must be a string, got {value!r}")
    return value


def read_config(path: Path) -> PrebuiltConfig:
    """Read ``path`` (a pyproject.toml); errors name the file and the key."""
    source = str(path)
    try:
        document = _read.toml(_read.read_text(path, _read.CONFIG))
    except OSError as err:
        raise ConfigError(source, None, f"cannot read it: {err}") from err
    except _read.Refused as err:
        raise ConfigError(source, None, err.problem.removeprefix("is "), hint=err.hint) from None
    project = document.get("project", {})
    table = document.get("tool", {}).get("cuship", {}).get("prebuilt", {})
    if not isinstance(table, dict):
        raise ConfigError(source, "tool.cuship.prebuilt", "must be a table")
    pkg_info = _sdist_headers(path.parent / "PKG-INFO")
    name = project.get("name") or _text(table, "name", source) or pkg_info.get("Name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            source,
            "project.name",
            "missing: no [project] name, no [tool.cuship.prebuilt] name, no PKG-INFO (a source "
            "tree, not an sdist)",
            hint='name the project: [tool.cuship.prebuilt] name = "..."',
        )
    version = project.get("version")
    if not isinstance(version, str):
        version = pkg_info.get("Version")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            source,
            f"tool.cuship.prebuilt.{unknown[0]}",
            "unknown key",
            hint=f"known: {sorted(_KEYS)}",
        )
    return PrebuiltConfig(
        name=name,
        version=version,
        index=_text(table, "index", source),
        url=_text(table, "url", source),
        backend=_backend(table, source),
        build_requires=_requirements(table, source),
        build_env=_build_env(table, source, path.parent),
    )


def _build_env(table: dict[str, Any], source: str, root: Path) -> tuple[tuple[str, str], ...]:
    value = table.get("build-env", {})
    key = "tool.cuship.prebuilt.build-env"
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and _ENV_NAME.fullmatch(k) and isinstance(v, str)
        for k, v in value.items()
    ):
        raise ConfigError(
            source,
            key,
            f"must be a table of environment variable names to strings, got {value!r}",
            hint='write e.g. build-env = { MAX_JOBS = "4" }',
        )
    found = {name: "TRUE" for name in read_build_script(root).force_switches}
    return tuple(sorted({**found, **value}.items()))


def _sdist_headers(pkg_info: Path) -> dict[str, str]:
    """Name and Version an sdist's PKG-INFO states (a dynamic version is fixed when the sdist
    is made); empty for a source tree."""
    try:
        text = _read.read_head(pkg_info, _read.METADATA, 1 << 20).decode("utf-8")
        headers = email.parser.HeaderParser().parsestr(text)
    except (OSError, UnicodeDecodeError, _read.Refused):
        return {}
    found = {}
    for key in ("Name", "Version"):
        value = headers.get(key)
        if isinstance(value, str) and value.strip():
            found[key] = value.strip()
    return found


def _backend(table: dict[str, Any], source: str) -> str:
    spec = (_text(table, "backend", source) or "setuptools.build_meta").strip()
    if not _BACKEND.fullmatch(spec):
        raise ConfigError(
            source,
            "tool.cuship.prebuilt.backend",
            f"{spec!r} is not a module or module:object",
            hint='write e.g. "scikit_build_core.build" or "setuptools.build_meta"',
        )
    return spec


def _requirements(table: dict[str, Any], source: str) -> tuple[str, ...]:
    requires = table.get("build-requires", [])
    key = "tool.cuship.prebuilt.build-requires"
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise ConfigError(source, key, f"must be a list of strings, got {requires!r}")
    for text in requires:
        try:
            Requirement(text)
        except InvalidRequirement as err:
            raise ConfigError(
                source,
                key,
                f"{text!r} is not a requirement ({err})",
                hint='write e.g. "scikit-build-core>=0.10"',
            ) from err
    return tuple(requires)
