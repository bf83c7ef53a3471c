"""GitHub Actions expressions and runner files, as far as the GitHub stand-in needs them (pure).

:func:`evaluate` reads the ``${{ }}`` language GitHub documents ("Evaluate expressions in
workflows and actions"): literals, context paths (``matrix.job``, ``needs.prepare.outputs.x``,
``github['event_name']``), ``!``, ``==``/``!=``/``<``/``<=``/``>``/``>=`` (strings compared
ignoring case), ``&&``/``||`` (which return an operand, not a boolean), and the functions
``fromJSON``, ``toJSON``, ``contains``, ``startsWith``, ``endsWith``, ``format``, ``always``,
``success``, ``failure``, ``cancelled``. Anything else is an :class:`ExprError`: the stand-in
never guesses what an expression means. :func:`read_command_file` reads ``GITHUB_ENV`` and
``GITHUB_OUTPUT`` (``NAME=value`` lines and ``NAME<<DELIMITER`` blocks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ExprError", "condition", "evaluate", "read_command_file", "substitute", "text_of"]

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.])|(?P<name>[A-Za-z_][A-Za-z0-9_-]*|\*))"
)
_EMBEDDED = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)


class ExprError(ValueError):
    """An expression the stand-in does not read."""


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str


def _tokens(expr: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(expr.rstrip()):
        found = _TOKEN.match(expr, pos)
        if found is None or found.end() == pos:
            raise ExprError(f"cannot read {expr[pos:]!r} in {expr!r}")
        kind = found.lastgroup or ""
        out.append(_Token(kind, found.group(kind)))
        pos = found.end()
    return out


def text_of(value: Any) -> str:
    """A value as GitHub writes it into a string: booleans lower case, null empty, objects JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value == value  # NaN is falsy


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return text_of(a).casefold() == text_of(b).casefold()
    return bool(a == b)


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def _format(template: str, *args: Any) -> str:
    return re.sub(r"\{(\d+)\}", lambda m: text_of(args[int(m.group(1))]), template)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "fromjson": json.loads,
    "tojson": lambda value: json.dumps(value, indent=2),
    "contains": lambda hay, needle: (
        any(_equal(x, needle) for x in hay)
        if isinstance(hay, list)
        else text_of(needle).casefold() in text_of(hay).casefold()
    ),
    "startswith": lambda s, p: text_of(s).casefold().startswith(text_of(p).casefold()),
    "endswith": lambda s, p: text_of(s).casefold().endswith(text_of(p).casefold()),
    "format": _format,
}
_STATUS = ("always", "success", "failure", "cancelled")


class _Parser:
    def __init__(self, expr: str, contexts: Mapping[str, Any], status: str) -> None:
        self.expr = expr
        self.tokens = _tokens(expr)
        self.pos = 0
        self.contexts = contexts
        self.status = status

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, text: str | None = None) -> _Token:
        token = self.peek()
        if token is None or (text is not None and token.text != text):
            raise ExprError(f"expected {text or 'more'} in {self.expr!r}")
        self.pos += 1
        return token

    def parse(self) -> Any:
        value = self.either()
        if self.peek() is not None:
            raise ExprError(f"unexpected {self.peek()!r} in {self.expr!r}")
        return value

    def either(self) -> Any:
        value = self.both()
        while (t := self.peek()) is not None and t.text == "||":
            self.take()
            other = self.both()
            value = value if _truthy(value) else other
        return value

    def both(self) -> Any:
        value = self.unary()
        while (t := self.peek()) is not None and t.text == "&&":
            self.take()
            other = self.unary()
            value = other if _truthy(value) else value
        return value

    def unary(self) -> Any:
        token = self.peek()
        if token is not None and token.text == "!":
            self.take()
            return not _truthy(self.unary())
        value = self.primary()
        token = self.peek()
        if token is not None and token.text in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            return _compare(token.text, value, self.primary())
        return value

    def primary(self) -> Any:
        token = self.take()
        if token.kind == "string":
            return token.text[1:-1].replace("''", "'")
        if token.kind == "number":
            return float(token.text) if "." in token.text else int(token.text)
        if token.text == "(":
            value = self.either()
            self.take(")")
            return value
        if token.kind != "name":
            raise ExprError(f"unexpected {token.text!r} in {self.expr!r}")
        literal = {"true": True, "false": False, "null": None}
        if token.text in literal:
            return literal[token.text]
        if (t := self.peek()) is not None and t.text == "(":
            return self.call(token.text)
        return self.path(token.text)

    def call(self, name: str) -> Any:
        self.take("(")
        args: list[Any] = []
        while (t := self.peek()) is not None and t.text != ")":
            args.append(self.either())
            if (t := self.peek()) is not None and t.text == ",":
                self.take()
        self.take(")")
        lowered = name.lower()
        if lowered in _STATUS:
            return {"always": True, "cancelled": False}.get(lowered, self.status == lowered)
        if lowered not in _FUNCTIONS:
            raise ExprError(f"function {name!r} is not read by the stand-in ({self.expr!r})")
        return _FUNCTIONS[lowered](*args)

    def path(self, head: str) -> Any:
        if head not in self.contexts:
            raise ExprError(f"context {head!r} is not known to the stand-in ({self.expr!r})")
        value = self.contexts[head]
        while (t := self.peek()) is not None and t.text in (".", "["):
            self.take()
            key = self.take().text if t.text == "." else text_of(self.either())
            if t.text == "[":
                self.take("]")
            value = value.get(key) if isinstance(value, Mapping) else None
        return value


def evaluate(expr: str, contexts: Mapping[str, Any], *, status: str = "success") -> Any:
    """The value of ``expr`` (no ``${{ }}`` around it). ``status``: the job's state so far
    (``success`` or ``failure``), for the status functions."""
    return _Parser(expr, contexts, status).parse()


def substitute(text: str, contexts: Mapping[str, Any]) -> Any:
    """``text`` with each ``${{ expr }}`` replaced by its value; a string that is one
    expression whole keeps the value's type (``matrix: ${{ fromJSON(...) }}`` is an object)."""
    whole = _EMBEDDED.fullmatch(text.strip())
    if whole is not None:
        return evaluate(whole.group(1), contexts)
    return _EMBEDDED.sub(lambda m: text_of(evaluate(m.group(1), contexts)), text)


def condition(value: str | bool | None, contexts: Mapping[str, Any], *, status: str) -> bool:
    """A job's or step's ``if:``: absent means ``success()``; one without a status function is
    ``success() && (...)``, as GitHub reads it."""
    if value is None:
        return status == "success"
    if isinstance(value, bool):
        return value and status == "success"
    expr = value.strip()
    whole = _EMBEDDED.fullmatch(expr)
    if whole is not None:
        expr = whole.group(1)
    if not any(re.search(rf"\b{name}\s*\(", expr) for name in _STATUS):
        expr = f"success() && ({expr})"
    return _truthy(evaluate(expr, contexts, status=status))


def read_command_file(text: str) -> dict[str, str]:
    """``GITHUB_ENV`` / ``GITHUB_OUTPUT`` contents: ``NAME=value`` and ``NAME<<EOF`` blocks."""
    values: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block: list[str] = []
            while i < len(lines) and lines[i] != delimiter:
                block.append(lines[i])
                i += 1
            if i == len(lines):
                raise ExprError(f"{name!r}: no closing {delimiter!r}")
            i += 1
            values[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        else:
            raise ExprError(f"not NAME=value nor NAME<<DELIMITER: {line!r}")
    return values
