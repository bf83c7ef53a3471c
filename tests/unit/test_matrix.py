from __future__ import annotations

from pathlib import Path

import pytest

from cuship.ci.matrix import to_github, to_gitlab
from cuship.cli.matrix import parse_shard
from cuship.compat import load
from cuship.config import load_config
from cuship.errors import ConfigError, UsageError
from cuship.matrix import expand, shard


def project(tmp_path: Path, matrix: str, extra: str = "") -> Path:
    (tmp_path / "cuship.toml").write_text(
        f'[project]\nname = "demo"\nversion = "1.0"\nrequires_python = ">=3.10"\n[matrix]\n{matrix}\n{extra}',
        encoding="utf-8",
    )
    return tmp_path


def test_example_matrix_is_python_by_cuda_without_torch(example_dir: Path) -> None:
    """The example links libcudart only, so its wheels are labelled by CUDA alone."""
    matrix = expand(load_config(example_dir), load())
    ids = [job.id for job in matrix.jobs]
    assert len(ids) == len(set(ids)) == matrix.considered == 4 * 3
    assert not matrix.pruned
    assert {job.torch for job in matrix.jobs} == {None}
    assert {job.label for job in matrix.jobs} == {"cu128", "cu129", "cu130"}
    job = matrix.job("cuvecops-0.1.0-cp312-cu130")
    assert str(job.wheel_version) == "0.1.0+cu130"
    assert job.arch.cmake == "80;90-real;100-real;120"  # 80: SASS and PTX


TORCH_MATRIX = (
    'python = ["3.10", "3.11", "3.12", "3.13"]\n'
    'cuda = ["12.8.1", "12.9.1", "13.0.2"]\n'
    'torch = ["2.8", "2.9", "2.10"]\n'
    'arch = "8.0+PTX;9.0;10.0;12.0+PTX"'
)


def test_torch_matrix_jobs_ids_and_pruning(tmp_path: Path) -> None:
    matrix = expand(load_config(project(tmp_path, TORCH_MATRIX)), load())
    ids = [job.id for job in matrix.jobs]
    assert "demo-1.0-cp312-cu128-torch2.8" in ids
    assert len(ids) == len(set(ids))
    # torch 2.8 has no CUDA 13 build: 4 pythons x (13.0.2, 2.8) pruned, with the reason
    torch_cuda = [p for p in matrix.pruned if p.rule == "torch-cuda"]
    assert len(torch_cuda) == 4
    assert {p.combination["torch"] for p in torch_cuda} == {"2.8"}
    assert {p.combination["cuda"] for p in torch_cuda} == {"13.0.2"}
    assert all("none for CUDA 13.x" in p.reason for p in torch_cuda)
    assert matrix.considered == 4 * 3 * 3
    assert len(matrix.jobs) + len(matrix.pruned) == matrix.considered
    job = matrix.job("demo-1.0-cp312-cu128-torch2.8")
    assert job.label == "cu128torch2.8"
    assert str(job.wheel_version) == "1.0+cu128torch2.8"
    assert job.arch.cmake == "80;90-real;100-real;120"


def test_cuda13_cannot_target_sm70_dropped_per_job_with_reason(tmp_path: Path) -> None:
    path = project(tmp_path, 'python = ["3.12"]\ncuda = ["12.8.1", "13.0.2"]\narch = "7.0;9.0"')
    matrix = expand(load_config(path), load())
    by_cuda = {str(j.cuda): j for j in matrix.jobs}
    assert by_cuda["12.8.1"].arch.sass == ("70", "90")
    assert by_cuda["13.0.2"].arch.sass == ("90",)
    (drop,) = matrix.arch_drops
    assert "cannot target sm_70" in drop.reason
    assert drop.job == by_cuda["13.0.2"].id


def test_arch_no_chosen_toolkit_can_target_is_a_config_error(tmp_path: Path) -> None:
    path = project(tmp_path, 'python = ["3.12"]\ncuda = ["13.0.2"]\narch = "7.0;9.0"')
    with pytest.raises(ConfigError) as err:
        expand(load_config(path), load())
    assert "matrix.arch[0]" in str(err.value)
    assert "sm_70" in str(err.value)
    assert "12." in (err.value.hint or "")


def test_unknown_cuda_and_torch_suggest_nearest(tmp_path: Path) -> None:
    path = project(tmp_path, 'python = ["3.12"]\ncuda = ["12.7"]')
    with pytest.raises(ConfigError, match=r"matrix\.cuda\[0\]") as err:
        expand(load_config(path), load())
    assert "12.6" in str(err.value) and "12.8" in str(err.value)
    path = project(tmp_path, 'python = ["3.12"]\ncuda = ["12.8"]\ntorch = ["2.99"]')
    with pytest.raises(ConfigError, match=r"matrix\.torch\[0\]"):
        expand(load_config(path), load())


def test_exclude_rules_and_include_rules(tmp_path: Path) -> None:
    path = project(
        tmp_path,
        'python = ["3.11", "3.12"]\ncuda = ["12.8", "12.9"]\ntorch = ["2.8"]\n'
        'exclude = [{cuda = "12.9", python = "3.11"}]\n'
        'include = [{python = "3.13", cuda = "12.8", torch = "2.8"}]',
    )
    matrix = expand(load_config(path), load())
    combos = {(j.python, j.cuda_variant) for j in matrix.jobs}
    assert ("3.11", "cu129") not in combos
    assert ("3.13", "cu128") in combos
    (excluded,) = [p for p in matrix.pruned if p.rule == "exclude"]
    assert "matrix.exclude[0]" in excluded.reason


def test_python_outside_requires_python_and_torch_pythons(tmp_path: Path) -> None:
    path = project(tmp_path, 'python = ["3.9", "3.14"]\ncuda = ["12.8"]\ntorch = ["2.8"]')
    matrix = expand(load_config(path), load())
    rules = {p.combination["python"]: p.rule for p in matrix.pruned}
    assert rules == {"3.9": "requires-python", "3.14": "torch-python"}
    assert not matrix.jobs


def test_exact_torch_cuda_policy(tmp_path: Path) -> None:
    path = project(
        tmp_path, 'python = ["3.12"]\ncuda = ["12.9"]\ntorch = ["2.9"]\ntorch_cuda = "exact"'
    )
    matrix = expand(load_config(path), load())
    assert not matrix.jobs
    assert matrix.pruned[0].reason.endswith("none for cu129")
    path = project(tmp_path, 'python = ["3.12"]\ncuda = ["12.9"]\ntorch = ["2.9"]')
    (job,) = expand(load_config(path), load()).jobs
    assert job.torch_cuda == "12.8"


def test_old_abi_pruned_for_new_torch(tmp_path: Path) -> None:
    path = project(
        tmp_path, 'python = ["3.12"]\ncuda = ["12.8"]\ntorch = ["2.8"]\ncxx11abi = [true, false]'
    )
    matrix = expand(load_config(path), load())
    (job,) = matrix.jobs
    assert job.label == "cu128torch2.8cxx11abiTRUE"
    assert job.id.endswith("cxx11abiTRUE")
    assert matrix.pruned[0].rule == "torch-abi"


def test_sharding_is_even_and_complete(example_dir: Path) -> None:
    jobs = expand(load_config(example_dir), load()).jobs
    slices = [shard(jobs, i, 5) for i in range(1, 6)]
    assert [j for s in slices for j in s] == list(jobs)
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert parse_shard("2/5") == (2, 5)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(UsageError, match="--shard"):
            parse_shard(bad)


def test_ci_renderers(example_dir: Path) -> None:
    jobs = expand(load_config(example_dir), load()).jobs
    github = to_github(jobs)
    assert len(github["include"]) == len(jobs)
    assert github["include"][0]["job"] == jobs[0].id
    gitlab = to_gitlab(jobs)
    assert gitlab["parallel"]["matrix"][0]["CUDA"] == [str(jobs[0].cuda)]


def test_job_lookup_suggests_nearest(tmp_path: Path, example_dir: Path) -> None:
    matrix = expand(load_config(project(tmp_path, TORCH_MATRIX)), load())
    with pytest.raises(UsageError) as err:
        matrix.job("demo-1.0-cp312-cu128-torch2.7")
    assert "demo-1.0-cp312-cu128-torch2.8" in (err.value.hint or "")
    example = expand(load_config(example_dir), load())
    with pytest.raises(UsageError) as err:
        example.job("cuvecops-0.1.0-cp312-cu130-torch2.10")  # a label the example no longer has
    assert (err.value.hint or "").startswith("nearest: cuvecops-0.1.0-cp312-cu130,")


def test_big_matrix_expands_quickly_enough_to_not_matter(tmp_path: Path) -> None:
    # 5 x 6 x 8 x 6 = 1440 combinations with exclusions; the benchmark measures time, this checks the count
    path = project(
        tmp_path,
        'python = ["3.9", "3.10", "3.11", "3.12", "3.13"]\n'
        'cuda = ["11.8", "12.4", "12.6", "12.8", "12.9", "13.0"]\n'
        'torch = ["2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11"]\n'
        'arch = ["8.0", "8.6", "9.0", "10.0", "12.0", "8.0;9.0;12.0+PTX"]\n'
        'exclude = [{cuda = "11.8", arch = "12.0"}, {torch = "2.4", python = "3.13"}]',
    )
    matrix = expand(load_config(path), load())
    assert matrix.considered == 5 * 6 * 8 * 6
    assert len(matrix.jobs) + len(matrix.pruned) == matrix.considered


def test_default_pythons_are_those_of_the_matrix_s_torch_not_every_release_known(
    tmp_path: Path,
) -> None:
    """No torch axis: the newest torch release's CPythons, never 3.8 from an old release."""
    compat = load()
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[matrix]\ncuda = ["13.0"]\narch = "9.0"\n',
        encoding="utf-8",
    )
    pythons = {job.python for job in expand(load_config(tmp_path), compat).jobs}
    assert pythons == set(compat.torch[-1].pythons)
    assert "3.8" not in pythons
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n'
        '[matrix]\ncuda = ["12.8"]\ntorch = ["2.8"]\narch = "9.0"\n',
        encoding="utf-8",
    )
    pythons = {job.python for job in expand(load_config(tmp_path), compat).jobs}
    assert pythons == set(compat.torch_release("2.8").pythons)


def test_select_jobs_keeps_the_order_asked_for_and_refuses_an_unknown_id(
    example_dir: Path,
) -> None:
    from cuship.matrix import select_jobs

    config = load_config(example_dir)
    everything = select_jobs(config, load())
    ids = [job.id for _, job in everything]
    assert len(ids) > 1
    picked = select_jobs(config, load(), [ids[-1], ids[0]])
    assert [job.id for _, job in picked] == [ids[-1], ids[0]]
    with pytest.raises(UsageError, match="no job 'cp399-nothing'") as err:
        select_jobs(config, load(), ["cp399-nothing"])
    assert "cuship matrix" in (err.value.hint or "")


def test_an_outcome_s_json_is_its_job_status_and_reason_without_a_result() -> None:
    from cuship.builder.run.batch import Outcome

    outcome = Outcome(job_id="cp311-cu130", status="needs-runner", detail="needs an arm64 runner")
    assert outcome.to_json() == {
        "job": "cp311-cu130",
        "status": "needs-runner",
        "detail": "needs an arm64 runner",
    }
