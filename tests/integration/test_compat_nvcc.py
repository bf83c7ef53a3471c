"""The SASS targets in cuda.toml agree with what the installed nvcc accepts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cuship.compat import load

NVCC = Path("/usr/local/cuda/bin/nvcc")


def _nvcc(*args: str) -> str:
    return subprocess.run(
        [str(NVCC), *args], check=True, capture_output=True, text=True, timeout=60
    ).stdout


@pytest.fixture(scope="module")
def release() -> str:
    found = re.search(r"release (\d+\.\d+)", _nvcc("--version"))
    assert found, "nvcc --version did not name its release"
    return found.group(1)


def test_plain_targets_match_nvcc_list_gpu_code(release: str) -> None:
    listed = {code.removeprefix("sm_") for code in _nvcc("--list-gpu-code").split()}
    toolkit = load().cuda(release)
    assert {sm for sm in toolkit.sms if sm.isdigit()} == listed


def test_suffixed_targets_are_accepted_by_nvcc(release: str, tmp_path: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k() {}\n")
    toolkit = load().cuda(release)
    rejected = []
    for sm in (s for s in toolkit.sms if not s.isdigit()):
        run = subprocess.run(
            [str(NVCC), "--dryrun", f"-arch=sm_{sm}", "-c", str(source), "-o", "/dev/null"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        if run.returncode != 0:
            rejected.append(sm)
    assert rejected == []
    assert not toolkit.can_target("70")
