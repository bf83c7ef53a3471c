"""The JSON Schemas of the documents cuship's commands print with ``--json``
(``<command>-json.schema.json`` beside this module): ``cuship build``'s list of
:meth:`Outcome.to_json <cuship.builder.run.batch.Outcome.to_json>` and ``cuship ship``'s
:meth:`ShipReport.to_json <cuship.ship.ShipReport.to_json>`.

Written by hand, key by key, each piece once: every object described is closed
(``additionalProperties: false``), every value that can be null says so; only the quick
check's inner lists (``cuship check``'s own documents) are left open. The enums come from the
code's own ``Literal`` types. A unit test holds the schemas to documents made from real
library objects, and the published files to :func:`document_schemas`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, get_args

from cuship._fs import write_json
from cuship.builder.host.interpreters import Source
from cuship.builder.run.batch import Status
from cuship.builder.run.smoke import SmokeEnv
from cuship.check.report.results import Status as CheckStatus
from cuship.check.report.results import Verdict
from cuship.wheel.audit import ROLES
from cuship.wheel.torchabi import TORCH_ABIS

__all__ = ["build_schema", "document_schemas", "ship_schema", "write_schemas"]

Schema = dict[str, Any]
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _of(kind: str, description: str, **more: Any) -> Schema:
    return {"type": kind, "description": description, **more}


def _maybe(schema: Schema, description: str) -> Schema:
    """``schema`` or null."""
    inner = {k: v for k, v in schema.items() if k != "description"}
    return {"description": description, "anyOf": [inner, {"type": "null"}]}


def _list(description: str, items: Schema | None = None) -> Schema:
    return _of("array", description, items=items or {"type": "string"})


def _enum(values: Iterable[str], description: str) -> Schema:
    return _of("string", description, enum=list(values))


def _object(
    description: str, properties: Mapping[str, Schema], *, optional: Iterable[str] = ()
) -> Schema:
    """A closed object: its ``properties`` and nothing else, all required but ``optional``."""
    left_out = set(optional)
    return _of(
        "object",
        description,
        properties=dict(properties),
        required=[k for k in properties if k not in left_out],
        additionalProperties=False,
    )


def _python() -> Schema:
    return _object(
        "The interpreter the job built and smoke-tested with.",
        {
            "version": _of("string", "Its full version (`3.12.1`)."),
            "executable": _of("string", "Its path."),
            "source": _enum(
                get_args(Source), "Where cuship found it (`running`: cuship's own interpreter)."
            ),
        },
    )


def _nvcc() -> Schema:
    calls = _object(
        "What cuship's nvcc compiled, from its log.",
        {
            "calls": _of("integer", "nvcc calls.", minimum=0),
            "device_compiles": _of("integer", "Calls that compiled device code.", minimum=0),
            "asked": _list("The archs the project's own flags asked for."),
            "compiled": _list("The archs compiled."),
            "rewritten": _of(
                "integer", "Device compiles whose arch flags were replaced.", minimum=0
            ),
        },
    )
    return _maybe(calls, "What cuship's nvcc compiled; null when the build did not use it.")


def _torch_facts() -> Schema:
    return _object(
        "The torch ABI of the object and the evidence for it.",
        {
            "abi": _enum(TORCH_ABIS, "What it asks of torch: `none`, `stable` or `exact`."),
            "libraries": _list("The libtorch*/libc10* libraries it needs (DT_NEEDED)."),
            "cxx_symbols": _of("integer", "Undefined c10/at/torch/caffe2 C++ symbols.", minimum=0),
            "shim_symbols": _of(
                "integer", "Undefined symbols of torch's stable C shim.", minimum=0
            ),
            "example": _maybe(_of("string", ""), "One symbol that decided the ABI."),
            "reason": _of("string", "Why, in one line."),
            "cxx11": _maybe(
                _of("boolean", ""), "true: it imports `std::__cxx11` names; null: not known."
            ),
        },
    )


def _version_need() -> Schema:
    return _object(
        "The symbols imported at one version of one library.",
        {
            "library": _of("string", "The library (`libc.so.6`)."),
            "version": _of("string", "The version (`GLIBC_2.34`)."),
            "symbols": _list("The symbols imported at that version."),
        },
    )


def _shared_object() -> Schema:
    return _object(
        "One ELF shared object in the wheel.",
        {
            "path": _of("string", "Its path inside the wheel."),
            "role": _enum(ROLES, "What it is to the package (`vendor`: a bundled NVIDIA library)."),
            "size": _of("integer", "Its size in bytes.", minimum=0),
            "machine": _of("string", "Its ELF machine (`EM_X86_64`)."),
            "soname": _maybe(_of("string", ""), "Its DT_SONAME; null when it has none."),
            "needed": _list("Its DT_NEEDED libraries."),
            "sass": _list("The SASS archs the CUDA runtime loads from it (`90`, `100a`)."),
            "ptx": _list("The PTX archs the CUDA runtime loads from it."),
            "lto": _list("The LTO-IR archs in its fatbinary."),
            "ptx_compressed": _of("boolean", "Its PTX is compressed."),
            "sass_compressed": _of("boolean", "Its SASS is compressed."),
            "fatbin_size": _of("integer", "Bytes of its `.nv_fatbin` section.", minimum=0),
            "entries": _of("integer", "Fatbinary entries.", minimum=0),
            "containers": _of("integer", "Fatbinary containers.", minimum=0),
            "torch_abi": _enum(TORCH_ABIS, "Its torch ABI (`torch.abi`)."),
            "torch": _torch_facts(),
            "versions": _list("The symbol versions it needs.", _version_need()),
            "relocatable": _list("Relocatable device code kept for a device link (`sm_90`)."),
        },
    )


def _torch_pin() -> Schema:
    pin = _object(
        "What the wheel's torch requirement admits.",
        {
            "requirement": _of("string", "The requirement as written (`torch==2.13.*`)."),
            "exact": _maybe(_of("string", ""), "The one torch X.Y it admits, if only one."),
            "minimum": _maybe(
                _of("string", ""), "The lowest torch X.Y it admits, if it names one."
            ),
        },
    )
    return _maybe(pin, "Its Requires-Dist on torch; null when it has none.")


def _wheel_report() -> Schema:
    variant = _of("object", "", additionalProperties={"type": "object"})
    return _object(
        "The wheel's inspection (`cuship inspect WHEEL --json`).",
        {
            "path": _of("string", "The wheel's path."),
            "filename": _of("string", "The wheel's file name."),
            "name": _of("string", "The project name, as in the file name."),
            "version": _of("string", "The version, local label included."),
            "local": _maybe(_of("string", ""), "The local version label (`cu130`), if any."),
            "tags": _list("Its compatibility tags, sorted."),
            "size": _of("integer", "The wheel's size in bytes.", minimum=0),
            "sass": _list("The SASS archs of its own objects (not bundled NVIDIA libraries)."),
            "ptx": _list("The PTX archs of its own objects."),
            "extensions": _list("Every shared object in it.", _shared_object()),
            "bundled_libs": _list(
                "Its shared libraries that are not extension modules (in `*.libs/` or named "
                "`lib*.so*`), by path."
            ),
            "bundled_cuda_libs": _list("Those of them that are CUDA libraries."),
            "torch_abi": _enum(TORCH_ABIS, "The strictest torch ABI of its shared objects."),
            "torch_requirement": _torch_pin(),
            "torch_built": _maybe(
                _of("string", ""), "The torch X.Y it was built against, when known."
            ),
            "nvidia_requirements": _list(
                "Its Requires-Dist entries that install NVIDIA libraries."
            ),
            "variant": _maybe(
                variant, "A variant wheel's variants (label: properties); else null."
            ),
        },
    )


def _result() -> dict[str, Schema]:
    """The keys a job has when it made a wheel (:meth:`JobResult.to_json`)."""
    return {
        "wheel": _of("string", "The wheel's path (under `failed/` when the job failed)."),
        "report": _wheel_report(),
        "seconds": _of("number", "How long the job took, in seconds.", minimum=0),
        "python": _python(),
        "smoke": _maybe(
            _of("string", ""),
            "What the smoke test's import printed; null when no import was tried or no smoke "
            "test ran.",
        ),
        "smoke_env": _maybe(
            _enum(get_args(SmokeEnv), ""), "The venv the smoke test ran in; null: none ran."
        ),
        "smoke_note": _maybe(_of("string", ""), "Why that venv, or why no import."),
        "nvcc": _nvcc(),
    }


def _job(description: str, *, wheel_always: bool) -> Schema:
    """One job's outcome. With ``wheel_always`` (ship), ``wheel`` is there, null when the job
    made none; the other result keys come all together or not at all."""
    result = _result()
    if wheel_always:
        made = "The wheel's path (under `failed/` when the job failed); null: it made none."
        result["wheel"] = _maybe(result["wheel"], made)
    grouped = [k for k in result if not (wheel_always and k == "wheel")]
    doc = _object(
        description,
        {
            "job": _of("string", "The job's id."),
            "status": _enum(get_args(Status), "What became of it."),
            "detail": _of(
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
    return _list(
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
    counts = _object(
        "Groups by status.",
        {s: _of("integer", f"Groups {s}.", minimum=0) for s in get_args(CheckStatus)},
    )
    open_items = {"type": "object"}
    report = _object(
        "The quick check's report (`cuship check --format json`).",
        {
            "target": _of("string", "The project path the check ran on."),
            "device": _of("string", "The device it ran on (`cpu`)."),
            "seed": _of("integer", "The inputs' random seed."),
            "quick": _of("boolean", "Only each op's quick cases ran."),
            "force_ptx": _of("boolean", "The `cuda` engine ran with `CUDA_FORCE_PTX_JIT=1`."),
            "jit": _list("Which PTX each GPU JIT-compiled, for which shared object."),
            "env": _of(
                "object", "The code variables the run had.", additionalProperties={"type": "string"}
            ),
            "started": _of("number", "When it started (seconds since the epoch)."),
            "finished": _of("number", "When it finished (seconds since the epoch)."),
            "verdict": _enum(get_args(Verdict), "The outcome of the whole run."),
            "exit_code": _of("integer", "The exit code `cuship check` would give."),
            "counts": counts,
            "provenance": _maybe(
                {"type": "object"}, "Where the project's packages were imported from, if traced."
            ),
            "unavailable": _list("Engines whose modules did not import.", open_items),
            "groups": _list("One result per op, engine and dtype, with its cases.", open_items),
            "regressions": _list("Groups worse than their baseline.", open_items),
            "gate_regressions": _of("boolean", "Regressions fail the run."),
            "sanitize": _list("One pass per compute-sanitizer tool.", open_items),
        },
    )
    return _maybe(report, report["description"] + " Null with `--no-check`.")


def _index() -> Schema:
    skipped = _object(
        "A file given but not indexed.",
        {
            "path": _of("string", "The file."),
            "reason": _of("string", "Why it was not indexed."),
            "bad_wheel": _of("boolean", "It is named like a wheel (a failure, not a note)."),
        },
    )
    count = "integer"
    summary = _object(
        "What writing the index did.",
        {
            "site": _of("string", "The index's directory."),
            "wheels": _of(count, "Wheels it lists.", minimum=0),
            "projects": _of(count, "Projects it lists.", minimum=0),
            "variants": _list("The local labels (variants) of its wheels."),
            "skipped": _list("Files given but not indexed.", skipped),
            "hashed": _of(count, "Wheels hashed by this run.", minimum=0),
            "cached": _of(count, "Wheels whose hashes were reused.", minimum=0),
            "base_url": _maybe(_of("string", ""), "The URL the index is served at, if given."),
            "kept": _of(count, "Wheels kept from the index already there.", minimum=0),
            "rewritten": _maybe(
                _of(count, "", minimum=0),
                "Projects an update in place rewrote; null when the whole tree was rendered.",
            ),
        },
    )
    return _maybe(summary, "What writing the index did; null when no wheel was built.")


def _install() -> Schema:
    return _object(
        "One shipped project and the lines that install it from the index.",
        {
            "project": _of("string", "The project's name."),
            "version": _of("string", "The newest version built (pinned by the lines)."),
            "pip": _of("string", "The pip command."),
            "uv": _of("string", "The uv command."),
        },
    )


def ship_schema() -> Schema:
    """``cuship ship --json``: jobs, quick check, index, stages and the install lines."""
    job = "One job, as in `cuship build --json`, with `wheel` always there."
    return _object(
        "What `cuship ship --json` prints: every job as `cuship build --json` has it, the "
        "quick check, the index written, each stage's seconds and the lines that install "
        "what was shipped.",
        {
            "cpu_only": _of("boolean", "No nvcc on this host: the wheels have no CUDA kernels."),
            "jobs": _list("Every job of the build, in plan order.", _job(job, wheel_always=True)),
            "check": _check(),
            "index": _index(),
            "stages": _of(
                "object",
                "Each stage's wall time in seconds, in the order run.",
                additionalProperties={"type": "number", "minimum": 0},
            ),
            "torch_axis": _list("What the torch ABI did to the matrix, and why."),
            "install": _maybe(
                _of("string", ""), "The pip command that installs the project; null: no index."
            ),
            "installs": _list("Per project built, its install lines; empty: no index.", _install()),
            "variants": _list("The file names of the variant wheels and plain fallbacks written."),
            "install_variants": _maybe(
                _of("string", ""),
                "The uv command that installs the variant for this machine; null when no "
                "variant was written or nothing was indexed.",
            ),
        },
    )


def document_schemas() -> dict[str, Schema]:
    """The JSON Schema of each ``--json`` document, by schema file name."""
    out = {}
    for command, doc in (("build", build_schema()), ("ship", ship_schema())):
        name = f"{command}-json.schema.json"
        out[name] = {
            "$schema": DRAFT,
            "$id": f"https://cuship.dev/schema/{name}",
            "title": f"cuship {command} --json",
            **doc,
        }
    return out


def write_schemas(directory: Path = Path(__file__).parent) -> None:
    """Write :func:`document_schemas` into ``directory`` (by default beside this module)."""
    for name, doc in document_schemas().items():
        write_json(directory / name, doc)
