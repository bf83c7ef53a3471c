"""The example's generated GitLab pipeline under a real CI engine (gitlab-ci-local, shell
executor): every job this host can run, on the example and on the example with a planted kernel
bug (the NumPy saxpy subtracts y). Goal: the example's pipeline green; the planted bug's red,
at the check job. Prints each job's exit code and wall time and the jobs skipped by rule.

Usage: python benchmarks/bench_ci_engine.py [--python 3.12]... [--only example|planted]
(cuship from this checkout: PYTHONPATH=src; the engine from tools/ci-engine.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.ci_engine import (
    as_json,
    build_cuship_wheel,
    install_engine,
    prepare_repository,
    report,
    run_pipeline,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", action="append", help="only build shards of this Python")
    parser.add_argument("--only", choices=("example", "planted"))
    args = parser.parse_args()
    import cuship

    engine = install_engine()
    with tempfile.TemporaryDirectory(prefix="cuship-ci-engine-") as tmp:
        wheels = build_cuship_wheel(Path(tmp) / "cuship")
        status = 0
        for case in ("example", "planted"):
            if args.only not in (None, case):
                continue
            root = prepare_repository(Path(tmp) / case, cuship.__version__, plant=case == "planted")
            runs, skipped = run_pipeline(
                engine, root, wheels, pythons=set(args.python) if args.python else None
            )
            print(f"== {case}\n{report(runs, skipped)}\n{as_json(runs, skipped)}", flush=True)
            failed = [r.name for r in runs if r.exit_code != 0]
            expected = not failed if case == "example" else failed == ["check-quick"]
            print(f"{case}: {'as expected' if expected else 'NOT as expected'}: failed {failed}")
            if not expected:
                for r in runs:
                    if r.exit_code != 0:
                        print(f"--- {r.name}\n{r.tail}")
                status = 1
        return status


if __name__ == "__main__":
    sys.exit(main())
