"""The torch axis only where it means something: keys, torch-free jobs, the drop decision, the
record, a matrix collapsed from the record, and a build that collapses after its first wheel
(the build commands replaced by a fake that writes a real wheel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from cuship.builder.collapse import Policy, Served, build_order, served_by, start
from cuship.builder.model import BuildPlan, Host
from cuship.builder.plan import plan_job
from cuship.builder.record import RECORD, load_record, read_record, write_record
from cuship.builder.run import batch
from cuship.builder.run.execute import JobResult
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.errors import InputError, UsageError
from cuship.events import Event
from cuship.matrix import AbiRecord, expand, torch_free_key, without_torch
from cuship.wheel.audit import inspect_wheel
from tests.elf_factory import make_elf
from tests.wheel_factory import make_wheel

TWO_TORCH = 'python = ["3.11", "3.12"]\ncuda = ["13.0.2"]\ntorch = ["2.10", "2.9"]\narch = "9.0"'
ABI_AXIS = 'python = ["3.11"]\ncuda = ["12.6.3"]\ntorch = ["2.6", "2.7"]\ncxx11abi = [false, true]\narch = "8.0"'
ONE_PYTHON = TWO_TORCH.replace('"3.11", "3.12"', '"3.11"')
HOST = Host(
    python="3.11",
    python_exe="/usr/bin/python3",
    nvcc="/usr/local/cuda/bin/nvcc",
    cuda="13.0.88",
    cpus=2,
    memory_available_gib=8.0,
)


def config_of(tmp_path: Path, matrix: str, extra: str = "") -> Config:
    (tmp_path / "cuship.toml").write_text(
        f'[project]\nname = "demo"\nversion = "1.0"\n[matrix]\n{matrix}\n{extra}',
        encoding="utf-8",
    )
    return load_config(tmp_path)


def record(abi: str = "none", version: str = "1.0") -> AbiRecord:
    return AbiRecord(
        project="demo",
        version=version,
        torch_abi=abi,  # type: ignore[arg-type]
        wheel="demo-1.0+cu130-cp311-cp311-linux_x86_64.whl",
        job="demo-1.0-cp311-cu130-torch2.9",
    )


def test_key_and_torch_free_job_drop_torch_and_the_cxx11_abi(tmp_path: Path) -> None:
    jobs = expand(config_of(tmp_path, ABI_AXIS), load()).jobs
    assert [j.id for j in jobs] == [
        "demo-1.0-cp311-cu126-torch2.6-cxx11abiFALSE",
        "demo-1.0-cp311-cu126-torch2.6-cxx11abiTRUE",
        "demo-1.0-cp311-cu126-torch2.7-cxx11abiTRUE",
    ]
    assert len({torch_free_key(j) for j in jobs}) == 1
    free = without_torch(jobs[1])
    assert (free.id, free.label, str(free.wheel_version)) == (
        "demo-1.0-cp311-cu126",
        "cu126",
        "1.0+cu126",
    )
    assert (free.torch, free.cxx11abi) == (Version("2.6"), True), (
        "it still builds against its torch"
    )


def test_torch_free_id_keeps_the_arch_and_platform_parts(tmp_path: Path) -> None:
    matrix = 'python = ["3.11"]\ncuda = ["13.0.2"]\ntorch = ["2.9"]\narch = ["8.0", "9.0"]'
    jobs = expand(config_of(tmp_path, matrix), load()).jobs
    assert [without_torch(j).id for j in jobs] == [
        "demo-1.0-cp311-cu130-sm80",
        "demo-1.0-cp311-cu130-sm90",
    ]
    assert {torch_free_key(j) for j in jobs} == {
        ("demo", "1.0", "3.11", "13.0.2", "8.0", "linux_x86_64"),
        ("demo", "1.0", "3.11", "13.0.2", "9.0", "linux_x86_64"),
    }


def test_a_custom_template_keeps_its_own_spelling_or_refuses(tmp_path: Path) -> None:
    (job,) = expand(
        config_of(tmp_path, 'python = ["3.11"]\ncuda = ["13.0"]\ntorch = ["2.9"]'), load()
    ).jobs
    assert without_torch(job, "cuda{cuda_mm}").label == "cuda13.0"
    with pytest.raises(UsageError, match=r"names \{torch_short\}") as info:
        without_torch(job, "cu{cuda_short}pt{torch_short}")
    assert 'torch_axis = "always"' in (info.value.hint or "")


def test_drop_decision_and_build_order(tmp_path: Path) -> None:
    config = config_of(tmp_path, TWO_TORCH)
    plans = [
        plan_job(j, config, HOST, mode="local", out_dir=tmp_path)
        for j in expand(config, load()).jobs
    ]
    assert [str(p.job.torch) for p in build_order(plans)] == ["2.9", "2.9", "2.10", "2.10"]
    first = build_order(plans)[0].job
    served = {torch_free_key(first): Served(wheel="w.whl", job=first.id, torch_abi="none")}
    dropped = [p.job.id for p in plans if served_by(p.job, served) is not None]
    assert dropped == ["demo-1.0-cp311-cu130-torch2.10", "demo-1.0-cp311-cu130-torch2.9"]
    assert (
        served[torch_free_key(first)].detail
        == "served by w.whl: it links no torch (torch_abi none)"
    )


def test_record_round_trip_and_project_version_matching(tmp_path: Path) -> None:
    config = config_of(tmp_path, TWO_TORCH)
    assert read_record(tmp_path) is None
    path = write_record(tmp_path, record("stable"))
    assert path == tmp_path / RECORD
    assert json.loads(path.read_text())["torch_abi"] == "stable"
    assert read_record(tmp_path) == load_record(config) == record("stable")
    write_record(tmp_path, record("none", version="0.9"))
    assert read_record(tmp_path) == record("none", version="0.9")
    assert load_record(config) is None, "a record of another version does not count"
    assert not [p for p in path.parent.iterdir() if p.name != path.name], "no temporary left"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "cannot read"),
        ('{"project": "demo"}', "string fields"),
        (
            '{"project": "demo", "version": "1.0", "torch_abi": "some", "wheel": "w", "job": "j"}',
            "'some'",
        ),
    ],
)
def test_a_bad_record_is_an_input_error_saying_to_delete_it(
    tmp_path: Path, text: str, problem: str
) -> None:
    (tmp_path / RECORD).parent.mkdir()
    (tmp_path / RECORD).write_text(text)
    with pytest.raises(InputError, match=problem) as info:
        read_record(tmp_path)
    assert info.value.hint == "delete it; the next build writes it again"


def test_expand_with_a_recorded_torch_free_abi_builds_one_job_per_combination(
    tmp_path: Path,
) -> None:
    config = config_of(tmp_path, TWO_TORCH)
    full = expand(config, load())
    matrix = expand(config, load(), torch_abi=record("none"))
    assert [(j.id, j.label, str(j.torch)) for j in matrix.jobs] == [
        ("demo-1.0-cp311-cu130", "cu130", "2.9"),  # the lowest torch, not the first listed
        ("demo-1.0-cp312-cu130", "cu130", "2.9"),
    ]
    assert matrix.notes == (
        "torch axis collapsed: demo 1.0 links no torch (torch_abi none, recorded from "
        "demo-1.0+cu130-cp311-cp311-linux_x86_64.whl): 4 jobs → 2",
    )
    assert (full.pruned, full.considered) == (matrix.pruned, matrix.considered)
    stable = expand(config, load(), torch_abi=record("stable"))
    assert len(stable.jobs) == 2 and "uses only torch's stable C ABI" in stable.notes[0]


def test_expand_keeps_the_axis_for_exact_other_versions_always_and_torch_templates(
    tmp_path: Path,
) -> None:
    full = expand(config_of(tmp_path, TWO_TORCH), load()).jobs
    exact = expand(config_of(tmp_path, TWO_TORCH), load(), torch_abi=record("exact"))
    assert exact.jobs == full
    assert exact.notes[0].startswith("torch axis kept: demo 1.0 links libtorch's C++ ABI")
    other = expand(config_of(tmp_path, TWO_TORCH), load(), torch_abi=record(version="2.0"))
    assert (other.jobs, other.notes) == (full, ())
    always = config_of(tmp_path, TWO_TORCH + '\ntorch_axis = "always"')
    assert expand(always, load(), torch_abi=record()).jobs == full
    custom = config_of(tmp_path, TWO_TORCH, '[label]\ntemplate = "cu{cuda_short}torch{torch}"')
    kept = expand(custom, load(), torch_abi=record())
    assert len(kept.jobs) == 4
    assert kept.notes[0].endswith("but [label] template names {torch}")


# A build with its commands replaced: each plan "builds" a real wheel with one extension.

CXX_SYMBOL = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"


def fake_builds(monkeypatch: pytest.MonkeyPatch, abi: str) -> list[str]:
    built: list[str] = []

    def run_plan(plan: BuildPlan, **_: object) -> JobResult:
        needed, undefined = (["libc10.so"], [CXX_SYMBOL]) if abi == "exact" else ([], [])
        so = make_elf(needed=needed, undefined=undefined)
        tag = plan.job.python_tag
        wheel = make_wheel(
            plan.out_dir,
            "demo",
            f"1.0+{plan.job.label}",
            tag=f"{tag}-{tag}-linux_x86_64",
            extra_metadata="Requires-Dist: numpy\n",
            files={"demo/_C.so": so},
        )
        built.append(plan.job.id)
        return JobResult(
            job_id=plan.job.id,
            wheel=wheel,
            report=inspect_wheel(wheel),
            verify_problems=(),
            smoke=None,
            seconds=0.0,
        )

    monkeypatch.setattr(batch, "run_plan", run_plan)
    return built


def build(config: Config, tmp_path: Path) -> tuple[tuple[batch.Outcome, ...], list[Event]]:
    events: list[Event] = []
    seed, collapser = start(config, events.append)
    plans = [
        plan_job(j, config, HOST, mode="local", out_dir=tmp_path / "out")
        for j in expand(config, load(), torch_abi=seed).jobs
    ]
    return batch.build_all(plans, emit=events.append, collapse=collapser), events


def test_a_build_collapses_after_its_first_torch_free_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = fake_builds(monkeypatch, "none")
    config = config_of(tmp_path, ONE_PYTHON)
    outcomes, _ = build(config, tmp_path)
    assert built == ["demo-1.0-cp311-cu130-torch2.9"]
    assert [(o.job_id, o.status) for o in outcomes] == [
        ("demo-1.0-cp311-cu130", "built"),
        ("demo-1.0-cp311-cu130-torch2.10", "collapsed"),
    ]
    wheel = outcomes[0].result.wheel if outcomes[0].result else Path()
    assert wheel.name == "demo-1.0+cu130-cp311-cp311-linux_x86_64.whl"
    assert sorted(p.name for p in wheel.parent.glob("*.whl")) == [wheel.name], (
        "the +cu130torch2.9 copy is gone"
    )
    assert outcomes[0].result and outcomes[0].result.report.local == "cu130"
    # the relabelled wheel's report, carried over from the build's, is what the wheel holds
    assert outcomes[0].result.report == inspect_wheel(wheel)
    assert "Requires-Dist: numpy" in _metadata(wheel)
    assert outcomes[1].detail == f"served by {wheel.name}: it links no torch (torch_abi none)"
    assert read_record(tmp_path) == AbiRecord(
        project="demo",
        version="1.0",
        torch_abi="none",
        wheel=wheel.name,
        job="demo-1.0-cp311-cu130-torch2.9",
    )
    again, _ = build(config, tmp_path / "second")
    assert [(o.job_id, o.status) for o in again] == [("demo-1.0-cp311-cu130", "built")]
    assert built[-1] == "demo-1.0-cp311-cu130", (
        "the second run plans the collapsed job from the record"
    )


def test_other_combinations_are_built_once_with_torch_free_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = fake_builds(monkeypatch, "none")
    config = config_of(tmp_path, ONE_PYTHON.replace('"9.0"', '["8.0", "9.0"]'))
    outcomes, _ = build(config, tmp_path)
    assert built == ["demo-1.0-cp311-cu130-torch2.9-sm80", "demo-1.0-cp311-cu130-sm90"]
    assert [o.status for o in outcomes] == ["built", "built", "collapsed", "collapsed"]
    assert [o.job_id for o in outcomes[:2]] == [
        "demo-1.0-cp311-cu130-sm80",
        "demo-1.0-cp311-cu130-sm90",
    ]


def test_a_job_for_another_runner_is_collapsed_once_its_wheel_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_builds(monkeypatch, "none")
    outcomes, _ = build(config_of(tmp_path, TWO_TORCH), tmp_path)
    assert [(o.job_id, o.status) for o in outcomes] == [
        ("demo-1.0-cp311-cu130", "built"),
        ("demo-1.0-cp312-cu130-torch2.9", "needs-runner"),
        ("demo-1.0-cp311-cu130-torch2.10", "collapsed"),
        ("demo-1.0-cp312-cu130-torch2.10", "needs-runner"),
    ]


def test_an_exact_wheel_keeps_the_axis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = fake_builds(monkeypatch, "exact")
    outcomes, _ = build(config_of(tmp_path, ONE_PYTHON), tmp_path)
    assert len(built) == 2 and {o.status for o in outcomes} == {"built"}
    assert all("torch2." in o.result.wheel.name for o in outcomes if o.result)
    assert (read_record(tmp_path) or record()).torch_abi == "exact"


def test_a_template_naming_torch_keeps_the_axis_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = fake_builds(monkeypatch, "none")
    config = config_of(tmp_path, ONE_PYTHON, '[label]\ntemplate = "cu{cuda_short}torch{torch}"')
    outcomes, events = build(config, tmp_path)
    assert len(built) == 2 and {o.status for o in outcomes} == {"built"}
    warnings = [e.message for e in events if e.level == "warning"]
    assert len(warnings) == 1
    assert (
        "links no torch" in warnings[0] and "names {torch}: the torch axis is kept" in warnings[0]
    )


def test_torch_axis_always_builds_every_job_and_writes_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = fake_builds(monkeypatch, "none")
    outcomes, _ = build(config_of(tmp_path, ONE_PYTHON + '\ntorch_axis = "always"'), tmp_path)
    assert len(built) == len(outcomes) == 2
    assert not (tmp_path / RECORD).exists()
    assert not Policy.of(config_of(tmp_path, TWO_TORCH + '\ntorch_axis = "always"')).active


def _metadata(wheel: Path) -> str:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()
