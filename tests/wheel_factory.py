"""Build small but real wheel files (zip with dist-info METADATA, WHEEL, RECORD) for tests."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def make_wheel(
    directory: Path,
    name: str,
    version: str,
    *,
    tag: str = "py3-none-any",
    requires_python: str | None = None,
    extra_metadata: str = "",
    modules: Mapping[str, str] | None = None,
    filename: str | None = None,
    files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write an installable wheel for ``name`` ``version``; return its path.

    ``modules`` are Python sources by module name; ``files`` are other members (shared objects,
    data) by their path in the wheel.
    """
    dist = canonicalize_name(name).replace("-", "_")
    stem = f"{dist}-{Version(version)}"
    info = f"{stem}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if requires_python is not None:
        metadata += f"Requires-Python: {requires_python}\n"
    metadata += extra_metadata
    members: dict[str, bytes] = {
        f"{k}.py": v.encode() for k, v in (modules or {dist: f"VERSION = {version!r}\n"}).items()
    }
    members.update(files or {})
    members[f"{info}/METADATA"] = metadata.encode()
    members[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: cuship-tests\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in members.items())
    members[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    path = directory / (filename or f"{stem}-{tag}.whl")
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path
