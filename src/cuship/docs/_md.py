"""Markdown pieces the reference pages share: text escaped for Markdown, tables, code blocks."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["code", "fence", "table", "text"]

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_SPECIAL = str.maketrans({"<": "&lt;", ">": "&gt;", "*": r"\*", "_": r"\_", "|": r"\|"})


def text(value: str) -> str:
    """``value`` as Markdown that shows it as written: code spans kept, and outside them the
    characters Markdown would read as HTML, emphasis or a table cell's end escaped. Line breaks
    become spaces (a table row is one line)."""
    out, last = [], 0
    for span in _CODE_SPAN.finditer(value):
        out.append(value[last : span.start()].translate(_SPECIAL))
        out.append(span.group(0).replace("|", r"\|"))
        last = span.end()
    out.append(value[last:].translate(_SPECIAL))
    return " ".join("".join(out).split())


def code(value: str) -> str:
    """``value`` as one code span (a table cell's pipes escaped)."""
    ticks = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}".replace("|", r"\|")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A pipe table; cells are Markdown already."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def fence(body: str, language: str = "text") -> str:
    """A fenced code block."""
    return f"```{language}\n{body.rstrip()}\n```\n"
