"""The backend's hooks as a frontend calls them, one process each: one decision per run.

A frontend (pip, uv, build) calls get_requires_for_build_wheel, prepare_metadata_for_build_wheel
and build_wheel in separate processes; here each call gets its own :class:`Prebuilt`, as each
process would, with the same ``frontend`` key. The real backend is a module written per test.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import cuship.backend
from cuship.errors import CheckFailed, ToolMissing, UsageError
from cuship.events import Event, collect
from cuship.index import write
from cuship.resolve.backend import Prebuilt
from cuship.resolve.stash import STASH, frontend_key
from cuship.wheel.write.retag import record_hash
from tests.wheel_factory import make_wheel

ENV = {"CUSHIP_GPUS": "none", "CUSHIP_TORCH": "none", "CUSHIP_NVCC": "none", "PATH": "/nonexistent"}
LABELLED = "tinyp-0.1.0+cu128-py3-none-any.whl"
HANDED = "tinyp-0.1.0-py3-none-any.whl"
KINDS = ("sdist", "wheel", "editable")

_REAL_BACKEND = """
import json, pathlib
from tests.wheel_factory import make_wheel
CALLS = pathlib.Path(__file__).with_suffix(".calls")

def _called(name):
    with CALLS.open("a") as out:
        out.write(name + "\\n")

def get_requires_for_build_sdist(config_settings=None):
    return ["sdist-helper>=1"]

def get_requires_for_build_wheel(config_settings=None):
    return ["wheel-helper>=2"]

def build_sdist(sdist_directory, config_settings=None):
    _called("build_sdist")
    (pathlib.Path(sdist_directory) / "tinyp-0.1.0.tar.gz").write_bytes(b"sdist")
    return "tinyp-0.1.0.tar.gz"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _called("build_wheel")
    return make_wheel(pathlib.Path(wheel_directory), "tinyp", "0.1.0",
                      modules={"tinyp": "VERSION = 'source'\\n"}).name

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _called("build_editable")
    return make_wheel(pathlib.Path(wheel_directory), "tinyp", "0.1.0",
                      modules={"_tinyp_editable": "import sys\\n"}).name

import types
NO_EDITABLE = types.SimpleNamespace(build_wheel=build_wheel)
"""


@pytest.fixture
def real_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real backend module ``fake_real_backend``; yields the file its calls are logged in."""
    where = tmp_path / "backends"
    where.mkdir()
    (where / "fake_real_backend.py").write_text(_REAL_BACKEND)
    monkeypatch.syspath_prepend(str(where))
    yield where / "fake_real_backend.calls"
    sys.modules.pop("fake_real_backend", None)


def _site(tmp_path: Path) -> Path:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinyp", "0.1.0+cu128", modules={"tinyp": "VERSION = 'prebuilt'\n"})
    site = tmp_path / "site"
    write([wheels], site)
    return site


def _project(tmp_path: Path, index: str, backend: str = "fake_real_backend") -> Path:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "tinyp"\nversion = "0.1.0"\n\n[tool.cuship.prebuilt]\n'
        f'index = "{index}"\nbackend = "{backend}"\nbuild-requires = ["fake-real-backend>=1"]\n'
    )
    return project


def _hook(project: Path, events: list[Event] | None = None, **env: str) -> Prebuilt:
    """The hooks as one hook process of the frontend run "run-1" sees them."""
    sink = collect(events if events is not None else [])
    return Prebuilt(project=project, environ={**ENV, **env}, emit=sink, frontend="run-1")


def _dirs(tmp_path: Path, *names: str) -> list[Path]:
    made = [tmp_path / name for name in names]
    for path in made:
        path.mkdir()
    return made


def _members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_run_keeps_its_prebuilt_decision_after_the_index_goes(tmp_path: Path) -> None:
    site = _site(tmp_path)
    project = _project(tmp_path, (site / "simple").as_uri())
    events: list[Event] = []
    assert _hook(project, events).get_requires_for_build_wheel() == []
    said = [e.message for e in events if e.level != "debug"]
    assert f"using prebuilt {LABELLED} (sha256 verified) from " in said[-2]
    assert said[-1] == f"handing over {HANDED} (its provenance in .dist-info/cuship.json)"
    shutil.rmtree(site)  # the server is gone before the next hook runs: the decision stands
    meta, out = _dirs(tmp_path, "meta", "out")
    dist_info = _hook(project).prepare_metadata_for_build_wheel(str(meta))
    assert dist_info == "tinyp-0.1.0.dist-info"
    assert "Version: 0.1.0\n" in (meta / dist_info / "METADATA").read_text()
    name = _hook(project).build_wheel(str(out), None, str(meta / dist_info))
    assert name == HANDED
    files = _members(out / name)
    assert files["tinyp.py"] == b"VERSION = 'prebuilt'\n"
    assert files[f"{dist_info}/cuship.json"] == (meta / dist_info / "cuship.json").read_bytes()
    record = json.loads(files[f"{dist_info}/cuship.json"])
    expected = (tmp_path / "wheels" / LABELLED).read_bytes()
    assert record["kind"] == "prebuilt" and record["filename"] == LABELLED
    assert record["label"] == "cu128" and record["version"] == "0.1.0"
    assert record["sha256"] == hashlib.sha256(expected).hexdigest()
    assert record["index"] == (site / "simple").as_uri()
    rows = files[f"{dist_info}/RECORD"].decode()
    data = files[f"{dist_info}/cuship.json"]
    assert f"{dist_info}/cuship.json,{record_hash(data)},{len(data)}\n" in rows
    assert not (project / STASH).exists()  # build_wheel cleans up after the run


def test_a_run_keeps_its_source_decision_after_the_index_comes_back(
    tmp_path: Path, real_backend: Path
) -> None:
    site = _site(tmp_path)
    project = _project(tmp_path, (tmp_path / "not-yet").as_uri())
    events: list[Event] = []
    needs = _hook(project, events).get_requires_for_build_wheel()
    assert needs == ["fake-real-backend>=1", "wheel-helper>=2"]
    assert any(
        "building tinyp from source with fake_real_backend: no prebuilt" in e.message
        for e in events
    )
    shutil.copytree(site, tmp_path / "not-yet")  # a wheel appears: this run still builds
    (out,) = _dirs(tmp_path, "out")
    name = _hook(project).build_wheel(str(out))
    assert real_backend.read_text() == "build_wheel\n"
    files = _members(out / name)
    assert files["tinyp.py"] == b"VERSION = 'source'\n"
    record = json.loads(files["tinyp-0.1.0.dist-info/cuship.json"])
    assert record["kind"] == "source" and record["backend"] == "fake_real_backend"
    assert record["why"].startswith("no prebuilt wheel:") and record["filename"] is None
    assert record["index"] == (tmp_path / "not-yet").as_uri()  # the index it tried


def test_a_dynamic_version_is_recorded_once_the_wheel_is_built(
    tmp_path: Path, real_backend: Path
) -> None:
    project = _project(tmp_path, (tmp_path / "nope").as_uri())
    text = (
        (project / "pyproject.toml")
        .read_text()
        .replace('version = "0.1.0"', 'dynamic = ["version"]')
    )
    (project / "pyproject.toml").write_text(text)
    assert _hook(project).get_requires_for_build_wheel()[0] == "fake-real-backend>=1"
    (out,) = _dirs(tmp_path, "out")
    events: list[Event] = []
    name = _hook(project, events).build_wheel(str(out))
    assert not [e for e in events if e.message.startswith("building")]  # the saved decision
    record = json.loads(_members(out / name)["tinyp-0.1.0.dist-info/cuship.json"])
    assert record["version"] == "0.1.0" and record["why"].startswith("the version is dynamic")


def test_metadata_without_a_real_metadata_hook_builds_once(
    tmp_path: Path, real_backend: Path
) -> None:
    project = _project(tmp_path, (tmp_path / "nope").as_uri())
    meta, out = _dirs(tmp_path, "meta", "out")
    dist_info = _hook(project).prepare_metadata_for_build_wheel(str(meta))
    assert (meta / dist_info / "cuship.json").is_file()
    assert _hook(project).build_wheel(str(out), None, str(meta / dist_info)) == HANDED
    assert real_backend.read_text() == "build_wheel\n"  # the wheel built for metadata is reused


def test_another_run_decides_anew_and_dead_runs_are_swept(tmp_path: Path) -> None:
    site = _site(tmp_path)
    project = _project(tmp_path, (site / "simple").as_uri())
    stale = project / STASH / "999999999-1"  # a frontend process that no longer exists
    stale.mkdir(parents=True)
    assert _hook(project).get_requires_for_build_wheel() == []
    assert not stale.exists()
    events: list[Event] = []
    other = Prebuilt(project=project, environ=ENV, emit=collect(events), frontend="run-2")
    (out,) = _dirs(tmp_path, "out")
    assert other.build_wheel(str(out)) == HANDED
    assert any(e.message.startswith("using prebuilt") for e in events)  # its own decision
    assert sorted(p.name for p in (project / STASH).iterdir()) == ["run-1"]


def test_a_stashed_wheel_changed_between_hooks_is_refused(tmp_path: Path) -> None:
    site = _site(tmp_path)
    project = _project(tmp_path, (site / "simple").as_uri())
    assert _hook(project).get_requires_for_build_wheel() == []
    stashed = project / STASH / "run-1" / HANDED
    stashed.write_bytes(stashed.read_bytes() + b"changed")
    (out,) = _dirs(tmp_path, "out")
    with pytest.raises(CheckFailed, match=r"changed after cuship\.backend verified it"):
        _hook(project).build_wheel(str(out))
    assert not (out / HANDED).exists()


def test_without_a_frontend_each_hook_decides_and_leaves_nothing(tmp_path: Path) -> None:
    site = _site(tmp_path)
    project = _project(tmp_path, (site / "simple").as_uri())
    alone = Prebuilt(project=project, environ=ENV)
    assert alone.get_requires_for_build_wheel() == []
    (out,) = _dirs(tmp_path, "out")
    assert alone.build_wheel(str(out)) == HANDED
    assert sorted(p.name for p in out.iterdir()) == [HANDED]
    assert not (project / STASH).exists()


def test_sdist_hooks_ask_for_the_real_backend_then_use_it(
    tmp_path: Path, real_backend: Path
) -> None:
    unimportable = _project(tmp_path, "https://unused.invalid/simple", backend="no_such_backend")
    assert _hook(unimportable).get_requires_for_build_sdist() == ["fake-real-backend>=1"]
    with pytest.raises(ToolMissing, match="'no_such_backend' cannot be imported") as caught:
        _hook(unimportable).build_sdist(str(tmp_path))
    assert "install ['fake-real-backend>=1'] into the build environment" in str(caught.value)
    project = _project(tmp_path, "https://unused.invalid/simple")
    needs = _hook(project).get_requires_for_build_sdist()
    assert needs == ["fake-real-backend>=1", "sdist-helper>=1"]
    events: list[Event] = []
    assert _hook(project, events).build_sdist(str(tmp_path)) == "tinyp-0.1.0.tar.gz"
    assert real_backend.read_text() == "build_sdist\n"
    warning = next(e.message for e in events if e.level == "warning")
    assert warning.startswith("fake_real_backend also asks for ['sdist-helper>=1']")


def test_editable_installs_always_build_from_source(tmp_path: Path, real_backend: Path) -> None:
    site = _site(tmp_path)  # a fitting prebuilt wheel is there; an editable install ignores it
    project = _project(tmp_path, (site / "simple").as_uri())
    events: list[Event] = []
    assert _hook(project, events).get_requires_for_build_editable() == ["fake-real-backend>=1"]
    assert [e.message for e in events] == [
        "building tinyp from source with fake_real_backend: an editable install is built from "
        "its source tree"
    ]
    with pytest.raises(CheckFailed, match="CUSHIP_NO_BUILD=1 and an editable install"):
        _hook(project, CUSHIP_NO_BUILD="1").get_requires_for_build_editable()
    assert not real_backend.exists()  # nothing was built by asking
    meta, out = _dirs(tmp_path, "meta", "out")
    # the real backend has no prepare_metadata_for_build_editable: built, then extracted
    assert _hook(project).prepare_metadata_for_build_editable(str(meta)) == "tinyp-0.1.0.dist-info"
    assert sorted(p.name for p in meta.iterdir()) == ["tinyp-0.1.0.dist-info"]
    assert _hook(project).build_editable(str(out)) == HANDED
    assert real_backend.read_text() == "build_editable\nbuild_editable\n"
    plain = _project(tmp_path, (site / "simple").as_uri(), backend="fake_real_backend:NO_EDITABLE")
    with pytest.raises(UsageError, match="cannot make editable installs") as caught:
        _hook(plain).build_editable(str(out))
    assert caught.value.hint == "install without -e, or use a backend with PEP 660 support"


def test_the_entry_point_reports_errors_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, (tmp_path / "nope").as_uri(), backend="no_such_backend")
    monkeypatch.chdir(project)
    for name, value in {**ENV, "CUSHIP_NO_BUILD": "1"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        cuship.backend.get_requires_for_build_wheel()
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("cuship.backend: judging for ")  # which environment it judged
    assert "\ncuship.backend: error: CUSHIP_NO_BUILD=1 and no prebuilt wheel" in err
    assert "\n  hint: unset CUSHIP_NO_BUILD" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exited:
        cuship.backend.build_editable(str(tmp_path))
    assert exited.value.code == 3
    assert "'no_such_backend' cannot be imported" in capsys.readouterr().err


def test_every_hook_is_there_without_the_real_backend() -> None:
    """pip asks which hooks exist (before -e) in an environment that holds only cuship."""
    hooks = [f"get_requires_for_build_{kind}" for kind in KINDS]
    hooks += [f"build_{kind}" for kind in KINDS]
    hooks += [f"prepare_metadata_for_build_{kind}" for kind in ("wheel", "editable")]
    assert sorted(hooks) == sorted(cuship.backend.__all__)
    assert all(callable(getattr(cuship.backend, hook)) for hook in hooks)


def test_frontend_key_names_a_live_process_only() -> None:
    mine = frontend_key(1)
    assert mine is not None and mine.startswith("1")
    if Path("/proc/self/stat").exists():
        assert frontend_key(999_999_999) is None
