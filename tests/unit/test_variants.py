"""Wheel variants (PEP 825): file names, the properties a wheel's binaries earn, the variant twin,
uv's NVIDIA provider as the research recorded it, the index's variants.json, verify."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest

from cuship.errors import InputError, UsageError
from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.judge import ObjectNeeds, WheelNeeds
from cuship.judge.offer import Offer, TorchBuild
from cuship.judge.variants import make_variant, properties, publish_variants
from cuship.judge.verify import verify
from cuship.resolve import Candidate, Target, WheelFacts, select
from cuship.resolve.variants import UvMachine, fits, uv_label
from cuship.wheel.audit import inspect_wheel
from cuship.wheel.variant import merged, read_wheel_variant, split_variant, variant_document
from tests.elf_factory import cuda_elf
from tests.wheel_factory import make_wheel

TAG = "cp311-cp311-linux_x86_64"


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("pkg-1.0-py3-none-any.whl", ("pkg-1.0-py3-none-any.whl", None)),
        ("pkg-1.0-1-py3-none-any.whl", ("pkg-1.0-1-py3-none-any.whl", None)),
        ("pkg-1.0-py3-none-any-cu130.whl", ("pkg-1.0-py3-none-any.whl", "cu130")),
        ("pkg-1.0-2-py3-none-any-cu12_sm90.whl", ("pkg-1.0-2-py3-none-any.whl", "cu12_sm90")),
        ("pkg-1.0.tar.gz", ("pkg-1.0.tar.gz", None)),
    ],
)
def test_a_variant_label_is_the_last_component_past_the_tags(
    filename: str, expected: tuple[str, str | None]
) -> None:
    assert split_variant(filename) == expected


def own(path: str = "pkg/_C.abi3.so", **fields: Any) -> ObjectNeeds:
    return replace(ObjectNeeds(path=path, role="extension"), **fields)


def test_the_properties_a_wheels_binaries_earn() -> None:
    """cuvecops: SASS 80/90/100/120, PTX 80/120, libcudart.so.13."""
    cuvecops = WheelNeeds(
        name="cuvecops",
        version="0.1.0",
        objects=(
            own(sass=("80", "90", "100", "120"), ptx=("80", "120"), libraries=("libcudart.so.13",)),
        ),
    )
    assert properties(cuvecops) == {
        "cuda_version_lower_bound": ["13"],
        "sm_arch": ["80_real", "90_real", "100_real", "120_real", "110_virtual"],
    }
    assert properties(cuvecops, upper_bound=True)["cuda_version_upper_bound"] == ["14"]
    # sm_100a runs on 10.0, not on 10.3: uv's 100_real would promise both, so it is not claimed
    arch_specific = WheelNeeds(name="p", version="1", objects=(own(sass=("90a", "100a")),))
    assert properties(arch_specific) == {"sm_arch": ["90_real"]}
    # SASS 86 and PTX 80: 8.0 and 8.6 run by PTX and SASS, so all of major 8 runs
    ptx_fills = WheelNeeds(name="p", version="1", objects=(own(sass=("86",), ptx=("80",)),))
    assert properties(ptx_fills)["sm_arch"] == [
        "86_real",
        "80_virtual",
        "90_virtual",
        "100_virtual",
        "110_virtual",
        "120_virtual",
    ]
    assert properties(WheelNeeds(name="p", version="1", objects=(own(),))) == {}


def _wheel(tmp_path: Path, version: str, *, sass: tuple[str, ...], runtime: str) -> Path:
    files = {"pkg/_C.abi3.so": cuda_elf(sass=list(sass), needed=(runtime,))}
    return make_wheel(tmp_path, "pkg", version, tag=TAG, files=files)


def test_the_variant_twin_of_a_labelled_wheel(tmp_path: Path) -> None:
    labelled = _wheel(tmp_path / "in", "1.0+cu130", sass=("90",), runtime="libcudart.so.13")
    twin = make_variant(labelled, out_dir=tmp_path / "out")
    assert twin.name == f"pkg-1.0-{TAG}-cu130.whl"
    assert read_wheel_variant(twin) == variant_document(
        "cu130", {"cuda_version_lower_bound": ["13"], "sm_arch": ["90_real"]}
    )
    report = inspect_wheel(twin)
    assert report.version == "1.0" and report.variant is not None
    with zipfile.ZipFile(twin) as archive:
        record = archive.read("pkg-1.0.dist-info/RECORD").decode()
    assert "pkg-1.0.dist-info/variant.json,sha256=" in record
    assert verify(report).ok
    with pytest.raises(InputError, match="is a variant wheel already"):
        make_variant(twin, out_dir=tmp_path / "out")
    bare = _wheel(tmp_path / "in", "1.0", sass=("90",), runtime="libcudart.so.13")
    with pytest.raises(UsageError, match="has no local label"):
        make_variant(bare, out_dir=tmp_path / "out")
    with pytest.raises(UsageError, match="is not a variant label"):
        make_variant(labelled, out_dir=tmp_path / "out", label="CU130")
    pure = make_wheel(tmp_path / "in", "pure", "1.0+cu130")
    with pytest.raises(InputError, match="no NVIDIA property"):
        make_variant(pure, out_dir=tmp_path / "out")


def test_verify_refuses_a_variant_whose_claims_its_binaries_do_not_earn(tmp_path: Path) -> None:
    labelled = _wheel(tmp_path / "in", "1.0+cu130", sass=("90",), runtime="libcudart.so.13")
    twin = make_variant(labelled, out_dir=tmp_path / "out")
    lying = tmp_path / "lie" / twin.name
    lying.parent.mkdir()
    with zipfile.ZipFile(twin) as source, zipfile.ZipFile(lying, "w") as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("variant.json"):
                document = json.loads(data)
                document["variants"]["cu130"]["nvidia"]["sm_arch"] = ["80_real", "90_real"]
                document["variants"]["cu130"]["nvidia"]["cuda_version_lower_bound"] = ["12"]
                data = json.dumps(document).encode()
            out.writestr(info, data)
    problems = verify(inspect_wheel(lying)).problems
    assert problems == (
        "variant 'cu130' claims sm_arch '80_real', which its binaries do not earn (they earn: "
        "90_real)",
        "variant 'cu130' says cuda_version_lower_bound 12; its objects link the CUDA 13 "
        "runtime: a driver of an older CUDA fails it",
    )


# uv 0.13.8's picks on the research's index of four variants (research/variants.md, section 4)
IDX1 = {
    "cu12_sm80_90": {
        "nvidia": {
            "cuda_version_lower_bound": ["12.0"],
            "cuda_version_upper_bound": ["13"],
            "sm_arch": ["80_real", "90_real"],
        }
    },
    "cu12_sm100_120": {
        "nvidia": {
            "cuda_version_lower_bound": ["12.8"],
            "cuda_version_upper_bound": ["13"],
            "sm_arch": ["100_real", "120_real"],
        }
    },
    "cu13_sm80_90": {
        "nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["80_real", "90_real"]}
    },
    "cu13_sm100_120": {
        "nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["100_real", "120_real"]}
    },
}


@pytest.mark.parametrize(
    ("cuda", "cc", "expected"),
    [
        ("12.8", "9.0", "cu12_sm80_90"),
        ("13.0", "9.0", "cu13_sm80_90"),
        ("13.0", "12.0", "cu13_sm100_120"),
        ("11.8", "7.0", None),
        (None, None, None),
        ("12.8", "12.0", "cu12_sm100_120"),
        ("12.4", "12.0", None),
        ("13.0", "8.6", "cu13_sm80_90"),
        ("12.8", "10.0", "cu12_sm100_120"),
        ("13.0", None, None),
        (None, "9.0", None),
        ("13.1", "9.0", "cu13_sm80_90"),
        ("14.0", "9.0", "cu13_sm80_90"),
    ],
)
def test_uvs_nvidia_provider_as_the_experiments_recorded_it(
    cuda: str | None, cc: str | None, expected: str | None
) -> None:
    machine = UvMachine.of(cuda, [("GPU", cc)] if cc else [])
    assert uv_label(IDX1, machine) == expected
    assert uv_label({**IDX1, "null": {}}, machine) == (expected or "null")


def test_uvs_order_between_fitting_variants() -> None:
    def nv(**features: list[str]) -> dict[str, Any]:
        return {"nvidia": dict(features)}

    driver = UvMachine(cuda=(12, 9), cc=(9, 0))
    assert (
        uv_label(
            {
                "a": nv(cuda_version_lower_bound=["12.0"]),
                "b": nv(cuda_version_lower_bound=["12.8"]),
            },
            driver,
        )
        == "b"
    )
    assert (
        uv_label({"a": nv(sm_arch=["90_real"]), "b": nv(cuda_version_lower_bound=["12.0"])}, driver)
        == "b"
    )
    both = nv(cuda_version_lower_bound=["12.0"], sm_arch=["90_real"])
    assert uv_label({"a": both, "b": nv(cuda_version_lower_bound=["12.8"])}, driver) == "b"
    assert uv_label({"a": nv(sm_arch=["90_virtual"]), "b": nv(sm_arch=["90_real"])}, driver) == "b"
    assert (
        uv_label({"b": nv(sm_arch=["80_real", "90_real"]), "a": nv(sm_arch=["90_real"])}, driver)
        == "a"
    )
    assert not fits(nv(sm_arch=["80_virtual"]), driver)  # PTX across majors is not modelled
    assert not fits({"other": {"x": ["1"]}}, driver)


def test_a_merged_variants_json_refuses_one_label_with_two_meanings() -> None:
    one = variant_document("cu130", {"sm_arch": ["90_real"]})
    other = variant_document("cu130", {"sm_arch": ["80_real"]})
    assert merged([one, one])["variants"] == one["variants"]
    with pytest.raises(InputError, match="name the variant 'cu130' with different properties"):
        merged([one, other])


def _published(tmp_path: Path) -> Path:
    builds = [
        _wheel(tmp_path / "w", "1.0+cu128", sass=("80", "90"), runtime="libcudart.so.12"),
        _wheel(tmp_path / "w", "1.0+cu130", sass=("90", "100"), runtime="libcudart.so.13"),
    ]
    publish_variants(builds, tmp_path / "w", null=True)
    return tmp_path / "w"


def test_a_cpu_build_gets_no_variant(tmp_path: Path) -> None:
    cpu = make_wheel(tmp_path / "w", "pkg", "1.0+cpu", tag=TAG)
    assert publish_variants([cpu], tmp_path / "out") == ()


def _torch_build(tmp_path: Path, torch: str, cuda: str) -> Path:
    so = cuda_elf(  # exact torch ABI: it imports c10's C++ API
        sass=["90"],
        needed=(f"libcudart.so.{cuda[:2]}", "libc10.so", "libc10_cuda.so"),
        undefined=("cudaLaunchKernel", "_ZN3c106detail14torchCheckFailEPKcS2_jPKc"),
    )
    return make_wheel(
        tmp_path,
        "pkg",
        f"1.0+cu{cuda}torch{torch}",
        tag=TAG,
        files={"pkg/_C.abi3.so": so},
        extra_metadata=f"Requires-Dist: torch=={torch}.*\n",
    )


def test_torch_linked_builds_get_one_sub_index_per_torch_minor(tmp_path: Path) -> None:
    """uv cannot choose by the installed torch: each torch minor's builds carry it as their
    build tag and are listed in their own sub-index, with their own variants.json."""
    builds = [
        _torch_build(tmp_path / "b", torch, cuda)
        for torch in ("2.12", "2.13")
        for cuda in ("126", "130")
    ]
    written = {p.name for p in publish_variants(builds, tmp_path / "w")}
    assert written == {
        f"pkg-1.0-212-{TAG}-cu126.whl",
        f"pkg-1.0-212-{TAG}-cu130.whl",
        f"pkg-1.0-212-{TAG}.whl",  # torch 2.12's plain wheel: its oldest CUDA, 12.6
        f"pkg-1.0-213-{TAG}-cu126.whl",
        f"pkg-1.0-213-{TAG}-cu130.whl",
        f"pkg-1.0-213-{TAG}.whl",
    }
    site = tmp_path / "site"
    write([tmp_path / "w"], site, describe=describe_wheel)
    combined = json.loads((site / "simple/pkg/index.json").read_text())
    assert combined["files"] == []  # a torch build is chosen in its torch's sub-index
    page = json.loads((site / "torch2.13/simple/pkg/index.json").read_text())
    assert [f["filename"] for f in page["files"]] == [
        f"pkg-1.0-213-{TAG}-cu126.whl",
        f"pkg-1.0-213-{TAG}-cu130.whl",
        f"pkg-1.0-213-{TAG}.whl",
        "pkg-1.0-variants.json",
    ]
    variants = json.loads((site / "torch2.13/simple/pkg/pkg-1.0-variants.json").read_text())
    assert set(variants["variants"]) == {"cu126", "cu130"}
    from cuship.machine import CudaLibraries
    from cuship.resolve.install import resolve_index

    libs = CudaLibraries(found=(("libcudart.so.13", "x"),))
    torch = TorchBuild(version="2.13.0", flavour="cuda", cuda="13.0", cxx11abi=True)
    offer = Offer(gpus=(("H100", "9.0"),), driver_cuda="13.0", torch=torch, libraries=libs)
    target = Target(tags=(TAG,), python="3.11.7", offer=offer)
    _, resolution = resolve_index("pkg", (site / "torch2.13/simple").as_uri(), target)
    assert resolution.chosen is not None
    assert resolution.chosen.candidate.filename == f"pkg-1.0-213-{TAG}-cu130.whl"
    assert resolution.uv == resolution.chosen.candidate.filename
    wrong = resolve_index("pkg", (site / "torch2.12/simple").as_uri(), target)[1]
    assert wrong.chosen is None
    rules = {v.candidate.filename: v.rule for v in wrong.rejected}
    assert rules[f"pkg-1.0-212-{TAG}-cu130.whl"] == "torch"  # built for 2.12, torch is 2.13


def test_the_index_lists_variants_beside_the_plain_wheel(tmp_path: Path) -> None:
    wheels = _published(tmp_path)
    site = tmp_path / "site"
    write([wheels], site, describe=describe_wheel)
    page = json.loads((site / "simple/pkg/index.json").read_text())
    names = [f["filename"] for f in page["files"]]
    assert names == [
        f"pkg-1.0-{TAG}-cu128.whl",
        f"pkg-1.0-{TAG}-cu130.whl",
        f"pkg-1.0-{TAG}-null.whl",
        f"pkg-1.0-{TAG}.whl",  # the plain wheel: the build of the oldest CUDA, cu128
        "pkg-1.0-variants.json",
    ]
    variants = (site / "simple/pkg/pkg-1.0-variants.json").read_bytes()
    entry = page["files"][-1]
    import hashlib

    assert entry["hashes"]["sha256"] == hashlib.sha256(variants).hexdigest()
    assert set(json.loads(variants)["variants"]) == {"cu128", "cu130", "null"}
    # the labelled builds stay in their sub-indexes; every wheel has its PEP 658 metadata
    sub = json.loads((site / "cu130/simple/pkg/index.json").read_text())
    assert [f["filename"] for f in sub["files"]] == [f"pkg-1.0+cu130-{TAG}.whl"]
    assert all((site / "files" / f"{name}.metadata").is_file() for name in names[:-1])


def test_an_update_keeps_the_variants_json_in_step(tmp_path: Path) -> None:
    wheels = _published(tmp_path)
    site = tmp_path / "site"
    write([wheels], site, describe=describe_wheel)
    later = _wheel(tmp_path / "w2", "2.0+cu130", sass=("90",), runtime="libcudart.so.13")
    (twin,) = [p for p in publish_variants([later], tmp_path / "w2") if "-cu130" in p.name]
    write([twin], site, describe=describe_wheel, keep_existing=True)
    assert (site / "simple/pkg/pkg-2.0-variants.json").is_file()
    assert (site / "simple/pkg/pkg-1.0-variants.json").is_file()  # kept
    write([], site, yanked={f"pkg-1.0-{TAG}-cu130.whl": "broken"}, keep_existing=True)
    kept = json.loads((site / "simple/pkg/pkg-1.0-variants.json").read_text())
    assert set(kept["variants"]) == {"cu128", "null"}  # a yanked variant is never picked
    write([twin], site, describe=describe_wheel)  # version 1.0 no longer published
    assert not (site / "simple/pkg/pkg-1.0-variants.json").exists()
    page = json.loads((site / "simple/pkg/index.json").read_text())
    assert [f["filename"] for f in page["files"]] == [
        f"pkg-2.0-{TAG}-cu130.whl",
        "pkg-2.0-variants.json",
    ]


def test_resolve_prefers_what_uv_takes_among_equals_and_says_where_it_differs() -> None:
    def candidate(label: str | None, sass: tuple[str, ...], runtime: str) -> Candidate:
        name = f"pkg-1.0-{TAG}" + (f"-{label}" if label else "") + ".whl"
        objects = (own(sass=sass, libraries=(runtime,)),)
        variant = None
        if label:
            needs = WheelNeeds(name="pkg", version="1.0", objects=objects)
            variant = {label: {"nvidia": properties(needs)}}
        facts = WheelFacts(sass=sass, objects=objects, variant=variant)
        return Candidate(filename=name, url=f"http://x/{name}", sha256="0" * 64, facts=facts)

    files = [
        candidate(None, ("80", "90"), "libcudart.so.12"),
        candidate("cu128", ("80", "90"), "libcudart.so.12"),
        candidate("cu130", ("90", "100"), "libcudart.so.13"),
    ]
    from cuship.machine import CudaLibraries

    libs = CudaLibraries(found=(("libcudart.so.12", "x"), ("libcudart.so.13", "x")))
    offer = Offer(gpus=(("H100", "9.0"),), libraries=libs)
    target = Target(tags=(TAG,), python="3.11.7", offer=offer)
    h100 = select("pkg", files, replace(target, offer=replace(offer, driver_cuda="13.0")))
    assert h100.chosen is not None and h100.uv == h100.chosen.candidate.filename
    assert h100.chosen.candidate.filename.endswith("-cu130.whl")
    # uv's provider reads the driver and the GPU, not the libraries: with no CUDA 13 runtime
    # here, it would take the cu130 variant, which cannot load; cuship takes a CUDA 12 build
    only12 = CudaLibraries(found=(("libcudart.so.12", "x"),))
    no13_offer = replace(offer, driver_cuda="13.0", libraries=only12)
    no13 = select("pkg", files, replace(target, offer=no13_offer))
    assert no13.uv is not None and no13.uv.endswith("-cu130.whl")
    assert no13.chosen is not None  # the plain wheel or cu128: the CUDA 12 builds run here
    assert no13.chosen.candidate.filename in (files[0].filename, files[1].filename)
    (note,) = [n for n in no13.chosen.notes if n.startswith("uv ")]
    assert note.startswith(
        f"uv --preview-features wheel-variants would take {no13.uv}, which does "
    )
    assert "(libraries: pkg/_C.abi3.so needs libcudart.so.13" in note


def _variant_candidate(label: str, sass: tuple[str, ...]) -> Candidate:
    name = f"pkg-1.0-{TAG}-{label}.whl"
    objects = () if label == "null" else (own(sass=sass, libraries=("libcudart.so.13",)),)
    props = properties(WheelNeeds(name="pkg", version="1.0", objects=objects)) if objects else {}
    facts = WheelFacts(
        sass=sass, objects=objects, variant={label: {"nvidia": props} if props else {}}
    )
    return Candidate(filename=name, url=f"http://x/{name}", sha256="ab" * 32, facts=facts)


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_install_gives_a_variant_to_an_installer_that_takes_it(
    tmp_path: Path, installer: Literal["pip", "uv"]
) -> None:
    """uv takes the variant file with its preview feature, told the machine the judge chose
    for; pip takes no variant file: it gets the same bytes under the plain wheel name."""
    from cuship.machine import CudaLibraries
    from cuship.resolve.install import FORCE_CUDA, FORCE_SM, plan_install

    libs = CudaLibraries(found=(("libcudart.so.13", "x"),))
    offer = Offer(gpus=(("H100", "9.0"),), driver_cuda="13.0", libraries=libs)
    h100 = Target(tags=(TAG,), python="3.11.7", offer=offer)
    resolution = select("pkg", [_variant_candidate("cu130", ("90",))], h100)
    assert resolution.chosen is not None
    plan = plan_install(
        resolution, installer=installer, python="/v/bin/python", index="http://i/simple",
        dest=tmp_path, extra_indexes=("https://pypi.org/simple",),
    )  # fmt: skip
    pinned = f"pkg @ {plan.given.as_uri()}#sha256={'ab' * 32}"
    assert plan.command[-1] == pinned and plan.variant == "cu130"
    assert plan.command[-3:-1] == ("--extra-index-url", "https://pypi.org/simple")
    if installer == "uv":
        assert plan.given == tmp_path / f"pkg-1.0-{TAG}-cu130.whl" and plan.installs is None
        assert plan.command[3:5] == ("--preview-features", "wheel-variants")
        assert plan.env == {FORCE_CUDA: "13.0", FORCE_SM: "9.0"}
    else:
        assert plan.given == tmp_path / "as-plain" / "cu130" / f"pkg-1.0-{TAG}.whl"
        assert "--preview-features" not in plan.command and plan.env == {}
        assert "pip takes no variant file" in plan.how


def test_install_gives_uv_the_plain_name_where_its_provider_would_refuse(tmp_path: Path) -> None:
    """The null variant fits anywhere (uv takes it, no variable set); a variant uv's provider
    would refuse on the machine judged (no driver: the judge still takes a GPU build) goes
    to uv under its plain wheel name."""
    from cuship.resolve.install import plan_install

    target = Target(tags=(TAG,), python="3.11.7")
    for label, via_uv in (("null", True), ("cu130", False)):
        resolution = select("pkg", [_variant_candidate(label, ("90",))], target)
        assert resolution.chosen is not None, label
        plan = plan_install(
            resolution, installer="uv", python="/v/bin/python", index="http://i/simple",
            dest=tmp_path,
        )  # fmt: skip
        assert ("--preview-features" in plan.command) is via_uv and plan.env == {}
        assert (plan.installs is None) is via_uv, label
