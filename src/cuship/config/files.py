"""Reading config files as untrusted input: at most 4 MiB of UTF-8, TOML or YAML nested only as
deep as the parser goes, and pyproject.toml's tables and values type-checked before use. Every
problem is a :class:`~cuship.errors.ConfigError` naming the file (and the key, when there is one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cuship import _read
from cuship._format import size_text
from cuship._read import shown
from cuship.errors import ConfigError

__all__ = [
    "MAX_CONFIG_BYTES",
    "pyproject_value",
    "read_text",
    "read_toml",
    "read_yaml",
    "strings",
    "table",
]

MAX_CONFIG_BYTES = _read.CONFIG.limit  # a config file is a few KiB; this is far past any real one


def _refused(path: Path, err: _read.Refused, hint: str | None = None) -> ConfigError:
    return ConfigError(str(path), None, err.problem.removeprefix("is "), hint=hint or err.hint)


def read_text(path: Path) -> str:
    """The file's text: at most MAX_CONFIG_BYTES of UTF-8, or a ConfigError naming it."""
    try:
        return _read.read_text(path, _read.CONFIG)
    except OSError as err:
        raise ConfigError(str(path), None, f"cannot read: {err.strerror}") from err
    except _read.Refused as err:
        if "larger than" in err.problem:
            problem = f"larger than {size_text(MAX_CONFIG_BYTES)}: not a config file"
            raise ConfigError(str(path), None, problem) from None
        raise _refused(path, err) from None


_DEEP_HINT = "a cuship config nests a few levels at most; check the file"


def read_toml(path: Path) -> dict[str, Any]:
    text = read_text(path)
    try:
        return _read.toml(text)
    except _read.Refused as err:
        raise _refused(path, err, _DEEP_HINT if "nested" in err.problem else None) from err


def read_yaml(path: Path) -> Any:
    text = read_text(path)
    try:
        return _read.yaml(text)
    except _read.Refused as err:
        raise _refused(path, err, _DEEP_HINT if "nested" in err.problem else None) from err


def table(document: Mapping[str, Any], key: str, source: Path) -> Mapping[str, Any]:
    """``document[key]`` when it is a table, ``{}`` when absent; anything else is a ConfigError."""
    value = document.get(key.rpartition(".")[2], {})
    if not isinstance(value, Mapping):
        raise ConfigError(str(source), key, f"expected a table, got {shown(value)}")
    return value


def strings(value: Any, source: Path, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(str(source), key, f"expected a list of strings, got {shown(value)}")
    return tuple(value)


def pyproject_value(
    table: Mapping[str, Any], key: str, source: Path, check: Callable[[str], None]
) -> str | None:
    """A string of pyproject's [project], checked like the same key of cuship.toml."""
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(str(source), f"project.{key}", f"expected a string, got {shown(value)}")
    try:
        check(value)
    except ValueError as err:
        raise ConfigError(str(source), f"project.{key}", str(err)) from None
    return value
