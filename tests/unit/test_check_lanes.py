"""How many workers a check run starts: only as many as its estimated work pays for, and a lane
takes its first chunk only once its worker is ready."""

from __future__ import annotations

import os

import pytest

from cuship.check.declare.inputs import CaseSpec
from cuship.check.run.lanes import Pending, PlannedGroup, useful_lanes


def _group(op: str, engine: str, cases: int) -> PlannedGroup:
    specs = tuple(
        CaseSpec(index=i, sizes=(("n", 8),), distribution="normal", seed=i) for i in range(cases)
    )
    return PlannedGroup(op=op, engine=engine, dtype="float32", rtol=0.0, atol=0.0, cases=specs)


def test_a_quick_run_stays_on_one_worker_and_a_big_one_spreads() -> None:
    quick = [_group(f"op{i}", "triton-interpret", 3) for i in range(8)]  # 24 cases
    assert useful_lanes(quick, 2) == 1
    thorough = [_group(f"op{i}", "triton-interpret", 30) for i in range(8)]  # 240 cases
    assert useful_lanes(thorough, 2) == 2
    assert useful_lanes(thorough, 16) < 16  # the eighth worker would not pay for its start
    assert useful_lanes(thorough, 1) == 1
    assert useful_lanes([], 4) == 1


def test_peek_names_the_engine_take_hands_out() -> None:
    pending = Pending([_group("a", "native", 2), _group("b", "numba-sim", 2)], lanes=2)
    assert pending.peek(set()) == "numba-sim"  # the costliest chunk first
    assert pending.peek({"native"}) == "native"  # a worker that has an engine keeps to it
    first = pending.take(set())
    assert first is not None and first.engine == "numba-sim"
    assert pending.peek(set()) == "native"  # numba-sim is claimed by a lane now
    assert len(pending) == 3


def test_forked_workers_cost_little_so_a_quick_run_spreads_but_a_tiny_one_does_not() -> None:
    quick = [_group(f"op{i}", "numba-sim", 3) for i in range(4)]  # 12 simulator cases, ~5 s
    assert useful_lanes(quick, 2) == 1  # a fresh worker's imports cost more than it saves
    assert useful_lanes(quick, 2, forked=True) == 2
    assert useful_lanes(quick, 1, forked=True) == 1  # one core, or --parallel 1
    interpreted = [_group(f"op{i}", "triton-interpret", 3) for i in range(8)]  # ~2 s
    assert useful_lanes(interpreted, 2, forked=True) == 1  # the copies' warm-up would eat it
    assert useful_lanes([_group("tiny", "native", 2)], 8, forked=True) == 1


def test_with_several_lanes_a_slow_group_is_cut_into_chunks_of_a_few_cases() -> None:
    slow = _group("reduce", "numba-sim", 8)
    pending = Pending([slow, _group("a", "native", 2)], lanes=2)
    chunks = []
    while (chunk := pending.take({"numba-sim", "native"})) is not None:
        chunks.append(chunk)
    reduce_chunks = [c for c in chunks if c.op == "reduce"]
    assert len(reduce_chunks) == 4  # two per lane
    assert [c.index for chunk in reduce_chunks for c in chunk.cases] == list(range(8))
    assert Pending([slow], lanes=1).take(set()) == slow  # serial: one chunk per group


def test_a_worker_under_a_sanitizer_or_with_threads_is_not_forked() -> None:
    import threading

    from cuship.check.run._fork import blocker

    assert blocker(sanitized=True) == "a worker under compute-sanitizer is never forked"
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        why = blocker(sanitized=False)
    finally:
        stop.set()
        thread.join()
    assert why is not None and "threads" in why


def test_engines_are_dealt_to_probing_workers_the_costliest_import_on_the_first() -> None:
    from cuship.check.run.probe import deal

    assert deal(["numba-sim", "triton-interpret"], 2) == [["triton-interpret"], ["numba-sim"]]
    assert deal(["numba-sim", "triton-interpret"], 1) == [["triton-interpret", "numba-sim"]]
    assert deal(["triton-interpret"], 4) == [["triton-interpret"]]  # never an idle worker
    assert deal([], 2) == [[]]


def test_the_default_runs_one_worker_per_core_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cuship.check.run import runner

    groups = tuple(_group(f"op{i}", "triton-interpret", 30) for i in range(8))  # ~19 s of work
    the_plan = runner.Plan(groups=groups, seed=0, quick=False, device="cpu")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert runner.lane_count(the_plan, 0, forked=True) == 1  # one core: serial
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert runner.lane_count(the_plan, 0, forked=True) == 4
    assert runner.lane_count(the_plan, 2, forked=True) == 2  # --parallel 2 caps it
    small = runner.Plan(groups=(_group("tiny", "native", 3),), seed=0, quick=True, device="cpu")
    assert runner.lane_count(small, 0, forked=True) == 1  # too little work to share
