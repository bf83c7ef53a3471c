"""The files of an installed distribution's ``.dist-info`` (METADATA, RECORD, WHEEL, ...) read
as any file is here, never through ``importlib.metadata``'s unbounded reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cuship._read.files import read_text, too_large
from cuship._read.kinds import DIST_FILE, METADATA, RECORD, Kind, Refused


def dist_text(dist: Any, name: str, kind: Kind = DIST_FILE) -> str | None:
    """The text of file ``name`` in an installed distribution's ``.dist-info`` (an
    :class:`importlib.metadata.Distribution`), None when it has none. On disk (every
    distribution on ``sys.path``) it is read as any file is here, so a FIFO ``METADATA`` or a
    1 GB ``RECORD`` is :class:`Refused`; ``Distribution.read_text`` would wait on or read it
    whole."""
    where = getattr(dist, "_path", None)  # a PathDistribution's .dist-info directory
    if not isinstance(where, Path):
        text = dist.read_text(name)  # not on disk (a zip, a custom finder): bounded after
        if isinstance(text, str) and len(text) > kind.limit:
            raise too_large(f"{name} of {where!r}", kind, kind.limit, len(text))
        return text if isinstance(text, str) else None
    try:
        return read_text(where / name, kind)
    except FileNotFoundError:
        return None
    except IsADirectoryError:  # pragma: no cover - refused by kind before
        return None


_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*?)[ \t]*\r?$", re.MULTILINE)


def dist_fields(dist: Any, field: str) -> tuple[str, ...]:
    """Every ``field`` header (``Requires-Dist``) of the distribution's METADATA (PKG-INFO for
    an egg), read with :func:`dist_text`."""
    text = dist_text(dist, "METADATA", METADATA)
    if text is None:
        text = dist_text(dist, "PKG-INFO", METADATA) or ""
    head = text.replace("\r\n", "\n").split("\n\n", 1)[0]
    wanted = field.lower()
    return tuple(m[2] for m in _HEADER.finditer(head) if m[1].lower() == wanted)


def dist_field(dist: Any, field: str) -> str | None:
    """The first ``field`` header (``Name``, ``Version``) of :func:`dist_fields`, or None."""
    return next(iter(dist_fields(dist, field)), None)


def installed_version(name: str) -> str | None:
    """The version of the distribution ``name`` installed for this interpreter (its METADATA
    read here), None when it is not installed or says none."""
    from importlib import metadata

    try:
        dist = metadata.distribution(name)  # found by its directory's name: nothing read yet
    except metadata.PackageNotFoundError:
        return None
    return dist_field(dist, "Version")


def dist_files(dist: Any) -> tuple[str, ...] | None:
    """The paths the distribution's RECORD lists (relative to its site directory), read with
    :func:`dist_text`; None when it has no RECORD. A line csv cannot read is :class:`Refused`."""
    import csv

    text = dist_text(dist, "RECORD", RECORD)
    if text is None:
        return None
    try:
        return tuple(row[0] for row in csv.reader(text.splitlines()) if row and row[0])
    except csv.Error as err:
        problem = f"holds a line csv cannot read ({err})"
        raise Refused(
            f"the RECORD of {dist_field(dist, 'Name')!r} {problem}", problem=problem
        ) from None
