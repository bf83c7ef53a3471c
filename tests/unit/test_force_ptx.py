"""--force-ptx: which PTX each GPU would JIT and the gate (exit 3), the workers' environment, the
plan (engine cuda only), the report's marking, gpu-run's check-ptx stage."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from cuship.check import Impl, Op, Tensor
from cuship.check.case.engines import worker_env
from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.render import render_json, render_junit, render_text, repro_command
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.check.run.device import choose_device
from cuship.check.run.forceptx import FORCED_SKIPS, decide, package_objects, require_jit
from cuship.check.run.runner import CheckSettings, plan, setup_for
from cuship.check.run.session import CheckRequest, run_check
from cuship.errors import NothingToDo, ToolMissing, UsageError
from cuship.gpurun.execute import _after
from cuship.gpurun.plan import ProjectFacts, StagePlan, plan_stages
from cuship.provenance import Extension, PackageOrigin, Provenance
from cuship.resolve.model import WheelFacts
from tests.elf_factory import cuda_elf
from tests.object_reports import EXT, object_report

H100 = ("NVIDIA H100 80GB HBM3", "9.0")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"


# --- the gate -----------------------------------------------------------------------------------


def test_compute_80_ptx_passes_the_gate_on_a_9_0_gpu() -> None:
    gate = decide([object_report(sass=("80", "90"), ptx=("80", "120"))], [H100, H100])
    require_jit(gate)  # no exception
    assert gate.lines() == (f"NVIDIA H100 80GB HBM3 (9.0) JIT-compiles compute_80 of {EXT}",)


def test_only_compute_120_ptx_is_refused_with_the_fix() -> None:
    gate = decide([object_report(sass=("80", "90", "120"), ptx=("120",))], [H100])
    with pytest.raises(ToolMissing) as err:
        require_jit(gate)
    assert err.value.exit_code == 3
    assert str(err.value.message) == (
        f"--force-ptx: {EXT} has no PTX that NVIDIA H100 80GB HBM3 (compute capability 9.0) "
        "can JIT (PTX: compute_120; SASS: sm_80, sm_90, sm_120): under CUDA_FORCE_PTX_JIT=1 its "
        "kernels would fail with 'no kernel image is available for execution on the device'"
    )
    assert err.value.hint is not None
    assert err.value.hint.startswith(
        "add +PTX to an arch <= 9.0 in [matrix] arch, e.g. 8.0+PTX "
        "(nvcc: -gencode arch=compute_80,code=compute_80)"
    )


def test_arch_specific_ptx_serves_only_its_own_gpu() -> None:
    obj = object_report(ptx=("90a",))
    require_jit(decide([obj], [H100]))
    for gpu in (("A100", "8.0"), ("B200", "10.0")):
        gate = decide([obj], [gpu])
        assert [t.gpu for t in gate.blocked] == [gpu[0]]
        with pytest.raises(ToolMissing, match=rf"compute capability {gpu[1]}"):
            require_jit(gate)


def test_every_gpu_and_every_object_with_device_code_is_checked() -> None:
    good = object_report("pkg/_good.so", sass=("90",), ptx=("80",))
    bad = object_report("pkg/libkernels.so", sass=("90",))
    host = object_report("pkg/_host.so")  # no device code: nothing to JIT, not checked
    gate = decide([good, bad, host], [H100, ("RTX 5090", "12.0")])
    assert [(t.gpu, t.path, t.arch) for t in gate.targets] == [
        (H100[0], "pkg/_good.so", "80"),
        (H100[0], "pkg/libkernels.so", None),
        ("RTX 5090", "pkg/_good.so", "80"),
        ("RTX 5090", "pkg/libkernels.so", None),
    ]
    with pytest.raises(ToolMissing, match=r"pkg/libkernels\.so .* \(and 1 more GPU/object pairs\)"):
        require_jit(gate)


def test_a_gpu_of_unknown_compute_capability_is_said_not_refused() -> None:
    gate = decide([object_report(ptx=("120",))], [("Mystery GPU", None)])
    require_jit(gate)
    assert gate.lines() == (
        f"Mystery GPU (?): compute capability unknown; the PTX of {EXT} was not checked",
    )


def test_no_device_code_at_all_is_refused() -> None:
    with pytest.raises(ToolMissing, match=r"no shared object with CUDA device code.*'/site/pkg'"):
        require_jit(decide([object_report()], [H100], looked_in=["/site/pkg"]))


def test_the_objects_are_every_shared_object_under_the_packages(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(cuda_elf(sass=["90"]))
    (package / "sub" / "libkernels.so.1").write_bytes(cuda_elf(ptx=["80"]))  # loaded by ctypes
    (package / "sub" / "libkernels.so").symlink_to("libkernels.so.1")  # the same file once
    (package / "notes.so.txt").write_text("not ELF")
    origin = PackageOrigin(
        name="pkg",
        file=str(package / "__init__.py"),
        origin="installed",
        extensions=(Extension(module="_C", path=str(package / "_C.so"), loaded=True),),
    )
    objects, looked_in = package_objects(Provenance(packages=(origin,)))
    assert sorted((Path(o.path).name, o.sass, o.ptx) for o in objects) == [
        ("_C.cpython-311-x86_64-linux-gnu.so", ("90",), ()),
        ("libkernels.so", (), ("80",)),
    ]
    assert looked_in == (str(package),)
    assert package_objects(None) == ((), ())


# --- the run ------------------------------------------------------------------------------------


def test_workers_run_forced_only_when_asked() -> None:
    shell = {"CUDA_FORCE_PTX_JIT": "1", "HOME": "/h"}
    assert "CUDA_FORCE_PTX_JIT" not in worker_env("cuda", shell)  # a plain run is plain
    forced = worker_env("cuda", {"HOME": "/h"}, force_ptx=True)
    assert forced == {
        "HOME": "/h",
        "TRITON_INTERPRET": "0",
        "NUMBA_ENABLE_CUDASIM": "0",
        "CUDA_FORCE_PTX_JIT": "1",
    }
    setup = setup_for(
        modules=("m.py",),
        root=Path("/p"),
        pythonpath=(),
        device="cuda",
        environ={},
        force_ptx=True,
    )
    assert setup.env["CUDA_FORCE_PTX_JIT"] == "1"


def _ref(x: Any) -> Any:
    return x


OP = Op(
    name="copy",
    reference=_ref,
    inputs=(Tensor(name="x", dims=("n",)),),
    shapes=({"n": 4},),
    impls=tuple(Impl(kind=kind, fn=_ref) for kind in ("native", "triton", "numba", "cuda")),
)


def test_a_forced_run_runs_the_cuda_engine_and_skips_the_others_saying_why() -> None:
    the_plan = plan((OP,), CheckSettings(device="cuda", force_ptx=True))
    assert the_plan.force_ptx
    reasons = {g.engine: g.skip_reason for g in the_plan.groups}
    assert reasons["cuda"] is None
    for engine in ("native", "triton", "numba"):
        assert reasons[engine] == f"--force-ptx: {FORCED_SKIPS[engine]}"
    assert "cubins" in FORCED_SKIPS["triton"] and "changes nothing" in FORCED_SKIPS["numba"]
    plain = plan((OP,), CheckSettings(device="cuda"))
    assert not plain.force_ptx and all(g.skip_reason is None for g in plain.groups)


def test_a_forced_run_of_other_engines_only_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"--force-ptx runs the compiled extension"):
        plan((OP,), CheckSettings(device="cuda", force_ptx=True, engines=("triton",)))
    the_plan = plan((OP,), CheckSettings(device="cuda", force_ptx=True, engines=("cuda",)))
    assert [g.engine for g in the_plan.runnable] == ["cuda"]
    no_cuda = Op(
        name="triton_only",
        reference=_ref,
        inputs=OP.inputs,
        shapes=OP.shapes,
        impls=(Impl(kind="triton", fn=_ref),),
    )
    with pytest.raises(NothingToDo, match=r"no selected op has a cuda entry point") as err:
        plan((no_cuda,), CheckSettings(device="cuda", force_ptx=True))
    assert err.value.exit_code == 4


def test_force_ptx_is_a_gpu_run(tmp_path: Path) -> None:
    assert choose_device("auto", {}, force_ptx=True) == "cuda"
    assert choose_device("cpu", {}, force_ptx=True) == "cpu"
    request = CheckRequest(path=tmp_path, target=".", device="cpu", force_ptx=True)
    with pytest.raises(UsageError, match=r"--force-ptx .* this run is --device cpu") as err:
        run_check(request, environ={})
    assert err.value.exit_code == 2


# --- the report ---------------------------------------------------------------------------------

CASE = CaseResult(
    case=CaseSpec(index=2, sizes=(("n", 4),), distribution="normal", seed=7),
    status="failed",
    total=4,
    mismatches=4,
    max_abs=1.0,
    max_rel=1.0,
    worst_index=(0,),
    worst_actual=4.0,
    worst_expected=3.0,
)
JIT = (f"NVIDIA H100 80GB HBM3 (9.0) JIT-compiles compute_80 of {EXT}",)
FORCED = CheckReport(
    target="examples/cuvecops",
    device="cuda",
    seed=5,
    quick=True,
    started=0.0,
    finished=1.0,
    groups=(
        GroupResult(
            op="scale", engine="cuda", dtype="float32", rtol=1e-6, atol=1e-5, cases=(CASE,)
        ),
        GroupResult(
            op="scale",
            engine="triton",
            dtype="float32",
            rtol=1e-6,
            atol=1e-5,
            skip_reason=f"--force-ptx: {FORCED_SKIPS['triton']}",
        ),
    ),
    force_ptx=True,
    jit=JIT,
)


def test_the_report_says_the_run_was_forced() -> None:
    text = render_text(FORCED)
    assert "forced PTX JIT (CUDA_FORCE_PTX_JIT=1): the cuda engine ran the extension's PTX" in text
    assert f"  {JIT[0]}" in text
    assert (
        text.rstrip()
        .splitlines()[-1]
        .startswith("failed: 1 failed, 1 skipped; forced PTX JIT (CUDA_FORCE_PTX_JIT=1)")
    )
    document = json.loads(render_json(FORCED))
    assert (document["force_ptx"], document["jit"]) == (True, list(JIT))
    again = CheckReport.from_json(document)
    assert (again.force_ptx, again.jit) == (True, JIT)
    assert "--force-ptx" in repro_command(FORCED, FORCED.groups[0], CASE).split()


def test_junit_of_a_forced_run_is_apart_from_the_plain_one() -> None:
    root = ET.fromstring(render_junit(FORCED))
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "cuship check --force-ptx"
    assert {c.get("classname") for c in suite.iter("testcase")} == {"cuship.check.ptx.scale"}
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (props["force_ptx"], props["jit.0"]) == ("True", JIT[0])
    unforced = CheckReport.from_json({**FORCED.to_json(), "force_ptx": False, "jit": []})
    assert ET.fromstring(render_junit(unforced)).get("name") == "cuship check"


# --- gpu-run ------------------------------------------------------------------------------------

RESULTS = Path("/ci/results")
PROJECT = ProjectFacts(root=Path("/p"), name="cuvecops", check=True)


def _stage(wheel: WheelFacts | None = None, **options: Any) -> StagePlan:
    stages = plan_stages(PROJECT, "/venv/bin/python", RESULTS, environ={}, wheel=wheel, **options)
    return {s.name: s for s in stages}["check-ptx"]


def test_check_ptx_is_the_quick_check_forced_next_to_the_plain_one() -> None:
    stages = plan_stages(PROJECT, "/venv/bin/python", RESULTS, environ={})
    assert [s.name for s in stages].index("check-ptx") == [s.name for s in stages].index(
        "check"
    ) + 1
    stage = _stage(WheelFacts(sass=("80", "90"), ptx=("80", "120")))
    assert stage.argv == (
        "/venv/bin/python", "-m", "cuship", "check", "/p", "--installed",
        "--device", "cuda", "--quick", "--force-ptx",
        "--format", "json", "-o", str(RESULTS / "check-ptx.json"),
    )  # fmt: skip
    assert stage.skipped is None
    assert stage.log == RESULTS / "check-ptx.log"
    assert stage.outputs == (RESULTS / "check-ptx.json", RESULTS / "check-ptx.xml")
    assert _stage(None).skipped is None  # arches unknown: the stage finds out


def test_check_ptx_is_skipped_for_a_wheel_without_ptx_or_when_asked() -> None:
    assert _stage(skip_ptx=True).skipped == "--skip-ptx"
    assert _stage(WheelFacts()).skipped == "the wheel has no CUDA device code: no PTX to run"
    sass_only = _stage(WheelFacts(sass=("90",))).skipped
    assert sass_only is not None and sass_only.startswith("the wheel carries no PTX (SASS only)")


def test_check_ptx_exit_3_is_reported_with_its_reason(tmp_path: Path) -> None:
    log = tmp_path / "check-ptx.log"
    stage = StagePlan(
        name="check-ptx",
        argv=("python",),
        env={},
        cwd=tmp_path,
        log=log,
        extra={"json": tmp_path / "check-ptx.json", "junit": tmp_path / "check-ptx.xml"},
    )
    why = f"--force-ptx: {EXT} has no PTX that H100 (compute capability 9.0) can JIT"
    log.write_text(f"$ python -m cuship check\nchecking 3 of 9 groups\nerror: {why}\n  hint: add\n")
    assert _after(stage, 3, {}) == (3, (), why)
    escaped = why.replace("%", "%25")
    log.write_text(f"::error::{escaped} (100%25)%0A  hint: add +PTX\n")  # GitHub Actions
    assert _after(stage, 3, {}) == (3, (), f"{why} (100%)")
    assert _after(stage, 1, {}) == (1, (), None)
