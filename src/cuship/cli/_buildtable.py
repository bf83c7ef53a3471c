"""The table ``cuship build`` and ``cuship ship`` print after building."""

from __future__ import annotations

from cuship._format import size_text
from cuship.arch import sm_key
from cuship.builder.run.batch import Outcome
from cuship.builder.run.execute import JobResult
from cuship.cli._console import Console

__all__ = ["python_label", "render_build_summary"]


def python_label(result: JobResult) -> str:
    """``3.12.1 pyenv``: the interpreter's version and where cuship found it."""
    import platform

    if result.python is None:
        return f"{platform.python_version()} running"
    return f"{result.python.full} {result.python.source}"


def render_build_summary(
    console: Console, outcomes: tuple[Outcome, ...], stats: dict[str, int] | None
) -> None:
    """The build table: one row per job built or failed, then the jobs that need another runner."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="cuship build")
    for column in ("job", "status", "wheel / reason", "python", "size", "SASS", "PTX", "smoke"):
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
            smoke = item.result.smoke.summary().splitlines() if item.result.smoke else []
            row += [
                python_label(item.result),
                size_text(item.result.report.size),
                ",".join(sorted({sm for x in ext for sm in x.sass}, key=sm_key)),
                ",".join(sorted({sm for x in ext for sm in x.ptx}, key=sm_key)),
                escape(smoke[-1]) if smoke else "",
            ]
        table.add_row(*row)
    console.out.print(table)
    for item in outcomes:
        tested = item.result.smoke if item.result else None
        if tested is not None and tested.note:
            console.out.print(
                f"smoke test of {item.job_id}: {tested.note}", markup=False, soft_wrap=True
            )
    for reason, count in sorted(elsewhere.items()):
        console.out.print(  # whole: it names a container image and the option to use it
            f"[yellow]{count} jobs need another runner[/]: {escape(reason)}",
            highlight=False,
            soft_wrap=True,
        )
    if stats is not None:
        from cuship.builder.host.tools import sccache_line

        console.out.print(sccache_line(stats), markup=False, highlight=False)
