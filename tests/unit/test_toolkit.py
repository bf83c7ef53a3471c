"""CUDA toolkits from PyPI wheels, against a local index of stand-in wheels: the prefix is laid
out like the runfile's, every file's sha256 is checked, the result appears in one rename (or not
at all), the cache is reused without the network, and the catalog says what cannot come from
PyPI and where to build it instead."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from cuship.cli import main
from cuship.compat import DATA_DIR
from cuship.docs.documents import schema_file
from cuship.errors import CheckFailed, ConfigError, InputError, ToolMissing, UsageError
from cuship.events import Event, collect
from cuship.toolkit import InstallResult, cached, catalog, install, read_installed, toolkits_root
from cuship.toolkit.assemble import Probe
from cuship.toolkit.catalog import DATA_FILE, read_catalog
from cuship.toolkit.layout import dev_links, layout_links, member_target, pick_file
from tests.jsondocs import schema_errors
from tests.toolkit_factory import make_index, sha256

RELEASE = catalog().find("13.0.2")


def _probe(nvcc: Path) -> str:
    assert nvcc.is_file()
    return "13.0.88"


def _install(
    root: Path, index: str, *, offline: bool = False, probe: Probe = _probe
) -> InstallResult:
    return install(
        RELEASE,
        catalog=catalog(),
        root=root,
        index=index,
        machine="x86_64",
        offline=offline,
        probe=probe,
    )


@pytest.fixture
def index(tmp_path: Path) -> str:
    return make_index(tmp_path / "index", catalog(), RELEASE)


def test_install_lays_the_prefix_out_like_the_runfile(tmp_path: Path, index: str) -> None:
    root = tmp_path / "toolkits"
    result = install(
        RELEASE, catalog=catalog(), root=root, index=index, machine="x86_64", probe=_probe
    )
    prefix = root / "13.0.2"
    assert not result.reused and result.installed.prefix == prefix
    assert os.access(prefix / "bin" / "nvcc", os.X_OK)
    assert os.access(prefix / "nvvm" / "bin" / "cicc", os.X_OK)
    assert not os.access(prefix / "include" / "cuda_runtime.h", os.X_OK)
    assert (prefix / "lib").readlink() == Path("lib64")
    assert (prefix / "lib64" / "libcudart.so").readlink() == Path("libcudart.so.13")
    assert (prefix / "targets" / "x86_64-linux" / "include" / "cuda_runtime.h").is_file()
    assert (prefix / "lib" / "libcudart_static.a").is_file()
    assert not (prefix / "nvidia").exists() and not (prefix / ".metadata").exists()
    assert (prefix / "dist-info" / "nvidia_cuda_nvcc-13.0.88.dist-info" / "METADATA").is_file()
    assert oct(prefix.stat().st_mode & 0o777) == oct(0o755)
    manifest = json.loads((prefix / "cuship-toolkit.json").read_text())
    assert manifest["cuda"] == "13.0.2" and manifest["nvcc_version"] == "13.0.88"
    files = {Path(w["url"]).name: w["sha256"] for w in manifest["wheels"]}
    for name, digest in files.items():
        assert sha256(tmp_path / "index" / "files" / name) == digest
    assert result.downloaded_bytes == sum(w["size"] for w in manifest["wheels"])
    assert sorted(p.name for p in root.iterdir()) == [".13.0.2.lock", "13.0.2"]


def test_each_wheel_fetched_is_one_progress_event(tmp_path: Path, index: str) -> None:
    events: list[Event] = []
    install(
        RELEASE,
        catalog=catalog(),
        root=tmp_path / "toolkits",
        index=index,
        machine="x86_64",
        probe=_probe,
        emit=collect(events),
    )
    said = [e for e in events if e.level == "progress"]
    total = len(RELEASE.wheels)
    assert [e.data["done"] for e in said] == list(range(1, total + 1))
    assert {e.data["total"] for e in said} == {total} and {e.topic for e in said} == {"toolkit"}
    assert all(e.message.startswith(f"[{e.data['done']}/{total}] nvidia_") for e in said)
    assert all(
        ", sha256 verified, " in e.message and " files unpacked in " in e.message for e in said
    )
    assert not [e for e in events if e.level == "info" and e.message.startswith("downloaded ")]


def test_a_cached_toolkit_is_reused_without_the_network(tmp_path: Path, index: str) -> None:
    root = tmp_path / "toolkits"
    first = _install(root, index)
    gone = (tmp_path / "nowhere").as_uri()
    again = _install(root, gone)
    offline = _install(root, gone, offline=True)
    assert again.reused and offline.reused and again.downloaded_bytes == 0
    assert again.installed == first.installed
    assert [i.cuda for i in cached(root, catalog().components)] == ["13.0.2"]


def test_two_installs_at_once_assemble_it_once(tmp_path: Path, index: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path / "toolkits"
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: _install(root, index), range(2)))
    assert sorted(r.reused for r in results) == [False, True]
    assert results[0].installed == results[1].installed
    assert _leftovers(root) == ["13.0.2"]


def test_offline_without_the_toolkit_in_the_cache_is_exit_3(tmp_path: Path, index: str) -> None:
    with pytest.raises(ToolMissing) as caught:
        _install(tmp_path / "toolkits", index, offline=True)
    assert caught.value.exit_code == 3
    assert "not in the toolkit cache" in caught.value.message
    assert "cuship toolkit install 13.0.2" in str(caught.value.hint)
    assert not (tmp_path / "toolkits").exists()


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.endswith(".lock"))


def test_a_file_whose_sha256_differs_from_the_index_leaves_nothing(tmp_path: Path) -> None:
    index = make_index(tmp_path / "index", catalog(), RELEASE, wrong_sha=("nvidia-cuda-cccl",))
    root = tmp_path / "toolkits"
    with pytest.raises(CheckFailed) as caught:
        _install(root, index)
    assert caught.value.exit_code == 1
    assert "sha256 mismatch" in caught.value.message and "nvidia_cuda_cccl" in caught.value.message
    assert "nvidia-cuda-cccl==13.0.85" in caught.value.message
    assert _leftovers(root) == []


def test_a_wheel_missing_a_file_the_toolkit_needs_fails_naming_it(tmp_path: Path) -> None:
    lacking = {"nvidia-cuda-nvcc": ("bin/ptxas",)}
    index = make_index(tmp_path / "index", catalog(), RELEASE, leave_out=lacking)
    root = tmp_path / "toolkits"
    with pytest.raises(CheckFailed) as caught:
        _install(root, index)
    assert "did not provide bin/ptxas (nvidia-cuda-nvcc)" in caught.value.message
    assert _leftovers(root) == []


def test_two_wheels_holding_the_same_file_fail_naming_it(tmp_path: Path) -> None:
    clash = {"nvidia-cuda-cccl": ("include/cuda_runtime.h",)}
    index = make_index(tmp_path / "index", catalog(), RELEASE, extra=clash)
    root = tmp_path / "toolkits"
    with pytest.raises(CheckFailed) as caught:
        _install(root, index)
    assert "both hold 'include/cuda_runtime.h'" in caught.value.message
    assert _leftovers(root) == []


def test_an_nvcc_reporting_another_version_fails_and_leaves_nothing(
    tmp_path: Path, index: str
) -> None:
    root = tmp_path / "toolkits"
    with pytest.raises(CheckFailed) as caught:
        _install(root, index, probe=lambda nvcc: None)
    assert "reports None, expected '13.0.88'" in caught.value.message
    assert _leftovers(root) == []


def test_an_index_without_the_pinned_version_names_it(tmp_path: Path) -> None:
    other = catalog().find("13.1.1")
    index = make_index(tmp_path / "index", catalog(), other)
    with pytest.raises(InputError) as caught:
        _install(tmp_path / "toolkits", index)
    assert caught.value.exit_code == 2
    assert "no Linux x86_64 wheel of nvidia-cuda-nvcc==13.0.88" in caught.value.message


def test_a_half_made_toolkit_is_not_listed_and_is_replaced(tmp_path: Path, index: str) -> None:
    root = tmp_path / "toolkits"
    (root / "13.0.2" / "bin").mkdir(parents=True)
    (root / "13.0.2" / "bin" / "nvcc").write_text("truncated")
    assert read_installed(root / "13.0.2", catalog().components) is None
    assert cached(root, catalog().components) == ()
    result = _install(root, index)
    assert not result.reused
    assert (root / "13.0.2" / "cuship-toolkit.json").is_file()


def test_a_toolkit_moved_away_from_its_release_name_is_not_trusted(
    tmp_path: Path, index: str
) -> None:
    root = tmp_path / "toolkits"
    _install(root, index)
    shutil.move(root / "13.0.2", root / "13.1.1")
    assert read_installed(root / "13.1.1", catalog().components) is None


def test_the_cache_root_follows_the_environment(tmp_path: Path) -> None:
    assert toolkits_root({"CUSHIP_TOOLKITS": str(tmp_path)}) == tmp_path
    assert toolkits_root({"XDG_CACHE_HOME": "/c"}) == Path("/c/cuship/toolkits")
    assert toolkits_root({"HOME": "/h"}) == Path("/h/.cache/cuship/toolkits")


# --- the catalog ------------------------------------------------------------------------------


def test_a_version_spec_names_the_newest_matching_release() -> None:
    rows = catalog()
    assert rows.find("13.0").cuda == Version("13.0.2")
    assert rows.find("cu131").cuda == Version("13.1.1")
    assert rows.find("13.1.0").nvcc == Version("13.1.80")
    assert rows.find("13.0.2").pins()[0] == "nvidia-cuda-nvcc==13.0.88"


def test_cuda_12_is_said_plainly_to_need_another_runner() -> None:
    with pytest.raises(ToolMissing) as caught:
        catalog().find("12.8")
    err = caught.value
    assert err.exit_code == 3
    assert "cannot come from PyPI" in err.message and "only ptxas" in err.message
    assert "nvidia/cuda:12.8.1-devel-ubuntu22.04" in str(err.hint)


def test_an_unknown_cuda_version_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        catalog().find("13.9")
    assert caught.value.exit_code == 2 and "'13.9'" in caught.value.message


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('nvidia-cuda-cccl = "13.0.50"\n', "", "toolkit[0].wheels: lacks 'nvidia-cuda-cccl'"),
        ('cuda = "13.3.1"', 'cuda = "13.3.2"', "toolkit[8].cuda: '13.3.2' is not a release"),
        ('cuda = "13.0.1"', 'cuda = "13.0.0"', "toolkit[1].cuda: '13.0.0' is not after"),
        (
            'nvidia-cuda-nvcc = "13.0.48"',
            'nvidia_cuda_nvcc = "13.0.48"',
            "toolkit[0].wheels: write package names normalised",
        ),
    ],
)
def test_the_catalog_refuses_inconsistent_rows(
    tmp_path: Path, old: str, new: str, problem: str
) -> None:
    text = DATA_FILE.read_text()
    assert old in text
    broken = tmp_path / "toolkits.toml"
    broken.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        read_catalog(broken)
    assert problem in str(caught.value)


def test_every_cuda_release_is_installable_or_of_an_unavailable_major(tmp_path: Path) -> None:
    text = DATA_FILE.read_text()
    start = text.index('[[toolkit]]\ncuda = "13.1.0"')
    end = text.index("[[toolkit]]", start + 1)
    broken = tmp_path / "toolkits.toml"
    broken.write_text(text[:start] + text[end:])
    with pytest.raises(ConfigError) as caught:
        read_catalog(broken)
    assert "cuda.toml knows CUDA 13.1.0 but no wheel set is recorded" in str(caught.value)
    assert (DATA_DIR / "toolkits.toml") == DATA_FILE


# --- the layout (pure) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member", "target"),
    [
        ("nvidia/cu13/bin/nvcc", "bin/nvcc"),
        ("nvidia/cu13/lib/libcudart.so.13", "lib64/libcudart.so.13"),
        ("nvidia/cu13/include/cccl/cub/cub.cuh", "include/cccl/cub/cub.cuh"),
        ("nvidia/cu13/nvvm/bin/cicc", "nvvm/bin/cicc"),
        ("nvidia/cu13/.metadata/.sizes.txt", None),
        ("nvidia/__init__.py", None),
        ("nvidia/cu12/bin/ptxas", None),
        ("nvidia/cu13/bin/", None),
        ("x-1.0.dist-info/RECORD", "dist-info/x-1.0.dist-info/RECORD"),
    ],
)
def test_wheel_members_map_onto_the_prefix(member: str, target: str | None) -> None:
    assert member_target(member, 13) == target


@pytest.mark.parametrize("member", ["nvidia/cu13/../../etc/passwd", "/nvidia/cu13/bin/nvcc"])
def test_a_member_leaving_the_wheel_is_refused(member: str) -> None:
    with pytest.raises(InputError) as caught:
        member_target(member, 13)
    assert "leaves the wheel" in caught.value.message


def test_links_follow_the_runfile() -> None:
    files = ["lib64/libcudart.so.13", "lib64/libnvvm.so.4", "lib64/libfoo.so.1", "lib64/libfoo.so"]
    assert [(link.path, link.to) for link in dev_links(files)] == [
        ("lib64/libcudart.so", "libcudart.so.13"),
        ("lib64/libnvvm.so", "libnvvm.so.4"),
    ]
    arm = layout_links([], "aarch64")
    assert [link.path for link in arm] == [
        "lib",
        "targets/sbsa-linux/include",
        "targets/sbsa-linux/lib",
    ]
    with pytest.raises(InputError):
        layout_links([], "riscv64")


def test_the_linux_wheel_of_this_machine_is_picked(tmp_path: Path) -> None:
    from cuship.resolve import Candidate

    def cand(name: str) -> Candidate:
        return Candidate(filename=name, url=f"https://x/{name}", sha256="a" * 64)

    files = [
        cand("nvidia_nvvm-13.0.88-py3-none-win_amd64.whl"),
        cand("nvidia_nvvm-13.0.88-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl"),
        cand("nvidia_nvvm-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl"),
        cand("nvidia_nvvm-13.0.48-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl"),
    ]
    assert "x86_64" in pick_file(files, "nvidia-nvvm", Version("13.0.88"), "x86_64").filename
    assert "aarch64" in pick_file(files, "nvidia-nvvm", Version("13.0.88"), "aarch64").filename


# --- the command line ---------------------------------------------------------------------------


def test_the_cli_lists_installs_and_prints_paths(
    tmp_path: Path, index: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "toolkits"
    monkeypatch.setenv("CUSHIP_TOOLKITS", str(root))
    assert main(["toolkit", "path", "13.0"]) == 3
    assert "not in the toolkit cache" in capsys.readouterr().err
    _install(root, index)
    assert main(["toolkit", "path", "13.0"]) == 0
    assert capsys.readouterr().out.strip() == str(root / "13.0.2")
    assert main(["toolkit", "install", "13.0", "--offline", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert schema_errors(schema_file("toolkit-install"), done) == []
    assert done["reused"] is True and done["nvcc"] == str(root / "13.0.2" / "bin" / "nvcc")
    assert main(["toolkit", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert schema_errors(schema_file("toolkit-list"), listed) == []
    by_cuda = {row["cuda"]: row["cached"] for row in listed["toolkits"]}
    assert by_cuda["13.0.2"] == str(root / "13.0.2") and by_cuda["13.1.1"] is None
    assert [u["major"] for u in listed["unavailable"]] == [12, 11]
    assert main(["toolkit", "install", "12.9"]) == 3
    err = capsys.readouterr().err
    assert "cannot come from PyPI" in err and "Traceback" not in err
