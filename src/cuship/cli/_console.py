"""Render structured events for people (rich) and for CI logs (GitHub ``::group::``/``::error::``)."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from cuship.events import Event

if TYPE_CHECKING:
    from rich.console import Console as RichConsole

__all__ = ["Console", "in_github_actions"]

_STYLE = {"warning": "yellow", "error": "bold red", "debug": "dim", "info": ""}


def in_github_actions(environ: Mapping[str, str] | None = None) -> bool:
    """True when running under GitHub Actions (``GITHUB_ACTIONS=true``)."""
    env = os.environ if environ is None else environ
    return env.get("GITHUB_ACTIONS", "").lower() == "true"


def _escape_workflow(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


class Console:
    """Where the CLI writes: events, tables and JSON documents.

    Human-facing text goes to stderr so that stdout carries only the data a command produces
    (tables, JSON), which keeps ``cuship X --json | jq`` working.
    """

    def __init__(
        self,
        *,
        verbose: bool = False,
        github: bool | None = None,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
    ) -> None:
        self.verbose = verbose
        self.github = in_github_actions() if github is None else github
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._rich_out: RichConsole | None = None
        self._rich_err: RichConsole | None = None
        self._lock = threading.RLock()
        self.live = False  # a live display holds the terminal: every line goes through rich

    @staticmethod
    def _width(stream: IO[str]) -> int | None:
        """Wide tables in CI logs and pipes (rich would pick 80 columns); the terminal's otherwise."""
        isatty = getattr(stream, "isatty", None)
        if isatty is not None and isatty():
            return None
        return int(os.environ.get("COLUMNS", "160"))

    def err_is_terminal(self) -> bool:
        """Whether human-facing output (stderr) goes to a terminal."""
        isatty = getattr(self._err, "isatty", None)
        return bool(isatty is not None and isatty())

    @property
    def out(self) -> RichConsole:
        if self._rich_out is None:
            from rich.console import Console as RichConsole

            # emoji=False: cuship writes no :emoji: codes, and looking for them in every
            # string printed loads rich's table of 3,600 names (11 M instructions)
            self._rich_out = RichConsole(file=self._out, width=self._width(self._out), emoji=False)
        return self._rich_out

    @property
    def err(self) -> RichConsole:
        if self._rich_err is None:
            from rich.console import Console as RichConsole

            self._rich_err = RichConsole(
                file=self._err, width=self._width(self._err), highlight=False, emoji=False
            )
        return self._rich_err

    def emit(self, event: Event) -> None:
        """Render one event; this method is an :data:`cuship.events.Emit`, safe to call from
        several threads (each event is written whole)."""
        if event.level == "debug" and not self.verbose:
            return
        with self._lock:
            self._render(event)

    def _render(self, event: Event) -> None:
        if event.level == "group-start":
            self._group_start(event.message)
        elif event.level == "group-end":
            self._group_end()
        elif event.level == "error" or (event.level == "progress" and event.data.get("failed")):
            self.error(event.message)
        elif event.level == "warning" or (event.level == "progress" and event.data.get("warn")):
            self.warn(event.message)
        else:
            self._line(event.message, _STYLE.get(event.level, ""))

    def warn(self, message: str) -> None:
        with self._lock:
            if self.github:
                self._err.write(f"::warning::{_escape_workflow(message)}\n")
                self._err.flush()
            else:
                self._line(f"warning: {message}", "yellow")

    def error(self, message: str) -> None:
        with self._lock:
            if self.github:
                self._err.write(f"::error::{_escape_workflow(message)}\n")
                self._err.flush()
            else:
                self._line(f"error: {message}", "bold red")

    def _line(self, text: str, style: str) -> None:
        """A message on stderr, never broken at the console width (paths and commands stay
        whole, so logs can be searched); coloured only on a terminal."""
        isatty = getattr(self._err, "isatty", None)
        if (style or self.live) and isatty is not None and isatty():
            self.err.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
            return
        self._err.write(text + "\n")
        self._err.flush()

    def _group_start(self, title: str) -> None:
        if self.github:
            self._err.write(f"::group::{title}\n")
            self._err.flush()
        else:
            self.err.rule(title, style="dim")

    def _group_end(self) -> None:
        if self.github:
            self._err.write("::endgroup::\n")
            self._err.flush()

    def print_json(self, document: Any) -> None:
        """Write a JSON document to stdout (never through rich, so it stays machine-readable)."""
        self._out.write(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")
        self._out.flush()

    def print_text(self, text: str) -> None:
        self._out.write(text if text.endswith("\n") else text + "\n")
        self._out.flush()
