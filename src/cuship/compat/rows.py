"""Typed access to the ``[[table]]`` rows of a TOML data file.

Every problem becomes a :class:`~cuship.errors.ConfigError` that names the file and the key
(``toolkit[3].sms``), so a broken data file says exactly where it is broken.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from cuship.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

__all__ = ["Row", "read_rows"]


def read_rows(path: Path, table: str) -> list[Row]:
    """Parse ``path`` and return the rows of its ``[[table]]`` array (at least one)."""
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except OSError as err:
        raise ConfigError(str(path), None, f"cannot read: {err}") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(str(path), None, f"not valid TOML: {err}") from err
    rows = document.get(table)
    if not isinstance(rows, list) or not rows:
        raise ConfigError(
            str(path), table, "missing or empty", hint=f"add [[{table}]] rows to {path.name}"
        )
    result: list[Row] = []
    for index, data in enumerate(rows):
        if not isinstance(data, dict):
            raise ConfigError(str(path), f"{table}[{index}]", "each row must be a table")
        result.append(Row(file=str(path), key=f"{table}[{index}]", data=data))
    return result


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One row of a data file: where it is, and its raw values."""

    file: str
    key: str
    data: Mapping[str, object]

    def fail(self, name: str | None, problem: str, hint: str | None = None) -> ConfigError:
        """Build the error for ``name`` in this row (the caller raises it)."""
        where = f"{self.key}.{name}" if name else self.key
        return ConfigError(self.file, where, problem, hint=hint)

    def only(self, allowed: Iterable[str]) -> None:
        """Reject keys outside ``allowed`` (a typo would otherwise be silently ignored)."""
        extra = sorted(set(self.data) - set(allowed))
        if extra:
            raise self.fail(extra[0], "unknown key", hint=f"known keys: {', '.join(allowed)}")

    def _value(self, name: str) -> object:
        if name not in self.data:
            raise self.fail(name, "missing")
        return self.data[name]

    def text(self, name: str, default: str | None = None) -> str:
        """A string value; ``default`` makes it optional."""
        if default is not None and name not in self.data:
            return default
        value = self._value(name)
        if not isinstance(value, str):
            raise self.fail(name, f"must be a string, got {value!r}")
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        """A list of strings, as a tuple."""
        value = self._value(name)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(name, f"must be a list of strings, got {value!r}")
        return tuple(value)

    def ints(self, name: str) -> tuple[int, ...]:
        """A list of integers (booleans are not integers here)."""
        value = self._value(name)
        if not isinstance(value, list) or not all(
            isinstance(item, int) and not isinstance(item, bool) for item in value
        ):
            raise self.fail(name, f"must be a list of integers, got {value!r}")
        return tuple(value)

    def bools(self, name: str) -> tuple[bool, ...]:
        """A non-empty list of booleans."""
        value = self._value(name)
        if not isinstance(value, list) or not value or not all(isinstance(i, bool) for i in value):
            raise self.fail(name, f"must be a non-empty list of true/false, got {value!r}")
        return tuple(value)

    def version(self, name: str) -> Version:
        """A string that parses as a PEP 440 version."""
        return self.parse_version(name, self.text(name))

    def parse_version(self, name: str, text: str) -> Version:
        try:
            return Version(text)
        except InvalidVersion as err:
            raise self.fail(name, f"{text!r} is not a version") from err
