"""Pick the wheel for this machine from an index, fetch it hash-verified, and the PEP 517 backend.

``select`` judges and ranks an index's files for a :class:`Target` (pure); ``fetch`` reads
PEP 691/503 pages and the cuship manifest and downloads files with their sha256 checked;
``decide`` and ``backend`` are the prebuilt-or-build PEP 517 backend (named as
``cuship.backend``); ``provenance`` reads the ``cuship.json`` it leaves in what it installs.
"""

from __future__ import annotations

from cuship.resolve.select import (
    Candidate,
    Resolution,
    Target,
    Verdict,
    WheelFacts,
    parse_requirement,
    select,
    target_of,
)

__all__ = [
    "Candidate",
    "Resolution",
    "Target",
    "Verdict",
    "WheelFacts",
    "parse_requirement",
    "select",
    "target_of",
]
