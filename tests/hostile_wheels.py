"""Hostile wheels for the index's regression suite: corrupt deflate data, METADATA bombs, a
``.dist-info`` directory naming another project. Each is a real zip archive, written byte by byte
where zipfile would refuse to write the lie."""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.wheel_factory import make_wheel

_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class RawMember:
    """One member as it goes into the archive: compressed bytes and what the headers claim."""

    name: str
    payload: bytes
    crc: int
    size: int
    method: int = zipfile.ZIP_DEFLATED


def write_zip(path: Path, members: Sequence[RawMember]) -> Path:
    """A zip of ``members`` exactly as given (sizes and CRCs are not checked)."""
    local, central = bytearray(), bytearray()
    for member in members:
        name = member.name.encode()
        sizes = (member.crc, len(member.payload), member.size & 0xFFFFFFFF)
        header_at = len(local)
        local += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, member.method, 0, 0, *sizes, len(name), 0
        )
        local += name + member.payload
        central += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, member.method, 0, 0, *sizes,
            len(name), 0, 0, 0, 0, 0, header_at,
        )  # fmt: skip
        central += name
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(local), 0
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(local + central + end))
    return path


def _deflated(data: bytes) -> RawMember:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = compressor.compress(data) + compressor.flush()
    return RawMember(name="", payload=payload, crc=zlib.crc32(data), size=len(data))


def _member(name: str, data: bytes) -> RawMember:
    deflated = _deflated(data)
    return RawMember(name=name, payload=deflated.payload, crc=deflated.crc, size=deflated.size)


def _rest(info: str, members: Sequence[RawMember] = ()) -> list[RawMember]:
    """WHEEL and a RECORD that lists ``members`` and WHEEL (the sizes their headers claim, no
    hashes: the lie each hostile wheel tells is in its headers or its data, not its RECORD)."""
    wheel = _member(
        f"{info}/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    rows = "".join(f"{m.name},,{m.size}\n" for m in (*members, wheel))
    return [wheel, _member(f"{info}/RECORD", f"{rows}{info}/RECORD,,\n".encode())]


def metadata_bomb(directory: Path, name: str, mib: int, *, honest_size: bool = True) -> Path:
    """A wheel whose METADATA inflates to ``mib`` MiB (a valid header, then zeros).

    The deflate stream is one flushed block of 1 MiB of zeros repeated, so a 1.5 GiB bomb takes
    milliseconds to make and about 1.5 MB on disk. With ``honest_size=False`` the headers claim
    100 bytes.
    """
    head = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n".encode()
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(bytes(_MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    payload = first + block * mib + compressor.flush(zlib.Z_FINISH)
    crc = zlib.crc32(head)
    zeros = bytes(_MIB)
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    size = len(head) + mib * _MIB if honest_size else 100
    info = f"{name}-1.0.dist-info"
    members = [
        _member(f"{name}/__init__.py", b""),
        RawMember(name=f"{info}/METADATA", payload=payload, crc=crc, size=size),
    ]
    members += _rest(info, members)
    return write_zip(directory / f"{name}-1.0-py3-none-any.whl", members)


def corrupt_deflate(directory: Path, name: str) -> Path:
    """A wheel whose METADATA's deflate data starts with an invalid block type."""
    info = f"{name}-1.0.dist-info"
    metadata = _member(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\n".encode())
    broken = RawMember(
        name=metadata.name,
        payload=b"\xff" + metadata.payload[1:],
        crc=metadata.crc,
        size=metadata.size,
    )
    return write_zip(directory / f"{name}-1.0-py3-none-any.whl", [broken, *_rest(info, [broken])])


def foreign_dist_info(directory: Path, name: str, other: str) -> Path:
    """A wheel of ``name`` whose metadata directory is ``OTHER-1.0.dist-info`` (METADATA agrees
    with the filename, so only the directory name is wrong)."""
    wheel = make_wheel(directory / ".build", name, "1.0")
    target = directory / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(target, "w") as out:
        for item in source.infolist():
            out.writestr(
                item.filename.replace(f"{name}-1.0.dist-info", f"{other}-1.0.dist-info"),
                source.read(item),
            )
    return target


def _zeros_stream(head: bytes, mib: int) -> tuple[bytes, int]:
    """``head`` then ``mib`` MiB of zeros, deflated (one flushed block of zeros repeated: a
    gigabyte takes milliseconds and a megabyte), and the CRC of the whole."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(bytes(_MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    zeros = bytes(_MIB)
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return first + block * mib + compressor.flush(zlib.Z_FINISH), crc


def so_bomb(
    directory: Path, name: str, mib: int, *, honest_size: bool = True, elf: bytes = b""
) -> Path:
    """A platform wheel of ``name`` whose ``_C.so`` (``elf``, then ``mib`` MiB of zeros)
    inflates to about ``mib`` MiB from about ``mib`` kB: the issue's 3.8 MB wheel of 3.9 GB.
    ``honest_size=False``: the headers claim 4096 bytes. Sizes past 4 GiB need zip64, which
    this writer does not make: keep ``mib`` under 4096."""
    payload, crc = _zeros_stream(elf, mib)
    size = len(elf) + mib * _MIB if honest_size else 4096
    info = f"{name}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\n".encode()
    members = [
        _member(f"{name}/__init__.py", b""),
        RawMember(name=f"{name}/_C.so", payload=payload, crc=crc, size=size),
        _member(f"{info}/METADATA", metadata),
    ]
    members += _rest(info, members)
    return write_zip(directory / f"{name}-1.0-cp311-cp311-linux_x86_64.whl", members)
