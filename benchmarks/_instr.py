"""Instruction counts of whole commands under valgrind's callgrind, and the baseline they are
held to: the pure parts of instr_gate.py (parsing callgrind's totals, comparing with a
baseline, the baseline file), kept apart so that unit tests reach them without valgrind.

A count is every instruction the command's processes execute in user space: the interpreter's
start, imports, the work, forked children (one output file per process, ``%p``) and programs
they start (``--trace-children=yes``). It does not depend on the machine's load: the same
build given the same inputs executes the same instructions, give or take the little that
depends on addresses and timing (measured by ``instr_gate.py --repeat``; see MARGIN).
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MARGIN",
    "RECORD_COMMAND",
    "Baseline",
    "Verdict",
    "callgrind_argv",
    "compare",
    "environment",
    "parse_total",
    "sum_totals",
]

# A path fails when its count grows by more than this over its baseline. Counts of one build
# vary run to run by under 0.05 % (instr_gate.py --repeat 5 on every path); a change of code
# on a hot path moves them by whole percents. 5 % lets a small honest addition through and
# stops an extra pass over the wheels (see tests/integration/test_instr_gate.py).
MARGIN = 0.05
RECORD_COMMAND = "python3 benchmarks/instr_gate.py --record"


def callgrind_argv(valgrind: str, out_dir: Path, command: Sequence[str]) -> list[str]:
    """``command`` under callgrind: children followed, one output file per process in
    ``out_dir``, only the totals kept (no per-line or per-instruction data)."""
    return [
        valgrind,
        "--tool=callgrind",
        "--trace-children=yes",
        "--dump-line=no",
        "--dump-instr=no",
        "--compress-strings=no",
        "-q",
        f"--callgrind-out-file={out_dir}/callgrind.%p",
        *command,
    ]


def parse_total(text: str) -> int:
    """The instruction count (``summary:``, else ``totals:``) of one callgrind output file."""
    for key in ("summary:", "totals:"):
        for line in text.splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    raise ValueError("no summary or totals line in the callgrind output")


def sum_totals(out_dir: Path) -> tuple[int, int]:
    """The instructions of every process that wrote a file into ``out_dir``, and how many
    processes that was."""
    files = sorted(out_dir.glob("callgrind.*"))
    if not files:
        raise ValueError(f"callgrind wrote no output file into {str(out_dir)!r}")
    total = sum(parse_total(path.read_text(errors="replace")) for path in files)
    return total, len(files)


def environment() -> dict[str, str]:
    """What a count depends on besides cuship's code: the interpreter and the platform."""
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "machine": platform.machine(),
        "libc": "-".join(platform.libc_ver()),
    }


@dataclass(frozen=True, slots=True)
class Baseline:
    """Stored counts, per path, and the environment they were counted in."""

    counts: Mapping[str, int]
    environment: Mapping[str, str]
    margin: float = MARGIN

    @classmethod
    def read(cls, path: Path) -> Baseline:
        if not path.is_file():
            return cls(counts={}, environment={})
        document = json.loads(path.read_text())
        return cls(
            counts={str(k): int(v) for k, v in document["counts"].items()},
            environment={str(k): str(v) for k, v in document.get("environment", {}).items()},
            margin=float(document.get("margin", MARGIN)),
        )

    def with_counts(self, counts: Mapping[str, int], env: Mapping[str, str]) -> Baseline:
        """This baseline with ``counts`` recorded (paths not counted now keep theirs)."""
        return Baseline(counts={**self.counts, **counts}, environment=dict(env), margin=self.margin)

    def write(self, path: Path) -> None:
        document = {
            "about": (
                "Instruction counts of cuship's everyday paths under callgrind, held by "
                f"benchmarks/instr_gate.py (a path fails past +{self.margin:.0%}). "
                f"Re-record after an intended change: {RECORD_COMMAND}"
            ),
            "margin": self.margin,
            "environment": dict(self.environment),
            "counts": dict(sorted(self.counts.items())),
        }
        path.write_text(json.dumps(document, indent=2) + "\n")


@dataclass(frozen=True, slots=True)
class Verdict:
    """One path's count against its baseline."""

    path: str
    count: int
    baseline: int | None
    margin: float

    @property
    def ratio(self) -> float | None:
        return None if not self.baseline else self.count / self.baseline

    @property
    def failed(self) -> bool:
        ratio = self.ratio
        return ratio is None or ratio > 1 + self.margin

    def line(self) -> str:
        ratio = self.ratio
        if ratio is None:
            return f"{self.path}: {self.count:,} instructions, no baseline (record one)"
        verdict = "FAIL" if self.failed else "ok"
        note = ""
        if ratio < 1 - self.margin:
            note = " (below the baseline: re-record to keep the gain)"
        return (
            f"{verdict:4} {self.path}: {ratio:.3f}x its baseline "
            f"({self.count:,} instructions, baseline {self.baseline:,}){note}"
        )


def compare(
    counts: Mapping[str, int], baseline: Baseline, env: Mapping[str, str]
) -> tuple[list[Verdict], str]:
    """Each path's verdict, and the message that explains any failure: the paths and ratios,
    what differs from the environment the baseline was counted in, how to re-record."""
    verdicts = [
        Verdict(path, count, baseline.counts.get(path), baseline.margin)
        for path, count in counts.items()
    ]
    failed = [v for v in verdicts if v.failed]
    if not failed:
        return verdicts, ""
    named = ", ".join(
        f"{v.path} {v.ratio:.3f}x" if v.ratio is not None else f"{v.path} (no baseline)"
        for v in failed
    )
    lines = [f"instruction counts grew past +{baseline.margin:.0%} of the baseline: {named}"]
    differs = [
        f"{key} {baseline.environment.get(key, '?')} -> {value}"
        for key, value in env.items()
        if baseline.environment.get(key) != value
    ]
    if differs:
        lines.append("the baseline was counted elsewhere: " + "; ".join(differs))
    lines.append(
        "find the cause (an extra pass, an import at start-up); if the growth is intended, "
        f"re-record the baseline: {RECORD_COMMAND}"
    )
    return verdicts, "\n".join(lines)
