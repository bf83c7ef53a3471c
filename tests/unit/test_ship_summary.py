"""What `cuship ship` prints at the end, as a user reads (and pastes) it: every command whole
whatever the console's width, and every engine the quick check left out, with its fix."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cuship import index
from cuship.check.declare.inputs import CaseSpec
from cuship.check.report.results import CaseResult, CheckReport, GroupResult
from cuship.check.run.availability import Unavailable
from cuship.cli._console import Console
from cuship.cli.ship import _render
from cuship.ship import ShipReport
from tests.wheel_factory import make_wheel

NUMBA = Unavailable(
    engine="numba-sim",
    error="importing numba failed: No module named 'numba'",
    fix="pip install numba numba-cuda",
)


def _report(tmp_path: Path) -> ShipReport:
    wheels = tmp_path / "a-rather-long-directory-name-for-the-wheels" / "of-this-project"
    make_wheel(wheels, "demo", "1.0")
    site = tmp_path / "another-long-directory" / "dist" / "cuship" / "site"
    spec = CaseSpec(index=0, sizes=(("n", 7),), distribution="normal", seed=0)
    passed = CaseResult(case=spec, status="passed", total=7)
    groups = (
        GroupResult(op="add", engine="native", dtype="float32", rtol=0.0, atol=0.0, cases=(passed,)),
        GroupResult(
            op="add", engine="numba-sim", dtype="float32", rtol=0.0, atol=0.0,
            skip_reason=NUMBA.reason,
        ),
        GroupResult(
            op="add", engine="cuda", dtype="float32", rtol=0.0, atol=0.0,
            skip_reason="needs a CUDA GPU and the compiled extension; this run is --device cpu",
        ),
    )  # fmt: skip
    check = CheckReport(
        target="demo", device="cpu", seed=0, quick=True, started=0.0, finished=1.0,
        groups=groups, unavailable=(NUMBA,),
    )  # fmt: skip
    return ShipReport(
        outcomes=(),
        index=index.write([wheels], site),
        site=site,
        check=CheckReport.from_json(check.to_json()),  # as ship reads it back
        variants=("demo-1.0-py3-none-any-cu130.whl",),
    )


def test_commands_are_never_wrapped_and_left_out_engines_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # off a terminal: rich would wrap at 40 columns
    out = io.StringIO()
    report = _report(tmp_path)
    line = report.install_line("demo")
    _render(Console(out=out, err=io.StringIO(), github=False), report, "demo")
    printed = out.getvalue().splitlines()
    uv_line = report.variants_line("demo")
    assert uv_line is not None and len(uv_line) > 40
    for command in (line, uv_line, f"or serve it: cuship serve {report.site}"):
        assert any(row.strip() == command for row in printed), (command, printed)
    left = [row.strip() for row in printed if row.strip().startswith("left out: ")]
    assert left == [
        "left out: engine numba-sim unavailable: importing numba failed: No module named "
        "'numba'; fix: pip install numba numba-cuda",
        "left out: engine cuda left out of 1 group: needs a CUDA GPU and the compiled "
        "extension; this run is --device cpu",
    ]
