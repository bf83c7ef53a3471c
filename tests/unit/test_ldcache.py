"""``/etc/ld.so.cache`` read as ld.so reads it (both layouts of glibc's dl-cache.h, written here
from the layout, not from a cache file of this host) and ``ld.so.conf`` with its includes."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from cuship.machine.ldcache import NEW_MAGIC, OLD_MAGIC, conf_dirs, parse_cache

X86_64 = 0x0303
ARM64 = 0x0A03


def _strings(pairs: Sequence[tuple[str, str]], base: int) -> tuple[bytes, list[tuple[int, int]]]:
    table, at = b"", []
    for key, value in pairs:
        key_at = base + len(table)
        table += key.encode() + b"\0"
        value_at = base + len(table)
        table += value.encode() + b"\0"
        at.append((key_at, value_at))
    return table, at


def new_cache(
    entries: Sequence[tuple[int, str, str, int]], *, big: bool = False, start: int = 0
) -> bytes:
    """glibc-ld.so.cache1.1: (flags, SONAME, path, hwcap) per entry; string offsets count from
    the header (which lies at ``start`` when it follows an old cache)."""
    order = ">" if big else "<"
    strings_at = 48 + 24 * len(entries)
    table, at = _strings([(key, value) for _, key, value, _ in entries], strings_at)
    header = NEW_MAGIC + struct.pack(order + "II", len(entries), len(table))
    header += bytes([3 if big else 2, 0, 0, 0]) + struct.pack(order + "IIII", 0, 0, 0, 0)
    body = b"".join(
        struct.pack(order + "iIIIQ", flags, key, value, 0, hwcap)
        for (flags, _, _, hwcap), (key, value) in zip(entries, at, strict=True)
    )
    return header + body + table


def old_cache(entries: Sequence[tuple[int, str, str]], *, then_new: bytes = b"") -> bytes:
    """ld.so-1.7.0: its strings count from the end of its entries; with ``then_new``, a new
    cache follows them (aligned to 8), as ldconfig's compat format writes it."""
    head = OLD_MAGIC + b"\0" + struct.pack("<I", len(entries))
    strings_at = 0
    table, at = _strings([(key, value) for _, key, value in entries], strings_at)
    body = b"".join(
        struct.pack("<iII", flags, key, value)
        for (flags, _, _), (key, value) in zip(entries, at, strict=True)
    )
    data = head + body
    if then_new:
        return data + b"\0" * (-len(data) % 8) + then_new
    return data + table


def test_the_new_layout_keeps_the_entries_of_this_abi_and_prefers_the_plain_one() -> None:
    data = new_cache(
        [
            (
                X86_64,
                "libcudart.so.13",
                "/opt/cuda/glibc-hwcaps/x86-64-v3/libcudart.so.13",
                1 << 62,
            ),
            (X86_64, "libcudart.so.13", "/opt/cuda/lib/libcudart.so.13", 0),
            (ARM64, "libcublas.so.13", "/opt/arm/libcublas.so.13", 0),
            (X86_64, "libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", 0),
        ]
    )
    cache = parse_cache(data)
    assert cache is not None and cache.layout == "glibc-ld.so.cache1.1" and cache.total == 4
    assert cache.where("libcudart.so.13") == "/opt/cuda/lib/libcudart.so.13"
    assert cache.where("libcublas.so.13") is None  # another ABI's entry
    arm = parse_cache(data, machine="aarch64")
    assert arm is not None and arm.where("libcublas.so.13") == "/opt/arm/libcublas.so.13"


def test_a_big_endian_cache_says_so_in_its_flags_byte() -> None:
    data = new_cache([(X86_64, "libfoo.so.1", "/lib/libfoo.so.1", 0)], big=True)
    cache = parse_cache(data)
    assert cache is not None and cache.where("libfoo.so.1") == "/lib/libfoo.so.1"


def test_the_old_layout_alone_and_with_a_new_cache_after_it() -> None:
    old = old_cache([(X86_64, "libold.so.1", "/lib/libold.so.1")])
    cache = parse_cache(old)
    assert cache is not None and cache.layout == "ld.so-1.7.0"
    assert cache.where("libold.so.1") == "/lib/libold.so.1"
    newer = new_cache([(X86_64, "libnew.so.2", "/usr/lib/libnew.so.2", 0)])
    both = parse_cache(old_cache([(X86_64, "libold.so.1", "/x")], then_new=newer))
    assert both is not None and both.layout == "glibc-ld.so.cache1.1"
    assert both.where("libnew.so.2") == "/usr/lib/libnew.so.2"


def test_a_file_that_is_no_cache_or_is_cut_short_reads_as_none() -> None:
    assert parse_cache(b"not a cache at all") is None
    assert parse_cache(NEW_MAGIC + b"\x05\x00") is None
    whole = new_cache([(X86_64, "libfoo.so.1", "/lib/libfoo.so.1", 0)])
    assert parse_cache(whole[:60]) is None  # entries past the end


def test_ld_so_conf_follows_includes_in_order_within_a_budget() -> None:
    files = {
        "/etc/ld.so.conf": "# comment\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/lib\n",
        "/etc/ld.so.conf.d/a.conf": "/opt/a/lib  # trailing\n",
        "/etc/ld.so.conf.d/zz-cuda.conf": "/usr/local/cuda-13.0/targets/x86_64-linux/lib/\n",
        "/etc/ld.so.conf.d/readme": "/never\n",
    }

    def listdir(path: str) -> tuple[str, ...]:
        return tuple(sorted(p.rsplit("/", 1)[1] for p in files if p.rsplit("/", 1)[0] == path))

    assert conf_dirs(files.get, listdir) == (
        "/opt/a/lib",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib",
        "/usr/local/lib",
    )
    looping = {"/etc/ld.so.conf": "include /etc/ld.so.conf\n/lib\n"}
    assert conf_dirs(looping.get, lambda _: ("ld.so.conf",), budget=5) == ("/lib",)
