"""The example's generated pipelines run for real (opt-in: minutes of nvcc, npm and PyPI).

GitLab's ``.gitlab-ci.yml`` under gitlab-ci-local's shell executor: ``matrix-drift``, the build
shard of this host's CUDA (``parallel: matrix``), ``check-quick`` on that shard's wheel,
``index`` merging the build artifacts and ``pages`` publishing it; GitHub's build and check jobs
under the stand-in (tests/integration/gha_standin.py). Green on the example; on a planted kernel
bug (the NumPy saxpy subtracts y) red at the quick check and nowhere else, and GitLab's pages
job not run. Every job the host cannot run is listed with its rule. See
tests/integration/ci_engine.py for how the runs are set up, and benchmarks/bench_ci_engine.py
for the same runs with their timings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.ci_engine import (
    CHECK_JOB,
    PYTHON,
    PipelineRun,
    host_cuda,
    install_engine,
    job_environment,
    prepare_repository,
    run_github,
    run_gitlab,
    torch_index,
    unexpected,
)

OPT_IN = (
    "runs the example's generated pipelines under gitlab-ci-local and the GitHub stand-in "
    "(about 15 minutes of nvcc, npm and PyPI): set TEST_CI_ENGINE=1 to run it"
)
pytestmark = [
    pytest.mark.ci_engine,
    pytest.mark.network,
    pytest.mark.skipif(os.environ.get("TEST_CI_ENGINE") != "1", reason=OPT_IN),
]
CASES = {"example": False, "planted": True}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if host_cuda() is None:
        pytest.fail("the build jobs need this host's nvcc (/usr/local/cuda/bin/nvcc)")
    return tmp_path_factory.mktemp("ci-engine")


@pytest.fixture(scope="module")
def variables(work: Path, cuship_dist: Path) -> Iterator[dict[str, str]]:
    """cuship's wheel by --find-links, torch's index stood in for, TMPDIR and compile cache."""
    with job_environment(work) as env:
        yield {"UV_FIND_LINKS": str(cuship_dist), "TORCH_INDEX": torch_index(work), **env}


@pytest.fixture(scope="module")
def repositories(work: Path) -> dict[str, Path]:
    import cuship

    pin = f"cuship[all]=={cuship.__version__}"
    return {
        case: prepare_repository(work / case, pin, plant=planted, providers=("gitlab", "github"))
        for case, planted in CASES.items()
    }


def _shard() -> str:
    """The build job this host runs: this Python, this host's CUDA."""
    cuda = str(host_cuda()).replace(".", "")
    return f"cuvecops-0.1.0-cp{PYTHON.replace('.', '')}-cu{cuda}"


def _explain(run: PipelineRun) -> str:
    failed = "\n".join(f"--- {r.name}\n{r.tail[-4000:]}" for r in run.runs if r.exit_code)
    return f"{run.report()}\n{failed}"


@pytest.mark.parametrize("case", list(CASES))
def test_gitlab_pipeline_under_gitlab_ci_local(
    case: str, repositories: dict[str, Path], variables: dict[str, str]
) -> None:
    root = repositories[case]
    run = run_gitlab(install_engine(), root, variables)
    assert unexpected(run, planted=CASES[case], check=CHECK_JOB["gitlab"]) is None, _explain(run)
    ran = [r.name for r in run.runs]
    assert ran[0] == "matrix-drift"
    (build,) = [n for n in ran if n.startswith("build: [")]  # the shard of this host's CUDA
    assert build.startswith(f"build: [{_shard()},{PYTHON},{host_cuda()}.")
    assert run.skipped["gpu-h100"].startswith("runs only on runners tagged gpu, h100")
    assert run.skipped["check-nightly"] == "not in this pipeline (its rules: schedules only)"
    published = root / ".gitlab-ci-local" / "artifacts" / "pages" / "public"
    if CASES[case]:
        assert "index" in ran  # it needs only the build
        assert run.skipped["pages"] == "not run: needs check-quick, which failed"
        check = next(r for r in run.runs if r.name == "check-quick")
        assert "saxpy" in check.tail, check.tail
    else:
        assert ran[-3:] == ["check-quick", "index", "pages"]
        # the index job's site as pages published it: the plain wheel on the project page,
        # the labelled build in its label's sub-index (docs/variants.md)
        python_tag, cuda_label = _shard().rsplit("-", 2)[1:]
        page = (published / "simple" / "cuvecops" / "index.html").read_text(encoding="utf-8")
        assert f"cuvecops-0.1.0-{python_tag}-{python_tag}-manylinux" in page
        sub = published / cuda_label / "simple" / "cuvecops" / "index.html"
        labelled = f"cuvecops-0.1.0+{cuda_label}-{python_tag}-{python_tag}-manylinux"
        assert labelled in sub.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", list(CASES))
def test_github_build_and_check_jobs_under_the_stand_in(
    case: str, repositories: dict[str, Path], variables: dict[str, str], work: Path
) -> None:
    run = run_github(repositories[case], work / f"{case}-github", variables)
    assert unexpected(run, planted=CASES[case], check=CHECK_JOB["github"]) is None, _explain(run)
    assert [r.name for r in run.runs] == ["matrix", f"build {_shard()}", "check (quick)"]
    assert run.skipped["nightly"].startswith("its if: (github.event_name == 'schedule') is false")
    assert run.skipped["gpu-h100"].startswith("runs on self-hosted runners")
    if CASES[case]:
        check = run.runs[-1]
        assert check.failed_step == "Check kernels against references (quick)"
        assert "saxpy" in check.tail, check.tail
