"""The fast METADATA reader agrees with zipfile, and steps aside when the archive is unusual."""

from __future__ import annotations

import hashlib
import importlib
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cuship.errors import InputError
from cuship.index import scan
from cuship.index.describe import describe_wheel
from cuship.wheel import audit
from cuship.wheel.read.zipmeta import member_names, metadata_fast
from tests.wheel_factory import make_wheel


def test_fast_path_matches_zipfile(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "fast", "1.0", requires_python=">=3.10")
    with zipfile.ZipFile(wheel) as archive:
        expected = archive.read("fast-1.0.dist-info/METADATA")
    assert metadata_fast(wheel.read_bytes()) == ("fast-1.0.dist-info/METADATA", expected)


def test_unusual_archives_fall_back_to_zipfile(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "src", "prefixed", "1.0")
    data = wheel.read_bytes()
    assert metadata_fast(b"#!/bin/sh\n" + data) is None  # bytes before the archive
    assert metadata_fast(data[:-30]) is None  # truncated end record
    prefixed = tmp_path / "prefixed-1.0-py3-none-any.whl"
    prefixed.write_bytes(b"#!/bin/sh\n" + data)
    (found,) = scan([prefixed])  # zipfile copes with the prefix
    assert b"Name: prefixed" in found.metadata


def test_a_corrupt_metadata_member_is_skipped(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "src", "corrupt", "1.0")
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo("corrupt-1.0.dist-info/METADATA")
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + 2] ^= 0xFF
    assert metadata_fast(bytes(data)) is None
    broken = tmp_path / wheel.name
    broken.write_bytes(bytes(data))
    assert scan([broken]) == ()


def test_member_names_match_zipfile(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "names", "1.0", files={"names/data/x.bin": b"\0" * 10})
    with zipfile.ZipFile(wheel) as archive:
        expected = archive.namelist()
    assert member_names(wheel.read_bytes()) == expected
    assert member_names(b"#!/bin/sh\n" + wheel.read_bytes()) is None


def test_describing_a_pure_python_wheel_without_zipfile_says_what_zipfile_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = make_wheel(
        tmp_path,
        "pinned",
        "1.0+cu130torch2.9",
        extra_metadata="Requires-Dist: torch==2.9.*\nRequires-Dist: pytest; extra == 'test'\n",
    )
    plain = make_wheel(tmp_path, "plain", "1.0")
    bad = make_wheel(tmp_path, "bad", "1.0", extra_metadata="Requires-Dist: torch>>>2\n")
    fast = [describe_wheel(w) for w in (pinned, plain)]
    with pytest.raises(InputError) as fast_error:
        describe_wheel(bad)
    monkeypatch.setattr(audit, "_scan_small", lambda path: None)
    assert [describe_wheel(w) for w in (pinned, plain)] == fast
    assert fast[0]["torch_requirement"] == "torch==2.9.*"
    with pytest.raises(InputError) as slow_error:
        describe_wheel(bad)
    assert str(slow_error.value) == str(fast_error.value)


def test_the_scan_describes_a_pure_wheel_as_describe_wheel_does(tmp_path: Path) -> None:
    """One read per wheel: the record the scan makes from what it parsed equals
    describe_wheel's; a wheel with a shared object is described by describe_wheel in the scan
    (where a wheel that cannot be described is skipped); a pure wheel with a requirement
    describe_wheel refuses is left to describe_wheel (which reads it again, and words the error)."""
    from cuship.index.scan import scan_report

    pinned = make_wheel(
        tmp_path,
        "pinned",
        "1.0+cu130torch2.9",
        extra_metadata="Requires-Dist: torch==2.9.*\n",
    )
    plain = make_wheel(tmp_path, "Plain.Name", "1.0+cu128")
    shared = make_wheel(tmp_path, "shared", "1.0", files={"shared/lib/libx.so.1": b"\0" * 64})
    bad = make_wheel(tmp_path, "bad", "1.0", extra_metadata="Requires-Dist: torch>>>2\n")
    found, _ = scan_report([pinned, plain, shared, bad], describe=True)
    described = {w.filename: w.described for w in found}
    assert described[pinned.name] == describe_wheel(pinned)
    assert (described[pinned.name] or {}).get("torch_requirement") == "torch==2.9.*"
    assert described[plain.name] == describe_wheel(plain)
    assert described[shared.name] == describe_wheel(shared)
    assert described[bad.name] is None
    assert all(w.described is None for w in scan_report([pinned, plain])[0])


def test_the_shared_object_check_reads_every_member_name(tmp_path: Path) -> None:
    # ".so" in a name that is no shared object makes the check read names, and find none
    cases = (
        ("x/_ext.so", True),
        ("x/libz.so.1", True),
        ("x/so.py", False),
        ("x/a.sock", False),
        ("x.so/y.py", False),
    )
    for member, shared in cases:
        wheel = make_wheel(tmp_path / member.replace("/", "_"), "x", "1.0", files={member: b"0"})
        seen: list[bool] = []
        assert metadata_fast(wheel.read_bytes(), seen) is not None
        assert bool(seen) is shared, member


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (
            "Requires-Dist: torch==2.9.*\nREQUIRES-DIST:  numpy\n  >=1.26\nrequires-dist:torch>=2.8\n",
            ["torch==2.9.*", "numpy >=1.26", "torch>=2.8"],
        ),
        (" Requires-Dist: torch>=1\nRequires-Dist: torch==2.9.*\n", ["torch==2.9.*"]),
        ("Requires-Dist\n  torch>=1\nRequires-Dist: torch==2.9.*\n", ["torch==2.9.*"]),
        ("Requires-Dist: torch==2.9.*\n\nRequires-Dist: torch>=9\n", ["torch==2.9.*"]),
        ("Summary: no requirements at all\n", []),
    ],
)
def test_the_scan_and_torchabi_read_requires_dist_alike(headers: str, expected: list[str]) -> None:
    # The scan hands the Requires-Dist values it read to describe_pure, which would otherwise
    # read them through torchabi: one header reader serves both. A folded line joins its
    # header; an indented line continues the header before it (here Version); a line with no
    # colon is no header, nor its continuations; the body after the empty line is no header.
    from cuship.wheel.read.headers import header_fields
    from cuship.wheel.torchabi import _header_values

    metadata = f"Metadata-Version: 2.1\nName: x\nVersion: 1.0\n{headers}"
    fields = list(header_fields(metadata))
    assert [v for k, v in fields if k == "requires-dist"] == expected
    assert _header_values(metadata, "requires-dist") == expected
    assert dict(fields)["name"] == "x"


def test_a_folded_header_with_lines_of_spaces_keeps_the_headers_after_it(tmp_path: Path) -> None:
    """faiss-gpu-cu12 1.14.1.post1: its License header is folded over paragraphs whose blank
    lines are lines of spaces; Requires-Python and six Requires-Dist come after it. The email
    format reads a line that starts with white space as a continuation, whatever it holds."""
    from email.parser import HeaderParser

    from cuship.wheel.read.headers import header_fields

    license = "License: MIT License\n         \n         Copyright (c) 2024\n         \n"
    metadata = (
        "Metadata-Version: 2.2\nName: faiss-gpu-cu12\nVersion: 1.14.1.post1\n"
        + license
        + "Requires-Python: >=3.10\n"
        + "".join(f"Requires-Dist: dep{i}\n" for i in range(6))
        + "Requires-Dist: torch>=2.8; extra == 'torch'\n\nThe long description.\n"
    )
    fields = list(header_fields(metadata))
    parsed = HeaderParser().parsestr(metadata)
    assert dict(fields)["requires-python"] == parsed["Requires-Python"] == ">=3.10"
    ours = [v for k, v in fields if k == "requires-dist"]
    assert ours == [v.strip() for v in parsed.get_all("Requires-Dist") or []] and len(ours) == 7
    assert dict(fields)["license"] == "MIT License Copyright (c) 2024"


@pytest.mark.parametrize(
    "where",
    ["/a/b.whl", "/a//b.whl", "//a/b.whl", "///a/b.whl", "/a/./b.whl", "/./a.whl", "/a/b.whl/",
     "/a/b.whl/.", "/a/../b.whl", "/", "a/b.whl", "./a.whl", "/a/.b.whl", "/a/b..whl"],
)  # fmt: skip
def test_the_scan_keys_a_path_as_path_absolute_does(where: str) -> None:
    # The cache key of a listed file is taken as it is when Path would write it the same.
    from cuship.index.scan import _plain_absolute, cache_key

    assert cache_key(where) == cache_key(Path(where)) == str(Path(where).absolute())
    if _plain_absolute(where):
        assert str(Path(where).absolute()) == where
    else:
        assert where in {"/a//b.whl", "//a/b.whl", "///a/b.whl", "/a/./b.whl", "/./a.whl",
                         "/a/b.whl/", "/a/b.whl/.", "/", "a/b.whl", "./a.whl"}  # fmt: skip


@pytest.mark.parametrize("stat_size", [0, 1, 2999, 3000, 3001, 10**6])
def test_a_wheel_is_read_whole_whatever_its_stat_said(tmp_path: Path, stat_size: int) -> None:
    # The size from the plan's stat is a hint: a file that grew or shrank since is read whole.
    from cuship.wheel.read.archive import read_whole

    path = tmp_path / "x.whl"
    data = bytes(range(256)) * 11 + b"end" * 64  # 3,008 bytes
    path.write_bytes(data[:3000])
    assert read_whole(str(path), stat_size) == data[:3000]
    path.write_bytes(data)
    assert read_whole(str(path), stat_size) == data


@pytest.mark.parametrize("read_whole", [64 * 1024 * 1024, 100])
def test_a_first_scan_stamps_each_wheel_from_the_file_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_whole: int
) -> None:
    # A cache that knows no file is not asked about each: the wheel is opened without a stat
    # of its path first, and the stamp it keeps is the opened file's (a wheel too large to
    # read whole, here any over 100 bytes, is hashed in chunks after that).
    from cuship.index._cache import FileStamp, ScanCache
    from cuship.index.scan import cache_key, scan_files

    scanning = importlib.import_module("cuship.index.scan")
    monkeypatch.setattr(
        importlib.import_module("cuship.wheel.read.archive"), "READ_WHOLE", read_whole
    )
    wheel = make_wheel(tmp_path / "wheels", "demo", "1.0")
    stats: list[str] = []
    real_stat = os.stat

    def stat(path: str, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).endswith(".whl"):
            stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(scanning.os, "stat", stat)
    with ScanCache(tmp_path / "cache.sqlite") as cache:
        assert cache.knows_nothing()
        (first,), skipped = scan_files([str(wheel)], cache=cache)
        assert (skipped, stats, cache.misses, cache.hits) == ((), [], 1, 0)
        assert cache.get(cache_key(wheel), FileStamp.of(wheel.stat())) is not None
    assert first.sha256 == hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert first.size == wheel.stat().st_size
    with ScanCache(tmp_path / "cache.sqlite") as cache:  # the next run asks, and finds it
        assert not cache.knows_nothing()
        stats.clear()
        (again,), _ = scan_files([str(wheel)], cache=cache)
        assert stats == [cache_key(wheel)]
        assert (cache.misses, cache.hits) == (0, 1)
    assert again == first


def test_a_first_scan_says_why_it_cannot_open_a_wheel(tmp_path: Path) -> None:
    from cuship.index._cache import ScanCache
    from cuship.index.scan import scan_files

    gone = tmp_path / "gone-1.0-py3-none-any.whl"
    with ScanCache(None) as cache:
        wheels, (skipped,) = scan_files([str(gone)], cache=cache)
    assert wheels == ()
    assert skipped.reason == "cannot read it: No such file or directory"
