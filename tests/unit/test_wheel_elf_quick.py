"""cuship's ELF reader (struct alone) reads what pyelftools reads (tests/elf_oracle.py), on
synthetic and real shared objects, and fails the same way."""

from __future__ import annotations

import io
import struct
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship.errors import InputError
from cuship.wheel.audit import inspect_object, scan_object
from cuship.wheel.read._elf_machines import MACHINES
from cuship.wheel.read.elf import ElfFacts, glibc_needed, quick_facts
from cuship.wheel.read.fatbin import FATBIN_SECTIONS
from cuship.wheel.torchabi import TORCH_SYMBOL_HINTS
from tests.elf_factory import cuda_elf, fatbin, make_elf
from tests.elf_oracle import elf_facts, newest_glibc

CXX = "_ZNK2at10TensorBase14const_data_ptrEv"


@pytest.mark.parametrize(("bits", "endian"), [(64, "<"), (64, ">"), (32, "<"), (32, ">")])
def test_synthetic_objects_read_the_same_both_ways(bits: int, endian: str) -> None:
    data = make_elf(
        needed=("libcudart.so.13", "libc10.so"),
        undefined=("cudaLaunchKernel", CXX),
        defined=("PyInit__C",),
        soname="_C.so",
        sections={".nv_fatbin": fatbin(sass=["90a"], ptx=["120"]), ".comment": b"gcc\0"},
        bits=bits,
        endian=endian,
    )
    quick = quick_facts(data, source="x.so", wanted=FATBIN_SECTIONS)
    assert quick == elf_facts(io.BytesIO(data), source="x.so", wanted=FATBIN_SECTIONS)
    assert quick.needed == ("libcudart.so.13", "libc10.so") and quick.soname == "_C.so"
    assert quick.undefined == ("cudaLaunchKernel", CXX)
    assert [s.name for s in quick.sections] == [".nv_fatbin"]


def _real_objects() -> list[Path]:
    # the base interpreter's (a venv has no lib-dynload of its own)
    dynload = Path(sysconfig.get_config_var("DESTSHARED"))
    objects = sorted(dynload.glob("*.so"))[:12]
    assert objects, f"no extension modules in {dynload}"
    return objects


def test_real_extension_modules_of_this_interpreter_read_the_same() -> None:
    for path in _real_objects():
        data = path.read_bytes()
        quick = quick_facts(data, source=str(path), wanted=(".text", ".bss"))
        with path.open("rb") as handle:
            assert quick == elf_facts(handle, source=str(path), wanted=(".text", ".bss")), path
        assert quick.machine == elf_facts(io.BytesIO(data), source="x").machine


def test_glibc_needed_is_the_newest_glibc_version_pyelftools_finds() -> None:
    found = []
    for path in _real_objects():
        need = glibc_needed(path)
        assert need == newest_glibc(elf_facts(io.BytesIO(path.read_bytes()), source="x")), path
        found.append(need)
    assert any(found), "no object needed a GLIBC_ version: the comparison proved nothing"


def test_glibc_needed_on_synthetic_objects(tmp_path: Path) -> None:
    so = tmp_path / "x.so"
    versioned = [("dlopen", "libc.so.6", "GLIBC_2.34"), ("memcpy", "libc.so.6", "GLIBC_2.14")]
    for bits, endian in ((64, "<"), (32, ">")):
        so.write_bytes(make_elf(versioned=versioned, bits=bits, endian=endian))
        assert glibc_needed(so) == (2, 34)
    so.write_bytes(make_elf(versioned=[("_ZdlPvm", "libstdc++.so.6", "CXXABI_1.3.9")]))
    assert glibc_needed(so) is None
    so.write_bytes(make_elf(undefined=["f"]))
    assert glibc_needed(so) is None
    so.write_bytes(b"/* GNU ld script */ INPUT(libfoo.so.1)")
    with pytest.raises(InputError, match=r"x\.so' is not a readable ELF file: it starts with"):
        glibc_needed(so)
    with pytest.raises(InputError, match=r"missing\.so' is not a readable ELF file"):
        glibc_needed(tmp_path / "missing.so")


def test_every_machine_is_named_as_pyelftools_names_it() -> None:
    data = bytearray(make_elf(needed=("libc.so.6",)))
    for number in range(300):
        struct.pack_into("<H", data, 18, number)  # e_machine
        quick = quick_facts(data, source="x").machine
        assert quick == elf_facts(io.BytesIO(bytes(data)), source="x").machine, number
    assert quick_facts(data, source="x").machine == "299" and MACHINES[62] == "EM_X86_64"


def test_symbol_hints_skip_tables_that_name_no_torch_symbol() -> None:
    plain = make_elf(needed=("libc.so.6",), undefined=("malloc", "free"))
    assert quick_facts(plain, source="x", symbols=TORCH_SYMBOL_HINTS).undefined == ()
    assert quick_facts(plain, source="x").undefined == ("malloc", "free")
    torchy = make_elf(undefined=("malloc", CXX))
    assert quick_facts(torchy, source="x", symbols=TORCH_SYMBOL_HINTS).undefined == ("malloc", CXX)
    assert quick_facts(torchy, source="x", symbols=False).undefined == ()


@pytest.mark.parametrize("read", [quick_facts, elf_facts], ids=["struct", "pyelftools"])
def test_damaged_objects_are_input_errors(read: Callable[..., ElfFacts]) -> None:
    def facts(data: bytes, source: str) -> ElfFacts:
        given = data if read is quick_facts else io.BytesIO(data)
        return read(given, source=source, wanted=FATBIN_SECTIONS)

    data = bytearray(cuda_elf(sass=["90"]))
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    struct.pack_into("<Q", data, shoff + 5 * 64 + 32, 1 << 20)  # .nv_fatbin's sh_size: 1 MiB
    with pytest.raises(InputError, match=r"'\.nv_fatbin' .* past the end of the file") as caught:
        facts(bytes(data), "cut.so")
    assert caught.value.hint and "truncated" in caught.value.hint
    for junk, source in ((b"MZ" + b"\0" * 100, "junk.so"), (bytes(data[:40]), "short.so")):
        with pytest.raises(InputError, match=rf"'{source}' is not a readable ELF file") as caught:
            facts(junk, source)
        assert caught.value.hint and "again" in caught.value.hint


def test_scan_object_matches_inspect_object_and_passes_over_non_elf(tmp_path: Path) -> None:
    so = tmp_path / "_C.so"
    so.write_bytes(cuda_elf(sass=["80", "90a"], ptx=["120"], needed=("libcudart.so.12",)))
    scanned = scan_object(so)
    assert scanned == inspect_object(so)
    assert scanned is not None and (scanned.sass, scanned.ptx) == (("80", "90a"), ("120",))
    text = tmp_path / "linker-script.so"
    text.write_bytes(b"/* GNU ld script */ INPUT(libfoo.so.1)" * 4)
    assert scan_object(text) is None


@pytest.mark.parametrize(
    "offset_bytes",
    [b"\xff" * 8, b"\x7f" + b"\xff" * 7, (1 << 62).to_bytes(8, "little")],
    ids=["all-ones", "past-ssize_t", "2**62"],
)
def test_a_section_table_offset_past_the_end_is_said_plainly(offset_bytes: bytes) -> None:
    """Issue 34, item 8: "unpack_from requires a buffer of at least 4611686018427387968
    bytes" and an OverflowError (exit 70) reached users; now one plain sentence."""
    from cuship.wheel.read.elf import quick_facts
    from tests.elf_factory import make_elf

    data = bytearray(make_elf(needed=["libc.so.6"]))
    data[0x28:0x30] = offset_bytes  # e_shoff of a 64-bit ELF
    with pytest.raises(InputError) as caught:
        quick_facts(bytes(data), source="x.so", wanted=())
    message = caught.value.message
    assert message == (
        "'x.so' is not a readable ELF file: an offset or size in its headers points past the "
        "end of the file"
    )
