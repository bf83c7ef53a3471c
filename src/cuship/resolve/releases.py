"""``cuship compat --refresh``: the torch releases a package index offers, held to
``data/torch.toml`` (which says the day it was last checked), and the rows it lacks.

From the index's PEP 691 page for ``torch``: each release's Linux x86_64 wheels (their CPython
tags and manylinux floor, read from the file names), the month its first file was uploaded
(PEP 700 ``upload-time``), and, from one wheel's METADATA (PEP 658, the ``.metadata`` file
beside it), the CUDA of PyPI's build (``cuda-toolkit[...]==13.0.3`` or
``nvidia-cuda-runtime-cu12==12.8.90``). The PyTorch index's CUDA variants are not read: a new
row names PyPI's CUDA only, and says so in its note.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cuship._read import JsonRefused, loads
from cuship.compat import Compat
from cuship.errors import CushipError, InputError
from cuship.resolve.fetch import JSON_TYPE, project_url
from cuship.resolve.http import DEFAULT_OPTIONS, FetchOptions, get
from cuship.wheel.read.headers import header_fields

__all__ = ["NewRelease", "Refresh", "refresh", "updated_toml"]

PYPI = "https://pypi.org/simple/"
_CUDA_PIN = re.compile(
    r"^(?:cuda-toolkit(?:\[[^\]]*\])?|nvidia-cuda-runtime(?:-cu\d+)?)\s*==\s*(\d+)\.(\d+)"
)
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_x86_64")


@dataclass(frozen=True, slots=True, kw_only=True)
class NewRelease:
    """A torch release the data does not know, as the index lists it."""

    minor: str  # "2.15"
    latest: str  # "2.15.0"
    released: str  # "2026-10"
    pythons: tuple[str, ...]
    manylinux: str  # "2_28"
    pypi_cuda: str | None  # "13.0"; None: its METADATA did not say

    def to_json(self) -> dict[str, Any]:
        return {
            "minor": self.minor,
            "latest": self.latest,
            "released": self.released,
            "pythons": list(self.pythons),
            "manylinux": self.manylinux,
            "pypi_cuda": self.pypi_cuda,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Refresh:
    """What the index has that ``torch.toml`` lacks."""

    index: str
    checked: str  # the day the data says it was last checked
    today: str
    known: str  # the newest release the data knows ("2.13.0")
    new: tuple[NewRelease, ...]  # minors the data lacks
    patches: tuple[tuple[str, str, str], ...]  # (minor, the data's latest, the index's latest)

    @property
    def current(self) -> bool:
        return not self.new and not self.patches

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "checked": self.checked,
            "today": self.today,
            "known": self.known,
            "current": self.current,
            "new": [row.to_json() for row in self.new],
            "patches": [{"minor": m, "data": d, "index": i} for m, d, i in self.patches],
        }


def refresh(
    compat: Compat,
    *,
    index: str = PYPI,
    options: FetchOptions = DEFAULT_OPTIONS,
    today: datetime.date | None = None,
) -> Refresh:
    """Hold the data's torch releases to ``index``'s torch page."""
    url = project_url(index, "torch")
    answer = get(url, accept=JSON_TYPE, options=options)
    files = _files(answer.body, url)
    releases = _by_release(files)
    known = {row.minor: row for row in compat.torch}
    new: list[NewRelease] = []
    patches: list[tuple[str, str, str]] = []
    for minor, versions in sorted(releases.items(), key=lambda item: Version(item[0])):
        latest = max(versions, key=Version)
        row = known.get(minor)
        if row is None:
            if Version(minor) > compat.torch[-1].version:
                every = [w for files in versions.values() for w in files]
                new.append(_new_row(minor, latest, versions[latest], every, options))
        elif Version(latest) > row.latest:
            patches.append((minor, str(row.latest), latest))
    return Refresh(
        index=index,
        checked=compat.torch_checked,
        today=(today or datetime.date.today()).isoformat(),
        known=str(compat.torch[-1].latest),
        new=tuple(new),
        patches=tuple(patches),
    )


def _files(body: bytes, url: str) -> list[Mapping[str, Any]]:
    try:
        document = loads(body)
    except (ValueError, JsonRefused) as err:
        raise InputError(f"{url!r} did not answer a PEP 691 JSON page: {err}") from err
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, list):
        raise InputError(f"{url!r} answered a JSON document without a 'files' list")
    return [f for f in files if isinstance(f, dict) and isinstance(f.get("filename"), str)]


def _by_release(
    files: Iterable[Mapping[str, Any]],
) -> dict[str, dict[str, list[Mapping[str, Any]]]]:
    """minor -> version -> its Linux x86_64 wheels (final releases only, no local label)."""
    found: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for entry in files:
        name = str(entry["filename"])
        if not name.endswith(".whl") or "x86_64" not in name or "linux" not in name:
            continue
        try:
            _, version, _, _ = parse_wheel_filename(name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if version.is_prerelease or version.is_devrelease or version.local:
            continue
        minor = f"{version.major}.{version.minor}"
        found.setdefault(minor, {}).setdefault(str(version), []).append(entry)
    return found


def _new_row(
    minor: str,
    latest: str,
    wheels: Sequence[Mapping[str, Any]],
    every: Sequence[Mapping[str, Any]],
    options: FetchOptions,
) -> NewRelease:
    """The row of ``minor``: Pythons, floor and PyPI's CUDA from ``latest``'s ``wheels``, the
    month from the first upload of ``every`` file of the minor."""
    pythons = sorted(
        {
            f"3.{m[1]}"
            for w in wheels
            if (m := re.search(r"-cp3(\d+)-cp3\d+t?-", str(w["filename"])))
        },
        key=lambda v: int(v.split(".")[1]),
    )
    floors = [
        (int(m[1]), int(m[2])) for w in wheels if (m := _MANYLINUX.search(str(w["filename"])))
    ]
    uploaded = sorted(str(w.get("upload-time", ""))[:7] for w in every if w.get("upload-time"))
    return NewRelease(
        minor=minor,
        latest=latest,
        released=uploaded[0] if uploaded else "",
        pythons=tuple(pythons),
        manylinux=f"{min(floors)[0]}_{min(floors)[1]}" if floors else "",
        pypi_cuda=_pypi_cuda(wheels, options),
    )


def _pypi_cuda(wheels: Sequence[Mapping[str, Any]], options: FetchOptions) -> str | None:
    """The CUDA of PyPI's build, from one wheel's METADATA requirements (PEP 658's
    ``.metadata`` file); None when the index serves none."""
    declared = [w for w in wheels if w.get("core-metadata") or w.get("data-dist-info-metadata")]
    wheel = next(iter(declared or wheels), None)
    if wheel is None or not isinstance(wheel.get("url"), str):
        return None
    try:
        answer = get(str(wheel["url"]) + ".metadata", options=options, limit=1 << 20)
    except CushipError:
        return None
    text = answer.body.decode("utf-8", "replace")
    for key, value in header_fields(text):
        match = _CUDA_PIN.match(value.strip()) if key == "requires-dist" else None
        if match:
            return f"{match[1]}.{match[2]}"
    return None


def updated_toml(text: str, result: Refresh, source: str) -> str:
    """``torch.toml``'s text with the new rows appended, newer patches written in and the day
    checked set; each new row names ``source`` and what was not read."""
    for minor, old, new in result.patches:
        block = re.search(rf'version = "{re.escape(minor)}"\nlatest = "{re.escape(old)}"', text)
        if block:
            text = text.replace(block[0], f'version = "{minor}"\nlatest = "{new}"')
    text = re.sub(r'(?m)^checked = "[^"]*"', f'checked = "{result.today}"', text, count=1)
    for row in result.new:
        cuda = row.pypi_cuda or "13.0"
        note = (
            f"Added by cuship compat --refresh on {result.today} from {result.index}: the PyTorch "
            "index's CUDA variants were not read (only PyPI's build)"
            + ("" if row.pypi_cuda else "; PyPI's CUDA not read either, 13.0 assumed")
            + "; the C++ ABI taken from the release before."
        )
        released = row.released or result.today[:7]
        if not row.released:
            note += " The month is the day of the refresh: the index gave no upload time."
        pythons = ", ".join(f'"{p}"' for p in row.pythons)
        text = text.rstrip("\n") + (
            f'\n\n[[release]]\nversion = "{row.minor}"\nlatest = "{row.latest}"\n'
            f'released = "{released}"\ncuda = ["{cuda}"]\npypi_cuda = "{cuda}"\n'
            f"pythons = [{pythons}]\ncxx11_abi = [true]\n"
            f'manylinux = "{row.manylinux}"\nsource = "{source}"\nnote = "{note}"\n'
        )
    return text
