"""Read installed distributions: which hold ELF shared objects (their RECORD says), what each
object carries, the WHEEL tags, the torch requirement and where the distribution came from.

Only what RECORD lists is read, and of each ``*.so`` only its headers, dynamic section, symbol
table and fatbin headers (:func:`cuship.wheel.audit.scan_object`), so a whole environment with
torch takes a fraction of a second.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Sequence
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cuship import _read
from cuship._record import frozen
from cuship.doctor.model import InstalledPackage, InstallOrigin, Skipped
from cuship.errors import CushipError, UsageError
from cuship.resolve.provenance import Handover, read_dist
from cuship.wheel.audit import ObjectReport, scan_object
from cuship.wheel.cudalibs import nvidia_requirements
from cuship.wheel.read.headers import header_fields
from cuship.wheel.torchabi import TorchPin, torch_pin, torch_requirements

__all__ = ["Scan", "scan"]

_NAME = re.compile(r"^Name:[ \t]*(\S+)", re.MULTILINE)
_VERSION = re.compile(r"^Version:[ \t]*(\S+)", re.MULTILINE)


@frozen
class Scan:
    """The distributions with shared objects, those passed over, and how many were looked at."""

    packages: tuple[InstalledPackage, ...]
    skipped: tuple[Skipped, ...]
    scanned: int


def scan(names: Sequence[str] = (), *, paths: Sequence[str | Path] | None = None) -> Scan:
    """Read the distributions ``names`` (default: every one installed) found on ``paths``
    (default: ``sys.path``). A name that is not installed raises :class:`UsageError`.

    Passed over, and said so: a named distribution without shared objects, and (named or not)
    an editable install, whose compiled files live in its source tree and not in RECORD."""
    search = None if paths is None else [str(p) for p in paths]
    wanted = {canonicalize_name(name): name for name in names}
    dists = [_named(name, search) for name in wanted.values()] if names else _every(search)
    packages: list[InstalledPackage] = []
    skipped: list[Skipped] = []
    for dist in dists:
        files, unread = _shared_files(dist)
        if files or unread:
            packages.append(_package(dist, files, unread))
        elif names or _editable(dist):
            skipped.append(Skipped(name=_name(dist), reason=_why_nothing(dist)))
    return Scan(packages=tuple(packages), skipped=tuple(skipped), scanned=len(dists))


def _every(search: list[str] | None) -> list[metadata.Distribution]:
    """Each distribution once: the first on the path, the one ``import`` would see."""
    found = metadata.distributions() if search is None else metadata.distributions(path=search)
    seen: set[str] = set()
    unique = []
    for dist in found:
        key = canonicalize_name(_name(dist))
        if key not in seen:
            seen.add(key)
            unique.append(dist)
    return unique


def _named(name: str, search: list[str] | None) -> metadata.Distribution:
    found = (
        metadata.distributions(name=name)
        if search is None
        else metadata.distributions(name=name, path=search)
    )
    dist = next(iter(found), None)
    if dist is not None:
        return dist
    where = "for this interpreter" if search is None else f"on {os.pathsep.join(search)!r}"
    close = _close_names(name, search)
    raise UsageError(
        f"{name!r} is not installed {where}",
        hint=(f"did you mean {', '.join(close)}? " if close else "")
        + f'install it first: pip install "{name}"',
    )


def _close_names(name: str, search: list[str] | None) -> list[str]:
    import difflib

    known: dict[str, str] = {canonicalize_name(_name(d)): _name(d) for d in _every(search)}
    close = difflib.get_close_matches(canonicalize_name(name), list(known), n=3, cutoff=0.7)
    return [known[c] for c in close]


def _headers(dist: metadata.Distribution) -> str:
    """The header block of METADATA (without the long description after the first blank line)."""
    try:
        text = _meta(dist, "METADATA") or _meta(dist, "PKG-INFO") or ""
    except CushipError:
        text = ""  # said by the files check: a package whose METADATA cannot be read
    return text.replace("\r\n", "\n").split("\n\n", 1)[0]


def _meta(dist: metadata.Distribution, name: str) -> str | None:
    return _read.dist_text(dist, name, _read.METADATA)


def _header(headers: str, pattern: re.Pattern[str]) -> str:
    match = pattern.search(headers)
    return match[1] if match else "?"


def _name(dist: metadata.Distribution) -> str:
    """The Name header, read with a regex: parsing every METADATA as email costs 100x more."""
    return _header(_headers(dist), _NAME)


_MAX_SHARED = 20_000  # shared objects read per distribution (torch has a few hundred)


def _shared_files(dist: metadata.Distribution) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``*.so`` / ``*.so.N`` paths its RECORD lists (relative to its site directory), and
    why RECORD could not be read in full (bounded: a RECORD larger than 32 MiB, not UTF-8, with
    a line csv refuses, or listing more than 20,000 shared objects is said, never read on)."""
    text, problem = _record_text(dist)
    lines = [line for line in text.splitlines() if ".so" in line]
    found: list[str] = []
    try:
        for row in csv.reader(lines):
            base = row[0].rpartition("/")[2] if row else ""
            if base.endswith(".so") or ".so." in base:
                if len(found) == _MAX_SHARED:
                    problem = f"it lists more than {_MAX_SHARED} shared objects; the rest unread"
                    break
                found.append(row[0])
    except csv.Error as err:
        problem = f"a line csv cannot read ({err})"
    unread = () if problem is None else (f"could not read RECORD: {problem}",)
    return tuple(found), unread


def _record_text(dist: metadata.Distribution) -> tuple[str, str | None]:
    """RECORD's text ("" when it has none) and why it could not be read."""
    try:
        return _read.dist_text(dist, "RECORD", _read.RECORD) or "", None
    except _read.Refused as err:
        return "", f"it {err.problem}"
    except OSError as err:
        return "", f"{err.strerror or err}"


def _editable(dist: metadata.Distribution) -> bool:
    dir_info = _direct_url(dist).get("dir_info")
    return isinstance(dir_info, dict) and bool(dir_info.get("editable"))


def _why_nothing(dist: metadata.Distribution) -> str:
    if _record_text(dist) == ("", None):
        return "no RECORD: its files cannot be listed"
    if _editable(dist):
        return "an editable install: its source tree is not in RECORD; compiled files there were not checked"
    return "no compiled code (no shared object in its RECORD): nothing to check"


def _package(
    dist: metadata.Distribution, files: Iterable[str], unread: Sequence[str] = ()
) -> InstalledPackage:
    headers = _headers(dist)
    name, version = _header(headers, _NAME), _header(headers, _VERSION)
    # Every undefined symbol is read (the judge binds them); torch's own objects are judged
    # as torch itself, their symbols unread.
    symbols = canonicalize_name(name) != "torch"
    objects: list[ObjectReport] = []
    broken: list[str] = list(unread)
    root = Path(str(dist.locate_file("")))
    for relative in files:
        try:
            report = scan_object(root / relative, symbols=symbols, name=relative)
        except FileNotFoundError:
            broken.append(f"{relative}: listed in RECORD but missing")
            continue
        except (CushipError, OSError, ValueError) as err:
            said = err.message if isinstance(err, CushipError) else str(err)
            broken.append(f"{relative}: could not read it: {said}".split("\n", 1)[0])
            continue
        if report is not None:
            objects.append(report)
    requirement, notes = _torch_pin(headers, name)
    requires = nvidia_requirements(
        value for field, value in header_fields(headers) if field == "requires-dist"
    )
    return InstalledPackage(
        name=name,
        version=version,
        location=str(root),
        objects=tuple(objects),
        tags=_wheel_tags(dist),
        torch_requirement=requirement,
        provenance=_provenance(dist, version),
        broken=tuple(broken),
        notes=notes,
        requires=requires,
        shared=tuple(dict.fromkeys(path.rpartition("/")[2] for path in files)),
    )


def _torch_pin(headers: str, name: str) -> tuple[TorchPin | None, tuple[str, ...]]:
    try:
        found = torch_requirements(headers, source=f"{name} METADATA")
    except CushipError as err:
        return None, (f"its torch requirement cannot be read: {err.message}",)
    return torch_pin(found), ()


def _wheel_tags(dist: metadata.Distribution) -> tuple[str, ...]:
    try:
        text = _read.dist_text(dist, "WHEEL")
    except CushipError:
        return ()
    if not text:
        return ()
    return tuple(str(tag).strip() for tag in HeaderParser().parsestr(text).get_all("Tag") or ())


def _direct_url(dist: metadata.Distribution) -> dict[str, object]:
    try:
        raw = _read.loads(_read.dist_text(dist, "direct_url.json") or "{}")
    except CushipError:
        return {}
    return raw if isinstance(raw, dict) else {}


def _written(dist: metadata.Distribution) -> Handover | None:
    """The ``cuship.json`` cuship's PEP 517 backend put in the .dist-info, if any; a damaged one
    counts as none (doctor reports on a broken install, it does not fail on one)."""
    try:
        return read_dist(dist)
    except CushipError:
        return None


def _wheel_variant(dist: metadata.Distribution) -> str | None:
    """The label of the wheel variant (PEP 825) installed, from its ``variant.json``; None
    for a plain wheel or a file that cannot be read (doctor reports, it does not fail)."""
    from cuship.wheel.variant import VARIANT_JSON, read_document

    try:
        text = _read.dist_text(dist, VARIANT_JSON)
        if text is None:
            return None
        document = read_document(text.encode(), VARIANT_JSON)
    except CushipError:
        return None
    return next(iter(document["variants"]), None)


def _provenance(dist: metadata.Distribution, version: str) -> InstallOrigin:
    try:
        label = Version(version).local
    except InvalidVersion:
        label = None
    written = _written(dist)
    url = _direct_url(dist).get("url")
    wheel_variant = _wheel_variant(dist)
    variant, source = (
        (written.label, "cuship.json")
        if written is not None and written.label
        else (wheel_variant, "variant.json")
        if wheel_variant
        else (label, "local version label")
    )
    return InstallOrigin(
        label=label,
        filename=(written.filename or None) if written else None,
        index=(written.index or None) if written else None,
        kind=written.kind if written else None,
        variant=variant,
        variant_from=source if variant else None,
        url=url if isinstance(url, str) and not _editable(dist) else None,
    )
