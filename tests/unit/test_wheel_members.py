"""Wheel members read as untrusted input: a member that inflates to gigabytes is refused from its
central directory entry, one that inflates past what it declares is stopped there, and a large
honest one is inflated through a temporary file, never whole into memory (issue 34, item 1)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import IO, cast

import pytest

from cuship import settings
from cuship.errors import InputError, UsageError
from cuship.wheel.audit import WheelReport, inspect_path
from cuship.wheel.read import members
from cuship.wheel.read.members import MemberLimits, UnsafeMember, check_member, name_problem
from tests.elf_factory import make_elf
from tests.hostile_wheels import so_bomb


def test_a_so_that_inflates_to_a_gigabyte_is_refused_before_inflating(tmp_path: Path) -> None:
    bomb = so_bomb(tmp_path, "bomb", 1024, elf=make_elf(needed=["libc.so.6"]))
    assert bomb.stat().st_size < 2_000_000
    with pytest.raises(UnsafeMember, match=r"bomb/_C\.so.* inflates \d+ times .*zip bomb"):
        inspect_path(bomb)


def test_the_size_limit_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elf = make_elf(needed=["libc.so.6"]) + os.urandom(3 << 20)
    wheel = tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("pkg/_C.so", elf)
    monkeypatch.setenv(settings.WHEEL_MEMBER_LIMIT, str(1 << 20))
    with pytest.raises(UnsafeMember, match=r"declares 3(\.\d)? MiB inflated, over the 1 MiB"):
        inspect_path(wheel)
    monkeypatch.setenv(settings.WHEEL_MEMBER_LIMIT, "lots")
    with pytest.raises(UsageError, match=r"CUSHIP_WHEEL_MEMBER_LIMIT=.lots."):
        inspect_path(wheel)


def test_a_member_that_inflates_past_its_declared_size_stops_there(tmp_path: Path) -> None:
    bomb = so_bomb(tmp_path, "liar", 512, honest_size=False, elf=make_elf())
    with zipfile.ZipFile(bomb) as archive:
        info = archive.getinfo("liar/_C.so")
        assert info.file_size == 4096
        with pytest.raises(InputError, match="cannot be read"):
            members.copy_member(
                archive, info, cast("IO[bytes]", _Counter()), bomb.name, MemberLimits()
            )
    with pytest.raises(InputError, match=r"liar/_C\.so"):
        inspect_path(bomb)


class _Counter:
    """A sink that keeps only the count: what was inflated, not held."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        assert self.written <= 1 << 20, "inflated past the declared size"
        return len(data)


def test_a_large_member_goes_through_a_file_not_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elf = make_elf(needed=["libc.so.6"], soname="libx.so")
    wheel = tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl"
    with (
        zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("pkg/_C.so", "w") as member,  # written in pieces, as a big one is
    ):
        member.write(elf)
        for _ in range(3):
            member.write(os.urandom(1 << 20))
    monkeypatch.setattr(members, "IN_MEMORY", 1 << 20)
    spooled: list[int] = []
    real = members.copy_member

    def spy(*args: object, **kwargs: object) -> int:
        size = real(*args, **kwargs)  # type: ignore[arg-type]
        spooled.append(size)
        return size

    monkeypatch.setattr(members, "copy_member", spy)
    report = inspect_path(wheel)
    assert isinstance(report, WheelReport)
    assert spooled == [len(elf) + (3 << 20)]
    assert [(x.path, x.soname, x.needed) for x in report.extensions] == [
        ("pkg/_C.so", "libx.so", ("libc.so.6",))
    ]


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../evil.py", "climbs out"),
        ("pkg/../../evil.py", "climbs out"),
        ("/etc/evil", "absolute"),
        ("C:/evil", "absolute"),
        ("pkg\\..\\evil", "climbs out"),
    ],
)
def test_a_member_name_outside_the_root_is_refused(name: str, problem: str) -> None:
    found = name_problem(name)
    assert found is not None and problem in found
    with pytest.raises(UnsafeMember, match="member name"):
        check_member(zipfile.ZipInfo(name), "x-1.0-py3-none-any.whl", MemberLimits())


def test_a_nul_in_a_name_is_named() -> None:
    assert name_problem("pkg/\x00.py") == "holds a NUL byte"  # zipfile cuts names there


def test_plain_member_names_pass() -> None:
    for name in ("pkg/__init__.py", "pkg-1.0.dist-info/RECORD", "pkg/..data", "a..b/c"):
        assert name_problem(name) is None


def test_inspect_refuses_a_wheel_whose_member_escapes(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/_C.so", make_elf())
        archive.writestr("../../outside.py", b"print('hi')\n")
    with pytest.raises(UnsafeMember, match="climbs out"):
        inspect_path(wheel)
