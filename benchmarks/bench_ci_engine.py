"""The example's generated pipelines run for real: GitLab's under gitlab-ci-local (shell
executor), GitHub's build and check jobs under the stand-in (tests/integration/gha_standin.py),
on the example and on the example with a planted kernel bug (the NumPy saxpy subtracts y).
Goal: both pipelines green on the example; red on the planted bug, at the quick check job and
nowhere else (GitLab's pages job then not run). Prints each job's exit code and wall time, and
every job skipped with its rule.

Usage: python benchmarks/bench_ci_engine.py [--only example|planted] [--engine gitlab|github]...
(cuship from this checkout: PYTHONPATH=src; the engine from tools/ci-engine.)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.ci_engine import (
    CHECK_JOB,
    PipelineRun,
    build_cuship_wheel,
    install_engine,
    job_environment,
    prepare_repository,
    run_github,
    run_gitlab,
    torch_index,
    unexpected,
)


def _run(which: str, root: Path, work: Path, variables: dict[str, str]) -> PipelineRun:
    if which == "gitlab":
        return run_gitlab(install_engine(), root, variables)
    return run_github(root, work, variables)


def _keep(folder: Path, run: PipelineRun) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index, job in enumerate(run.runs):
        name = "".join(c if c.isalnum() or c in "-." else "_" for c in job.name)[:80]
        (folder / f"{index:02d}-{name}.log").write_text(job.tail, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=("example", "planted"))
    parser.add_argument("--engine", action="append", choices=("gitlab", "github"))
    parser.add_argument("--logs", type=Path, help="write each job's log tail under this folder")
    args = parser.parse_args()
    import cuship

    engines = args.engine or ["gitlab", "github"]
    status = 0
    with tempfile.TemporaryDirectory(prefix="cuship-ci-engine-") as name:
        tmp = Path(name)
        wheels = build_cuship_wheel(tmp / "cuship")
        torch = torch_index(tmp)
        with job_environment(tmp) as env:
            variables = {"UV_FIND_LINKS": str(wheels), "TORCH_INDEX": torch, **env}
            for case in ("example", "planted"):
                if args.only not in (None, case):
                    continue
                root = prepare_repository(
                    tmp / case,
                    f"cuship[all]=={cuship.__version__}",
                    plant=case == "planted",
                    providers=("gitlab", "github"),
                )
                for which in engines:
                    run = _run(which, root, tmp / f"{case}-{which}", variables)
                    print(f"== {case}\n{run.report()}\n{json.dumps(run.as_json())}", flush=True)
                    problem = unexpected(run, planted=case == "planted", check=CHECK_JOB[which])
                    print(f"{case}, {which}: {problem or 'as expected'}", flush=True)
                    if args.logs:
                        _keep(args.logs / f"{case}-{which}", run)
                    if problem:
                        for r in run.runs:
                            if r.exit_code != 0:
                                print(f"--- {r.name}\n{r.tail}")
                        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
