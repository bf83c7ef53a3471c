"""Frozen, slotted, keyword-only records: what ``@dataclass(frozen=True, slots=True,
kw_only=True)`` makes, made for a fraction of the start-up cost.

:func:`dataclasses.dataclass` writes six methods of a frozen class as source text and compiles
each (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``):
3.7 M instructions a class, and cuship defines hundreds (a `cuship resolve` imports 70: a
quarter of its start-up). :func:`frozen` lets :mod:`dataclasses` read the fields (defaults,
``field()`` options, ``__dataclass_fields__``, ``__match_args__``, slots) and compiles only
``__init__``, the one method whose speed counts (an index makes 50,000 rows); the other five
are shared functions that read the class's fields. The result behaves as the frozen dataclass
would: the same ``__init__`` signature, ``FrozenInstanceError`` on assignment, equality and
hash over the compared fields, the same ``repr``, pickling and :func:`dataclasses.replace`,
:func:`dataclasses.fields` and :func:`dataclasses.asdict`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

T = TypeVar("T")

if TYPE_CHECKING or sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10: the checker reads 3.11's typing

    def dataclass_transform(**_kwargs: Any) -> Callable[[T], T]:
        return lambda decorated: decorated


__all__ = ["frozen"]


_MISSING = dataclasses.MISSING
# the default a factory's parameter shows (``<factory>``), as dataclasses' __init__ shows it
_FACTORY: object = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", _MISSING)


def _init_source(fields: list[dataclasses.Field[Any]], kw_only: bool, post_init: bool) -> str:
    """``__init__`` as :mod:`dataclasses` writes it for a frozen class (``object.__setattr__``
    for each field; a factory's sentinel; ``__post_init__`` last)."""
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in fields:
        if not f.init:
            if f.default_factory is not _MISSING:
                body.append(f"    __set(self, {f.name!r}, __factory_{f.name}())")
            elif f.default is not _MISSING:
                body.append(f"    __set(self, {f.name!r}, __default_{f.name})")
            continue
        if f.default_factory is not _MISSING:
            param = f"{f.name}=__HAS_FACTORY"
            value = f"__factory_{f.name}() if {f.name} is __HAS_FACTORY else {f.name}"
        elif f.default is not _MISSING:
            param, value = f"{f.name}=__default_{f.name}", f.name
        else:
            param, value = f.name, f.name
        (keyword if kw_only or f.kw_only is True else positional).append(param)
        body.append(f"    __set(self, {f.name!r}, {value})")
    params = ["self", *positional, *(["*", *keyword] if keyword else [])]
    if post_init:
        body.append("    self.__post_init__()")
    return f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"


def _repr(self: Any) -> str:
    names = self.__record_repr__
    inside = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
    return f"{type(self).__qualname__}({inside})"


def _eq(self: Any, other: object) -> Any:  # bool, or NotImplemented
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = self.__record_key__  # type: ignore[attr-defined]  # the class's attribute
    return key(self) == key(other)


def _hash(self: Any) -> int:
    return hash(self.__record_hash__(self))


def _setattr(self: Any, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[object]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[object]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda _self: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return attrgetter(*names)


def _frozen_base(cls: type) -> bool:
    return any(
        getattr(getattr(base, "__dataclass_params__", None), "frozen", False)
        for base in cls.__mro__[1:]
    )


def _make(cls: type[T], kw_only: bool) -> type[T]:
    if _frozen_base(cls):  # dataclasses refuses a non-frozen class on a frozen base
        return dataclasses.dataclass(cls, frozen=True, slots=True, kw_only=kw_only)
    body = dict(cls.__dict__)  # what the class itself defines stays, as dataclasses keeps it
    made = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, frozen=False, slots=True, kw_only=kw_only
    )
    fields = list(dataclasses.fields(made))  # type: ignore[arg-type]
    scope: dict[str, Any] = {"__set": object.__setattr__, "__HAS_FACTORY": _FACTORY}
    for f in fields:
        scope[f"__default_{f.name}"] = f.default
        scope[f"__factory_{f.name}"] = f.default_factory
    namespace: dict[str, Any] = {}
    source = _init_source(fields, kw_only, hasattr(made, "__post_init__"))
    module = sys.modules.get(made.__module__)
    exec(source, {**(vars(module) if module else {}), **scope}, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{made.__qualname__}.__init__"
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    attrs = {
        "__init__": init,
        "__repr__": _repr,
        "__eq__": _eq,
        "__hash__": _hash,
        "__setattr__": _setattr,
        "__delattr__": _delattr,
        "__getstate__": _getstate,
        "__setstate__": _setstate,
        "__record_repr__": tuple(f.name for f in fields if f.repr),
        # static: a key made by a lambda (none or one field) must not be bound to the instance
        "__record_key__": staticmethod(_key(compared)),
        "__record_hash__": staticmethod(_key(hashed)),
    }
    explicit_hash = "__hash__" in body and not (body["__hash__"] is None and "__eq__" in body)
    for name, value in attrs.items():
        if name in body and (name != "__hash__" or explicit_hash):
            continue
        type.__setattr__(made, name, value)
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.eq = params.frozen = True  # as the dataclass it stands for says of itself
    return made


@overload
def frozen(cls: type[T], /) -> type[T]: ...
@overload
def frozen(*, kw_only: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(
    frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field,)
)
def frozen(
    cls: type[T] | None = None, /, *, kw_only: bool = True
) -> type[T] | Callable[[type[T]], type[T]]:
    """``@frozen`` is ``@dataclass(frozen=True, slots=True, kw_only=True)``; ``@frozen(kw_only=
    False)`` is ``@dataclass(frozen=True, slots=True)`` (see the module's docstring)."""
    if cls is None:
        return lambda c: _make(c, kw_only)
    return _make(cls, kw_only)
