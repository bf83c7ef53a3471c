from __future__ import annotations

import io

from cuship.cli._console import Console, in_github_actions
from cuship.events import Event


def test_github_actions_gets_groups_and_annotations() -> None:
    err = io.StringIO()
    console = Console(github=True, out=io.StringIO(), err=err)
    console.emit(Event(level="group-start", topic="build", message="job-1"))
    console.emit(Event(level="error", topic="build", message="nvcc failed\nline two"))
    console.emit(Event(level="warning", topic="build", message="50% done"))
    console.emit(Event(level="group-end", topic="build", message="job-1"))
    assert err.getvalue().splitlines() == [
        "::group::job-1",
        "::error::nvcc failed%0Aline two",
        "::warning::50%25 done",
        "::endgroup::",
    ]


def test_plain_terminal_output_and_json_on_stdout() -> None:
    out, err = io.StringIO(), io.StringIO()
    console = Console(github=False, out=out, err=err)
    console.emit(Event(level="debug", topic="x", message="hidden unless verbose"))
    console.emit(Event(level="warning", topic="x", message="careful"))
    console.print_json({"a": 1})
    assert "hidden" not in err.getvalue()
    assert "warning: careful" in err.getvalue()
    assert out.getvalue() == '{\n  "a": 1\n}\n'


def test_detects_github_actions_from_environment() -> None:
    assert in_github_actions({"GITHUB_ACTIONS": "true"})
    assert not in_github_actions({})


def test_long_messages_are_never_broken_into_lines() -> None:
    err = io.StringIO()
    path = "/tmp/" + "d" * 300 + "/cuship.toml"
    Console(github=False, out=io.StringIO(), err=err).error(f"{path}: matrix.cuda: bad")
    assert path in err.getvalue()


def test_info_and_verbose_debug_lines_are_written_as_they_are_off_a_terminal() -> None:
    # Off a terminal nothing is styled: an event's words go out as given (no markup, no
    # emoji codes replaced, no wrapping), one line each, without rich.
    err = io.StringIO()
    console = Console(verbose=True, github=False, out=io.StringIO(), err=err)
    said = ["indexed 3 wheels into '/srv/[site]' :rocket:", "x" * 400, "debug [b]bold?[/b]"]
    console.emit(Event(level="info", topic="x", message=said[0]))
    console.emit(Event(level="info", topic="x", message=said[1]))
    console.emit(Event(level="debug", topic="x", message=said[2]))
    assert err.getvalue().splitlines() == said
