"""Give a wheel a local version label: a new file name, dist-info dir, METADATA and RECORD.

``plan_retag`` decides every name from the file name alone (pure); ``retag`` rewrites the
archive into a temporary file next to the target and renames it into place (atomic).
"""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cuship import _read
from cuship._fs import new_file
from cuship._record import frozen
from cuship.errors import InputError, NothingToDo, UsageError
from cuship.events import Emit, Event, discard
from cuship.wheel.read.members import (
    MemberLimits,
    check_members,
    copy_into,
    member_limits,
    read_member,
)
from cuship.wheel.read.zipmeta import METADATA_LIMIT
from cuship.wheel.record import record_hash

__all__ = [
    "RetagPlan",
    "Retagged",
    "find_dist_info",
    "plan_retag",
    "public_plan",
    "record_hash",
    "retag",
    "retag_file",
    "rewrite",
    "strip_label",
]

_SIGNATURES = ("RECORD.jws", "RECORD.p7s")
_WHEEL_MODE = 0o644  # readable by anyone, whatever the umask: wheels are published


@frozen
class RetagPlan:
    """Every name that changes when a wheel gets a new local version label."""

    old_filename: str
    new_filename: str
    old_version: str
    new_version: str
    old_prefix: str  # "pkg-0.1.0" as used in "pkg-0.1.0.dist-info"
    new_prefix: str
    requires: tuple[str, ...] = ()  # Requires-Dist lines to set (e.g. the torch pin)
    extra: tuple[tuple[str, bytes], ...] = ()  # files added to the .dist-info (variant.json)


def plan_retag(filename: str, local: str, *, requires: Sequence[str] = ()) -> RetagPlan:
    """Plan the retag of wheel ``filename`` to local label ``local`` (replacing any label).

    ``requires``: requirements written into METADATA as ``Requires-Dist``, each replacing the
    unconditional requirements on the same project (``torch>=2`` gives way to ``torch==2.8.*``).
    """
    try:
        parsed = tuple(Requirement(r) for r in requires)
    except InvalidRequirement as err:
        raise UsageError(f"not a requirement: {err}", hint="write it like torch==2.8.*") from err
    try:
        name, version, build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as err:
        raise InputError(f"{filename!r} is not a valid wheel file name: {err}") from err
    new_version = _with_local(version, local)
    if new_version == version:
        raise NothingToDo(
            f"{filename!r} already carries the local label {version.local!r}",
            hint="pass a different --local label, or use the wheel as it is",
        )
    dist = canonicalize_name(name).replace("-", "_")
    build_part = f"-{build[0]}{build[1]}" if build else ""
    new_filename = f"{dist}-{new_version}{build_part}-{_compressed_tags(tags, filename)}.whl"
    return RetagPlan(
        old_filename=filename,
        new_filename=new_filename,
        old_version=str(version),
        new_version=str(new_version),
        old_prefix=f"{dist}-{version}",
        new_prefix=f"{dist}-{new_version}",
        requires=tuple(str(r) for r in parsed),
    )


def _with_local(version: Version, local: str) -> Version:
    try:
        return Version(f"{version.public}+{local}")
    except InvalidVersion as err:
        raise UsageError(
            f"{local!r} is not a valid local version label",
            hint="use letters, digits and dots, e.g. cu128torch2.8",
        ) from err


def _compressed_tags(tags: frozenset[Tag], filename: str) -> str:
    """Rebuild ``py-abi-plat`` (with dotted sets) from the tag set, keeping the original order."""

    def joined(parts: set[str]) -> str:
        return ".".join(sorted(parts, key=lambda part: (filename.find(part), part)))

    interpreters = {t.interpreter for t in tags}
    abis = {t.abi for t in tags}
    platforms = {t.platform for t in tags}
    return f"{joined(interpreters)}-{joined(abis)}-{joined(platforms)}"


def retag(
    wheel: Path,
    *,
    local: str,
    out_dir: Path | None = None,
    requires: Sequence[str] = (),
    emit: Emit = discard,
) -> Path:
    """Write a copy of ``wheel`` labelled ``local`` (and ``requires`` in its METADATA, see
    :func:`plan_retag`) into ``out_dir`` (default: next to it)."""
    plan = plan_retag(wheel.name, local, requires=requires)
    target = _write_new(wheel, plan, wheel.parent if out_dir is None else out_dir, emit)
    emit(Event(level="info", topic="retag", message=f"wrote {target}", data={"path": str(target)}))
    return target


@frozen
class Retagged:
    """The wheel given and the labelled copy :func:`retag_file` wrote of it."""

    input: Path
    output: Path

    def to_json(self) -> dict[str, object]:
        """``cuship retag --json``."""
        return {"input": str(self.input), "output": str(self.output)}


def retag_file(
    wheel: Path, *, local: str, out_dir: Path | None = None, emit: Emit = discard
) -> Retagged:
    """:func:`retag` of a wheel file someone named (:class:`InputError` when there is none)."""
    if not wheel.is_file():
        raise InputError(f"{str(wheel)!r} does not exist", hint="pass a .whl file")
    return Retagged(input=wheel, output=retag(wheel, local=local, out_dir=out_dir, emit=emit))


def strip_label(wheel: Path, *, out_dir: Path, emit: Emit = discard) -> Path:
    """A copy of ``wheel`` without its local label (``1.0+cu128`` → ``1.0``) in ``out_dir``.

    The prebuilt-wheel backend uses it: the wheel it returns must carry the sdist's version.
    """
    return rewrite(wheel, public_plan(wheel.name), out_dir=out_dir, emit=emit)


def public_plan(filename: str, *, new_filename: str | None = None) -> RetagPlan:
    """The plan that gives wheel ``filename`` its public version (``1.0+cu128`` → ``1.0``),
    under ``new_filename`` when given."""
    labelled = plan_retag(filename, "x")
    _, version, build, tags = parse_wheel_filename(filename)
    dist = labelled.old_prefix.rsplit("-", 1)[0]
    build_part = f"-{build[0]}{build[1]}" if build else ""
    return RetagPlan(
        old_filename=filename,
        new_filename=new_filename
        or f"{dist}-{version.public}{build_part}-{_compressed_tags(tags, filename)}.whl",
        old_version=str(version),
        new_version=version.public,
        old_prefix=labelled.old_prefix,
        new_prefix=f"{dist}-{version.public}",
    )


def rewrite(wheel: Path, plan: RetagPlan, *, out_dir: Path, emit: Emit = discard) -> Path:
    """Write ``wheel`` rewritten by ``plan`` into ``out_dir`` (readable by anyone)."""
    return _write_new(wheel, plan, out_dir, emit)


def _write_new(wheel: Path, plan: RetagPlan, target_dir: Path, emit: Emit) -> Path:
    """``wheel`` rewritten by ``plan`` into a new file renamed onto its name in ``target_dir``:
    a file already there (an index's published wheel, hard-linked into a site) keeps its bytes,
    and a failed write leaves nothing."""
    with new_file(target_dir, plan.new_filename, mode=_WHEEL_MODE) as tmp:
        _rewrite(wheel, tmp, plan, emit)
    return target_dir / plan.new_filename


def _rewrite(source: Path, dest: Path, plan: RetagPlan, emit: Emit) -> None:
    try:
        with _read.archive(source) as old, zipfile.ZipFile(dest, "w") as new:
            dist_info = find_dist_info(old, source)
            limits = member_limits()
            check_members(old.infolist(), source.name, limits)
            rows = [_copy(old, new, info, plan, dist_info, emit, limits) for info in old.infolist()]
            record_info = old.getinfo(f"{dist_info}/RECORD")
            for name, data in plan.extra:
                member = f"{plan.new_prefix}.dist-info/{name}"
                new.writestr(_like(record_info, member), data)
                rows.append((member, record_hash(data), str(len(data))))
            record = f"{plan.new_prefix}.dist-info/RECORD"
            new.writestr(_like(old.getinfo(f"{dist_info}/RECORD"), record), _record(rows, record))
    except (zipfile.BadZipFile, EOFError) as err:
        raise InputError(f"{str(source)!r} is not a readable wheel (zip): {err}") from err


def find_dist_info(archive: zipfile.ZipFile, source: Path) -> str:
    """The wheel's one ``.dist-info`` directory (holding RECORD); InputError otherwise."""
    tops = {name.split("/", 1)[0] for name in archive.namelist()}
    found = sorted(top for top in tops if top.endswith(".dist-info"))
    if len(found) != 1 or f"{found[0]}/RECORD" not in archive.namelist():
        raise InputError(
            f"{str(source)!r} has {len(found)} .dist-info directories {found!r}; expected one "
            "holding RECORD",
            hint="rebuild the wheel with a standard build backend",
        )
    return found[0]


def _copy(
    old: zipfile.ZipFile,
    new: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    plan: RetagPlan,
    dist_info: str,
    emit: Emit,
    limits: MemberLimits,
) -> tuple[str, str, str] | None:
    """One member into ``new``, renamed by ``plan``; its RECORD row (None: not listed).
    Every member but METADATA is streamed (:func:`~cuship.wheel.read.members.copy_into`)."""
    top, _, rest = info.filename.partition("/")
    if top == dist_info and rest in ("RECORD", *_SIGNATURES):
        if rest != "RECORD":
            emit(Event(level="warning", topic="retag", message=f"dropped signature {rest!r}"))
        return None
    name = _renamed(info.filename, dist_info, plan)
    source = str(old.filename or "wheel").rsplit("/", 1)[-1]
    if top == dist_info and rest == "METADATA":
        data = read_member(old, info, source, limits, most=METADATA_LIMIT)
        data = _set_version(data, plan, info.filename)
        new.writestr(_like(info, name), data)
        return name, record_hash(data), str(len(data))
    digest, size = copy_into(old, new, info, source, limits, header=_like(info, name))
    if info.is_dir():
        return None
    return name, digest, str(size)


def _renamed(member: str, dist_info: str, plan: RetagPlan) -> str:
    top, sep, rest = member.partition("/")
    old_data = dist_info.removesuffix(".dist-info") + ".data"
    if top == dist_info:
        return f"{plan.new_prefix}.dist-info{sep}{rest}"
    if top == old_data:
        return f"{plan.new_prefix}.data{sep}{rest}"
    return member


def _set_version(data: bytes, plan: RetagPlan, where: str) -> bytes:
    head, blank, body = data.decode("utf-8").partition("\n\n")
    lines = head.split("\n")
    index = next((i for i, line in enumerate(lines) if line.startswith("Version:")), None)
    if index is None:
        raise InputError(f"{where!r} has no 'Version:' header", hint="rebuild the wheel")
    lines[index] = f"Version: {plan.new_version}"
    lines = _with_requires(lines, plan.requires)
    return ("\n".join(lines) + blank + body).encode("utf-8")


def _with_requires(lines: list[str], requires: tuple[str, ...]) -> list[str]:
    """Header lines with ``requires`` added, replacing unconditional ones on the same projects."""
    if not requires:
        return lines
    names = {canonicalize_name(Requirement(r).name) for r in requires}

    def replaced(line: str) -> bool:
        if not line.startswith("Requires-Dist:"):
            return False
        try:
            old = Requirement(line.partition(":")[2].strip())
        except InvalidRequirement:
            return False
        return old.marker is None and canonicalize_name(old.name) in names

    kept = [line for line in lines if not replaced(line)]
    # METADATA with no body ends in a newline, not a blank line: the header block then ends in
    # "" here, and a header after it would land in the body (pip would not see it)
    end = len(kept)
    while end and not kept[end - 1]:
        end -= 1
    return [*kept[:end], *(f"Requires-Dist: {r}" for r in requires), *kept[end:]]


def _like(info: zipfile.ZipInfo, name: str) -> zipfile.ZipInfo:
    copy = zipfile.ZipInfo(name, date_time=info.date_time)
    copy.external_attr = info.external_attr
    copy.compress_type = info.compress_type
    return copy


def _record(rows: list[tuple[str, str, str] | None], record: str) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(row for row in rows if row is not None)
    writer.writerow((record, "", ""))
    return buffer.getvalue().encode("utf-8")
