"""What a rebuild reuses (the CMake build directory, a repair) and the keys that invalidate it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cuship.builder.host.interpreters import Interpreter, Interpreters
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_job
from cuship.builder.reuse import KEY_FILE, changed, key_parts, open_build_dir, seal
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.matrix import BuildJob, jobs_with_configs
from cuship.wheel.write.repair import _keep, _kept, plan_repair, repair_key

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
HOST = Host(
    python="3.11",
    python_exe="/usr/bin/python3",
    nvcc="/usr/local/cuda/bin/nvcc",
    cuda="13.0.88",
    cpus=8,
    memory_available_gib=30.0,
    engine="docker",
)


def _project(tmp_path: Path) -> tuple[Config, BuildJob]:
    source = tmp_path / "cuvecops"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "dist", "tests"))
    return next(
        (c, j)
        for c, j in jobs_with_configs(load_config(source), load())
        if j.python == "3.11" and j.cuda.major == 13
    )


def _wheel_argv(plan: BuildPlan) -> tuple[str, ...]:
    return next(s.argv for s in plan.steps if s.name == "build-wheel")


def test_a_local_job_keeps_its_cmake_build_directory_under_the_output(tmp_path: Path) -> None:
    config, job = _project(tmp_path)
    plan = plan_job(job, config, HOST, mode="local", out_dir=tmp_path / "out")
    assert plan.build_dir is not None
    assert plan.build_dir.path == tmp_path / "out" / "build" / job.id
    argv = _wheel_argv(plan)
    assert f"--config-settings=build-dir={plan.build_dir.path}" in argv
    assert argv[-1] == str(config.source_dir)
    assert plan.repairs == tmp_path / "out" / "repairs" / job.id


@pytest.mark.parametrize(
    "change",
    [
        {"incremental": False},  # asked not to
        {"isolation": True},  # pip's environment is new each build
        {"build_args": ("-Cbuild-dir=elsewhere",)},  # the user's own
    ],
)
def test_no_build_directory_is_kept_where_it_cannot_be_keyed(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    config, job = _project(tmp_path)
    config = dataclasses.replace(config, build=dataclasses.replace(config.build, **change))
    plan = plan_job(job, config, HOST, mode="local", out_dir=tmp_path / "out")
    assert plan.build_dir is None
    assert not any("build-dir=" in a and "elsewhere" not in a for a in _wheel_argv(plan))


def test_a_container_build_or_a_fixed_build_dir_keeps_none(tmp_path: Path) -> None:
    config, job = _project(tmp_path)
    container = plan_job(job, config, HOST, mode="container", out_dir=tmp_path)
    fixed = dataclasses.replace(config, build_dir="build/{wheel_tag}")
    assert container.build_dir is None
    assert plan_job(job, fixed, HOST, mode="local", out_dir=tmp_path).build_dir is None


def _tools(tmp_path: Path) -> dict[str, str]:
    """A PATH with a cc, c++, cmake and ninja of our own (files; nothing runs them)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("cc", "c++", "cmake", "ninja"):
        (bin_dir / name).write_text(f"{name} 1\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": str(bin_dir)}


def _keyed(tmp_path: Path) -> tuple[Config, BuildJob, BuildPlan, dict[str, str]]:
    """A plan whose build finds the tools of :func:`_tools` first (beside its interpreter)."""
    config, job = _project(tmp_path)
    environ = _tools(tmp_path)
    host = dataclasses.replace(HOST, python_exe=str(tmp_path / "bin" / "python3"))
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path / "out")
    assert plan.build_dir is not None
    site = tmp_path / "site"
    (site / "scikit_build_core-1.1.2.dist-info").mkdir(parents=True)
    build_dir = dataclasses.replace(plan.build_dir, sites=(str(site),))
    return config, job, dataclasses.replace(plan, build_dir=build_dir), environ


def test_the_key_is_the_same_for_the_same_inputs_and_ignores_parallelism(tmp_path: Path) -> None:
    config, job, plan, environ = _keyed(tmp_path)
    host = dataclasses.replace(HOST, python_exe=str(tmp_path / "bin" / "python3"))
    again = plan_job(job, config, host, mode="local", out_dir=tmp_path / "out")
    again = dataclasses.replace(again, build_dir=plan.build_dir)
    assert changed(key_parts(plan, environ), key_parts(again, environ)) == ()
    wider = dataclasses.replace(host, cpus=2)
    fewer = dataclasses.replace(
        plan_job(job, config, wider, mode="local", out_dir=tmp_path / "out"),
        build_dir=plan.build_dir,
    )
    assert changed(key_parts(plan, environ), key_parts(fewer, environ)) == ()


def test_a_changed_flag_changes_the_steps_part(tmp_path: Path) -> None:
    config, job, plan, environ = _keyed(tmp_path)
    flagged = dataclasses.replace(
        config, build=dataclasses.replace(config.build, env={"CUVECOPS_FAST_MATH": "1"})
    )
    host = dataclasses.replace(HOST, python_exe=str(tmp_path / "bin" / "python3"))
    other = plan_job(job, flagged, host, mode="local", out_dir=tmp_path / "out")
    other = dataclasses.replace(other, build_dir=plan.build_dir)
    assert changed(key_parts(plan, environ), key_parts(other, environ)) == ("steps",)


def test_another_compiler_python_or_torch_changes_its_part(tmp_path: Path) -> None:
    config, job, plan, environ = _keyed(tmp_path)
    before = key_parts(plan, environ)
    torch = dataclasses.replace(plan, torch="2.13.0")
    assert changed(before, key_parts(torch, environ)) == ("torch",)
    newer = dataclasses.replace(HOST, cuda="13.0.99", python_exe=str(tmp_path / "bin" / "python3"))
    toolkit = plan_job(job, config, newer, mode="local", out_dir=tmp_path / "out")
    assert toolkit.build_dir is not None and plan.build_dir is not None
    sites = dataclasses.replace(toolkit.build_dir, sites=plan.build_dir.sites)
    toolkit = dataclasses.replace(toolkit, build_dir=sites)
    assert "toolkit" in changed(before, key_parts(toolkit, environ))
    (tmp_path / "bin" / "c++").write_text("c++ 2, another version\n")
    assert changed(before, key_parts(plan, environ)) == ("compilers",)
    elsewhere = tmp_path / "gcc-14"
    elsewhere.write_text("gcc 14\n")
    assert changed(before, key_parts(plan, {**environ, "CC": str(elsewhere)})) == ("compilers",)


def test_an_edited_build_file_or_package_version_changes_its_part(tmp_path: Path) -> None:
    config, _job, plan, environ = _keyed(tmp_path)
    before = key_parts(plan, environ)
    pyproject = config.source_dir / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# cmake.define.X = 1\n")
    assert changed(before, key_parts(plan, environ)) == ("files",)
    pyproject.write_text(pyproject.read_text().removesuffix("\n# cmake.define.X = 1\n"))
    assert changed(before, key_parts(plan, environ)) == ()
    site = tmp_path / "site"
    (site / "scikit_build_core-1.1.2.dist-info").rename(site / "scikit_build_core-1.2.0.dist-info")
    assert changed(before, key_parts(plan, environ)) == ("packages",)


def test_a_source_file_is_not_part_of_the_key(tmp_path: Path) -> None:
    config, _job, plan, environ = _keyed(tmp_path)
    before = key_parts(plan, environ)
    (config.source_dir / "csrc" / "ops.cu").write_text("// edited\n")
    assert changed(before, key_parts(plan, environ)) == ()  # CMake and ninja see it


def test_a_build_directory_is_kept_only_under_the_key_it_was_sealed_with(tmp_path: Path) -> None:
    path = tmp_path / "build" / "job"
    parts = {"steps": "a", "compilers": "b"}
    assert open_build_dir(path, parts) == (
        False,
        f"build dir {path}: new (no earlier build with a key)",
    )
    (path / "CMakeCache.txt").write_text("configured\n")
    seal(path, parts)
    assert json.loads((path / KEY_FILE).read_text()) == parts
    kept, said = open_build_dir(path, parts)
    assert kept and "reused" in said
    assert (path / "CMakeCache.txt").is_file()
    assert not (path / KEY_FILE).exists()  # until this build succeeds
    kept, said = open_build_dir(path, parts)  # the last build failed: nothing vouches for it
    assert not kept and "new" in said and not (path / "CMakeCache.txt").exists()
    (path / "CMakeCache.txt").write_text("configured\n")
    seal(path, parts)
    kept, said = open_build_dir(path, {**parts, "compilers": "c"})
    assert not kept
    assert said.endswith("the key changed (compilers)")
    assert list(path.iterdir()) == []


def test_changed_names_parts_that_differ_appear_or_go() -> None:
    assert changed(None, {"a": "1", "b": "2"}) == ("a", "b")
    assert changed({"a": "1"}, {"a": "1"}) == ()
    assert changed({"a": "1", "old": "x"}, {"a": "2", "new": "y"}) == ("a", "old", "new")


def test_the_repair_key_names_the_raw_wheel_and_the_settings_not_the_paths(
    tmp_path: Path,
) -> None:
    wheel = tmp_path / "raw" / "w-1.0-cp311-cp311-linux_x86_64.whl"
    plan = plan_repair(wheel, tmp_path / "out")
    env = {"PATH": ""}
    key = repair_key("0" * 64, plan, env)
    moved = plan_repair(tmp_path / "b" / wheel.name, tmp_path / "elsewhere")
    assert repair_key("0" * 64, moved, env) == key
    assert repair_key("1" * 64, plan, env) != key
    assert (
        repair_key("0" * 64, plan_repair(wheel, tmp_path, plat="manylinux_2_28_x86_64"), env) != key
    )
    assert repair_key("0" * 64, plan_repair(wheel, tmp_path, extra_excludes=("x.so",)), env) != key
    assert repair_key("0" * 64, plan, {**env, "LD_LIBRARY_PATH": "/opt/lib"}) != key
    assert repair_key("0" * 64, plan, {**env, "SOURCE_DATE_EPOCH": "315532800"}) != key


def test_a_kept_repair_is_reused_only_with_its_key_and_its_bytes(tmp_path: Path) -> None:
    cache = tmp_path / "repairs"
    made = tmp_path / "made" / "w-1.0-cp311-cp311-manylinux_2_24_x86_64.whl"
    made.parent.mkdir()
    made.write_bytes(b"a repaired wheel")
    _keep(cache, "k" * 64, made)
    got = _kept(cache, "k" * 64, tmp_path / "work")
    assert got == tmp_path / "work" / made.name and got.read_bytes() == b"a repaired wheel"
    assert _kept(cache, "j" * 64, tmp_path / "other") is None
    (cache / ("k" * 32) / made.name).write_bytes(b"changed since")
    assert _kept(cache, "k" * 64, tmp_path / "third") is None
    _keep(cache, "n" * 64, made)  # a job keeps its last repair only
    assert [p.name for p in cache.iterdir()] == ["n" * 32]


PYENV_312 = Interpreter(
    version="3.12", full="3.12.1", executable="/p/versions/3.12.1/bin/python3.12", source="pyenv"
)
RUNNING = Interpreter(
    version="3.11", full="3.11.7", executable="/usr/bin/python3", source="running"
)


def test_a_build_venv_gets_its_requirements_once_per_set(tmp_path: Path) -> None:
    found = Interpreters(found={"3.11": RUNNING, "3.12": PYENV_312}, looked=())
    host = dataclasses.replace(HOST, interpreters=found)
    config, job = next(
        (c, j)
        for c, j in jobs_with_configs(load_config(EXAMPLE), load())
        if j.python == "3.12" and j.cuda.major == 13
    )
    plan = plan_job(job, config, host, mode="local", out_dir=tmp_path)
    deps = next(s for s in plan.steps if s.name == "build-env-deps")
    assert plan.build_env is not None and deps.stamp and deps.creates is not None
    marker = Path(deps.creates)
    assert marker.parent == plan.build_env and marker.name.startswith(".cuship-deps-")
    assert deps.shell().endswith(f"&& touch {marker}; }}")
    more = dataclasses.replace(config, build_requires=(*config.build_requires, "numpy"))
    other = plan_job(job, more, host, mode="local", out_dir=tmp_path)
    assert next(s for s in other.steps if s.name == "build-env-deps").creates != deps.creates
    assert plan.build_dir is not None
    assert plan.build_dir.sites == (str(plan.build_env / "lib" / "python3.12" / "site-packages"),)
