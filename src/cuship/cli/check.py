"""``cuship check``: run kernels against float64 references on CPU engines or a GPU."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cuship.cli._common import exit_with, make_console, verbose_option

if TYPE_CHECKING:
    from cuship.check.report.results import CheckReport
    from cuship.cli._console import Console

_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64")
_FORMATS = ("text", "json", "junit")


def _seed(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    del ctx, param
    if value is None:
        return None
    if value == "random":
        return int.from_bytes(os.urandom(4), "little")
    try:
        return int(value)
    except ValueError as err:
        raise click.BadParameter(f"{value!r} is not an integer or 'random'") from err


@click.command("check")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "--quick", is_flag=True, help="float32, default shapes, few fuzz cases ([check.quick])."
)
@click.option(
    "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True
)
@click.option(
    "--op", "ops", multiple=True, help="Only this op (repeatable); selects default=False ops too."
)
@click.option("--engine", "engines", multiple=True, help="Only this engine (repeatable).")
@click.option(
    "--dtype", "dtypes", multiple=True, type=click.Choice(_DTYPES), help="Only this dtype."
)
@click.option(
    "--case", type=int, default=None, help="Only this case index (with --op/--engine/--dtype)."
)
@click.option(
    "--seed", callback=_seed, help="Seed of the inputs: an integer, or 'random' ([check] seed)."
)
@click.option("--include-broken", is_flag=True, help="Also run ops declared default=False.")
@click.option(
    "--parallel",
    type=click.IntRange(min=0),
    default=None,
    help="Workers at most (default, or 0: as many as the run's work pays for, up to one per "
    "core). With --sanitize, also how many tools run at once (default: all of them, up to one "
    "per core).",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Compare with this baseline.",
)
@click.option(
    "--save-baseline", type=click.Path(path_type=Path, dir_okay=False), help="Write a baseline."
)
@click.option(
    "--fail-on-regression", is_flag=True, help="Exit 1 when --baseline finds a regression."
)
@click.option(
    "--require-engines/--allow-missing-engines",
    "require_engines",
    default=None,
    help="Exit 3 when an engine the checked ops declare cannot run here (torch, triton or numba "
    "missing), instead of skipping its cases. Default: required when CI is set.",
)
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="text", show_default=True)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report here."
)
@click.option("--no-store", is_flag=True, help="Do not record this run in the results store.")
@click.option(
    "--sanitize",
    "sanitize",
    metavar="TOOLS",
    help="After the plain run, run the cuda/triton/numba cases again under compute-sanitizer, "
    "one pass per tool: memcheck, racecheck, initcheck, synccheck (comma-separated) or all. "
    "Needs --device cuda; a finding fails its case.",
)
@click.option(
    "--installed",
    is_flag=True,
    help="Import the project's package as installed (a wheel under test): [check] pythonpath "
    "directories holding it are left off sys.path, and importing it from elsewhere fails.",
)
@click.option(
    "--force-ptx",
    is_flag=True,
    help="Run the compiled extension's PTX, not its SASS (CUDA_FORCE_PTX_JIT=1; engine cuda "
    "only), after checking that every GPU here can JIT it (exit 3 if not).",
)
@verbose_option
def command(path: Path, **options: object) -> None:
    """Check the kernels of the project at PATH (or one check module .py) against references."""
    from cuship.check.run.availability import require_numpy

    require_numpy()  # the planner draws each case's values with it
    from cuship.check.run.session import CheckFlags, check_request, run_check

    console = make_console(bool(options.pop("verbose")))
    cli_only = ("fmt", "output")
    flags = CheckFlags(**{k: v for k, v in options.items() if k not in cli_only})  # type: ignore[arg-type]  # click's values, typed by its options
    request = check_request(path, flags, environ=os.environ, cwd=Path.cwd())
    from cuship.cli._progress import progress_display

    with progress_display(console, as_json=options["fmt"] != "text") as emit:
        report = run_check(request, environ=os.environ, emit=emit)
    _render(console, report, str(options["fmt"]), options["output"])  # type: ignore[arg-type]
    exit_with(report.exit_code)


def _render(console: object, report: object, fmt: str, output: Path | None) -> None:
    from cuship.check.report.render import render, summary_line
    from cuship.check.report.results import CheckReport
    from cuship.cli._console import Console

    assert isinstance(console, Console) and isinstance(report, CheckReport)
    document = render(report, fmt)
    if output is not None:
        from cuship._fs import write_atomic

        write_atomic(output, document.encode("utf-8"))
    else:
        console.print_text(document)
    elsewhere = fmt != "text" or output is not None
    if elsewhere or console.github:
        _problems(console, report, elsewhere)
    if elsewhere or report.verdict != "passed":  # a pass: stdout's report ends with it already
        console.err.print(summary_line(report), markup=False)
    from cuship.cli._summary import check_markdown, write_step_summary

    write_step_summary(console, check_markdown(report))


def _problems(console: Console, report: CheckReport, elsewhere: bool) -> None:
    """On stderr, what the report (written elsewhere, or in CI) says went wrong; with
    ``elsewhere`` (the report is not the text on stdout) also provenance and sanitizer costs."""
    from cuship.check.report.render import failure_text
    from cuship.check.sanitize import report as sanitize_report

    if report.provenance is not None and elsewhere:
        for line in report.provenance.lines():
            console.err.print(f"package: {line}", markup=False, soft_wrap=True)
    for engine in report.unavailable:
        console.warn(engine.line())
    for group in report.groups:
        if group.status in ("failed", "error"):
            console.error(failure_text(report, group))
    for reg in report.regressions:
        console.error(f"regression {reg.key}: {reg.message}")
    for text in sanitize_report.failure_texts(report):
        console.error(text)
    if elsewhere:
        for run in report.sanitize:
            console.err.print(sanitize_report.cost_line(run), markup=False, soft_wrap=True)
