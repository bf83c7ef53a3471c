"""``cuship bench``: time the benchmark cases of a project, gate them, keep every sample.

``cuship bench [PATH] …`` runs benchmarks (the ``run`` subcommand, the default);
``cuship bench history …`` (module ``cuship.cli.bench_history``) reads the stored history.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import click

from cuship.bench.request import DEFAULT_OUTPUT
from cuship.cli._benchtable import COLUMNS, NCU_COLUMNS, point_row
from cuship.cli._common import exit_with, make_console, verbose_option

_SUBCOMMANDS = {"run": "Run the benchmarks (the default).", "history": "Stored bench history."}


class BenchGroup(click.Group):
    """A group whose first token is a PATH unless it names a subcommand: ``cuship bench DIR``
    means ``cuship bench run DIR``; ``history`` loads lazily from ``cuship.cli.bench_history``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "run":
            return run
        if cmd_name != "history":
            return None
        try:
            module = importlib.import_module("cuship.cli.bench_history")
        except ModuleNotFoundError:
            return None
        found: click.Command = module.command
        return found

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in _SUBCOMMANDS and args[0] not in ("-h", "--help")):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("bench", cls=BenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
def command() -> None:
    """Time benchmark cases (default: `cuship bench [PATH] …`), or read their history."""


def _render(console: Any, report: Any) -> None:
    from rich.table import Table

    fp = report.fingerprint
    title = f"cuship bench: {report.project} on {fp.get('gpu') or fp.get('cpu_model')}"
    table = Table(title=title)
    profiled = report.profile is not None
    for column in COLUMNS + (NCU_COLUMNS if profiled else ()):
        table.add_column(column)
    for result in report.results:
        table.add_row(*point_row(result, profiled))
    console.out.print(table)
    notes = [f"{r.key}: {note}" for r in report.results for note in r.notes()]
    if notes:
        console.out.print("\n".join(["notes:", *(f"  {n}" for n in notes)]), markup=False)
    if report.provenance is not None:
        lines = [f"package: {line}" for line in report.provenance.lines()]
        console.out.print("\n".join(lines), markup=False)


def _request(path: Path, options: dict[str, Any]) -> Any:
    from cuship.bench.request import BenchFlags, bench_request

    left_out = ("as_json", "export")
    chosen = {k: v for k, v in options.items() if k not in left_out}
    return bench_request(path, BenchFlags(**{**chosen, "burn_in": bool(options["burn_in"])}))


_pos = click.FloatRange(min=0, min_open=True)


@click.command("run")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--case", "cases", multiple=True, help="Only this case (name or key; repeatable).")
@click.option("--seeds", type=click.IntRange(min=1), help="Fixed protocol: input seeds.")
@click.option("--repeats", type=click.IntRange(min=1), help="Fixed protocol: samples per seed.")
@click.option(
    "--timer",
    type=click.Choice(["auto", "cuda", "wall", "instructions"]),
    default="auto",
    show_default=True,
)
@click.option("--min-time", type=_pos, help="Seconds sampled per point at least ([bench]).")
@click.option("--timeout", type=_pos, help="Seconds per point at most ([bench]).")
@click.option("--noise", type=_pos, help="Relative noise target, 0.005 = 0.5 % ([bench]).")
@click.option("--baseline", metavar="REF", help="A stored run id, 'latest', or an exported JSON.")
@click.option(
    "--drop-throttled",
    is_flag=True,
    help="Leave samples under 0.9 × max SM clock out of the statistics ([bench]).",
)
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 on a clear SLOWER verdict.")
@click.option("--allow-cross-machine", is_flag=True, help="Compare with another machine's run.")
@click.option("--assert-floors", is_flag=True, help="Exit 1 when a [bench.floors] floor is missed.")
@click.option(
    "--compare-with",
    type=click.Path(path_type=Path, exists=True),
    help="Interleave A/B samples with the same cases of this project or module.",
)
@click.option(
    "--interleave", is_flag=True, help="Spell out A/B interleaving (with --compare-with)."
)
@click.option("--burn-in", "burn_in", metavar="DUR", help="Leak hunt: repeat one case (90s, 1h).")
@click.option("--export", "export", type=click.Choice(["csv", "json"]), help="Write the results.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_OUTPUT,
    show_default=True,
    help="Directory for --export (and, under ncu/, the reports of --ncu-set full).",
)
@click.option(
    "--profile",
    type=click.Choice(["ncu"]),
    help="After every point is timed, profile one call of each with Nsight Compute: kernel "
    "time, DRAM throughput and % of peak, achieved occupancy, SM throughput.",
)
@click.option(
    "--ncu-set",
    type=click.Choice(["basic", "full"]),
    help="basic (default): those metrics only; full: ncu --set full, each .ncu-rep kept.",
)
@click.option(
    "--ncu-reports",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep each point's .ncu-rep here (default with --ncu-set full: OUTPUT/ncu).",
)
@click.option("--label", help="A label stored with the run (e.g. a git describe).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@click.option("--no-store", is_flag=True, help="Do not record this run in the results store.")
@click.option(
    "--installed",
    is_flag=True,
    help="Import the project's package as installed (a wheel under test): [bench] pythonpath "
    "directories holding it are left off sys.path, and importing it from elsewhere fails.",
)
@verbose_option
def run(path: Path, **options: Any) -> None:
    """Time the benchmark cases of the project at PATH (or of one benchmark module .py)."""
    console = make_console(bool(options.pop("verbose")))
    request = _request(path, options)
    if options["burn_in"]:
        _burn_in(console, request, options)
        return
    from cuship.bench.session import run_bench
    from cuship.cli._progress import progress_display

    with progress_display(console, as_json=bool(options["as_json"])) as emit:
        report = run_bench(request, environ=os.environ, emit=emit)
    if options["as_json"]:
        from cuship.bench.results import to_json

        console.print_json(to_json(report))
    else:
        _render(console, report)
    for result in report.errored:
        console.error(f"{result.key} errored: {result.error}")
    for line in report.profile_errors():
        console.error(line)
    if options["export"]:
        from cuship.bench.results import export

        csv_too = options["export"] == "csv"
        for written in export(report, options["output"], csv_too=csv_too):
            console.err.print(f"wrote {written}", markup=False)
    if report.unasserted:
        from cuship.bench.gate import unasserted_text

        console.error(unasserted_text(report.fingerprint.get("gpu")))
    console.err.print(report.summary_line(), markup=False)
    from cuship.cli._summary import bench_markdown, write_step_summary

    write_step_summary(console, bench_markdown(report))
    exit_with(report.exit_code)


def _burn_in(console: Any, request: Any, options: dict[str, Any]) -> None:
    from cuship.bench.burnin import parse_duration
    from cuship.bench.session import run_burn_in

    result = run_burn_in(request, parse_duration(options["burn_in"]), environ=os.environ)
    if options["as_json"]:
        console.print_json(result.to_json())
    else:
        lines = [f"burn-in {result.key}: {result.calls} calls in {result.duration:g} s"]
        lines += [f"  {t.describe()}" for t in result.trends]
        console.print_text("\n".join(lines))
    if result.error:
        console.error(f"{result.key} errored: {result.error}")
    elif result.leaking:
        console.error(f"{result.key}: memory keeps growing (see the trend above)")
    exit_with(result.exit_code)
