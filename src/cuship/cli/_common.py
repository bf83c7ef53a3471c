"""What every command shares: turning CushipError into an exit code, common options."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from cuship.cli._console import Console
from cuship.errors import CushipError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["json_option", "make_console", "run_cli", "verbose_option"]


def run_cli(group: click.Group, argv: list[str]) -> int:
    """Run ``group`` with ``argv``; map cuship errors to their exit codes and click's usage errors to 2."""
    try:
        # Without standalone mode click returns (not raises) the code of an explicit Exit.
        result = group.main(args=argv, prog_name="cuship", standalone_mode=False)
    except CushipError as err:
        Console().error(str(err))
        return err.exit_code
    except click.exceptions.Abort:
        sys.stderr.write("aborted\n")
        return 130
    except click.ClickException as err:
        err.show()
        return 2 if err.exit_code not in (0,) else 0
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except BrokenPipeError:
        return 0
    return result if isinstance(result, int) else 0


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


def verbose_option(func: F) -> F:
    return click.option("-v", "--verbose", is_flag=True, help="Show debug events.")(func)


def make_console(verbose: bool = False) -> Console:
    return Console(verbose=verbose)


def exit_with(code: int) -> None:
    """Leave a command with ``code`` (for results that are not errors, e.g. a failed check)."""
    raise click.exceptions.Exit(code)
