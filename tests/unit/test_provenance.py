"""Where a project's packages came from: installed wheel, editable install or source tree."""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

import pytest

from cuship.provenance import (
    Extension,
    PackageOrigin,
    Provenance,
    classify,
    collect,
    project_packages,
    unbuilt,
)
from cuship.provenance.installed import InstalledDist

SITE = "/venv/lib/python3.12/site-packages"
WHEEL = InstalledDist(
    name="cuvecops",
    version="0.1.0",
    location=Path(SITE),
    top_level=("cuvecops",),
    files=frozenset({Path(f"{SITE}/cuvecops/__init__.py")}),
)
EDITABLE = InstalledDist(
    name="cuvecops",
    version="0.2.0",
    location=Path(SITE),
    top_level=("cuvecops",),
    files=frozenset(),
    editable_root="/work/cuvecops",
)


def test_classify_by_record_editable_root_site_dir_or_source_tree() -> None:
    assert classify(f"{SITE}/cuvecops/__init__.py", [WHEEL], [SITE]) == ("installed", WHEEL)
    assert classify("/work/cuvecops/src/cuvecops/__init__.py", [EDITABLE], [SITE]) == (
        "editable",
        EDITABLE,
    )
    assert classify(f"{SITE}/other/__init__.py", [WHEEL], [SITE]) == ("installed", None)
    assert classify("/work/cuvecops/src/cuvecops/__init__.py", [WHEEL], [SITE]) == (
        "source",
        None,
    )
    # a sibling directory whose name merely starts like the editable root is not inside it
    assert classify("/work/cuvecops2/x/__init__.py", [EDITABLE], [])[0] == "source"


def test_packages_are_the_configured_ones_else_the_distribution_as_a_module_name() -> None:
    assert project_packages("CuVec-Ops", ()) == ("cuvec_ops",)
    assert project_packages("cuvecops", ("cuvecops", "cuvecops_extra", "cuvecops")) == (
        "cuvecops",
        "cuvecops_extra",
    )
    assert project_packages(None, ()) == ()


def _origin(origin: str, *extensions: Extension) -> PackageOrigin:
    base = SITE if origin == "installed" else "/work/cuvecops/src"
    return PackageOrigin(
        name="cuvecops",
        file=f"{base}/cuvecops/__init__.py",
        origin=origin,  # type: ignore[arg-type]
        version="0.1.0",
        extensions=extensions,
    )


LOADED = Extension(module="_cuda", path="/x/_cuda.so", loaded=True)
BROKEN = Extension(
    module="_cuda", path="/x/_cuda.so", loaded=False, error="ImportError: libcudart.so.13"
)


def test_one_line_per_package_says_file_origin_and_extensions() -> None:
    assert _origin("installed", LOADED).describe() == (
        f"cuvecops 0.1.0 from {SITE}/cuvecops/__init__.py (installed wheel); extensions: _cuda loaded"
    )
    assert _origin("source").describe() == (
        "cuvecops 0.1.0 from /work/cuvecops/src/cuvecops (source tree); extensions: none found"
    )
    assert (
        "_cuda not loaded (ImportError: libcudart.so.13)" in _origin("editable", BROKEN).describe()
    )
    assert "(source tree (editable))" in _origin("editable", BROKEN).describe()


def test_provenance_round_trips_through_json() -> None:
    provenance = Provenance(packages=(_origin("installed", LOADED, BROKEN),), note="not 'x'")
    assert Provenance.from_json(provenance.to_json()) == provenance
    assert provenance.lines()[-1] == "not 'x'"


def test_unbuilt_is_a_source_tree_without_a_loading_extension() -> None:
    assert unbuilt(Provenance(packages=(_origin("source"),))) == _origin("source")
    assert unbuilt(Provenance(packages=(_origin("editable", BROKEN),))) is not None
    assert unbuilt(Provenance(packages=(_origin("source", BROKEN, LOADED),))) is None
    assert unbuilt(Provenance(packages=(_origin("installed"),))) is None  # pure-Python wheel


def _package(where: Path, name: str, *files: str) -> Path:
    directory = where / name
    directory.mkdir(parents=True)
    (directory / "__init__.py").write_text("__version__ = '9.9'\n")
    for file in files:
        (directory / file).write_bytes(b"not an ELF file")
    return directory


def _dist_info(site: Path, name: str, version: str, *files: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


@pytest.fixture
def clean_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("prov_installed", "prov_source", "prov_single"):
        monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.delitem(sys.modules, f"{name}._native", raising=False)


@pytest.mark.usefixtures("clean_modules")
def test_collect_reads_record_and_tries_each_extension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    other = ".cpython-29-x86_64-linux-gnu.so"
    _package(site, "prov_installed", f"_native{suffix}", f"old{other}", "libbundled.so")
    _dist_info(site, "prov-installed", "1.2.3", "prov_installed/__init__.py")
    monkeypatch.syspath_prepend(str(site))

    (found,) = collect(["prov_installed"]).packages
    assert (found.origin, found.distribution, found.version) == (
        "installed",
        "prov-installed",
        "1.2.3",
    )
    assert found.file == str((site / "prov_installed" / "__init__.py").resolve())
    by_name = {e.module: e for e in found.extensions}
    assert set(by_name) == {"_native", "old"}  # libbundled.so is a library, not a module
    assert not by_name["_native"].loaded and "ImportError" in str(by_name["_native"].error)
    assert "built for another Python" in str(by_name["old"].error)


@pytest.mark.usefixtures("clean_modules")
def test_collect_traces_a_source_tree_and_names_what_is_not_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    _package(src, "prov_source")
    monkeypatch.syspath_prepend(str(src))
    provenance = collect(["prov_source", "prov_nowhere_to_be_found"])
    (found,) = provenance.packages
    assert (found.origin, found.version, found.extensions) == ("source", "9.9", ())
    assert found.directory == str((src / "prov_source").resolve())
    assert provenance.note == "not importable here: 'prov_nowhere_to_be_found'"

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (src / f"prov_single{suffix}").write_bytes(b"not an ELF file")
    (single,) = collect(["prov_single"]).packages
    (extension,) = single.extensions
    assert (single.origin, extension.module, extension.loaded) == ("source", "prov_single", False)
    assert single.error == extension.error and "ImportError" in str(single.error)

    nothing = collect(["prov_nowhere_to_be_found"])
    assert nothing.packages == () and "no project package traced" in str(nothing.note)
    assert "[check] packages" in str(collect([]).note)
