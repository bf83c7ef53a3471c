"""``cuship ship``: the whole pipeline on one project, ending with the line that installs it."""

from __future__ import annotations

from pathlib import Path

import click

from cuship.cli._common import exit_with, json_option, make_console, verbose_option


@click.command("ship")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("shipped"),
    show_default=True,
)
@json_option
@verbose_option
def command(path: Path, out_dir: Path, as_json: bool, verbose: bool) -> None:
    """Plan, build what this host can, repair/label/verify, index, and summarise."""
    from cuship.cli.build import _host, _preflight, _summary
    from cuship.config import load_config
    from cuship.ship import ship

    console = make_console(verbose)
    config = load_config(path)
    host = _host(config)
    _preflight(host, config, "local")
    report = ship(path, out_dir.resolve(), host=host, emit=console.emit)
    project = config.project.name or "PROJECT"
    line = report.install_line(project)
    if as_json:
        console.print_json(
            {
                "jobs": [
                    {"job": o.job_id, "status": o.status, "detail": o.detail}
                    for o in report.outcomes
                ],
                "index": report.index.as_dict() if report.index else None,
                "stages": {k: round(v, 2) for k, v in report.stages.items()},
                "install": line,
            }
        )
    else:
        _summary(console, report.outcomes, None)
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in report.stages.items())
        console.out.print(f"stages: {stages}")
        if report.index is not None:
            console.out.print(
                f"index: {report.site} ({report.index.wheels} wheels, variants {', '.join(report.index.variants)})"
            )
            console.out.print(f"install with:\n  {line}", markup=False)
            console.out.print("or serve it: cuship serve " + str(report.site), markup=False)
    if report.failed:
        exit_with(1)
