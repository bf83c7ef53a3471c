"""The nvcc in front of a build: every spelling of nvcc's arch flags is found and replaced by the
configured ones (or refused), calls that compile no device code pass untouched; what setup.py
hard-codes is read from its text; [build] env is validated and filled per job."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from cuship.builder import archflags
from cuship.builder.model import user_env
from cuship.builder.run import nvcc_shim
from cuship.builder.run.finish import set_aside
from cuship.builder.run.smoke import builder_torch
from cuship.config import load_config
from cuship.config.script import read_build_script
from cuship.errors import ConfigError
from cuship.matrix import jobs_with_configs

SM90 = ("-gencode=arch=compute_90,code=sm_90",)


@pytest.mark.parametrize(
    ("argv", "asked"),
    [
        (["-gencode", "arch=compute_75,code=sm_75", "-c", "k.cu"], ["sm_75"]),
        (["-gencode=arch=compute_80,code=[sm_80,compute_80]", "k.cu"], ["sm_80", "compute_80"]),
        (["--generate-code", "arch=compute_90a,code=sm_90a", "k.cu"], ["sm_90a"]),
        (
            ['--generate-code=arch=compute_86,code="sm_86,compute_86"', "k.cu"],
            ["sm_86", "compute_86"],
        ),
        (["-arch=sm_120", "k.cu"], ["sm_120", "compute_120"]),
        (["-arch", "compute_75", "k.cu"], ["compute_75"]),
        (["--gpu-architecture=compute_80", "--gpu-code=sm_80,sm_86", "k.cu"], ["sm_80", "sm_86"]),
        (["-arch=native", "k.cu"], ["native"]),
    ],
)
def test_every_spelling_of_an_arch_flag_is_found_and_replaced(
    argv: list[str], asked: list[str]
) -> None:
    new, record = nvcc_shim.plan_call(argv, SM90, "rewrite")
    assert record["asked"] == asked
    assert new == [*SM90, *(a for a in argv if a.endswith(".cu") or a == "-c")]
    assert record["compiled"] == ["sm_90"] and record["action"] == "rewrote"


def test_calls_without_device_code_pass_untouched_and_device_compiles_get_the_archs() -> None:
    for argv in (["--version"], ["-V"], ["-x", "c++", "-c", "host.cpp"]):
        new, record = nvcc_shim.plan_call(argv, SM90, "rewrite")
        assert new == argv and record["action"] == "passthrough"
    new, record = nvcc_shim.plan_call(["-c", "k.cu", "-o", "k.o"], SM90, "rewrite")
    assert new == [*SM90, "-c", "k.cu", "-o", "k.o"] and record["action"] == "added"
    new, record = nvcc_shim.plan_call(
        ["-gencode", "arch=compute_90,code=sm_90", "k.cu"], SM90, "stop"
    )
    assert record["action"] == "kept" and new == [*SM90, "k.cu"]


def test_stop_refuses_a_compile_whose_flags_differ() -> None:
    argv = ["-gencode", "arch=compute_75,code=sm_75", "-O3", "k.cu"]
    new, record = nvcc_shim.plan_call(argv, SM90, "stop")
    assert new is None and record["action"] == "refused"
    assert record["flags"] == ["-gencode arch=compute_75,code=sm_75"]


def test_the_log_says_what_was_asked_and_compiled(tmp_path: Path) -> None:
    assert archflags.read_calls(tmp_path) is None
    log = archflags.log_path(tmp_path)
    records = [
        {"action": "passthrough", "asked": [], "compiled": []},
        {"action": "rewrote", "asked": ["sm_80", "sm_75"], "compiled": ["sm_90"]},
        {"action": "added", "asked": [], "compiled": ["sm_90"]},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records) + "{not json\n")
    calls = archflags.read_calls(tmp_path)
    assert calls is not None
    assert (calls.calls, calls.device, calls.rewritten) == (3, 2, 1)
    assert calls.asked == ("sm_75", "sm_80") and calls.compiled == ("sm_90",)
    assert archflags.describe(calls) == (
        "2 device compile(s) for sm_90; 1 had the project's own flags (sm_75, sm_80) replaced"
    )


def test_setup_py_is_read_for_switches_flags_name_and_version(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(
        '"""Docs that mention -gencode are not flags."""\n'
        'PACKAGE_NAME = "causal_conv1d"\n'
        'FORCE_BUILD = os.getenv("CAUSAL_CONV1D_FORCE_BUILD", "FALSE") == "TRUE"\n'
        'cc_flag.append("-gencode")\ncc_flag.append("arch=compute_90,code=sm_90")\n'
        "setup(name=PACKAGE_NAME)\n"
    )
    (tmp_path / "causal_conv1d").mkdir()
    (tmp_path / "causal_conv1d" / "__init__.py").write_text('__version__ = "1.7.0"\n')
    script = read_build_script(tmp_path)
    assert script.file == "setup.py" and script.name == "causal-conv1d"
    assert script.version == "1.7.0"
    assert script.force_switches == ("CAUSAL_CONV1D_FORCE_BUILD",)
    assert script.arch_flags == (
        'cc_flag.append("-gencode")',
        'cc_flag.append("arch=compute_90,code=sm_90")',
    )
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='plain-pkg')\n")
    plain = read_build_script(tmp_path)
    assert plain.name == "plain-pkg" and plain.version is None and plain.arch_flags == ()


def _project(tmp_path: Path, build: str) -> Path:
    (tmp_path / "setup.py").write_text(
        'setup(name="demo", version="1.0")\nX = "DEMO_FORCE_BUILD"\n'
    )
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n'
        '[matrix]\npython = ["3.11"]\ncuda = ["13.0"]\narch = "9.0"\n'
        f"[build]\n{build}\n"
    )
    return tmp_path


def test_build_env_fills_the_jobs_fields_after_the_force_switches(tmp_path: Path) -> None:
    config = load_config(
        _project(tmp_path, 'env = { DEMO_ARCHS = "{arch}", TAG = "py{python}-cu{cuda_major}" }')
    )
    from cuship.compat import load

    (_, job), *_ = jobs_with_configs(config, load())
    assert user_env(job, config) == {
        "DEMO_FORCE_BUILD": "TRUE",
        "DEMO_ARCHS": "9.0",
        "TAG": "py3.11-cu13",
    }
    off = load_config(_project(tmp_path, 'env = { DEMO_FORCE_BUILD = "FALSE" }'))
    assert user_env(job, off) == {"DEMO_FORCE_BUILD": "FALSE"}, "the config has the last word"


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('{ "1BAD" = "x" }', "is not an environment variable name"),
        ('{ TORCH_CUDA_ARCH_LIST = "8.0" }', "set by cuship from the config"),
        ('{ CUSHIP_X = "1" }', "set by cuship from the config"),
        ('{ A = "{gpu}" }', "gpu"),
    ],
)
def test_bad_build_env_names_the_key_and_the_fix(tmp_path: Path, table: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as caught:
        load_config(_project(tmp_path, f"env = {table}"))
    assert "build.env" in str(caught.value)


def test_a_failed_wheel_is_moved_out_of_the_folder_the_index_reads(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(b"zip")
    kept = set_aside(wheel)
    assert kept == tmp_path / "failed" / wheel.name and kept.read_bytes() == b"zip"
    assert not wheel.exists()


def test_the_builders_torch_is_read_from_its_dist_info(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch-2.13.0+cu130.dist-info").mkdir(parents=True)
    assert builder_torch(("/nonexistent/python", str(site))) is None, "no METADATA: not installed"
    (site / "torch-2.13.0+cu130.dist-info" / "METADATA").write_text("Name: torch\n")
    assert builder_torch(("/nonexistent/python", str(site))) == "2.13.0+cu130"


def test_a_job_without_arches_or_with_project_flags_gets_no_shim(tmp_path: Path) -> None:
    config = load_config(_project(tmp_path, 'arch_flags = "project"'))
    from cuship.builder.model import Host
    from cuship.builder.plan import plan_job
    from cuship.compat import load

    (_, job), *_ = jobs_with_configs(config, load())
    host = Host(
        python="3.11",
        python_exe=sys.executable,
        nvcc="/usr/local/cuda/bin/nvcc",
        cuda="13.0.88",
        cpus=2,
        memory_available_gib=8.0,
    )
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path / "out")
    assert not any(s.name == "arch-flags" for s in plan.steps)
    assert plan.arch_control is not None and "arch_flags = 'project'" in plan.arch_control
    shimmed = dataclasses.replace(
        config, build=dataclasses.replace(config.build, arch_flags="rewrite")
    )
    plan = plan_job(job, shimmed, host, mode="local", out_dir=tmp_path / "out")
    (step,) = (s for s in plan.steps if s.name == "arch-flags")
    assert step.argv[step.argv.index("--gencode") + 1] == "-gencode=arch=compute_90,code=sm_90"
    (build,) = (s for s in plan.steps if s.name == "build-wheel")
    assert build.env["CUDA_HOME"] == str(plan.raw_dir / "cuda-home")
    assert build.env["DEMO_FORCE_BUILD"] == "TRUE"
