"""quick_facts (struct alone) reads what elf_facts (pyelftools) reads, faster, and fails the same way."""

from __future__ import annotations

import io
import struct
import sysconfig
from pathlib import Path

import pytest

from cuship.errors import InputError
from cuship.wheel.audit import inspect_object, scan_object
from cuship.wheel.elf import elf_facts, quick_facts
from cuship.wheel.fatbin import FATBIN_SECTIONS
from cuship.wheel.torchabi import TORCH_SYMBOL_HINTS
from tests.elf_factory import cuda_elf, fatbin, make_elf

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


def test_real_extension_modules_of_this_interpreter_read_the_same() -> None:
    # the base interpreter's (a venv has no lib-dynload of its own)
    dynload = Path(sysconfig.get_config_var("DESTSHARED"))
    objects = sorted(dynload.glob("*.so"))[:12]
    assert objects, f"no extension modules in {dynload}"
    for path in objects:
        data = path.read_bytes()
        quick = quick_facts(data, source=str(path), wanted=(".text", ".bss"))
        with path.open("rb") as handle:
            assert quick == elf_facts(handle, source=str(path), wanted=(".text", ".bss")), path
        assert quick.machine == elf_facts(io.BytesIO(data), source="x").machine


def test_symbol_hints_skip_tables_that_name_no_torch_symbol() -> None:
    plain = make_elf(needed=("libc.so.6",), undefined=("malloc", "free"))
    assert quick_facts(plain, source="x", symbols=TORCH_SYMBOL_HINTS).undefined == ()
    assert quick_facts(plain, source="x").undefined == ("malloc", "free")
    torchy = make_elf(undefined=("malloc", CXX))
    assert quick_facts(torchy, source="x", symbols=TORCH_SYMBOL_HINTS).undefined == ("malloc", CXX)
    assert quick_facts(torchy, source="x", symbols=False).undefined == ()


def test_damaged_objects_are_input_errors() -> None:
    data = bytearray(cuda_elf(sass=["90"]))
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    struct.pack_into("<Q", data, shoff + 5 * 64 + 32, 1 << 20)  # .nv_fatbin's sh_size: 1 MiB
    with pytest.raises(InputError, match=r"'\.nv_fatbin' .* past the end of the file") as caught:
        quick_facts(data, source="cut.so", wanted=FATBIN_SECTIONS)
    assert caught.value.hint and "truncated" in caught.value.hint
    with pytest.raises(InputError, match=r"'junk\.so' is not an ELF file"):
        quick_facts(b"MZ" + b"\0" * 100, source="junk.so")
    with pytest.raises(InputError, match=r"'short\.so' is not a readable ELF file"):
        quick_facts(bytes(data[:40]), source="short.so")


def test_scan_object_matches_inspect_object_and_passes_over_non_elf(tmp_path: Path) -> None:
    so = tmp_path / "_C.so"
    so.write_bytes(cuda_elf(sass=["80", "90a"], ptx=["120"], needed=("libcudart.so.12",)))
    scanned = scan_object(so)
    assert scanned == inspect_object(so)
    assert scanned is not None and (scanned.sass, scanned.ptx) == (("80", "90a"), ("120",))
    text = tmp_path / "linker-script.so"
    text.write_bytes(b"/* GNU ld script */ INPUT(libfoo.so.1)" * 4)
    assert scan_object(text) is None
