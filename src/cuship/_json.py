"""JSON from outside (an index page, a manifest, an attestation): bounded depth, text only.

``json`` recurses once per nesting level, so a document nested 100,000 deep would end in a
``RecursionError``; here it is a :class:`JsonRefused` naming the problem. Strings must be
Unicode text: a lone surrogate (``"\\ud800"``, which JSON allows) cannot be printed, encoded or
signed over, so it is refused too. Size is the caller's to bound (it reads the bytes).
"""

from __future__ import annotations

import json
import re
import reprlib
from typing import Any

__all__ = ["JsonRefused", "loads", "shown"]

# A \uD800-\uDFFF escape: the only way a lone surrogate gets into strictly decoded UTF-8 JSON.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonRefused(ValueError):
    """The document is JSON cuship will not read; the message says why."""


def loads(data: bytes | str) -> Any:
    """Parse ``data`` (UTF-8 bytes or text); every defect is a ``ValueError`` with the reason.

    Raises :class:`json.JSONDecodeError`, :class:`UnicodeDecodeError` or :class:`JsonRefused`.
    """
    text = data.decode("utf-8-sig") if isinstance(data, bytes | bytearray) else data
    try:
        document = json.loads(text)
    except RecursionError:
        raise JsonRefused("nested too deeply (deeper than Python's parser goes)") from None
    if _SURROGATE_ESCAPE.search(text) or _RAW_SURROGATE.search(text):
        _check_text(document)  # rare: a surrogate pair (an emoji) also lands here, and passes
    return document


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
                found = shown(item)
                raise JsonRefused(
                    f"a string holds a lone surrogate ({found}), which is not Unicode text"
                ) from None


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
