"""Predicates cuship signs: SLSA provenance v1 for builds, cuship verdicts for check and bench.

Everything here is pure: the caller passes the wheel reports, the results documents, the
toolchain versions and the environment; nothing is probed or read from ``os.environ``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name

from cuship.errors import CushipError, InputError
from cuship.version import __version__
from cuship.wheel.audit import WheelReport
from cuship.wheel.names import parse_label

__all__ = [
    "BENCH_PREDICATE",
    "BUILD_TYPE",
    "CHECK_PREDICATE",
    "SLSA_PROVENANCE",
    "BuildRun",
    "bench_predicate",
    "build_predicate",
    "builder_identity",
    "check_predicate",
    "jobs_from_results",
]

SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://cuship.dev/build/v1"
CHECK_PREDICATE = "https://cuship.dev/check/v1"
BENCH_PREDICATE = "https://cuship.dev/bench/v1"
LOCAL_BUILDER = "https://cuship.dev/builder/local/v1"
_JOB_KEYS = ("id", "python", "cuda", "torch", "arch", "cxx11abi", "platform", "label")


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildRun:
    """Who built, when, with what: the parts of provenance that are not in the wheel."""

    builder_id: str
    invocation_id: str | None
    started_on: str | None
    finished_on: str
    toolchain: Mapping[str, str | None] = field(default_factory=dict)


def builder_identity(environ: Mapping[str, str]) -> tuple[str, str | None]:
    """(builder id, invocation id) from the CI environment; a local builder elsewhere."""
    if environ.get("GITHUB_ACTIONS") == "true":
        server = environ.get("GITHUB_SERVER_URL", "https://github.com")
        repo = environ.get("GITHUB_REPOSITORY", "")
        workflow = environ.get("GITHUB_WORKFLOW_REF")
        builder = f"{server}/{workflow}" if workflow else f"{server}/{repo}/actions"
        run = environ.get("GITHUB_RUN_ID")
        attempt = environ.get("GITHUB_RUN_ATTEMPT", "1")
        invocation = f"{server}/{repo}/actions/runs/{run}/attempts/{attempt}" if run else None
        return builder, invocation
    if environ.get("GITLAB_CI") == "true":
        server = environ.get("CI_SERVER_URL", "https://gitlab.com")
        builder = f"{server}/{environ.get('CI_PROJECT_PATH', '')}/-/pipelines"
        return builder, environ.get("CI_JOB_URL")
    return LOCAL_BUILDER, None


def jobs_from_results(document: object) -> tuple[Mapping[str, Any], ...]:
    """Matrix entries from ``cuship matrix --format json`` or ``cuship build --json`` output.

    Build records (``{"job", "wheel", ...}``) become ``{"id", "wheel"}`` entries; matrix jobs
    are returned as they are. Anything else is an :class:`InputError`.
    """
    if isinstance(document, Mapping) and isinstance(document.get("jobs"), list):
        return tuple(j for j in document["jobs"] if isinstance(j, Mapping))
    if isinstance(document, list) and all(isinstance(r, Mapping) for r in document):
        return tuple(
            {"id": r.get("job"), "wheel": str(r.get("wheel", "")).rsplit("/", 1)[-1]}
            for r in document
            if r.get("job")
        )
    raise InputError(
        "build results must be `cuship matrix --format json` or `cuship build --json` output",
        hint="pass --results FILE written by one of those commands",
    )


def _python_of(report: WheelReport) -> str | None:
    tag = report.tags[0].split("-")[0] if report.tags else ""
    if tag.startswith("cp") and tag[2:].isdigit() and len(tag) > 3:
        return f"{tag[2]}.{tag[3:]}"
    return None


def _from_wheel(report: WheelReport) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "wheel": report.filename,
        "id": None,
        "python": _python_of(report),
        "label": report.local,
    }
    if report.local:
        try:
            variant = parse_label(report.local)
        except CushipError:
            return entry
        entry["cuda"] = None if variant.cuda is None else str(variant.cuda)
        entry["torch"] = None if variant.torch is None else str(variant.torch)
    return entry


def _matches(job: Mapping[str, Any], report: WheelReport) -> bool:
    if job.get("wheel") == report.filename:
        return True
    python_tags = {t.split("-")[0] for t in report.tags}
    return (
        canonicalize_name(str(job.get("project", ""))) == canonicalize_name(report.name)
        and str(job.get("wheel_version")) == report.version
        and job.get("python_tag") in python_tags
    )


def _entry(report: WheelReport, jobs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The matrix entry of a wheel: what its name says, overlaid with the matching job."""
    entry = _from_wheel(report)
    found = [j for j in jobs if _matches(j, report)]
    ids = {j.get("id") for j in found}
    full = [j for j in jobs if j.get("id") in ids and "python" in j]
    for job in found + full:
        entry.update({k: job[k] for k in _JOB_KEYS if job.get(k) is not None})
    return entry


def _arches(report: WheelReport) -> dict[str, Any]:
    return {
        "name": report.filename,
        "mediaType": "application/vnd.cuship.arches+json",
        "annotations": {
            "sass": list(report.sass),
            "ptx": list(report.ptx),
            "extensions": {
                x.path: {"sass": list(x.sass), "ptx": list(x.ptx)} for x in report.extensions
            },
            "bundled_cuda_libs": list(report.bundled_cuda_libs),
        },
    }


def _toolchain(versions: Mapping[str, str | None]) -> list[dict[str, Any]]:
    purl = {"torch": "pkg:pypi/torch@{}", "python": "pkg:generic/python@{}"}
    out: list[dict[str, Any]] = []
    for name, version in versions.items():
        item: dict[str, Any] = {"name": name, "annotations": {"version": version}}
        if version and name in purl:
            item["uri"] = purl[name].format(version)
        out.append(item)
    return out


def build_predicate(
    reports: Sequence[WheelReport], *, run: BuildRun, jobs: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """SLSA provenance v1 for ``reports``: one matrix entry and one arch record per wheel."""
    metadata: dict[str, Any] = {"finishedOn": run.finished_on}
    if run.started_on is not None:
        metadata["startedOn"] = run.started_on
    if run.invocation_id is not None:
        metadata["invocationId"] = run.invocation_id
    return {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {"jobs": [_entry(r, jobs) for r in reports]},
            "internalParameters": {"cuship": __version__},
            "resolvedDependencies": _toolchain(run.toolchain),
        },
        "runDetails": {
            "builder": {"id": run.builder_id},
            "metadata": metadata,
            "byproducts": [_arches(r) for r in reports],
        },
    }


def _case_verdicts(group: Mapping[str, Any]) -> list[dict[str, Any]]:
    cases = group.get("cases") or []
    return [
        {
            "case": c.get("case", {}).get("index") if isinstance(c.get("case"), Mapping) else None,
            "sizes": c.get("case", {}).get("sizes") if isinstance(c.get("case"), Mapping) else None,
            "status": c.get("status"),
            "max_abs": c.get("max_abs"),
            "max_rel": c.get("max_rel"),
        }
        for c in cases
        if isinstance(c, Mapping)
    ]


def check_predicate(
    results: Mapping[str, Any], *, environment: Mapping[str, Any]
) -> dict[str, Any]:
    """Verdicts of a ``cuship check --format json`` run, per (op, engine, dtype) and per case.

    ``environment`` is the run's own fingerprint when its document holds one, else the
    fingerprint of the machine that attests (``environment_source`` says which).
    """
    groups = results.get("groups")
    if "verdict" not in results or not isinstance(groups, list):
        raise InputError(
            "the check results hold no 'verdict' and 'groups'",
            hint="pass the file `cuship check --format json -o FILE` wrote",
        )
    own = results.get("fingerprint") or results.get("environment")
    return {
        "verdict": results["verdict"],
        "counts": results.get("counts"),
        "target": results.get("target"),
        "device": results.get("device"),
        "seed": results.get("seed"),
        "quick": results.get("quick"),
        "started": results.get("started"),
        "finished": results.get("finished"),
        "regressions": results.get("regressions", []),
        "groups": [
            {
                "op": g.get("op"),
                "engine": g.get("engine"),
                "dtype": g.get("dtype"),
                "status": g.get("status"),
                "skip_reason": g.get("skip_reason"),
                "cases": _case_verdicts(g),
            }
            for g in groups
            if isinstance(g, Mapping)
        ],
        "environment": dict(own) if isinstance(own, Mapping) else dict(environment),
        "environment_source": "results" if isinstance(own, Mapping) else "attesting machine",
        "cuship": __version__,
    }


def _bench_rows(results: Mapping[str, Any]) -> list[Any]:
    for key in ("results", "benchmarks", "cases"):
        rows = results.get(key)
        if isinstance(rows, list):
            return rows
    raise InputError(
        "the bench export holds no 'results' (or 'benchmarks') list",
        hint="pass the file `cuship bench --export json` wrote",
    )


def bench_predicate(
    results: Mapping[str, Any], *, environment: Mapping[str, Any]
) -> dict[str, Any]:
    """Verdicts and figures of a ``cuship bench --export json`` document (``cuship-bench/1``).

    Tolerant: rows are kept as they are (only mappings, with their clocks, hot timing, share of
    peak, ncu profile and notes), the verdict is the document's own (top level or under ``run``)
    or ``None``, and the environment is the document's fingerprint when it carries one. A run
    profiled with ``--profile ncu`` adds ``profile`` (the tool, its version, the metric set);
    without one the predicate is what it always was.
    """
    fmt = results.get("format")
    if not (isinstance(fmt, str) and fmt.startswith("cuship-bench/")):
        raise InputError(
            f"the bench export has format {fmt!r}, expected 'cuship-bench/1'",
            hint="pass the file `cuship bench --export json` wrote",
        )
    run = results.get("run")
    run = run if isinstance(run, Mapping) else {}  # `cuship bench --export json` nests these
    own = next(
        (
            source[k]
            for source in (results, run)
            for k in ("fingerprint", "environment", "machine")
            if isinstance(source.get(k), Mapping)
        ),
        None,
    )
    predicate = {
        "format": fmt,
        "verdict": results.get("verdict", run.get("verdict")),
        "results": [dict(row) for row in _bench_rows(results) if isinstance(row, Mapping)],
        "environment": dict(own) if own is not None else dict(environment),
        "environment_source": "results" if own is not None else "attesting machine",
        "cuship": __version__,
    }
    meta = run.get("meta")
    profile = meta.get("profile") if isinstance(meta, Mapping) else None
    if isinstance(profile, Mapping):
        predicate["profile"] = dict(profile)
    return predicate
