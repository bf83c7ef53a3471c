"""The one tool finder: every CUDA tool from the toolkit the build uses, the setting first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuship import tools
from cuship.tools import find_tool, search_dirs

CUDA_TOOLS = ("nvcc", "ncu", "compute-sanitizer", "cuobjdump", "nvdisasm")


def _toolkit(root: Path, names: tuple[str, ...] = CUDA_TOOLS) -> Path:
    """A fake toolkit: ``root/bin`` holding an executable script per name."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for name in names:
        exe = bin_dir / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    return bin_dir


@pytest.fixture(autouse=True)
def _no_default_toolkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own /usr/local/cuda stays out of these tests."""
    monkeypatch.setattr(tools, "DEFAULT_TOOLKIT_BIN", str(tmp_path / "usr-local-cuda" / "bin"))


def test_with_two_toolkits_every_cuda_tool_comes_from_cuda_home(tmp_path: Path) -> None:
    on_path = _toolkit(tmp_path / "cuda-12.8")
    home = _toolkit(tmp_path / "cuda-13.0")
    environ = {"PATH": f"{on_path}{os.pathsep}/usr/bin", "CUDA_HOME": str(home.parent)}
    found = {name: find_tool(name, environ).path for name in CUDA_TOOLS}
    assert found == {name: str(home / name) for name in CUDA_TOOLS}
    for var in ("CUDA_PATH",):  # the other spelling of the same toolkit
        found = {
            n: find_tool(n, {"PATH": str(on_path), var: str(home.parent)}).path for n in CUDA_TOOLS
        }
        assert found == {name: str(home / name) for name in CUDA_TOOLS}


def test_without_a_named_toolkit_every_cuda_tool_comes_from_path(tmp_path: Path) -> None:
    on_path = _toolkit(tmp_path / "cuda-12.8")
    _toolkit(tmp_path / "usr-local-cuda")
    environ = {"PATH": str(on_path)}
    assert {n: find_tool(n, environ).path for n in CUDA_TOOLS} == {
        n: str(on_path / n) for n in CUDA_TOOLS
    }


def test_the_default_toolkit_is_last(tmp_path: Path) -> None:
    default = _toolkit(tmp_path / "usr-local-cuda", ("ncu",))
    found = find_tool("ncu", {"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(tmp_path / "x")})
    assert found.path == str(default / "ncu")
    assert found.searched == (
        f"$CUDA_HOME/bin ({tmp_path / 'x' / 'bin'})", "PATH", str(default)
    )  # fmt: skip


def test_a_tool_missing_from_cuda_home_is_looked_for_further(tmp_path: Path) -> None:
    """A CUDA_HOME without ncu (a toolkit installed without Nsight) does not hide one on PATH."""
    home = _toolkit(tmp_path / "cuda-13.0", ("nvcc",))
    on_path = _toolkit(tmp_path / "nsight", ("ncu",))
    environ = {"PATH": str(on_path), "CUDA_HOME": str(home.parent)}
    assert find_tool("nvcc", environ).path == str(home / "nvcc")
    assert find_tool("ncu", environ).path == str(on_path / "ncu")


def test_the_setting_comes_first_and_none_means_none(tmp_path: Path) -> None:
    home = _toolkit(tmp_path / "cuda-13.0")
    environ = {"CUDA_HOME": str(home.parent), "CUSHIP_NVCC": "/opt/other/nvcc"}
    found = find_tool("nvcc", environ)
    assert (found.path, found.setting, found.where()) == (
        "/opt/other/nvcc", "CUSHIP_NVCC", "CUSHIP_NVCC='/opt/other/nvcc'"
    )  # fmt: skip
    assert find_tool("nvcc", {**environ, "CUSHIP_NVCC": "none"}).path is None
    sanitizer = find_tool("compute-sanitizer", {**environ, "CUSHIP_COMPUTE_SANITIZER": " None "})
    assert (sanitizer.path, sanitizer.setting) == (None, "CUSHIP_COMPUTE_SANITIZER")
    assert find_tool("ncu", environ).path == str(home / "ncu")  # no setting of its own


def test_other_tools_are_looked_for_on_path_only(tmp_path: Path) -> None:
    home = _toolkit(tmp_path / "cuda-13.0", ("valgrind",))
    on_path = _toolkit(tmp_path / "usr", ("valgrind",))
    assert find_tool("valgrind", {"CUDA_HOME": str(home.parent)}).path is None
    environ = {"CUDA_HOME": str(home.parent), "PATH": str(on_path)}
    assert find_tool("valgrind", environ).path == str(on_path / "valgrind")
    assert find_tool("docker", environ).searched == ("PATH",)


def test_nothing_found_says_where_it_looked(tmp_path: Path) -> None:
    found = find_tool("ncu", {"PATH": "", "CUDA_PATH": "/opt/cuda"})
    assert found.path is None
    assert found.where() == f"$CUDA_PATH/bin (/opt/cuda/bin), PATH or {tools.DEFAULT_TOOLKIT_BIN}"


def test_search_dirs_split_path_and_drop_repeats(tmp_path: Path) -> None:
    environ = {"PATH": f"/a{os.pathsep}/b{os.pathsep}/a", "CUDA_HOME": "/opt/cuda"}
    assert search_dirs("nvcc", environ) == ("/opt/cuda/bin", "/a", "/b", tools.DEFAULT_TOOLKIT_BIN)


def test_a_probe_stands_in_for_the_file_system() -> None:
    """The machine fingerprint passes its probe's ``which``; nothing on disk is read."""
    asked: list[tuple[str, str | None]] = []

    def which(name: str, path: str | None) -> str | None:
        asked.append((name, path))
        return f"{path}/{name}" if path == "/on/path" else None

    environ = {"PATH": "/on/path", "CUDA_HOME": "/home"}
    assert find_tool("nvcc", environ, which=which).path == "/on/path/nvcc"
    assert asked == [("nvcc", "/home/bin"), ("nvcc", "/on/path")]
