"""``[tool.cuship.prebuilt]`` of a project's pyproject.toml, read into a frozen value."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuship.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["PrebuiltConfig", "read_config"]

_KEYS = frozenset({"index", "url", "backend", "build-requires"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PrebuiltConfig:
    """Where prebuilt wheels are, and the real backend that builds from source."""

    name: str
    version: str | None
    index: str | None = None
    url: str | None = None
    backend: str = "setuptools.build_meta"
    build_requires: tuple[str, ...] = ()

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
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(source, None, f"cannot read it: {err}") from err
    except UnicodeDecodeError as err:
        raise ConfigError(
            source, None, f"not UTF-8 text (byte offset {err.start})", hint="save it as UTF-8"
        ) from None
    except RecursionError:
        raise ConfigError(source, None, "nested too deeply to read") from None
    project = document.get("project", {})
    name = project.get("name")
    if not isinstance(name, str):
        raise ConfigError(source, "project.name", "missing", hint="cuship.backend needs [project]")
    version = project.get("version")
    table = document.get("tool", {}).get("cuship", {}).get("prebuilt", {})
    if not isinstance(table, dict):
        raise ConfigError(source, "tool.cuship.prebuilt", "must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            source,
            f"tool.cuship.prebuilt.{unknown[0]}",
            "unknown key",
            hint=f"known: {sorted(_KEYS)}",
        )
    requires = table.get("build-requires", [])
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise ConfigError(
            source, "tool.cuship.prebuilt.build-requires", "must be a list of strings"
        )
    return PrebuiltConfig(
        name=name,
        version=version if isinstance(version, str) else None,
        index=_text(table, "index", source),
        url=_text(table, "url", source),
        backend=_text(table, "backend", source) or "setuptools.build_meta",
        build_requires=tuple(requires),
    )
