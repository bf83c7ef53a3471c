"""Real released sdists from PyPI, fetched by cuship where pip would find them and read, never
run: plain C packages and a Cython one hold no device code (one +cpu job each), torch CUDA
extensions do (CUDA jobs with their gate opened), and a setup.py that hard-codes its -gencode
flags and a FORCE_BUILD switch is read from the unpacked sdist as from a source tree."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cuship.builder.sdists import fetch_sdists
from cuship.compat import load
from cuship.config import load_config, package_configs
from cuship.matrix import jobs_with_configs

pytestmark = pytest.mark.network

PYPI = "https://pypi.org/simple"
SDISTS = {
    # name: (version, its kind, device code expected)
    "bitarray": ("3.7.1", "plain C", False),
    "bottleneck": ("1.5.0", "plain C with NumPy", False),
    "cytoolz": ("1.0.1", "Cython", False),
    "chamferdist": ("1.0.3", "torch CUDA extension behind FORCE_CUDA", True),
    "torch-scatter": ("2.1.2", "torch CUDA extension, PyG family", True),
    "causal-conv1d": ("1.7.0", "torch CUDA extension with hard-coded -gencode flags", True),
}


def _reach_pypi() -> None:
    try:
        urllib.request.urlopen(f"{PYPI}/bitarray/", timeout=20).close()
    except (urllib.error.URLError, OSError) as err:
        pytest.skip(f"PyPI ({PYPI}) cannot be reached ({err}); no sdist to read")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _reach_pypi()
    root = tmp_path_factory.mktemp("index")
    (root / "config").mkdir()
    entries = "".join(f"  {name}: {{versions: ['{v[0]}']}}\n" for name, v in SDISTS.items())
    (root / "config" / "packages.yml").write_text(
        f'matrix: {{python: ["3.11"], cuda: ["13.0"], arch: ["9.0"]}}\npackages:\n{entries}',
        encoding="utf-8",
    )
    return root


def test_device_code_is_found_in_real_sdists_of_each_kind(index: Path, tmp_path: Path) -> None:
    config = fetch_sdists(load_config(index), {"index-url": PYPI}, cache=tmp_path / "cache")
    for name, (version, kind, device) in SDISTS.items():
        sdist = config.sdists[f"{name}=={version}"]
        assert sdist.device.found is device, (kind, sdist.device)
        assert sdist.archive.is_file() and len(sdist.sha256) == 64
    ids = {job.project: job.id for _, job in jobs_with_configs(config, load())}
    assert ids["bitarray"] == "bitarray-3.7.1-cp311-cpu"
    assert ids["cytoolz"] == "cytoolz-1.0.1-cp311-cpu"
    assert ids["chamferdist"] == "chamferdist-1.0.3-cp311-cu130"
    by_name = {cfg.project.name: cfg for cfg in package_configs(config)}
    assert by_name["chamferdist"].script.gates == ("FORCE_CUDA",)
    assert "FORCE_CUDA" in by_name["torch-scatter"].script.gates
    conv = by_name["causal-conv1d"].script
    assert conv.force_switches == ("CAUSAL_CONV1D_FORCE_BUILD",)
    assert any("-gencode" in line for line in conv.arch_flags), conv.arch_flags


def test_a_packages_yml_dry_run_reads_the_sdist_s_setup_py(index: Path) -> None:
    """``--dry-run`` of causal-conv1d from packages.yml: its nine hard-coded -gencode flags are
    named (not "the build names no arch flags of its own"), its FORCE_BUILD switch and the
    FORCE_CUDA gate are set, and the sdist file cuship read is the one pip builds."""
    (index / "config" / "packages.yml").write_text(
        'matrix: {python: ["3.11"], torch: ["2.13"], arch: ["9.0"]}\npackages:\n'
        "  causal-conv1d: {versions: ['1.7.0'], build_args: --no-build-isolation, "
        "extra_deps: [torch]}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "cuship", "build", str(index), "--dry-run", "--mode", "local"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "names no arch flags of its own" not in out
    assert 'setup.py passes its own arch flags (cc_flag.append("-gencode")' in out
    assert "[matrix] cuda not given: CUDA" in done.stderr, "the plan says where its CUDA came from"
    build = next(line for line in out.splitlines() if " wheel --no-deps " in line)
    assert "CAUSAL_CONV1D_FORCE_BUILD=TRUE" in build and "FORCE_CUDA=1" in build
    assert build.rstrip().endswith("causal_conv1d-1.7.0.tar.gz")
    assert "CPATH=" in build and "cuda-wheels/include" in build
