"""One progress event for every stage, rendered in one place: plain lines off a terminal (CI
logs, pipes, GitHub Actions), one live self-overwriting line per topic on a terminal."""

from __future__ import annotations

import io

from cuship.cli._console import Console
from cuship.cli._progress import ProgressDisplay, live_progress, progress_display
from cuship.events import INTERVAL, Cadence, Event, progress, progress_interval, progress_message
from cuship.settings import PROGRESS_INTERVAL


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


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _plain(events: list[tuple[float, Event]], interval: float) -> list[str]:
    """The lines a log shows of ``events``, each at its second on a fake clock."""
    clock, err = _Clock(), io.StringIO()
    console = Console(github=False, out=io.StringIO(), err=err)
    display = ProgressDisplay(console, live=False, cadence=Cadence(interval, clock))
    with display as emit:
        for at, event in events:
            clock.now = 100.0 + at
            emit(event)
    return err.getvalue().splitlines()


def test_a_log_shows_a_topic_s_first_and_last_item_and_one_line_per_interval() -> None:
    wheels = [
        (i * 0.01, progress("index", i, 50_000, f"w{i}", stage="scan")) for i in range(1, 50_001)
    ]
    lines = _plain(wheels, interval=5.0)
    # 500 s of work: the first item, one line each 5 s after it, the last
    assert lines[0] == "[scan 1/50000] w1" and lines[-1] == "[scan 50000/50000] w50000"
    assert lines[1] == "[scan 501/50000] w501" and len(lines) == 101


def test_items_that_went_wrong_are_always_shown_and_other_topics_keep_their_own_pace() -> None:
    events = [
        (0.0, progress("check", 1, 9, "a", "none bad", data={"bad": 0})),
        (0.1, progress("bench", 1, 9, "p")),
        (0.2, progress("check", 2, 9, "b", "1 bad", data={"bad": 1})),
        (0.3, progress("check", 3, 9, "c", "none bad", data={"bad": 0})),
        (0.4, progress("bench", 2, 9, "q", "errored (boom)", warn=True)),
        (0.5, progress("bench", 3, 9, "r", stage="ncu")),
        (0.6, Event(level="info", topic="check", message="not progress: always shown")),
    ]
    assert _plain(events, interval=5.0) == [
        "[1/9] a: none bad",
        "[1/9] p",
        "[2/9] b: 1 bad",
        "warning: [2/9] q: errored (boom)",
        "[ncu 3/9] r",
        "not progress: always shown",
        "[3/9] c: none bad",  # held back, then shown where the work stopped short
    ]


def test_a_build_job_s_start_and_end_are_never_held_back() -> None:
    data = {"phase": "job-start", "job": "j"}
    events = [(0.0, progress("build", i, 3, f"j{i}", "Python 3.12", data=data)) for i in (1, 2)]
    assert len(_plain(events, interval=60.0)) == 2


def test_interval_zero_shows_every_item() -> None:
    events = [(0.0, progress("index", i, 5, f"w{i}")) for i in range(1, 6)]
    assert len(_plain(events, interval=0.0)) == 5


def test_the_interval_comes_from_the_environment_and_a_bad_one_is_a_warning() -> None:
    err = io.StringIO()
    console = Console(github=False, out=io.StringIO(), err=err)
    assert progress_display(console, environ={PROGRESS_INTERVAL: "0.5"}).cadence.interval == 0.5
    assert progress_display(console, environ={}).cadence.interval == INTERVAL
    assert progress_display(console, environ={PROGRESS_INTERVAL: "soon"}).cadence.interval == 5
    assert "CUSHIP_PROGRESS_INTERVAL='soon' is not a number of seconds" in err.getvalue()


def test_a_live_display_without_a_redraw_thread_starts_none() -> None:
    import threading

    console = Console(github=False, out=io.StringIO(), err=_Tty())
    before = threading.active_count()
    with ProgressDisplay(console, live=True, redraw_thread=False) as emit:
        emit(progress("index", 1, 2, "a", stage="scan"))
        assert threading.active_count() == before, "forking needs a single thread"
        emit(progress("index", 2, 2, "b", stage="scan"))


def test_the_interval_setting_is_seconds_zero_or_more() -> None:
    assert progress_interval(None) == progress_interval(" ") == INTERVAL
    assert progress_interval("0") == 0.0 and progress_interval("2.5") == 2.5
    assert progress_interval("-1") is None and progress_interval("nan") is None
    assert progress_interval("inf") is None and progress_interval("5s") is None
