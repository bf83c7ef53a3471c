"""The schemas of ``cuship resolve --json`` (:meth:`IndexResolution.to_json
<cuship.resolve.install.IndexResolution.to_json>`) and ``cuship install --json``
(:meth:`InstallPlan.to_json <cuship.resolve.install.InstallPlan.to_json>`)."""

from __future__ import annotations

from cuship.docs.documents._judge import check, cuda_libraries, nullable
from cuship.docs.documents._parts import Schema, array, closed, maybe, of

__all__ = ["install_schema", "resolve_schema"]

_COVERAGE = "`sass`, `ptx`, `unknown` (no manifest record says), `cpu` or `no-gpu`"


def _target() -> Schema:
    gpu = closed(
        "One GPU.",
        {
            "name": of("string", "Its model name."),
            "cc": of("string", "Its compute capability (`9.0`)."),
        },
    )
    return closed(
        "The machine the files were judged for.",
        {
            "python": of("string", "The Python version."),
            "tags": array("Its first 6 compatibility tags, best first."),
            "tag_count": of("integer", "How many tags it has.", minimum=0),
            "gpus": array("Its GPUs of known compute capability.", gpu),
            "driver_version": nullable("string", "The NVIDIA driver's version; null: none."),
            "driver_cuda": nullable("string", "The newest CUDA the driver runs (`13.0`)."),
            "torch": nullable("string", "The installed torch's version; null: none."),
            "cxx11abi": nullable("boolean", "torch's C++ ABI is cxx11; null: not known."),
            "torch_flavour": nullable("string", "torch's build: `cpu`, `cuda`, `rocm`, `xpu`."),
            "torch_cuda": nullable("string", "The CUDA torch was built for."),
            "libraries": cuda_libraries("The NVIDIA libraries here; null: not looked for."),
            "glibc": nullable("string", "The glibc version."),
        },
    )


def _verdict(description: str) -> Schema:
    return closed(
        description,
        {
            "filename": of("string", "The file's name."),
            "url": of("string", "Its URL."),
            "sha256": nullable("string", "Its sha256, as the index lists it."),
            "version": nullable("string", "Its version; null: its name has none that parses."),
            "accepted": of("boolean", "It runs here (`rule` is `ok`)."),
            "rule": of("string", "`ok`, or the rule it failed."),
            "reason": of("string", "Why."),
            "notes": array("What else is worth saying of it."),
            "cuda": nullable("string", "The CUDA it was built with; null: none or not known."),
            "coverage": of("string", f"How it runs on this machine's GPUs: {_COVERAGE}."),
            "arches_known": of("boolean", "A manifest record said what device code it has."),
            "checks": array("Every check the judge made of it.", check()),
        },
    )


def _resolution() -> dict[str, Schema]:
    return {
        "requirement": of("string", "The requirement resolved."),
        "target": _target(),
        "chosen": maybe(_verdict("The file chosen."), "The file chosen; null: nothing fits."),
        "ranked": array(
            "The acceptable files, best first (the chosen one first).", _verdict("A file.")
        ),
        "rejected": array("The files that do not run here, each with why.", _verdict("A file.")),
        "uv_variants_choice": nullable(
            "string", "The file uv with wheel variants would take; null: no variants."
        ),
    }


def resolve_schema() -> Schema:
    """``cuship resolve --json``: the index page, the machine, and every file judged."""
    return closed(
        "What `cuship resolve --json` prints: the project page read, the machine the files "
        "were judged for, the file chosen and every other with its verdict.",
        {
            "index": of("string", "The project page's URL."),
            "manifest": nullable("string", "The cuship manifest merged in; null: none."),
            **_resolution(),
        },
    )


def install_schema() -> Schema:
    """``cuship install --json``: the resolution and what will be installed, and how."""
    return closed(
        "What `cuship install --json` prints: the resolution, the file to download and verify, "
        "and the installer's command that installs exactly it.",
        {
            "resolution": closed("How the file was chosen.", _resolution()),
            "url": of("string", "The chosen file's URL."),
            "sha256": of("string", "Its sha256 (pinned in the command)."),
            "wheel": of("string", "Where the verified wheel is kept."),
            "command": array("The installer's command line."),
            "dry_run": of("boolean", "Only resolved and planned: nothing was installed."),
        },
    )
