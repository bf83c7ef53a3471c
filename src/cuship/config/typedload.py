"""Load plain TOML/YAML data into frozen dataclasses, strictly, and describe them as JSON Schema.

Every field is checked against its annotation; unknown keys, wrong types and bad values raise
:class:`cuship.errors.ConfigError` naming the source file, the key path and the fix. A scalar is
accepted where a tuple is expected (``python = "3.12"`` means ``("3.12",)``). Floats are refused
where strings are expected, because TOML reads ``3.10`` as ``3.1``. The data is untrusted input:
floats must be finite (TOML and YAML both spell ``nan`` and ``inf``), and a list or table holds at
most :data:`MAX_ITEMS` entries.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from cuship._json import shown
from cuship.errors import ConfigError

__all__ = ["MAX_ITEMS", "Validator", "field_doc", "load", "schema"]

MAX_ITEMS = 1000  # entries in one list or table: far above any real config, far below harm

T = TypeVar("T")
Validator = Callable[[Any], None]


def field_doc(doc: str, *, validate: Validator | None = None, **kwargs: Any) -> Any:
    """A dataclass field carrying a description (for the schema) and an optional validator.

    The validator raises ValueError; on a tuple field it sees one item at a time.
    """
    metadata = {"doc": doc, "validate": validate}
    return dataclasses.field(metadata=metadata, **kwargs)


def _key(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp) if a is not type(None))
    if origin is tuple:
        return f"list of {_type_name(get_args(tp)[0])}"
    if origin in (dict, Mapping, typing.Mapping):
        return f"table of {_type_name(get_args(tp)[1])}"
    if dataclasses.is_dataclass(tp):
        return "table"
    return getattr(tp, "__name__", str(tp))


class _Loader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str, hint: str | None = None) -> ConfigError:
        return ConfigError(self.source, key or None, problem, hint=hint)

    def value(self, tp: Any, raw: Any, key: str) -> Any:
        origin = get_origin(tp)
        if tp is Any or tp is object:
            return raw
        if origin in (Union, types.UnionType):
            return self._union(tp, raw, key)
        if origin is Literal:
            if raw not in get_args(tp):
                raise self.fail(key, f"{shown(raw)} is not one of {_type_name(tp)}")
            return raw
        if origin is tuple:
            return self._tuple(tp, raw, key)
        if origin in (dict, Mapping, typing.Mapping):
            return self._mapping(tp, raw, key)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return self.dataclass(tp, raw, key)
        return self._scalar(tp, raw, key)

    def _union(self, tp: Any, raw: Any, key: str) -> Any:
        options = [a for a in get_args(tp) if a is not type(None)]
        if raw is None and len(options) < len(get_args(tp)):
            return None
        errors = []
        for option in options:
            try:
                return self.value(option, raw, key)
            except ConfigError as err:
                errors.append(err)
        raise (
            errors[0]
            if len(errors) == 1
            else self.fail(key, f"expected {_type_name(tp)}, got {shown(raw)}")
        )

    def _count(self, raw: list[Any] | tuple[Any, ...] | Mapping[Any, Any], key: str) -> None:
        if len(raw) > MAX_ITEMS:
            raise self.fail(
                key,
                f"holds {len(raw):,} entries; at most {MAX_ITEMS:,}",
                hint="list only what you mean to build or check",
            )

    def _tuple(self, tp: Any, raw: Any, key: str) -> tuple[Any, ...]:
        (item_tp, *_rest) = get_args(tp)
        items = raw if isinstance(raw, list | tuple) else [raw]
        self._count(items, key)
        return tuple(self.value(item_tp, item, _key(key, i)) for i, item in enumerate(items))

    def _mapping(self, tp: Any, raw: Any, key: str) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.fail(key, f"expected a table, got {shown(raw)}")
        self._count(raw, key)
        value_tp = get_args(tp)[1]
        return types.MappingProxyType(
            {str(k): self.value(value_tp, v, _key(key, str(k))) for k, v in raw.items()}
        )

    def _scalar(self, tp: Any, raw: Any, key: str) -> Any:
        if tp is str and isinstance(raw, float):
            raise self.fail(
                key, f"expected a string, got the number {shown(raw)}", hint=f'quote it: "{raw}"'
            )
        if tp is float and isinstance(raw, int) and not isinstance(raw, bool):
            return float(raw)
        if tp is float and isinstance(raw, float) and not math.isfinite(raw):
            raise self.fail(
                key, f"expected a finite number, got {shown(raw)}", hint="write a number"
            )
        if tp is bool and not isinstance(raw, bool):
            raise self.fail(key, f"expected true or false, got {shown(raw)}")
        if tp is int and (isinstance(raw, bool) or not isinstance(raw, int)):
            raise self.fail(key, f"expected an integer, got {shown(raw)}")
        if tp is str and isinstance(raw, int) and not isinstance(raw, bool):
            return str(raw)
        if not isinstance(raw, tp):
            raise self.fail(key, f"expected {_type_name(tp)}, got {shown(raw)}")
        return raw

    def _validate(self, validate: Validator | None, value: Any, key: str) -> None:
        """Run a field's validator; on a tuple, once per item so errors name the index."""
        if validate is None:
            return
        items = enumerate(value) if isinstance(value, tuple) else [(None, value)]
        for index, item in items:
            try:
                validate(item)
            except ValueError as err:
                raise self.fail(key if index is None else _key(key, index), str(err)) from err

    def dataclass(self, cls: type[T], raw: Any, key: str) -> T:
        if not isinstance(raw, Mapping):
            raise self.fail(key, f"expected a table, got {shown(raw)}")
        fields = {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        fields.update({f.name: f for f in dataclasses.fields(cls)})  # type: ignore[arg-type]
        hints = get_type_hints(cls)
        kwargs: dict[str, Any] = {}
        for name, raw_value in raw.items():
            field = fields.get(str(name))
            if field is None or not field.init:
                known = sorted({f.name for f in fields.values() if f.init})
                near = difflib.get_close_matches(str(name), known, n=1)
                hint = f"did you mean {near[0]!r}?" if near else f"known keys: {', '.join(known)}"
                raise self.fail(_key(key, str(name)), "unknown key", hint=hint)
            value = self.value(hints[field.name], raw_value, _key(key, str(name)))
            self._validate(field.metadata.get("validate"), value, _key(key, str(name)))
            kwargs[field.name] = value
        try:
            return cls(**kwargs)
        except TypeError as err:
            raise self.fail(key, f"missing required key: {err}") from err


def load(cls: type[T], raw: Any, *, source: str, key: str = "") -> T:
    """Build ``cls`` from ``raw`` (parsed TOML/YAML); errors name ``source`` and the key path."""
    return _Loader(source).dataclass(cls, raw, key)


def schema(tp: Any) -> dict[str, Any]:  # noqa: C901 - one branch per type form
    """JSON Schema (draft 2020-12 subset) for a dataclass or field type."""
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return {}
    if origin in (Union, types.UnionType):
        options = [schema(a) for a in get_args(tp) if a is not type(None)]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin is tuple:
        item = schema(get_args(tp)[0])
        return {"anyOf": [item, {"type": "array", "items": item}]}
    if origin in (dict, Mapping, typing.Mapping):
        return {"type": "object", "additionalProperties": schema(get_args(tp)[1])}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = get_type_hints(tp)
        props: dict[str, Any] = {}
        required = []
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            props[f.name] = {**schema(hints[f.name])}
            if f.metadata.get("doc"):
                props[f.name]["description"] = f.metadata["doc"]
            no_default = f.default is dataclasses.MISSING
            if no_default and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
        out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if tp.__doc__:
            out["description"] = " ".join(tp.__doc__.split())
        if required:
            out["required"] = required
        return out
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return {"type": names.get(tp, "string")}
