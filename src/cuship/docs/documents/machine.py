"""The JSON Schemas of the commands about this machine and what runs on it: ``cuship doctor``
(:meth:`DoctorReport.to_json <cuship.doctor.model.DoctorReport.to_json>`), ``cuship env``
(:meth:`Fingerprint.to_json <cuship.machine.Fingerprint.to_json>`), ``cuship resolve``
(:meth:`IndexResolution.to_json <cuship.resolve.install.IndexResolution.to_json>`), ``cuship
install`` (:meth:`InstallPlan.to_json <cuship.resolve.install.InstallPlan.to_json>`), ``cuship
inspect`` and ``cuship verify`` (:mod:`cuship.wheel`), ``cuship compat``
(:meth:`Compat.to_json <cuship.compat.Compat.to_json>`) and ``cuship matrix --format json``
(:meth:`Matrix.to_json <cuship.matrix.Matrix.to_json>`)."""

from __future__ import annotations

import dataclasses

from cuship.compat import CudaToolkit, GpuModel, TorchRelease
from cuship.docs.documents._doctor import doctor_schema
from cuship.docs.documents._judge import nullable, ptx_reach
from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.docs.documents._resolve import install_schema, resolve_schema
from cuship.docs.documents._wheel import shared_object, wheel_report

__all__ = [
    "DOCUMENTS",
    "compat_schema",
    "doctor_schema",
    "env_schema",
    "inspect_schema",
    "matrix_schema",
    "verify_schema",
]

_COUNT = {"minimum": 0}


def _fingerprint_gpu() -> Schema:
    return closed(
        "One GPU.",
        {
            "index": of("integer", "Its index.", **_COUNT),
            "name": of("string", "Its model name."),
            "cc": nullable("string", "Its compute capability; null: not known."),
            "memory_mib": nullable("integer", "Its memory in MiB."),
            "uuid": nullable("string", "Its UUID."),
        },
    )


def _toolkit() -> Schema:
    toolkit = closed(
        "The CUDA toolkit found.",
        {
            "version": nullable("string", "Its version (`13.0`)."),
            "nvcc": nullable("string", "nvcc's path."),
            "cuda_home": nullable("string", "Its root directory."),
        },
    )
    return maybe(toolkit, "The CUDA toolkit; null: no nvcc found.")


def _torch_info() -> Schema:
    torch = closed(
        "The installed torch, read from its files (never imported).",
        {
            "version": of("string", "Its version."),
            "cuda": nullable("string", "The CUDA it was built for."),
            "cxx11abi": nullable("boolean", "Its C++ ABI is cxx11; null: not known."),
            "location": nullable("string", "Where it is installed."),
            "flavour": nullable("string", "`cpu`, `cuda`, `rocm` or `xpu`; null: not read."),
            "flavour_from": nullable("string", "Where the flavour was read."),
        },
    )
    return maybe(torch, "The installed torch; null: none.")


def _fingerprint_libraries() -> Schema:
    pair = of("array", "", items={"type": "string"}, minItems=2, maxItems=2)
    libraries = closed(
        "The NVIDIA libraries found here.",
        {
            "found": array("Each library found: `[file name, where]`.", pair),
            "source": of("string", "`searched`, or `CUSHIP_CUDA_LIBS`."),
        },
    )
    return maybe(libraries, "The NVIDIA libraries; null: not looked for.")


def env_schema() -> Schema:
    """``cuship env --json``: this machine's fingerprint."""
    return closed(
        "What `cuship env --json` prints: this machine's GPUs, driver, CUDA toolkit, torch, "
        "Python tags, glibc, CPUs and memory.",
        {
            "gpus": array("Its GPUs.", _fingerprint_gpu()),
            "gpu_source": of("string", "Where they were read (`nvml`, `override`, `none`)."),
            "driver_version": nullable("string", "The NVIDIA driver's version; null: none."),
            "driver_cuda": nullable("string", "The newest CUDA the driver runs (`13.0`)."),
            "toolkit": _toolkit(),
            "torch": _torch_info(),
            "python": of("string", "This Python's version."),
            "python_tag": of("string", "Its tag (`cp312`)."),
            "platform_tags": array("The platform tags it installs, best first."),
            "tags": array("Its first 12 compatibility tags, best first."),
            "tag_count": of("integer", "How many tags it has.", **_COUNT),
            "glibc": nullable("string", "The glibc version."),
            "machine": of("string", "The CPU architecture (`x86_64`)."),
            "cpus": of("integer", "CPUs this process may use.", minimum=1),
            "memory_total_gib": nullable("number", "Memory, in GiB."),
            "memory_available_gib": nullable("number", "Memory free, in GiB."),
            "notes": array("What could not be read, and why."),
            "cuda_libs": _fingerprint_libraries(),
            "compute_capabilities": array("The GPUs' compute capabilities, once each."),
        },
    )


def inspect_schema() -> Schema:
    """``cuship inspect --json``: a wheel's inspection, or a bare shared object's."""
    return {
        "description": "What `cuship inspect --json` prints: a wheel's inspection, or one "
        "shared object's (for a `.so`).",
        "oneOf": [wheel_report(), shared_object()],
    }


def verify_schema() -> Schema:
    """``cuship verify --json``: what was checked and what is missing."""
    return closed(
        "What `cuship verify --json` prints: what was checked, what is missing (empty: it "
        "passed), and which GPUs its PTX can serve.",
        {
            "target": of("string", "The wheel or shared object verified."),
            "ok": of("boolean", "Nothing is missing."),
            "checks": array("What was checked."),
            "problems": array("What is missing or wrong."),
            "notes": array("What is worth saying, not wrong."),
            "ptx": array("The PTX found, and which GPUs can JIT each.", ptx_reach()),
        },
    )


def _doc(row: type, name: str) -> str:
    """The description of a compat row's field, from its ``field_doc``."""
    found = {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(row)}
    return str(found[name])


def _row(row: type, description: str, said: dict[str, Schema]) -> Schema:
    """A compat row: its fields described by their ``field_doc``, then what ``said`` adds."""
    text = of("string", "")
    own = {f.name: {**text, "description": _doc(row, f.name)} for f in dataclasses.fields(row)}
    return closed(description, {**own, **said})


def compat_schema() -> Schema:
    """``cuship compat --json``: the sections asked for, each a list of rows with their source."""
    cuda = _row(
        CudaToolkit,
        "One CUDA toolkit release.",
        {
            "variant": of("string", "The PyTorch-style label of its minor (`cu128`)."),
            "sms": array(_doc(CudaToolkit, "sms")),
            "dropped": array(_doc(CudaToolkit, "dropped")),
        },
    )
    torch = _row(
        TorchRelease,
        "One torch minor release.",
        {
            "version": of("string", "The minor release (`2.8`)."),
            "cuda": array(_doc(TorchRelease, "cuda")),
            "pythons": array(_doc(TorchRelease, "pythons")),
            "cxx11_abi": of("array", _doc(TorchRelease, "cxx11_abi"), items={"type": "boolean"}),
        },
    )
    gpus = _row(
        GpuModel,
        "One GPU model.",
        {
            "aliases": array(_doc(GpuModel, "aliases")),
            "sm": of("string", "Its compute capability as an nvcc target (`90`)."),
            "memory_gib": of("array", _doc(GpuModel, "memory_gib"), items={"type": "integer"}),
        },
    )
    doc = closed(
        "What `cuship compat --json` prints: the sections asked for (all three without a "
        "section flag), each row with its source.",
        {
            "cuda": array("CUDA toolkits, ascending (`--cuda`).", cuda),
            "torch": array("torch minor releases, ascending (`--torch`).", torch),
            "gpus": array("GPU models (`--gpus`).", gpus),
        },
        optional=("cuda", "torch", "gpus"),
    )
    doc["minProperties"] = 1
    return doc


def _build_job() -> Schema:
    return closed(
        "One wheel to build.",
        {
            "id": of("string", "The job's id."),
            "project": of("string", "The project's name."),
            "version": of("string", "The project's version."),
            "wheel_version": of("string", "The wheel's version, local label included."),
            "python": of("string", "The Python it builds for (`3.12`)."),
            "python_tag": of("string", "Its tag (`cp312`)."),
            "cuda": of("string", "The CUDA toolkit (`12.8.1`)."),
            "cuda_variant": of("string", "Its label (`cu128`)."),
            "torch": nullable("string", "The torch X.Y it builds against; null: none."),
            "torch_version": nullable("string", "The exact torch installed for the build."),
            "torch_cuda": nullable("string", "That torch's CUDA; null: a CPU build or none."),
            "cxx11abi": nullable("boolean", "The C++ ABI it builds with; null: torch's own."),
            "arch": of("string", "The archs, as TORCH_CUDA_ARCH_LIST (`8.0;9.0+PTX`)."),
            "cmake_arch": of("string", "The archs, as CMAKE_CUDA_ARCHITECTURES."),
            "platform": of("string", "The platform it builds for."),
            "label": of("string", "The local version label (`cu128torch2.8`)."),
        },
    )


def matrix_schema() -> Schema:
    """``cuship matrix --format json``: the jobs, and what was pruned and why."""
    combination = closed(
        "The combination, axis by axis.",
        {
            "python": of("string", "The Python."),
            "cuda": of("string", "The CUDA toolkit."),
            "torch": of("string", "The torch X.Y (absent: no torch axis)."),
            "arch": of("string", "The archs."),
            "cxx11abi": enum(("TRUE", "FALSE"), "The C++ ABI (absent: torch's own)."),
            "platform": of("string", "The platform."),
        },
        optional=("torch", "cxx11abi"),
    )
    pruned = closed(
        "A combination dropped.",
        {
            "combination": combination,
            "rule": of("string", "The rule that dropped it."),
            "reason": of("string", "Why."),
        },
    )
    drop = closed(
        "Archs dropped from a job.",
        {
            "job": nullable("string", "The job's id."),
            "reason": of("string", "Which archs, and why."),
        },
    )
    return closed(
        "What `cuship matrix --format json` prints: the build jobs (of the shard asked for), "
        "the combinations pruned and the archs dropped, each with why.",
        {
            "jobs": array("The jobs, in build order.", _build_job()),
            "considered": of("integer", "Combinations considered.", **_COUNT),
            "pruned": array("The combinations pruned.", pruned),
            "arch_drops": array("Archs dropped from jobs.", drop),
            "torch_axis": array("What happened to the torch axis, and why."),
        },
    )


DOCUMENTS = {
    "doctor": ("cuship doctor --json", doctor_schema),
    "env": ("cuship env --json", env_schema),
    "resolve": ("cuship resolve --json", resolve_schema),
    "install": ("cuship install --json", install_schema),
    "inspect": ("cuship inspect --json", inspect_schema),
    "verify": ("cuship verify --json", verify_schema),
    "compat": ("cuship compat --json", compat_schema),
    "matrix": ("cuship matrix --format json", matrix_schema),
}
