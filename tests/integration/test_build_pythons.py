"""`cuship build` for two Pythons on one machine: the running 3.11 and pyenv's 3.12, each wheel
built by its own interpreter (3.12 in a build venv under the output directory) and imported by
it in the smoke test; then the same with the index on a dead port (the offline smoke test).

The project is tiny on purpose (seconds per job): a CPython extension module whose one file
also holds a CUDA kernel, compiled by nvcc for sm_90 and linked against the shared CUDA runtime,
built by an in-tree PEP 517 backend that needs nothing from an index (stdlib only). It reports
the Python it was compiled for, so the smoke test's line says which interpreter imported it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.integration.clirun import SRC, cuship

PYENV_312 = sorted(Path.home().glob(".pyenv/versions/3.12.*/bin/python3.12"))
pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11) or not PYENV_312,
    reason="needs the running Python to be 3.11 and pyenv's 3.12 (this machine has both)",
)

MODULE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime.h>

__global__ void twice(int* x) { x[threadIdx.x] *= 2; }

static PyObject* built_for(PyObject* self, PyObject* args) {
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    return PyUnicode_FromFormat("built for %s, %s", PY_VERSION,
                                err == cudaSuccess ? "a GPU" : "no GPU");
}
static PyMethodDef methods[] = {{"built_for", built_for, METH_NOARGS, NULL}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&module); }
"""

BACKEND = r'''
"""A PEP 517 backend in 50 lines: nvcc builds the extension for this interpreter."""
import base64, hashlib, os, subprocess, sys, sysconfig, tempfile, zipfile
from pathlib import Path

NAME, VERSION = "tinycu", "0.1.0"
HERE = Path(__file__).parent


def _gencode():
    archs = os.environ.get("CUSHIP_CUDA_ARCHS", "90-real")
    for arch in archs.split(";"):
        sm, _, kind = arch.partition("-")
        codes = {"real": [f"sm_{sm}"], "virtual": [f"compute_{sm}"]}.get(kind, [f"sm_{sm}", f"compute_{sm}"])
        yield from (f"-gencode=arch=compute_{sm},code={code}" for code in codes)


def _tag():
    v = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    return f"{v}-{v}-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _record(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    nvcc = os.environ.get("CUDACXX", "nvcc")
    with tempfile.TemporaryDirectory() as tmp:
        so = Path(tmp) / ("_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
        subprocess.run(
            [nvcc, "-shared", "-Xcompiler", "-fPIC", "--cudart", "shared", *_gencode(),
             "-I", sysconfig.get_paths()["include"], "-o", str(so), str(HERE / "ext.cu")],
            check=True,
        )
        version = VERSION  # cuship adds the local label when it repairs the wheel
        dist = f"{NAME}-{version}.dist-info"
        files = {
            f"{NAME}/__init__.py": (HERE / "tinycu.py").read_bytes(),
            f"{NAME}/{so.name}": so.read_bytes(),
            f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Requires-Dist: packaging\n".encode(),
            f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: tiny\nRoot-Is-Purelib: false\nTag: {_tag()}\n".encode(),
        }
        name = f"{NAME}-{version}-{_tag()}.whl"
        with zipfile.ZipFile(Path(wheel_directory) / name, "w") as zf:
            record = "".join(_record(p, d) for p, d in files.items()) + f"{dist}/RECORD,,\n"
            for path, data in {**files, f"{dist}/RECORD": record.encode()}.items():
                info = zipfile.ZipInfo(path, (2024, 1, 1, 0, 0, 0))
                info.external_attr = 0o755 << 16
                zf.writestr(info, data)
    return name
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tinycu")
    (root / "ext.cu").write_text(MODULE)
    (root / "backend.py").write_text(BACKEND)
    (root / "tinycu.py").write_text(
        '__version__ = "0.1.0"\nfrom tinycu._ext import built_for as backend\n'
    )
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "tinycu"\nversion = "0.1.0"\nrequires-python = ">=3.10"\n'
    )
    (root / "cuship.toml").write_text(
        '[matrix]\npython = ["3.11", "3.12"]\ncuda = ["13.0"]\narch = "9.0"\n'
        '[build]\nisolation = false\ntest_import = "tinycu"\n'
    )
    return root


def _jobs(done_stdout: str) -> dict[str, dict[str, object]]:
    return {str(j["job"]): j for j in json.loads(done_stdout)}


def test_two_pythons_each_build_and_import_their_own_wheel(project: Path, tmp_path: Path) -> None:
    done = cuship("build", str(project), "--json", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = _jobs(done.stdout)
    assert set(jobs) == {"tinycu-0.1.0-cp311-cu130", "tinycu-0.1.0-cp312-cu130"}
    for tag, version, source in (("cp311", "3.11.", "running"), ("cp312", "3.12.", "pyenv")):
        job = jobs[f"tinycu-0.1.0-{tag}-cu130"]
        assert job["status"] == "built", job["detail"]
        python = job["python"]
        assert isinstance(python, dict)
        assert python["source"] == source and str(python["version"]).startswith(version)
        wheel = Path(str(job["wheel"]))
        assert wheel.name.startswith(f"tinycu-0.1.0+cu130-{tag}-{tag}-manylinux")
        with zipfile.ZipFile(wheel) as zf:
            assert [n for n in zf.namelist() if n.endswith(".so")] == [
                f"tinycu/_ext.cpython-{tag[2:]}-x86_64-linux-gnu.so"
            ]
        # the smoke test imported it with the job's own interpreter, in an isolated venv
        assert str(job["smoke"]).startswith(f"tinycu 0.1.0 built for {version}"), job["smoke"]
        assert job["smoke_env"] == "isolated"
    wheels = project / "dist" / "cuship" / "wheels"
    assert wheels.is_dir(), "the default output is the project's dist/cuship/wheels"
    assert len(list(wheels.glob("*.whl"))) == 2
    (env,) = (wheels / "envs").iterdir()
    assert env.name.startswith("cp312-"), "3.12 built in its own venv under the output"
    assert not list(tmp_path.iterdir()), "nothing written in the current directory"
    assert not [p for p in (wheels / "raw").rglob("tmp") if any(p.iterdir())], "temp files gone"
    log = (wheels / "logs" / "tinycu-0.1.0-cp312-cu130.log").read_text()
    assert f"--python {env}/bin/python wheel" in log


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_offline_a_good_wheel_is_not_failed_by_the_missing_network(
    project: Path, tmp_path: Path
) -> None:
    """The index on a dead port: the isolated smoke install (uv's when uv is here, given pip's
    PIP_INDEX_URL; else pip's) cannot fetch `packaging`; the smoke test falls back to a venv
    over the builder's site-packages and says so."""
    out = tmp_path / "out"
    offline = {
        "PIP_INDEX_URL": f"http://127.0.0.1:{_dead_port()}/simple",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_RETRIES": "0",
        "UV_HTTP_RETRIES": "0",
    }
    drop = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX")
    done = cuship("build", str(project), "-o", out, "--json", env=offline, drop=drop, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = _jobs(done.stdout)
    running, other = jobs["tinycu-0.1.0-cp311-cu130"], jobs["tinycu-0.1.0-cp312-cu130"]
    assert running["status"] == other["status"] == "built"
    assert running["smoke_env"] == other["smoke_env"] == "system-site"
    # cuship's own interpreter has `packaging`: the wheel was imported
    assert str(running["smoke"]).startswith("tinycu 0.1.0 built for 3.11.")
    assert "the isolated install failed (" in str(running["smoke_note"])
    assert "used a venv over the builder's site-packages" in str(running["smoke_note"])
    # 3.12's build venv has no `packaging`: not imported, and the outcome says why
    assert other["smoke"] is None
    assert "its requirements are not met here: tinycu 0.1.0+cu130 requires packaging" in str(
        other["smoke_note"]
    )
    assert "warning: smoke test of tinycu-0.1.0+cu130-cp311" in done.stderr


def test_two_jobs_build_at_once_and_report_in_plan_order(project: Path, tmp_path: Path) -> None:
    """--parallel 2: both jobs start before either ends, each with its share of MAX_JOBS (half
    the cores), both wheels are built and the JSON lists them in plan order (3.11, 3.12)."""
    out = tmp_path / "out"
    done = cuship("build", str(project), "-o", out, "--parallel", "2", "--json", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = [str(j["job"]) for j in json.loads(done.stdout)]
    assert jobs == ["tinycu-0.1.0-cp311-cu130", "tinycu-0.1.0-cp312-cu130"]
    assert all(j["status"] == "built" for j in json.loads(done.stdout))
    assert len(list(out.glob("*.whl"))) == 2
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    starts = [i for i, line in enumerate(progress) if "jobs at once" in line]
    ends = [i for i, line in enumerate(progress) if ": built in " in line]
    assert len(starts) == 2 and len(ends) == 2, progress
    assert max(starts) < min(ends), f"the second job started only after the first ended: {progress}"
    said = re.search(r"MAX_JOBS (\d+), its share with 2 jobs at once", progress[starts[0]])
    assert said is not None, progress[starts[0]]
    share = int(said[1])
    assert 1 <= share <= max(1, (os.cpu_count() or 1) // 2), "half the cores at most"
    log = (out / "logs" / "tinycu-0.1.0-cp312-cu130.log").read_text()
    assert f"MAX_JOBS={share} " in log


def _running_under(path: Path) -> list[str]:
    """Command lines of this machine's processes that name ``path``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(str(path).encode() in arg for arg in argv):
            found.append(" ".join(a.decode(errors="replace") for a in argv))
    return found


SLOW = """
_fast = build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    # a compile that takes a minute: a grandchild of pip, named by the output directory
    subprocess.run([sys.executable, "-c", "import time; time.sleep(60)", wheel_directory])
    return _fast(wheel_directory, config_settings, metadata_directory)
"""


def test_ctrl_c_ends_every_running_job_and_exits_130(project: Path, tmp_path: Path) -> None:
    """SIGINT while two jobs build at once, one in a minute-long compile (the other waits for
    the source tree: this backend is not known to build out of it): exit 130 at once, and
    nothing the jobs started is left running (pip's backend and its child included)."""
    slow = tmp_path / "slow"
    shutil.copytree(project, slow, ignore=shutil.ignore_patterns("dist"))
    with (slow / "backend.py").open("a") as backend:
        backend.write(SLOW)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "cuship", "build", str(slow), "-o", str(out), "--parallel", "2"]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # Started as a shell starts it: SIGINT at its default and unblocked. Both are inherited
    # across exec, and a long xdist worker was seen ignoring SIGINT (a Python started that way
    # never raises KeyboardInterrupt), which made this test wait out both builds.
    with subprocess.Popen(
        [sys.executable, "-c", _DEFAULT_SIGINT, *argv], env=env, stderr=subprocess.PIPE, text=True
    ) as child:
        assert child.stderr is not None
        deadline = time.monotonic() + 60
        while not _sleeping(out) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _sleeping(out), "the slow compile started"
        start = time.monotonic()
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=60) == 130, rest[-3000:]
    assert time.monotonic() - start < 20, "the running compile was ended, not waited for"
    assert rest.rstrip().endswith(("aborted", "interrupted")), rest[-3000:]
    assert not list(out.glob("*.whl"))
    time.sleep(1)
    assert not _running_under(out), "a command of an interrupted job is still running"


_DEFAULT_SIGINT = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
os.execv(sys.argv[1], sys.argv[1:])
"""


def _sleeping(out: Path) -> bool:
    return any("time.sleep(60)" in cmd for cmd in _running_under(out))
