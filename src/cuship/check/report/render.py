"""Render a check report: plain text for people, JSON for machines, JUnit XML for CI reporters.

JUnit: one ``<testcase>`` per (op, engine, dtype) with ``classname`` ``cuship.check.<op>``
(``cuship.check.ptx.<op>`` in a ``--force-ptx`` run, so that a CI reading both reports keeps
them apart); a failure carries the error figures and the command that reproduces its first bad
case; a skip carries its reason. The counts on ``<testsuite>`` match its test cases. Each
suite's ``<properties>`` carry the seed, device, whether PTX JIT was forced (and what each GPU
JIT-compiled), the provenance of the project's packages and the engines that could not run.
Sanitized passes (``--sanitize``) add a suite per tool (:mod:`cuship.check.sanitize.report`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from cuship.check.case.compare import output_label
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.check.sanitize import report as sanitize_report

_FORCED = "CUDA_FORCE_PTX_JIT=1"

__all__ = [
    "context_lines",
    "failure_text",
    "render",
    "render_json",
    "render_junit",
    "render_text",
    "repro_command",
    "summary_line",
]


def repro_command(report: CheckReport, group: GroupResult, case: CaseResult) -> str:
    """The exact command that runs this one case again."""
    flags = ("--force-ptx",) if report.force_ptx else ()
    return report.case_command(group.op, group.engine, group.dtype, case.case.index, flags)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def failure_text(report: CheckReport, group: GroupResult) -> str:
    """What went wrong in a group: counts, error figures, the first bad case and how to rerun it."""
    bad = group.bad_cases
    first = bad[0]
    lines = [
        f"{group.key}: {len(bad)} of {len(group.cases)} cases {group.status} "
        f"(rtol={group.rtol:g}, atol={group.atol:g}); max abs error {_figure(group.max_abs)}, "
        f"max rel error {_figure(group.max_rel)}, {group.mismatches} mismatched elements",
        f"first bad case {first.case.index} ({first.case.label()}, seed {first.case.seed}):",
    ]
    if first.worst_index is not None and first.mismatches:
        lines.append(
            f"  {first.mismatches} of {first.total} elements differ; worst at "
            + (
                f"{output_label(first.output)} "
                if first.output and first.output != "return"
                else ""
            )
            + f"index {list(first.worst_index)}: got {first.worst_actual!r}, expected {first.worst_expected!r}"
        )
    if first.message:
        lines.extend("  " + line for line in first.message.splitlines())
    lines.append(f"reproduce: {repro_command(report, group, first)}")
    return "\n".join(lines)


def _skip_text(report: CheckReport, group: GroupResult) -> str:
    if report.unavailable_for(group) is not None:
        return f"  engine {group.engine} unavailable (see below)"
    return f"  {group.skip_reason}" if group.skip_reason else ""


def context_lines(report: CheckReport) -> list[str]:
    """Whether the run forced PTX JIT (and what each GPU JIT-compiled), where the project's
    packages came from, and each engine that could not run (once)."""
    lines = []
    if report.force_ptx:
        lines.append(f"forced PTX JIT ({_FORCED}): the cuda engine ran the extension's PTX")
        lines += [f"  {line}" for line in report.jit]
    if report.provenance is not None:
        lines += [f"package: {line}" for line in report.provenance.lines()]
    lines += [u.line() for u in report.unavailable]
    return lines


def render_text(report: CheckReport) -> str:
    """A package under check that failed to import (first: every case fails after it), a table
    of groups, where the packages came from, unavailable engines, each failure in full, then
    the verdict line."""
    failures = report.provenance.import_failures() if report.provenance is not None else ()
    header = f"{'op':<18} {'engine':<17} {'dtype':<9} {'status':<8} {'cases':>5} {'max abs':>9} {'max rel':>9} {'time':>7}"
    rows = [*failures, *([""] if failures else []), header, "-" * len(header)]
    for g in report.groups:
        cases = str(len(g.cases)) if g.cases else "-"
        rows.append(
            f"{g.op:<18} {g.engine:<17} {g.dtype:<9} {g.status:<8} {cases:>5} "
            f"{_figure(g.max_abs):>9} {_figure(g.max_rel):>9} {g.wall_s:>6.2f}s"
            + _skip_text(report, g)
        )
    context = context_lines(report)
    if context:
        rows += ["", *context]
    for g in report.groups:
        if g.status in ("failed", "error"):
            rows += ["", failure_text(report, g)]
    for r in report.regressions:
        rows += ["", f"regression {r.key}: {r.message}"]
    rows += sanitize_report.text_lines(report)
    rows += ["", summary_line(report)]
    return "\n".join(rows) + "\n"


def summary_line(report: CheckReport) -> str:
    counts = ", ".join(
        f"{report.count(s)} {s}"
        for s in ("passed", "failed", "error", "skipped")
        if report.count(s)
    )
    extra = f", {len(report.regressions)} regressions" if report.regressions else ""
    if report.unavailable:
        extra += f"; engines unavailable: {', '.join(u.engine for u in report.unavailable)}"
    extra += sanitize_report.summary_part(report)
    if report.force_ptx:
        extra += f"; forced PTX JIT ({_FORCED})"
    took = report.finished - report.started
    return f"{report.verdict}: {counts or 'nothing ran'}{extra} (seed {report.seed}, {took:.1f} s)"


def render_json(report: CheckReport) -> str:
    return json.dumps(report.to_json(), indent=2) + "\n"


def _testcase(suite: ET.Element, report: CheckReport, group: GroupResult) -> None:
    # a forced-PTX run's cases are not the plain run's, in a CI that reads both reports
    prefix = "cuship.check.ptx" if report.force_ptx else "cuship.check"
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"{prefix}.{group.op}",
        name=f"{group.op}[{group.engine}-{group.dtype}]",
        time=f"{group.wall_s:.3f}",
    )
    status = group.status
    if status == "skipped":
        ET.SubElement(case, "skipped", message=group.skip_reason or "no cases")
    elif status in ("failed", "error"):
        first = group.bad_cases[0]
        message = (
            f"max abs error {_figure(group.max_abs)}, max rel error {_figure(group.max_rel)}, "
            f"{group.mismatches} mismatched; reproduce: {repro_command(report, group, first)}"
        )
        tag = "failure" if status == "failed" else "error"
        node = ET.SubElement(case, tag, message=message, type=f"cuship.check.{status}")
        node.text = failure_text(report, group)


def _properties(suite: ET.Element, report: CheckReport) -> None:
    """Run facts as ``<properties>``: seed, device, quick, each traced package
    (``provenance.<name>``, or ``provenance`` with the note) and each unavailable engine."""
    props = ET.SubElement(suite, "properties")
    facts: list[tuple[str, object]] = [
        ("seed", report.seed),
        ("device", report.device),
        ("quick", report.quick),
        ("force_ptx", report.force_ptx),
    ]
    facts += [(f"jit.{i}", line) for i, line in enumerate(report.jit)]
    if report.provenance is not None:
        facts += [(f"provenance.{p.name}", p.describe()) for p in report.provenance.packages]
        if report.provenance.note:
            facts.append(("provenance", report.provenance.note))
    facts += [(f"unavailable.{u.engine}", f"{u.error}; fix: {u.fix}") for u in report.unavailable]
    for key, value in facts:
        ET.SubElement(props, "property", name=key, value=str(value))


def _junit_suite(report: CheckReport, groups: Sequence[GroupResult], name: str) -> ET.Element:
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(groups)),
        failures=str(sum(g.status == "failed" for g in groups)),
        errors=str(sum(g.status == "error" for g in groups)),
        skipped=str(sum(g.status == "skipped" for g in groups)),
        time=f"{sum(g.wall_s for g in groups):.3f}",
    )
    _properties(suite, report)
    for group in groups:
        _testcase(suite, report, group)
    return suite


def render_junit(report: CheckReport) -> str:
    """JUnit XML; regressions become failed test cases of their own suite."""
    name = "cuship check --force-ptx" if report.force_ptx else "cuship check"
    root = ET.Element("testsuites", name=name)
    root.append(_junit_suite(report, report.groups, name))
    if report.regressions:
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{name} regressions",
            tests=str(len(report.regressions)),
            failures=str(len(report.regressions)),
            errors="0",
            skipped="0",
        )
        _properties(suite, report)
        for reg in report.regressions:
            case = ET.SubElement(
                suite, "testcase", classname="cuship.check.regression", name=reg.key
            )
            ET.SubElement(case, "failure", message=reg.message, type="cuship.check.regression")
    root.extend(sanitize_report.junit_suites(report, _properties))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def render(report: CheckReport, fmt: str) -> str:
    return {"text": render_text, "json": render_json, "junit": render_junit}[fmt](report)
