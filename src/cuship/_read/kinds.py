"""The kinds of input cuship reads (one table of size caps) and the errors of refusing one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cuship.errors import InputError

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
KEY = Kind("key", 64 * _KIB, "pass the file `cuship keygen` wrote (KEY signs, KEY.pub verifies)")
ENVELOPE = Kind("attestation", 64 * _MIB, "pass the .intoto.jsonl file `cuship attest` wrote")
BASELINE = Kind("baseline", 32 * _MIB, "write a new one with --save-baseline")
RESULTS = Kind("results file", 256 * _MIB, "pass what cuship check or bench wrote")
YANK = Kind("yank file", 16 * _MIB, "one wheel file name (and a reason) per line")
INDEX_FILE = Kind("index file", 64 * _MIB, "a page or manifest the index wrote")
CACHE = Kind("cache file", 64 * _MIB, "cuship's own record; delete it to start afresh")
LOG = Kind("log", 1 * _MIB, "the last MiB of a log is what an error quotes")
HASHED = Kind("file", 0, "pass a regular file")  # streamed in blocks, never held whole
ARCHIVE = Kind("wheel", 0, "pass a .whl file")  # a zip: its members bounded by wheel.read.members
SHARED_OBJECT = Kind("shared object", 0, "pass a .so file")  # mapped: pages read as touched
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
    ARCHIVE,
    SHARED_OBJECT,
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


def refused(
    path: Path | str,
    kind: Kind,
    problem: str,
    cls: type[Refused] = Refused,
    hint: str | None = None,
) -> Refused:
    message = f"the {kind.what} {str(path)!r} {problem}"
    return cls(message, problem=problem, hint=hint or kind.hint)
