"""The fatbin parser on synthetic containers laid out as research/validation.md describes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from cuship.errors import InputError
from cuship.wheel.read.fatbin import FatbinEntry, fatbin_of_elf, parse_fatbin

ZSTD, LZ4, ARCH_A, ARCH_F = 0x8000, 0x2000, 0x100000, 0x200000


def entry(
    kind: int,
    arch: int,
    *,
    flags: int = 0x11,
    payload: bytes = b"",
    header: int = 0x40,
    isa: tuple[int, int] = (9, 0),
) -> bytes:
    padded = payload + b"\0" * (-len(payload) % 8)
    packed = len(payload) if flags & (ZSTD | LZ4) else 0
    major, minor = isa
    head = struct.pack(
        "<HHIQI4xHHI8xQ8xQ", kind, 0x0101, header, len(padded), packed, minor, major, arch, flags, 0
    )
    return head + b"\0" * (header - len(head)) + padded


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 0x10, len(body)) + body


def test_entry_header_layout() -> None:
    raw = entry(2, 90, flags=0x11 | ARCH_A)
    assert len(raw) == 0x40
    assert struct.unpack_from("<I", raw, 0x1C) == (90,)
    assert struct.unpack_from("<Q", raw, 0x28) == (0x11 | ARCH_A,)


def test_walks_all_containers_and_counts_per_kind() -> None:
    nvlink = container(entry(2, 80, payload=b"\x7fELF" * 3), entry(2, 90, flags=0x11 | ARCH_A))
    compiled = container(
        entry(2, 80, payload=b"\x7fELF"),
        entry(2, 100, flags=0x1200011, header=0x70),
        entry(1, 120, flags=0x8011, payload=b"\x28\xb5\x2f\xfd" + b"x" * 9, header=0x50),
    )
    entries = parse_fatbin(nvlink + compiled)
    assert [(e.kind, e.sm, e.container) for e in entries] == [
        ("sass", "80", 0),
        ("sass", "90a", 0),
        ("sass", "80", 1),
        ("sass", "100f", 1),
        ("ptx", "120", 1),
    ]
    assert entries[-1] == FatbinEntry(
        kind="ptx", sm="120", compressed=True, codec="zstd", size=13, container=1, isa="9.0"
    )
    assert not entries[0].compressed and entries[0].size == 16


def test_a_ptx_entry_says_its_isa_version() -> None:
    """The PTX ISA version (``.version 8.5``) sits in the entry header as minor, major at
    +0x18 (nvcc 12.6 writes 8.5, 13.0 writes 9.0); SASS entries carry none."""
    entries = parse_fatbin(container(entry(1, 52, isa=(8, 5)), entry(2, 90, isa=(1, 8))))
    assert [(e.kind, e.isa) for e in entries] == [("ptx", "8.5"), ("sass", None)]


def test_lz4_and_lto_entries() -> None:
    entries = parse_fatbin(container(entry(1, 80, flags=0x11 | LZ4, payload=b"abc"), entry(8, 80)))
    assert [(e.kind, e.codec) for e in entries] == [("ptx", "lz4"), ("lto", None)]


def test_trailing_zero_padding_is_ignored() -> None:
    assert len(parse_fatbin(container(entry(2, 80)) + b"\0" * 4)) == 1


def test_start_and_end_window_reports_file_offsets() -> None:
    blob = b"\0" * 32 + container(entry(2, 75)) + b"junk"
    assert [e.sm for e in parse_fatbin(blob, start=32, end=len(blob) - 4)] == ["75"]
    with pytest.raises(InputError, match=r"bad fatbin magic .* at offset 0x20"):
        parse_fatbin(b"\0" * 32 + b"\x01" * 40, source="x.so", start=32)


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (container(entry(4, 80)), r"unknown fatbin entry kind 4 .* at offset 0x10"),
        (container(entry(2, 80))[:-8], r"truncated fatbin container: .* at offset 0x0"),
        (container(entry(2, 80))[:12], r"truncated fatbin container header at offset 0x0"),
        (b"\x00\x01\x02\x03" * 8, r"bad fatbin magic 0x03020100"),
        (container(entry(2, 80), b"\0" * 16), r"truncated fatbin entry header at offset 0x50"),
        (container(entry(2, 80, header=0x20)), r"truncated fatbin entry: header 32"),
    ],
)
def test_damaged_input_names_file_and_offset(blob: bytes, problem: str) -> None:
    with pytest.raises(InputError, match=problem) as caught:
        parse_fatbin(blob, source="broken.so")
    assert "'broken.so'" in str(caught.value)


def test_overlong_entry_payload_is_truncation() -> None:
    good = container(entry(2, 80, payload=b"p" * 8))
    lying = good[:0x18] + struct.pack("<Q", 4096) + good[0x20:]
    with pytest.raises(InputError, match="truncated fatbin entry"):
        parse_fatbin(lying)


def test_fatbin_of_elf_rejects_non_elf_and_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a readable ELF"):
        fatbin_of_elf(b"not an elf at all" * 8)
    missing = tmp_path / "nope.so"
    with pytest.raises(InputError, match="does not exist"):
        fatbin_of_elf(missing)
