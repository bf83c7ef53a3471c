"""What an object's bytes say of the CUDA it runs with (cuship.wheel.read.runtime), and what
inspect reports of it: the libraries it opens itself, a static CUDA runtime, the toolkit of its
cubins, the PTX ISA version, DT_RPATH/DT_RUNPATH; and every object of a wheel listed, whatever
its name starts with."""

from __future__ import annotations

import struct
from pathlib import Path

from cuship.wheel.audit import inspect_wheel
from cuship.wheel.read.elf import quick_facts
from cuship.wheel.read.runtime import runtime_facts
from tests.elf_factory import fatbin
from tests.elf_library import shared_library
from tests.wheel_factory import make_wheel

WANTED = (".rodata", ".nv_fatbin")


def facts_of(data: bytes) -> object:
    return runtime_facts(data, quick_facts(data, source="t", wanted=WANTED))


def test_the_libraries_an_object_opens_are_read_only_when_it_imports_dlopen() -> None:
    rodata = b"\0libcublas.so.12\0%s/libnccl.so.2\0not a library\0libcublas.so.12\0"
    opens = shared_library(imports=["dlopen", "dlsym"], rodata=rodata)
    assert facts_of(opens).opens == ("libcublas.so.12", "libnccl.so.2")  # type: ignore[attr-defined]
    silent = shared_library(imports=["dlsym"], rodata=rodata)
    assert facts_of(silent).opens is None  # type: ignore[attr-defined]
    nothing = shared_library(imports=["dlopen"])
    assert facts_of(nothing).opens == ()  # type: ignore[attr-defined]


def test_a_static_runtime_is_told_by_its_shared_memory_name() -> None:
    rodata = b"/cudart.shm.%x.%x.%llx\0"
    code = {".nv_fatbin": fatbin(sass=["80"])}
    static = shared_library(rodata=rodata, sections=code)
    assert facts_of(static).static_runtime  # type: ignore[attr-defined]
    dynamic = shared_library(needed=["libcudart.so.12"], rodata=rodata, sections=code)
    assert not facts_of(dynamic).static_runtime  # type: ignore[attr-defined]


def test_the_toolkit_release_is_read_from_an_uncompressed_cubin() -> None:
    cubin = b"\x7fELF....Cuda compilation tools, release 12.9, V12.9.86\0"
    body = fatbin(sass=["90"]) + cubin
    data = shared_library(sections={".nv_fatbin": body})
    assert facts_of(data).toolkit == "12.9"  # type: ignore[attr-defined]
    assert facts_of(shared_library()).toolkit is None  # type: ignore[attr-defined]


def test_inspect_reports_the_loaders_facts_of_each_object(tmp_path: Path) -> None:
    ext = shared_library(
        needed=["libc10.so"],
        runpath="$ORIGIN/../nvidia/cu13/lib",
        imports=["dlopen", "_ZN3c105ErrorC1Ev"],
        rodata=b"libcudart.so.13\0",
        sections={".nv_fatbin": fatbin(sass=["75", "120"], ptx=["120"], isa="9.2")},
    )
    wheel = make_wheel(
        tmp_path,
        "torchaudio",
        "2.11.1",
        tag="py3-none-manylinux_2_28_x86_64",
        files={"torchaudio/lib/libtorchaudio.so": ext, "torchaudio/lib/_torchaudio.so": ext},
    )
    report = inspect_wheel(wheel)
    objects = {x.path: x for x in report.extensions}
    own = objects["torchaudio/lib/libtorchaudio.so"]  # its name starts like torch's: listed
    assert own.role == "library" and own.sass == ("75", "120") and own.ptx_isa == ("9.2",)
    doc = own.to_json()
    assert doc["runpath"] == ["$ORIGIN/../nvidia/cu13/lib"] and doc["opens"] == ["libcudart.so.13"]
    assert doc["undefined_symbols"] == 2 and doc["static_runtime"] is False
    assert report.bundled_cuda_libs == ()
    assert "120" in report.sass


def test_the_ptx_isa_version_is_in_each_ptx_entry_header() -> None:
    head = fatbin(ptx=["52"], isa="8.5")
    minor, major = struct.unpack_from("<HH", head, 16 + 0x18)
    assert (major, minor) == (8, 5)
