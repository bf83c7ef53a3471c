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
every selected test passed or nothing was marked. (That check is added after collection, so it
is not in pytest's "collected N items" count.)

``--gpu-only`` / ``--no-gpu`` deselect the other kind of test (reported as deselected).
``--gpu-list`` prints what each selected gpu test needs and whether this machine has it, then
exits without running anything (in one process, even with ``-n``).
``--no-gpu-slicing`` gives every xdist worker all GPUs.

The machine is read once per run, only when needed, with :func:`cuship.machine.fingerprint`
(NVML, nvidia-smi or /proc; never torch; NVML is not tried where no NVIDIA driver device exists)
and shown in the report header; ``CUSHIP_GPUS="H100:9.0:80GiB,..."``
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

import os
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from cuship.errors import UsageError
from cuship.pytest_plugin.markers import SHORTHAND_MARKERS, article, describe
from cuship.pytest_plugin.session import (
    GPU_ITEM,
    MACHINE,
    REQUIRE_NODEID,
    RUN,
    SETTINGS,
    RequireGpu,
    Run,
    Tally,
    find_card,
    listing_lines,
    machine_of,
    read_settings,
    require_problem,
    requirements,
)

if TYPE_CHECKING:
    from cuship.pytest_plugin.machine import GpuMachine
    from cuship.pytest_plugin.markers import GpuRequirement


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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: the test needs a CUDA GPU (cuship gates it)")
    for marker, card in SHORTHAND_MARKERS.items():
        config.addinivalue_line(
            "markers",
            f"{marker}: the test needs {article(card)} {card} GPU; same keywords as gpu (cuship)",
        )
    try:
        settings = read_settings(config.option, os.environ)
    except UsageError as err:
        raise pytest.UsageError(f"cuship: {err}") from err
    config.stash[SETTINGS] = settings
    config.stash[RUN] = Run()
    if not _is_worker(config):
        config.pluginmanager.register(Tally(config), "cuship-tally")
    if settings.listing and hasattr(config.option, "dist"):
        config.option.dist = "no"  # listing collects in this process, so xdist stays off
    handed = getattr(config, "workerinput", {}).get("cuship")
    if handed is not None:
        _take_worker_share(config, handed)


def _take_worker_share(config: pytest.Config, handed: Mapping[str, Any]) -> None:
    from cuship.pytest_plugin.machine import GpuMachine

    config.stash[MACHINE] = GpuMachine.from_json(handed["machine"])
    if handed.get("cuda_visible_devices") is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = handed["cuda_visible_devices"]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: hand each worker the machine and its share of the GPUs."""
    config: pytest.Config = node.config
    machine = machine_of(config)
    share, visible = machine, None
    if config.stash[SETTINGS].slicing and machine.gpus and machine.devices is not None:
        worker = int(str(node.workerinput["workerid"]).removeprefix("gw"))
        share = machine.share(worker, int(node.workerinput["workercount"]))
        visible = share.visible_env
    node.workerinput["cuship"] = {"machine": share.to_json(), "cuda_visible_devices": visible}


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"cuship: {machine_of(config).summary()}"]
    if config.stash[SETTINGS].require_gpu:
        lines.append("cuship: --require-gpu: skipped gpu tests fail, and so does a run without GPU")
    return lines


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
    settings, run = config.stash[SETTINGS], config.stash[RUN]
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
        run.problem = require_problem(machine_of(config), gpu_count)
        items.append(RequireGpu.from_parent(session, name="require-gpu", nodeid=REQUIRE_NODEID))


def _judge(
    item: pytest.Item,
    reqs: tuple[GpuRequirement, ...],
    machine: GpuMachine,
    run: Run,
    *,
    listing: bool,
) -> None:
    from cuship.pytest_plugin.machine import unmet

    item.stash[GPU_ITEM] = True
    reason = None
    for req in reqs:
        if req not in run.verdicts:
            run.verdicts[req] = unmet(req, machine, find_card)
        reason = reason or run.verdicts[req]
    if listing:
        run.listed.append((item.nodeid, "; ".join(describe(q) for q in reqs), reason))
    elif reason is not None:
        if reason not in run.skips:
            run.skips[reason] = pytest.mark.skip(reason=reason)
        item.add_marker(run.skips[reason])


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    config = session.config
    if not config.stash[SETTINGS].listing:
        return None
    run = config.stash[RUN]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in listing_lines(machine_of(config), run.listed):
            reporter.write_line(line)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not item.stash.get(GPU_ITEM, False):
        return report
    report.cuship_gpu = True  # type: ignore[attr-defined]  # travels to the xdist controller
    require = item.config.stash[SETTINGS].require_gpu
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
