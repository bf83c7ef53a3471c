"""The one process runner for real: a time limit and Ctrl-C end the whole process group (the
grandchildren a build or ncu starts too), a missing tool is exit 3 with its fix, and the tail
of what a tool said is what a message quotes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuship import process
from cuship.errors import CannotStart, CheckFailed, TimedOut, ToolMissing

SRC = Path(__file__).resolve().parents[2] / "src"
# a shell that starts a grandchild, says both pids, then waits for it
FAMILY = 'sleep 300 & echo "$$ $!" > {pids}.tmp && mv {pids}.tmp {pids}; wait'


def _read_pids(pids: Path, limit: float = 60.0) -> list[int]:
    """The shell's and the grandchild's pid, once the shell has written them."""
    deadline = time.monotonic() + limit
    while not pids.exists():
        assert time.monotonic() < deadline, "the shell never started its grandchild"
        time.sleep(0.05)
    return [int(p) for p in pids.read_text().split()]


def _gone(pid: int, limit: float = 60.0) -> bool:
    """Whether ``pid`` has ended (gone, or a zombie waiting for whoever adopted it)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_the_time_limit_ends_the_whole_group_and_names_the_command(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = ["sh", "-c", FAMILY.format(pids=pids)]
    with pytest.raises(TimedOut) as caught:
        process.run(argv, timeout=3)
    err = caught.value
    assert err.exit_code == 3 and err.timeout == 3 and err.argv == tuple(argv)
    assert "did not finish within 3 s" in err.message and "sleep 300" in err.message
    shell, grandchild = _read_pids(pids)
    assert _gone(shell) and _gone(grandchild)


# SIGINT raises KeyboardInterrupt in the driver whatever it inherited: a process started by a
# background job of a non-interactive shell (a CI runner's `cmd &`, nohup) inherits SIGINT
# ignored, and Python then installs no handler, so the test's Ctrl-C would be lost.
_DRIVER = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from cuship import process
process.run(["sh", "-c", sys.argv[1]])
"""


def test_ctrl_c_ends_the_whole_group_and_is_raised_again(tmp_path: Path) -> None:
    """The command runs in a session of its own, so a terminal's Ctrl-C reaches only cuship:
    the runner must end the group itself."""
    pids = tmp_path / "pids"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with subprocess.Popen(
        [sys.executable, "-c", _DRIVER, FAMILY.format(pids=pids)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    ) as driver:
        shell, grandchild = _read_pids(pids)
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=120)
    assert "KeyboardInterrupt" in stderr
    assert driver.returncode != 0
    assert _gone(shell) and _gone(grandchild)


def test_a_missing_tool_is_tool_missing_with_its_fix(tmp_path: Path) -> None:
    with pytest.raises(ToolMissing) as caught:
        process.run([str(tmp_path / "ncu"), "--version"], name="ncu", hint="install Nsight")
    err = caught.value
    assert isinstance(err, CannotStart) and err.exit_code == 3
    assert err.message == "cannot run 'ncu': No such file or directory"
    assert err.hint == "install Nsight"
    plain = tmp_path / "tool"
    plain.write_text("#!/bin/sh\n")  # not executable
    with pytest.raises(CannotStart) as caught:
        process.run([str(plain)])
    assert caught.value.reason == "Permission denied"
    assert caught.value.hint == f"check that {str(plain)!r} is installed and executable"


def test_a_missing_working_directory_is_not_a_missing_tool(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        process.run(["true"], cwd=tmp_path / "nowhere")


def test_output_tail_input_and_check(tmp_path: Path) -> None:
    script = 'for i in 1 2 3 4 5; do echo "err $i" >&2; done; echo out; cat'
    done = process.run(["sh", "-c", script], input="from stdin\n")
    assert done.ok and done.stdout == "out\nfrom stdin\n"
    assert done.tail(2) == "err 4\nerr 5"
    assert process.tail(done.output, 1) == "err 5"
    quiet = process.run(["sh", "-c", "echo only; exit 4"])
    assert (quiet.returncode, quiet.tail()) == (4, "only")
    with pytest.raises(CheckFailed, match=r"exit 4\):\nonly"):
        process.run(["sh", "-c", "echo only >&2; exit 4"], check=True)


def test_a_log_gets_stdout_and_stderr_in_order(tmp_path: Path) -> None:
    log = tmp_path / "stage.log"
    with log.open("a", encoding="utf-8") as out:
        done = process.run(["sh", "-c", "echo one; echo two >&2; echo three"], log=out)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert log.read_text().splitlines() == ["one", "two", "three"]


def test_a_started_child_is_ended_with_its_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    child = process.start(["sh", "-c", FAMILY.format(pids=pids)])
    shell, grandchild = _read_pids(pids)
    assert child.poll() is None
    with pytest.raises(TimeoutError):
        child.wait(timeout=0.1)
    child.end()
    assert child.returncode == -signal.SIGKILL
    assert _gone(shell) and _gone(grandchild)
