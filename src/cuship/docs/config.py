"""The configuration reference: every key of cuship.toml, from the dataclasses the loader reads
and the JSON Schema they make (``cuship config --schema``), with the environment variable or
command-line option that sets the same thing where one exists."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import click

from cuship import settings
from cuship.docs._md import code, table, text

__all__ = ["Key", "all_keys", "render", "type_of"]

_NAME = re.compile(r"\bCUSHIP_[A-Z0-9_]*[A-Z0-9]\b")
# The commands whose options of a key's name override that key of a section.
_COMMANDS = {"build": ("build", "ship"), "check": ("check",), "bench": ("bench run",)}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Key:
    """One key: its table (``check.quick``), name, schema and default as written in TOML."""

    section: str
    name: str
    schema: Mapping[str, Any]
    default: str

    @property
    def toml(self) -> str:
        """``[build] parallel``: how the key is spelled in cuship.toml."""
        return f"[{self.section}] {self.name}"


def _toml(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if dataclasses.is_dataclass(value):
        return "{}"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _walk(cls: type, schema: Mapping[str, Any], section: str) -> Iterator[Key]:
    """The keys of one table, then those of the tables inside it (``[check]``, then
    ``[check.quick]``), as a reader finds them."""
    nested: list[tuple[type, Mapping[str, Any], str]] = []
    for field in dataclasses.fields(cls):
        if not field.init or field.name not in schema["properties"]:
            continue
        sub = schema["properties"][field.name]
        default = _default(field)
        if (
            sub.get("type") == "object"
            and "properties" in sub
            and dataclasses.is_dataclass(default)
        ):
            place = f"{section}.{field.name}" if section else field.name
            nested.append((type(default), sub, place))
            continue
        yield Key(section=section, name=field.name, schema=sub, default=_toml(default))
    for inner, sub, place in nested:
        yield from _walk(inner, sub, place)


def all_keys() -> list[Key]:
    """Every key of cuship.toml, section by section, in the order the loader declares them."""
    from cuship.config import json_schema
    from cuship.config.sections import _ConfigFile

    return list(_walk(_ConfigFile, json_schema(), ""))


def type_of(schema: Mapping[str, Any]) -> str:
    """A JSON Schema type in words: ``string``, ``"auto" | "always"``, ``list of string``."""
    if "enum" in schema:
        return " \\| ".join(code(json.dumps(v)) for v in schema["enum"])
    if "anyOf" in schema:
        options = [type_of(s) for s in schema["anyOf"]]
        return " or ".join(dict.fromkeys(options))
    kind = schema.get("type", "any")
    if kind == "array":
        return "list of " + type_of(schema.get("items", {}))
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, Mapping):
            return "table of " + type_of(values)
        return "table"
    return str(kind)


def _variables(key: Key) -> list[str]:
    """The variables a user sets instead of the key: those its description names, and those
    whose default is the key (``[check]`/`[bench] store``)."""
    users = [item for item in settings.SETTINGS if item.by == "user"]
    found = set(_NAME.findall(str(key.schema.get("description", ""))))
    found &= {item.name for item in users}
    for item in users:
        default = item.default.replace("`", "")
        if f"[{key.section}]" in default and default.endswith(f" {key.name}"):
            found.add(item.name)
    return sorted(found)


def _options(key: Key, flags: Mapping[str, set[str]]) -> list[str]:
    spelled = "--" + key.name.replace("_", "-")
    return [
        f"{path} {spelled}" for path in _COMMANDS.get(key.section, ()) if spelled in flags[path]
    ]


def _flags() -> dict[str, set[str]]:
    from cuship.docs.cli import commands

    out: dict[str, set[str]] = {}
    for ctx, command in commands():
        path = ctx.command_path.removeprefix("cuship ")
        out[path] = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
    return out


def render() -> str:
    """The page: one table per section."""
    flags = _flags()
    parts = [
        "# Configuration keys\n",
        "Generated from the configuration's dataclasses and the JSON Schema they make "
        "(`cuship config --schema`, also in `src/cuship/schema/cuship.schema.json`) when the site "
        "is built. Keys go in `cuship.toml`, or under `[tool.cuship]` in `pyproject.toml` "
        "(`[tool.cuship.build]`); `nvcc_threads` and `nvcc-threads` are the same key. An empty "
        "default means the key is unset and the description says what happens then. A key with "
        "an environment variable or a command-line option names it: those win over the file. "
        "The guides say how the keys work together: [Configuration](../configuration.md).\n",
    ]
    current = None
    rows: list[list[str]] = []
    for key in all_keys():
        if key.section != current:
            if rows:
                parts.append(_table(rows))
            current, rows = key.section, []
            parts.append(f"## [{key.section}]\n")
        overrides = [code(v) for v in _variables(key)]
        overrides += [code(f"cuship {o}") for o in _options(key, flags)]
        rows.append(
            [
                code(key.name),
                type_of(key.schema),
                code(key.default) if key.default else "",
                ", ".join(overrides),
                text(str(key.schema.get("description", ""))),
            ]
        )
    parts.append(_table(rows))
    return "\n".join(parts)


def _table(rows: list[list[str]]) -> str:
    return table(["key", "type", "default", "also set by", "meaning"], rows)
