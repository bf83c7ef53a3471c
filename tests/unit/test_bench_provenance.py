"""bench refuses to time an unbuilt source tree under CUDA events, and records where code came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.bench.project import BenchProject
from cuship.bench.session import _provenance
from cuship.config import BenchSection
from cuship.errors import ToolMissing


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> BenchProject:
    package = tmp_path / "src" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "_kernels.cu").write_text("// the extension's source; nothing built\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    return BenchProject(
        root=tmp_path,
        name=name,
        package=name,
        config=BenchSection(),
        pythonpath=(tmp_path / "src",),
        packages=(name,),
    )


def test_cuda_timer_refuses_a_source_tree_without_its_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, monkeypatch, "cuship_unbuilt_pkg_a")
    with pytest.raises(ToolMissing, match=r"source tree .* which has no compiled extension") as err:
        _provenance(project, "cuda")
    assert "pip install dist/cuship_unbuilt_pkg_a-*.whl" in str(err.value)
    assert "[bench] pythonpath" in (err.value.hint or "")


def test_wall_timer_records_the_source_tree_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, monkeypatch, "cuship_unbuilt_pkg_b")
    provenance = _provenance(project, "wall")
    assert provenance is not None
    (package,) = provenance.packages
    assert package.origin == "source" and package.extensions == ()
    assert package.file == str(tmp_path / "src" / "cuship_unbuilt_pkg_b" / "__init__.py")


def test_no_packages_no_provenance(tmp_path: Path) -> None:
    project = BenchProject(
        root=tmp_path, name="x", package=None, config=BenchSection(), pythonpath=()
    )
    assert _provenance(project, "cuda") is None
