"""The table ``cuship build`` and ``cuship ship`` print after building."""

from __future__ import annotations

from cuship.builder.batch import Outcome
from cuship.cli._console import Console
from cuship.wheel.audit import sm_key

__all__ = ["render_build_summary"]


def render_build_summary(
    console: Console, outcomes: tuple[Outcome, ...], stats: dict[str, int] | None
) -> None:
    """The build table: one row per job built or failed, then the jobs that need another runner."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="cuship build")
    for column in ("job", "status", "wheel / reason", "size", "SASS", "PTX", "smoke"):
        table.add_column(column)
    colours = {"built": "green", "needs-runner": "yellow", "failed": "red", "collapsed": "cyan"}
    elsewhere: dict[str, int] = {}
    for item in outcomes:
        if item.status == "needs-runner":
            elsewhere[item.detail] = elsewhere.get(item.detail, 0) + 1
            continue
        row = [
            escape(item.job_id),
            f"[{colours[item.status]}]{item.status}[/]",
            escape(item.detail.splitlines()[0]),
        ]
        if item.result is not None:
            ext = item.result.report.extensions
            row += [
                f"{item.result.report.size / 1024:.0f} KiB",
                ",".join(sorted({sm for x in ext for sm in x.sass}, key=sm_key)),
                ",".join(sorted({sm for x in ext for sm in x.ptx}, key=sm_key)),
                (item.result.smoke or "").splitlines()[-1] if item.result.smoke else "",
            ]
        table.add_row(*row)
    console.out.print(table)
    for reason, count in sorted(elsewhere.items()):
        console.out.print(
            f"[yellow]{count} jobs need another runner[/]: {escape(reason)}", highlight=False
        )
    if stats is not None:
        console.out.print(
            f"sccache: {stats['hits']} hits, {stats['misses']} misses of {stats['requests']} requests"
        )
