"""Reading compute-sanitizer's text report: each error with its kernel, source line and thread,
and the tool's own totals.

compute-sanitizer prefixes every line it writes with ``=========``; a record starts one space
after the prefix and its details are indented further. What the program under test prints
itself has no prefix and is ignored here. racecheck and initcheck exit 0 even when they report
(without ``--error-exitcode``), so a run is judged by this report, never by the exit code.
Recorded outputs of the three tools over planted bugs, taken on an H100, are the fixtures
(tests/fixtures/h100/). ``cuship check --sanitize`` runs the tool and maps the findings back
to check cases (:mod:`cuship.check.sanitize.run`, :mod:`cuship.check.sanitize.map`).

Not findings: a failed ``cuGetProcAddress`` (a library asking the driver for an entry point it may
lack, and carrying on without it). numba-cuda's bindings made 34 such calls as they started
under memcheck on the H100 (driver 580), each reported as "Program hit CUDA_ERROR_INVALID_VALUE
... on CUDA API call to cuGetProcAddress_v2"; they are counted (``probes``), never failed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Finding", "SanitizerReport", "parse"]

_PREFIX = "========="
_PROBE = re.compile(
    r"^Program hit \S+ \(error \d+\) .* on CUDA API call to cuGetProcAddress\w*\.?$"
)
_ABI = re.compile(
    r"\[abi:[^\]]*\]$"
)  # numba-cuda's kernels: planted_kernels::oob_write[abi:v1,...]
# the namespace newer numba-cuda releases put its kernels in: cudapy::planted_kernels::oob_write
_NUMBA_NAMESPACE = "cudapy::"
_NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "Target application")
# " in FILE:LINE" only for code built with line info (nvcc -lineinfo; Numba's kernels have none)
_AT = re.compile(r"\bat (?P<kernel>.+?)\+0x[0-9a-fA-F]+(?: in (?P<where>\S+))?(?=\s|$)", re.M)
_BY = re.compile(r"by thread \((?P<thread>[\d,]+)\) in block \((?P<block>[\d,]+)\)")
_HAZARDS = re.compile(r"\[(?P<count>\d+) hazards?\]")
_ERRORS = re.compile(r"ERROR SUMMARY: (?P<count>\d+) errors?$")
_NOT_PRINTED = re.compile(r"ERROR SUMMARY: (?P<count>\d+) errors? were not printed")
_RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY: (?P<hazards>\d+) hazards? displayed "
    r"\((?P<errors>\d+) errors?, (?P<warnings>\d+) warnings?\)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One reported error: its first line, where it happened (device code, when it was there),
    and the sanitizer's own lines for it."""

    kind: str  # "Invalid __global__ write of size 4 bytes", "Error: Race reported between ..."
    lines: tuple[str, ...]
    kernel: str | None = None  # "oob_write(float *, int)"; None for a failed CUDA API call
    where: str | None = None  # "planted.cu:8" (needs -lineinfo), else the binary's name
    thread: str | None = None  # "232,0,0"
    block: str | None = None
    hazards: int | None = None  # racecheck: hazards behind this report

    @property
    def kernel_name(self) -> str | None:
        """The kernel without its parameter list (``oob_write``), or a Numba kernel's module
        and function without its ABI tag and numba-cuda's ``cudapy::`` namespace (which some
        releases add): ``planted_kernels::oob_write`` whichever numba-cuda compiled it."""
        if self.kernel is None:
            return None
        name = _ABI.sub("", self.kernel.partition("(")[0].strip())
        return name.removeprefix(_NUMBA_NAMESPACE)

    @property
    def probe(self) -> bool:
        """A failed lookup of a driver entry point: the caller's question, not an error."""
        return _PROBE.match(self.kind) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class SanitizerReport:
    """A whole report: the findings printed, and the totals the tool gave."""

    findings: tuple[Finding, ...]
    errors: int | None  # "ERROR SUMMARY: N errors", or racecheck's "(N errors, ...)"
    warnings: int = 0
    not_printed: int = 0  # errors past --print-limit
    probes: int = 0  # failed driver entry-point lookups: in ``errors``, not in ``findings``

    @property
    def clean(self) -> bool:
        """No error reported but entry-point lookups: a summary of those and nothing printed."""
        return self.errors is not None and self.errors <= self.probes and not self.findings

    def kernels(self) -> tuple[str, ...]:
        """The kernels the findings name, in order of first appearance."""
        names = (f.kernel_name for f in self.findings)
        return tuple(dict.fromkeys(n for n in names if n is not None))


def _records(text: str) -> list[list[str]]:
    """The prefixed lines grouped into records: a line one space in starts one."""
    records: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        body = raw[len(_PREFIX) :]
        line = body.strip()
        if not line:
            continue
        if body.startswith(" ") and not body.startswith("  "):
            records.append([line])
        elif records:
            records[-1].append(line)
    return records


def _finding(lines: list[str]) -> Finding:
    joined = "\n".join(lines)
    at, by, hazards = _AT.search(joined), _BY.search(joined), _HAZARDS.search(joined)
    return Finding(
        kind=lines[0],
        lines=tuple(lines),
        kernel=at["kernel"] if at else None,
        where=at["where"] if at else None,
        thread=by["thread"] if by else None,
        block=by["block"] if by else None,
        hazards=int(hazards["count"]) if hazards else None,
    )


def parse(text: str) -> SanitizerReport:
    """Read one compute-sanitizer run's output (memcheck, racecheck, initcheck or synccheck)."""
    findings: list[Finding] = []
    errors: int | None = None
    warnings = not_printed = probes = 0
    for record in _records(text):
        head = record[0]
        if (match := _NOT_PRINTED.search(head)) is not None:
            not_printed = int(match["count"])
        elif (match := _ERRORS.search(head)) is not None:
            errors = int(match["count"])
        elif (match := _RACE_SUMMARY.search(head)) is not None:
            errors, warnings = int(match["errors"]), int(match["warnings"])
        elif not head.startswith(_NOT_FINDINGS):
            found = _finding(record)
            if found.probe:
                probes += 1
            else:
                findings.append(found)
    return SanitizerReport(
        findings=tuple(findings),
        errors=errors,
        warnings=warnings,
        not_printed=not_printed,
        probes=probes,
    )
