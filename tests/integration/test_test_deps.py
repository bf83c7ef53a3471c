"""`tools/test-deps`, the first step of the README's test command: Chromium for the dashboard test,
valgrind for the instruction-count gate."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "test-deps"


def _run(path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The script with only ``path`` on PATH (so neither the real tools nor apt-get is seen)."""
    return subprocess.run(
        ["/bin/bash", str(SCRIPT)],
        env={"PATH": str(path), **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def test_chromium_and_valgrind_on_path_are_enough(tmp_path: Path) -> None:
    _executable(tmp_path / "chromium", "#!/bin/sh\n")
    _executable(tmp_path / "valgrind", "#!/bin/sh\n")
    done = _run(tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_without_apt_get_it_says_what_to_install_and_lets_the_tests_run(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "chromium not found on PATH" in done.stderr
    assert "apt-get install -y --no-install-recommends chromium" in done.stderr
    assert "valgrind not found on PATH" in done.stderr
    assert "apt-get install -y valgrind" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_as_root_with_apt_get_it_installs_valgrind_and_chromium(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    fake_apt = (  # installs the last word as an executable
        f'#!/bin/bash\necho "$*" >> {calls}\n'
        f'if [ "$1" = install ]; then tool="${{@: -1}}"; printf "#!/bin/sh\\n" > {tmp_path}/$tool; '
        f"/bin/chmod +x {tmp_path}/$tool; fi\n"
    )
    _executable(tmp_path / "apt-get", fake_apt)
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        "update -qq",
        "install -y -qq --no-install-recommends valgrind",
        "install -y -qq --no-install-recommends chromium",
    ]
    assert (tmp_path / "chromium").is_file() and (tmp_path / "valgrind").is_file()


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_as_root_a_failed_install_stops_the_set_up(tmp_path: Path) -> None:
    _executable(tmp_path / "valgrind", "#!/bin/sh\n")  # chromium is the one to install
    _executable(
        tmp_path / "apt-get",
        '#!/bin/bash\n[ "$1" = update ] || echo "E: no such package"\n[ "$1" = update ]\n',
    )
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "E: no such package" in done.stderr  # apt-get's own words, then ours
    assert "apt-get could not install chromium" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_as_root_an_install_that_leaves_no_chromium_says_so(tmp_path: Path) -> None:
    _executable(tmp_path / "apt-get", "#!/bin/bash\n")
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "apt-get installed no valgrind" in done.stderr
    _executable(tmp_path / "valgrind", "#!/bin/sh\n")
    done = _run(tmp_path)
    assert done.returncode == 1
    assert "apt-get installed no working chromium" in done.stderr


_LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)"


def _locking_apt(tmp_path: Path, locked_calls: int) -> Path:
    """An apt-get whose first ``locked_calls`` installs find dpkg's lock held; the next one
    installs chromium (valgrind is on PATH already). Its calls are in the file it returns."""
    calls = tmp_path / "calls"
    _executable(tmp_path / "valgrind", "#!/bin/sh\n")
    _executable(
        tmp_path / "apt-get",
        f'#!/bin/bash\necho "$*" >> {calls}\n[ "$1" = update ] && exit 0\n'
        f"if [ $(/usr/bin/wc -l < {calls}) -le {locked_calls + 1} ]; then "
        f'echo "{_LOCKED}" >&2; exit 100; fi\n'
        f'printf "#!/bin/sh\\n" > {tmp_path}/chromium; /bin/chmod +x {tmp_path}/chromium\n',
    )
    return calls


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_as_root_a_held_dpkg_lock_is_named_not_called_a_broken_install(tmp_path: Path) -> None:
    calls = _locking_apt(tmp_path, locked_calls=99)
    done = _run(tmp_path, TEST_DEPS_LOCK_WAIT="0")
    assert done.returncode == 1
    assert (
        "apt-get install: the lock /var/lib/dpkg/lock-frontend is held by process 4242 (apt-get)"
        in done.stderr
    )
    assert "no working chromium" not in done.stderr and "could not install" not in done.stderr
    assert len(calls.read_text().splitlines()) == 2, "no second package tried while locked"


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_as_root_a_lock_freed_while_waiting_lets_the_install_go_on(tmp_path: Path) -> None:
    sleep = shutil.which("sleep")
    assert sleep is not None
    (tmp_path / "sleep").symlink_to(sleep)
    calls = _locking_apt(tmp_path, locked_calls=1)
    done = _run(tmp_path, TEST_DEPS_LOCK_WAIT="30")
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        "update -qq",
        "install -y -qq --no-install-recommends chromium",  # the lock is held
        "install -y -qq --no-install-recommends chromium",  # 2 s later, it is free
    ]
