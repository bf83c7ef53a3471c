"""The one reader of what cuship reads from outside: configs, METADATA and RECORD, torch's files,
``ld.so.conf`` and ``/proc``, keys and envelopes, baselines and results, stores, documents from an
index, a child's JSON. Everything it hands back has been held to the same rules:

* **regular files only**, refused by kind without blocking: the file is opened with
  ``O_NONBLOCK`` (a FIFO with no writer opens at once and is refused, never waited on) and its
  kind taken from ``fstat`` on that descriptor; a device (``/dev/zero``), a directory, a socket
  is :class:`NotRegular` naming what it is;
* **a size cap per kind** (:data:`KINDS`, one table): nothing past the cap is read;
* **UTF-8** text, or a :class:`Refused` naming the line of the first bad byte;
* **JSON with limits** (:func:`loads`): at most :data:`MAX_DEPTH` levels, numbers finite and of
  at most :data:`MAX_DIGITS` digits (``1e400``, ``NaN`` and a 5,000-digit integer are refused,
  never turned into ``inf`` or a huge int), strings that are Unicode text;
* **numbers from text** through :func:`integer` (ASCII digits only: ``int("²")`` would raise,
  ``"²".isdigit()`` says yes).

Every refusal is an :class:`~cuship.errors.InputError` (exit 2). ``tests/unit/test_one_reader.py``
walks the package: no other module opens, reads or parses input past this one, save the
allow-listed writes and cuship's own files.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import reprlib
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cuship._format import size_text
from cuship.errors import InputError

__all__ = [
    "BASELINE",
    "CACHE",
    "CHILD_OUTPUT",
    "CONFIG",
    "DIST_FILE",
    "ENVELOPE",
    "HASHED",
    "INDEX_FILE",
    "KEY",
    "KINDS",
    "LOG",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "METADATA",
    "RECORD",
    "RESULTS",
    "SOURCE",
    "STORE",
    "SYSTEM_FILE",
    "TORCH_LIBRARY",
    "TORCH_VERSION",
    "YANK",
    "JsonRefused",
    "Kind",
    "NotRegular",
    "Refused",
    "decode",
    "dist_field",
    "dist_fields",
    "dist_files",
    "dist_text",
    "file_kind",
    "installed_version",
    "integer",
    "loads",
    "open_regular",
    "open_stated",
    "read_bytes",
    "read_head",
    "read_json",
    "read_tail",
    "read_text",
    "reader",
    "regular_problem",
    "shown",
    "stated",
    "toml",
    "yaml",
]

_KIB, _MIB = 1 << 10, 1 << 20


@dataclass(frozen=True, slots=True)
class Kind:
    """What a file is to cuship: how a message names it, the most bytes read of it, what to
    pass instead when it is refused."""

    what: str
    limit: int
    hint: str


# The one table of caps. Each is far past the real files of its kind (measured sizes beside).
CONFIG = Kind("config file", 4 * _MIB, "a cuship config is a few KiB; check the file")
SOURCE = Kind("source file", 4 * _MIB, "setup.py and __init__.py are read, never run")
METADATA = Kind("METADATA", 16 * _MIB, "torch's METADATA is 50 KiB")
RECORD = Kind("RECORD", 32 * _MIB, "torch's RECORD is about 2 MiB")
DIST_FILE = Kind("dist-info file", 1 * _MIB, "WHEEL, variant.json, direct_url.json: a few KiB")
TORCH_VERSION = Kind("torch version file", 64 * _KIB, "torch/version.py is under 1 KiB")
TORCH_LIBRARY = Kind("torch library", 256 * _MIB, "libc10.so is about 1.5 MiB")
SYSTEM_FILE = Kind("system file", 1 * _MIB, "/proc, /sys and ld.so.conf files are a few KiB")
KEY = Kind("key", 64 * _KIB, "pass the file `cuship keygen` wrote (KEY to sign, KEY.pub to verify)")
ENVELOPE = Kind("attestation", 64 * _MIB, "pass the .intoto.jsonl file `cuship attest` wrote")
BASELINE = Kind("baseline", 32 * _MIB, "write a new one with --save-baseline")
RESULTS = Kind("results file", 256 * _MIB, "pass what cuship check or bench wrote")
YANK = Kind("yank file", 16 * _MIB, "one wheel file name (and a reason) per line")
INDEX_FILE = Kind("index file", 64 * _MIB, "a page or manifest the index wrote")
CACHE = Kind("cache file", 64 * _MIB, "cuship's own record; delete it to start afresh")
LOG = Kind("log", 1 * _MIB, "the last MiB of a log is what an error quotes")
HASHED = Kind("file", 0, "pass a regular file")  # streamed in blocks, never held whole
STORE = Kind("results store", 0, "pass the SQLite file cuship wrote (CUSHIP_STORE)")
CHILD_OUTPUT = Kind("output", 64 * _MIB, "a command's captured stdout or stderr, kept per stream")

KINDS: tuple[Kind, ...] = (
    CONFIG,
    SOURCE,
    METADATA,
    RECORD,
    DIST_FILE,
    TORCH_VERSION,
    TORCH_LIBRARY,
    SYSTEM_FILE,
    KEY,
    ENVELOPE,
    BASELINE,
    RESULTS,
    YANK,
    INDEX_FILE,
    CACHE,
    LOG,
    HASHED,
    STORE,
    CHILD_OUTPUT,
)

MAX_DEPTH = 64  # JSON levels: cuship's deepest document nests 7
MAX_DIGITS = 20  # of a JSON integer (2**64 has 20) or of :func:`integer`'s text
_MAX_NUMBER_TEXT = 64  # characters of a JSON float literal


class Refused(InputError):
    """An input cuship will not read: ``problem`` says why (without the file's name)."""

    def __init__(self, message: str, *, problem: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.problem = problem or message


class NotRegular(Refused):
    """A path read as a file that is not a regular file: reading a FIFO or a device could
    block forever or never end."""


class JsonRefused(Refused, ValueError):
    """A document that is not JSON cuship reads (not JSON, not UTF-8, too deep, a number out
    of range, a lone surrogate); a ValueError too, for callers that catch one."""


def _refused(
    path: Path | str,
    kind: Kind,
    problem: str,
    cls: type[Refused] = Refused,
    hint: str | None = None,
) -> Refused:
    message = f"the {kind.what} {str(path)!r} {problem}"
    return cls(message, problem=problem, hint=hint or kind.hint)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What ``mode`` (``st_mode``) says the file is: ``a regular file``, ``a FIFO (named
    pipe)``, ``a directory``, a device, a socket."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def regular_problem(path: Path | str) -> str | None:
    """Why the file at ``path`` cannot be read as a file, or None: it does not exist, is a
    dangling symlink or a symlink loop, or is a FIFO, device, socket or directory (said as
    such; nothing is opened)."""
    where = Path(path)
    try:
        mode = where.stat().st_mode
    except FileNotFoundError:
        return "is a dangling symlink" if where.is_symlink() else "does not exist"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a symlink loop"
        return f"cannot be read: {err.strerror or err}"
    if stat.S_ISREG(mode):
        return None
    return f"is {file_kind(mode)}, not a regular file"


def open_stated(path: Path | str, what: str = "file") -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its stat (taken on the
    descriptor). Opened with ``O_NONBLOCK``, so a FIFO with no writer is refused at once, never
    waited on; anything but a regular file is :class:`NotRegular` naming its kind. A missing
    file stays :class:`FileNotFoundError` (the caller says what that means)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise
    except OSError as err:
        problem = regular_problem(path) or f"cannot be opened: {err.strerror or err}"
        raise NotRegular(f"the {what} {str(path)!r} {problem}", problem=problem) from err
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        problem = f"is {file_kind(found.st_mode)}, not a regular file; refused"
        raise NotRegular(
            f"the {what} {str(path)!r} {problem}", problem=problem, hint=f"pass a regular {what}"
        )
    os.set_blocking(fd, True)
    return fd, found


def open_regular(path: Path | str, what: str = "file") -> int:
    """:func:`open_stated`'s descriptor alone."""
    return open_stated(path, what)[0]


def stated(path: Path | str, kind: Kind) -> os.stat_result:
    """The stat of the regular file at ``path`` (opened and closed, never read: for a reader
    such as SQLite that takes a path); :class:`NotRegular` otherwise."""
    fd, found = _open(path, kind)
    os.close(fd)
    return found


@contextmanager
def reader(path: Path | str, kind: Kind) -> Iterator[IO[bytes]]:
    """A binary stream of the regular file at ``path`` (to hash or stream it in blocks; the
    caller bounds what it keeps)."""
    fd, _ = _open(path, kind)
    with os.fdopen(fd, "rb") as handle:
        yield handle


def _open(path: Path | str, kind: Kind) -> tuple[int, os.stat_result]:
    try:
        return open_stated(path, kind.what)
    except NotRegular as err:
        raise _refused(path, kind, err.problem, NotRegular) from err.__cause__
    except OSError as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise _refused(path, kind, f"cannot be read: {err.strerror or err}") from err


def read_bytes(path: Path | str, kind: Kind, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` (the kind's cap by default):
    a larger file is :class:`Refused` and nothing past the cap is read. A missing file stays
    :class:`FileNotFoundError`."""
    cap = kind.limit if limit is None else limit
    fd, found = _open(path, kind)
    try:
        if found.st_size > cap:
            raise _too_large(path, kind, cap, found.st_size)
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, min(cap + 1 - size, _MIB))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise _refused(path, kind, f"cannot be read: {err.strerror or err}") from err
    finally:
        os.close(fd)
    if size > cap:  # /proc and a file that grew say less than they hold
        raise _too_large(path, kind, cap, None)
    return b"".join(chunks)


def read_head(path: Path | str, kind: Kind, limit: int | None = None) -> bytes:
    """The first ``limit`` bytes (the kind's cap by default) of the regular file at ``path``,
    the rest left unread: for a scan that needs only the start (a setup.py's arch flags)."""
    cap = kind.limit if limit is None else limit
    fd, _ = _open(path, kind)
    try:
        chunks, size = [], 0
        while size < cap and (chunk := os.read(fd, min(cap - size, _MIB))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise _refused(path, kind, f"cannot be read: {err.strerror or err}") from err
    finally:
        os.close(fd)
    return b"".join(chunks)


def _too_large(path: Path | str, kind: Kind, cap: int, size: int | None) -> Refused:
    said = f" ({size_text(size)})" if size is not None else ""
    return _refused(
        path, kind, f"is larger than {size_text(cap)}{said}, the most cuship reads of it"
    )


def decode(data: bytes, what: str) -> str:
    """``data`` as UTF-8 (a BOM dropped); :class:`Refused` naming the line of the first byte
    that is not UTF-8 (``what``: the source, as a message names it)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        problem = (
            f"is not UTF-8 text: byte 0x{data[err.start]:02x} on line {line} cannot be decoded"
        )
        raise Refused(f"{what} {problem}", problem=problem, hint=_AS_UTF8) from None


def read_text(path: Path | str, kind: Kind, *, limit: int | None = None) -> str:
    """:func:`read_bytes` decoded as UTF-8 (:func:`decode`)."""
    data = read_bytes(path, kind, limit=limit)
    try:
        return decode(data, f"the {kind.what} {str(path)!r}")
    except Refused as err:
        raise _refused(path, kind, err.problem, hint=_AS_UTF8) from None


_AS_UTF8 = "save the file as UTF-8"


def read_json(path: Path | str, kind: Kind, *, limit: int | None = None) -> Any:
    """:func:`read_bytes` parsed by :func:`loads`; every defect a :class:`Refused` naming it."""
    data = read_bytes(path, kind, limit=limit)
    try:
        return loads(data)
    except JsonRefused as err:
        raise _refused(path, kind, err.problem, JsonRefused) from err


def read_tail(path: Path | str, kind: Kind = LOG) -> str:
    """The last ``kind.limit`` bytes of the file at ``path`` as text (bad bytes replaced): the
    part of a long log an error quotes. "" when it cannot be read."""
    try:
        fd, found = _open(path, kind)
    except (OSError, Refused):
        return ""
    try:
        os.lseek(fd, max(0, found.st_size - kind.limit), os.SEEK_SET)
        data = os.read(fd, kind.limit)
    except OSError:
        data = b""
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


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
            raise _too_large(f"{name} of {where!r}", kind, kind.limit, len(text))
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


# --- JSON ---------------------------------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how a lone surrogate gets into UTF-8 JSON
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_constant(name: str) -> Any:
    raise JsonRefused(f"holds {name}, which is not a JSON number", problem=f"holds {name}")


def _float(text: str) -> float:
    value = float(text)
    if len(text) > _MAX_NUMBER_TEXT or not math.isfinite(value):
        problem = f"holds the number {shown(text, 24)}, out of range"
        raise JsonRefused(problem, problem=problem)
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        problem = f"holds an integer of {len(text.lstrip('-')):,} digits (at most {MAX_DIGITS})"
        raise JsonRefused(problem, problem=problem)
    return int(text)


def loads(data: bytes | str) -> Any:
    """The JSON document in ``data`` (UTF-8 bytes or text), held to the limits above; every
    defect (not JSON, not UTF-8, too deep, a number out of range, a lone surrogate) is a
    :class:`JsonRefused` saying which. The decoder's own error, when there is one, is its cause.
    """
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes | bytearray) else data
    except UnicodeDecodeError as err:
        problem = f"is not UTF-8 ({err.reason} at byte {err.start})"
        raise JsonRefused(problem, problem=problem) from err
    try:
        document = json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_no_constant)
    except RecursionError:
        raise _deep() from None
    except json.JSONDecodeError as err:
        problem = f"is not JSON ({err})"
        raise JsonRefused(problem, problem=problem) from err
    if text.count("[") + text.count("{") > MAX_DEPTH:
        _check_depth(document)
    if _SURROGATE_ESCAPE.search(text) or _RAW_SURROGATE.search(text):
        _check_text(document)  # rare: a surrogate pair (an emoji) also lands here, and passes
    return document


def _deep() -> JsonRefused:
    problem = f"is nested too deeply (more than {MAX_DEPTH} levels)"
    return JsonRefused(problem, problem=problem)


def _check_depth(document: Any) -> None:
    todo: list[tuple[Any, int]] = [(document, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise _deep()
        values = item.values() if isinstance(item, dict) else item
        todo.extend((v, depth + 1) for v in values if isinstance(v, dict | list))


def _check_text(document: Any) -> None:
    todo = [document]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                problem = f"holds a lone surrogate ({shown(item)}), which is not Unicode text"
                raise JsonRefused(problem, problem=problem) from None


# --- TOML and YAML ----------------------------------------------------------------------------


def toml(text: str) -> dict[str, Any]:
    """The TOML document ``text``; :class:`Refused` when it is not TOML or nests past what the
    parser goes (``problem`` says which)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise Refused(f"not valid TOML: {err}", problem=f"not valid TOML: {err}") from err
    except RecursionError:
        raise Refused(_TOO_DEEP, problem=_TOO_DEEP) from None


def yaml(text: str) -> Any:
    """The YAML document ``text`` (``safe_load``: plain data only); :class:`Refused` as for
    :func:`toml`."""
    import yaml as pyyaml

    try:
        return pyyaml.safe_load(text)
    except pyyaml.YAMLError as err:
        raise Refused(f"not valid YAML: {err}", problem=f"not valid YAML: {err}") from err
    except RecursionError:
        raise Refused(_TOO_DEEP, problem=_TOO_DEEP) from None


_TOO_DEEP = "nested too deeply: arrays or tables inside each other thousands of levels down"


# --- numbers and untrusted values in messages -----------------------------------------------

_DIGITS = re.compile(f"[0-9]{{1,{MAX_DIGITS}}}")


def integer(text: str, what: str, *, low: int = 0, high: int = (1 << 63) - 1) -> int:
    """``text`` as a whole number from ``low`` to ``high``: ASCII digits only (``"²"``, ``"١"``,
    ``"+1"``, ``" 1"`` and ``"1_0"`` are refused), at most :data:`MAX_DIGITS` of them;
    :class:`Refused` naming ``what`` otherwise."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        problem = f"{what} {shown(text)} is not a whole number"
        raise Refused(problem, problem=problem)
    value = int(text)
    if not low <= value <= high:
        problem = f"{what} {value} is out of range ({low} to {high})"
        raise Refused(problem, problem=problem)
    return value


def shown(value: object, limit: int = 60) -> str:
    """``repr`` of an untrusted value: nesting, length and lists cut short, safe to print."""
    try:
        text = _REPR.repr(value)
    except ValueError:  # an int too long for repr
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = 60
_REPR.maxother = 60
