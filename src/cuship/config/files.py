"""Reading config files as untrusted input: at most 4 MiB of UTF-8, TOML or YAML nested only as
deep as the parser goes, and pyproject.toml's tables and values type-checked before use. Every
problem is a :class:`~cuship.errors.ConfigError` naming the file (and the key, when there is one).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cuship._format import size_text
from cuship._json import shown
from cuship.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "MAX_CONFIG_BYTES",
    "pyproject_value",
    "read_text",
    "read_toml",
    "read_yaml",
    "strings",
    "table",
]

MAX_CONFIG_BYTES = 4 << 20  # a config file is a few KiB; this is far past any real one


def read_text(path: Path) -> str:
    """The file's text: at most MAX_CONFIG_BYTES of UTF-8, or a ConfigError naming it."""
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = b"" if size > MAX_CONFIG_BYTES else fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise ConfigError(str(path), None, f"cannot read: {err.strerror}") from err
    if max(size, len(data)) > MAX_CONFIG_BYTES:
        raise ConfigError(
            str(path), None, f"larger than {size_text(MAX_CONFIG_BYTES)}: not a config file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfigError(
            str(path),
            None,
            f"not UTF-8 text: byte 0x{data[err.start]:02x} on line {line} cannot be decoded",
            hint="save the file as UTF-8",
        ) from None


def _too_deep(path: Path) -> ConfigError:
    return ConfigError(
        str(path),
        None,
        "nested too deeply: arrays or tables inside each other thousands of levels down",
        hint="a cuship config nests a few levels at most; check the file",
    )


def read_toml(path: Path) -> dict[str, Any]:
    text = read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(str(path), None, f"not valid TOML: {err}") from err
    except RecursionError:
        raise _too_deep(path) from None


def read_yaml(path: Path) -> Any:
    import yaml

    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(str(path), None, f"not valid YAML: {err}") from err
    except RecursionError:
        raise _too_deep(path) from None


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
