"""``cuship compat --refresh``: torch.toml says the day it was checked, and an index's torch page
(here a PEP 691 page on disk, read through a file: URL) tells what it lacks; ``--write`` adds
rows the data's checks accept. And the fixes the judge gives from facts."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

from cuship.compat import DATA_DIR, load
from cuship.judge import Offer, WheelNeeds, fixes
from cuship.judge.offer import TorchBuild
from cuship.resolve.releases import refresh, updated_toml
from cuship.wheel.cudalibs import wheel_for

TODAY = datetime.date(2026, 11, 28)


def index_with(tmp_path: Path, files: list[dict[str, object]]) -> str:
    page = tmp_path / "simple" / "torch"
    page.mkdir(parents=True)
    doc = {"meta": {"api-version": "1.1"}, "name": "torch", "files": files}
    (page / "index.html").write_text(json.dumps(doc))
    return (tmp_path / "simple").as_uri() + "/"


def wheel(
    version: str, python: str = "cp312", uploaded: str = "2026-10-15T10:00:00Z"
) -> dict[str, object]:
    name = f"torch-{version}-{python}-{python}-manylinux_2_28_x86_64.whl"
    return {
        "filename": name,
        "url": f"https://files.example/{name}",
        "hashes": {},
        "upload-time": uploaded,
    }


def test_the_data_says_when_it_was_checked() -> None:
    data = load()
    assert data.torch_checked and datetime.date.fromisoformat(data.torch_checked) <= TODAY


def test_an_index_with_newer_releases_is_told_and_written_as_rows(tmp_path: Path) -> None:
    data = load()
    newest = data.torch[-1]
    newer = f"{newest.version.major}.{newest.version.minor + 1}"
    files = [
        wheel(f"{newer}.0", "cp311"),
        wheel(f"{newer}.0", "cp312"),
        wheel(f"{newer}.1", "cp311", "2026-11-02T00:00:00Z"),
        wheel(f"{newer}.1", "cp312", "2026-11-02T00:00:00Z"),
        wheel(f"{newer}.0rc1", "cp312"),  # a pre-release: not a release
        wheel(f"{newest.latest}", "cp312"),
    ]
    index = index_with(tmp_path, files)
    result = refresh(data, index=index, today=TODAY)
    assert not result.current and result.known == str(newest.latest)
    (row,) = result.new
    assert (row.minor, row.latest, row.released) == (newer, f"{newer}.1", "2026-10")
    assert row.pythons == ("3.11", "3.12") and row.manylinux == "2_28" and row.pypi_cuda is None
    text = updated_toml(
        (DATA_DIR / "torch.toml").read_text(), result, "https://pypi.org/simple/torch/"
    )
    copy = tmp_path / "data"
    shutil.copytree(DATA_DIR, copy)
    (copy / "torch.toml").write_text(text)
    written = load(copy)
    assert written.torch[-1].minor == newer and written.torch_checked == "2026-11-28"
    assert "PyTorch index's CUDA variants were not read" in written.torch[-1].note


def test_an_index_with_nothing_newer_is_current(tmp_path: Path) -> None:
    data = load()
    index = index_with(tmp_path, [wheel(str(r.latest)) for r in data.torch])
    assert refresh(data, index=index, today=TODAY).current


# --- fixes from facts ----------------------------------------------------------------------


def test_the_nvidia_wheel_is_the_one_of_the_cuda_the_object_needs() -> None:
    assert wheel_for("libcudnn.so.9", 13) == "nvidia-cudnn-cu13"
    assert wheel_for("libnccl.so.2", 11) == "nvidia-nccl-cu11"
    assert wheel_for("libcudart.so.12") == "nvidia-cuda-runtime-cu12"  # its SONAME says 12
    assert wheel_for("libcudnn.so.9", 10) is None  # no CUDA 10 wheel: no guess


def test_no_torch_index_is_offered_that_the_driver_cannot_run() -> None:
    data = load()
    needs = WheelNeeds(name="pkg", version="1.0")
    release = data.torch[-1]
    newest = max(release.cuda, key=lambda c: tuple(map(int, c.split("."))))
    major = int(newest.split(".")[0])
    older = [c for c in release.cuda if c.startswith(f"{major}.") and c != newest]
    driver = older[0] if older else None
    if driver is not None:
        variant = fixes.torch_variant(data, release.minor, major, Offer(driver_cuda=driver))
        assert variant == "cu" + driver.replace(".", "")
    too_old = Offer(
        driver_cuda=f"{major}.0" if f"{major}.0" not in release.cuda else f"{major - 1}.9"
    )
    if all(not c.startswith(f"{major}.0") for c in release.cuda):
        assert fixes.torch_variant(data, release.minor, major, too_old) is None
        said = fixes.torch_for_cuda(data, needs, too_old, major, release.minor)
        assert said.startswith("upgrade the NVIDIA driver")


def test_a_newer_torch_is_met_by_a_build_of_the_package_before_a_downgrade() -> None:
    needs = WheelNeeds(name="pkg", version="1.0")
    torch = TorchBuild(version="2.13.0", flavour="cuda", cuda="13.0")
    said = fixes.torch_fix(needs, "torch==2.11.*", torch)
    assert said.startswith('pip install --force-reinstall --no-deps "pkg==1.0"')
    assert "built for torch 2.13.0" in said and "or (a downgrade) pip install" in said
    older = TorchBuild(version="2.10.0", flavour="cuda", cuda="13.0")
    assert fixes.torch_fix(needs, "torch==2.11.*", older).startswith('pip install "torch==2.11.*"')
