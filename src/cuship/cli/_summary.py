"""GitHub's job summary: what build, ship, check, index, bench and gpu-run did, as Markdown under
the job.

GitHub Actions names a file in ``GITHUB_STEP_SUMMARY`` for each step; what a step appends there
is shown on the run's page, above the logs. Each command appends one section (a heading, its
verdict line, a table of at most :data:`ROWS` rows); several cuship commands in one step give
several sections. Nothing is written outside GitHub Actions, and a summary file that cannot be
written is a warning, never the command's failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cuship.cli._console import Console, in_github_actions

if TYPE_CHECKING:
    from cuship.bench.results import BenchReport
    from cuship.builder.run.batch import Outcome
    from cuship.check.report.results import CheckReport
    from cuship.gpurun.results import GpuRunReport
    from cuship.index.simple import IndexSummary

__all__ = [
    "ROWS",
    "bench_markdown",
    "build_markdown",
    "check_markdown",
    "gpu_run_markdown",
    "index_markdown",
    "write_step_summary",
]

ROWS = 50
"""Table rows shown at most; the rest are counted in a last line."""

_LIMIT = 1 << 20  # GitHub refuses a step summary over 1 MiB


def _cell(text: object) -> str:
    return str(text).splitlines()[0].replace("|", "\\|") if str(text) else ""


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:ROWS]]
    if len(rows) > ROWS:
        lines.append(f"\n{len(rows) - ROWS} more rows not shown")
    return lines


def build_markdown(title: str, outcomes: Iterable[Outcome]) -> str:
    """One row per job: its status and its wheel, or why it did not build here."""
    rows = []
    for item in outcomes:
        wheel = item.result.wheel.name if item.result is not None else item.detail
        rows.append((item.job_id, item.status, wheel))
    counts: dict[str, int] = {}
    for _, status, _ in rows:
        counts[status] = counts.get(status, 0) + 1
    verdict = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no jobs"
    return "\n".join(
        [f"### {title}", "", verdict, "", *_table(("job", "status", "wheel / reason"), rows)]
    )


def check_markdown(report: CheckReport) -> str:
    """The verdict line, then one row per group that did not pass (all of them when they did)."""
    from cuship.check.report.render import summary_line

    groups = [g for g in report.groups if g.status != "passed"] or list(report.groups)
    rows = [(g.op, g.engine, g.dtype, g.status, g.skip_reason or "") for g in groups]
    lines = [f"### cuship check {report.target}", "", _cell(summary_line(report)), ""]
    lines += [f"- engine unavailable: {_cell(u.line())}" for u in report.unavailable]
    header = ("op", "engine", "dtype", "status", "reason")
    return "\n".join([*lines, "", *_table(header, rows)] if rows else lines)


def index_markdown(summary: IndexSummary) -> str:
    """The site, its counts, and every file left out with its reason."""
    lines = [
        f"### cuship index {summary.site}",
        "",
        f"{summary.wheels} wheels, {summary.projects} projects; "
        f"read {summary.hashed} files, {summary.cached} from cache",
    ]
    skipped = [(s.path.name, s.reason) for s in summary.skipped]
    return "\n".join([*lines, "", *_table(("left out", "reason"), skipped)] if skipped else lines)


def bench_markdown(report: BenchReport) -> str:
    """The line the command ends with, then one row per point that did not pass (errored,
    unsure, slower than the baseline, under its floor), all of them when none failed."""
    from cuship.cli._benchtable import point_row

    wrong = {id(r) for r in (*report.slower, *report.floors_missed)}
    points = [r for r in report.results if r.status != "ok" or id(r) in wrong]
    rows = []
    for result in points or report.results:
        case, params, median, _hot, throughput, _n, _clock, stop, said = point_row(result)
        rows.append((case, params, median, throughput, stop, said))
    gpu = report.fingerprint.get("gpu") or report.fingerprint.get("cpu_model")
    lines = [f"### cuship bench {report.project} on {gpu}", "", _cell(report.summary_line())]
    header = ("case", "params", "median ± noise", "throughput", "stop", "verdict")
    return "\n".join([*lines, "", *_table(header, rows)] if rows else lines)


def gpu_run_markdown(report: GpuRunReport) -> str:
    """The machine and the wheel, the run's exit, and one row per step (the install first)."""
    gpus = ", ".join(f"{g['name']} ({g['cc']})" for g in report.machine.get("gpus", ()))
    faked = " (faked)" if report.machine.get("gpu_faked") else ""
    lines = [
        f"### cuship gpu-run {report.name} on {gpus or 'no GPU'}{faked}",
        "",
        f"wheel {_cell(report.wheel.get('filename'))}: exit {report.exit_code} ({report.verdict})",
    ]
    header = ("step", "verdict", "exit", "time", "log / reason")
    return "\n".join([*lines, "", *_table(header, report.rows())])


def write_step_summary(
    console: Console, markdown: str, environ: Mapping[str, str] | None = None
) -> bool:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` under GitHub Actions; whether it did."""
    env = os.environ if environ is None else environ
    named = env.get("GITHUB_STEP_SUMMARY", "")
    if not named or not in_github_actions(env):
        return False
    target = Path(named)
    data = (markdown.rstrip("\n") + "\n\n").encode("utf-8")
    try:
        size = target.stat().st_size if target.exists() else 0
        if size + len(data) > _LIMIT:
            console.warn(f"GITHUB_STEP_SUMMARY {named!r} is near GitHub's 1 MiB: summary left out")
            return False
        with target.open("ab") as out:  # one write: GitHub reads the file after the step
            out.write(data)
    except OSError as err:
        console.warn(f"cannot append to GITHUB_STEP_SUMMARY {named!r}: {err.strerror or err}")
        return False
    return True
