"""The schema of ``cuship doctor --json`` (:meth:`DoctorReport.to_json
<cuship.doctor.model.DoctorReport.to_json>`): this machine, each distribution and its checks."""

from __future__ import annotations

from typing import get_args

from cuship.docs.documents._judge import (
    check,
    cuda_libraries,
    nullable,
    ptx_reach,
    torch_build,
)
from cuship.docs.documents._parts import Schema, array, closed, enum, of
from cuship.doctor.model import Area, Runs
from cuship.wheel.torchabi import TORCH_ABIS

__all__ = ["doctor_schema"]

_COUNT = {"minimum": 0}


def _gpu_pair(description: str) -> Schema:
    return closed(
        description,
        {
            "name": of("string", "Its model name."),
            "cc": nullable("string", "Its compute capability (`9.0`); null: not known."),
        },
    )


def _machine() -> Schema:
    return closed(
        "This machine, as the checks see it.",
        {
            "gpus": array("Its GPUs.", _gpu_pair("One GPU.")),
            "gpu_source": of("string", "Where the GPUs were read (`nvml`, `override`, `none`)."),
            "driver_version": nullable("string", "The NVIDIA driver's version; null: none."),
            "driver_cuda": nullable("string", "The newest CUDA the driver runs (`13.0`)."),
            "torch": nullable("string", "The installed torch's version; null: none."),
            "torch_cxx11abi": nullable("boolean", "torch's C++ ABI is cxx11; null: not known."),
            "torch_build": torch_build("The installed torch's build; null: no torch."),
            "cuda_libraries": cuda_libraries("The NVIDIA libraries here; null: not looked for."),
            "glibc": nullable("string", "This system's glibc version."),
        },
    )


def _provenance() -> Schema:
    said = {
        "variant": "Its variant: cuship.json's label, else the local version label.",
        "variant_from": "Where the variant was read: `cuship.json` or `local version label`.",
        "label": "The local version label of the installed version.",
        "filename": "The prebuilt wheel cuship's backend installed (cuship.json).",
        "index": "The index it came from (cuship.json).",
        "kind": "`prebuilt` or `source` (cuship.json).",
        "url": "The file or URL it was installed from (PEP 610 direct_url.json).",
    }
    return closed(
        "Where it came from, as far as its files say; each null when not known.",
        {key: nullable("string", text) for key, text in said.items()},
    )


def _gpu_run() -> Schema:
    return closed(
        "How one GPU runs the package's own device code.",
        {
            "gpu": of("string", "The GPU's name."),
            "cc": of("string", "Its compute capability."),
            "runs": enum(get_args(Runs), "`sass` natively, `ptx` by JIT, or `none` at all."),
            "arches": array("What it runs (`sm_90`, `compute_80`)."),
            "objects": array("The objects that need JIT (`ptx`) or have nothing (`none`)."),
            "partial": array("Its own objects with nothing for this GPU beside others that run."),
        },
    )


def _library_need() -> Schema:
    return closed(
        "An NVIDIA library the objects need, and where it is here.",
        {
            "soname": of("string", "Its SONAME (`libcudart.so.13`)."),
            "objects": array("The objects that need it."),
            "cuda_major": nullable("integer", "The CUDA major its SONAME names."),
            "source": nullable("string", "Where it is here; null: nowhere."),
            "runs": nullable("boolean", "The driver runs its CUDA major; null: not known."),
            "judged": of("boolean", "false: only objects for another CUDA need it."),
        },
    )


def _torch_verdict() -> Schema:
    return closed(
        "The objects' torch needs against the installed torch.",
        {
            "abi": enum(TORCH_ABIS, "What they ask of torch: `none`, `stable` or `exact`."),
            "flavour": nullable("string", "The torch build they need (`cuda`); null: any."),
            "cuda_major": nullable("integer", "The CUDA major of torch they need."),
            "built": nullable("string", "The torch X.Y they were built for."),
            "built_from": nullable("string", "Where that was read."),
            "installed": nullable("string", "The installed torch (`torch 2.13.0+cpu (CPU)`)."),
            "ok": nullable("boolean", "They fit; null: not decidable, or nothing to check."),
            "reason": of("string", "Why, in one line."),
        },
    )


def _glibc_verdict() -> Schema:
    return closed(
        "The glibc its platform tag promises to need against this system's.",
        {
            "tag": nullable("string", "Its platform tag."),
            "needed": nullable("string", "The glibc that tag needs; null: it promises none."),
            "system": nullable("string", "This system's glibc."),
            "ok": nullable("boolean", "It fits; null: not known."),
        },
    )


def _problem() -> Schema:
    return closed(
        "One thing that fails here and what to run.",
        {
            "area": enum(get_args(Area), "What fails."),
            "message": of("string", "What fails, and the error a user meets."),
            "fix": of("string", "The command or step that fixes it."),
        },
    )


def _package() -> Schema:
    return closed(
        "Every check of one installed distribution.",
        {
            "name": of("string", "Its name."),
            "version": of("string", "Its version."),
            "location": of("string", "The site directory holding its .dist-info."),
            "provenance": _provenance(),
            "objects": array("Its ELF shared objects."),
            "sass": array("The SASS archs of its own objects."),
            "ptx": array("The PTX archs of its own objects."),
            "ptx_reach": array("Which GPUs each PTX arch can serve.", ptx_reach()),
            "gpus": array("How each GPU here runs its device code.", _gpu_run()),
            "cuda_libraries": array("The NVIDIA libraries it needs.", _library_need()),
            "torch": _torch_verdict(),
            "glibc": _glibc_verdict(),
            "problems": array("What fails here; empty: it should work.", _problem()),
            "notes": array("What is worth saying, not wrong."),
            "unchecked": array("The checks that could not run, and why."),
            "checks": array("Every check made, passed or not.", check()),
        },
    )


def doctor_schema() -> Schema:
    """``cuship doctor --json``: the machine, each distribution checked, the verdict."""
    skipped = closed(
        "A distribution looked at and not checked.",
        {"name": of("string", "Its name."), "reason": of("string", "Why not.")},
    )
    return closed(
        "What `cuship doctor --json` prints: this machine, every installed distribution with "
        "compiled code and each check of it, those passed over, and the verdict.",
        {
            "machine": _machine(),
            "packages": array("Each distribution checked.", _package()),
            "skipped": array("Those looked at and not checked.", skipped),
            "scanned": of("integer", "Distributions looked at.", **_COUNT),
            "problems": of("integer", "Problems found, in all.", **_COUNT),
            "unchecked": array("`name: why` for every check that could not run."),
            "seconds": of("number", "How long it took.", **_COUNT),
            "exit_code": of("integer", "1 when something will fail here, else 0.", enum=[0, 1]),
        },
    )
