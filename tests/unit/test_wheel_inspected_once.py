"""A built wheel is inspected once: repair inspects what auditwheel wrote, and finishing the
wheel carries that report over the retag (which changes no shared object) instead of reading
the wheel again. Counted on a real small wheel: the interpreter's own ``_json`` extension (a
real ELF) beside a CUDA extension under ``.data/platlib`` (a directory the retag renames).

No process starts in a unit test, so auditwheel's run is played by a copy under a manylinux
name; ``tests/integration/test_repair_inspected_once.py`` runs the real one."""

from __future__ import annotations

import _json
import shutil
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from cuship import _fs
from cuship.builder.run.finish import finish_wheel
from cuship.wheel import audit
from cuship.wheel.audit import inspect_wheel
from cuship.wheel.carried import carried_report
from cuship.wheel.write import repair, retag
from tests.build_fakes import job_work
from tests.elf_factory import cuda_elf
from tests.wheel_factory import make_wheel

TAG = "cp311-cp311-linux_x86_64"
EXT = "demo/_json.cpython-311-x86_64-linux-gnu.so"
DATA_EXT = "demo-1.0.data/platlib/demo/_kernels.so"


def _raw_wheel(directory: Path) -> Path:
    files = {
        EXT: Path(_json.__file__).read_bytes(),
        DATA_EXT: cuda_elf(sass=("80",), ptx=("80",)),
    }
    return make_wheel(directory, "demo", "1.0", tag=TAG, files=files)


def _auditwheel(plan: repair.RepairPlan, env: Mapping[str, str]) -> str:
    """auditwheel's part, played without a process: the wheel under a manylinux name."""
    name = plan.wheel.name.replace("linux_x86_64", "manylinux_2_17_x86_64")
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    written = shutil.copy2(plan.wheel, plan.out_dir / name)
    return f"Fixed-up wheel written to {written}\n"


class _Reads:
    """Every whole-wheel read, by kind and file: an inspection (the archive's shared objects
    read), a hash, a rewrite (retag reading its source)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self._wrap(monkeypatch, audit, "_scan_zip", "inspect")
        self._wrap(monkeypatch, _fs, "sha256_file", "hash")
        self._wrap(monkeypatch, repair, "sha256_file", "hash")
        self._wrap(monkeypatch, retag, "_rewrite", "rewrite")

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str, kind: str) -> None:
        real: Callable[..., Any] = getattr(module, name)

        def counted(path: Path, *args: Any, **kwargs: Any) -> Any:
            self.counts[kind, str(path)] += 1
            return real(path, *args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    def of(self, kind: str) -> int:
        return sum(n for (k, _), n in self.counts.items() if k == kind)


def _finish(raw: Path, tmp_path: Path, **options: Any) -> tuple[Path, audit.WheelReport]:
    job = job_work(tmp_path, job_id="demo-1.0-cp311-cu130", arches="8.0+PTX", **options)
    final, report, problems = finish_wheel(raw, job, environ={"PATH": "/usr/bin"})
    assert problems == ()
    return final, report


@pytest.mark.parametrize("kept", [False, True], ids=["plain", "repairs-kept-and-immutable"])
def test_a_finished_wheel_is_inspected_once_and_read_whole_once_a_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: bool
) -> None:
    monkeypatch.setattr(repair, "_run", _auditwheel)
    raw = _raw_wheel(tmp_path / "raw")
    (tmp_path / "out").mkdir()
    options: dict[str, Any] = {}
    if kept:  # a repair cache to fill, and a wheel of that name already there (same bytes)
        _finish(raw, tmp_path)
        options = {"repairs": tmp_path / "repairs", "immutable": True}
    reads = _Reads(monkeypatch)
    final, report = _finish(raw, tmp_path, **options)
    assert reads.of("inspect") == 1, reads.counts
    assert reads.of("rewrite") == 1, reads.counts
    assert all(n == 1 for n in reads.counts.values()), reads.counts  # no file hashed twice
    assert reads.of("hash") == (4 if kept else 0), reads.counts  # raw, repair kept, new, old
    # the report carried over is the one a fresh inspection of the final wheel gives
    assert report == inspect_wheel(final)
    assert final.name == "demo-1.0+cu130-cp311-cp311-manylinux_2_17_x86_64.whl"
    paths = {x.path for x in report.extensions}
    assert paths == {EXT, "demo-1.0+cu130.data/platlib/demo/_kernels.so"}
    assert report.sass == ("80",) and report.ptx == ("80",)


def test_repair_inspects_only_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repair, "_run", _auditwheel)
    raw = _raw_wheel(tmp_path / "raw")
    reads = _Reads(monkeypatch)
    done = repair.repair(raw, out_dir=tmp_path / "repaired", env={"PATH": "/usr/bin"})
    assert reads.counts == Counter({("inspect", str(done.output)): 1})
    # the raw objects' CUDA needs, read from the repaired wheel's (auditwheel keeps them)
    assert done.excluded_needed == ("libcudart.so.13",)


def test_a_retag_that_changed_a_shared_object_is_inspected_whole(tmp_path: Path) -> None:
    raw = _raw_wheel(tmp_path / "raw")
    report = inspect_wheel(raw)
    labelled = retag.retag(raw, local="cu130", out_dir=tmp_path / "labelled")
    assert carried_report(report, raw, labelled) == inspect_wheel(labelled)
    # the same name with other bytes in one object: its facts are read again, not carried
    other = tmp_path / "other" / labelled.name
    other.parent.mkdir()
    with zipfile.ZipFile(labelled) as old, zipfile.ZipFile(other, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename.endswith("_kernels.so"):
                data = cuda_elf(sass=("90",))
            new.writestr(info, data)
    carried = carried_report(report, raw, other)
    assert carried.sass == ("90",) and carried.ptx == ()
    assert carried == inspect_wheel(other)
