"""File formats as types: load TOML/YAML into frozen dataclasses, strictly, and describe the same
dataclasses as JSON Schema (the published ``*.schema.json`` files live beside this module).

Every field is checked against its annotation; unknown keys, wrong types and bad values raise
:class:`cuship.errors.ConfigError` naming the source file, the key path and the fix. By default
a scalar is accepted where a tuple is expected (``python = "3.12"`` means ``("3.12",)``) and an
integer where a string is, as people write configuration by hand; ``strict=True`` (the data
files) wants lists and strings as such. Floats are refused where strings are expected, because
TOML reads ``3.10`` as ``3.1``. ``packaging`` versions are read from strings.

The data is untrusted input: floats must be finite (TOML and YAML both spell ``nan`` and
``inf``), and a list or table holds at most :data:`MAX_ITEMS` entries. Checks that look across
rows run after loading and build their errors from a :class:`Place`.
"""

from __future__ import annotations

import dataclasses
import functools
import marshal
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from packaging.version import InvalidVersion, Version

from cuship import _read
from cuship._read import shown
from cuship.errors import ConfigError

__all__ = ["MAX_ITEMS", "Place", "Validator", "field_doc", "load", "read_toml", "schema"]

MAX_ITEMS = 1000  # entries in one list or table: far above any real file, far below harm

T = TypeVar("T")
Validator = Callable[[Any], None]

# Types read from a string: what a bad string "is not", and the error their parser raises.
_FROM_STRING: dict[type, tuple[str, type[Exception]]] = {
    Version: ("a version", InvalidVersion),
}
_PLURALS = {str: "strings", int: "integers", float: "numbers", bool: "true/false values"}


def field_doc(
    doc: str,
    *,
    validate: Validator | None = None,
    non_empty: bool = False,
    not_empty_when_given: bool = False,
    strings: bool = False,
    schema: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """A dataclass field carrying a description (for the schema) and an optional validator.

    The validator raises ValueError; on a tuple field it sees one item at a time. ``non_empty``
    makes a tuple field required with at least one item; ``not_empty_when_given`` refuses an
    empty list written out (``cuda = []`` must not quietly mean the default). ``strings``: a
    list of strings whose items are never numbers turned into text (``arch = [80, 90]``).
    ``schema`` adds JSON Schema keywords saying what the validator checks
    (``{"exclusiveMinimum": 0}``).
    """
    metadata = {
        "doc": doc,
        "validate": validate,
        "non_empty": non_empty,
        "not_empty_when_given": not_empty_when_given,
        "strings": strings,
        "schema": schema,
    }
    return dataclasses.field(metadata=metadata, **kwargs)


@dataclasses.dataclass(frozen=True, slots=True)
class Place:
    """Where a loaded value came from: its file and key path (``toolkit[3]``)."""

    source: str
    key: str = ""

    def at(self, name: str | int) -> Place:
        """The place of a key (``"sms"``) or list index (``3``) inside this one."""
        return Place(self.source, _key(self.key, name))

    def each(self, values: Sequence[T]) -> list[tuple[Place, T]]:
        """The items of the list loaded from here, each with its place (``toolkit[0]``, …)."""
        return [(self.at(index), value) for index, value in enumerate(values)]

    def fail(self, name: str | None, problem: str, hint: str | None = None) -> ConfigError:
        """The error for key ``name`` here (or this place itself); the caller raises it."""
        key = _key(self.key, name) if name else self.key
        return ConfigError(self.source, key or None, problem, hint=hint)


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


@dataclasses.dataclass(frozen=True, slots=True)
class _Fields:
    """A dataclass's fields as the loader needs them, worked out once per class."""

    # Each field under both spellings: ``nvcc_threads`` and ``nvcc-threads``.
    by_key: Mapping[str, dataclasses.Field[Any]]
    hints: Mapping[str, Any]
    known: tuple[str, ...]
    required: tuple[dataclasses.Field[Any], ...]


@functools.cache
def _fields_of(cls: type) -> _Fields:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    by_key = {f.name.replace("_", "-"): f for f in fields}
    by_key.update({f.name: f for f in fields})
    required = tuple(
        f
        for f in fields
        if f.metadata.get("non_empty")
        or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    )
    known = tuple(sorted(f.name for f in fields))
    return _Fields(by_key=by_key, hints=get_type_hints(cls), known=known, required=required)


class _Loader:
    def __init__(self, source: str, *, strict: bool) -> None:
        self.source = source
        self.strict = strict

    def fail(self, key: str, problem: str, hint: str | None = None) -> ConfigError:
        return ConfigError(self.source, key or None, problem, hint=hint)

    def value(self, tp: Any, raw: Any, key: str) -> Any:
        if type(raw) is tp and (tp is not float or math.isfinite(raw)):  # the common case
            return raw
        return _reader(tp)(self, tp, raw, key)

    def _any(self, tp: Any, raw: Any, key: str) -> Any:
        return raw

    def _literal(self, tp: Any, raw: Any, key: str) -> Any:
        if raw not in get_args(tp):
            raise self.fail(key, f"{shown(raw)} is not one of {_type_name(tp)}")
        return raw

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
        if isinstance(raw, list | tuple):
            self._count(raw, key)
        if isinstance(raw, list) and item_tp is not float and all(type(i) is item_tp for i in raw):
            return tuple(raw)
        if not self.strict:
            items = raw if isinstance(raw, list | tuple) else [raw]
            return tuple(self.value(item_tp, item, _key(key, i)) for i, item in enumerate(items))
        # Strict: a list of plain values is right or wrong as a whole, as its schema says.
        what = f"a list of {_PLURALS.get(item_tp, _type_name(item_tp))}"
        if not isinstance(raw, list | tuple):
            raise self.fail(key, f"expected {what}, got {shown(raw)}")
        try:
            return tuple(self.value(item_tp, item, _key(key, i)) for i, item in enumerate(raw))
        except ConfigError as err:
            if item_tp not in _PLURALS:
                raise
            raise self.fail(key, f"expected {what}, got {shown(raw)}") from err

    def _mapping(self, tp: Any, raw: Any, key: str) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.fail(key, f"expected a table, got {shown(raw)}")
        self._count(raw, key)
        value_tp = get_args(tp)[1]
        return types.MappingProxyType(
            {str(k): self.value(value_tp, v, _key(key, str(k))) for k, v in raw.items()}
        )

    def _parsed(self, tp: type, raw: Any, key: str) -> Any:
        text = self._scalar(str, raw, key)
        what, error = _FROM_STRING[tp]
        try:
            return tp(text)
        except error as err:
            raise self.fail(key, f"{text!r} is not {what}") from err

    def _scalar(self, tp: Any, raw: Any, key: str) -> Any:
        if tp is str and isinstance(raw, float):
            raise self.fail(
                key, f"expected a string, got the number {shown(raw)}", hint=f'quote it: "{raw}"'
            )
        if tp is float and isinstance(raw, int) and not isinstance(raw, bool):
            return float(raw)
        if tp is float and not isinstance(raw, float):
            raise self.fail(key, f"expected a number, got {shown(raw)}")
        if tp is float and not math.isfinite(raw):
            raise self.fail(
                key, f"expected a finite number, got {shown(raw)}", hint="write a number"
            )
        if tp is bool and not isinstance(raw, bool):
            raise self.fail(key, f"expected true or false, got {shown(raw)}")
        if tp is int and (isinstance(raw, bool) or not isinstance(raw, int)):
            raise self.fail(key, f"expected an integer, got {shown(raw)}")
        if tp is str and isinstance(raw, int) and not isinstance(raw, bool) and not self.strict:
            return str(raw)
        if tp is str and not isinstance(raw, str):
            raise self.fail(key, f"expected a string, got {shown(raw)}")
        if not isinstance(raw, tp):
            raise self.fail(key, f"expected {_type_name(tp)}, got {shown(raw)}")
        return raw

    def _check(self, fields: _Fields, field: dataclasses.Field[Any], value: Any, key: str) -> None:
        """Run a field's own checks; a validator sees a tuple one item at a time."""
        if field.metadata.get("non_empty") and not value:
            raise self._missing(fields, field, key)
        validate: Validator | None = field.metadata.get("validate")
        if validate is None:
            return
        items = enumerate(value) if isinstance(value, tuple) else [(None, value)]
        for index, item in items:
            try:
                validate(item)
            except ValueError as err:
                raise self.fail(key if index is None else _key(key, index), str(err)) from err

    def _check_raw(self, field: dataclasses.Field[Any], raw: Any, key: str) -> None:
        """The checks made on the value as written, before it is converted."""
        if not isinstance(raw, list):
            return
        if field.metadata.get("not_empty_when_given") and not raw:
            raise self.fail(
                key,
                "is an empty list",
                hint="give at least one value, or leave the key out for the default",
            )
        if field.metadata.get("strings"):
            for index, item in enumerate(raw):
                if not isinstance(item, str):
                    raise self.fail(
                        _key(key, index),
                        f"expected a string, got {shown(item)}",
                        hint=f'quote it: "{item}"',
                    )

    def _missing(self, fields: _Fields, field: dataclasses.Field[Any], key: str) -> ConfigError:
        if not field.metadata.get("non_empty"):
            return self.fail(key, "missing required key")
        item_tp = get_args(fields.hints[field.name])
        hint = None
        if item_tp and dataclasses.is_dataclass(item_tp[0]) and "[" not in key:
            hint = f"add [[{key}]] tables"
        return self.fail(key, "missing or empty: must be a non-empty list", hint=hint)

    def _unknown(
        self, fields: _Fields, name: str, key: str, missing: list[dataclasses.Field[Any]]
    ) -> ConfigError:
        """A key the class does not have; unless it looks like a typo, a missing key comes first."""
        import difflib  # here: only a misspelt key needs it

        near = difflib.get_close_matches(name, fields.known, n=1)
        if not near and missing:
            return self._missing(fields, missing[0], _key(key, missing[0].name))
        hint = f"did you mean {near[0]!r}?" if near else f"known keys: {', '.join(fields.known)}"
        return self.fail(_key(key, name), "unknown key", hint=hint)

    def dataclass(self, cls: type[T], raw: Any, key: str) -> T:
        if not isinstance(raw, Mapping):
            raise self.fail(key, f"expected a table, got {shown(raw)}")
        fields = _fields_of(typing.cast(type, cls))
        given = {fields.by_key[str(k)].name for k in raw if str(k) in fields.by_key}
        missing = [f for f in fields.required if f.name not in given]
        kwargs: dict[str, Any] = {}
        for name, raw_value in raw.items():
            field = fields.by_key.get(str(name))
            if field is None:
                raise self._unknown(fields, str(name), key, missing)
            field_key = _key(key, str(name))
            self._check_raw(field, raw_value, field_key)
            value = self.value(fields.hints[field.name], raw_value, field_key)
            self._check(fields, field, value, field_key)
            kwargs[field.name] = value
        if missing:
            raise self._missing(fields, missing[0], _key(key, missing[0].name))
        return cls(**kwargs)


_Reader = Callable[[_Loader, Any, Any, str], Any]


@functools.cache
def _reader(tp: Any) -> _Reader:
    """The loader's reader for values of type ``tp``, worked out once per type."""
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return _Loader._any
    if origin in (Union, types.UnionType):
        return _Loader._union
    if origin is Literal:
        return _Loader._literal
    if origin is tuple:
        return _Loader._tuple
    if origin in (dict, Mapping, typing.Mapping):
        return _Loader._mapping
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _Loader.dataclass
    if tp in _FROM_STRING:
        return _Loader._parsed
    return _Loader._scalar


def load(cls: type[T], raw: Any, *, source: str, key: str = "", strict: bool = False) -> T:
    """Build ``cls`` from ``raw`` (parsed TOML/YAML); errors name ``source`` and the key path."""
    return _Loader(source, strict=strict).dataclass(cls, raw, key)


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed TOML file at ``path``; unreadable or malformed, a :class:`ConfigError`.

    cuship's own data files (``cuship/data/*.toml``) are read through a cache of what they
    parse to, as Python reads a module through its bytecode: ``data/__pycache__/NAME.TAG.
    marshal`` holds the file's size and modification time with the parsed document, and is
    written where Python would write bytecode (not with ``PYTHONDONTWRITEBYTECODE``, nor
    where the package is read-only). TOML is parsed in Python: the four files a judgement
    reads cost 60 M instructions parsed, under 2 M read back."""
    cache = _data_cache(path)
    if cache is not None:
        found = _cached(path, cache)
        if found is not None:
            return found[1]
    document = _parse_toml(path)
    if cache is not None:
        _write_cache(path, cache, document)
    return document


def _parse_toml(path: Path) -> dict[str, Any]:
    try:
        return _read.toml(_read.read_text(path, _read.CONFIG))
    except OSError as err:
        raise ConfigError(str(path), None, f"cannot read: {err.strerror or err}") from err
    except _read.Refused as err:
        raise ConfigError(str(path), None, err.problem.removeprefix("is "), hint=err.hint) from err


_DATA = Path(__file__).parent.parent / "data"  # as compat and cudalibs name their files


def _data_cache(path: Path) -> Path | None:
    """Where the parse of ``path`` is cached: only for cuship's own data files."""
    if path.parent != _DATA or not path.name.endswith(".toml"):
        return None
    return _DATA / "__pycache__" / f"{path.name}.{sys.implementation.cache_tag}.marshal"


def _cached(path: Path, cache: Path) -> tuple[tuple[int, int], dict[str, Any]] | None:
    """The cached parse of ``path``, when it was made from the file as it is now."""
    try:
        stat = path.stat()
        stamp, document = marshal.loads(_read.read_bytes(cache, _read.CACHE))
    except (OSError, EOFError, ValueError, TypeError, _read.Refused):
        return None
    if stamp != (stat.st_size, stat.st_mtime_ns) or type(document) is not dict:
        return None
    return stamp, document


def _write_cache(path: Path, cache: Path, document: dict[str, Any]) -> None:
    if sys.dont_write_bytecode:
        return
    from cuship._fs import write_atomic

    try:
        stat = path.stat()
        write_atomic(cache, marshal.dumps(((stat.st_size, stat.st_mtime_ns), document)))
    except (OSError, ValueError):  # read-only, or a value marshal cannot write: parsed each time
        return


def schema(tp: Any, *, strict: bool = False) -> dict[str, Any]:
    """JSON Schema (draft 2020-12 subset) for a dataclass or field type, as :func:`load` reads it
    with the same ``strict``."""
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return {}
    if origin in (Union, types.UnionType):
        options = [schema(a, strict=strict) for a in get_args(tp) if a is not type(None)]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin is tuple:
        item = schema(get_args(tp)[0], strict=strict)
        array = {"type": "array", "items": item}
        return array if strict else {"anyOf": [item, array]}
    if origin in (dict, Mapping, typing.Mapping):
        return {"type": "object", "additionalProperties": schema(get_args(tp)[1], strict=strict)}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass_schema(tp, strict=strict)
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return {"type": names.get(tp, "string")}


def _dataclass_schema(cls: type, *, strict: bool) -> dict[str, Any]:
    fields = _fields_of(cls)
    props: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        props[f.name] = {**schema(fields.hints[f.name], strict=strict)}
        if f.metadata.get("non_empty"):
            props[f.name]["minItems"] = 1
        props[f.name].update(f.metadata.get("schema") or {})
        if f.metadata.get("doc"):
            props[f.name]["description"] = f.metadata["doc"]
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    required = [f.name for f in fields.required]
    if required:
        out["required"] = required
    return out
