"""``--force-ptx`` on shared objects nvcc builds here (tests/fixtures/planted_ptx: a kernel right
from its sm_90 SASS and wrong from its compute_80 PTX), and what verify and doctor say a
wheel's PTX can serve.

Without a GPU the kernels cannot run: ``CUSHIP_GPUS`` fakes a 9.0 GPU for the gate (which reads
the files), and the cases then fail at ``cudaMalloc``. The tests marked GPU-only run the planted
op plain (passes) and forced (fails: caught), and the example's quick check forced (passes);
they skip, saying so, on a machine without a GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.integration import clirun, planted_ptx
from tests.site_factory import install

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cuvecops"
FAKE_H100 = {"CUSHIP_GPUS": "H100:9.0:80GiB"}
_DROP = ("GITHUB_ACTIONS", "CUSHIP_GPUS", "CUSHIP_STORE", "CUDA_FORCE_PTX_JIT")
cuship = partial(clirun.cuship, drop=_DROP)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """(project, .so) per build: SASS sm_90 + PTX compute_80 ("divergent"), SASS sm_90 + PTX
    compute_120 only ("newest"), PTX compute_90a only ("90a")."""
    root = tmp_path_factory.mktemp("planted")
    found = {}
    for name, gencode in (
        ("divergent", planted_ptx.DIVERGENT),
        ("newest", planted_ptx.NEWEST_PTX_ONLY),
        ("90a", planted_ptx.ARCH_SPECIFIC),
    ):
        project = root / name
        found[name] = (project, planted_ptx.build(project, gencode))
    return found


def _real_gpus() -> list[tuple[str, str | None]]:
    from cuship.machine import fingerprint

    environ = {k: v for k, v in os.environ.items() if not k.startswith("CUSHIP_")}
    fp = fingerprint(environ, toolkit=False)
    return [(g.name, g.cc) for g in fp.gpus] if fp.gpu_source != "override" else []


def _check(project: Path, *args: str, env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    done = cuship("check", project, "--format", "json", *args, env=env, cwd=project)
    assert done.returncode == 3 or done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr


def _groups(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["engine"]: g for g in report["groups"]}


def test_compute_80_ptx_passes_the_gate_on_a_9_0_gpu_and_the_run_is_forced(
    builds: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    project, so = builds["divergent"]
    store = tmp_path / "r.db"
    env = {**FAKE_H100, "CUSHIP_STORE": str(store)}
    code, report, stderr = _check(project, "--force-ptx", env=env)
    assert code == 1, stderr  # without a GPU: cudaMalloc fails; on a 9.0 GPU: the planted bug
    assert (report["device"], report["force_ptx"]) == ("cuda", True)
    assert report["jit"] == [f"H100 (9.0) JIT-compiles compute_80 of {so}"]
    assert f"force-ptx: H100 (9.0) JIT-compiles compute_80 of {so}" in stderr
    groups = _groups(report)
    assert groups["native"]["skip_reason"].startswith("--force-ptx: runs on the CPU")
    cuda = groups["cuda"]
    assert cuda["status"] in ("failed", "error")
    if cuda["status"] == "error":  # no GPU here: the worker ran under CUDA_FORCE_PTX_JIT=1
        assert "(CUDA_FORCE_PTX_JIT=1)" in cuda["cases"][0]["message"]
    stored = cuship("report", "--store", store, "--format", "json")
    assert [(r["meta"]["force_ptx"], r["meta"]["jit"]) for r in json.loads(stored.stdout)] == [
        (True, report["jit"])
    ]
    junit = cuship("report", "--store", store, "--format", "junit").stdout
    assert (
        'classname="cuship.check.ptx.scale"' in junit and 'name="force_ptx" value="True"' in junit
    )


def test_a_plain_run_is_plain_whatever_the_shell_exported(
    builds: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    project, _ = builds["divergent"]
    env = {**FAKE_H100, "CUSHIP_STORE": str(tmp_path / "r.db"), "CUDA_FORCE_PTX_JIT": "1"}
    code, report, stderr = _check(project, "--device", "cuda", env=env)
    assert report["force_ptx"] is False and report["jit"] == []
    cuda = _groups(report)["cuda"]
    if cuda["status"] == "error":  # no GPU here
        assert code == 1
        assert "(CUDA_FORCE_PTX_JIT=unset)" in cuda["cases"][0]["message"]
    elif {cc for _, cc in _real_gpus()} == {"9.0"}:  # on a 9.0 GPU its sm_90 SASS runs: right
        assert (code, cuda["status"]) == (0, "passed"), stderr


def test_only_compute_120_ptx_on_a_9_0_gpu_is_exit_3_with_the_fix(
    builds: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    """The H100 incident, refused before any kernel runs."""
    project, so = builds["newest"]
    env = {**FAKE_H100, "CUSHIP_STORE": str(tmp_path / "r.db")}
    out = tmp_path / "check-ptx.json"
    code, _, stderr = _check(project, "--force-ptx", "-o", str(out), env=env)
    assert code == 3, stderr
    assert (
        f"error: --force-ptx: {so} has no PTX that H100 (compute capability 9.0) can JIT "
        "(PTX: compute_120; SASS: sm_90): under CUDA_FORCE_PTX_JIT=1 its kernels would fail "
        "with 'no kernel image is available for execution on the device'"
    ) in stderr
    assert "hint: add +PTX to an arch <= 9.0 in [matrix] arch, e.g. 9.0+PTX" in stderr
    assert not out.exists()
    no_gpu = cuship("check", project, "--force-ptx", env={"CUSHIP_GPUS": "none"}, cwd=project)
    assert no_gpu.returncode == 3 and "this machine has no CUDA GPU" in no_gpu.stderr
    cpu = cuship("check", project, "--force-ptx", "--device", "cpu", env=env, cwd=project)
    assert cpu.returncode == 2 and "use --device cuda" in cpu.stderr


def test_verify_says_which_gpus_each_object_ptx_serves(
    builds: dict[str, tuple[Path, Path]],
) -> None:
    expected = {
        "divergent": "PTX compute_80: JIT on any GPU of compute capability >= 8.0 (the driver "
        "must support the CUDA toolkit that made it)",
        "newest": "PTX compute_120: JIT on any GPU of compute capability >= 12.0 (the driver "
        "must support the CUDA toolkit that made it)",
        "90a": "PTX compute_90a: JIT on only GPUs of compute capability 9.0 (arch-specific PTX) "
        "(the driver must support the CUDA toolkit that made it)",
    }
    for name, line in expected.items():
        _, so = builds[name]
        done = cuship("verify", so, "--arch", "compute_90a" if name == "90a" else "9.0")
        assert done.returncode == 0, done.stderr
        assert f"ptx: {so}: {line}" in done.stdout.splitlines()
    _, so = builds["90a"]
    as_json = json.loads(cuship("verify", so, "--arch", "compute_90a", "--json").stdout)
    assert as_json["ptx"] == [
        {
            "arch": "compute_90a",
            "rule": "exact",
            "cc": "9.0",
            "serves": "only GPUs of compute capability 9.0 (arch-specific PTX)",
        }
    ]


def test_doctor_says_which_gpus_a_package_ptx_serves(
    builds: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    files = {f"planted/_{name}.so": builds[name][1].read_bytes() for name in builds}
    install(tmp_path, "planted", "1.0", files=files)
    env = {**FAKE_H100, "PYTHONPATH": f"{clirun.SRC}{os.pathsep}{tmp_path}", "CUSHIP_TORCH": "none"}
    done = cuship("doctor", "planted", env=env)
    lines = done.stdout.splitlines()
    assert (
        "  objects  3 shared objects; SASS sm_90; PTX compute_80 compute_90a compute_120" in lines
    )
    for arch, serves in (
        ("80", "any GPU of compute capability >= 8.0"),
        ("90a", "only GPUs of compute capability 9.0 (arch-specific PTX)"),
        ("120", "any GPU of compute capability >= 12.0"),
    ):
        line = f"  ptx      PTX compute_{arch}: JIT on {serves} "
        assert any(x.startswith(line) for x in lines), done.stdout
    package = json.loads(cuship("doctor", "planted", "--json", env=env).stdout)["packages"][0]
    assert [r["arch"] for r in package["ptx_reach"]] == ["compute_80", "compute_90a", "compute_120"]


def _install(wheel: Path, site: Path) -> dict[str, str]:
    """``wheel`` installed into ``site`` (pip --target); the environment that imports it."""
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet"]
    done = subprocess.run([*pip, "--target", str(site), str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {"PYTHONPATH": f"{clirun.SRC}{os.pathsep}{site}"}


def test_the_example_wheel_passes_the_gate_on_a_9_0_gpu(
    example_wheel: Path, tmp_path: Path
) -> None:
    """Its compute_80 PTX is what a 9.0 GPU JITs (the wheel that failed on the H100 had only
    compute_120); here the cases then fail for want of a GPU, or pass on one."""
    env = {**_install(example_wheel, tmp_path / "site"), "CUSHIP_STORE": str(tmp_path / "r.db")}
    args = ("--installed", "--device", "cuda", "--quick", "--force-ptx")
    code, report, stderr = _check(EXAMPLE, *args, env={**env, **FAKE_H100})
    assert code in (0, 1), stderr
    (line,) = report["jit"]
    so = next((tmp_path / "site" / "cuvecops").glob("_cuda*.so"))
    assert line == f"H100 (9.0) JIT-compiles compute_80 of {so}"
    engines = {g["engine"]: g["status"] for g in report["groups"]}
    assert engines["cuda"] != "skipped" and engines["triton"] == "skipped"


# --- on a GPU --------------------------------------------------------------------------------


def _require_gpu(cc: str | None = None) -> None:
    gpus = _real_gpus()
    if not gpus:
        pytest.skip("needs a real NVIDIA GPU (none here): the kernels cannot run on the CPU")
    if cc is not None and any(found != cc for _, found in gpus):
        pytest.skip(f"needs GPUs of compute capability {cc} only; found {gpus}")


def test_on_a_9_0_gpu_the_planted_divergence_is_caught_only_from_ptx(
    builds: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    """sm_90 SASS is right, the compute_80 PTX is wrong: plain passes, forced fails."""
    _require_gpu("9.0")
    project, _ = builds["divergent"]
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    code, report, stderr = _check(project, "--device", "cuda", env=env)
    assert (code, _groups(report)["cuda"]["status"]) == (0, "passed"), stderr
    code, report, stderr = _check(project, "--device", "cuda", "--force-ptx", env=env)
    cuda = _groups(report)["cuda"]
    assert (code, cuda["status"]) == (1, "failed"), stderr
    assert cuda["cases"][0]["mismatches"] == cuda["cases"][0]["total"] == 1000
    assert cuda["cases"][0]["max_abs"] == pytest.approx(1.0)


def test_on_a_gpu_the_example_quick_check_passes_from_its_ptx(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The example's compute_80 PTX, JIT-compiled by the driver, gives the right answers."""
    _require_gpu()
    example_wheel: Path = request.getfixturevalue("example_wheel")  # built only on a GPU box
    env = {**_install(example_wheel, tmp_path / "site"), "CUSHIP_STORE": str(tmp_path / "r.db")}
    args = ("--installed", "--device", "cuda", "--quick", "--force-ptx")
    code, report, stderr = _check(EXAMPLE, *args, env=env)
    assert code == 0, stderr
    assert report["force_ptx"] is True
    assert all(line.endswith(".so") and "compute_80" in line for line in report["jit"])
    assert {g["status"] for g in report["groups"] if g["engine"] == "cuda"} == {"passed"}
