"""The JSON Schema of ``cuship check --format json``
(:meth:`CheckReport.to_json <cuship.check.report.results.CheckReport.to_json>`), also the
``check`` of ``cuship ship --json``, every object in it closed."""

from __future__ import annotations

from typing import get_args

from cuship.check.report.results import Status, Verdict
from cuship.check.sanitize.results import SanitizedStatus
from cuship.check.sanitize.tools import TOOLS
from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.provenance import Origin

__all__ = ["DOCUMENTS", "check_report", "check_schema", "provenance"]

_STRINGS = {"type": "string"}


def _error_figure(description: str) -> Schema:
    """A float that JSON cannot hold as a number when it is inf or NaN (then a string)."""
    special = {"type": "string", "enum": ["inf", "-inf", "nan"]}
    return {
        "description": description + " `inf`, `-inf` or `nan` as strings; null: none.",
        "anyOf": [{"type": "number"}, special, {"type": "null"}],
    }


def _case_spec() -> Schema:
    return closed(
        "The case: its sizes, value distribution and seed (`--case INDEX` runs it again).",
        {
            "index": of("integer", "The case's index in its op and dtype.", minimum=0),
            "sizes": of(
                "object",
                "Each dimension's size (`n`: 1024).",
                additionalProperties={"type": "integer"},
            ),
            "distribution": of("string", "How its input values were drawn (`normal`)."),
            "seed": of("integer", "The case's own seed, derived from the run's.", minimum=0),
            "scalars": of(
                "object",
                "Each scalar input's value (`alpha`: 2.5).",
                additionalProperties={"type": "number"},
            ),
        },
    )


def _case() -> Schema:
    return closed(
        "One case of a group, against the float64 reference.",
        {
            "case": _case_spec(),
            "status": enum(get_args(Status), "How the case ended."),
            "message": maybe(of("string", ""), "Why it failed or errored; null when it passed."),
            "total": of("integer", "Elements compared.", minimum=0),
            "mismatches": of("integer", "Elements outside the tolerances.", minimum=0),
            "max_abs": _error_figure("The largest absolute error."),
            "max_rel": _error_figure("The largest relative error."),
            "worst_index": maybe(
                array("", {"type": "integer"}), "Where the worst element is; null: none."
            ),
            "worst_actual": _error_figure("The worst element's value."),
            "worst_expected": _error_figure("The reference's value there."),
            "output": maybe(of("string", ""), "The output holding the worst element."),
            "kernel_s": of("number", "Seconds in the kernel call.", minimum=0),
            "wall_s": of("number", "Seconds the case took, inputs and reference included."),
        },
    )


def _group() -> Schema:
    return closed(
        "One op on one engine at one dtype, with its cases.",
        {
            "op": of("string", "The op's name."),
            "engine": of("string", "The engine (`native`, `cuda`, `triton`)."),
            "dtype": of("string", "The dtype (`float32`)."),
            "status": enum(get_args(Status), "The worst of its cases' (`skipped`: none ran)."),
            "skip_reason": maybe(of("string", ""), "Why it was skipped; null when it ran."),
            "rtol": of("number", "The relative tolerance.", minimum=0),
            "atol": of("number", "The absolute tolerance.", minimum=0),
            "max_abs": _error_figure("The largest absolute error of its cases."),
            "max_rel": _error_figure("The largest relative error of its cases."),
            "mismatches": of("integer", "Elements outside the tolerances, all cases.", minimum=0),
            "wall_s": of("number", "Seconds its cases took."),
            "cases": array("Its cases, in order.", _case()),
        },
    )


def provenance() -> Schema:
    """Where the project's packages were imported from (check and bench)."""
    extension = closed(
        "A compiled extension module under the package.",
        {
            "module": of("string", "Its dotted name inside the package (`_cuda`)."),
            "path": of("string", "Its file."),
            "loaded": of("boolean", "It imported."),
            "error": maybe(of("string", ""), "Why it did not import; null when it did."),
        },
    )
    package = closed(
        "One top-level package of the project.",
        {
            "name": of("string", "The package's name."),
            "file": of("string", "The file imported (its `__init__.py`)."),
            "origin": enum(get_args(Origin), "Where that file lies."),
            "distribution": maybe(of("string", ""), "The distribution that owns it, if any."),
            "version": maybe(of("string", ""), "That distribution's version."),
            "extensions": array("Its compiled extension modules.", extension),
            "error": maybe(of("string", ""), "Why importing it failed; null: it imported."),
        },
    )
    found = closed(
        "Where the project's packages were imported from.",
        {
            "packages": array("Each traced package.", package),
            "note": maybe(of("string", ""), "Why some were not traced, if any were not."),
        },
    )
    return maybe(found, "Where the project's packages were imported from; null: not traced.")


def _findings() -> dict[str, Schema]:
    return {
        "findings": of("integer", "What the tool reported.", minimum=0),
        "kinds": array("The kinds of finding (`Invalid __global__ read`)."),
        "kernels": array("The kernels they were in."),
        "lines": array("The tool's first lines about them, bounded."),
    }


def _sanitized_case() -> Schema:
    return closed(
        "One case run under the tool.",
        {
            "op": of("string", "The op."),
            "engine": of("string", "The engine."),
            "dtype": of("string", "The dtype."),
            "case": _case_spec(),
            "status": enum(
                get_args(SanitizedStatus),
                "`failed`: the tool reported something; `error`: it could not be checked.",
            ),
            **_findings(),
            "message": maybe(of("string", ""), "The case's own outcome when it did not pass."),
            "wall_s": of("number", "Seconds it took under the tool.", minimum=0),
            "plain_s": maybe(of("number", ""), "Seconds it took in the plain run."),
        },
    )


def _sanitize_run() -> Schema:
    stray = closed(
        "Findings that belong to no case.",
        {
            "where": of("string", "When they were reported (a worker's start or exit)."),
            **_findings(),
        },
    )
    count = "integer"
    return closed(
        "One compute-sanitizer tool's pass over the GPU engines' cases.",
        {
            "tool": enum(TOOLS, "The tool."),
            "command": array("How each worker was started (`<log>`: the tool's FIFO)."),
            "status": enum(("passed", "failed", "empty"), "`empty`: no case ran under it."),
            "wall_s": of("number", "Seconds the whole pass took.", minimum=0),
            "cases_s": of("number", "Seconds its cases took under the tool.", minimum=0),
            "plain_s": of("number", "Seconds the same cases took in the plain run.", minimum=0),
            "slowdown": maybe(of("number", ""), "cases_s over plain_s; null: no plain time."),
            "workers": of(count, "Sanitized workers started.", minimum=0),
            "errors": of(count, "The tool's own ERROR SUMMARY total.", minimum=0),
            "not_printed": of(count, "Errors the tool counted but did not print.", minimum=0),
            "probes": of(count, "Failed driver entry-point lookups, ignored.", minimum=0),
            "note": maybe(of("string", ""), "Why nothing was run, if so."),
            "cases": array("Each case run under the tool.", _sanitized_case()),
            "unattributed": array("Findings that belong to no case.", stray),
        },
    )


def check_report(description: str) -> Schema:
    """The check report, every object closed (``cuship check --format json``, ship's check)."""
    counts = closed(
        "Groups by status.",
        {s: of("integer", f"Groups {s}.", minimum=0) for s in get_args(Status)},
    )
    unavailable = closed(
        "An engine whose modules did not import here (its groups are skipped).",
        {
            "engine": of("string", "The engine."),
            "error": of("string", "The import error, on one line."),
            "fix": of("string", "What to install."),
        },
    )
    regression = closed(
        "A group worse than its baseline.",
        {"key": of("string", "The group (`op/engine/dtype`)."), "message": of("string", "How.")},
    )
    return closed(
        description,
        {
            "target": of("string", "The project path the check ran on."),
            "device": of("string", "The device it ran on (`cpu`)."),
            "seed": of("integer", "The inputs' random seed."),
            "quick": of("boolean", "Only each op's quick cases ran."),
            "force_ptx": of("boolean", "The `cuda` engine ran with `CUDA_FORCE_PTX_JIT=1`."),
            "jit": array("Which PTX each GPU JIT-compiled, for which shared object."),
            "env": of("object", "The code variables the run had.", additionalProperties=_STRINGS),
            "started": of("number", "When it started (seconds since the epoch)."),
            "finished": of("number", "When it finished (seconds since the epoch)."),
            "verdict": enum(get_args(Verdict), "The outcome of the whole run."),
            "exit_code": of("integer", "The exit code `cuship check` gives."),
            "counts": counts,
            "provenance": provenance(),
            "unavailable": array("Engines whose modules did not import.", unavailable),
            "groups": array("One result per op, engine and dtype, with its cases.", _group()),
            "regressions": array("Groups worse than their baseline.", regression),
            "gate_regressions": of("boolean", "Regressions fail the run."),
            "sanitize": array("One pass per compute-sanitizer tool.", _sanitize_run()),
        },
    )


def check_schema() -> Schema:
    """``cuship check --format json``: the run, its groups and cases, baseline and sanitizers."""
    return check_report(
        "What `cuship check --format json` prints: the run's target, device and seed, its "
        "verdict and exit code, every group with its cases, the regressions against a "
        "baseline, each compute-sanitizer pass and where the project's packages came from."
    )


DOCUMENTS = {"check": ("cuship check --format json", check_schema)}
