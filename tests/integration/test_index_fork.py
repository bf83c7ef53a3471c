"""fork_map: shares of work in forked children while the parent does its own part; each
child's result comes back in order, and every failure comes back to the parent, worded,
after every child has ended."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

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


def test_each_share_runs_in_its_own_child_while_the_parent_works(tmp_path: Path) -> None:
    def write(share: str) -> tuple[str, int, bool]:
        (tmp_path / share).write_text(str(os.getpid()))
        return share, os.getpid(), in_child()

    results = fork_map(write, ["a", "b", "c"], meanwhile=lambda: write("parent") and None)
    pids = {name: (tmp_path / name).read_text() for name in ("a", "b", "c", "parent")}
    assert pids["parent"] == str(os.getpid())
    assert len(set(pids.values())) == 4  # three children and the parent
    # each child's result, in the order of the shares, and each knew it was a child
    assert results == [(name, int(pids[name]), True) for name in ("a", "b", "c")]
    assert not in_child()
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


def test_one_share_runs_here_after_meanwhile(tmp_path: Path) -> None:
    order: list[tuple[str, int]] = []

    def run(share: str) -> bool:
        order.append((share, os.getpid()))
        return in_child()

    results = fork_map(run, ["only"], meanwhile=lambda: order.append(("meanwhile", os.getpid())))
    assert order == [("meanwhile", os.getpid()), ("only", os.getpid())]
    assert results == [False]


def test_a_childs_error_comes_back_as_it_was_raised(tmp_path: Path) -> None:
    def fail(share: str) -> None:
        if share == "b":
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / share))
        (tmp_path / share).touch()

    done: list[str] = []
    with pytest.raises(OSError, match="No space left") as caught:
        fork_map(fail, ["a", "b"], meanwhile=lambda: done.append("meanwhile"))
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "b")
    assert done == ["meanwhile"]  # the parent's part ran to its end
    assert (tmp_path / "a").exists()
    assert _no_child_left()


def test_an_error_that_does_not_pickle_comes_back_in_words() -> None:
    class Odd(Exception):
        def __reduce__(self) -> tuple[object, ...]:
            raise TypeError("no")

    def fail(share: str) -> None:
        raise Odd(f"odd in {share}")

    with pytest.raises(RuntimeError, match="Odd: odd in x"):
        fork_map(fail, ["x", "y"])
    assert _no_child_left()


def test_a_result_that_does_not_pickle_is_the_childs_error() -> None:
    with pytest.raises(Exception, match="pickle"):  # pickle's own words, from the child
        fork_map(lambda share: lambda: share, ["x", "y"])
    assert _no_child_left()


def test_a_child_that_dies_is_reported_with_its_signal() -> None:
    def die(share: str) -> None:
        if share == "killed":
            os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(RuntimeError, match=r"killed by signal 9"):
        fork_map(die, ["fine", "killed"])
    assert _no_child_left()


def test_the_parents_error_waits_for_the_children(tmp_path: Path) -> None:
    def slow(share: str) -> None:
        import time

        time.sleep(0.2)
        (tmp_path / share).touch()

    def fail() -> None:
        raise ValueError("the parent's part failed")

    with pytest.raises(ValueError, match="parent's part"):
        fork_map(slow, ["a", "b"], meanwhile=fail)
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()  # both ran to their end
    assert _no_child_left()


class Needy(Exception):
    """Pickles (a module-level class), but unpickling calls it with one argument of two."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")


def test_an_error_that_pickles_but_cannot_be_made_again_comes_back_in_words() -> None:
    def fail(share: str) -> None:
        raise Needy(share, "went wrong")

    with pytest.raises(RuntimeError, match="Needy: x: went wrong"):
        fork_map(fail, ["x", "y"])
    assert _no_child_left()


def test_a_child_collects_no_cycles_and_the_parent_still_does() -> None:
    import gc

    assert fork_map(lambda share: gc.isenabled(), ["a", "b"]) == [False, False]
    assert gc.isenabled()
