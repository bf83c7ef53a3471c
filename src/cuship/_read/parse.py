"""Text and documents from outside: UTF-8, JSON with limits, TOML and YAML, whole numbers,
and untrusted values shown safely in a message."""

from __future__ import annotations

import json
import math
import re
import reprlib
import sys
from typing import Any

from cuship._read.kinds import MAX_DEPTH, MAX_DIGITS, JsonRefused, Refused

_MAX_NUMBER_TEXT = 64  # characters of a JSON float literal
_AS_UTF8 = "save the file as UTF-8"


def decode(data: bytes, what: str) -> str:
    """``data`` as UTF-8 (a BOM dropped); :class:`Refused` naming the line of the first byte
    that is not UTF-8 (``what``: the source, as a message names it)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        problem = (
            f"is not UTF-8 text: byte 0x{data[err.start]:02x} on line {line} cannot be decoded"
        )
        raise Refused(f"{what} {problem}", problem=problem, hint=_AS_UTF8) from None


# --- JSON ---------------------------------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how a lone surrogate gets into UTF-8 JSON
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constant(name: str) -> Any:
    problem = f"holds {name}, which is not a JSON number"
    raise JsonRefused(problem, problem=problem)


def _float(text: str) -> float:
    value = float(text)
    if len(text) > _MAX_NUMBER_TEXT or not math.isfinite(value):
        problem = f"holds the number {shown(text, 24)}, out of range"
        raise JsonRefused(problem, problem=problem)
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        problem = f"holds an integer of {len(text.lstrip('-')):,} digits (at most {MAX_DIGITS})"
        raise JsonRefused(problem, problem=problem)
    return int(text)


def loads(data: bytes | str) -> Any:
    """The JSON document in ``data`` (UTF-8 bytes or text), held to the limits above; every
    defect (not JSON, not UTF-8, too deep, a number out of range, a lone surrogate) is a
    :class:`JsonRefused` saying which. The decoder's own error, when there is one, is its cause.
    """
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes | bytearray) else data
    except UnicodeDecodeError as err:
        problem = f"is not UTF-8 ({err.reason} at byte {err.start})"
        raise JsonRefused(problem, problem=problem) from err
    try:
        document = json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_no_constant)
    except RecursionError:
        raise _deep() from None
    except json.JSONDecodeError as err:
        problem = f"is not JSON ({err})"
        raise JsonRefused(problem, problem=problem) from err
    if text.count("[") + text.count("{") > MAX_DEPTH:
        _check_depth(document)
    if _SURROGATE_ESCAPE.search(text) or _RAW_SURROGATE.search(text):
        _check_text(document)  # rare: a surrogate pair (an emoji) also lands here, and passes
    return document


def _deep() -> JsonRefused:
    problem = f"is nested too deeply (more than {MAX_DEPTH} levels)"
    return JsonRefused(problem, problem=problem)


def _check_depth(document: Any) -> None:
    todo: list[tuple[Any, int]] = [(document, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise _deep()
        values = item.values() if isinstance(item, dict) else item
        todo.extend((v, depth + 1) for v in values if isinstance(v, dict | list))


def _check_text(document: Any) -> None:
    todo = [document]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                problem = f"holds a lone surrogate ({shown(item)}), which is not Unicode text"
                raise JsonRefused(problem, problem=problem) from None


# --- TOML and YAML ----------------------------------------------------------------------------


def toml(text: str) -> dict[str, Any]:
    """The TOML document ``text``; :class:`Refused` when it is not TOML or nests past what the
    parser goes (``problem`` says which)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise Refused(f"not valid TOML: {err}", problem=f"not valid TOML: {err}") from err
    except RecursionError:
        raise Refused(_TOO_DEEP, problem=_TOO_DEEP) from None


def yaml(text: str) -> Any:
    """The YAML document ``text`` (``safe_load``: plain data only); :class:`Refused` as for
    :func:`toml`."""
    import yaml as pyyaml

    try:
        return pyyaml.safe_load(text)
    except pyyaml.YAMLError as err:
        raise Refused(f"not valid YAML: {err}", problem=f"not valid YAML: {err}") from err
    except RecursionError:
        raise Refused(_TOO_DEEP, problem=_TOO_DEEP) from None


_TOO_DEEP = "nested too deeply: arrays or tables inside each other thousands of levels down"


# --- numbers and untrusted values in messages -----------------------------------------------

_DIGITS = re.compile(f"[0-9]{{1,{MAX_DIGITS}}}")


def integer(text: str, what: str, *, low: int = 0, high: int = (1 << 63) - 1) -> int:
    """``text`` as a whole number from ``low`` to ``high``: ASCII digits only (``"²"``, ``"١"``,
    ``"+1"``, ``" 1"`` and ``"1_0"`` are refused), at most :data:`MAX_DIGITS` of them;
    :class:`Refused` naming ``what`` otherwise."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        problem = f"{what} {shown(text)} is not a whole number"
        raise Refused(problem, problem=problem)
    value = int(text)
    if not low <= value <= high:
        problem = f"{what} {value} is out of range ({low} to {high})"
        raise Refused(problem, problem=problem)
    return value


def shown(value: object, limit: int = 60) -> str:
    """``repr`` of an untrusted value: nesting, length and lists cut short, safe to print."""
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int too long for repr
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = 60
_REPR.maxother = 60
