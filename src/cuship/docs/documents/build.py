"""The JSON Schemas of ``cuship build --json`` (a list of
:meth:`Outcome.to_json <cuship.builder.run.batch.Outcome.to_json>`) and ``cuship ship --json``
(:meth:`ShipReport.to_json <cuship.ship.ShipReport.to_json>`)."""

from __future__ import annotations

from typing import get_args

from cuship.builder.host.interpreters import Source
from cuship.builder.run.batch import Status
from cuship.builder.run.smoke import SmokeEnv
from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.docs.documents._wheel import wheel_report
from cuship.docs.documents.check import check_report
from cuship.docs.documents.packaging import index_summary

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


def _result() -> dict[str, Schema]:
    """The keys a job has when it made a wheel (:meth:`JobResult.to_json`)."""
    return {
        "wheel": of("string", "The wheel's path (under `failed/` when the job failed)."),
        "report": wheel_report(),
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
    """The quick check's report, as ``cuship check --format json`` prints it."""
    report = check_report("The quick check's report (`cuship check --format json`).")
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
