"""The compatibility data and its queries: the facts users rely on, and broken data files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version

from cuship.cli import cli
from cuship.compat import DATA_DIR, Compat, format_driver, load
from cuship.errors import ConfigError, UsageError


@pytest.fixture(scope="module")
def data() -> Compat:
    return load()


# --- facts ------------------------------------------------------------------------------------


def test_torch_2_8_has_no_cuda_13_build(data: Compat) -> None:
    release = data.torch_release("2.8")
    assert release.cuda == ("12.6", "12.8", "12.9")
    assert not release.has_cuda("cu130")
    with pytest.raises(UsageError, match=r"torch 2\.8 has no cu130 build") as caught:
        data.torch_release("2.8.0+cu130")
    assert caught.value.exit_code == 2
    assert "cu126, cu128, cu129" in str(caught.value)


@pytest.mark.parametrize("spec", ["2.8", "2.8.0", "2.8.0+cu128", "2.8.0+cpu"])
def test_torch_release_accepts_minor_patch_and_local_label(data: Compat, spec: str) -> None:
    assert data.torch_release(spec).minor == "2.8"


def test_torch_unknown_release_and_future_patch_are_usage_errors(data: Compat) -> None:
    with pytest.raises(UsageError, match=r"unknown torch version '2\.3'") as caught:
        data.torch_release("2.3")
    assert "2.4" in str(caught.value)
    with pytest.raises(UsageError, match=r"newer than the newest 2\.8 patch"):
        data.torch_release("2.8.9")


def test_torch_rows_cover_2_4_to_2_13_with_the_abi_switch_at_2_7(data: Compat) -> None:
    assert [r.minor for r in data.torch] == [f"2.{i}" for i in range(4, 14)]
    assert data.torch_release("2.5").cxx11_abi == (False,)
    assert data.torch_release("2.7").cxx11_abi == (True,)
    assert data.torch_release("2.13").latest == Version("2.13.0")
    assert "3.15" in data.torch_release("2.13").pythons


def test_cuda_13_cannot_target_volta_but_12_9_can(data: Compat) -> None:
    assert not data.cuda("13.0").can_target("70")
    assert "70" in data.cuda("13.0.0").dropped
    assert data.cuda("12.9").can_target("sm_70")
    assert data.cuda("13.0").can_target("sm_110f")
    assert not data.cuda("12.8").can_target("100f")  # family targets arrive with 12.9
    assert data.cuda("12.9").can_target("100f")


@pytest.mark.parametrize(
    ("reported", "model", "cc"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100", "8.0"),
        ("NVIDIA A100 80GB PCIe", "A100", "8.0"),
        ("NVIDIA H100 80GB HBM3", "H100", "9.0"),
        ("NVIDIA H200", "H200", "9.0"),
        ("NVIDIA B200", "B200", "10.0"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", "8.9"),
        ("NVIDIA L4", "L4", "8.9"),
        ("NVIDIA GeForce RTX 5090", "RTX 5090", "12.0"),
        ("Tesla T4", "T4", "7.5"),
        ("tesla v100-sxm2-32gb", "V100", "7.0"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", "8.9"),
        ("rtx4090", "RTX 4090", "8.9"),
        ("NVIDIA GB10", "GB10", "12.1"),
    ],
)
def test_gpu_names_as_nvml_reports_them(data: Compat, reported: str, model: str, cc: str) -> None:
    gpu = data.gpu(reported)
    assert (gpu.name, gpu.cc, gpu.sm) == (model, cc, cc.replace(".", ""))


def test_gpu_prefix_match_respects_word_boundaries(data: Compat) -> None:
    assert data.find_gpu("NVIDIA RTX A1000") is None  # not an A100
    assert data.gpu("NVIDIA L40S").name == "L40S"
    assert data.gpu("NVIDIA L40").name == "L40"


def test_unknown_gpu_lists_close_names(data: Compat) -> None:
    with pytest.raises(UsageError, match="unknown GPU 'H1000'") as caught:
        data.gpu("H1000")
    assert "H100" in str(caught.value)


def test_cuda_12_runs_on_the_family_minimum_driver_with_minor_compatibility(data: Compat) -> None:
    assert data.driver_supports("525.60.13", "12.8")
    assert not data.driver_supports("525.60.13", "12.8", minor_compat=False)
    assert not data.driver_supports("520.61.05", "12.0")
    assert data.driver_supports("520.61.05", "11.8")
    assert not data.driver_supports("575.57.08", "13.0")  # 13.x needs the r580 branch
    assert data.driver_supports(Version("580.65.06"), "13.0.0", minor_compat=False)
    # "cu130" means the newest 13.0.x, whose own driver is 580.95.05
    assert not data.driver_supports("580.65.06", "cu130", minor_compat=False)


def test_max_cuda_for_driver(data: Compat) -> None:
    assert data.max_cuda_for_driver("570.124.06") == Version("12.8.1")
    assert data.max_cuda_for_driver("580") == Version("12.9.1")
    assert data.max_cuda_for_driver("400.1") is None
    with pytest.raises(UsageError, match="not a driver version"):
        data.max_cuda_for_driver("r570")


@pytest.mark.parametrize(
    ("spec", "version"),
    [
        ("12.8.1", "12.8.1"),
        ("12.8.0", "12.8.0"),
        ("12.8", "12.8.1"),
        ("cu128", "12.8.1"),
        (" CU128 ", "12.8.1"),
    ],
)
def test_cuda_spec_forms(data: Compat, spec: str, version: str) -> None:
    toolkit = data.cuda(spec)
    assert toolkit.version == Version(version)
    assert (toolkit.major_minor, toolkit.variant) == ("12.8", "cu128")


def test_cuda_major_alone_means_its_newest_release(data: Compat) -> None:
    assert data.cuda("12").version == Version("12.9.1")
    assert data.cuda("cu12") == data.cuda("12")
    assert data.cuda("cu118").variant == "cu118"


def test_cuda_12_7_does_not_exist_and_the_error_names_its_neighbours(data: Compat) -> None:
    with pytest.raises(UsageError, match=r"unknown CUDA version '12\.7'") as caught:
        data.cuda("12.7")
    assert "12.6, 12.8" in str(caught.value)
    with pytest.raises(UsageError, match="not a CUDA version"):
        data.cuda("twelve")


def test_driver_versions_keep_nvidia_spelling(data: Compat) -> None:
    assert format_driver(data.cuda("12.8.1").min_driver_linux) == "570.124.06"
    assert format_driver(data.cuda("13.0.0").family_min_driver_linux) == "580"


def test_every_row_cites_a_source_and_toolkit_rows_are_complete(data: Compat) -> None:
    sources = [
        *(t.source for t in data.toolkits),
        *(r.source for r in data.torch),
        *(g.source for g in data.gpus),
    ]
    assert all(source.startswith("https://") for source in sources)
    versions = {str(t.version) for t in data.toolkits}
    assert {"11.8.0", "12.0.0", "12.0.1", "12.8.0", "12.8.1", "12.9.1"} <= versions
    assert {"13.0.0", "13.0.1", "13.0.2"} <= versions
    assert load() is load()  # the shipped files are parsed once


# --- the CLI ----------------------------------------------------------------------------------


def test_cli_json_holds_only_the_sections_asked_for() -> None:
    result = CliRunner().invoke(cli, ["compat", "--json", "--torch"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert list(document) == ["torch"]
    row = next(r for r in document["torch"] if r["version"] == "2.8")
    assert row["cuda"] == ["12.6", "12.8", "12.9"] and row["source"].startswith("https://")


def test_cli_json_without_flags_has_everything() -> None:
    result = CliRunner().invoke(cli, ["compat", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert list(document) == ["cuda", "torch", "gpus"]
    toolkit = next(t for t in document["cuda"] if t["version"] == "12.8.1")
    assert toolkit["min_driver_linux"] == "570.124.06" and toolkit["variant"] == "cu128"
    assert {"name": "H100", "cc": "9.0"}.items() <= next(
        g for g in document["gpus"] if g["name"] == "H100"
    ).items()


def test_cli_table_shows_the_gpus() -> None:
    result = CliRunner().invoke(cli, ["compat", "--gpus"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "H100" in result.output and "Hopper" in result.output
    assert "cu128" not in result.output


# --- broken data files ------------------------------------------------------------------------


def _copy_data(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    return target


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def test_a_copy_of_the_shipped_data_loads(tmp_path: Path) -> None:
    assert load(_copy_data(tmp_path)) == load()


@pytest.mark.parametrize(
    ("file", "old", "new", "where", "problem"),
    [
        ("cuda.toml", 'sms = ["35"', 'sms = ["3x5"', "toolkit[0].sms", "not an SM"),
        ("cuda.toml", '"90", "90a"', '"90", "90a", "90a"', "toolkit[1].sms", "listed twice"),
        (
            "cuda.toml",
            'version = "12.0.1"',
            'version = "11.0.1"',
            "toolkit[2].version",
            "comes after",
        ),
        (
            "cuda.toml",
            'min_driver_linux = "520',
            'min_drive_linux = "520',
            "min_drive_linux",
            "unknown key",
        ),
        (
            "cuda.toml",
            'min_driver_linux = "520.61.05"',
            'min_driver_linux = "r520"',
            "min_driver_linux",
            "is not a version",
        ),
        (
            "cuda.toml",
            'dropped = ["35", "37"]',
            'dropped = ["30"]',
            "toolkit[1].dropped",
            "was not in 11.8.0",
        ),
        (
            "cuda.toml",
            'released = "2022-10"',
            'released = "Oct 2022"',
            "toolkit[0].released",
            "not a month",
        ),
        (
            "torch.toml",
            'cuda = ["11.8", "12.1", "12.4"]',
            'cuda = ["11.8", "12.7"]',
            "release[0].cuda",
            "no toolkit",
        ),
        ("torch.toml", 'latest = "2.4.1"', 'latest = "2.5.1"', "release[0].latest", "not a patch"),
        (
            "torch.toml",
            "cxx11_abi = [false]",
            "cxx11_abi = []",
            "release[0].cxx11_abi",
            "non-empty",
        ),
        (
            "gpus.toml",
            '"Tesla T4"',
            '"NVIDIA H100 80GB HBM3"',
            "gpu[17].aliases",
            "already a name of 'T4'",
        ),
        ("gpus.toml", 'cc = "6.1"', 'cc = "6.6"', "gpu[0].cc", "not a compute capability"),
        (
            "gpus.toml",
            "memory_gib = [11]",
            'memory_gib = ["11"]',
            "gpu[0].memory_gib",
            "list of integers",
        ),
        (
            "gpus.toml",
            'source = "https://developer',
            'source = "http://developer',
            "gpu[0].source",
            "not an https URL",
        ),
    ],
)
def test_malformed_data_is_a_config_error_naming_file_and_key(
    tmp_path: Path, file: str, old: str, new: str, where: str, problem: str
) -> None:
    directory = _copy_data(tmp_path)
    _replace(directory / file, old, new)
    with pytest.raises(ConfigError) as caught:
        load(directory)
    message = str(caught.value)
    assert file in message and where in message and problem in message
    assert caught.value.exit_code == 2


def test_invalid_toml_and_missing_files_are_config_errors(tmp_path: Path) -> None:
    directory = _copy_data(tmp_path)
    (directory / "torch.toml").write_text("[[release]\nversion = ")
    with pytest.raises(ConfigError, match=r"torch\.toml: not valid TOML"):
        load(directory)
    (directory / "torch.toml").write_text("[[other]]\nx = 1\n")
    with pytest.raises(ConfigError, match=r"torch\.toml: release: missing or empty"):
        load(directory)
    shutil.copy(DATA_DIR / "torch.toml", directory / "torch.toml")
    (directory / "gpus.toml").unlink()
    with pytest.raises(ConfigError, match=r"gpus\.toml: cannot read"):
        load(directory)
