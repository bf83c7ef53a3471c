"""Everything cuship reads from outside goes through :mod:`cuship._read` (issue 43: one reader):
no other module of ``src/cuship`` opens a file to read it, reads one whole, maps one, opens an
archive or a database, or parses JSON, TOML or YAML, save the calls :data:`ALLOWED` names with
the reason each is not input read past the reader. Writes are counted apart (a mode of ``w``,
``a`` or ``x``, write flags): they read nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.codewalk import read_call, walk

_OWN_DESCRIPTOR = (
    "a descriptor cuship._read.open_regular/open_stated opened (regular, never blocking)"
)
_MEMBER = "a member of a wheel the reader opened, held to wheel.read.members' bounds"
_WORKER = "cuship's own worker protocol between parent and child (it carries inf and NaN)"
_OWN_SITE = (
    "the site's own state, written by cuship (its bytes read by the reader; parsed by json for "
    "speed over a 100,000-wheel index; anything wrong renders the site afresh)"
)
_OWN_CACHE = "cuship's own SQLite cache (rows it wrote; a broken cache starts afresh)"
_PACKAGE_DATA = "cuship's own package data (templates, published schemas), never user input"

# "module:function:call" -> why it is not input read past the reader ("ported at merge": the
# judge branch's ld.so.conf/ld.so.cache readers in judge/ and machine/libraries.py read through
# machine.probe, which reads through cuship._read; any new read there is ported at merge).
ALLOWED: dict[str, str] = {
    "bench/history/dashboard.py:build_site:.read_text": _PACKAGE_DATA,
    "docs/schemas.py:render_documents:.read_text": _PACKAGE_DATA,
    "docs/schemas.py:render_documents:json.loads": _PACKAGE_DATA,
    "builder/sdists.py:unpack:.open": (
        "tarfile over the stream cuship._read opened (regular, never blocking); the members' "
        "sizes and paths are checked before anything is unpacked"
    ),
    "builder/run/nvcc_shim.py:_read_options_file:os.open": (
        "runs with the standard library alone inside a build (python -I -S): it holds the "
        "options file to the reader's rules itself (regular, O_NONBLOCK, 1 MiB, UTF-8)"
    ),
    "builder/run/nvcc_shim.py:_read_options_file:os.read": "the same options file, bounded",
    "check/run/_fork.py:child:os.open": "/dev/null as a forked worker's stdin",
    "check/run/_worker.py:_loop:json.loads": _WORKER,
    "check/run/_worker.py:main:json.loads": _WORKER,
    "check/run/workers.py:_readline:os.read": _WORKER,
    "check/run/workers.py:receive:json.loads": _WORKER,
    "check/sanitize/stream.py:__init__:os.open": "the FIFO cuship made for compute-sanitizer",
    "check/sanitize/stream.py:_drain:os.read": "the FIFO cuship made, read without blocking",
    "index/_cache.py:store_shared:sqlite3.connect": _OWN_CACHE,
    "schema/__init__.py:_cached:marshal.loads": (
        "cuship's own parse of its own data files (bytes read by the reader, kind CACHE; "
        "anything wrong is parsed afresh)"
    ),
    "index/_cache.py:_open:sqlite3.connect": _OWN_CACHE,
    "index/_cache.py:described:json.loads": _OWN_CACHE,
    "index/_pool.py:__init__:mmap.mmap": "an anonymous shared map of counts, no file",
    "index/_pool.py:_fork:pickle.loads": "a pipe from cuship's own forked child",
    "index/_pool.py:_reap:open": "a pipe from cuship's own forked child",
    "index/_pool.py:_reap:pickle.loads": "a pipe from cuship's own forked child",
    "index/_retire.py:read:json.loads": _OWN_SITE,
    "index/_shared.py:read:json.loads": _OWN_SITE,
    "index/keep.py:_load:json.loads": _OWN_SITE,
    "wheel/read/archive.py:_read_fd:os.read": _OWN_DESCRIPTOR,
    "wheel/read/archive.py:_metadata_from:zipfile.ZipFile": "a stream the reader opened, or bytes read",
    "wheel/read/archive.py:_metadata_from:.open": _MEMBER,
    "wheel/read/archive.py:_record_zip:.open": _MEMBER,
    "resolve/http.py:_open:.open": "a URL (urllib), read by resolve.http.get to its limit",
    "store/__init__.py:open:sqlite3.connect": "the results store, checked a regular file first",
    "store/__init__.py:open_read:sqlite3.connect": (
        "the results store, checked a regular file first and opened read-only and immutable"
    ),
    "toolkit/assemble.py:_unpack:.open": _MEMBER,
    "machine/loader.py:_read_library:mmap.mmap": _OWN_DESCRIPTOR,
    "wheel/audit.py:inspect_object:open": _OWN_DESCRIPTOR,
    "wheel/audit.py:inspect_object:mmap.mmap": _OWN_DESCRIPTOR,
    "wheel/audit.py:scan_object:open": _OWN_DESCRIPTOR,
    "wheel/audit.py:scan_object:mmap.mmap": _OWN_DESCRIPTOR,
    "wheel/audit.py:_shared_objects:.open": _MEMBER,
    "wheel/read/members.py:_chunks:.open": "the bounded member reader itself",
    "wheel/read/members.py:member_buffer:mmap.mmap": "its own spool file of a member, bounded",
    "wheel/read/members.py:copy_into:.open": "a member written into a new archive",
}


def test_the_walk_finds_a_planted_read_and_tells_writes_apart(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import json, os\nfrom pathlib import Path\n"
        "def f(p):\n    return json.loads(Path(p).read_text())\n"
        "def g(p):\n    with open(p) as h:\n        return h.read()\n"
        "def h(p, q):\n    Path(p).open('a').write('x')\n"
        "    os.open(q, os.O_WRONLY | os.O_CREAT)\n    return _read.read_bytes(p, KIND)\n",
        encoding="utf-8",
    )
    modules, found, writes = walk(read_call, "_read", tmp_path)
    assert modules == 1
    assert found == ["m.py:f:json.loads", "m.py:f:.read_text", "m.py:g:open"]
    assert writes == ["m.py:h:.open", "m.py:h:os.open"]


def test_no_module_reads_input_past_the_reader() -> None:
    modules, found, writes = walk(read_call, "_read")
    assert modules > 250  # the whole package was walked
    unexplained = sorted(set(found) - set(ALLOWED))
    assert unexplained == [], "read it through cuship._read, or allow-list it with the reason"
    stale = sorted(set(ALLOWED) - set(found))
    assert stale == [], "these allow-listed reads are gone: drop them from ALLOWED"
    assert len(writes) >= 10  # the writes were seen, and told apart


def test_the_reader_is_where_files_are_opened_and_parsed() -> None:
    import cuship._read

    reader = Path(str(cuship._read.__file__)).parent
    calls = set()
    for path in reader.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (found := read_call(node)) is not None:
                calls.add(found[0])
    assert {"os.open", "os.read", "os.fdopen", "mmap.mmap", "json.loads"} <= calls
