"""fork_map: the first share of the work here, each other share in a forked child at the
same time; each child's result comes back in order, and every failure comes back to the
parent, worded, after every child has ended."""

from __future__ import annotations

import concurrent.futures
import errno
import gc
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cuship.index import _pool
from cuship.index._pool import MIN_ITEMS, fork_map, in_child, map_spread

pytestmark = pytest.mark.integration


FORKED: list[int] = []


@pytest.fixture(autouse=True)
def _forks(monkeypatch: pytest.MonkeyPatch) -> None:
    if not _pool._fork_safe():
        pytest.skip("forking is not safe in this process (another thread runs)")
    FORKED.clear()
    fork = _pool._fork

    def counted(fn: object, share: object) -> tuple[int, int]:
        pid, fd = fork(fn, share)  # type: ignore[arg-type]
        FORKED.append(pid)
        return pid, fd

    monkeypatch.setattr(_pool, "_fork", counted)


def _no_child_left() -> bool:
    """Every child fork_map started has been reaped: none running, no zombie."""
    for pid in FORKED:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return bool(FORKED)


def test_the_first_share_runs_here_and_each_other_in_its_own_child(tmp_path: Path) -> None:
    def write(share: str) -> tuple[str, int, bool, bool]:
        (tmp_path / share).write_text(str(os.getpid()))
        return share, os.getpid(), in_child(), gc.isenabled()

    results = fork_map(write, ["here", "b", "c"])
    pids = {name: (tmp_path / name).read_text() for name in ("here", "b", "c")}
    assert pids["here"] == str(os.getpid())
    assert len(set(pids.values())) == 3  # two children and this process
    # each share's result, in the order of the shares; no cycle collection while one ran
    assert results == [
        ("here", os.getpid(), False, False),
        ("b", int(pids["b"]), True, False),
        ("c", int(pids["c"]), True, False),
    ]
    assert not in_child()
    assert gc.isenabled()  # as it was
    assert _no_child_left()


def test_a_large_result_comes_back_whole() -> None:
    # More than a pipe holds: the child blocks on writing until the parent reads.
    results = fork_map(lambda share: share * (1 << 20), [b"x", b"y"])
    assert results == [b"x" * (1 << 20), b"y" * (1 << 20)]
    assert _no_child_left()


def test_a_child_spreads_nothing_further() -> None:
    # map_spread in a child runs there: the children already share the cores.
    def spread(share: int) -> tuple[int, int]:
        before = len(FORKED)
        values = map_spread(abs, [-share] * (MIN_ITEMS * 2))
        return sum(values), len(FORKED) - before

    assert fork_map(spread, [1, 2]) == [(MIN_ITEMS * 2, 0), (MIN_ITEMS * 4, 0)]


def test_one_share_runs_here() -> None:
    assert fork_map(lambda share: (share, os.getpid(), in_child()), ["only"]) == [
        ("only", os.getpid(), False)
    ]
    assert not FORKED


def test_a_childs_error_comes_back_as_it_was_raised(tmp_path: Path) -> None:
    def fail(share: str) -> None:
        if share == "b":
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / share))
        (tmp_path / share).touch()

    with pytest.raises(OSError, match="No space left") as caught:
        fork_map(fail, ["a", "b", "c"])
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "b")
    assert (tmp_path / "a").exists() and (tmp_path / "c").exists()  # the others ran to the end
    assert _no_child_left()


def test_an_error_that_does_not_pickle_comes_back_in_words() -> None:
    class Odd(Exception):
        def __reduce__(self) -> tuple[object, ...]:
            raise TypeError("no")

    def fail(share: str) -> None:
        if share != "here":
            raise Odd(f"odd in {share}")

    with pytest.raises(RuntimeError, match="Odd: odd in x"):
        fork_map(fail, ["here", "x"])
    assert _no_child_left()


def test_a_result_that_does_not_pickle_is_the_childs_error() -> None:
    with pytest.raises(Exception, match="pickle"):  # pickle's own words, from the child
        fork_map(lambda share: share if share == "here" else (lambda: share), ["here", "x"])
    assert _no_child_left()


def test_a_child_that_dies_is_reported_with_its_signal() -> None:
    def die(share: str) -> None:
        if share == "killed":
            os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(RuntimeError, match=r"killed by SIGKILL"):
        fork_map(die, ["fine", "killed"])
    assert _no_child_left()


def test_the_error_here_waits_for_the_children(tmp_path: Path) -> None:
    def slow_or_fail(share: str) -> None:
        if share == "here":
            raise ValueError("the share here failed")
        time.sleep(0.2)
        (tmp_path / share).touch()

    with pytest.raises(ValueError, match="share here failed"):
        fork_map(slow_or_fail, ["here", "a", "b"])
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()  # both ran to their end
    assert _no_child_left()


class Needy(Exception):
    """Pickles (a module-level class), but unpickling calls it with one argument of two."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")


def test_an_error_that_pickles_but_cannot_be_made_again_comes_back_in_words() -> None:
    def fail(share: str) -> None:
        if share != "here":
            raise Needy(share, "went wrong")

    with pytest.raises(RuntimeError, match="Needy: x: went wrong"):
        fork_map(fail, ["here", "x"])
    assert _no_child_left()


def test_the_share_here_spreads_nothing_further_while_the_children_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # map_spread in the share here runs serially (the children have the other cores), and
    # spreads again once fork_map is done.
    started: list[int] = []

    class Counted(ProcessPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            started.append(1)
            super().__init__(*args, **kwargs)

    def spread(share: int) -> int:
        return sum(map_spread(abs, [-share] * (MIN_ITEMS * 2)))

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Counted)
    assert fork_map(spread, [1, 2]) == [MIN_ITEMS * 2, MIN_ITEMS * 4]
    assert started == []
    if _pool.workers_available() > 1:
        assert sum(map_spread(abs, [-1] * (MIN_ITEMS * 2))) == MIN_ITEMS * 2
        assert started == [1]


def test_a_tally_counts_what_every_share_adds_in_this_process_and_its_children() -> None:
    tally = _pool.Tally(3)

    def count(slot: int) -> int:
        tally.add(slot, slot + 1)
        if slot == 0:  # here: the children's counts show while they run
            deadline = time.monotonic() + 30
            while tally.total() < 6 and time.monotonic() < deadline:
                time.sleep(0.01)
        return tally.total()

    seen_here, *_ = fork_map(count, [0, 1, 2])
    assert seen_here == tally.total() == 6
