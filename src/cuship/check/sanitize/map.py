"""Which check case each compute-sanitizer report belongs to: one stream, cut at markers.

A sanitized pass writes one stream per tool: compute-sanitizer's log (``--log-file``, a FIFO the
parent reads) and, into the same FIFO, marker lines. FIFO writes have no file offset, so lines
from both writers arrive in the order they were written. The markers:

- ``ready W`` (the worker W loaded the check modules), ``prepared W ENGINE`` (it imported an
  engine's modules), ``case TOKEN`` (a case ended): written by the worker, after synchronizing
  the device (``case TOKEN`` by the parent instead when the worker died in the case, once its
  compute-sanitizer process has exited);
- ``exit W``: written by the parent once worker W's compute-sanitizer process has exited (its
  last words: leftovers of a broken context, its ERROR SUMMARY).

What comes before ``case TOKEN`` (since the previous marker) belongs to that case. What comes
before ``exit W`` belongs to W's last case when that case had findings (memcheck's "Program hit
cudaErrorLaunchFailure" at teardown, after an out-of-bounds access broke the context), else it
is unattributed, as is anything before ``ready``/``prepared`` or after the last marker. An
unattributed finding still fails the run.

What the cut rests on: compute-sanitizer has written a kernel's report to its log before the
synchronizing call after that kernel returns in the worker. On an H100 (compute-sanitizer
2025.3.1, driver 580) it had: the planted Numba kernels' reports (out-of-bounds write, shared
race, uninitialised read) each landed in its own case, the clean kernel after them in none, and
nothing was unattributed (tests/integration/test_check_sanitize.py, the GPU test); so it had on
an H200 (driver 580, numba-cuda 0.30.4) on 2026-11-27. Were a report written later (buffered, or
by the front-end process after the marker), it would land in the next case's segment or after
the last marker (unattributed, still a failure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cuship.check.sanitize.parse import Finding, SanitizerReport, parse

__all__ = ["MARK", "Attribution", "Segment", "Stray", "attribute", "marker", "segments"]

MARK = "==cuship-sanitize=="


def marker(event: str, *fields: str) -> str:
    """One marker line (with its newline)."""
    return " ".join((MARK, event, *fields)) + "\n"


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """The stream's lines before one marker (``event`` "tail": after the last one)."""

    event: str  # "ready", "prepared", "case", "exit" or "tail"
    fields: tuple[str, ...]
    text: str

    @property
    def label(self) -> str:
        return " ".join(self.fields)


def segments(text: str) -> tuple[Segment, ...]:
    """Cut a stream at its markers."""
    found: list[Segment] = []
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(MARK + " "):
            event, *fields = line[len(MARK) :].split()
            found.append(Segment(event=event, fields=tuple(fields), text="".join(lines)))
            lines = []
        else:
            lines.append(line)
    found.append(Segment(event="tail", fields=(), text="".join(lines)))
    return tuple(found)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stray:
    """Findings that belong to no case: where in the run they were reported, and what."""

    where: str
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribution:
    """The findings per case token, those of no case, and the tool's own totals."""

    cases: Mapping[str, tuple[Finding, ...]]
    unattributed: tuple[Stray, ...]
    errors: int  # the sum of the ERROR SUMMARY totals of the sanitizer processes
    not_printed: int
    probes: int = 0  # failed driver entry-point lookups (in ``errors``; no case's findings)


def _where(segment: Segment, last_case: str | None) -> str:
    if segment.event == "ready":
        return f"starting worker {segment.label}"
    if segment.event == "prepared":
        worker, *engine = segment.fields
        return f"importing engine {' '.join(engine)} in worker {worker}"
    if segment.event == "exit":
        after = f" (after case {last_case})" if last_case is not None else ""
        return f"at the exit of worker {segment.label}{after}"
    return "after the last marker"


def _summary_check(found: Sequence[Finding], errors: int, not_printed: int) -> tuple[Stray, ...]:
    """The tool counted errors the parser read none of (a format it does not know): say so."""
    if errors > 0 and not found:
        line = f"{errors} errors in the ERROR SUMMARY, none of them read from the report"
        finding = Finding(kind=line, lines=(line,))
        return (Stray(where="in the summaries", findings=(finding,)),)
    return ()


def attribute(text: str, tokens: Sequence[str] = ()) -> Attribution:
    """Map a recorded stream to cases: ``tokens`` are the cases' markers, in the order they ran
    (each gets an entry, empty when clean)."""
    cases: dict[str, tuple[Finding, ...]] = {token: () for token in tokens}
    stray: list[Stray] = []
    errors = not_printed = probes = 0
    last_case: str | None = None
    every: list[Finding] = []
    for segment in segments(text):
        report: SanitizerReport = parse(segment.text)
        errors += report.errors or 0
        not_printed += report.not_printed
        probes += report.probes
        every.extend(report.findings)
        if segment.event == "case":
            last_case = segment.label
            cases[last_case] = cases.get(last_case, ()) + report.findings
        elif segment.event == "exit" and last_case is not None and cases.get(last_case):
            cases[last_case] = cases[last_case] + report.findings
        elif report.findings:
            stray.append(Stray(where=_where(segment, last_case), findings=report.findings))
        if segment.event == "exit":
            last_case = None
    stray.extend(_summary_check(every, errors - probes, not_printed))
    return Attribution(
        cases=cases,
        unattributed=tuple(stray),
        errors=errors,
        not_printed=not_printed,
        probes=probes,
    )
