"""`cuship gpu-run` for real: real pip, real venvs, real pytest and `cuship check` subprocesses.

There is no GPU here; ``CUSHIP_GPUS`` fakes one (or none) for the machine check, the wheel choice
and cuship's pytest plugin. The stages then run on the CPU, and gpu-run.json says the GPU was
faked, so a dry run is never mistaken for a GPU run.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.integration import clirun
from tests.integration.cudawheel import build_so
from tests.integration.cudawheel import make_wheel as make_cuda_wheel
from tests.integration.venvs import make_venv
from tests.jsondocs import GPU_RUN, schema_errors
from tests.wheel_factory import make_wheel

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
FAKE_H100 = {"CUSHIP_GPUS": "H100:9.0:80GiB", "CUSHIP_DRIVER_CUDA": "13.0"}
_DROP = ("CUSHIP_GPUS", "CUSHIP_DRIVER_CUDA", "CUSHIP_STORE", "TRITON_INTERPRET", "PYTEST_ADDOPTS")


gpu_run = partial(clirun.cuship, "gpu-run", drop=_DROP, timeout=None)


def _tiny(
    root: Path, *, check: bool = False, bench: bool = False, pytest_args: str = '["tests"]'
) -> Path:
    """A src-layout project whose source says "source" and whose wheel says "wheel"."""
    project = root / "tiny"
    (project / "src" / "tinypkg").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "tinypkg"\nversion = "0.1.0"\n'
        '[tool.pytest.ini_options]\npythonpath = ["src"]\n'  # what gpu-run must undo
    )
    (project / "src" / "tinypkg" / "__init__.py").write_text('WHERE = "source"\n')
    (project / "tests" / "helper.py").write_text("EXPECTED = 'wheel'\n")
    (project / "tests" / "test_tiny.py").write_text(
        textwrap.dedent(
            """
            import pytest
            import tinypkg
            from helper import EXPECTED

            @pytest.mark.gpu
            def test_the_wheel_is_what_runs():
                assert tinypkg.WHERE == EXPECTED
            """
        )
    )
    config = f"[ci]\npytest_args = {pytest_args}\n"
    if check:
        (project / "checks").mkdir()
        (project / "checks" / "tiny_checks.py").write_text(
            textwrap.dedent(
                """
                import numpy as np
                import tinypkg
                from cuship.check import Impl, Op, Tensor

                assert tinypkg.WHERE == "wheel", tinypkg.__file__

                def add(x, y, out):
                    np.add(x, y, out=out)

                OPS = [Op(name="add", reference=lambda x, y: x + y,
                          impls=(Impl(kind="native", fn=add),),
                          inputs=(Tensor(name="x", dims=("n",)), Tensor(name="y", dims=("n",))),
                          outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 8},))]
                """
            )
        )
        config += '[check]\nmodules = ["checks/tiny_checks.py"]\n'
    if bench:
        (project / "benchmarks").mkdir()
        (project / "benchmarks" / "bench_tiny.py").write_text(
            "import tinypkg\nfrom cuship.bench import case\n\n"
            "assert tinypkg.WHERE == 'wheel', tinypkg.__file__\n\n\n"
            "@case\ndef noop():\n    return None\n"
        )
        config += '[bench]\nmodules = ["benchmarks/bench_tiny.py"]\n'
    (project / "cuship.toml").write_text(config)
    return project


def _wheel(directory: Path, *, requires: str = "") -> Path:
    return make_wheel(
        directory,
        "tinypkg",
        "0.1.0",
        modules={"tinypkg/__init__": 'WHERE = "wheel"\n'},
        extra_metadata=requires,
    )


def _summary(results: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((results / "gpu-run.json").read_text())
    return loaded


def test_a_machine_without_gpu_exits_3_and_installs_nothing(tmp_path: Path) -> None:
    _wheel(tmp_path / "wheels")
    done = gpu_run(
        EXAMPLE,
        "--wheels",
        tmp_path / "wheels",
        "-o",
        "res",
        cwd=tmp_path,
        env={"CUSHIP_GPUS": "none"},
    )
    assert done.returncode == 3, done.stderr
    first, hint = done.stderr.splitlines()
    assert first.startswith("error: no CUDA GPU on this machine")
    assert "installs nothing" in first and hint.startswith("  hint: run it on a GPU runner")
    assert not (tmp_path / "res").exists()


def test_bad_inputs_exit_2_naming_them(tmp_path: Path) -> None:
    _wheel(tmp_path / "wheels")
    missing = gpu_run(EXAMPLE, "--wheels", "nowhere", cwd=tmp_path, env=FAKE_H100)
    assert missing.returncode == 2
    assert "--wheels: no such file or directory: 'nowhere'" in missing.stderr
    no_project = gpu_run("no-project", "--wheels", "wheels", cwd=tmp_path, env=FAKE_H100)
    assert (
        no_project.returncode == 2 and "no-project: no such file or directory" in no_project.stderr
    )
    assert not list(tmp_path.glob("gpu-run-results*"))


def test_no_fitting_wheel_exits_1_with_each_wheel_and_why(tmp_path: Path) -> None:
    """A real CUDA wheel (nvcc, SASS for sm_80 only) on a faked H100 (9.0)."""
    so = build_so(tmp_path, gencode=("arch=compute_80,code=sm_80",))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    cuda = make_cuda_wheel(wheels, so, name="tinypkg", tag=f"{tag}-{tag}-linux_x86_64")
    pure = make_wheel(wheels, "tinypkg", "0.0.9", tag="py2-none-any")
    done = gpu_run(
        _tiny(tmp_path), "--wheels", *sorted(wheels.glob("*.whl")), cwd=tmp_path, env=FAKE_H100
    )
    assert done.returncode == 1, done.stderr
    assert "no wheel of 'tinypkg' fits this machine (H100 (9.0), driver CUDA 13.0" in done.stderr
    assert f"  {cuda.name}: gpu: H100 (9.0): " in done.stderr
    assert "carries no SASS or PTX it can run (it has sm_80)" in done.stderr
    assert f"  {pure.name}: tags: tags py2-none-any do not fit" in done.stderr
    assert not list(tmp_path.glob("gpu-run-results*"))  # nothing ran, nothing written
    on_a100 = gpu_run(
        _tiny(tmp_path / "a"), "--wheels", wheels, cwd=tmp_path, env={"CUSHIP_GPUS": "A100:8.0"}
    )
    assert f"wheel: {cuda.name} (best fit: SASS for every GPU" in on_a100.stderr


def test_end_to_end_in_a_fresh_venv(tmp_path: Path) -> None:
    project = _tiny(tmp_path, check=True)
    wheel = _wheel(tmp_path / "wheels")
    done = gpu_run(
        project, "--wheels", tmp_path / "wheels", "-o", "res", cwd=tmp_path, env=FAKE_H100
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the GPU is faked (CUSHIP_GPUS='H100:9.0:80GiB')" in done.stderr
    results = tmp_path / "res"
    doc = _summary(results)
    assert (doc["exit_code"], doc["verdict"], doc["precedence"]) == (0, "passed", [2, 3, 1, 4, 0])
    assert doc["machine"]["gpu_faked"] is True and doc["machine"]["gpus"][0]["cc"] == "9.0"
    assert doc["wheel"]["filename"] == wheel.name and len(doc["wheel"]["sha256"]) == 64
    install = doc["install"]
    assert install["mode"] == "venv" and install["wheel_sha256"] == doc["wheel"]["sha256"]
    venv = results / "venv"
    assert install["location"].startswith(str(venv))
    assert install["origins"]["tinypkg"].startswith(str(venv))
    stages = {s["name"]: s for s in doc["stages"]}
    assert {s["name"]: s["verdict"] for s in doc["stages"]} == {
        "pytest": "passed",
        "check": "passed",
        "check-ptx": "skipped",
        "sanitize": "skipped",
        "bench": "skipped",
    }
    assert stages["check-ptx"]["reason"] == "the wheel has no CUDA device code: no PTX to run"
    assert stages["sanitize"]["reason"] == (
        "the GPU is faked (CUSHIP_GPUS): compute-sanitizer needs a real one"
    )
    assert stages["pytest"]["command"][:4] == [
        str(venv / "bin/python"),
        "-m",
        "pytest",
        "--require-gpu",
    ]
    assert stages["pytest"]["env"]["TRITON_INTERPRET"] == "0"
    assert stages["pytest"]["outputs"] == ["pytest.xml"] and stages["pytest"]["log"] == "pytest.log"
    assert any(n.startswith("imported from the installed wheel") for n in stages["pytest"]["notes"])
    assert stages["check"]["outputs"] == ["check.json", "check.xml"]
    assert '<testcase classname="cuship.check.add"' in (results / "check.xml").read_text()
    assert stages["bench"]["reason"] == "no [bench] modules configured, or [ci] bench = false"
    assert 'tests="2"' in (results / "pytest.xml").read_text()  # the test and require-gpu
    text = (results / "gpu-run.txt").read_text()
    assert text.startswith("cuship gpu-run: tinypkg on H100 (9.0) (faked); wheel tinypkg-0.1.0")
    assert text.endswith("exit 0 (passed)\n") and re.search(r"^pytest +passed +0 ", text, re.M)


def test_source_shadowing_the_wheel_fails_the_stage_in_place(tmp_path: Path) -> None:
    """--in-place into another interpreter; pytest_args that put src/ first are caught (1);
    bench imports the installed wheel but finds no CUDA timer here (3), which outranks 1."""
    env_dir = tmp_path / "env"
    make_venv(env_dir, system_site=True)  # pip, pytest and cuship come from this interpreter's
    python = env_dir / "bin" / "python"
    shadowing = '["tests", "-o", "pythonpath=src", "--import-mode=prepend"]'
    project = _tiny(tmp_path, bench=True, pytest_args=shadowing)
    _wheel(tmp_path / "wheels")
    done = gpu_run(
        project,
        "--wheels",
        tmp_path / "wheels",
        "--in-place",
        "--python",
        python,
        "-o",
        "res",
        "--json",
        cwd=tmp_path,
        env={"CUDA_VISIBLE_DEVICES": "", **FAKE_H100},
    )  # fmt: skip  (no device for torch, so the bench stage is tool-missing on a GPU box too)
    assert done.returncode == 3, done.stderr
    doc = json.loads(done.stdout)
    assert doc == _summary(tmp_path / "res")
    assert schema_errors(GPU_RUN, doc) == []
    assert doc["install"]["mode"] == "in-place" and doc["install"]["python"] == str(python)
    pytest_stage = doc["stages"][0]
    assert pytest_stage["verdict"] == "failed"
    assert pytest_stage["reason"].startswith(
        f"pytest imported tinypkg from '{project}/src/tinypkg/__init__.py', not the installed wheel"
    )
    assert list(env_dir.glob("lib/python*/site-packages/tinypkg/__init__.py"))
    assert {s["name"]: s["verdict"] for s in doc["stages"]} == {
        "pytest": "failed",
        "check": "skipped",
        "check-ptx": "skipped",
        "sanitize": "skipped",
        "bench": "tool-missing",
    }
    assert "--timer cuda, but torch sees no CUDA device" in (tmp_path / "res/bench.log").read_text()


@pytest.mark.parametrize("requires", ["Requires-Dist: no-such-dependency-xyz>=1\n"])
def test_missing_dependencies_exit_3_and_run_nothing(tmp_path: Path, requires: str) -> None:
    _wheel(tmp_path / "wheels", requires=requires)
    done = gpu_run(
        _tiny(tmp_path), "--wheels", tmp_path / "wheels", "-o", "res", cwd=tmp_path, env=FAKE_H100
    )
    assert done.returncode == 3, done.stderr
    doc = _summary(tmp_path / "res")
    assert doc["install"]["verdict"] == "tool-missing"
    assert doc["install"]["missing_requirements"] == ["no-such-dependency-xyz>=1: not installed"]
    assert {s["verdict"] for s in doc["stages"]} == {"not-run"}


_DIVERGENT_CHECKS = """
import os

import numpy as np
import tinypkg
from cuship.check import Impl, Op, Tensor

assert tinypkg.WHERE == "wheel", tinypkg.__file__


def add(x, y, out):
    np.add(x, y, out=out)


def add_cuda(x, y, out):  # stands in for a kernel whose PTX path is wrong
    np.add(x, y, out=out)
    if os.environ.get("CUDA_FORCE_PTX_JIT") == "1":
        out += 1


OPS = [Op(name="add", reference=lambda x, y: x + y,
          impls=(Impl(kind="native", fn=add), Impl(kind="cuda", fn=add_cuda)),
          inputs=(Tensor(name="x", dims=("n",)), Tensor(name="y", dims=("n",))),
          outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 8},))]
"""


def _cuda_tiny(tmp_path: Path, ptx: str) -> Path:
    """The tiny project with a cuda entry point that goes wrong only under forced PTX JIT, and
    its wheel: a real .so (nvcc) with SASS for sm_90 and PTX for ``ptx`` only."""
    project = _tiny(tmp_path, check=True)
    (project / "checks" / "tiny_checks.py").write_text(_DIVERGENT_CHECKS)
    so = build_so(tmp_path, gencode=("arch=compute_90,code=sm_90", f"arch={ptx},code={ptx}"))
    (tmp_path / "wheels").mkdir()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    make_cuda_wheel(
        tmp_path / "wheels",
        so,
        name="tinypkg",
        tag=f"{tag}-{tag}-linux_x86_64",
        extra={"tinypkg/__init__.py": b'WHERE = "wheel"\n'},
    )
    return project


def test_check_ptx_runs_the_quick_check_forced_and_reports_it_next_to_the_plain_one(
    tmp_path: Path,
) -> None:
    project = _cuda_tiny(tmp_path, "compute_80")
    done = gpu_run(
        project, "--wheels", tmp_path / "wheels", "-o", "res", cwd=tmp_path, env=FAKE_H100
    )
    assert done.returncode == 1, done.stdout + done.stderr
    results = tmp_path / "res"
    doc = _summary(results)
    stages = {s["name"]: s for s in doc["stages"]}
    assert [s["name"] for s in doc["stages"]][1:3] == ["check", "check-ptx"]
    assert (stages["check"]["verdict"], stages["check-ptx"]["verdict"]) == ("passed", "failed")
    assert stages["check-ptx"]["outputs"] == ["check-ptx.json", "check-ptx.xml"]
    report = json.loads((results / "check-ptx.json").read_text())
    assert (report["force_ptx"], report["quick"]) == (True, True)
    assert report["jit"] == [
        f"H100 (9.0) JIT-compiles compute_80 of {doc['install']['location']}/tinypkg/_axpy.so"
    ]
    assert {g["engine"]: g["status"] for g in report["groups"]} == {
        "native": "skipped",
        "cuda": "failed",
    }
    assert json.loads((results / "check.json").read_text())["force_ptx"] is False
    junit = (results / "check-ptx.xml").read_text()
    assert '<testcase classname="cuship.check.ptx.add"' in junit
    text = (results / "gpu-run.txt").read_text()
    assert re.search(r"^check-ptx +failed +1 .* check-ptx\.log$", text, re.M)


def test_check_ptx_without_jit_able_ptx_is_tool_missing_with_its_reason(tmp_path: Path) -> None:
    """The H100 incident: the wheel's only PTX is compute_120, which a 9.0 GPU cannot JIT."""
    project = _cuda_tiny(tmp_path, "compute_120")
    done = gpu_run(
        project, "--wheels", tmp_path / "wheels", "-o", "res", cwd=tmp_path, env=FAKE_H100
    )
    assert done.returncode == 3, done.stdout + done.stderr
    stages = {s["name"]: s for s in _summary(tmp_path / "res")["stages"]}
    assert stages["check"]["verdict"] == "passed"
    ptx = stages["check-ptx"]
    assert (ptx["verdict"], ptx["exit_code"], ptx["raw_exit_code"]) == ("tool-missing", 3, 3)
    assert ptx["reason"].startswith("--force-ptx: ") and ptx["reason"].endswith(
        "/tinypkg/_axpy.so has no PTX that H100 (compute capability 9.0) can JIT (PTX: "
        "compute_120; SASS: sm_90): under CUDA_FORCE_PTX_JIT=1 its kernels would fail with "
        "'no kernel image is available for execution on the device'"
    )
    skipped = gpu_run(
        project, "--wheels", tmp_path / "wheels", "-o", "res2", "--skip-ptx",
        cwd=tmp_path, env=FAKE_H100,
    )  # fmt: skip
    assert skipped.returncode == 0, skipped.stderr
    stages = {s["name"]: s for s in _summary(tmp_path / "res2")["stages"]}
    assert (stages["check-ptx"]["verdict"], stages["check-ptx"]["reason"]) == (
        "skipped",
        "--skip-ptx",
    )
