"""Project names (PEP 503) and the plain parts of a wheel's filename (PEP 427, PEP 425), without
importing :mod:`packaging.utils`.

``packaging.utils`` brings in ``packaging.tags``, and with it ``sysconfig``, ``logging``,
``subprocess`` and the manylinux and musllinux probes: about a sixth of ``cuship index``'s
start-up, before the first wheel is read. What the index needs of a filename is small: the
normalised project name and the tag set. These give the same answers as packaging for the
names and tags they accept (the tests compare them), and say ``None`` for anything else, which
the caller then hands to packaging itself (imported there) for its verdict and its wording.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from packaging.utils import NormalizedName

__all__ = ["canonical_name", "plain_project", "tag_set"]

_RUNS = re.compile(r"[-_.]+")
# A name part packaging accepts ([\w\d._]*, no "__"), narrowed to ASCII and to a letter or
# digit at each end: what nearly every wheel is called. Anything else goes to packaging.
_PLAIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?")
_PLAIN_TAG = re.compile(r"[a-z0-9_]+")  # one component of a tag, in lower case


def canonical_name(name: str) -> NormalizedName:
    """PEP 503's normal form: runs of ``-``, ``_`` and ``.`` become one ``-``, all lower case."""
    return cast("NormalizedName", _RUNS.sub("-", name).lower())


def plain_project(name_part: str) -> NormalizedName | None:
    """The project a wheel filename's name part names, when the part is plain (see
    ``_PLAIN``) and has no ``__``; None when packaging must decide."""
    if "__" in name_part or _PLAIN.fullmatch(name_part) is None:
        return None
    return canonical_name(name_part)


def tag_set(tag_part: str) -> tuple[str, ...] | None:
    """The tags of a filename's ``PYTHON-ABI-PLATFORM`` part, a compressed set expanded
    (``py2.py3-none-any`` is two), lower case and sorted; None unless the part is three
    fields of plain components (ASCII letters, digits and ``_``; a Python tag not starting
    with a digit): packaging's checks of the rest have changed between releases (26.3 refuses
    an empty component and a Python tag that is not an identifier)."""
    fields = tag_part.lower().split("-")
    if len(fields) != 3:
        return None
    pythons, abis, platforms = (field.split(".") for field in fields)
    if not all(map(_PLAIN_TAG.fullmatch, (*pythons, *abis, *platforms))):
        return None
    if not all(python.isidentifier() for python in pythons):
        return None
    return tuple(sorted({f"{p}-{a}-{x}" for p in pythons for a in abis for x in platforms}))
