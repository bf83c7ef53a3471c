"""The sanitized passes in a check report: a section per tool in the text, a JUnit suite per tool,
each failed case with the tool's own lines and the command that runs it again, and the cost
(sanitized against plain time of the same cases).

JUnit: suite ``cuship check sanitize <tool>``, one ``<testcase>`` per op/engine/dtype with
``classname`` ``cuship.check.sanitize.<tool>.<op>``, plus ``unattributed`` when findings
belong to no case, or a skipped ``nothing to sanitize`` when no GPU case ran.
"""

from __future__ import annotations

import shlex
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence

from cuship.check.report.results import CheckReport
from cuship.check.sanitize.results import SanitizedCase, SanitizerRun, StrayFindings, Summary

__all__ = [
    "cost_line",
    "failure_texts",
    "junit_suites",
    "repro_command",
    "summary_part",
    "text_lines",
]


def repro_command(report: CheckReport, tool: str, case: SanitizedCase) -> str:
    """The command that runs this one case under ``tool`` again."""
    flags = ("--sanitize", tool)
    return report.case_command(case.op, case.engine, case.dtype, case.case.index, flags)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _found(summary: Summary) -> str:
    """``2 findings in oob_write: Invalid __global__ write of size 4 bytes (+1 other kind)``."""
    kernels = f" in {', '.join(summary.kernels)}" if summary.kernels else ""
    kinds = summary.kinds[0] if summary.kinds else "?"
    if len(summary.kinds) > 1:
        kinds += f" (+{_plural(len(summary.kinds) - 1, 'other kind')})"
    return f"{_plural(summary.findings, 'finding')}{kernels}: {kinds}"


def case_text(report: CheckReport, run: SanitizerRun, case: SanitizedCase) -> str:
    """One bad sanitized case: what the tool said (its own lines), the case's outcome, the
    command that reproduces it."""
    head = f"sanitize {run.tool}: {case.key} case {case.case.index} ({case.case.label()}, "
    head += f"seed {case.case.seed}): "
    lines = [head + (_found(case.report) if case.status == "failed" else "not checked")]
    lines += [f"  {line}" for line in case.report.lines]
    if case.message:
        message = case.message.splitlines()
        if case.status == "failed":
            lines.append(f"  the case under {run.tool}: {message[0]}")
        else:
            lines += [f"  {line}" for line in message[:8]]
    lines.append(f"reproduce: {repro_command(report, run.tool, case)}")
    return "\n".join(lines)


def stray_text(run: SanitizerRun, stray: StrayFindings) -> str:
    lines = [f"sanitize {run.tool}: {_found(stray.report)}, {stray.where}, in no case"]
    return "\n".join(lines + [f"  {line}" for line in stray.report.lines])


def _unchecked_text(run: SanitizerRun, cases: Sequence[SanitizedCase]) -> str:
    """Cases that were never run for one reason (the tool could not start the worker), once."""
    keys = ", ".join(dict.fromkeys(c.key for c in cases))
    lines = [f"sanitize {run.tool}: {len(cases)} cases not checked ({keys})"]
    return "\n".join(lines + [f"  {line}" for line in (cases[0].message or "").splitlines()[:8]])


def _run_texts(report: CheckReport, run: SanitizerRun) -> list[str]:
    texts = []
    unchecked: dict[str | None, list[SanitizedCase]] = {}
    for case in run.bad_cases:
        if case.status == "error" and not case.report.findings:
            unchecked.setdefault(case.message, []).append(case)
    for case in run.bad_cases:
        same = unchecked.get(case.message, []) if case.status == "error" else []
        if len(same) < 2 or case not in same:
            texts.append(case_text(report, run, case))
        elif case is same[0]:
            texts.append(_unchecked_text(run, same))
    return texts + [stray_text(run, stray) for stray in run.unattributed]


def failure_texts(report: CheckReport) -> list[str]:
    """Every sanitizer failure in full: bad cases (those not checked for one reason, once),
    then findings of no case."""
    return [text for run in report.sanitize for text in _run_texts(report, run)]


def cost_line(run: SanitizerRun) -> str:
    """One tool's pass in a line: cases, failures, time sanitized vs plain."""
    if run.note is not None and not run.cases:
        return f"sanitize {run.tool}: {run.note}"
    bad = len(run.bad_cases)
    slowdown = f" ({run.slowdown:.1f}x)" if run.slowdown is not None else ""
    probes = ""
    if run.probes:
        lookups = _plural(run.probes, "failed driver entry-point lookup")
        probes = f"; {lookups} (cuGetProcAddress) ignored"
    return (
        f"sanitize {run.tool}: {len(run.cases)} cases, {bad} bad, {len(run.unattributed)} "
        f"unattributed; {run.cases_s:.2f} s sanitized vs {run.plain_s:.2f} s plain{slowdown}, "
        f"{run.wall_s:.1f} s in all with {_plural(run.workers, 'worker')}{probes}"
    )


def text_lines(report: CheckReport) -> list[str]:
    """The text report's sanitizer section: a cost line per tool, then each failure."""
    if not report.sanitize:
        return []
    lines = ["", *(cost_line(run) for run in report.sanitize)]
    for text in failure_texts(report):
        lines += ["", text]
    return lines


def summary_part(report: CheckReport) -> str:
    """For the summary line: each tool's state."""
    if not report.sanitize:
        return ""
    states = []
    for run in report.sanitize:
        bad = len(run.bad_cases) + len(run.unattributed)
        states.append(f"{run.tool} {bad} bad" if bad else f"{run.tool} clean")
    return "; sanitize: " + ", ".join(states)


def _group_case(suite: ET.Element, report: CheckReport, run: SanitizerRun, cases: Sequence[SanitizedCase]) -> None:  # fmt: skip
    first = cases[0]
    node = ET.SubElement(
        suite,
        "testcase",
        classname=f"cuship.check.sanitize.{run.tool}.{first.op}",
        name=f"{first.op}[{first.engine}-{first.dtype}]",
        time=f"{sum(c.wall_s for c in cases):.3f}",
    )
    failed = [c for c in cases if c.status == "failed"]
    bad = failed or [c for c in cases if c.status == "error"]
    if not bad:
        return
    tag = "failure" if failed else "error"
    message = f"{run.tool}: {len(bad)} of {len(cases)} cases; "
    message += (_found(bad[0].report) if failed else "not checked") + "; reproduce: "
    message += repro_command(report, run.tool, bad[0])
    element = ET.SubElement(node, tag, message=message, type=f"cuship.check.sanitize.{run.tool}")
    element.text = "\n\n".join(case_text(report, run, c) for c in bad)


def _suite(
    report: CheckReport,
    run: SanitizerRun,
    properties: Callable[[ET.Element, CheckReport], None],
) -> ET.Element:
    groups = run.groups()
    statuses = [
        "failed" if any(c.status == "failed" for c in g) else
        "error" if any(c.status == "error" for c in g) else "passed"
        for g in groups.values()
    ]  # fmt: skip
    failures = statuses.count("failed") + (1 if run.unattributed else 0)
    suite = ET.Element(
        "testsuite",
        name=f"cuship check sanitize {run.tool}",
        tests=str(len(groups) + (1 if run.unattributed or not groups else 0)),
        failures=str(failures),
        errors=str(statuses.count("error")),
        skipped="0" if groups else "1",
        time=f"{run.cases_s:.3f}",
    )
    properties(suite, report)
    props = suite.find("properties")
    assert props is not None
    for key, value in (("sanitize.command", shlex.join(run.command)), ("sanitize.cost", cost_line(run))):  # fmt: skip
        ET.SubElement(props, "property", name=key, value=value)
    for cases in groups.values():
        _group_case(suite, report, run, cases)
    if run.unattributed:
        node = ET.SubElement(
            suite, "testcase", classname=f"cuship.check.sanitize.{run.tool}", name="unattributed"
        )
        failure = ET.SubElement(
            node,
            "failure",
            message=f"{run.tool}: findings in no case ({run.unattributed[0].where})",
            type=f"cuship.check.sanitize.{run.tool}",
        )
        failure.text = "\n\n".join(stray_text(run, s) for s in run.unattributed)
    if not groups:
        node = ET.SubElement(
            suite, "testcase", classname=f"cuship.check.sanitize.{run.tool}", name="nothing to sanitize"
        )  # fmt: skip
        ET.SubElement(node, "skipped", message=run.note or "no cases")
    return suite


def junit_suites(
    report: CheckReport, properties: Callable[[ET.Element, CheckReport], None]
) -> list[ET.Element]:
    """A suite per tool; ``properties`` adds the run's ``<properties>`` to a suite."""
    return [_suite(report, run, properties) for run in report.sanitize]
