"""Read a manifest's ``needs`` record back into :class:`WheelNeeds` (untrusted input: every
field is checked, counts are bounded, a bad one is an :class:`InputError` naming it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from cuship._read import shown
from cuship.arch import is_relocatable, is_sm_number
from cuship.errors import InputError
from cuship.judge.needs import ROLES, ObjectNeeds, Role, WheelNeeds, check_abi

__all__ = ["read_needs"]

_LIBRARY = re.compile(r"[A-Za-z0-9_.+-]{1,200}")
_ISA = re.compile(r"\d{1,2}\.\d{1,2}")
_MAX_OBJECTS = 1024
_MAX_ITEMS = 256
_MAX_TEXT = 1000
_HINT = "the index's manifest is damaged or not cuship's; rebuild it with cuship index"


def _bad(key: str, value: object, problem: str) -> InputError:
    return InputError(f"describe.needs.{key} {shown(value)} {problem}", hint=_HINT)


def _text(record: Mapping[str, Any], key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise _bad(f"{where}{key}", value, f"is not a string of at most {_MAX_TEXT} characters")
    return value


def _strings(
    record: Mapping[str, Any], key: str, where: str, accepts: Callable[[str], object] | None
) -> tuple[str, ...]:
    value = record.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > _MAX_ITEMS:
        raise _bad(f"{where}{key}", value, f"is not a list of at most {_MAX_ITEMS} items")
    for index, item in enumerate(value):
        ok = isinstance(item, str) and len(item) <= _MAX_TEXT
        if not ok or (accepts is not None and not accepts(item)):
            raise _bad(f"{where}{key}[{index}]", item, "is not what the field holds")
    return tuple(value)


def _object(raw: object, index: int) -> ObjectNeeds:
    where = f"objects[{index}]."
    if not isinstance(raw, dict):
        raise _bad(f"objects[{index}]", raw, "is not an object")
    path = _text(raw, "path", where)
    role = raw.get("role")
    if not path or role not in ROLES:
        raise _bad(f"objects[{index}]", raw, "names no path or no role (extension/library/vendor)")
    cxx11 = raw.get("cxx11")
    if cxx11 is not None and not isinstance(cxx11, bool):
        raise _bad(f"{where}cxx11", cxx11, "is not true or false")
    abi = raw.get("torch_abi", "none")
    try:
        torch_abi = check_abi(abi)
    except InputError:
        raise _bad(f"{where}torch_abi", abi, "is not none, stable or exact") from None
    role_name: Role = role
    static = raw.get("static_runtime", False)
    if not isinstance(static, bool):
        raise _bad(f"{where}static_runtime", static, "is not true or false")
    toolkit = _text(raw, "toolkit", where)
    if toolkit is not None and not _ISA.fullmatch(toolkit):
        raise _bad(f"{where}toolkit", toolkit, "is not a CUDA release (12.9)")
    return ObjectNeeds(
        path=path,
        role=role_name,
        sass=_strings(raw, "sass", where, is_sm_number),
        ptx=_strings(raw, "ptx", where, is_sm_number),
        relocatable=_strings(raw, "relocatable", where, is_relocatable),
        libraries=_strings(raw, "libraries", where, _LIBRARY.fullmatch),
        torch_abi=torch_abi,
        torch_libraries=_strings(raw, "torch_libraries", where, _LIBRARY.fullmatch),
        torch_symbol=_text(raw, "torch_symbol", where),
        cxx11=cxx11,
        needed=_strings(raw, "needed", where, _LIBRARY.fullmatch),
        rpath=_strings(raw, "rpath", where, None),
        runpath=_strings(raw, "runpath", where, None),
        opens=_strings(raw, "opens", where, _LIBRARY.fullmatch) if "opens" in raw else None,
        static_runtime=static,
        toolkit=toolkit,
        ptx_isa=_strings(raw, "ptx_isa", where, _ISA.fullmatch),
    )


def read_needs(record: Mapping[str, Any], base: WheelNeeds) -> WheelNeeds:
    """``base`` (name, version, label, pin, tags) with the record's objects and libraries."""
    if not isinstance(record, dict):
        raise _bad("", record, "is not an object")
    objects = record.get("objects", [])
    if not isinstance(objects, list) or len(objects) > _MAX_OBJECTS:
        raise _bad("objects", objects, f"is not a list of at most {_MAX_OBJECTS} objects")
    return replace(
        base,
        objects=tuple(_object(raw, index) for index, raw in enumerate(objects)),
        bundled=_strings(record, "bundled", "", _LIBRARY.fullmatch),
        requires=_strings(record, "requires", "", None),
        unread=_strings(record, "unread", "", None),
        complete=True,
    )
