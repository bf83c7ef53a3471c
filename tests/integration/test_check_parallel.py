"""`cuship check --parallel`: a parallel run reports exactly what a serial one does, and its
workers are forks of one that has imported the engines, which a crashing case does not stop."""

from __future__ import annotations

import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path
from typing import Any

from cuship.check.declare.inputs import CaseSpec
from cuship.check.run.forks import ForkedWorker, Zygote
from cuship.check.run.lanes import Lane, PlannedGroup
from cuship.check.run.runner import setup_for
from cuship.check.run.workers import Worker
from tests.integration import clirun

cuship = partial(clirun.cuship, drop=("GITHUB_ACTIONS", "CI"))
_TIMES = re.compile(r"\d+\.\d+ ?s\b")
_PADDING = re.compile(r" {2,}")  # a table's columns are as wide as its widest time


def _json(path: Path) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = json.loads(path.read_text())["groups"]
    for group in groups:
        group.pop("wall_s")
        for case in group["cases"]:
            case.pop("wall_s")
            case.pop("kernel_s")
    return groups


def _junit(path: Path) -> list[tuple[str, dict[str, str], str]]:
    elements = ET.parse(path).getroot().iter()
    return [
        (e.tag, {k: v for k, v in e.attrib.items() if k not in ("time", "timestamp")}, e.text or "")
        for e in elements
    ]


def _baseline(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    document.pop("created")
    return document


def _run(example: Path, out: Path, parallel: str) -> tuple[str, str]:
    out.mkdir()
    args = [str(example), "--quick", "--device", "cpu", "--no-store", "-v"]
    text = cuship("check", *args, "--parallel", parallel, "--save-baseline", out / "base.json")
    assert text.returncode == 0, text.stderr
    for fmt in ("json", "junit"):
        done = cuship("check", *args, "--parallel", parallel, "--format", fmt, "-o", out / fmt)
        assert done.returncode == 0, done.stderr
    return _PADDING.sub(" ", _TIMES.sub("T", text.stdout)), text.stderr


def test_serial_and_parallel_runs_report_the_same_cases_in_the_same_order(
    example_dir: Path, tmp_path: Path
) -> None:
    serial_text, _ = _run(example_dir, tmp_path / "serial", "1")
    parallel_text, log = _run(example_dir, tmp_path / "parallel", "2")
    assert "2 workers forked from" in log  # it did run in parallel
    assert parallel_text == serial_text
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    cases = _json(serial / "json")
    assert sum(len(g["cases"]) for g in cases) > 20
    assert _json(parallel / "json") == cases  # case by case: inputs, status, errors, order
    assert _junit(parallel / "junit") == _junit(serial / "junit")
    assert _baseline(parallel / "base.json") == _baseline(serial / "base.json")


_HOSTILE = """
    import ctypes
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return x

    def _op(name, fn):
        return Op(name=name, reference=ref, inputs=(Tensor(name="x", dims=("n",)),),
                  outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 5}, {"n": 6}),
                  impls=(Impl(kind="native", fn=fn),))

    def copy(x, out):
        out[...] = x

    def segfault(x, out):
        ctypes.string_at(0)

    OPS = [_op("copy", copy), _op("segfault", segfault)]
"""


def _group(op: str) -> PlannedGroup:
    cases = tuple(
        CaseSpec(index=i, sizes=(("n", 5 + i),), distribution="normal", seed=i) for i in range(2)
    )
    return PlannedGroup(op=op, engine="native", dtype="float32", rtol=0, atol=0, cases=cases)


def test_a_forked_worker_runs_cases_and_a_crash_in_one_names_its_signal(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text(textwrap.dedent(_HOSTILE))
    environ = {**os.environ, "PYTHONPATH": str(clirun.SRC)}
    setup = setup_for(
        modules=("checks.py",), root=tmp_path, pythonpath=(tmp_path,), device="cpu",
        environ=environ,
    )  # fmt: skip
    assert setup.fork
    zygote = Zygote(Worker.start(setup, timeout=60), frozenset({"native"}), 60)
    lane = Lane(setup, 60, zygotes=(zygote,))
    try:
        copied = lane.run(_group("copy"))
        assert isinstance(lane.worker, ForkedWorker)
        first = lane.worker.pid
        crashed = lane.run(_group("segfault"))
        again = lane.run(_group("copy"))
        assert isinstance(lane.worker, ForkedWorker) and lane.worker.pid != first  # a new fork
    finally:
        lane.close()
        zygote.close()
    assert [r.status for r in copied + again] == ["passed"] * 4
    for result in crashed:
        assert result.status == "error"
        assert result.message is not None
        assert result.message.startswith("worker process killed by SIGSEGV while running")


_MANY = """
    import numpy as np
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return 2 * x

    def double(x, out):
        out[...] = 2 * x

    OPS = [
        Op(name=f"double{i}", reference=ref, inputs=(Tensor(name="x", dims=("n",)),),
           outputs=(Tensor(name="out", dims=("n",)),), shapes=tuple({"n": n} for n in range(1, 9)),
           impls=(Impl(kind="native", fn=double),))
        for i in range(10)
    ]
"""


def test_fresh_workers_side_by_side_where_none_is_forked(tmp_path: Path) -> None:
    """A GPU run (or a worker that runs threads) cannot fork: its lanes start fresh workers."""
    from dataclasses import replace

    from cuship.check.declare.registry import discover
    from cuship.check.run.runner import CheckSettings, execute, plan

    (tmp_path / "checks.py").write_text(textwrap.dedent(_MANY))
    environ = {**os.environ, "PYTHONPATH": str(clirun.SRC)}
    setup = setup_for(
        modules=("checks.py",), root=tmp_path, pythonpath=(tmp_path,), device="cpu",
        environ=environ,
    )  # fmt: skip
    the_plan = plan(discover(setup.modules, tmp_path, [tmp_path]), CheckSettings(quick=True))
    events: list[str] = []
    reports = [
        execute(
            the_plan,
            replace(setup, fork=False),
            target="t",
            parallel=parallel,
            handover=((Worker.start(setup, timeout=60), frozenset({"native"})),),
            emit=lambda e: events.append(e.message),
        )
        for parallel in (1, 2)
    ]
    serial, side_by_side = ([r.to_json() for r in report.groups] for report in reports)
    assert sum(len(g.cases) for g in reports[0].groups) == 80
    for group in (*serial, *side_by_side):
        group.pop("wall_s")
        for case in group["cases"]:
            case.pop("wall_s")
            case.pop("kernel_s")
    assert side_by_side == serial
    assert not any("forked" in m or "does not pay" in m for m in events)
