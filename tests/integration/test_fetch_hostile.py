"""Downloads against servers that drip, never stop, or loop (issue 34, items 3 and 8): every
page and wheel is bounded by the size the index declares and by a deadline that holds against a
byte a second; the backend falls back to a source build (or stops with the reason under
CUSHIP_NO_BUILD=1) when its download times out. Deadlines are set short through the settings,
so each test takes seconds; the subprocess timeout is only a backstop against a hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship import settings
from cuship.errors import CheckFailed
from cuship.events import Event, collect
from cuship.index import write
from cuship.resolve.backend import Prebuilt
from cuship.resolve.http import FetchOptions
from tests.integration.clirun import cuship
from tests.integration.hostileserver import hostile_server
from tests.integration.indexsite import clean_env
from tests.wheel_factory import make_wheel

DEADLINE = "3"
BACKSTOP = 60  # seconds: a run that hangs fails here instead of hanging the suite


@pytest.fixture
def site(tmp_path: Path) -> Path:
    make_wheel(tmp_path / "wheels", "tinyp", "0.1.0", modules={"tinyp": "X = 1\n" * 200})
    out = tmp_path / "site"
    write([tmp_path / "wheels"], out)
    return out


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(tmp_path, CUSHIP_GPUS="none", CUSHIP_TORCH="none", **extra)


def _install(url: str, tmp_path: Path, *more: str, **env: str) -> tuple[int, str]:
    done = cuship(
        "install", "tinyp", "--index", url, "--timeout", "1", "--download-dir",
        str(tmp_path / "dl"), *more, env=_env(tmp_path, **env), timeout=BACKSTOP,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_a_dripped_page_ends_at_the_deadline(site: Path, tmp_path: Path) -> None:
    with hostile_server(site, "drip-page") as (url, sent):
        done = cuship(
            "resolve", "tinyp", "--index", url, "--timeout", "1", "--retries", "2",
            env=_env(tmp_path, **{settings.FETCH_DEADLINE: DEADLINE}), timeout=BACKSTOP,
        )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "not answered in full within" in said and "within the 3 s deadline" in said
    assert "Traceback" not in said
    assert 0 < len(sent) < 20  # a few bytes at 2 a second, then cut


def test_headers_that_never_end_end_at_the_try_deadline(site: Path, tmp_path: Path) -> None:
    """No deadline set: each try still ends after four read timeouts (here 4 s), though the
    server answers every read within the timeout."""
    with hostile_server(site, "stall-headers", pause=0.2) as (url, _):
        done = cuship(
            "resolve", "tinyp", "--index", url, "--timeout", "1", "--retries", "0",
            env=_env(tmp_path), timeout=BACKSTOP,
        )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "not answered in full within 4 s" in said


def test_a_dripped_wheel_ends_at_the_deadline_and_leaves_nothing(
    site: Path, tmp_path: Path
) -> None:
    with hostile_server(site, "drip-wheel", pause=0.2) as (url, sent):
        code, said = _install(url, tmp_path, "--retries", "3", CUSHIP_FETCH_DEADLINE=DEADLINE)
    assert code == 2, said
    assert "downloading" in said and "within the 3 s deadline" in said
    assert len(sent) < 40
    assert not list((tmp_path / "dl").glob("*")), "a partial download was left"


def test_an_endless_wheel_stops_at_the_declared_size(site: Path, tmp_path: Path) -> None:
    declared = (site / "files" / "tinyp-0.1.0-py3-none-any.whl").stat().st_size
    with hostile_server(site, "endless-wheel") as (url, sent):
        code, said = _install(url, tmp_path, "--retries", "0")
    assert code == 1, said
    assert f"sends more than the {declared} bytes the index declares" in said
    assert sum(sent) < 64 << 20  # the server wrote into buffers; cuship read `declared`+1
    assert not list((tmp_path / "dl").glob("*"))


def test_an_endless_wheel_of_undeclared_size_stops_at_the_cap(site: Path, tmp_path: Path) -> None:
    page = site / "simple" / "tinyp" / "index.json"
    page.write_text(page.read_text().replace('"size":', '"_size":'))
    with hostile_server(site, "endless-wheel") as (url, _):
        code, said = _install(url, tmp_path, "--retries", "0", CUSHIP_MAX_DOWNLOAD="1000000")
    assert code == 2, said
    assert "sends more than 1000000 bytes, the most cuship downloads" in said


def test_a_redirect_loop_is_named_as_one(site: Path, tmp_path: Path) -> None:
    with hostile_server(site, "redirect-loop") as (url, _):
        done = cuship("resolve", "tinyp", "--index", url, env=_env(tmp_path), timeout=BACKSTOP)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "redirects go round in a loop" in said and "only to http and https" not in said


def _project(tmp_path: Path, index: str) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "tinyp"\nversion = "0.1.0"\n\n[tool.cuship.prebuilt]\n'
        f'index = "{index}"\nbackend = "no_such_backend"\nbuild-requires = ["real-backend>=1"]\n'
    )
    return project


_QUICK = FetchOptions(timeout=1.0, retries=1, deadline=3.0)


def _backend(project: Path, events: list[Event], **env: str) -> Prebuilt:
    environ = {"CUSHIP_GPUS": "none", "CUSHIP_TORCH": "none", "CUSHIP_NVCC": "none", **env}
    return Prebuilt(project=project, environ=environ, emit=collect(events), options=_QUICK)


def test_the_backend_builds_from_source_when_the_wheel_drips(site: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    with hostile_server(site, "drip-wheel", pause=0.2) as (url, _):
        needs = _backend(_project(tmp_path, url), events).get_requires_for_build_wheel()
    assert needs == ["real-backend>=1"]  # the source build's requirements: it builds
    said = [e.message for e in events if e.level == "warning"]
    assert any(
        "building tinyp from source with no_such_backend: the prebuilt "
        "tinyp-0.1.0-py3-none-any.whl could not be fetched"
        in line
        and "within the 3 s deadline" in line
        for line in said
    ), said


def test_the_backend_stops_with_the_reason_under_no_build(site: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    with hostile_server(site, "drip-wheel", pause=0.2) as (url, _):
        hooks = _backend(_project(tmp_path, url), events, CUSHIP_NO_BUILD="1")
        with pytest.raises(CheckFailed, match=r"could not be fetched.*deadline"):
            hooks.get_requires_for_build_wheel()


def test_the_backend_refuses_a_wheel_larger_than_declared(site: Path, tmp_path: Path) -> None:
    """More bytes than the index declares is another file than the one listed: refused, as a
    sha256 mismatch is, never replaced by a source build."""
    events: list[Event] = []
    with hostile_server(site, "endless-wheel") as (url, _):
        hooks = _backend(_project(tmp_path, url), events)
        with pytest.raises(CheckFailed, match=r"sends more than the .* bytes the index declares"):
            hooks.get_requires_for_build_wheel()
