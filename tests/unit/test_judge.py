"""The one judge, on synthetic ELF objects that reproduce what real CUDA wheels from PyPI carry
(relocatable fatbins, per-object arch sets, bundled NVIDIA libraries, CUDA runtimes of each
major, links to torch's CUDA libraries) and fake machines of each torch build; and the same
verdict from every command that asks it (resolve over the records gpu-run reads from local
wheels, the PEP 517 backend over an index's pages and manifests, doctor over the installed
files)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cuship import settings
from cuship.doctor import diagnose
from cuship.gpurun.wheels import read_wheels
from cuship.index import write
from cuship.index.describe import describe_wheel
from cuship.judge import Context, Judgement, ObjectNeeds, Offer, WheelNeeds, judge, offer_of
from cuship.judge.verify import verify
from cuship.machine import fingerprint
from cuship.resolve import select, target_of
from cuship.resolve.decide import decide
from cuship.resolve.settings import PrebuiltConfig
from cuship.wheel.audit import inspect_object, inspect_wheel, role_of
from cuship.wheel.cudalibs import cuda_major_of, is_cuda_lib, library_stem
from cuship.wheel.torchabi import TorchPin
from tests.elf_factory import cuda_elf, fatbin, make_elf
from tests.site_factory import install
from tests.unit.test_machine import FakeProbe
from tests.wheel_factory import make_wheel

CXX = "_ZN3c106detail14torchCheckFailEPKcS2_jPKc"
_CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
TAG = f"{_CP}-{_CP}-manylinux_2_28_x86_64"
MACHINE = {
    settings.GPUS: "H100:9.0:80GiB",
    settings.CUDA_DRIVER_VERSION: "580.65.06",
    settings.DRIVER_CUDA: "13.0",
    settings.TORCH: "2.13.0",
    settings.TORCH_CUDA: "13.0",
    settings.TORCH_CXX11ABI: "1",
    settings.CUDA_LIBS: "13",
    settings.NVCC: "none",
    "PATH": "/nonexistent",
}


def offer(**changes: str | None) -> Offer:
    """MACHINE with ``changes`` (a setting's name without CUSHIP_; None drops it)."""
    env: dict[str, str] = {**MACHINE}
    for key, value in changes.items():
        if value is None:
            env.pop(getattr(settings, key), None)
        else:
            env[getattr(settings, key)] = value
    return offer_of(fingerprint(env, FakeProbe(), toolkit=False))


def needs(*objects: ObjectNeeds, **fields: Any) -> WheelNeeds:
    return replace(WheelNeeds(name="pkg", version="1.0", objects=objects, tags=(TAG,)), **fields)


def ext(path: str = "pkg/_C.so", **fields: Any) -> ObjectNeeds:
    return replace(ObjectNeeds(path=path, role=role_of(path)), **fields)


def failures(verdict: Judgement) -> list[tuple[str, str]]:
    return [(c.area, c.message) for c in verdict.failures]


# --- what a wheel needs, read from its files ------------------------------------------------


def test_relocatable_device_code_is_reported_apart_and_never_runs() -> None:
    """bitsandbytes' libbitsandbytes_cuda126.so: PTX compute_90 only in __nv_relfatbin."""
    so = make_elf(
        needed=("libcudart.so.12",),
        sections={
            ".nv_fatbin": fatbin(sass=["80", "90"]),
            "__nv_relfatbin": fatbin(sass=["80", "90"], ptx=["90"]),
        },
    )
    report = inspect_object(_write(so))
    assert (report.sass, report.ptx) == (("80", "90"), ())
    assert report.relocatable == ("sm_80", "compute_90", "sm_90")
    result = verify(report, arches="9.0+PTX")
    assert result.problems == ("missing PTX for compute_90 (found: none)",)
    assert result.ptx == ()


def _write(data: bytes, name: str = "x.so") -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / name
    path.write_bytes(data)
    return path


def test_bundled_nvidia_libraries_are_named_with_either_hash_and_their_code_is_not_the_packages(
    tmp_path: Path,
) -> None:
    """torchvision bundles libnvjpeg (SASS up to sm_121) beside its own _C.so (up to sm_120)."""
    for name in ("libcudart.faf08d9a.so.13", "libcudart-faf08d9a.so.13"):
        assert library_stem(name) == "libcudart" and is_cuda_lib(name)
        assert cuda_major_of(name) == 13
    own = cuda_elf(sass=["75", "80", "90", "100", "120"], ptx=["120"], needed=("libcudart.so.13",))
    jpeg = cuda_elf(sass=["90", "110", "121"], ptx=["121"], needed=("libcudart.faf08d9a.so.13",))
    wheel = make_wheel(
        tmp_path,
        "tv",
        "1.0",
        tag=TAG,
        files={
            "tv/_C.so": own,
            "tv.libs/libnvjpeg.36e11081.so.13": jpeg,
            "tv.libs/libcudart.faf08d9a.so.13": cuda_elf(needed=()),
        },
    )
    report = inspect_wheel(wheel)
    assert report.ptx == ("120",) and "121" not in report.sass
    assert report.bundled_cuda_libs == ("tv.libs/libcudart.faf08d9a.so.13",)
    assert [o.role for o in report.extensions] == ["extension", "vendor"]  # libcudart: not read
    assert verify(report).problems == (
        "bundles 'tv.libs/libcudart.faf08d9a.so.13'; repair with `cuship repair` (it excludes "
        "CUDA libraries)",
    )
    # a compute capability 11.0 GPU: only the bundled libnvjpeg has code for it
    verdict = judge_wheel(wheel, GPUS="Thor:11.0")
    assert failures(verdict)[0][0] == "gpu"
    assert "tv/_C.so carries no SASS or PTX it can run" in failures(verdict)[0][1]


def judge_wheel(wheel: Path, **changes: str) -> Judgement:
    from cuship.judge import wheel_needs

    return judge(wheel_needs(inspect_wheel(wheel)), offer(**changes))


def test_an_arch_specific_object_beside_ones_that_run_is_a_partial_fit() -> None:
    """torchao: _C_cutlass_90a (sm_90a only) and _C_mxfp8 (sm_100, compute_120)."""
    pkg = needs(
        ext("pkg/_C_cutlass_90a.abi3.so", sass=("90a",)),
        ext("pkg/_C_mxfp8.abi3.so", sass=("100",), ptx=("120",)),
    )
    h100 = judge(pkg, offer())
    assert h100.fits and h100.gpus[0].partial == ("pkg/_C_mxfp8.abi3.so",)
    (partial,) = [c for c in h100.checks if c.status == "partial"]
    assert "pkg/_C_mxfp8.abi3.so has no code for it (sm_100, compute_120)" in partial.message
    b200 = judge(pkg, offer(GPUS="B200:10.0"))
    assert b200.fits and b200.gpus[0].partial == ("pkg/_C_cutlass_90a.abi3.so",)
    a100 = judge(pkg, offer(GPUS="A100:8.0"))
    assert [area for area, _ in failures(a100)] == ["gpu"]
    # one object built for sm_90 only is no partial fit on an A100: nothing runs there
    single = judge(needs(ext(sass=("90",))), offer(GPUS="A100:8.0"))
    assert not single.fits


def test_a_cuda_13_runtime_on_a_driver_of_cuda_12() -> None:
    """cupy-cuda13x on an A100 with driver 535: resolve and doctor both refuse it."""
    pkg = needs(
        ext("cupy/cuda/jitify.cpython-311-x86_64-linux-gnu.so", libraries=("libnvrtc.so.13",))
    )
    verdict = judge(pkg, offer(GPUS="A100", CUDA_DRIVER_VERSION="535.104.05", DRIVER_CUDA=""))
    assert failures(verdict) == [
        (
            "cuda",
            "needs libnvrtc.so.13 (CUDA 13); driver 535.104.05 runs CUDA 12.2 at most: "
            "'CUDA driver version is insufficient for CUDA runtime version'",
        )
    ]
    assert verdict.failures[0].fix.startswith("upgrade the NVIDIA driver to 580")


def test_a_cuda_extension_needs_a_cuda_torch_of_its_runtimes_major() -> None:
    """causal-conv1d / torchvision on a CPU torch; xformers (CUDA 12) beside a CUDA 13 torch."""
    cuda13 = ext(
        libraries=("libcudart.so.13",),
        torch_libraries=("libc10.so", "libc10_cuda.so", "libtorch_cuda.so"),
        torch_abi="exact",
        torch_symbol=CXX,
        sass=("90",),
    )
    pkg = needs(cuda13, torch_requirement=_pin("torch==2.13.*"))
    cpu = judge(pkg, offer(TORCH="2.13.0+cpu", TORCH_CUDA=None))
    assert failures(cpu) == [
        (
            "torch",
            "links libc10_cuda.so (CUDA torch); torch 2.13.0+cpu (CPU) is a CPU build: "
            "'libc10_cuda.so: cannot open shared object file'",
        )
    ]
    assert cpu.failures[0].fix == (
        'pip install --force-reinstall "torch==2.13.*" --index-url '
        "https://download.pytorch.org/whl/cu130"
    )
    assert judge(pkg, offer()).fits
    cuda12 = replace(cuda13, libraries=("libcudart.so.12",))
    mixed = judge(needs(cuda12, torch_requirement=_pin("torch==2.13.*")), offer(CUDA_LIBS="12,13"))
    ((area, message),) = failures(mixed)
    assert area == "torch" and message.startswith(
        "links CUDA 12's runtime (libcudart.so.12) and torch's CUDA libraries; torch 2.13.0 "
        "(CUDA 13.0) is built for CUDA 13"
    )
    assert mixed.failures[0].fix.startswith(
        'pip install --force-reinstall "torch==2.13.*" --index-url '
        "https://download.pytorch.org/whl/cu126, or "
    )
    unknown = judge(pkg, offer(TORCH_CUDA=None))
    assert unknown.fits and not unknown.complete
    assert any("could not be read" in c.message for c in unknown.caveats)


def _pin(text: str) -> TorchPin | None:
    from cuship.judge.needs import pin_of

    return pin_of(text)


def test_a_library_from_nowhere_and_where_each_comes_from() -> None:
    """faiss-gpu-cu12 needs the CUDA 12 runtime its requirements bring; installed, they must be
    there; cupy's cuTENSOR module alone missing its library is a partial fit."""
    faiss = needs(
        ext(
            "faiss_gpu_cu12.libs/libfaiss-6b43fd57.so", sass=("90",), libraries=("libcudart.so.12",)
        ),
        requires=("nvidia-cuda-runtime-cu12>=12.1.105",),
    )
    bare = offer(CUDA_LIBS="none")
    installed = judge(faiss, bare)
    ((area, message),) = failures(installed)
    assert area == "libraries" and "'libcudart.so.12: cannot open shared object file" in message
    assert installed.failures[0].fix == 'pip install "nvidia-cuda-runtime-cu12"'
    before = judge(faiss, bare, context=Context(installing=True))
    assert before.fits
    assert before.libraries[0].source == "its requirement 'nvidia-cuda-runtime-cu12>=12.1.105'"
    cupy = needs(
        ext("cupy/cuda/cufft.cpython-311-x86_64-linux-gnu.so", libraries=("libcufft.so.12",)),
        ext("cupy/libs/cutensor.cpython-311-x86_64-linux-gnu.so", libraries=("libcutensor.so.2",)),
        requires=('cuda-toolkit[cufft]==13.*; extra == "ctk"',),
    )
    no_torch = offer(CUDA_LIBS="none", TORCH="none")
    partly = judge(cupy, replace(no_torch, libraries=offer(CUDA_LIBS="libcufft.so.12").libraries))
    assert partly.fits and [c.area for c in partly.caveats] == ["libraries"]
    # beside a CUDA 13 torch, its NVIDIA wheels bring cuFFT
    assert judge(cupy, bare).fits
    nothing = judge(cupy, no_torch)
    assert nothing.failures[0].fix.startswith('pip install "pkg[ctk]"')
    with_extra = judge(cupy, no_torch, context=Context(installing=True, extras=frozenset({"ctk"})))
    assert with_extra.fits


def test_objects_for_several_cuda_majors_load_the_one_of_torchs_cuda() -> None:
    """bitsandbytes: libbitsandbytes_cuda126.so beside libbitsandbytes_cuda130.so."""
    pkg = needs(
        ext("bnb/libbnb_cuda126.so", sass=("90",), libraries=("libcudart.so.12",)),
        ext("bnb/libbnb_cuda130.so", sass=("90",), libraries=("libcudart.so.13",)),
    )
    verdict = judge(pkg, offer(CUDA_LIBS="libcudart.so.13"))
    assert verdict.fits and verdict.cuda_major == 13
    assert [lib.judged for lib in verdict.libraries] == [False, True]
    old = judge(
        pkg, offer(TORCH="none", CUDA_DRIVER_VERSION="535.104.05", DRIVER_CUDA="", CUDA_LIBS="12")
    )
    assert old.fits and old.cuda_major == 12


def test_no_problem_only_when_every_check_ran() -> None:
    pkg = needs(ext(sass=("90",), libraries=("libcudart.so.13",)))
    assert judge(pkg, offer()).complete
    unknown = judge(
        pkg, replace(offer(TORCH="none"), libraries=None, driver_version=None, driver_cuda=None)
    )
    assert unknown.fits and not unknown.complete
    assert {c.area for c in unknown.caveats} == {"cuda", "libraries"}


# --- one verdict from every command ----------------------------------------------------------

CASES: dict[str, dict[str, bytes]] = {
    "sass-90": {"pkg/_C.abi3.so": cuda_elf(sass=["90"], needed=("libcudart.so.13",))},
    "sass-80": {"pkg/_C.abi3.so": cuda_elf(sass=["80"], needed=("libcudart.so.13",))},
    "rdc-ptx-only": {
        "pkg/_C.abi3.so": make_elf(
            needed=("libcudart.so.13",),
            sections={".nv_fatbin": fatbin(sass=["80"]), "__nv_relfatbin": fatbin(ptx=["80"])},
        )
    },
    "cuda12-runtime": {"pkg/_C.abi3.so": cuda_elf(sass=["90"], needed=("libcudart.so.12",))},
    "torch-cuda13": {
        "pkg/_C.abi3.so": make_elf(
            needed=("libcudart.so.13", "libc10.so", "libc10_cuda.so"),
            undefined=(CXX,),
            sections={".nv_fatbin": fatbin(sass=["90"])},
        )
    },
    "partial": {
        "pkg/_C.abi3.so": cuda_elf(sass=["80", "90"], needed=("libcudart.so.13",)),
        "pkg/_C_sm100.abi3.so": cuda_elf(sass=["100a"], needed=("libcudart.so.13",)),
    },
    "vendor-only-covers": {
        "pkg/_C.abi3.so": cuda_elf(sass=["80"], needed=("libcudart.so.13",)),
        "pkg.libs/libnvjpeg.36e11081.so.13": cuda_elf(sass=["90"], needed=()),
    },
}
MACHINES: dict[str, Mapping[str, str]] = {
    "h100-cu130": {},
    "a100-cu130": {settings.GPUS: "A100"},
    "h100-cpu-torch": {settings.TORCH: "2.13.0+cpu", settings.TORCH_CUDA: "none"},
    "h100-driver-535": {
        settings.CUDA_DRIVER_VERSION: "535.104.05",
        settings.DRIVER_CUDA: "",
        settings.CUDA_LIBS: "12,13",
    },
    "h100-cuda12-libs": {settings.CUDA_LIBS: "12,13"},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_resolve_gpu_run_and_doctor_give_one_verdict(tmp_path: Path, case: str) -> None:
    files = CASES[case]
    requires = ["torch==2.13.*"] if case.startswith("torch") else []
    extra = "".join(f"Requires-Dist: {r}\n" for r in requires)
    wheel = make_wheel(tmp_path / "w", "pkg", "1.0", tag=TAG, files=files, extra_metadata=extra)
    site = tmp_path / "site"
    install(site, "pkg", "1.0", files=files, tags=(TAG,), requires=requires)
    wheels = read_wheels([wheel])
    index = tmp_path / "index"
    write([wheel.parent], index, describe=describe_wheel)
    config = PrebuiltConfig(name="pkg", version="1.0", index=(index / "simple").as_uri())
    for name, changes in MACHINES.items():
        fp = fingerprint({**MACHINE, **changes}, FakeProbe(), toolkit=False)
        target = target_of(fp)
        resolved = select("pkg", wheels.candidates, target)
        doctor = diagnose(["pkg"], paths=[site], machine=fp).packages[0]
        backend = decide(config, {**MACHINE, **changes})
        chosen = resolved.chosen
        resolve_rule = "ok" if chosen is not None else resolved.rejected[0].rule
        doctor_rule = doctor.problems[0].area if doctor.problems else "ok"
        where = f"{case} on {name}"
        assert resolve_rule == doctor_rule, (
            f"{where}: resolve {resolved.to_json()}, doctor {doctor.to_json()}"
        )
        assert (backend.candidate is not None) == (chosen is not None), (where, backend.why)
        if chosen is None:
            assert resolved.rejected[0].reason == doctor.problems[0].message, where
            assert resolved.rejected[0].reason in backend.why, where


def test_objects_named_for_cuda_releases_load_the_one_of_torchs_cuda() -> None:
    """bitsandbytes loads libbitsandbytes_cuda{XY}.so for torch's CUDA X.Y: on an RTX 5090 with
    torch for CUDA 12.6 that one has no sm_120, whatever libbitsandbytes_cuda128.so carries."""
    pkg = needs(
        ext("bnb/libbitsandbytes_cuda126.so", sass=("80", "90"), libraries=("libcudart.so.12",)),
        ext("bnb/libbitsandbytes_cuda128.so", sass=("90", "120"), libraries=("libcudart.so.12",)),
    )
    rtx = offer(GPUS="RTX 5090", TORCH="2.13.0+cu126", TORCH_CUDA=None, DRIVER_CUDA="12.9")
    verdict = judge(pkg, rtx)
    assert [area for area, _ in failures(verdict)] == ["gpu"]
    assert "bnb/libbitsandbytes_cuda126.so carries no SASS or PTX" in failures(verdict)[0][1]
    assert judge(pkg, replace(rtx, torch=replace(rtx.torch, cuda="12.8"))).fits  # type: ignore[type-var]


def test_before_an_install_without_torch_the_torch_it_brings_is_judged() -> None:
    """xformers 0.0.35 (CUDA 12 runtime, torch>=2.10) on a driver of CUDA 12.2 with no torch:
    installing it brings PyPI's torch 2.13 for CUDA 13, which it cannot load beside."""
    xformers = needs(
        ext(
            "xformers/_C.so",
            sass=("80", "90a"),
            libraries=("libcudart.so.12",),
            torch_libraries=("libc10.so", "libc10_cuda.so"),
            torch_abi="stable",
        ),
        torch_requirement=_pin("torch>=2.10"),
    )
    machine = offer(TORCH="none", GPUS="A100", CUDA_DRIVER_VERSION="535.104.05", CUDA_LIBS="12")
    before = judge(xformers, machine, context=Context(installing=True))
    assert [area for area, _ in failures(before)] == ["torch"]
    assert "torch is not installed; installing it brings in torch>=2.10: torch 2.13.0" in (
        before.caveats[0].message
    )
    installed = judge(xformers, machine)
    assert [area for area, _ in failures(installed)] == ["torch"]
    assert "but torch is not installed" in failures(installed)[0][1]


def test_the_library_search_prefilter_keeps_every_nvidia_library_name() -> None:
    from cuship.machine.libraries import _PREFIXES
    from cuship.wheel import cudalibs

    patterns = [*cudalibs.CUDA_LIB_PATTERNS, *cudalibs._DATA.vendor]
    for pattern in patterns:
        if pattern.startswith(("libtorch", "libc10")):
            continue
        assert pattern.startswith(_PREFIXES), pattern
    for major in cudalibs.toolkit_majors():
        for lib in cudalibs.toolkit_libraries(major):
            assert lib.soname.startswith(_PREFIXES), lib.soname


def test_the_libraries_a_machine_offers_and_where(tmp_path: Path) -> None:
    from cuship.machine.libraries import cuda_libraries

    site = "/site"
    probe = FakeProbe(
        files={
            f"{site}/nvidia/cu13/lib/libcudart.so.13": "",
            f"{site}/torch/lib/libc10.so": "",
            "/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n",
            "/etc/ld.so.conf.d/cuda.conf": "/usr/local/cuda-12.8/lib64  # the toolkit\n",
            "/usr/local/cuda-12.8/lib64/libcublas.so.12": "",
            "/usr/local/cuda-12.8/lib64/libfoo.so.1": "",
            "/opt/x/libnvrtc.so.12": "",
        }
    )
    found = cuda_libraries({"LD_LIBRARY_PATH": "/opt/x"}, probe, [site])
    assert found.where("libcudart.so.13") == f"the nvidia/cu13 wheel ({site})"
    assert found.where("libcublas.so.12") == "system (/usr/local/cuda-12.8/lib64)"
    assert found.where("libnvrtc.so.12") == "system (/opt/x)"
    assert found.where("libfoo.so.1") is None and found.where("libc10.so") is None
    assert cuda_libraries({"CUSHIP_CUDA_LIBS": "none"}, probe, [site]).found == ()
    with pytest.raises(Exception, match="neither a CUDA major nor a library's SONAME"):
        cuda_libraries({"CUSHIP_CUDA_LIBS": "12,/etc/passwd"}, probe, [site])


VERSION_PY = {
    "cpu": "cuda: Optional[str] = None\nhip: Optional[str] = None\nxpu: Optional[str] = None\n",
    "cuda": "cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n",
    "rocm": "cuda: Optional[str] = None\nhip: Optional[str] = '6.4.43482'\n",
}


@pytest.mark.parametrize("flavour", ["cpu", "cuda", "rocm", None])
def test_the_build_of_an_installed_torch_is_read_from_its_files(
    tmp_path: Path, flavour: str | None
) -> None:
    """PyPI's CUDA 13 torch is "2.13.0", no label: only torch/version.py says what it is."""
    install(tmp_path, "torch", "2.13.0", tags=())
    if flavour is not None:
        (tmp_path / "torch" / "version.py").write_text(
            "__version__ = '2.13.0'\n" + VERSION_PY[flavour]
        )
    env = {settings.GPUS: "H100", settings.NVCC: "none", settings.CUDA_LIBS: "none"}
    fp = fingerprint(env, toolkit=False, site_dirs=[str(tmp_path)])
    assert fp.torch is not None and fp.torch.version == "2.13.0"
    assert fp.torch.flavour == flavour
    assert fp.torch.cuda == ("13.0" if flavour == "cuda" else None)
    assert fp.torch.flavour_from == (None if flavour is None else "torch/version.py")
