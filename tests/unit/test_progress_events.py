"""One progress event for every stage, rendered in one place: plain lines off a terminal (CI
logs, pipes, GitHub Actions), one live self-overwriting line per topic on a terminal."""

from __future__ import annotations

import io

from cuship.cli._console import Console
from cuship.cli._progress import ProgressDisplay, live_progress
from cuship.events import Event, progress, progress_message


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_event_says_how_far_in_data_and_in_one_line() -> None:
    event = progress("check", 3, 12, "saxpy/triton/float32", "cases 0-75, none bad", 0.234)
    assert event.level == "progress" and event.topic == "check"
    assert event.message == "[3/12] saxpy/triton/float32: cases 0-75, none bad in 0.2 s"
    assert event.data == {
        "done": 3,
        "total": 12,
        "item": "saxpy/triton/float32",
        "status": "cases 0-75, none bad",
        "seconds": 0.234,
    }


def test_the_line_leaves_out_what_was_not_given() -> None:
    assert progress_message(1, 2, "a") == "[1/2] a"
    assert progress_message(1, 2, "a", "ok") == "[1/2] a: ok"
    assert progress_message(1, 2, "a", seconds=1.25) == "[1/2] a: 1.2 s"
    assert progress_message(1, 3, "a", "10 µs", stage="ncu") == "[ncu 1/3] a: 10 µs"


def test_a_stage_s_own_fields_travel_in_data_and_warn_marks_the_item() -> None:
    event = progress("bench", 2, 2, "k", "errored (boom)", stage="ncu", warn=True, data={"x": 1})
    assert event.data["x"] == 1 and event.data["stage"] == "ncu" and event.data["warn"] is True
    assert "seconds" not in event.data
    assert event.message == "[ncu 2/2] k: errored (boom)"


def _events() -> list[Event]:
    return [
        Event(level="info", topic="check", message="checking 2 groups"),
        progress("check", 1, 2, "saxpy/numpy/float32", "cases 0-3, none bad", 0.01),
        progress("bench", 1, 1, "saxpy[n=1]", "errored (boom)", warn=True),
        progress("check", 2, 2, "saxpy/triton/float32", "cases 0-3, 1 bad", 0.5),
    ]


def _replay(events: list[Event], *, tty: bool, github: bool = False) -> str:
    err = _Tty() if tty else io.StringIO()
    console = Console(github=github, out=io.StringIO(), err=err)
    with ProgressDisplay(console, live=live_progress(console, as_json=False, environ={})) as emit:
        for event in events:
            emit(event)
    return err.getvalue()


def test_off_a_terminal_each_progress_event_is_its_plain_line() -> None:
    assert _replay(_events(), tty=False).splitlines() == [
        "checking 2 groups",
        "[1/2] saxpy/numpy/float32: cases 0-3, none bad in 0.0 s",
        "warning: [1/1] saxpy[n=1]: errored (boom)",
        "[2/2] saxpy/triton/float32: cases 0-3, 1 bad in 0.5 s",
    ]


def test_github_actions_gets_plain_lines_and_a_warned_item_as_an_annotation() -> None:
    lines = _replay(_events(), tty=True, github=True).splitlines()
    assert lines[1] == "[1/2] saxpy/numpy/float32: cases 0-3, none bad in 0.0 s"
    assert lines[2] == "::warning::[1/1] saxpy[n=1]: errored (boom)"


def test_a_terminal_gets_one_live_line_per_topic() -> None:
    shown = _replay(_events(), tty=True)
    assert "checking 2 groups" in shown
    assert "check: saxpy/triton/float32: cases 0-3, 1 bad" in shown, "the line moved on"
    assert "2/2" in shown
    assert "[1/2] saxpy/numpy/float32" not in shown, "items are not printed one per line"
    assert "[1/1] saxpy[n=1]: errored (boom)" in shown, "a warned item stays above the display"


def test_the_live_line_is_per_topic_and_stage() -> None:
    err = _Tty()
    console = Console(github=False, out=io.StringIO(), err=err)
    with ProgressDisplay(console, live=True) as emit:
        emit(progress("bench", 1, 3, "a", "ok"))
        emit(progress("bench", 2, 3, "b", "ok"))
        emit(progress("bench", 1, 2, "a", "10 µs", stage="ncu"))
        during = console.live
    assert during and not console.live, "other lines go through the display while it runs"
    shown = err.getvalue()
    assert "bench: b: ok" in shown and "bench ncu: a: 10 µs" in shown
    assert "bench: a: ok" not in shown.rsplit("\r", 1)[-1], "the line was overwritten"
