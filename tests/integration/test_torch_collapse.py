"""`cuship build` on a tiny real CUDA project with a two-torch axis whose extension links no torch:
one wheel is built, labelled by CUDA alone, the other torch is collapsed onto it, the verdict is
recorded, and `cuship matrix --explain` then plans one job and says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

SETUP = """\
import os, subprocess
from pathlib import Path
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

class Nvcc(build_ext):
    def build_extension(self, ext):
        out = Path(self.get_ext_fullpath(ext.name))
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("CUDACXX", "nvcc"), "-shared", "-Xcompiler", "-fPIC",
                        "--cudart", "shared", "-gencode", "arch=compute_90,code=sm_90",
                        *ext.sources, "-o", str(out)], check=True)

setup(name="tinyops", version="0.1.0", packages=["tinyops"],
      ext_modules=[Extension("tinyops._ops", ["ops.cu"])], cmdclass={"build_ext": Nvcc})
"""
KERNEL = """\
__global__ void scale(float a, float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" int launch_scale(float a, float* x, int n) {
    scale<<<(n + 255) / 256, 256>>>(a, x, n);
    return 0;
}
"""
CONFIG = """\
[project]
name = "tinyops"
version = "0.1.0"
[matrix]
python = ["{python}"]
cuda = ["13.0"]
torch = ["2.9", "2.10"]
arch = "9.0"
[build]
isolation = false
"""


def tiny_project(root: Path) -> Path:
    """A setuptools project whose one extension is a CUDA kernel built by nvcc (no torch)."""
    root.mkdir(parents=True)
    (root / "setup.py").write_text(SETUP)
    (root / "ops.cu").write_text(KERNEL)
    (root / "tinyops").mkdir()
    (root / "tinyops" / "__init__.py").write_text("")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "cuship.toml").write_text(CONFIG.format(python=python))
    return root


CP = f"cp{sys.version_info.major}{sys.version_info.minor}"


def cuship(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cuship", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=False,
        timeout=600,
    )


def test_a_torch_free_wheel_collapses_the_torch_axis(tmp_path: Path) -> None:
    project = tiny_project(tmp_path / "tinyops")
    done = cuship("build", str(project), "-o", str(tmp_path / "out"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = json.loads(done.stdout)
    assert [(o["job"], o["status"]) for o in outcomes] == [
        (f"tinyops-0.1.0-{CP}-cu130", "built"),
        (f"tinyops-0.1.0-{CP}-cu130-torch2.10", "collapsed"),
    ]
    wheel = Path(outcomes[0]["wheel"])
    assert wheel.name.startswith(f"tinyops-0.1.0+cu130-{CP}-"), wheel.name
    assert [p.name for p in wheel.parent.glob("*.whl")] == [wheel.name]
    assert outcomes[0]["report"]["torch_abi"] == "none"
    assert outcomes[1]["detail"] == f"served by {wheel.name}: it links no torch (torch_abi none)"
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if "libcudart" in n], "nothing bundled"

    record = json.loads((project / ".cuship" / "torch-abi.json").read_text())
    assert record == {
        "project": "tinyops",
        "version": "0.1.0",
        "torch_abi": "none",
        "wheel": wheel.name,
        "job": f"tinyops-0.1.0-{CP}-cu130-torch2.9",
    }

    explained = cuship("matrix", str(project), "--explain")
    assert explained.returncode == 0, explained.stderr
    assert (
        f"torch axis collapsed: tinyops 0.1.0 links no torch (torch_abi none, recorded from "
        f"{wheel.name}): 2 jobs → 1" in " ".join(explained.stdout.split())
    )
    jobs = json.loads(cuship("matrix", str(project), "--format", "json").stdout)["jobs"]
    assert [(j["id"], j["label"], j["torch"]) for j in jobs] == [
        (f"tinyops-0.1.0-{CP}-cu130", "cu130", "2.9")
    ]
