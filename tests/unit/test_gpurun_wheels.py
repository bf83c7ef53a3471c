"""gpu-run's wheel choice among local files, for a machine faked with CUSHIP_GPUS."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuship.compat import load
from cuship.config import load_config
from cuship.errors import InputError
from cuship.gpurun.wheels import LocalWheels, NoWheelFits, choose, read_wheels
from cuship.judge import ObjectNeeds
from cuship.machine import fingerprint
from cuship.matrix import expand
from cuship.resolve.model import Candidate, Target, WheelFacts, target_of
from tests.elf_factory import make_elf
from tests.unit.test_machine import FakeProbe
from tests.wheel_factory import make_wheel

H100 = {
    "CUSHIP_GPUS": "H100:9.0:80GiB",
    "CUSHIP_DRIVER_CUDA": "13.0",
    "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06",
    "CUSHIP_TORCH": "none",
    "CUSHIP_NVCC": "none",
}


def _target(**env: str) -> Target:
    return target_of(fingerprint({**H100, **env}, FakeProbe()))


def test_the_newest_wheel_that_fits_wins_and_the_rest_say_why(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    old = make_wheel(wheels, "tinypkg", "0.1.0")
    new = make_wheel(wheels, "tinypkg", "0.2.0.dev3+cu130")  # a local pre-release build
    exact = make_elf(needed=["libc10.so"], undefined=["_ZN3c1019UndefinedTensorImpl10_singletonE"])
    # links torch's C++ ABI for torch 2.8 (its label), which is not installed
    make_wheel(wheels, "tinypkg", "0.3.0+cu130torch2.8", files={"tinypkg/_ops.so": exact})
    make_wheel(wheels, "other", "9.0")
    (wheels / "tinypkg-0.4.0-py3-none-any.whl").write_bytes(b"<html>not a zip</html>")

    choice = choose("tinypkg", read_wheels([wheels]), _target())

    assert choice.path == new.resolve()
    assert choice.verdict.cuda == "13.0"
    doc = choice.to_json()
    assert doc["also_fitting"] == [old.name]
    rejected = {r["filename"]: (r["rule"], r["reason"]) for r in doc["rejected"]}
    assert rejected["tinypkg-0.3.0+cu130torch2.8-py3-none-any.whl"] == (
        "torch",
        "built for torch==2.8.* (exact ABI) but torch is not installed: "
        "'libc10.so: cannot open shared object file'",
    )
    assert rejected["other-9.0-py3-none-any.whl"] == (
        "filename",
        "a wheel of 'other', not 'tinypkg'",
    )
    assert rejected["tinypkg-0.4.0-py3-none-any.whl"][0] == "unreadable"
    assert doc["sha256"] and doc["path"] == str(new.resolve())


def test_the_examples_wheels_fit_whatever_torch_is_installed(
    tmp_path: Path, example_dir: Path
) -> None:
    """cuvecops links libcudart only: its labels name no torch, so torch 2.11 does not reject it."""
    labels = sorted({job.label for job in expand(load_config(example_dir), load()).jobs})
    assert labels == ["cu128", "cu129", "cu130"]
    for label in labels:
        make_wheel(tmp_path, "cuvecops", f"0.1.0+{label}")
    for torch in ("none", "2.11.0+cu130"):
        choice = choose("cuvecops", read_wheels([tmp_path]), _target(CUSHIP_TORCH=torch))
        assert choice.path.name == "cuvecops-0.1.0+cu130-py3-none-any.whl"
        assert not [r for r in choice.to_json()["rejected"] if r["rule"] == "torch"]


def test_no_fitting_wheel_is_exit_1_listing_each_wheel_and_why(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "tinypkg", "0.1.0+cu130")
    with pytest.raises(NoWheelFits) as caught:
        old_driver = {"CUSHIP_DRIVER_CUDA": "12.4", "CUSHIP_CUDA_DRIVER_VERSION": "550.54.15"}
        choose("tinypkg", read_wheels([wheel]), _target(**old_driver))
    assert caught.value.exit_code == 1
    message = caught.value.message
    assert message.startswith(
        "no wheel of 'tinypkg' fits this machine (H100 (9.0), driver CUDA 12.4"
    )
    assert f"\n  {wheel.name}: cuda: built for CUDA 13.0" in message


def test_gpu_arches_come_from_the_wheel_and_decide(tmp_path: Path) -> None:
    """Facts as read_wheels takes them from the wheel's ELF files (cuship.index.describe)."""

    def candidate(name: str, sass: tuple[str, ...], ptx: tuple[str, ...] = ()) -> Candidate:
        own = ObjectNeeds(path="cudaxpy/_C.so", role="extension", sass=sass, ptx=ptx)
        facts = WheelFacts(cuda="13.0", sass=sass, ptx=ptx, objects=(own,))
        return Candidate(filename=name, url=f"file:///w/{name}", sha256="0" * 64, facts=facts)

    ampere = candidate("cudaxpy-0.1.0+cu130-py3-none-any.whl", ("80",))
    hopper = candidate("cudaxpy-0.1.0+cu130.h-py3-none-any.whl", ("80", "90a"))
    wheels = LocalWheels(
        candidates=(ampere, hopper),
        paths={c.filename: tmp_path / c.filename for c in (ampere, hopper)},
    )
    choice = choose("cudaxpy", wheels, _target())
    assert choice.verdict.candidate == hopper and choice.verdict.coverage == "sass"
    assert choice.to_json()["why"] == "best fit: SASS for every GPU, CUDA 13.0"
    (lost,) = choice.resolution.rejected
    assert (lost.rule, lost.reason) == (
        "gpu",
        "H100 (9.0): cudaxpy/_C.so carries no SASS or PTX it can run (it has sm_80): "
        "'no kernel image is available for execution on the device'",
    )
    with pytest.raises(
        NoWheelFits, match=r"cudaxpy-0\.1\.0\+cu130-py3-none-any\.whl: gpu: H100 \(9\.0\)"
    ):
        choose("cudaxpy", LocalWheels(candidates=(ampere,), paths=wheels.paths), _target())


def test_bad_wheel_inputs_are_exit_2_naming_them(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(
        InputError, match=r"--wheels: no such file or directory: '.*nowhere'"
    ) as err:
        read_wheels([missing])
    assert err.value.exit_code == 2
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no wheels \(\*\.whl\) in '.*empty'"):
        read_wheels([tmp_path / "empty"])
    readme = tmp_path / "README.md"
    readme.write_text("hi")
    with pytest.raises(InputError, match=r"not a wheel: '.*README\.md'"):
        read_wheels([readme])
    broken = tmp_path / "x-1.0-py3-none-any.whl"
    broken.write_bytes(b"garbage")
    with pytest.raises(InputError, match="no readable wheel among"):
        read_wheels([broken])
    with pytest.raises(InputError, match="no wheels given"):
        read_wheels([])


def test_files_and_directories_mix(tmp_path: Path) -> None:
    one = make_wheel(tmp_path / "a", "tinypkg", "0.1.0")
    two = make_wheel(tmp_path / "b", "tinypkg", "0.2.0")
    wheels = read_wheels([one, tmp_path / "b"])
    assert sorted(wheels.paths) == sorted([one.name, two.name])
    assert all(c.url.startswith("file:///") and c.facts is not None for c in wheels.candidates)
