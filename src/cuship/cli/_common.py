"""What every command shares: turning CushipError into an exit code, common options."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cuship.cli._console import Console
from cuship.errors import INTERNAL_ERROR, INTERRUPTED, CushipError
from cuship.version import __version__

if TYPE_CHECKING:
    from cuship.config import Config

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "OUT_DIR",
    "default_out",
    "fetch_python_option",
    "json_option",
    "make_console",
    "parallel_option",
    "rebuild_option",
    "run_cli",
    "verbose_option",
]


def run_cli(group: click.Group, argv: list[str]) -> int:
    """Run ``group`` with ``argv``; map cuship errors to their exit codes, click's usage errors
    to 2, an interrupt to 130 and anything else (a bug) to 70 with its traceback in a file."""
    try:
        # Without standalone mode click returns (not raises) the code of an explicit Exit.
        result = group.main(args=argv, prog_name="cuship", standalone_mode=False)
    except CushipError as err:
        Console().error(str(err))
        return err.exit_code
    except click.exceptions.Abort:
        sys.stderr.write("aborted\n")
        return INTERRUPTED
    except click.ClickException as err:
        err.show()
        return 2 if err.exit_code not in (0,) else 0
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return INTERRUPTED
    except Exception as err:  # the last resort: a bug, told in one line, not a traceback
        return _internal_error(err, argv)
    return result if isinstance(result, int) else 0


def _internal_error(err: Exception, argv: list[str]) -> int:
    """Write the traceback to a file and say, in one line, what broke and where that file is."""
    import traceback  # the error path only: `cuship --help` stays quick

    report = "".join(traceback.format_exception(err))
    header = f"cuship {__version__} on Python {sys.version.split()[0]}\nargv: {argv!r}\n\n"
    where = _write_crash_report(header + report)
    said = " ".join(str(err).split()) or "(no message)"
    Console().error(
        f"internal error: {type(err).__name__}: {said} "
        f"(a bug in cuship; the traceback is in {where}; please report it with that file)"
    )
    return INTERNAL_ERROR


def _write_crash_report(text: str) -> str:
    """``$XDG_CACHE_HOME/cuship/crash-*.txt`` (~/.cache by default), else the temp directory."""
    import tempfile

    folders = [Path(tempfile.gettempdir())]
    with suppress(RuntimeError):  # no home directory to find
        cache = os.environ.get("XDG_CACHE_HOME")
        folders.insert(0, (Path(cache) if cache else Path.home() / ".cache") / "cuship")
    prefix = time.strftime("crash-%Y%m%d-%H%M%S-")
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix=prefix, suffix=".txt", dir=folder, text=True)
            with os.fdopen(fd, "w") as out:
                out.write(text)
        except OSError:
            continue
        return path
    return "nowhere (neither the cache nor the temp directory is writable)"


OUT_DIR = Path("dist") / "cuship"
"""Where ``cuship build`` and ``cuship ship`` write, under the project: ``wheels/`` (the wheels,
with ``raw/``, ``logs/``, ``envs/``), ``site/`` and ``check/`` (ship)."""


def default_out(config: Config) -> Path:
    """The project's own output directory, ``<project>/dist/cuship`` (never the current one)."""
    return config.root / OUT_DIR


def fetch_python_option(func: F) -> F:
    return click.option(
        "--fetch-python",
        is_flag=True,
        help="Install a Python the matrix needs and this machine lacks with `uv python install` "
        "(into uv's own Python directory).",
    )(func)


def _jobs_at_once(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    del ctx
    if value is not None and value < 1:
        raise click.BadParameter(
            f"{value} is not a number of jobs to build at once; give 1 (one after another, "
            "the default) or more, e.g. --parallel 2",
            param=param,
        )
    return value


def parallel_option(func: F) -> F:
    return click.option(
        "--parallel",
        type=int,
        default=None,
        metavar="N",
        callback=_jobs_at_once,
        help="Build up to N jobs at once, each with its share of MAX_JOBS. "
        "Default: [build] parallel, else 1.",
    )(func)


def rebuild_option(func: F) -> F:
    return click.option(
        "--rebuild",
        is_flag=True,
        help="Build every job, also those whose wheel an earlier run built from the same "
        "inputs (a packages.yml sdist, the same job, commands and toolchain). A rebuild still "
        "reuses what its keys allow ([build] incremental).",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


def verbose_option(func: F) -> F:
    return click.option("-v", "--verbose", is_flag=True, help="Show debug events.")(func)


def make_console(verbose: bool = False) -> Console:
    return Console(verbose=verbose)


def exit_with(code: int) -> None:
    """Leave a command with ``code`` (for results that are not errors, e.g. a failed check)."""
    raise click.exceptions.Exit(code)
