"""cuship's pytest plugin (entry point ``pytest11``): gate GPU tests by marker.

Markers (registered, so ``--strict-markers`` projects can use them)::

    @pytest.mark.gpu                          any GPU
    @pytest.mark.gpu(count=2)                 at least two GPUs meeting the other conditions
    @pytest.mark.gpu(min_cc="8.0")            compute capability 8.0 or newer
    @pytest.mark.gpu(cc=["9.0", "10.0"])      exactly one of these compute capabilities
    @pytest.mark.gpu(memory="40GiB")          a card of at least 40 GiB (compared by card size)
    @pytest.mark.gpu(cuda=">=12.4")           the driver supports CUDA 12.4 or newer
    @pytest.mark.gpu(name="H100")             that card (names resolve through cuship's GPU data)
    @pytest.mark.h100 / h200 / a100 / b200 / l4   shorthand for gpu(name=...); same keywords

A test whose markers are not met is skipped with a reason that says what was asked and what
the machine has (``needs compute capability ≥ 9.0; found 8.6 (NVIDIA A10)``). A marker with an
unknown keyword, a malformed value or an unknown card is a collection error naming the test.
Several markers on one test are separate demands; all must hold.

Options:

``--require-gpu`` (or ``CUSHIP_REQUIRE_GPU=1``), for GPU runners: every skip of a gpu-marked
test, whatever its cause, becomes a failure carrying the skip's reason. The run also gets one
extra check, ``cuship::require-gpu``, that fails when no GPU is visible or no gpu-marked test
was selected, so a GPU job that lost its GPU, or that runs no GPU test at all, is red even when
every selected test passed or nothing was marked.

``--gpu-only`` / ``--no-gpu`` deselect the other kind of test (reported as deselected).
``--gpu-list`` prints what each selected gpu test needs and whether this machine has it, then
exits without running anything (in one process, even with ``-n``).
``--no-gpu-slicing`` gives every xdist worker all GPUs.

The machine is read once per run with :func:`cuship.machine.fingerprint` (NVML, nvidia-smi or
/proc; never torch) and shown in the report header; ``CUSHIP_GPUS="H100:9.0:80GiB,..."``
(``none`` for no GPU) and ``CUSHIP_DRIVER_CUDA`` fake it, so a GPU job's selection can be
dry-run on a laptop. ``CUDA_VISIBLE_DEVICES`` narrows the GPUs considered.

With pytest-xdist the controller reads the machine and hands each worker its share through
``workerinput``; workers never probe. Each worker gets its own ``CUDA_VISIBLE_DEVICES``, set in
its ``pytest_configure`` (before test modules are imported; conftest.py files are imported
earlier, so do not initialise CUDA at conftest import time). At least as many GPUs as workers:
contiguous, non-overlapping slices (4 GPUs, 2 workers: gw0 gets 0,1 and gw1 gets 2,3); more
workers than GPUs: one GPU each, round-robin (shared). Markers are judged against the worker's
share, so ``gpu(count=2)`` tests need a run with at most half as many workers as GPUs.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Generator, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from cuship._gpu_markers import (
    GPU_MARKER,
    SHORTHAND_MARKERS,
    describe,
    marker_text,
    parse_marker,
)
from cuship.errors import CushipError, UsageError

if TYPE_CHECKING:
    from cuship._gpu_machine import GpuMachine
    from cuship._gpu_markers import GpuRequirement
    from cuship._probe import Probe
    from cuship.compat import GpuModel

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
class _Run:
    """What this process learns during the run (mutable: it accumulates)."""

    marks: dict[Hashable, GpuRequirement] = field(default_factory=dict)
    verdicts: dict[GpuRequirement, str | None] = field(default_factory=dict)
    skips: dict[str, pytest.MarkDecorator] = field(default_factory=dict)
    listed: list[tuple[str, str, str | None]] = field(default_factory=list)
    ran: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    forced: set[str] = field(default_factory=set)
    problem: str | None = None


_SETTINGS = pytest.StashKey[Settings]()
_MACHINE = pytest.StashKey["GpuMachine"]()
_RUN = pytest.StashKey[_Run]()
_GPU_ITEM = pytest.StashKey[bool]()
_REQS = pytest.StashKey[tuple[int, tuple["GpuRequirement", ...]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cuship", "GPU test gating (cuship)")
    group.addoption(
        "--require-gpu",
        action="store_true",
        default=False,
        help="fail (instead of skip) gpu tests this machine cannot run, and fail the run when "
        "no GPU is visible or no gpu test is selected. Also CUSHIP_REQUIRE_GPU=1.",
    )
    group.addoption("--gpu-only", action="store_true", default=False, help="run only gpu tests")
    group.addoption("--no-gpu", action="store_true", default=False, help="deselect gpu tests")
    group.addoption(
        "--gpu-list",
        action="store_true",
        default=False,
        help="list what each gpu test needs and whether this machine has it; run nothing",
    )
    group.addoption(
        "--no-gpu-slicing",
        action="store_true",
        default=False,
        help="give every xdist worker all GPUs instead of its own CUDA_VISIBLE_DEVICES slice",
    )


def read_settings(option: Any, environ: Mapping[str, str]) -> Settings:
    """The plugin's settings from parsed options and the environment; conflicts are errors."""
    env = environ.get("CUSHIP_REQUIRE_GPU", "").strip().lower()
    if env not in _TRUE + _FALSE:
        raise UsageError(
            f"CUSHIP_REQUIRE_GPU={environ['CUSHIP_REQUIRE_GPU']!r} is not a yes/no value",
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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: the test needs a CUDA GPU (cuship gates it)")
    for marker, card in SHORTHAND_MARKERS.items():
        config.addinivalue_line(
            "markers", f"{marker}: the test needs an {card} GPU; same keywords as gpu (cuship)"
        )
    try:
        settings = read_settings(config.option, os.environ)
    except UsageError as err:
        raise pytest.UsageError(f"cuship: {err}") from err
    config.stash[_SETTINGS] = settings
    config.stash[_RUN] = _Run()
    if not _is_worker(config):
        config.pluginmanager.register(_Tally(config), "cuship-tally")
    if settings.listing and hasattr(config.option, "dist"):
        config.option.dist = "no"  # listing collects in this process, so xdist stays off
    handed = getattr(config, "workerinput", {}).get("cuship")
    if handed is not None:
        _take_worker_share(config, handed)


def _take_worker_share(config: pytest.Config, handed: Mapping[str, Any]) -> None:
    from cuship._gpu_machine import GpuMachine

    config.stash[_MACHINE] = GpuMachine.from_json(handed["machine"])
    if handed.get("cuda_visible_devices") is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = handed["cuda_visible_devices"]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Hold the cyclic GC while probing: imports made after collecting thousands of tests
    otherwise trigger full collections over the whole heap (pynvml's import: 6 ms → 40 ms)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


_DRIVER_NODES = ("/dev/nvidiactl", "/dev/dxg", "/proc/driver/nvidia")


def _probe() -> Probe:
    """The system probe, minus NVML where no NVIDIA driver is loaded (it could only fail).

    Loading pynvml only to fail slows every later garbage collection of a big test session
    (measured: pytest's own collections at exit take 2-4x longer), so it is skipped.
    """
    from cuship._probe import SystemProbe

    if any(Path(node).exists() for node in _DRIVER_NODES):
        return SystemProbe()

    class NoDriverProbe(SystemProbe):
        __slots__ = ()

        def nvml(self) -> None:
            return None

    return NoDriverProbe()


def machine_of(config: pytest.Config) -> GpuMachine:
    """This run's GPUs, read once and kept on ``config.stash``."""
    if _MACHINE not in config.stash:
        try:
            with _gc_paused():
                from cuship._gpu_machine import GpuMachine
                from cuship.machine import fingerprint

                fp = fingerprint(os.environ, _probe())
        except CushipError as err:
            raise pytest.UsageError(f"cuship: {err}") from err
        config.stash[_MACHINE] = GpuMachine.from_fingerprint(fp, os.environ)
    return config.stash[_MACHINE]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand each worker the machine and its share of the GPUs."""
    config: pytest.Config = node.config
    machine = machine_of(config)
    share, visible = machine, None
    if config.stash[_SETTINGS].slicing and machine.gpus and machine.devices is not None:
        worker = int(str(node.workerinput["workerid"]).removeprefix("gw"))
        share = machine.share(worker, int(node.workerinput["workercount"]))
        visible = share.visible_env
    node.workerinput["cuship"] = {"machine": share.to_json(), "cuda_visible_devices": visible}


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"cuship: {machine_of(config).summary()}"]
    if config.stash[_SETTINGS].require_gpu:
        lines.append("cuship: --require-gpu: skipped gpu tests fail, and so does a run without GPU")
    return lines


@functools.cache
def _model(name: str) -> GpuModel:
    from cuship.compat import load

    with _gc_paused():
        return load().gpu(name)


@functools.cache
def _find_model(name: str) -> GpuModel | None:
    from cuship.compat import load

    with _gc_paused():
        return load().find_gpu(name)


def _mark_key(mark: pytest.Mark) -> Hashable:
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
    seen = item.stash.get(_REQS, None)
    if seen is not None and seen[0] == len(item.own_markers):
        return seen[1]
    reqs = _read_requirements(item)
    item.stash[_REQS] = (len(item.own_markers), reqs)
    return reqs


def _read_requirements(item: pytest.Item) -> tuple[GpuRequirement, ...]:
    cache = item.config.stash[_RUN].marks
    found = []
    for mark in item.iter_markers():
        if mark.name not in MARKER_NAMES:
            continue
        key = _mark_key(mark)
        req = cache.get(key)
        if req is None:
            req = cache[key] = parse_marker(mark.name, mark.args, mark.kwargs, model=_model)
        found.append(req)
    return tuple(found)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report: pytest.CollectReport = yield
    if not report.passed:
        return report
    problems = []
    for node in report.result:
        if isinstance(node, pytest.Item):
            try:
                requirements(node)
            except UsageError as err:
                problems.append(f"{node.nodeid}: {err}")
    if not problems:
        return report
    return pytest.CollectReport(
        report.nodeid, "failed", "\n".join(problems), [], sections=report.sections
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    settings, run = config.stash[_SETTINGS], config.stash[_RUN]
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    gpu_count = 0
    for item in items:
        try:
            reqs = requirements(item)
        except UsageError as err:
            raise pytest.UsageError(f"cuship: {item.nodeid}: {err}") from err
        wanted = settings.select == "all" or (settings.select == "gpu") == bool(reqs)
        (kept if wanted else dropped).append(item)
        if wanted and reqs:
            gpu_count += 1
            _judge(item, reqs, machine_of(config), run, listing=settings.listing)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    if settings.require_gpu and not settings.listing:
        run.problem = _require_problem(machine_of(config), gpu_count)
        items.append(_RequireGpu.from_parent(session, name="require-gpu", nodeid=REQUIRE_NODEID))


def _judge(
    item: pytest.Item,
    reqs: tuple[GpuRequirement, ...],
    machine: GpuMachine,
    run: _Run,
    *,
    listing: bool,
) -> None:
    from cuship._gpu_machine import unmet

    item.stash[_GPU_ITEM] = True
    reason = None
    for req in reqs:
        if req not in run.verdicts:
            run.verdicts[req] = unmet(req, machine, _find_model)
        reason = reason or run.verdicts[req]
    if listing:
        run.listed.append((item.nodeid, "; ".join(describe(q) for q in reqs), reason))
    elif reason is not None:
        if reason not in run.skips:
            run.skips[reason] = pytest.mark.skip(reason=reason)
        item.add_marker(run.skips[reason])


def _require_problem(machine: GpuMachine, gpu_tests: int) -> str | None:
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


class _RequireGpu(pytest.Item):
    """The check ``--require-gpu`` adds: a GPU is visible and some gpu test was selected."""

    def runtest(self) -> None:
        problem = self.config.stash[_RUN].problem
        if problem is not None:
            raise RequireGpuFailed(problem)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RequireGpuFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, "cuship --require-gpu check"


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    config = session.config
    if not config.stash[_SETTINGS].listing:
        return None
    run = config.stash[_RUN]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in listing_lines(machine_of(config), run.listed):
            reporter.write_line(line)
    return True


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not item.stash.get(_GPU_ITEM, False):
        return report
    report.cuship_gpu = True  # type: ignore[attr-defined]  # travels to the xdist controller
    require = item.config.stash[_SETTINGS].require_gpu
    if require and report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"--require-gpu: this gpu test would have been skipped: {reason}"
        report.cuship_forced = True  # type: ignore[attr-defined]
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(
    report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    if getattr(report, "cuship_forced", False):
        return "failed", "F", "FAILED"
    return None


class _Tally:
    """Counts gpu test outcomes from reports (on the xdist controller too) for the summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not getattr(report, "cuship_gpu", False):
            return
        run = self.config.stash[_RUN]
        if getattr(report, "cuship_forced", False):
            run.forced.add(report.nodeid)
        elif report.skipped and not hasattr(report, "wasxfail"):
            run.skipped.add(report.nodeid)
        elif report.when == "call":
            run.ran.add(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        run, settings = self.config.stash[_RUN], self.config.stash[_SETTINGS]
        if settings.listing or not (run.ran or run.skipped or run.forced or settings.require_gpu):
            return
        text = f"cuship: gpu tests: {len(run.ran)} ran, {len(run.skipped)} skipped"
        if run.forced:
            text += f", {len(run.forced)} failed under --require-gpu (would have skipped)"
        terminalreporter.write_line(text, red=bool(run.forced), green=not run.forced)
