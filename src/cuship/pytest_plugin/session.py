"""State and helpers of cuship's pytest plugin (hooks live in :mod:`cuship.pytest_plugin`).

Settings from options and environment, the machine read once per run, the gpu demands of an
item, the ``--require-gpu`` check item, the ``--gpu-list`` report and the outcome tally.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pytest

from cuship import settings
from cuship.errors import CushipError, UsageError
from cuship.pytest_plugin.markers import GPU_MARKER, SHORTHAND_MARKERS, marker_text, parse_marker

if TYPE_CHECKING:
    from cuship.compat import GpuModel
    from cuship.pytest_plugin.machine import GpuMachine
    from cuship.pytest_plugin.markers import GpuRequirement

__all__ = [
    "GPU_ITEM",
    "MACHINE",
    "MARKER_NAMES",
    "REQS",
    "REQUIRE_NODEID",
    "RUN",
    "SETTINGS",
    "RequireGpu",
    "RequireGpuFailed",
    "Run",
    "Settings",
    "Tally",
    "card_model",
    "find_card",
    "listing_lines",
    "machine_of",
    "read_settings",
    "require_problem",
    "requirements",
]

MARKER_NAMES = frozenset({GPU_MARKER, *SHORTHAND_MARKERS})


REQUIRE_NODEID = "cuship::require-gpu"


_TRUE = ("1", "true", "yes", "on")


_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    require_gpu: bool
    select: Literal["all", "gpu", "cpu"]
    listing: bool
    slicing: bool


@dataclass(slots=True)
class Run:
    """What this process learns during the run (mutable: it accumulates)."""

    marks: dict[Hashable, GpuRequirement] = field(default_factory=dict)
    verdicts: dict[GpuRequirement, str | None] = field(default_factory=dict)
    skips: dict[str, pytest.MarkDecorator] = field(default_factory=dict)
    listed: list[tuple[str, str, str | None]] = field(default_factory=list)
    ran: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    forced: set[str] = field(default_factory=set)
    problem: str | None = None


SETTINGS = pytest.StashKey[Settings]()


MACHINE = pytest.StashKey["GpuMachine"]()


RUN = pytest.StashKey[Run]()


GPU_ITEM = pytest.StashKey[bool]()


REQS = pytest.StashKey[tuple[int, tuple["GpuRequirement", ...]]]()


def read_settings(option: Any, environ: Mapping[str, str]) -> Settings:
    """The plugin's settings from parsed options and the environment; conflicts are errors."""
    env = environ.get(settings.REQUIRE_GPU, "").strip().lower()
    if env not in _TRUE + _FALSE:
        raise UsageError(
            f"CUSHIP_REQUIRE_GPU={environ[settings.REQUIRE_GPU]!r} is not a yes/no value",
            hint="set it to 1 or 0",
        )
    require = bool(option.require_gpu) or env in _TRUE
    if option.gpu_only and option.no_gpu:
        raise UsageError("--gpu-only and --no-gpu together select nothing", hint="pick one")
    if require and option.no_gpu:
        raise UsageError(
            "--no-gpu with --require-gpu deselects every test the GPU is required for",
            hint="drop one of them (CUSHIP_REQUIRE_GPU=1 counts as --require-gpu)",
        )
    select: Literal["all", "gpu", "cpu"] = (
        "gpu" if option.gpu_only else "cpu" if option.no_gpu else "all"
    )
    return Settings(
        require_gpu=require,
        select=select,
        listing=bool(option.gpu_list),
        slicing=not option.no_gpu_slicing,
    )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic GC while probing: imports made after collecting thousands of tests
    otherwise trigger full collections over the whole heap (pynvml's import: 6 ms → 40 ms)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def machine_of(config: pytest.Config) -> GpuMachine:
    """This run's GPUs, read once and kept on ``config.stash``."""
    if MACHINE not in config.stash:
        try:
            with gc_paused():
                from cuship.machine import fingerprint
                from cuship.pytest_plugin.machine import GpuMachine

                fp = fingerprint(os.environ)
        except CushipError as err:
            raise pytest.UsageError(f"cuship: {err}") from err
        config.stash[MACHINE] = GpuMachine.from_fingerprint(fp, os.environ)
    return config.stash[MACHINE]


@functools.cache
def card_model(name: str) -> GpuModel:
    from cuship.compat import load

    with gc_paused():
        return load().gpu(name)


@functools.cache
def find_card(name: str) -> GpuModel | None:
    from cuship.compat import load

    with gc_paused():
        return load().find_gpu(name)


def mark_key(mark: pytest.Mark) -> Hashable:
    """Equal for equal markers, so a marker written on many tests is parsed once."""
    if not mark.args and not mark.kwargs:
        return mark.name
    kwargs = tuple((k, type(v), v) for k, v in mark.kwargs.items())  # count=True is not 1
    key = (mark.name, tuple((type(a), a) for a in mark.args), kwargs)
    try:
        hash(key)
    except TypeError:  # a list argument, e.g. cc=["9.0", "10.0"]
        return (mark.name, marker_text(mark.name, mark.args, mark.kwargs))
    return key


def requirements(item: pytest.Item) -> tuple[GpuRequirement, ...]:
    """The gpu demands of ``item``'s markers (nearest first); raises UsageError for bad ones.

    Kept on the item with the count of its own markers: read again only when a marker was added
    to the item since (a conftest's ``pytest_collection_modifyitems`` marking tests ``gpu``).
    """
    seen = item.stash.get(REQS, None)
    if seen is not None and seen[0] == len(item.own_markers):
        return seen[1]
    reqs = _read_requirements(item)
    item.stash[REQS] = (len(item.own_markers), reqs)
    return reqs


def _read_requirements(item: pytest.Item) -> tuple[GpuRequirement, ...]:
    cache = item.config.stash[RUN].marks
    found = []
    for mark in item.iter_markers():
        if mark.name not in MARKER_NAMES:
            continue
        key = mark_key(mark)
        req = cache.get(key)
        if req is None:
            req = cache[key] = parse_marker(mark.name, mark.args, mark.kwargs, model=card_model)
        found.append(req)
    return tuple(found)


def require_problem(machine: GpuMachine, gpu_tests: int) -> str | None:
    if not machine.gpus:
        return f"--require-gpu: no GPU is visible ({machine.absence()})"
    if gpu_tests == 0:
        return (
            "--require-gpu: no gpu-marked test was selected, so this GPU run checks nothing "
            "on the GPU; mark GPU tests with @pytest.mark.gpu or drop --require-gpu"
        )
    return None


class RequireGpuFailed(Exception):
    """The ``cuship::require-gpu`` check failed."""


class RequireGpu(pytest.Item):
    """The check ``--require-gpu`` adds: a GPU is visible and some gpu test was selected."""

    def runtest(self) -> None:
        problem = self.config.stash[RUN].problem
        if problem is not None:
            raise RequireGpuFailed(problem)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RequireGpuFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, "cuship --require-gpu check"


def listing_lines(machine: GpuMachine, listed: list[tuple[str, str, str | None]]) -> list[str]:
    """The ``--gpu-list`` report."""
    lines = [f"cuship --gpu-list on {machine.summary()}"]
    for nodeid, needs, reason in listed:
        lines.append(f"  {'RUNS ' if reason is None else 'SKIPS'}  {nodeid}  needs {needs}")
        if reason is not None:
            lines.append(f"         {reason}")
    runs = sum(1 for *_, reason in listed if reason is None)
    lines.append(
        f"cuship --gpu-list: {len(listed)} gpu tests: {runs} would run, "
        f"{len(listed) - runs} would skip; nothing was run"
    )
    return lines


class Tally:
    """Counts gpu test outcomes from reports (on the xdist controller too) for the summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not getattr(report, "cuship_gpu", False):
            return
        run = self.config.stash[RUN]
        if getattr(report, "cuship_forced", False):
            run.forced.add(report.nodeid)
        elif report.skipped and not hasattr(report, "wasxfail"):
            run.skipped.add(report.nodeid)
        elif report.when == "call":
            run.ran.add(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        run, settings = self.config.stash[RUN], self.config.stash[SETTINGS]
        if settings.listing or not (run.ran or run.skipped or run.forced or settings.require_gpu):
            return
        text = f"cuship: gpu tests: {len(run.ran)} ran, {len(run.skipped)} skipped"
        if run.forced:
            text += f", {len(run.forced)} failed under --require-gpu (would have skipped)"
        terminalreporter.write_line(text, red=bool(run.forced), green=not run.forced)
