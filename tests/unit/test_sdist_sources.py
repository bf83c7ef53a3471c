"""A released sdist read like a source tree, never run: device code found in its files, its
setup.py's CUDA gate and switches, its PKG-INFO; fetched from where pip looks, unpacked safely,
and what was found shapes the plan (a +cpu job for a package with no device code)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from cuship.builder.sdists import fetch_sdists, parse_pip_config, pip_sources, unpack
from cuship.compat import load
from cuship.config import load_config, package_configs
from cuship.config.script import gate_env, read_build_script
from cuship.config.sources import find_device_code, read_pkg_info
from cuship.errors import InputError
from cuship.matrix import jobs_with_configs

TORCH_SETUP = """import os
import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension

force_cuda = os.getenv("FORCE_CUDA", "0") == "1"
extension = CppExtension
if (torch.cuda.is_available() and CUDA_HOME is not None) or force_cuda:
    extension = CUDAExtension
macros = [("WITH_CUDA", None)]
ROPE = os.environ.get("CUROPE_FORCE_CUDA", "0")
setup(name="knnlike", ext_modules=[extension("knnlike._C", ["ext.cpp", "knn.cu"])])
"""
PLAIN_C_SETUP = (
    "from setuptools import Extension, setup\n"
    'setup(name="cplain", ext_modules=[Extension("cplain._add", ["cplain/_add.c"])])\n'
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("files", "found", "evidence"),
    [
        ({"setup.py": PLAIN_C_SETUP, "cplain/_add.c": "int x;"}, False, None),
        ({"setup.py": "from Cython.Build import cythonize", "pkg/a.pyx": "def f(): pass"}, False, None),
        ({"setup.py": TORCH_SETUP, "ext.cpp": "", "knn.cu": "__global__ void k() {}"}, True, "knn.cu"),
        ({"setup.py": TORCH_SETUP}, True, "setup.py: from torch.utils.cpp_extension"),
        ({"CMakeLists.txt": "project(fast LANGUAGES CXX CUDA)\n"}, True, "CMakeLists.txt: project"),
        ({"CMakeLists.txt": "project(x)\nenable_language(CUDA)\n"}, True, "enable_language"),
        ({"CMakeLists.txt": "cuda_add_library(k k.cpp)\n"}, True, "cuda_add_library"),
        (
            {"pyproject.toml": '[tool.scikit-build.cmake.define]\nUSE_CUDA = "ON"\n'},
            True,
            "[tool.scikit-build]: USE_CUDA",
        ),
        ({"setup.py": PLAIN_C_SETUP, "tests/data/kernel.cu": "", "docs/a.cuh": ""}, False, None),
    ],
    ids=["plain-c", "cython", "cu-file", "cudaextension", "cmake-project", "cmake-enable",
         "cmake-cuda-add", "scikit-build", "cu-in-tests-only"],
)  # fmt: skip
def test_device_code_is_found_in_the_files_of_a_source_tree(
    tmp_path: Path, files: dict[str, str], found: bool, evidence: str | None
) -> None:
    said = find_device_code(_tree(tmp_path, files))
    assert said.found is found
    if evidence is not None:
        assert any(evidence in e for e in said.evidence), said.evidence
        assert evidence.split(":")[0] in said.describe()
    else:
        assert said.evidence == () and "no CUDA device code" in said.describe()


def test_setup_py_s_gate_switches_are_read_from_the_variables_it_reads(tmp_path: Path) -> None:
    """FORCE_CUDA read with os.getenv, CUROPE_FORCE_CUDA by the *_FORCE_CUDA pattern; the
    WITH_CUDA macro name is a string, not a variable read, and opens nothing."""
    script = read_build_script(_tree(tmp_path, {"setup.py": TORCH_SETUP}))
    assert script.gates == ("FORCE_CUDA", "CUROPE_FORCE_CUDA")
    assert script.torch_extension and script.cuda_gate
    assert gate_env(script) == {"FORCE_CUDA": "1", "CUROPE_FORCE_CUDA": "1"}
    plain = read_build_script(_tree(tmp_path / "c", {"setup.py": PLAIN_C_SETUP}))
    assert not plain.torch_extension and not plain.cuda_gate and plain.gates == ()
    assert gate_env(plain) == {"FORCE_CUDA": "1"}, "an always row, set for any torch extension"


def test_pkg_info_names_a_project_unpacked_from_its_sdist(tmp_path: Path) -> None:
    """A cuship.toml beside an unpacked sdist whose setup.py reads its version at run time:
    the job is named from PKG-INFO (chamferdist-1.0.3-..., not chamferdist-0-...)."""
    _tree(
        tmp_path,
        {
            "PKG-INFO": "Metadata-Version: 2.1\nName: knnlike\nVersion: 1.0.3\n\nlong text\n",
            "setup.py": '__version__ = runpy.run_path("v.py")["__version__"]\nsetup(name=x)\n',
            "cuship.toml": '[matrix]\npython = ["3.11"]\ncuda = ["13.0"]\narch = "9.0"\n',
        },
    )
    assert read_pkg_info(tmp_path) == ("knnlike", "1.0.3")
    config = load_config(tmp_path)
    assert (config.project.name, config.project.version) == ("knnlike", "1.0.3")
    ((_, job),) = jobs_with_configs(config, load())
    assert job.id == "knnlike-1.0.3-cp311-cu130"


def test_pip_s_configuration_is_read_as_pip_reads_it() -> None:
    listed = (
        "global.find-links='/opt/wheels'\n"
        "global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'\n"
        ":env:.find-links='/opt/wheels /tmp/dist'\n"
        "user.index-url='https://mirror.example/simple'\n"
    )
    config = parse_pip_config(listed)
    assert config["find-links"] == "/opt/wheels /tmp/dist", "the environment wins"
    sources = pip_sources(config)
    assert sources.find_links == ("/opt/wheels", "/tmp/dist")
    assert sources.indexes == (
        "https://mirror.example/simple",
        "file:///opt/a/simple",
        "file:///opt/b/simple",
    )
    given = pip_sources(config, ["-f", "/here", "--index-url=https://other/simple"])
    assert given.find_links[-1] == "/here" and given.indexes[0] == "https://other/simple"
    offline = pip_sources({"no-index": "1", "find-links": "/x"}, ["--no-index"])
    assert offline.indexes == () and offline.find_links == ("/x",)


def _sdist(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}.tar.gz"
    pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    with tarfile.open(path, "w:gz") as archive:
        for member, text in {"PKG-INFO": pkg_info, **files}.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _packages(root: Path, entries: str, matrix: str = '{python: ["3.11"], arch: ["9.0"]}') -> None:
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "packages.yml").write_text(
        f"matrix: {matrix}\npackages:\n{entries}", encoding="utf-8"
    )


def test_what_an_sdist_holds_decides_its_jobs_unless_device_code_is_given(tmp_path: Path) -> None:
    """From a find-links folder (no index, no network): the plain C package gets one +cpu job,
    the torch extension CUDA jobs and its setup.py's switches; device_code: true overrides."""
    dist = tmp_path / "dist"
    _sdist(dist, "cplain", "1.0", {"setup.py": PLAIN_C_SETUP, "cplain/_add.c": "int x;"})
    _sdist(dist, "knnlike", "1.0.3", {"setup.py": TORCH_SETUP, "knn.cu": ""})
    _sdist(dist, "forced", "2.0", {"setup.py": PLAIN_C_SETUP})
    root = tmp_path / "index"
    _packages(
        root,
        "  cplain: {versions: ['1.0']}\n  knnlike: {versions: ['1.0.3']}\n"
        "  forced: {versions: ['2.0'], matrix: {device_code: true, cuda: ['13.0']}}\n",
        '{python: ["3.11"], cuda: ["13.0"], arch: ["9.0"]}',
    )
    pip = {"no-index": "1", "find-links": str(dist)}
    config = fetch_sdists(load_config(root), pip, cache=tmp_path / "cache")
    assert sorted(config.sdists) == ["cplain==1.0", "forced==2.0", "knnlike==1.0.3"]
    ids = [job.id for _, job in jobs_with_configs(config, load())]
    assert ids == ["cplain-1.0-cp311-cpu", "knnlike-1.0.3-cp311-cu130", "forced-2.0-cp311-cu130"]
    by_name = {cfg.project.name: cfg for cfg in package_configs(config)}
    assert by_name["knnlike"].script.gates == ("FORCE_CUDA", "CUROPE_FORCE_CUDA")
    assert any("one +cpu job per Python" in note for note in by_name["cplain"].found)
    assert not any("read from its sdist" in note for note in by_name["forced"].found)
    again = fetch_sdists(load_config(root), pip, cache=tmp_path / "cache")
    assert again.sdists["knnlike==1.0.3"].root == config.sdists["knnlike==1.0.3"].root


def test_a_missing_sdist_names_where_it_was_looked_for(tmp_path: Path) -> None:
    root = tmp_path / "index"
    _packages(root, "  absent: {versions: ['9.9']}\n")
    pip = {"no-index": "1", "find-links": str(tmp_path)}
    with pytest.raises(InputError, match=r"no sdist of 'absent==9.9' in .*") as caught:
        fetch_sdists(load_config(root), pip, cache=tmp_path / "cache")
    assert "pypi.org/project/absent/9.9" in (caught.value.hint or "")


def test_an_sdist_member_that_leaves_its_folder_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        unpack(path, tmp_path / "into")
    assert not (tmp_path / "outside.txt").exists()


def test_a_torch_extension_s_sdist_builds_against_a_torch_with_no_key_given(
    tmp_path: Path,
) -> None:
    """packages, versions and python alone: a setup.py that builds with torch's cpp_extension
    gets the plan's torch (the newest with a build for its CUDA) in its own venv, without
    build isolation; an entry that names its own extra_deps or build_args keeps them."""
    import dataclasses

    dist = tmp_path / "dist"
    _sdist(dist, "knnlike", "1.0.3", {"setup.py": TORCH_SETUP, "knn.cu": ""})
    _sdist(dist, "told", "1.0", {"setup.py": TORCH_SETUP, "knn.cu": ""})
    root = tmp_path / "index"
    _packages(
        root,
        "  knnlike: {versions: ['1.0.3']}\n"
        "  told: {versions: ['1.0'], extra_deps: ['torch==2.13.*']}\n",
        '{python: ["3.11"], cuda: ["13.0"], arch: ["9.0"]}',
    )
    pip = {"no-index": "1", "find-links": str(dist)}
    config = fetch_sdists(load_config(root), pip, cache=tmp_path / "cache")
    config = dataclasses.replace(config, torch_default="2.13")
    by_name = {cfg.project.name: cfg for cfg in package_configs(config)}
    knn = by_name["knnlike"]
    assert knn.matrix.torch == ("2.13",)
    assert knn.build.extra_deps == ("torch",) and not knn.build.isolation
    assert any("a torch extension (setup.py builds against torch)" in n for n in knn.found)
    told = by_name["told"]
    assert told.build.extra_deps == ("torch==2.13.*",) and told.build.isolation
    ids = [job.id for _, job in jobs_with_configs(config, load())]
    assert "knnlike-1.0.3-cp311-cu130-torch2.13" in ids
