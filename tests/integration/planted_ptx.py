"""The planted PTX/SASS divergence (tests/fixtures/planted_ptx), copied and built with nvcc."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "planted_ptx"
NVCC = Path("/usr/local/cuda/bin/nvcc")
# SASS for sm_90, PTX for compute_80: a 9.0 GPU runs the SASS, or JITs the PTX when forced.
DIVERGENT = ("arch=compute_90,code=sm_90", "arch=compute_80,code=compute_80")
# The example's old arch list in small: the only PTX is compute_120, which a 9.0 GPU cannot JIT.
NEWEST_PTX_ONLY = ("arch=compute_90,code=sm_90", "arch=compute_120,code=compute_120")
# Arch-specific PTX: JIT-able on 9.0 alone.
ARCH_SPECIFIC = ("arch=compute_90a,code=compute_90a",)


def build(project: Path, gencode: tuple[str, ...] = DIVERGENT) -> Path:
    """Copy the fixture project to ``project`` and compile its extension; the .so built."""
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("__pycache__"))
    out = project / "planted" / f"_planted{sysconfig.get_config_var('EXT_SUFFIX')}"
    codes = [arg for code in gencode for arg in ("-gencode", code)]
    command = [str(NVCC), "-shared", "-Xcompiler", "-fPIC"]
    command += ["-I", sysconfig.get_paths()["include"], *codes]
    command += ["-o", str(out), str(project / "planted" / "planted.cu")]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, f"{command}:\n{done.stderr}"
    return out
