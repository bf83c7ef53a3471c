"""The import smoke test's venvs: isolated first, a venv over the builder's site-packages when
the isolated install cannot fetch dependencies, and what the outcome then says. The commands
are answered by a fake runner (pip as seen offline); the real thing runs in the integration
tests with an index on a dead port."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from cuship.builder.host.interpreters import Interpreter
from cuship.builder.model import Step
from cuship.builder.run.commands import BuildFailed
from cuship.builder.run.job import JobSmoke, JobWork
from cuship.builder.run.smoke import LAYER_PTH, Smoke, SmokeMode, smoke_test, uv_index_flags
from cuship.events import Event, collect

WHEEL = Path("/out/cuvecops-0.1.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl")
OFFLINE = (
    "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError("
    "Failed to establish a new connection: [Errno 111] Connection refused)': /simple/numpy/\n"
    "ERROR: Could not find a version that satisfies the requirement numpy>=1.26 (from versions: none)\n"
    "ERROR: No matching distribution found for numpy>=1.26\n"
)


PY312 = Interpreter(
    version="3.12", full="3.12.1", executable="/opt/py312/bin/python3.12", source="pyenv"
)
SITE = "/out/envs/cp312-abc/lib/python3.12/site-packages"


def _job(tmp_path: Path, mode: SmokeMode = "auto") -> JobWork:
    """The job whose wheel is smoke-tested: its interpreter, venv mode and builder site; its
    ``raw_dir``'s ``tmp`` is ``tmp_path / "tmp"``."""
    return JobWork(
        job_id="cuvecops-0.1.0-cp312-cu130",
        steps=(),
        raw_dir=tmp_path,
        out_dir=tmp_path / "out",
        log=tmp_path / "job.log",
        label="cu130",
        arches="8.0",
        test_import="cuvecops",
        smoke=JobSmoke(python=PY312, mode=mode, site_dirs=(SITE,)),
    )


class _Pip:
    """Answers the smoke test's commands as a host without network would."""

    def __init__(self, *, online: bool = False, check: str = "", origin: str | None = None):
        self.online, self.check, self.origin = online, check, origin
        self.steps: list[Step] = []

    def __call__(self, step: Step, log: Path, environ: Mapping[str, str]) -> tuple[int, str]:
        self.steps.append(step)
        if step.name == "smoke-venv":
            Path(step.argv[-1]).mkdir(parents=True)
            return 0, ""
        if step.name == "smoke-site":
            purelib = Path(step.argv[0]).parent.parent / "lib" / "site-packages"
            purelib.mkdir(parents=True)
            return 0, f"{purelib}\n"
        if step.name == "smoke-install":
            offline = not self.online and "--no-index" not in step.argv
            return (1, OFFLINE) if offline else (0, "")
        if step.name == "smoke-check":
            return (1 if self.check else 0), self.check or "No broken requirements found.\n"
        origin = self.origin or f"{Path(step.argv[0]).parent.parent}/lib/cuvecops/__init__.py"
        return 0, f"cuship-smoke: cuvecops 0.1.0 cpu\ncuship-origin: {origin}\n"

    def names(self) -> list[str]:
        return [s.name for s in self.steps]


def _smoke(
    tmp_path: Path, pip: _Pip, mode: SmokeMode = "auto", events: list[Event] | None = None
) -> Smoke:
    return smoke_test(
        WHEEL,
        _job(tmp_path, mode),
        links_torch=False,
        environ={},
        emit=collect(events if events is not None else []),
        runner=pip,
    )


def test_online_the_wheel_is_installed_with_its_dependencies_in_an_empty_venv(
    tmp_path: Path,
) -> None:
    pip = _Pip(online=True)
    smoke = _smoke(tmp_path, pip)
    assert smoke == Smoke(said="cuvecops 0.1.0 cpu", env="isolated")
    assert pip.names() == ["smoke-venv", "smoke-install", "smoke-import"]
    venv = pip.steps[0].argv
    assert venv[0] == "/opt/py312/bin/python3.12", "the job's own interpreter"
    assert "--system-site-packages" not in venv
    assert "--no-deps" not in pip.steps[1].argv
    assert str(tmp_path / "tmp") in pip.steps[0].argv[-1], "the venv lives in the job's directory"
    assert not list((tmp_path / "tmp").iterdir()), "and is gone afterwards"


def test_offline_a_good_wheel_passes_in_a_venv_over_the_builder_s_site(tmp_path: Path) -> None:
    pip, events = _Pip(), list[Event]()
    smoke = _smoke(tmp_path, pip, events=events)
    assert smoke.said == "cuvecops 0.1.0 cpu" and smoke.env == "system-site"
    assert smoke.note is not None
    assert (
        "the isolated install failed (ERROR: No matching distribution found for numpy>=1.26)"
        in (smoke.note)
    )
    assert smoke.summary() == "cuvecops 0.1.0 cpu (system-site)"
    assert pip.names() == [
        "smoke-venv",
        "smoke-install",
        "smoke-venv",
        "smoke-site",
        "smoke-install",
        "smoke-check",
        "smoke-import",
    ]
    assert "--system-site-packages" in pip.steps[2].argv
    install = pip.steps[4].argv
    assert {"--no-deps", "--no-index"} <= set(install) and install[-1] == str(WHEEL)
    (warning,) = [e for e in events if e.level == "warning"]
    assert WHEEL.name in warning.message and "builder's site-packages" in warning.message


def test_the_system_site_venv_sees_the_build_venv_s_packages(tmp_path: Path) -> None:
    pip = _Pip()
    written: list[str] = []

    def keep_layer(step: Step, log: Path, environ: Mapping[str, str]) -> tuple[int, str]:
        answer = pip(step, log, environ)
        if step.name == "smoke-check":  # the .pth is written before pip check runs
            layer = next(Path(step.cwd or "").rglob(LAYER_PTH))
            written.extend(layer.read_text().splitlines())
        return answer

    smoke_test(
        WHEEL, _job(tmp_path, "system-site"), links_torch=False, environ={}, runner=keep_layer
    )
    assert written == [
        "import site; site.addsitedir('/out/envs/cp312-abc/lib/python3.12/site-packages')"
    ]
    assert "smoke-venv" in pip.names() and pip.names().count("smoke-install") == 1


def test_missing_requirements_offline_are_said_not_failed(tmp_path: Path) -> None:
    check = (
        "cuvecops 0.1.0+cu130 requires numpy, which is not installed.\n"
        "someone-else 1.0 requires left-pad, which is not installed.\n"
    )
    smoke = _smoke(tmp_path, _Pip(check=check))
    assert smoke.said is None and smoke.env == "system-site"
    assert smoke.summary() == "not run (system-site)"
    assert smoke.note is not None
    assert smoke.note.endswith(
        "not imported: its requirements are not met here: "
        "cuvecops 0.1.0+cu130 requires numpy, which is not installed."
    )
    assert "left-pad" not in smoke.note, "other distributions' problems are not this wheel's"


def test_isolated_mode_fails_the_wheel_with_pip_s_own_line(tmp_path: Path) -> None:
    with pytest.raises(BuildFailed) as caught:
        _smoke(tmp_path, _Pip(), mode="isolated")
    assert "No matching distribution found for numpy>=1.26" in str(caught.value)
    assert caught.value.hint is not None and "'auto'" in caught.value.hint


def test_a_copy_shadowing_the_wheel_fails_the_import(tmp_path: Path) -> None:
    with pytest.raises(BuildFailed) as caught:
        _smoke(tmp_path, _Pip(origin="/src/cuvecops/__init__.py"), mode="system-site")
    assert "imported from '/src/cuvecops/__init__.py', not from the wheel" in str(caught.value)


def test_uv_installs_the_isolated_venv_from_the_index_pip_would_use(tmp_path: Path) -> None:
    pip = _Pip(online=True)
    environ = {
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_EXTRA_INDEX_URL": "https://a/simple https://b/simple",
        "PIP_FIND_LINKS": "/wheels",
    }
    smoke = smoke_test(
        WHEEL, _job(tmp_path), links_torch=False, environ=environ, runner=pip, uv="/usr/bin/uv"
    )
    assert smoke.env == "isolated"
    install = pip.steps[1].argv
    assert install[:5] == ("/usr/bin/uv", "pip", "install", "-q", "--python")
    assert install[6:-1] == (
        "--index-url",
        "http://127.0.0.1:9/simple",
        "--extra-index-url",
        "https://a/simple",
        "--extra-index-url",
        "https://b/simple",
        "--find-links",
        "/wheels",
    )
    assert uv_index_flags({"PIP_INDEX_URL": "x", "UV_INDEX_URL": "y", "PIP_NO_INDEX": "1"}) == (
        "--no-index",
    ), "uv's own index setting wins over pip's"
