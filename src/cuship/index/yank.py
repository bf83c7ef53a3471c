"""Yank lists (PEP 592): which files an index marks as yanked, and why.

A yank entry names either a wheel filename (``pkg-1.0-py3-none-any.whl``) or a release
(``pkg==1.0``, every file of that version). A yank file holds one entry per line, optionally
followed by whitespace and a reason; blank lines and ``#`` comments are ignored.

:func:`index_request` checks what a ``cuship index`` run asks for (wheels, yanks set and
lifted) before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from cuship._record import frozen
from cuship.errors import InputError, UsageError
from cuship.wheel.read.filename import canonical_name

__all__ = [
    "IndexRequest",
    "index_request",
    "kept_yank",
    "parse_yank_lines",
    "read_yank_file",
    "spec_project",
    "yank_reason",
]


def _key(spec: str, source: str) -> str:
    if spec.endswith(".whl"):
        return spec
    name, sep, version = spec.partition("==")
    if not sep or not name.strip():
        raise InputError(
            f"{source}: cannot read yank entry {spec!r}",
            hint="write a wheel filename or NAME==VERSION, then optionally a reason",
        )
    from packaging.version import InvalidVersion, Version  # here: most runs yank nothing

    try:
        parsed = Version(version.strip())
    except InvalidVersion as err:
        raise InputError(f"{source}: invalid version in yank entry {spec!r}") from err
    return f"{canonical_name(name.strip())}=={parsed}"


def parse_yank_lines(lines: Iterable[str], *, source: str = "--yank") -> dict[str, str]:
    """Entries ``spec [reason]`` to a mapping from normalised spec to reason ('' for none)."""
    out: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, _, reason = line.partition(" ")
        out[_key(spec.strip(), source)] = reason.strip()
    return out


def read_yank_file(path: Path) -> dict[str, str]:
    """Read a yank file (see the module docstring)."""
    from cuship import _read

    try:
        text = _read.read_text(path, _read.YANK)
    except OSError as err:
        raise InputError(f"cannot read yank file {str(path)!r}: {err}") from err
    return parse_yank_lines(text.splitlines(), source=str(path))


def yank_reason(
    yanks: Mapping[str, str], *, filename: str, project: str, version: str
) -> str | None:
    """The reason a file is yanked ('' when no reason was given), or None when it is not."""
    if filename in yanks:
        return yanks[filename]
    return yanks.get(f"{project}=={version}")


def spec_project(key: str) -> str:
    """The project a normalised yank entry names (a wheel filename or ``name==version``)."""
    if key.endswith(".whl"):
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        try:
            return str(parse_wheel_filename(key)[0])
        except InvalidWheelFilename:
            return canonical_name(key.split("-", 1)[0])
    return key.partition("==")[0]


def kept_yank(
    stored: str | None,
    *,
    yanks: Mapping[str, str],
    unyanks: Collection[str],
    filename: str,
    project: str,
    version: str,
) -> str | None:
    """The yank of a file an index keeps: a yank entry naming it wins, then an unyank entry
    naming it lifts the stored one, else the stored one stays."""
    reason = yank_reason(yanks, filename=filename, project=project, version=version)
    if reason is not None:
        return reason
    if filename in unyanks or f"{project}=={version}" in unyanks:
        return None
    return stored


@frozen
class IndexRequest:
    """The inputs of :func:`~cuship.index.write`: files and directories given, normalised yank
    entries (spec → reason), the entries whose yank is lifted, and whether to keep what the
    index already lists."""

    inputs: tuple[Path, ...]
    yanked: Mapping[str, str]
    unyanked: frozenset[str]
    keep_existing: bool


def _yanks(yanks: Iterable[str], yank_file: Path | None) -> dict[str, str]:
    """``--yank SPEC[:REASON]`` entries, then the yank file's (a spec holds no ``:``)."""
    found = parse_yank_lines((y.replace(":", " ", 1) for y in yanks), source="--yank")
    if yank_file is not None:
        found.update(read_yank_file(yank_file))
    return found


def index_request(
    inputs: Iterable[Path],
    *,
    yanks: Iterable[str] = (),
    yank_file: Path | None = None,
    unyanks: Iterable[str] = (),
    keep_existing: bool = False,
) -> IndexRequest:
    """The request of ``cuship index``; :class:`UsageError` when it asks nothing, lifts a yank
    without keeping the wheels it is on, or both yanks and lifts one entry."""
    given = tuple(inputs)
    yanked = _yanks(yanks, yank_file)
    unyanked = frozenset(parse_yank_lines(unyanks, source="--unyank"))
    if unyanked and not keep_existing:
        raise UsageError(
            "--unyank changes the yanks of kept wheels: it needs --keep-existing",
            hint="without --keep-existing a yank lasts while --yank/--yank-file names it",
        )
    if both := sorted(unyanked & set(yanked)):
        raise UsageError(f"{both[0]!r} is both yanked and unyanked", hint="name it once")
    if not given and not (keep_existing and (yanked or unyanked)):
        raise UsageError(
            "no wheels given",
            hint="pass wheel files, directories or --wheels-dir (or --keep-existing with "
            "--yank/--unyank to change only yanks)",
        )
    return IndexRequest(inputs=given, yanked=yanked, unyanked=unyanked, keep_existing=keep_existing)
