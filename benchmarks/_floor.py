"""The floor of an index run: the one definition every index benchmark measures cuship against.

The floor of a ``cuship index`` run is a Python process, started as cuship's is (the same
interpreter, its site and .pth files), that does with plain calls only what no indexer
publishing the same site can skip, learnt beforehand from a site cuship wrote (a plan):

1. state every file given (a folder listed, each entry stated): how a run sees what changed;
2. read whole each wheel the run must read, and sha256 it (the pages carry the hash);
3. inflate from those bytes the members the index reports on, each once, hashing each as it
   inflates (the index holds them to RECORD): METADATA, RECORD, and the ELF shared objects a
   CUDA wheel's record describes (not the bundled CUDA libraries, which it names unread);
4. read the index's own state an update starts from (its manifest, each rewritten project's);
5. write the files the run writes, with the same bytes; make its folders; hard-link its wheels.

No parsing, no rendering, no cache, no atomic renames. An unchanged rerun's floor is step 1
alone; +1 wheel's is 1-5 for one wheel and the files that changed; a cold index's 1-3 and 5.
A plan is a marshal file (``python3 benchmarks/_floor.py PLAN``), so that the floor can be
timed as a whole command beside cuship's (``cuship/floor`` in every bench's table is the ratio
of two whole processes, interpreter start-up in both).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
import sys
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the floor process imports nothing beyond what it runs
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

__all__ = [
    "cold_plan",
    "diff_files",
    "members_of",
    "plan",
    "rerun_plan",
    "run",
    "snapshot",
    "update_plan",
    "write_plan",
]

_LOCAL = 30  # a zip local header's fixed part

if TYPE_CHECKING:
    Plan = dict[str, Any]  # what the floor process does, in order (see plan)


def members_of(path: Path, *, elf: bool) -> list[tuple[int, int, int]]:
    """(header offset, compressed size, method) of each member of the wheel at ``path`` the
    index reports on: its METADATA and RECORD, and with ``elf`` each ELF shared object that is
    not a bundled CUDA library (cuship's own predicates decide, as its record does)."""
    import zipfile

    found = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            top = name.count("/") == 1 and name.endswith(
                (".dist-info/METADATA", ".dist-info/RECORD")
            )
            if top or (elf and _reported_elf(archive, info)):
                found.append((info.header_offset, info.compress_size, info.compress_type))
    return found


def _reported_elf(archive: Any, info: Any) -> bool:
    from cuship.wheel.cudalibs import is_cuda_lib
    from cuship.wheel.read.zipmeta import looks_shared

    name = info.filename
    if not looks_shared(name) or is_cuda_lib(name):
        return False
    with archive.open(info) as member:
        return bool(member.read(4) == b"\x7fELF")


def plan(
    *,
    stat: Iterable[str] = (),
    wheels: Mapping[str, Sequence[tuple[int, int, int]]] | None = None,
    read: Iterable[str] = (),
    dest: str = "",
    folders: Iterable[str] = (),
    files: Iterable[tuple[str, bytes]] = (),
    links: Iterable[tuple[str, str]] = (),
) -> Plan:
    """A floor's plan: ``stat`` folders (listed, each entry stated) or files; ``wheels`` to read
    whole and hash, with the members to inflate (:func:`members_of`); ``read``: the site's
    files an update reads; under ``dest``: ``folders`` to make, ``files`` to write, ``links``
    (wheel, relative path) to make."""
    return {
        "site": dest,  # the prefix of ``read`` paths, re-pointed with ``dest``
        "stat": list(stat),
        "wheels": [(path, list(members)) for path, members in (wheels or {}).items()],
        "read": list(read),
        "dest": dest,
        "folders": list(folders),
        "files": list(files),
        "links": list(links),
    }


def write_plan(floor: Plan, path: Path) -> Path:
    path.write_bytes(marshal.dumps(floor))
    return path


def _stat(where: str) -> None:
    if os.path.isdir(where):  # noqa: PTH112 - plain calls: pathlib's cost would show
        with os.scandir(where) as entries:
            for entry in entries:
                entry.stat()
    else:
        os.stat(where)  # noqa: PTH116


def _wheel(path: str, members: Sequence[tuple[int, int, int]]) -> None:
    with open(path, "rb") as handle:
        data = handle.read()
    hashlib.sha256(data).digest()
    view = memoryview(data)
    for offset, compressed, method in members:
        name_len, extra_len = struct.unpack_from("<HH", data, offset + 26)
        start = offset + _LOCAL + name_len + extra_len
        raw = view[start : start + compressed]
        digest = hashlib.sha256()
        if not method:
            digest.update(raw)
            continue
        inflater = zlib.decompressobj(-15)
        left: bytes | memoryview = raw
        while left:  # in pieces, as a member larger than memory must be
            digest.update(inflater.decompress(left, 4 << 20))
            left = inflater.unconsumed_tail
        digest.update(inflater.flush())


def _write(dest: str, folders: Sequence[str], files: Sequence[tuple[str, bytes]]) -> None:
    for folder in folders:
        os.makedirs(f"{dest}/{folder}", exist_ok=True)  # noqa: PTH103
    for rel, data in files:
        fd = os.open(f"{dest}/{rel}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def run(floor: Plan) -> None:
    """Do what ``floor`` says (the module's docstring), in this process."""
    for where in floor["stat"]:
        _stat(where)
    for path, members in floor["wheels"]:
        _wheel(path, members)
    for path in floor["read"]:
        with open(path, "rb") as handle:
            handle.read()
    dest = floor["dest"]
    if dest:
        _write(dest, floor["folders"], floor["files"])
        for source, rel in floor["links"]:
            os.link(source, f"{dest}/{rel}")


def snapshot(site: Path) -> dict[str, tuple[int, int, int]]:
    """Each file of ``site`` by relative path: (inode, size, mtime), to tell what a run wrote."""
    from pathlib import Path

    found = {}
    for root, _dirs, names in os.walk(site):
        for name in names:
            path = Path(root, name)
            stat = path.stat()
            found[str(path.relative_to(site))] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return found


def diff_files(
    before: Mapping[str, tuple[int, int, int]], site: Path
) -> tuple[list[str], list[tuple[str, bytes]], list[tuple[str, str]]]:
    """What a run wrote into ``site`` since ``before`` (its :func:`snapshot`): the folders it
    made, the files it wrote or replaced (their bytes now), the wheels it linked in."""
    from pathlib import Path

    after = snapshot(site)
    changed = [rel for rel, stamp in sorted(after.items()) if before.get(rel) != stamp]
    folders = sorted({str(Path(rel).parent) for rel in changed if str(Path(rel).parent) != "."})
    files, links = [], []
    for rel in changed:
        path = site / rel
        if rel.endswith(".whl") and path.stat().st_nlink > 1:
            links.append((str(path), rel))
        else:
            files.append((rel, path.read_bytes()))
    return folders, files, links


if __name__ == "__main__":  # python3 benchmarks/_floor.py PLAN [DEST]: DEST for the plan's
    with open(sys.argv[1], "rb") as source:
        loaded = marshal.loads(source.read())
    if len(sys.argv) > 2:
        loaded["dest"] = sys.argv[2]
        loaded["read"] = [sys.argv[2] + path[len(loaded["site"]) :] for path in loaded["read"]]
    run(loaded)


# --- plans of the three index runs, learnt from sites cuship wrote -------------------------------


def cold_plan(
    site: Path, wheels: Sequence[Path], dest: Path, *, given: Sequence[str], elf: bool = False
) -> Plan:
    """A cold index of ``wheels`` (``given``: the folders or files named), as ``site`` shows
    it, written again at ``dest``: every wheel read, hashed and its members inflated, every
    page and manifest written, every wheel linked."""
    from pathlib import Path

    folders: list[str] = []
    files: list[tuple[str, bytes]] = []
    links: list[tuple[str, str]] = []
    by_name = {path.name: path for path in wheels}
    for root, dirs, names in os.walk(site):
        dirs.sort()
        rel = os.path.relpath(root, site)
        prefix = "" if rel == "." else rel + "/"
        folders.extend(prefix + d for d in dirs)
        for name in sorted(names):
            if name.endswith(".whl") and name in by_name:
                links.append((str(by_name[name]), prefix + name))
            else:
                files.append((prefix + name, Path(root, name).read_bytes()))
    return plan(
        stat=given,
        wheels={str(path): members_of(path, elf=elf) for path in wheels},
        dest=str(dest),
        folders=folders,
        files=files,
        links=links,
    )


def update_plan(
    before: Mapping[str, tuple[int, int, int]],
    after: Path,
    new: Sequence[Path],
    dest: Path,
    *,
    projects: Sequence[str],
) -> Plan:
    """An update of a site (``before``: its :func:`snapshot`) that gave ``after``, redone at
    ``dest`` (a copy of the site before): ``new`` wheels stated, read, hashed and inflated,
    the index's manifest and each touched project's (``projects``) read, then the files the
    update wrote written and its wheels linked."""
    folders, files, links = diff_files(before, after)
    # a project the update adds has no manifest yet: the run reads only those that exist
    known = [p for p in projects if f"simple/{p}/cuship.json" in before]
    reads = [f"{dest}/cuship-index.json", *(f"{dest}/simple/{p}/cuship.json" for p in known)]
    return plan(
        stat=[str(path) for path in new],
        wheels={str(path): members_of(path, elf=False) for path in new},
        read=reads,
        dest=str(dest),
        folders=folders,
        files=files,
        links=links,
    )


def rerun_plan(folders: Sequence[Path]) -> Plan:
    """A rerun over ``folders`` that finds nothing changed: each listed, each entry stated."""
    return plan(stat=[str(folder) for folder in folders])
