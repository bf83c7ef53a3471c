"""cuship doctor on fake machines (CUSHIP_* overrides) and fake installed distributions (a site
directory in tmp_path with .dist-info and synthetic ELF shared objects)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from cuship import settings
from cuship.doctor import DoctorReport, PackageReport, diagnose
from cuship.errors import NothingToDo, UsageError
from cuship.machine import Fingerprint, fingerprint
from tests.elf_factory import cuda_elf, make_elf
from tests.site_factory import install

EXT = "pkg/_C.cpython-311-x86_64-linux-gnu.so"
CXX = "_ZN3c106detail14torchCheckFailEPKcS2_jPKc"
SHIM = "aoti_torch_get_dim"
BASE = {
    settings.GPUS: "H100:9.0:80GiB",
    settings.DRIVER_CUDA: "13.0",
    settings.TORCH: "2.8.0+cu128",
    settings.TORCH_CXX11ABI: "1",
    settings.CUDA_LIBS: "12,13",
    "PATH": "/nonexistent",
}


def machine(changes: Mapping[str, str] | None = None, glibc: str = "2.31") -> Fingerprint:
    """A fake machine: BASE with ``changes``, and this glibc."""
    return replace(fingerprint({**BASE, **(changes or {})}, toolkit=False), glibc=glibc)


def doctor(site: Path, name: str = "pkg", **changes: str) -> PackageReport:
    env = {getattr(settings, key): value for key, value in changes.items()}
    report = diagnose([name], paths=[site], machine=machine(env))
    assert [p.name for p in report.packages] == [name]
    return report.packages[0]


def areas(package: PackageReport) -> list[str]:
    return [p.area for p in package.problems]


def test_no_sass_or_ptx_for_the_gpu_is_no_kernel_image(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0+cu130", files={EXT: cuda_elf(sass=["80", "86"])})
    report = diagnose(["pkg"], paths=[tmp_path], machine=machine({settings.GPUS: "H100,A100"}))
    package = report.packages[0]
    assert [(g.gpu, g.runs, g.arches) for g in package.gpus] == [
        ("H100", "none", ()),
        ("A100", "sass", ("sm_80",)),
    ]
    (problem,) = package.problems
    assert problem.area == "gpu"
    assert problem.message == (
        f"H100 (9.0): {EXT} carries no SASS or PTX it can run (it has sm_80, sm_86): "
        "'no kernel image is available for execution on the device'"
    )
    assert problem.fix.startswith('pip install --force-reinstall --no-deps "pkg==1.0" --index-url')
    assert problem.fix.endswith(
        "(URL: an index with a build that has SASS for sm_90 (or PTX <= compute_90))"
    )
    assert report.exit_code == 1
    assert package.provenance.variant == "cu130"
    assert package.provenance.variant_from == "local version label"


def test_ptx_only_runs_by_jit_and_is_no_problem(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0+cu130", files={EXT: cuda_elf(ptx=["80"])})
    package = doctor(tmp_path)
    assert [(g.gpu, g.runs, g.arches, g.objects) for g in package.gpus] == [
        ("H100", "ptx", ("compute_80",), (EXT,))
    ]
    assert package.problems == ()


def test_ptx_from_a_newer_toolkit_minor_than_the_driver_cannot_jit(tmp_path: Path) -> None:
    so = cuda_elf(ptx=["80"], needed=("libcudart.so.12",))
    install(tmp_path, "pkg", "1.0+cu129", files={EXT: so})
    package = doctor(tmp_path, DRIVER_CUDA="12.8")
    assert [lib.runs for lib in package.libraries] == [True]  # minor-version compatibility
    (problem,) = package.problems
    assert problem.area == "cuda" and "must JIT compute_80 made by CUDA 12.9" in problem.message
    assert "'the provided PTX was compiled with an unsupported toolchain'" in problem.message
    assert problem.fix.startswith("upgrade the NVIDIA driver to 575.57.08 or newer, or pip")


def test_exact_torch_abi_for_another_torch_is_the_undefined_symbol_case(tmp_path: Path) -> None:
    so = make_elf(needed=("libc10.so", "libtorch_cpu.so"), undefined=(CXX, "malloc"))
    install(tmp_path, "pkg", "1.0", files={EXT: so}, requires=["torch==2.9.*", "numpy"])
    package = doctor(tmp_path)
    assert (package.torch.abi, package.torch.built, package.torch.built_from) == (
        "exact",
        "2.9",
        "Requires-Dist",
    )
    assert package.torch.ok is False
    (problem,) = package.problems
    assert problem.area == "torch"
    assert problem.message == (
        "built for torch==2.9.* (exact ABI, from its Requires-Dist); installed torch is "
        f"2.8.0+cu128: 'undefined symbol: {CXX}'"
    )
    assert problem.fix == (
        'pip install "torch==2.9.*" --index-url https://download.pytorch.org/whl/cu128'
    )
    assert doctor(tmp_path, TORCH="2.9.1+cpu").problems == ()


def test_the_torch_a_label_names_and_its_cxx11_abi(tmp_path: Path) -> None:
    so = make_elf(needed=("libc10.so",), undefined=(CXX,))
    install(tmp_path, "pkg", "1.0+cu12torch2.8cxx11abiFALSE", files={EXT: so})
    package = doctor(tmp_path)
    assert (package.torch.built, package.torch.built_from) == ("2.8", "local version label")
    (problem,) = package.problems
    assert "built for cxx11abi=False" in problem.message and "cxx11abi=True" in problem.message
    assert doctor(tmp_path, TORCH_CXX11ABI="0").problems == ()


def test_stable_torch_abi_needs_that_torch_or_newer(tmp_path: Path) -> None:
    so = make_elf(needed=("libtorch.so",), undefined=(SHIM,))
    install(tmp_path, "pkg", "1.0", files={EXT: so}, requires=["torch>=2.9"])
    (problem,) = doctor(tmp_path).problems
    assert problem.message.endswith(f"installed torch is 2.8.0+cu128: 'undefined symbol: {SHIM}'")
    assert doctor(tmp_path, TORCH="2.11.0").problems == ()
    (missing,) = doctor(tmp_path, TORCH="none").problems
    assert missing.message == (
        "built for torch>=2.9 (stable ABI) but torch is not installed: "
        "'libtorch.so: cannot open shared object file'"
    )
    assert missing.fix == 'pip install "torch>=2.9"'


def test_a_torch_bridge_the_package_does_not_require_is_no_problem(tmp_path: Path) -> None:
    files = {EXT: cuda_elf(sass=["90"]), "pkg/_torch_bridge.abi3.so": make_elf(undefined=(SHIM,))}
    install(tmp_path, "pkg", "1.0", files=files)
    package = doctor(tmp_path, TORCH="none")
    assert package.problems == () and package.torch.abi == "stable"
    assert "does not require torch" in package.torch.reason


def test_a_package_whose_every_object_links_torch_needs_it_said_or_not(tmp_path: Path) -> None:
    """fbgemm-gpu 1.9.0 names no torch in its METADATA; every one of its objects links it."""
    install(tmp_path, "pkg", "1.0", files={EXT: make_elf(needed=("libc10.so",), undefined=(SHIM,))})
    (problem,) = doctor(tmp_path, TORCH="none").problems
    assert problem.area == "torch" and "but torch is not installed" in problem.message


def test_a_cuda_runtime_newer_than_the_driver(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0+cu130", files={EXT: cuda_elf(sass=["90"])})
    package = doctor(tmp_path, DRIVER_CUDA="12.8")
    assert [(lib.soname, lib.cuda_major, lib.runs) for lib in package.libraries] == [
        ("libcudart.so.13", 13, False)
    ]
    (problem,) = package.problems
    assert problem.message == (
        "needs libcudart.so.13 (CUDA 13); the driver runs CUDA 12.8 at most: "
        "'CUDA driver version is insufficient for CUDA runtime version'"
    )
    assert problem.fix.startswith("upgrade the NVIDIA driver to 580 or newer (runs CUDA 13.x), or ")
    assert "a build for CUDA 12" in problem.fix
    by_version = doctor(tmp_path, CUDA_DRIVER_VERSION="570.124.06", DRIVER_CUDA="")
    assert "driver 570.124.06 runs CUDA 12.8 at most" in by_version.problems[0].message


def test_objects_for_several_cuda_majors_need_only_one_to_run(tmp_path: Path) -> None:
    files = {
        "pkg/cu12/_m.abi3.so": cuda_elf(sass=["90"], needed=("libcudart.so.12",)),
        "pkg/cu13/_m.abi3.so": cuda_elf(sass=["90"], needed=("libcublas.so.13",)),
    }
    install(tmp_path, "pkg", "1.0", files=files)
    package = doctor(tmp_path, DRIVER_CUDA="12.8")
    assert [lib.runs for lib in package.libraries] == [True, False]
    assert package.problems == ()
    assert any("libcublas.so.13" in note for note in package.notes)


def test_a_glibc_newer_than_the_systems(tmp_path: Path) -> None:
    tags = ("cp311-cp311-manylinux_2_34_x86_64", "cp311-cp311-manylinux_2_35_x86_64")
    install(tmp_path, "pkg", "1.0", files={EXT: make_elf()}, tags=tags)
    package = doctor(tmp_path)
    assert (package.glibc.needed, package.glibc.system, package.glibc.ok) == ("2.34", "2.31", False)
    (problem,) = package.problems
    assert problem.message == (
        "its wheel is tagged cp311-cp311-manylinux_2_34_x86_64: needs glibc 2.34; this system "
        'has 2.31: "version `GLIBC_2.34\' not found"'
    )
    assert problem.fix.startswith('pip install --force-reinstall --no-deps "pkg==1.0"')


def test_legacy_manylinux_tags_and_tags_without_a_glibc_promise(tmp_path: Path) -> None:
    install(
        tmp_path, "old", "1.0", files={EXT: make_elf()}, tags=["cp311-cp311-manylinux2014_x86_64"]
    )
    install(tmp_path, "local", "1.0", files={EXT: make_elf()}, tags=["cp311-cp311-linux_x86_64"])
    old = doctor(tmp_path, "old")
    assert (old.glibc.needed, old.glibc.ok) == ("2.17", True)
    local = doctor(tmp_path, "local")
    assert (local.glibc.needed, local.glibc.ok, local.problems) == (None, None, ())


def test_a_clean_install_exits_0(tmp_path: Path) -> None:
    so = cuda_elf(sass=["80", "90a"], ptx=["100"], needed=("libcudart.so.13", "libtorch.so"))
    install(tmp_path, "pkg", "1.0+cu130torch2.8", files={EXT: so}, requires=["torch>=2.8"])
    install(tmp_path, "plain", "2.0", files={"plain/_x.abi3.so": make_elf()})
    install(tmp_path, "pure", "3.0")
    report = diagnose(paths=[tmp_path], machine=machine({settings.GPUS: "H100,RTX 5090"}))
    assert [p.name for p in report.packages] == ["pkg", "plain"]  # pure has no shared object
    pkg = report.packages[0]
    assert [(g.gpu, g.runs, g.arches) for g in pkg.gpus] == [
        ("H100", "sass", ("sm_90a",)),
        ("RTX 5090", "ptx", ("compute_100",)),
    ]
    assert (pkg.torch.abi, pkg.torch.ok, pkg.glibc.ok) == ("stable", True, True)
    assert report.problems == () and report.exit_code == 0
    assert report.scanned == 3
    assert report.to_json()["packages"][0]["gpus"][0]["runs"] == "sass"


def test_cuship_provenance_names_the_variant_and_the_fix(tmp_path: Path) -> None:
    written = {  # as cuship.backend writes it (cuship.resolve.provenance)
        "schema": 1,
        "name": "pkg",
        "version": "1.0",
        "why": "fits this machine",
        "kind": "prebuilt",
        "filename": "pkg-1.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl",
        "label": "cu130",
        "index": "http://127.0.0.1:8000/simple",
        "sha256": "0" * 64,
    }
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["80"])}, cuship_json=written)
    package = doctor(tmp_path)
    provenance = package.provenance
    assert (provenance.variant, provenance.variant_from) == ("cu130", "cuship.json")
    assert (provenance.filename, provenance.kind) == (written["filename"], "prebuilt")
    (problem,) = package.problems
    assert problem.fix == "cuship install pkg --index http://127.0.0.1:8000/simple"


def test_a_wheel_from_anywhere_with_a_label_cuship_cannot_read(tmp_path: Path) -> None:
    url = {"url": "https://github.com/x/pkg/releases/download/v1/pkg.whl", "archive_info": {}}
    so = cuda_elf(sass=["90"], needed=("libcudart.so.12", "libc10.so"), undefined=(CXX,))
    install(tmp_path, "pkg", "1.0+pt28cu124", files={EXT: so}, direct_url=url)
    package = doctor(tmp_path)
    assert package.provenance.variant == "pt28cu124" and package.provenance.url == url["url"]
    assert package.torch.ok is None and "unknown" in package.torch.reason
    assert package.problems == ()


def test_a_missing_or_damaged_shared_object_is_a_problem(tmp_path: Path) -> None:
    install(
        tmp_path,
        "pkg",
        "1.0",
        files={EXT: cuda_elf(sass=["90"])[:100]},
        record_only=["pkg/_gone.abi3.so"],
    )
    package = doctor(tmp_path)
    assert areas(package) == ["files", "files"]
    assert "pkg/_gone.abi3.so: listed in RECORD but missing" in package.problems[1].message
    assert package.problems[1].fix == 'pip install --force-reinstall --no-deps "pkg==1.0"'


def test_no_gpu_and_no_driver_are_notes_not_problems(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    package = doctor(tmp_path, GPUS="none", DRIVER_CUDA="")
    assert package.problems == () and package.gpus == ()
    assert any(note.startswith("no GPU here") for note in package.notes)
    assert any(note.startswith("no NVIDIA driver here") for note in package.notes)


def test_a_named_package_that_is_not_installed_is_a_usage_error(tmp_path: Path) -> None:
    install(tmp_path, "flash-attn", "2.8.3")
    with pytest.raises(UsageError, match="'flash-atn' is not installed on") as caught:
        diagnose(["flash-atn"], paths=[tmp_path], machine=machine())
    assert caught.value.hint is not None
    assert "did you mean flash-attn?" in caught.value.hint
    assert 'pip install "flash-atn"' in caught.value.hint


def test_editable_installs_are_named_as_not_checked_and_names_count_once(tmp_path: Path) -> None:
    editable = {"url": "file:///src/dev", "dir_info": {"editable": True}}
    install(tmp_path, "dev-pkg", "0.1", direct_url=editable)
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    report = diagnose(paths=[tmp_path], machine=machine())
    assert [p.name for p in report.packages] == ["pkg"]
    (skipped,) = report.skipped
    assert skipped.name == "dev-pkg" and skipped.reason.startswith("an editable install")
    named = diagnose(["pkg", "PKG", "Pkg"], paths=[tmp_path], machine=machine())
    assert [p.name for p in named.packages] == ["pkg"]


def test_nothing_with_compiled_code_is_nothing_to_do(tmp_path: Path) -> None:
    install(tmp_path, "pure", "3.0")
    with pytest.raises(NothingToDo, match="pure: no compiled code"):
        diagnose(["pure"], paths=[tmp_path], machine=machine())
    with pytest.raises(NothingToDo, match=r"looked at 1\)"):
        diagnose(paths=[tmp_path], machine=machine())


def test_the_report_carries_the_machine(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_elf(sass=["90"])})
    report: DoctorReport = diagnose(["pkg"], paths=[tmp_path], machine=machine())
    doc = report.to_json()
    assert doc["machine"]["gpus"] == [{"name": "H100", "cc": "9.0"}]
    assert (doc["machine"]["driver_cuda"], doc["machine"]["torch"]) == ("13.0", "2.8.0+cu128")
    assert (doc["problems"], doc["exit_code"]) == (0, 0)


# --- the command ---------------------------------------------------------------------------


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site directory first on sys.path, on the fake machine BASE."""
    monkeypatch.syspath_prepend(str(tmp_path))
    for key, value in BASE.items():
        monkeypatch.setenv(key, value)
    return tmp_path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from cuship.cli import main

    code = main(["doctor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_prints_one_line_per_problem_with_its_fix(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(on_path, "doc-fake-a", "1.0+cu130", files={EXT: cuda_elf(sass=["80"])})
    install(on_path, "doc-fake-b", "2.0", files={"b/_C.abi3.so": cuda_elf(ptx=["80"])})
    code, out, _ = run(["doc-fake-a", "doc-fake-b"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(
        "this machine: GPUs H100 (9.0) [override] · driver unknown (CUDA 13.0)"
    )
    assert "doc-fake-a 1.0+cu130  variant cu130 (local version label)" in lines
    assert "  objects  1 shared object; SASS sm_80" in lines
    assert "  gpu      H100 (9.0): nothing it can run (no kernel image)" in lines
    assert "  gpu      H100 (9.0): JIT from PTX (compute_80; slow first launch)" in lines
    assert (
        "  cuda     needs libcudart.so.13 (CUDA 13): ok, from CUSHIP_CUDA_LIBS (CUDA 13)" in lines
    )
    problem = [line for line in lines if line.startswith("  PROBLEM")]
    assert problem == [
        f"  PROBLEM  [gpu] H100 (9.0): {EXT} carries no SASS or PTX it can run (it has sm_80): "
        "'no kernel image is available for execution on the device'"
    ]
    fix = lines[lines.index(problem[0]) + 1]
    assert fix.startswith('     fix   pip install --force-reinstall --no-deps "doc-fake-a==1.0"')
    assert lines[-1].startswith("2 distributions with compiled code checked (of 2 looked at)")
    assert lines[-1].endswith(": 1 problem")


def test_the_command_json_and_exit_0_when_clean(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    install(on_path, "doc-fake-c", "1.0", files={EXT: cuda_elf(sass=["90"])})
    code, out, _ = run(["doc-fake-c", "--json"], capsys)
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["problems"]) == (0, 0, 0)
    assert doc["packages"][0]["gpus"] == [
        {
            "gpu": "H100",
            "cc": "9.0",
            "runs": "sass",
            "arches": ["sm_90"],
            "objects": [],
            "partial": [],
        }
    ]


def test_the_command_exit_codes_for_bad_names_and_nothing_to_check(
    on_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(on_path, "doc-fake-pure", "1.0")
    code, out, err = run(["doc-fake-nope"], capsys)
    assert (code, out) == (2, "")
    assert "error: 'doc-fake-nope' is not installed for this interpreter" in err
    assert 'pip install "doc-fake-nope"' in err and "Traceback" not in err
    code, _, err = run(["doc-fake-pure"], capsys)
    assert code == 4 and "no compiled code" in err
