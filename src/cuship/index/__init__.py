"""Static package index: scan wheels, render PEP 503/691/658 pages, write atomically.

``scan`` reads wheels (through a hash cache), ``render`` turns them into the tree as data,
``write`` puts it on disk as one atomic step. :mod:`cuship.serve` serves the written site.
"""

from __future__ import annotations

from cuship.index._cache import FileStamp, ScanCache
from cuship.index._shared import STATE_DIR
from cuship.index.keep import site_records
from cuship.index.scan import IndexedWheel, Skipped, expand_paths, scan, scan_report
from cuship.index.simple import MANIFEST, Describe, IndexSummary, render, write
from cuship.index.yank import parse_yank_lines, read_yank_file

__all__ = [
    "MANIFEST",
    "STATE_DIR",
    "Describe",
    "FileStamp",
    "IndexSummary",
    "IndexedWheel",
    "ScanCache",
    "Skipped",
    "expand_paths",
    "parse_yank_lines",
    "read_yank_file",
    "render",
    "scan",
    "scan_report",
    "site_records",
    "write",
]
