"""The foundation commands as a user runs them: real processes, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from cuship.docs.documents import schema_file
from cuship.errors import ConfigError, NothingToDo, UsageError
from tests.integration import clirun
from tests.jsondocs import schema_errors

cuship = partial(clirun.cuship, timeout=120)


def test_env_json_on_this_machine_does_not_import_torch() -> None:
    code = (
        "import json, sys; from cuship.machine import fingerprint; fp = fingerprint();"
        "print(json.dumps({'torch_imported': 'torch' in sys.modules, **fp.to_json()}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    doc = json.loads(done.stdout)
    assert doc["torch_imported"] is False
    fingerprint = {k: v for k, v in doc.items() if k != "torch_imported"}
    assert schema_errors(schema_file("env"), fingerprint) == []
    assert doc["python_tag"] == f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert doc["glibc"]
    if Path("/usr/local/cuda/bin/nvcc").exists():
        assert doc["toolkit"]["version"].startswith(("12.", "13."))
    from importlib import metadata

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        assert doc["torch"] is None
    else:
        assert doc["torch"]["version"] == torch_version
        assert doc["torch"]["cxx11abi"] is True  # every torch >= 2.7 wheel uses the new ABI


def test_env_json_under_overrides() -> None:
    done = cuship(
        "env",
        "--json",
        env={
            "CUSHIP_GPUS": "H100:9.0:80GiB,H100:9.0:80GiB",
            "CUSHIP_CUDA_DRIVER_VERSION": "575.57.08",
        },
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert schema_errors(schema_file("env"), doc) == []
    assert doc["gpu_source"] == "override"
    assert doc["compute_capabilities"] == ["9.0"]
    assert len(doc["gpus"]) == 2
    assert doc["driver_cuda"] == "12.9"


def test_env_reads_a_real_nvidia_smi_that_prints_garbage(tmp_path: Path) -> None:
    from cuship.machine import fingerprint

    if fingerprint().gpu_source == "nvml":
        pytest.skip("NVML answers on this GPU machine, so nvidia-smi is never asked")
    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate'\necho '\x01\x02 ???'\n"
    )
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUSHIP_")}
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    done = cuship("env", "--json", base=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["gpus"] == []
    assert any("cannot read" in note for note in doc["notes"])


def test_env_bad_override_exits_2() -> None:
    done = cuship("env", env={"CUSHIP_GPUS": "H100:nine"})
    assert done.returncode == UsageError.exit_code == 2
    assert "CUSHIP_GPUS" in done.stderr and "'nine'" in done.stderr
    assert "Traceback" not in done.stderr


def test_matrix_explain_on_the_example(example_dir: Path) -> None:
    done = cuship("matrix", str(example_dir), "--explain")
    assert done.returncode == 0, done.stderr
    assert "cuvecops-0.1.0-cp312-cu130 " in done.stdout
    assert "12 jobs" in done.stdout and "0 of 12 combinations pruned" in done.stdout
    assert "-torch" not in done.stdout  # the example builds against no torch


def test_matrix_explain_shows_torch_cuda_pruning(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[matrix]\npython = ["3.12"]\n'
        'cuda = ["12.8.1", "13.0.2"]\ntorch = ["2.8", "2.9"]\n'
    )
    done = cuship("matrix", str(tmp_path), "--explain")
    assert done.returncode == 0, done.stderr
    assert "demo-1.0-cp312-cu128-torch2.8" in done.stdout
    assert "1 of 4 combinations pruned" in done.stdout
    assert "torch-cuda" in done.stdout and "none for CUDA 13.x" in done.stdout


def test_matrix_github_output_is_one_json_line(example_dir: Path) -> None:
    done = cuship("matrix", str(example_dir), "--format", "github", "--shard", "1/2")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    include = json.loads(line)["include"]
    assert len(include) == 6  # half of 4 Pythons x 3 CUDA versions


def test_matrix_empty_after_pruning_exits_4_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n[matrix]\npython = ["3.12"]\ncuda = ["13.0"]\ntorch = ["2.8"]\n'
    )
    done = cuship("matrix", str(tmp_path))
    assert done.returncode == NothingToDo.exit_code == 4
    assert "torch 2.8 publishes" in done.stderr


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[matrix\n", "not valid TOML"),
        ('[matrix]\ncuda = ["12.7"]\n', "12.6"),
        ('[matrix]\ncuda = ["13.0"]\narch = "7.0"\n', "sm_70"),
    ],
)
def test_matrix_bad_config_exits_2(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "cuship.toml").write_text(text)
    done = cuship("matrix", str(tmp_path))
    assert done.returncode == ConfigError.exit_code == 2
    assert needle in done.stderr
    assert str(tmp_path / "cuship.toml") in done.stderr


def test_help_lists_commands_and_version() -> None:
    done = cuship("--help")
    assert done.returncode == 0
    for name in ("env", "matrix", "compat", "config"):
        assert name in done.stdout
    version = cuship("--version").stdout.splitlines()
    assert version[0] == "cuship 0.1.0" and version[1].startswith("from ")
    assert cuship("no-such-command").returncode == 2


def test_index_start_up_leaves_packaging_utils_out() -> None:
    """What `cuship index` imports before its first wheel leaves out packaging.utils (its tags
    bring sysconfig, logging and subprocess), packaging.requirements and multiprocessing:
    a sixth of a 5,000-wheel index's time went to that start-up (see cuship.wheel.read.filename)."""
    code = (
        "import sys, cuship.cli.index, cuship.index, cuship.index.describe, cuship.wheel.audit\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('packaging', 'multipro')))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["packaging", "packaging.version"]
