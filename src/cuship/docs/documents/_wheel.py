"""The schema of a wheel's inspection (:meth:`WheelReport.to_json
<cuship.wheel.audit.WheelReport.to_json>`) and of one shared object's, shared by
``cuship build --json``, ``cuship ship --json`` and ``cuship inspect --json``."""

from __future__ import annotations

from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.wheel.audit import ROLES
from cuship.wheel.torchabi import TORCH_ABIS

__all__ = ["shared_object", "wheel_report"]


def _torch_facts() -> Schema:
    return closed(
        "The torch ABI of the object and the evidence for it.",
        {
            "abi": enum(TORCH_ABIS, "What it asks of torch: `none`, `stable` or `exact`."),
            "libraries": array("The libtorch*/libc10* libraries it needs (DT_NEEDED)."),
            "cxx_symbols": of("integer", "Undefined c10/at/torch/caffe2 C++ symbols.", minimum=0),
            "shim_symbols": of("integer", "Undefined symbols of torch's stable C shim.", minimum=0),
            "example": maybe(of("string", ""), "One symbol that decided the ABI."),
            "reason": of("string", "Why, in one line."),
            "cxx11": maybe(
                of("boolean", ""), "true: it imports `std::__cxx11` names; null: not known."
            ),
        },
    )


def _version_need() -> Schema:
    return closed(
        "The symbols imported at one version of one library.",
        {
            "library": of("string", "The library (`libc.so.6`)."),
            "version": of("string", "The version (`GLIBC_2.34`)."),
            "symbols": array("The symbols imported at that version."),
        },
    )


def shared_object() -> Schema:
    return closed(
        "One ELF shared object in the wheel.",
        {
            "path": of("string", "Its path inside the wheel."),
            "role": enum(ROLES, "What it is to the package (`vendor`: a bundled NVIDIA library)."),
            "size": of("integer", "Its size in bytes.", minimum=0),
            "machine": of("string", "Its ELF machine (`EM_X86_64`)."),
            "soname": maybe(of("string", ""), "Its DT_SONAME; null when it has none."),
            "needed": array("Its DT_NEEDED libraries."),
            "sass": array("The SASS archs the CUDA runtime loads from it (`90`, `100a`)."),
            "ptx": array("The PTX archs the CUDA runtime loads from it."),
            "lto": array("The LTO-IR archs in its fatbinary."),
            "ptx_compressed": of("boolean", "Its PTX is compressed."),
            "sass_compressed": of("boolean", "Its SASS is compressed."),
            "fatbin_size": of("integer", "Bytes of its `.nv_fatbin` section.", minimum=0),
            "entries": of("integer", "Fatbinary entries.", minimum=0),
            "containers": of("integer", "Fatbinary containers.", minimum=0),
            "torch_abi": enum(TORCH_ABIS, "Its torch ABI (`torch.abi`)."),
            "torch": _torch_facts(),
            "versions": array("The symbol versions it needs.", _version_need()),
            "relocatable": array("Relocatable device code kept for a device link (`sm_90`)."),
        },
    )


def _torch_pin() -> Schema:
    pin = closed(
        "What the wheel's torch requirement admits.",
        {
            "requirement": of("string", "The requirement as written (`torch==2.13.*`)."),
            "exact": maybe(of("string", ""), "The one torch X.Y it admits, if only one."),
            "minimum": maybe(of("string", ""), "The lowest torch X.Y it admits, if it names one."),
        },
    )
    return maybe(pin, "Its Requires-Dist on torch; null when it has none.")


def wheel_report() -> Schema:
    variant = of("object", "", additionalProperties={"type": "object"})
    return closed(
        "The wheel's inspection (`cuship inspect WHEEL --json`).",
        {
            "path": of("string", "The wheel's path."),
            "filename": of("string", "The wheel's file name."),
            "name": of("string", "The project name, as in the file name."),
            "version": of("string", "The version, local label included."),
            "local": maybe(of("string", ""), "The local version label (`cu130`), if any."),
            "tags": array("Its compatibility tags, sorted."),
            "size": of("integer", "The wheel's size in bytes.", minimum=0),
            "sass": array("The SASS archs of its own objects (not bundled NVIDIA libraries)."),
            "ptx": array("The PTX archs of its own objects."),
            "extensions": array("Every shared object in it.", shared_object()),
            "bundled_libs": array(
                "Its shared libraries that are not extension modules (in `*.libs/` or named "
                "`lib*.so*`), by path."
            ),
            "bundled_cuda_libs": array("Those of them that are CUDA libraries."),
            "torch_abi": enum(TORCH_ABIS, "The strictest torch ABI of its shared objects."),
            "torch_requirement": _torch_pin(),
            "torch_built": maybe(
                of("string", ""), "The torch X.Y it was built against, when known."
            ),
            "nvidia_requirements": array(
                "Its Requires-Dist entries that install NVIDIA libraries."
            ),
            "variant": maybe(variant, "A variant wheel's variants (label: properties); else null."),
        },
    )
