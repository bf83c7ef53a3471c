"""`cuship check` and `cuship report` as CI runs them: real worker processes, exit codes, junit."""

from __future__ import annotations

import json
import shlex
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.integration import clirun
from tests.jsondocs import CHECK, schema_errors

cuship = partial(clirun.cuship, drop=("GITHUB_ACTIONS",))


def _project(tmp_path: Path, checks: str, config: str = "") -> Path:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    (root / "cuship.toml").write_text(
        f'[check]\nmodules = ["checks.py"]\nfuzz = 0\n{config}[check.quick]\nfuzz = 0\n'
    )
    (root / "checks.py").write_text(textwrap.dedent(checks))
    return root


_SCALE = """
    import numpy as np
    from cuship.check import Impl, Op, Scalar, Tensor

    ERROR = {error}

    def ref(a, x):
        return a * x

    def scale(a, x, out):
        out[...] = np.float32(a) * x + np.float32(ERROR)

    scale_op = Op(
        name="scale",
        reference=ref,
        inputs=(Scalar(name="a", values=(3.0,)), Tensor(name="x", dims=("n",))),
        outputs=(Tensor(name="out", dims=("n",)),),
        shapes=({{"n": 1}}, {{"n": 1000}}),
        impls=(Impl(kind="native", fn=scale),),
    )
"""


def _junit_counts(path: Path) -> tuple[ET.Element, ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "-1")) == len(cases)
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(attr, "-1")) == len(suite.findall(f"testcase/{tag}"))
    return root, suite


def test_quick_example_suite_passes_with_valid_junit(example_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.xml"
    done = cuship(
        "check", str(example_dir), "--quick", "--device", "cpu", "--format", "junit", "-o", str(out),
        env={"CUSHIP_STORE": str(tmp_path / "r.db")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    _root, suite = _junit_counts(out)
    names = {c.get("name"): c for c in suite.findall("testcase")}
    for ran in (
        "softmax[triton-interpret-float32]",
        "saxpy[numba-sim-float32]",
        "reduce_sum[native-float32]",
    ):
        assert names[ran].find("failure") is None and names[ran].find("skipped") is None
    skipped = names["softmax[cuda-float32]"].find("skipped")
    assert skipped is not None and "CUDA GPU" in skipped.get("message", "")
    assert not any("softmax_broken" in str(n) for n in names)
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    assert "passed:" in done.stderr


def test_thorough_saxpy_of_the_example_passes_on_every_cpu_engine(
    example_dir: Path, tmp_path: Path
) -> None:
    """The thorough run (what the GPU job runs) has large inputs whose terms cancel: float32
    saxpy rounds a*x and y, and the example's scale holds that round-off to the terms' size."""
    out = tmp_path / "r.json"
    done = cuship(
        "check", str(example_dir), "--op", "saxpy", "--device", "cpu", "--format", "json",
        "-o", str(out), env={"CUSHIP_STORE": str(tmp_path / "r.db")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    groups = {g["engine"]: g for g in json.loads(out.read_text())["groups"]}
    for engine in ("native", "triton-interpret", "numba-sim"):
        assert groups[engine]["status"] == "passed", groups[engine]
        assert any("large" in str(c) for c in groups[engine]["cases"]), groups[engine]["cases"][:2]


def test_broken_kernel_is_caught_and_the_printed_command_reproduces_it(
    example_dir: Path, tmp_path: Path
) -> None:
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    done = cuship(
        "check", str(example_dir), "--quick", "--device", "cpu", "--op", "softmax_broken",
        "--seed", "1234", "--format", "json", env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert schema_errors(CHECK, json.loads(done.stdout)) == []
    (group,) = json.loads(done.stdout)["groups"]
    assert group["status"] == "failed"
    bad = [c for c in group["cases"] if c["status"] == "failed"]
    assert bad, group
    line = next(x for x in done.stderr.splitlines() if x.startswith("reproduce: "))
    words = shlex.split(line.removeprefix("reproduce: "))
    # the environment that chose the code comes first: this run's PYTHONPATH (the checkout)
    assert words[0] == f"PYTHONPATH={clirun.SRC}"
    argv = words[1:]
    assert argv[:2] == ["cuship", "check"] and "--seed" in argv and "1234" in argv
    case_index = int(argv[argv.index("--case") + 1])
    first = next(c for c in group["cases"] if c["case"]["index"] == case_index)
    again = cuship(*argv[1:], "--format", "json", env=env)
    assert again.returncode == 1, again.stderr
    (regroup,) = json.loads(again.stdout)["groups"]
    (case,) = regroup["cases"]
    for key in ("case", "status", "mismatches", "worst_index", "worst_actual", "worst_expected"):
        assert case[key] == first[key], key


def test_saved_baseline_catches_a_worsened_kernel(tmp_path: Path) -> None:
    root = _project(tmp_path, _SCALE.format(error=0.0))
    baseline = tmp_path / "baseline.json"
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    saved = cuship("check", str(root), "--save-baseline", str(baseline), env=env)
    assert saved.returncode == 0, saved.stderr
    assert json.loads(baseline.read_text())["entries"]["scale/native/float32"]["status"] == "passed"
    (root / "checks.py").write_text(textwrap.dedent(_SCALE.format(error=2e-6)))
    gate = ["--baseline", str(baseline), "--fail-on-regression"]
    worse = cuship(
        "check", str(root), *gate, "--format", "junit", "-o", str(tmp_path / "r.xml"), env=env
    )
    assert worse.returncode == 1, worse.stderr
    assert "regression scale/native/float32: max abs error" in worse.stderr
    suites = ET.parse(tmp_path / "r.xml").getroot().findall("testsuite")
    assert [s.get("failures") for s in suites] == ["0", "1"]  # within tolerance, yet worse
    report_only = cuship("check", str(root), "--baseline", str(baseline), env=env)
    assert report_only.returncode == 0, report_only.stderr
    assert "regression scale/native/float32" in report_only.stdout
    quick = cuship("check", str(root), "--quick", *gate, env=env)
    assert quick.returncode == 2, quick.stderr
    assert "holds a thorough run with seed 0; this run is quick" in quick.stderr


def test_empty_runs_are_never_green(example_dir: Path, tmp_path: Path) -> None:
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    all_skipped = cuship("check", str(example_dir), "--device", "cpu", "--engine", "cuda", env=env)
    assert all_skipped.returncode == 4, all_skipped.stderr
    assert "empty:" in all_skipped.stderr
    none_selected = cuship(
        "check",
        str(example_dir),
        "--device",
        "cpu",
        "--op",
        "add",
        "--engine",
        "numba-sim",
        env=env,
    )
    assert none_selected.returncode == 4, none_selected.stderr
    no_ops = _project(tmp_path, "X = 1\n")
    assert cuship("check", str(no_ops), env=env).returncode == 4
    unknown = cuship("check", str(example_dir), "--device", "cpu", "--op", "nope", env=env)
    assert unknown.returncode == 2 and "'nope'" in unknown.stderr


def test_gpu_run_without_a_gpu_is_a_missing_tool_not_a_green_skip(example_dir: Path) -> None:
    done = cuship("check", str(example_dir), "--device", "cuda", env={"CUSHIP_GPUS": "none"})
    assert done.returncode == 3, done.stderr
    assert "no CUDA GPU" in done.stderr


_HOSTILE = """
    import ctypes, time
    import numpy as np
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return x

    def _op(name, fn):
        return Op(name=name, reference=ref, inputs=(Tensor(name="x", dims=("n",)),),
                  outputs=(Tensor(name="out", dims=("n",)),), shapes=({"n": 5}, {"n": 6}),
                  impls=(Impl(kind="native", fn=fn),))

    def copy(x, out):
        out[...] = x

    def segfault(x, out):
        ctypes.string_at(0)

    def hang(x, out):
        time.sleep(600)

    def missing_import(x, out):
        import cuship_no_such_kernel_module

    OPS = [_op("copy", copy), _op("segfault", segfault), _op("hang", hang),
           _op("missing_import", missing_import)]
"""


def test_crash_hang_and_import_error_fail_their_cases_and_the_run_goes_on(tmp_path: Path) -> None:
    root = _project(tmp_path, _HOSTILE, "timeout = 3\n")
    done = cuship("check", str(root), "--format", "json", "--no-store", "--parallel", "2")
    assert done.returncode == 1, done.stderr
    groups = {g["op"]: g for g in json.loads(done.stdout)["groups"]}
    assert groups["copy"]["status"] == "passed"
    messages = {op: [c["message"] for c in g["cases"]] for op, g in groups.items()}
    assert all("killed by SIGSEGV" in m for m in messages["segfault"])
    assert all("timed out after 3 s" in m for m in messages["hang"])
    assert all("ModuleNotFoundError" in m for m in messages["missing_import"])
    assert {g["status"] for op, g in groups.items() if op != "copy"} == {"error"}


def test_github_actions_gets_error_annotations(example_dir: Path, tmp_path: Path) -> None:
    done = cuship(
        "check", str(example_dir), "--quick", "--device", "cpu", "--op", "softmax_broken",
        "--case", "2", env={"GITHUB_ACTIONS": "true", "CUSHIP_STORE": str(tmp_path / "r.db")},
    )  # fmt: skip
    assert done.returncode == 1
    annotation = next(x for x in done.stderr.splitlines() if x.startswith("::error::"))
    assert "softmax_broken/triton-interpret/float32" in annotation
    assert f"%0Areproduce: PYTHONPATH={clirun.SRC} cuship check" in annotation


def _groups(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = json.loads(done.stdout)["groups"]
    for group in groups:
        group.pop("wall_s")
        for case in group["cases"]:
            case.pop("wall_s")
            case.pop("kernel_s")
    return groups


def test_parallel_workers_give_the_same_results(tmp_path: Path) -> None:
    body = textwrap.dedent(_SCALE.format(error=0.0))
    # 84 cases: enough work that a second worker pays for its start
    body += "\nMORE = [replace(scale_op, name=f'scale{i}') for i in range(20)]\n"
    root = _project(tmp_path, "from dataclasses import replace\n" + body)
    one = cuship("check", str(root), "--format", "json", "--no-store", "--parallel", "1")
    two = cuship("check", str(root), "--format", "json", "--no-store", "--parallel", "2")
    every = cuship("check", str(root), "--format", "json", "--no-store", "--parallel", "0")
    assert one.returncode == two.returncode == every.returncode == 0
    assert _groups(one) == _groups(two) == _groups(every)
    assert len(_groups(one)) == 21
    assert "does not pay for starting more" not in two.stderr


def _write_runs(path: str, worker: int) -> None:
    from cuship.store import ResultRow, RunRecord, Store

    for i in range(15):
        with Store.open(Path(path)) as store:
            store.record(
                RunRecord(
                    kind="bench" if i % 2 else "check", started=float(i), finished=float(i),
                    fingerprint={"worker": worker}, cuship_version="0", project=f"p{worker}",
                    verdict="passed",
                ),
                [ResultRow(key=f"k{j}", status="passed", payload={"j": j}) for j in range(5)],
            )  # fmt: skip


def test_store_takes_parallel_writers_and_report_reads_it(tmp_path: Path) -> None:
    import multiprocessing

    db = tmp_path / ".cuship" / "results.db"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_runs, args=(str(db), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    listed = cuship("report", "--store", str(db), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert len(runs) == 60 and all(len(r["results"]) == 5 for r in runs)
    checks = cuship("report", str(tmp_path), "--kind", "check", "--format", "json")
    assert len(json.loads(checks.stdout)) == 32


def test_report_renders_stored_check_runs(tmp_path: Path) -> None:
    root = _project(tmp_path, _SCALE.format(error=1.0))  # fails
    assert cuship("check", str(root)).returncode == 1
    assert (root / ".cuship" / "results.db").is_file()
    text = cuship("report", str(root))
    assert text.returncode == 0 and "failed" in text.stdout
    out = tmp_path / "history.xml"
    junit = cuship("report", str(root), "--since-hours", "1", "--format", "junit", "-o", str(out))
    assert junit.returncode == 0, junit.stderr
    (suite,) = ET.parse(out).getroot().findall("testsuite")
    assert suite.get("failures") == "1"
    assert cuship("report", str(tmp_path / "nowhere")).returncode == 4


@pytest.mark.parametrize("flag", ["--seed", "--parallel"])
def test_bad_flags_are_usage_errors(flag: str, tmp_path: Path) -> None:
    root = _project(tmp_path, _SCALE.format(error=0.0))
    assert cuship("check", str(root), flag, "x").returncode == 2


def test_a_single_check_module_can_be_checked_directly(tmp_path: Path) -> None:
    module = tmp_path / "only_checks.py"
    module.write_text(textwrap.dedent(_SCALE.format(error=0.0)))
    done = cuship("check", str(module), "--quick", "--format", "json", "--no-store")
    assert done.returncode == 0, done.stderr
    (group,) = json.loads(done.stdout)["groups"]
    assert (group["op"], group["engine"], group["status"]) == ("scale", "native", "passed")


def test_auto_device_with_only_cpu_engines_named_is_a_cpu_run(tmp_path: Path) -> None:
    """On a GPU machine (faked), naming only interpreter/simulator engines means --device cpu."""
    root = _project(tmp_path, _SCALE.format(error=0.0))
    env = {"CUSHIP_GPUS": "H100:9.0:80GiB", "CUSHIP_STORE": str(tmp_path / "r.db")}
    done = cuship("check", str(root), "--engine", "native", "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["device"] == "cpu"


_SRC_CHECKS = """
    from cuship.check import Impl, Op, Tensor

    def ref(x):
        return x + 1

    def plus_one(x, out):
        from srcpkg.ops import plus_one

        plus_one(x, out)

    OP = Op(
        name="plus_one",
        reference=ref,
        inputs=(Tensor(name="x", dims=("n",)),),
        outputs=(Tensor(name="out", dims=("n",)),),
        shapes=({"n": 5},),
        impls=(Impl(kind="native", fn=plus_one),),
    )
"""


def test_a_check_module_of_a_src_layout_checks_as_its_project_does(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src" / "srcpkg").mkdir(parents=True)
    (root / "checks").mkdir()
    (root / "src" / "srcpkg" / "__init__.py").write_text("")
    (root / "src" / "srcpkg" / "ops.py").write_text("def plus_one(x, out):\n    out[...] = x + 1\n")
    (root / "checks" / "ops.py").write_text(textwrap.dedent(_SRC_CHECKS))
    (root / "cuship.toml").write_text('[check]\nmodules = ["checks/ops.py"]\n')
    env = {"CUSHIP_STORE": str(tmp_path / "r.db")}
    whole = cuship("check", str(root), "--quick", "--device", "cpu", env=env)
    assert whole.returncode == 0, whole.stderr
    for target, cwd in ((root / "checks" / "ops.py", tmp_path), (Path("checks/ops.py"), root)):
        one = cuship("check", str(target), "--quick", "--device", "cpu", env=env, cwd=cwd)
        assert one.returncode == 0, one.stderr + one.stdout
        assert "plus_one" in one.stdout and "passed" in one.stdout
