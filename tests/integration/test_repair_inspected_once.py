"""A built wheel is inspected once, through real auditwheel: an nvcc-built CUDA extension in a
standard wheel, finished as a build job finishes its wheel (repair, label, verify)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cuship.builder.run.finish import finish_wheel
from cuship.wheel import audit
from cuship.wheel.audit import inspect_wheel
from cuship.wheel.cudalibs import is_cuda_lib
from cuship.wheel.write.repair import repair
from tests.build_fakes import job_work
from tests.integration.cudawheel import build_so, make_wheel

ARCH = "8.0;10.0"


@pytest.fixture(scope="module")
def cuda_so(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_so(tmp_path_factory.mktemp("nvcc"))


def _counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Each inspection's read of a wheel's shared objects, by wheel."""
    counts: Counter[str] = Counter()
    real = audit._scan_zip

    def scan(path: Path, **options: Any) -> Any:
        counts[path.name] += 1
        return real(path, **options)

    monkeypatch.setattr(audit, "_scan_zip", scan)
    return counts


def test_a_finished_wheel_is_inspected_once_and_its_report_holds(
    cuda_so: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = make_wheel(tmp_path, cuda_so)
    (tmp_path / "out").mkdir()
    counts = _counted(monkeypatch)
    job = job_work(tmp_path, arches=ARCH)
    final, report, problems = finish_wheel(raw, job, environ=os.environ)
    assert sum(counts.values()) == 1, counts
    assert problems == ()
    assert "manylinux_2_" in final.name and "+cu130" in final.name
    assert report == inspect_wheel(final)  # what was carried over is what the wheel holds


def test_auditwheel_keeps_the_excluded_needs_the_raw_wheel_had(
    cuda_so: Path, tmp_path: Path
) -> None:
    """Why repair may read the excluded libraries from the wheel it wrote: auditwheel leaves
    the DT_NEEDED entries of the libraries it does not bundle as they were."""
    raw = make_wheel(tmp_path, cuda_so)
    before = inspect_wheel(raw)
    done = repair(raw, out_dir=tmp_path / "repaired", env=os.environ)
    had = {n for x in before.extensions for n in x.needed if is_cuda_lib(n)}
    assert "libcudart.so.13" in had
    assert done.excluded_needed == tuple(sorted(had))


def test_a_rebuild_of_the_same_raw_wheel_is_finished_into_the_same_bytes(
    cuda_so: Path, tmp_path: Path
) -> None:
    """auditwheel stamps the members it writes with SOURCE_DATE_EPOCH, else with the time of
    the repair: the repair runs with the epoch the build steps ran with, so two finishes of
    one raw wheel more than a zip time unit (2 s) apart give one wheel, byte for byte."""
    import hashlib
    import time

    from cuship.builder.model import Step

    (tmp_path / "raw").mkdir()
    raw = make_wheel(tmp_path / "raw", cuda_so)
    epoch = Step(name="build-wheel", description="", env={"SOURCE_DATE_EPOCH": "315532800"})
    digests = []
    for run in ("first", "second"):
        where = tmp_path / run
        (where / "out").mkdir(parents=True)
        job = job_work(where, arches=ARCH, steps=(epoch,))
        final, _, problems = finish_wheel(raw, job, environ=os.environ)
        assert problems == ()
        digests.append(hashlib.sha256(final.read_bytes()).hexdigest())
        time.sleep(2.1)
    assert digests[0] == digests[1]
