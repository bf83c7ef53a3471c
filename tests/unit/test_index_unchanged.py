"""Rerunning the index over the whole wheel folder: a project whose wheels, yanks and other
inputs are what its manifest was last rendered from is not rendered again, however the wheels
are named; anything that changes a project renders it, and the bytes are a full rebuild's."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cuship.index import update as update_module
from cuship.index import write
from cuship.index._retire import RETIRED, Retired
from cuship.index.describe import describe_wheel
from tests.sitecheck import published
from tests.wheel_factory import make_wheel


def _tree(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in published(site) if p.is_file()}


def _listed(site: Path) -> dict[str, bytes]:
    """The site's files less what an update retired (kept until the next update that
    changes something) and its record."""
    retired = set(Retired.read(site).retired) | {RETIRED}
    return {
        path: data
        for path, data in _tree(site).items()
        if not any(path == r or path.startswith(f"{r}/") for r in retired)
    }


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "wheels"
    make_wheel(d, "alpha", "1.0")
    make_wheel(d, "alpha", "1.1+cu130")
    make_wheel(d, "beta", "0.1")
    make_wheel(d, "gamma", "2.0+cu128torch2.8")
    return d


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The projects each update renders, in order."""
    seen: list[str] = []
    from cuship.index.render import project_tree as real

    def counting(project: str, *args: object, **kwargs: object) -> dict[str, bytes]:
        seen.append(project)
        return real(project, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(update_module, "project_tree", counting)
    return seen


def _index(given: list[Path], site: Path, **options: object) -> object:
    return write(given, site, describe=describe_wheel, **options)  # type: ignore[arg-type]


def test_an_unchanged_rerun_renders_no_project_and_changes_no_byte(
    tmp_path: Path, folder: Path, rendered: list[str]
) -> None:
    site = tmp_path / "site"
    _index([folder], site)
    before = _tree(site)
    summary = write([folder], site, describe=describe_wheel)
    assert rendered == []
    assert _tree(site) == before
    assert (summary.wheels, summary.projects, summary.cached, summary.hashed) == (4, 3, 4, 0)
    assert summary.rewritten == 0


def test_a_new_wheel_renders_its_project_alone_and_gives_a_rebuild_s_bytes(
    tmp_path: Path, folder: Path, rendered: list[str]
) -> None:
    site = tmp_path / "site"
    _index([folder], site)
    make_wheel(folder, "beta", "0.2")
    _index([folder], site)
    assert rendered == ["beta"]
    _index([folder], site)  # the next rerun is quiet again
    assert rendered == ["beta"]
    twin = tmp_path / "twin"
    _index([folder], twin)
    assert _tree(site) == _tree(twin)


def test_the_same_wheels_named_otherwise_render_nothing(
    tmp_path: Path, folder: Path, rendered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    site = Path("site")
    _index([Path("wheels")], site)  # a relative folder
    before = _tree(site)
    _index(sorted(Path("wheels").iterdir()), site)  # the shell's wheels/*.whl
    _index([folder], site)  # the absolute folder
    _index([Path("./wheels/")], site)  # spelt with parts a Path drops
    assert rendered == []
    assert _tree(site) == before


def _yank(folder: Path, site: Path) -> dict[str, object]:
    return {"yanked": {"beta==0.1": "broken"}}


def _base_url(folder: Path, site: Path) -> dict[str, object]:
    return {"base_url": "https://example.org/dl"}


def _wheel_gone(folder: Path, site: Path) -> dict[str, object]:
    (folder / "alpha-1.0-py3-none-any.whl").unlink()
    return {}


def _wheel_touched(folder: Path, site: Path) -> dict[str, object]:
    os.utime(folder / "beta-0.1-py3-none-any.whl")
    return {}


def _manifest_touched(folder: Path, site: Path) -> dict[str, object]:
    os.utime(site / "simple" / "gamma" / "cuship.json")
    return {}


def _manifest_edited(folder: Path, site: Path) -> dict[str, object]:
    (site / "simple" / "beta" / "cuship.json").write_text("{}")
    return {}


def _attestation_added(folder: Path, site: Path) -> dict[str, object]:
    (folder / "alpha-1.0-py3-none-any.whl.intoto.jsonl").write_text("{}\n")
    return {}


CHANGES: dict[str, tuple[Callable[[Path, Path], dict[str, object]], set[str]]] = {
    "a yank": (_yank, {"beta"}),
    "a base URL": (_base_url, {"alpha", "beta", "gamma"}),
    "a wheel gone": (_wheel_gone, {"alpha"}),
    "a wheel touched": (_wheel_touched, {"beta"}),
    "a manifest touched": (_manifest_touched, {"gamma"}),
    "a manifest edited": (_manifest_edited, {"beta"}),
    "an attestation beside a wheel": (_attestation_added, {"alpha"}),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_what_changes_a_project_renders_it_with_a_rebuild_s_bytes(
    tmp_path: Path, folder: Path, rendered: list[str], change: str
) -> None:
    site = tmp_path / "site"
    _index([folder], site)
    make, projects = CHANGES[change]
    options = make(folder, site)
    _index([folder], site, **options)
    assert set(rendered) == projects
    twin = tmp_path / "twin"
    _index([folder], twin, **options)
    # (the wheels themselves: an update to a base URL leaves them in files/, as before)
    assert _pages(_listed(site)) == _pages(_tree(twin))


def _pages(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in tree.items() if not path.endswith(".whl")}


def test_a_stopped_run_leaves_no_mark_and_its_rerun_renders_everything(
    tmp_path: Path, folder: Path, rendered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _index([folder], site)
    make_wheel(folder, "gamma", "2.1")

    def stop(*args: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(update_module, "_commit", stop)
        with pytest.raises(KeyboardInterrupt):
            _index([folder], site)
    _index([folder], site)  # completes the stopped run: renders every project, as before
    assert rendered == ["gamma", "alpha", "beta", "gamma"]
    _index([folder], site)
    assert len(rendered) == 4, "the run completed, its marks are recorded"
    twin = tmp_path / "twin"
    shutil.rmtree(twin, ignore_errors=True)
    _index([folder], twin)
    assert _tree(site) == _tree(twin)


@pytest.mark.parametrize("where", ["w.whl", "a/b.whl", "./a/b.whl", "a//b.whl", "a/../b.whl"])
def test_a_relative_path_s_cache_key_is_its_absolute_path(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cuship.index.scan import cache_key

    monkeypatch.chdir(tmp_path)
    assert cache_key(where) == cache_key(Path(where)) == str(Path(where).absolute())
