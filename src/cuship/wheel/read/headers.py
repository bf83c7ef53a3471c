"""The header block of a wheel's METADATA, read by the email header rules without the email
parser (its cost shows on thousands of wheels): the block ends at the first empty line, and a
line that starts with white space continues the header before it, even when it holds nothing
else (a folded ``License:`` keeps its blank paragraphs as lines of spaces, as faiss-gpu-cu12's
METADATA does; only a line with no character at all ends the headers)."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["header_fields"]


def header_fields(metadata: str) -> Iterator[tuple[str, str]]:
    """(field in lower case, value) of each header in METADATA text, folded lines joined by a
    space. A line that is neither a header (no colon) nor the continuation of one is passed
    over, with its own continuations."""
    field: str | None = None
    value = ""
    for line in metadata.splitlines():
        if not line:
            break
        if line[0] in " \t":
            if field is not None and line.strip():
                value += " " + line.strip()
            continue
        if field is not None:
            yield field, value
        key, colon, value = line.partition(":")
        field, value = (key.strip().lower(), value.strip()) if colon else (None, "")
    if field is not None:
        yield field, value
