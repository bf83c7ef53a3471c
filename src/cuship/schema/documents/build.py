"""The JSON Schemas of ``cuship build --json`` (a list of
:meth:`Outcome.to_json <cuship.builder.run.batch.Outcome.to_json>`) and ``cuship ship --json``
(:meth:`ShipReport.to_json <cuship.ship.ShipReport.to_json>`)."""

from __future__ import annotations

from typing import get_args

from cuship.builder.host.interpreters import Source
from cuship.builder.run.batch import Status
from cuship.builder.run.smoke import SmokeEnv
from cuship.check.report.results import Status as CheckStatus
from cuship.check.report.results import Verdict
from cuship.schema.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.schema.documents.packaging import index_summary
from cuship.wheel.audit import ROLES
from cuship.wheel.torchabi import TORCH_ABIS

__all__ = ["DOCUMENTS", "build_schema", "ship_schema"]


def _python() -> Schema:
    return closed(
        "The interpreter the job built and smoke-tested with.",
        {
            "version": of("string", "Its full version (`3.12.1`)."),
            "executable": of("string", "Its path."),
            "source": enum(
                get_args(Source), "Where cuship found it (`running`: cuship's own interpreter)."
            ),
        },
    )


def _nvcc() -> Schema:
    calls = closed(
        "What cuship's nvcc compiled, from its log.",
        {
            "calls": of("integer", "nvcc calls.", minimum=0),
            "device_compiles": of("integer", "Calls that compiled device code.", minimum=0),
            "asked": array("The archs the project's own flags asked for."),
            "compiled": array("The archs compiled."),
            "rewritten": of(
                "integer", "Device compiles whose arch flags were replaced.", minimum=0
            ),
        },
    )
    return maybe(calls, "What cuship's nvcc compiled; null when the build did not use it.")


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


def _shared_object() -> Schema:
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


def _wheel_report() -> Schema:
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
            "extensions": array("Every shared object in it.", _shared_object()),
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


def _result() -> dict[str, Schema]:
    """The keys a job has when it made a wheel (:meth:`JobResult.to_json`)."""
    return {
        "wheel": of("string", "The wheel's path (under `failed/` when the job failed)."),
        "report": _wheel_report(),
        "seconds": of("number", "How long the job took, in seconds.", minimum=0),
        "python": _python(),
        "smoke": maybe(
            of("string", ""),
            "What the smoke test's import printed; null when no import was tried or no smoke "
            "test ran.",
        ),
        "smoke_env": maybe(
            enum(get_args(SmokeEnv), ""), "The venv the smoke test ran in; null: none ran."
        ),
        "smoke_note": maybe(of("string", ""), "Why that venv, or why no import."),
        "nvcc": _nvcc(),
    }


def _job(description: str, *, wheel_always: bool) -> Schema:
    """One job's outcome. With ``wheel_always`` (ship), ``wheel`` is there, null when the job
    made none; the other result keys come all together or not at all."""
    result = _result()
    if wheel_always:
        made = "The wheel's path (under `failed/` when the job failed); null: it made none."
        result["wheel"] = maybe(result["wheel"], made)
    grouped = [k for k in result if not (wheel_always and k == "wheel")]
    doc = closed(
        description,
        {
            "job": of("string", "The job's id."),
            "status": enum(get_args(Status), "What became of it."),
            "detail": of(
                "string", "Why: the wheel's name, the error, or what it needs to be built."
            ),
            **result,
        },
        optional=grouped,
    )
    doc["dependentRequired"] = {k: [o for o in grouped if o != k] for k in grouped}
    return doc


def build_schema() -> Schema:
    """``cuship build --json``: the outcome of every job, in plan order."""
    return array(
        "What `cuship build --json` prints: one object per job, in plan order, with its status "
        "and why and, when it made a wheel, the wheel's inspection, the interpreter, the smoke "
        "test and what cuship's nvcc compiled.",
        _job(
            "One job: its id, status and why; with the wheel and what cuship learnt about it when "
            "it made one (`wheel` to `nvcc`, all or none).",
            wheel_always=False,
        ),
    )


def _check() -> Schema:
    """The quick check's report at its top level; its lists hold ``cuship check``'s own
    objects, left open here."""
    counts = closed(
        "Groups by status.",
        {s: of("integer", f"Groups {s}.", minimum=0) for s in get_args(CheckStatus)},
    )
    open_items = {"type": "object"}
    report = closed(
        "The quick check's report (`cuship check --format json`).",
        {
            "target": of("string", "The project path the check ran on."),
            "device": of("string", "The device it ran on (`cpu`)."),
            "seed": of("integer", "The inputs' random seed."),
            "quick": of("boolean", "Only each op's quick cases ran."),
            "force_ptx": of("boolean", "The `cuda` engine ran with `CUDA_FORCE_PTX_JIT=1`."),
            "jit": array("Which PTX each GPU JIT-compiled, for which shared object."),
            "env": of(
                "object", "The code variables the run had.", additionalProperties={"type": "string"}
            ),
            "started": of("number", "When it started (seconds since the epoch)."),
            "finished": of("number", "When it finished (seconds since the epoch)."),
            "verdict": enum(get_args(Verdict), "The outcome of the whole run."),
            "exit_code": of("integer", "The exit code `cuship check` would give."),
            "counts": counts,
            "provenance": maybe(
                {"type": "object"}, "Where the project's packages were imported from, if traced."
            ),
            "unavailable": array("Engines whose modules did not import.", open_items),
            "groups": array("One result per op, engine and dtype, with its cases.", open_items),
            "regressions": array("Groups worse than their baseline.", open_items),
            "gate_regressions": of("boolean", "Regressions fail the run."),
            "sanitize": array("One pass per compute-sanitizer tool.", open_items),
        },
    )
    return maybe(report, report["description"] + " Null with `--no-check`.")


def _index() -> Schema:
    return maybe(index_summary(), "What writing the index did; null when no wheel was built.")


def _install() -> Schema:
    return closed(
        "One shipped project and the lines that install it from the index.",
        {
            "project": of("string", "The project's name."),
            "version": of("string", "The newest version built (pinned by the lines)."),
            "pip": of("string", "The pip command."),
            "uv": of("string", "The uv command."),
        },
    )


def ship_schema() -> Schema:
    """``cuship ship --json``: jobs, quick check, index, stages and the install lines."""
    job = "One job, as in `cuship build --json`, with `wheel` always there."
    return closed(
        "What `cuship ship --json` prints: every job as `cuship build --json` has it, the "
        "quick check, the index written, each stage's seconds and the lines that install "
        "what was shipped.",
        {
            "cpu_only": of("boolean", "No nvcc on this host: the wheels have no CUDA kernels."),
            "jobs": array("Every job of the build, in plan order.", _job(job, wheel_always=True)),
            "check": _check(),
            "index": _index(),
            "stages": of(
                "object",
                "Each stage's wall time in seconds, in the order run.",
                additionalProperties={"type": "number", "minimum": 0},
            ),
            "torch_axis": array("What the torch ABI did to the matrix, and why."),
            "install": maybe(
                of("string", ""), "The pip command that installs the project; null: no index."
            ),
            "installs": array("Per project built, its install lines; empty: no index.", _install()),
            "variants": array("The file names of the variant wheels and plain fallbacks written."),
            "install_variants": maybe(
                of("string", ""),
                "The uv command that installs the variant for this machine; null when no "
                "variant was written or nothing was indexed.",
            ),
        },
    )


DOCUMENTS = {
    "build": ("cuship build --json", build_schema),
    "ship": ("cuship ship --json", ship_schema),
}
