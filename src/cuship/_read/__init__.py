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

from cuship._read.dists import dist_field, dist_fields, dist_files, dist_text, installed_version
from cuship._read.files import (
    archive,
    file_kind,
    mapped,
    open_file,
    open_regular,
    open_stated,
    read_bytes,
    read_head,
    read_json,
    read_tail,
    read_text,
    reader,
    regular_problem,
    stated,
)
from cuship._read.kinds import (
    ARCHIVE,
    BASELINE,
    CACHE,
    CHILD_OUTPUT,
    CONFIG,
    DIST_FILE,
    ENVELOPE,
    HASHED,
    INDEX_FILE,
    KEY,
    KINDS,
    LOG,
    MAX_DEPTH,
    MAX_DIGITS,
    METADATA,
    RECORD,
    RESULTS,
    SHARED_OBJECT,
    SOURCE,
    STORE,
    SYSTEM_FILE,
    TORCH_LIBRARY,
    TORCH_VERSION,
    YANK,
    JsonRefused,
    Kind,
    NotRegular,
    Refused,
)
from cuship._read.parse import decode, integer, loads, shown, toml, yaml

__all__ = [
    "ARCHIVE",
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
    "SHARED_OBJECT",
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
    "archive",
    "decode",
    "dist_field",
    "dist_fields",
    "dist_files",
    "dist_text",
    "file_kind",
    "installed_version",
    "integer",
    "loads",
    "mapped",
    "open_file",
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
