"""causal-conv1d 1.7.0's own sdist from PyPI, unmodified but for the cuship.toml its maintainer
adds: cuship reads its name and version from setup.py, switches its prebuilt download off, and
puts its nvcc in front of the nine ``-gencode`` flags setup.py hard-codes.

Its build needs torch for CUDA (setup.py stops on a CPU torch) and about 15 minutes of nvcc per
arch on two cores, so the build itself is in benchmarks/gpu_extension_run.sh and the issue notes;
this test plans it (``--dry-run``), which reads everything cuship decides from the real files.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.network

SIMPLE = "https://pypi.org/simple/causal-conv1d/"
SDIST = "causal_conv1d-1.7.0.tar.gz"
_LIMIT = 1 << 20  # the sdist is about 30 kB


def _download(folder: Path) -> Path:
    try:
        with urllib.request.urlopen(SIMPLE, timeout=30) as page:
            html = page.read(4 << 20).decode()
    except (urllib.error.URLError, OSError) as err:
        pytest.skip(f"PyPI ({SIMPLE}) cannot be reached ({err}); no sdist to plan")
    link = next(h for h, n in re.findall(r'href="([^"]+)"[^>]*>([^<]+)<', html) if n == SDIST)
    url, _, digest = link.partition("#sha256=")
    with urllib.request.urlopen(url, timeout=60) as answer:
        data = answer.read(_LIMIT)
    assert hashlib.sha256(data).hexdigest() == digest, "the file PyPI's page names"
    path = folder / SDIST
    path.write_bytes(data)
    return path


def test_causal_conv1d_is_planned_with_its_name_switch_and_only_the_configured_arch(
    tmp_path: Path,
) -> None:
    with tarfile.open(_download(tmp_path)) as archive:
        archive.extractall(tmp_path, filter="data")
    project = tmp_path / "causal_conv1d-1.7.0"
    (project / "cuship.toml").write_text(
        '[matrix]\npython = ["3.11"]\ncuda = ["13.0"]\ntorch = ["2.13"]\narch = "9.0"\n\n'
        '[build]\nisolation = false\ntest_import = "causal_conv1d"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "build", str(project), "--dry-run", "--mode", "local"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert out.startswith("causal-conv1d-1.7.0-cp311-cu130-torch2.13 "), out[:200]
    arch = next(line for line in out.splitlines() if line.strip().startswith("# arch"))
    assert "cuship's nvcc replaces every device compile's arch flags" in arch
    assert 'setup.py passes its own arch flags (cc_flag.append("-gencode")' in arch
    assert "--gencode -gencode=arch=compute_90,code=sm_90" in out
    build = next(line for line in out.splitlines() if " pip wheel " in line)
    assert "CAUSAL_CONV1D_FORCE_BUILD=TRUE" in build and "/cuda-home " in build
    assert "FORCE_CUDA=1" in build, "a CUDA job of a torch extension opens the GPU gate"
    assert "# CUDA gate: FORCE_CUDA=1" in out
