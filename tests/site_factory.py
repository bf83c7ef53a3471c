"""Installed distributions laid out as an installer leaves them: files under a site directory and
a ``.dist-info`` with METADATA, WHEEL (tags), RECORD and any extra files (cuship.json, ...)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from cuship.wheel.write.retag import record_hash


def install(
    site: Path,
    name: str,
    version: str,
    *,
    files: Mapping[str, bytes] | None = None,
    tags: Sequence[str] = ("cp311-cp311-manylinux_2_28_x86_64",),
    requires: Sequence[str] = (),
    cuship_json: Mapping[str, Any] | None = None,
    direct_url: Mapping[str, Any] | None = None,
    record_only: Sequence[str] = (),
) -> Path:
    """Lay ``name`` ``version`` out in ``site``; return its .dist-info directory.

    ``files`` are written and listed in RECORD; ``record_only`` are listed but not written (a
    damaged install). ``tags`` go to WHEEL (none: no WHEEL file).
    """
    module = canonicalize_name(name).replace("-", "_")
    info = f"{module}-{version}.dist-info"
    members: dict[str, bytes] = {f"{module}/__init__.py": b""}
    members.update(files or {})
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    members[f"{info}/METADATA"] = metadata.encode()
    if tags:
        wheel = "Wheel-Version: 1.0\nGenerator: cuship-tests\nRoot-Is-Purelib: false\n"
        members[f"{info}/WHEEL"] = (wheel + "".join(f"Tag: {t}\n" for t in tags)).encode()
    if cuship_json is not None:
        members[f"{info}/cuship.json"] = json.dumps(cuship_json).encode()
    if direct_url is not None:
        members[f"{info}/direct_url.json"] = json.dumps(direct_url).encode()
    for relative, data in members.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    record = "".join(f"{p},{record_hash(d)},{len(d)}\n" for p, d in members.items())
    record += "".join(f"{p},sha256=x,1\n" for p in record_only)
    (site / info / "RECORD").write_text(record + f"{info}/RECORD,,\n")
    return site / info
