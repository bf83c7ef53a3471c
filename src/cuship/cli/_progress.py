"""Progress, from the progress events (:func:`cuship.events.progress`) every stage emits: jobs
built, groups of cases checked, points timed, wheels indexed, toolkit wheels fetched, the
stages of a GPU run.

On a terminal (and not in CI, not with ``--json``): one live rich display. Builds get one bar
for the jobs (done / running / left, elapsed) and one line per running job with its current
step and time; each finished job leaves one line above it. Every other topic gets one
self-overwriting line (per topic and stage: ``check``, ``bench``, ``bench ncu``), a bar of
``done``/``total`` with its latest item; an item marked ``warn`` or ``failed`` also leaves its
line above.

Elsewhere (CI logs, pipes, GitHub Actions) the same events are plain lines, as every other
event: ``[2/4] job: Python 3.12.1 (pyenv: …)`` … ``[2/4] job: built in 41.0 s``. A topic that
reports thousands of items (the index's wheels) must not flood a log, so :class:`Cadence`
picks the lines: per topic and stage the first item, the last (``done`` equal to ``total``),
every item that went wrong (``warn``, ``failed``, ``bad``) and the start and end of a build job
or a GPU run's stage (events with a ``phase``), and otherwise at most one line every
``CUSHIP_PROGRESS_INTERVAL`` seconds (default :data:`~cuship.events.INTERVAL`); the latest
line held back is printed when the work ends short of its total. The live display draws every
event.

With jobs built at once the builder sends from several threads, one event at a time; the
``job-step`` events it adds then (a step of a job whose other events it holds until the job
ends) move the live display and print nothing, since the held events tell the steps again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from cuship import settings
from cuship.cli._console import Console
from cuship.events import INTERVAL, Cadence, Emit, Event, count_of, progress_interval

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["JobBoard", "ProgressDisplay", "in_ci", "live_progress", "progress_display"]

_FALSE = ("", "0", "false", "no", "off")

_REDRAW = 0.1  # seconds between two redraws of a live display that has no thread of its own


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """A CI run: ``CI`` set to something true (GitHub, GitLab, Buildkite, … set it) or GitHub
    Actions."""
    env = os.environ if environ is None else environ
    return env.get("CI", "").strip().lower() not in _FALSE or bool(env.get("GITHUB_ACTIONS"))


def live_progress(
    console: Console, *, as_json: bool, environ: Mapping[str, str] | None = None
) -> bool:
    """Whether to draw the live display: a terminal on stderr, not CI, not ``--json``."""
    return not as_json and not console.github and console.err_is_terminal() and not in_ci(environ)


@dataclass(slots=True)
class JobBoard:
    """Where the jobs stand: which are done, which run (and their step), how many are left."""

    total: int = 0
    done: int = 0
    running: dict[str, str] = field(default_factory=dict)  # job → its current step
    started: dict[str, float] = field(default_factory=dict)

    def apply(self, event: Event) -> str | None:
        """Take one event in; the job it concerns, if any."""
        data = event.data
        phase, job = data.get("phase"), data.get("job")
        if phase == "start":
            self.total = len(data.get("jobs", ()))  # type: ignore[arg-type]
            return None
        if not isinstance(job, str):
            return None
        if phase == "job-start":
            self.running[job] = "starting"
            self.started[job] = time.monotonic()
        elif phase == "job-end":
            self.running.pop(job, None)
            self.done += 1
        elif "step" in data and job in self.running:
            self.running[job] = event.message.removeprefix(f"{job}: ").replace(f" of {job}", "")
        return job

    @property
    def left(self) -> int:
        return max(0, self.total - self.done - len(self.running))

    def summary(self) -> str:
        return f"jobs: {self.done} done · {len(self.running)} running · {self.left} left"


class ProgressDisplay:
    """An :data:`~cuship.events.Emit` that keeps the live display (``live``) or prints lines
    (as ``cadence`` picks them); a context manager around the work whose events it renders.

    ``redraw_thread``: the live display redraws itself on a thread of its own (its spinner and
    times move while no event comes); without, it is redrawn as events come, at most ten times
    a second, for work that forks (forking needs a single thread: see the index's pool)."""

    def __init__(
        self,
        console: Console,
        *,
        live: bool,
        cadence: Cadence | None = None,
        redraw_thread: bool = True,
    ) -> None:
        self.console, self.live, self.board = console, live, JobBoard()
        self.cadence = Cadence() if cadence is None else cadence
        self._redraw_thread, self._redrawn = redraw_thread, 0.0
        self._lock = threading.RLock()
        self._progress: Progress | None = None
        self._overall: TaskID | None = None
        self._tasks: dict[str, TaskID] = {}
        self._lines: dict[tuple[str, str], TaskID] = {}  # (topic, stage) → its live line

    def __enter__(self) -> Emit:
        if self.live:
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),
                TimeElapsedColumn(),
                console=self.console.err,
                transient=True,
                auto_refresh=self._redraw_thread,
            )
            self._progress.start()
            self.console.live = True
        return self.emit

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None
                self.console.live = False
            else:
                for event in self.cadence.held():  # where the work stopped short
                    self.console.emit(event)

    def emit(self, event: Event) -> None:
        with self._lock:
            self._emit(event)

    def _emit(self, event: Event) -> None:
        if self._progress is None:
            self._plain(event)
            return
        if event.topic == "build" and (event.level == "progress" or "step" in event.data):
            self._update(event)
            self._redraw()
        elif event.level == "progress" and "done" in event.data:
            self._line(event)
            self._redraw()
        elif event.topic != "build" or event.level not in ("group-start", "group-end"):
            self.console.emit(event)  # (the display shows the jobs, not their groups)

    def _plain(self, event: Event) -> None:
        self.board.apply(event)
        if event.data.get("phase") == "job-step":
            return
        if event.level == "progress" and "done" in event.data and not self.cadence.admit(event):
            return
        self.console.emit(event)

    def _redraw(self) -> None:
        """Without a redraw thread, the display drawn again when it last was a while ago."""
        if self._redraw_thread or self._progress is None:
            return
        now = self.cadence.clock()
        if now - self._redrawn >= _REDRAW:
            self._redrawn = now
            self._progress.refresh()

    def _line(self, event: Event) -> None:
        """One topic's live line moved to ``event``'s item; a ``warn`` or ``failed`` item is
        also printed."""
        from rich.markup import escape

        progress = self._progress
        assert progress is not None
        data = event.data
        stage = str(data.get("stage") or "")
        name = f"{event.topic} {stage}".strip()
        said = f"{data['item']}: {data['status']}" if data.get("status") else str(data["item"])
        done, total = count_of(data["done"]), count_of(data["total"])
        text, count = escape(f"{name}: {said}"), f"{done}/{total}"
        task = self._lines.get((event.topic, stage))
        if task is None:
            task = progress.add_task(text, total=total, completed=done, count=count)
            self._lines[event.topic, stage] = task
        progress.update(task, description=text, total=total, completed=done, count=count)
        if data.get("warn") or data.get("failed"):
            self.console.emit(event)

    def _update(self, event: Event) -> None:
        from rich.markup import escape

        progress = self._progress
        assert progress is not None
        job = self.board.apply(event)
        phase = event.data.get("phase")
        if phase == "start":
            self._overall = progress.add_task(
                self.board.summary(), total=self.board.total, count=f"0/{self.board.total}"
            )
        elif phase == "job-start" and job is not None:
            self._tasks[job] = progress.add_task(f"  {job}: starting", total=None, count="")
        elif phase == "job-end" and job is not None:
            task = self._tasks.pop(job, None)
            if task is not None:
                progress.remove_task(task)
            status = event.data.get("status")
            colour = {"built": "green", "failed": "red"}.get(str(status), "cyan")
            progress.console.print(f"[{colour}]{escape(event.message)}[/]", highlight=False)
        elif job is not None and job in self._tasks:
            progress.update(self._tasks[job], description=f"  {job}: {self.board.running[job]}")
        if self._overall is not None:
            progress.update(
                self._overall,
                description=self.board.summary(),
                completed=self.board.done,
                count=f"{self.board.done}/{self.board.total}",
            )


def progress_display(
    console: Console,
    *,
    as_json: bool = False,
    redraw_thread: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ProgressDisplay:
    """The display a command's work reports through: live where :func:`live_progress` says so,
    plain lines elsewhere, one a topic every ``CUSHIP_PROGRESS_INTERVAL`` seconds at most."""
    env = os.environ if environ is None else environ
    cadence = Cadence(interval=_interval(console, env.get(settings.PROGRESS_INTERVAL)))
    live = live_progress(console, as_json=as_json, environ=env)
    return ProgressDisplay(console, live=live, cadence=cadence, redraw_thread=redraw_thread)


def _interval(console: Console, value: str | None) -> float:
    seconds = progress_interval(value)
    if seconds is None:
        name = settings.PROGRESS_INTERVAL
        console.warn(f"{name}={value!r} is not a number of seconds: using {INTERVAL:g}")
        return INTERVAL
    return seconds
