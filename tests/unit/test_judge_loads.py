"""The judge loading installed packages as ld.so would, on machines described by CUSHIP_*
variables whose files are real (synthetic libraries written to a temporary site): libraries by
RUNPATH, symbols bound or not (named, demangled, with the library expected), libraries opened at
run time, static runtimes, PTX ISA versions and NVIDIA wheel directories held to the driver, and
the one partial-fit rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cuship import settings
from cuship.doctor import PackageReport, diagnose
from cuship.machine import fingerprint
from tests.elf_factory import fatbin
from tests.elf_library import shared_library
from tests.site_factory import install

EXT = "pkg/_C.cpython-311-x86_64-linux-gnu.so"
CXX = "_ZN3c104cuda19CUDAErrorLogCaptureC1Ev"
FOO = "_ZN3foo3barEv"


def machine_env(**changes: str | None) -> dict[str, str]:
    """H100, driver 580, no torch, no loader cache; a change of None removes the variable."""
    env = {
        settings.GPUS: "H100:9.0",
        settings.CUDA_DRIVER_VERSION: "580.65.06",
        settings.TORCH: "none",
        settings.LD_CACHE: "none",
        "PATH": "/nonexistent",
    }
    for key, value in changes.items():
        name = getattr(settings, key, key)
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def doctor(
    site: Path,
    name: str = "pkg",
    demangle: object = None,
    **changes: str | None,
) -> PackageReport:
    fp = fingerprint(machine_env(**changes), toolkit=False, site_dirs=[str(site)])
    report = diagnose([name], paths=[site], machine=fp, demangle=demangle)  # type: ignore[arg-type]
    return report.packages[0]


def failing(package: PackageReport) -> list[str]:
    return [f"[{p.area}] {p.message}" for p in package.problems]


def cuda_object(**kw: object) -> bytes:
    sass = kw.pop("sass", ("90",))
    ptx = kw.pop("ptx", ())
    isa = kw.pop("isa", "9.0")
    sections = {".nv_fatbin": fatbin(sass=sass, ptx=ptx, isa=isa)}  # type: ignore[arg-type]
    return shared_library(sections=sections, **kw)  # type: ignore[arg-type]


def test_a_library_found_through_runpath_and_an_undefined_symbol_named(tmp_path: Path) -> None:
    files = {
        EXT: cuda_object(needed=["libdep.so"], runpath="$ORIGIN/lib", imports=["have", FOO]),
        "pkg/lib/libdep.so": shared_library(soname="libdep.so", defines=["have"]),
    }
    install(tmp_path, "pkg", "1.0", files=files)

    def readable(names: Sequence[str]) -> list[str]:
        return ["foo::bar()" for _ in names]

    package = doctor(tmp_path, demangle=readable)
    loads = {load.path: load for load in package.loads}
    assert loads["pkg/lib/libdep.so"].loads is True
    load = loads[EXT]
    assert load.loads is False and load.unbound_count == 1
    assert dict(load.libraries)["libdep.so"].endswith("pkg/lib/libdep.so (DT_RUNPATH $ORIGIN/lib)")
    (problem,) = failing(package)
    assert problem.startswith(f"[libraries] 1 of 2 objects do not load ({EXT}): ")
    assert f"'undefined symbol: foo::bar() ({FOO})' (1 undefined; expected from" in problem
    plain = doctor(tmp_path)
    assert f"{FOO} (mangled: no c++filt here)" in failing(plain)[0]


def test_a_library_from_nowhere_that_is_neither_nvidia_nor_torch_fails(tmp_path: Path) -> None:
    install(tmp_path, "pkg", "1.0", files={EXT: cuda_object(needed=["libavcodec.so.60"])})
    (problem,) = failing(doctor(tmp_path))
    assert problem.startswith(f"[libraries] {EXT} needs libavcodec.so.60, which nothing here")
    assert "'libavcodec.so.60: cannot open shared object file" in problem


def test_an_optional_arch_specific_object_that_does_not_load_is_a_partial_fit(
    tmp_path: Path,
) -> None:
    files = {
        EXT: cuda_object(sass=("80", "90")),
        "pkg/_C_90a.abi3.so": cuda_object(sass=("90a",), needed=["libmissing.so.1"]),
    }
    install(tmp_path, "pkg", "1.0", files=files)
    package = doctor(tmp_path)
    assert package.problems == ()
    note = next(n for n in package.notes if "libmissing.so.1" in n)
    assert "(optional: built for one GPU generation only (sm_90a))" in note


def test_nvidia_libraries_opened_at_run_time_are_looked_for(tmp_path: Path) -> None:
    """ctranslate2 4.8.5: no CUDA DT_NEEDED; it imports dlopen and names libcublas.so.12."""
    obj = cuda_object(imports=["dlopen"], rodata=b"\0libcublas.so.12\0libcuda.so.1\0", sass=("80",))
    install(tmp_path, "pkg", "1.0", files={EXT: obj})
    a100 = {"GPUS": "A100:8.0"}
    missing = doctor(tmp_path, CUDA_LIBS="13", **a100)
    (problem,) = failing(missing)
    assert f"{EXT} opens libcublas.so.12 at run time (dlopen)" in problem
    assert "'libcublas.so.12: cannot open shared object file" in problem
    there = doctor(tmp_path, CUDA_LIBS="12", **a100)
    assert there.problems == ()
    assert dict(there.loads[0].opens)["libcublas.so.12"] == "CUSHIP_CUDA_LIBS (CUDA 12)"
    no_gpu = doctor(tmp_path, CUDA_LIBS="13", GPUS="none", CUDA_DRIVER_VERSION="")
    assert no_gpu.problems == () and any("libcublas.so.12" in n for n in no_gpu.notes)


def test_a_static_runtime_is_held_to_the_driver(tmp_path: Path) -> None:
    """A static CUDA 12.8 runtime (its PTX is ISA 8.7) on driver 470 (CUDA 11.4)."""
    obj = cuda_object(sass=("80",), ptx=("80",), isa="8.7", rodata=b"/cudart.shm.%x\0")
    install(tmp_path, "pkg", "1.0", files={EXT: obj})
    (problem,) = failing(doctor(tmp_path, GPUS="A100:8.0", CUDA_DRIVER_VERSION="470.256.02"))
    assert (
        "links a CUDA runtime statically of CUDA 12.8 (its PTX is ISA 8.7, from CUDA 12.8)"
        in problem
    )
    assert "'CUDA driver version is insufficient for CUDA runtime version'" in problem
    assert doctor(tmp_path, GPUS="A100:8.0", CUDA_DRIVER_VERSION="535.104.05").problems == ()


def test_ptx_is_jit_compiled_only_up_to_the_isa_the_driver_knows(tmp_path: Path) -> None:
    """PTX ISA 8.5 (CUDA 12.5 and 12.6) on driver 535, whose JIT stops at ISA 8.2."""
    obj = cuda_object(sass=(), ptx=("52",), isa="8.5", needed=["libcudart.so.12"])
    install(tmp_path, "pkg", "1.0", files={EXT: obj})
    old = doctor(tmp_path, CUDA_LIBS="12", CUDA_DRIVER_VERSION="535.104.05", GPUS="A100:8.0")
    (problem,) = failing(old)
    assert f"must JIT the PTX of {EXT}, ISA 8.5 (CUDA 12.5)" in problem
    assert "whose JIT takes ISA 8.2 at most" in problem and problem.startswith("[cuda]")
    new = doctor(tmp_path, CUDA_LIBS="12", CUDA_DRIVER_VERSION="560.28.03", GPUS="A100:8.0")
    assert new.problems == ()


def test_an_nvidia_wheel_directory_in_runpath_names_the_cuda_it_needs(tmp_path: Path) -> None:
    """jax-cuda13-plugin: no CUDA DT_NEEDED, RUNPATH $ORIGIN/../nvidia/cu13/lib, dlopen."""
    obj = cuda_object(
        runpath="$ORIGIN/../nvidia/cu13/lib", imports=["dlopen"], rodata=b"libcuda.so.1\0"
    )
    install(tmp_path, "pkg", "1.0", files={EXT: obj})
    nowhere = doctor(tmp_path)
    assert any(
        "CUDA 13's libraries (looked for in $ORIGIN/../nvidia/cu13/lib)" in p
        for p in failing(nowhere)
    )
    old = doctor(tmp_path, CUDA_DRIVER_VERSION="575.57.08")
    assert any(
        "looks for CUDA 13's libraries in $ORIGIN/../nvidia/cu13/lib" in p for p in failing(old)
    )
    (tmp_path / "nvidia/cu13/lib").mkdir(parents=True)
    (tmp_path / "nvidia/cu13/lib/libcublas.so.13").write_bytes(
        shared_library(soname="libcublas.so.13")
    )
    there = doctor(tmp_path)
    assert there.problems == ()
    assert any("by names it builds then" in line for line in there.unchecked)


def test_torch_symbols_bind_against_the_installed_torchs_files(tmp_path: Path) -> None:
    """fbgemm-gpu 1.9.0 beside torch 2.13: no torch pin; the binding is the fact."""
    torch_files = {
        "torch/version.py": b"__version__ = '2.13.0+cpu'\ncuda = None\n",
        "torch/lib/libtorch_global_deps.so": shared_library(soname="libtorch_global_deps.so"),
        "torch/_C.cpython-311-x86_64-linux-gnu.so": shared_library(
            soname="_C.so", needed=["libc10.so"], rpath="$ORIGIN/lib"
        ),
        "torch/lib/libc10.so": shared_library(soname="libc10.so", defines=["_ZN3c105ErrorC1Ev"]),
    }
    install(tmp_path, "torch", "2.13.0+cpu", files=torch_files)
    ext = shared_library(needed=["libc10.so"], imports=["_ZN3c105ErrorC1Ev"])
    install(tmp_path, "pkg", "1.0", files={EXT: ext})
    fits = doctor(tmp_path, TORCH=None)
    assert fits.problems == () and fits.torch.ok is True
    assert "bind to" in fits.torch.reason
    (tmp_path / EXT).write_bytes(shared_library(needed=["libc10.so"], imports=[CXX]))
    broken = doctor(tmp_path, TORCH=None)
    (problem,) = failing(broken)
    assert problem.startswith("[torch] 1 of 1 objects do not load") and CXX in problem


def test_a_library_in_a_directory_ld_so_conf_names_but_the_cache_lacks(tmp_path: Path) -> None:
    """ld.so reads only the cache ldconfig wrote: a directory added to ld.so.conf afterwards
    is not searched, and doctor says to run ldconfig."""
    from cuship.doctor import diagnose

    install(tmp_path, "pkg", "1.0", files={EXT: cuda_object(needed=["libextra.so.1"])})
    libs = tmp_path / "opt" / "lib"
    libs.mkdir(parents=True)
    (libs / "libextra.so.1").write_bytes(shared_library(soname="libextra.so.1"))
    fp = fingerprint(machine_env(), toolkit=False, site_dirs=[str(tmp_path)])
    assert fp.loader is not None
    machine = replace(fp, loader=replace(fp.loader, conf_dirs=(str(libs),)))
    (package,) = diagnose(["pkg"], paths=[tmp_path], machine=machine).packages
    (problem,) = failing(package)
    assert f"(libextra.so.1 is in {libs}, which ld.so.conf names but the loader cache" in problem
    assert problem.endswith("run ldconfig)")


def test_libraries_from_nvidia_wheel_directories_before_an_install() -> None:
    """jax-cuda13-plugin judged from its record: it opens CUDA 13's libraries from
    $ORIGIN/../nvidia/cu13/lib; its own [with-cuda] extra brings them."""
    from cuship.judge import Context, ObjectNeeds, Offer, WheelNeeds, judge
    from cuship.machine.libraries import parse_override

    obj = ObjectNeeds(
        path="jax_cuda13_plugin/_linalg.so",
        role="extension",
        sass=("90",),
        ptx_isa=("9.0",),
        rpath=("$ORIGIN/../nvidia/cu13/lib",),
        opens=(),
    )
    extra = 'sys_platform == "linux" and extra == "with-cuda"'
    requires = (f"nvidia-cublas>=13.0.0.19; {extra}", f"nvidia-cuda-runtime>=13.0.48; {extra}")
    needs = WheelNeeds(
        name="jax-cuda13-plugin", version="0.10.2", objects=(obj,), requires=requires
    )
    offer = Offer(
        gpus=(("H100", "9.0"),),
        driver_version="580.65.06",
        driver_cuda="13.0",
        libraries=parse_override("none"),
    )
    plain = judge(needs, offer, context=Context(installing=True))
    (failure,) = plain.failures
    assert (
        "opens CUDA 13's libraries at run time from $ORIGIN/../nvidia/cu13/lib" in failure.message
    )
    assert failure.fix == 'pip install "jax-cuda13-plugin[with-cuda]"'
    with_cuda = Context(installing=True, extras=frozenset({"with-cuda"}))
    assert judge(needs, offer, context=with_cuda).fits
    there = replace(offer, libraries=parse_override("13"))
    assert judge(needs, there, context=Context(installing=True)).fits


def test_libraries_of_another_cuda_do_not_stand_in_for_a_wheel_directory(tmp_path: Path) -> None:
    """jax-cuda12-plugin (nvidia/cublas/lib: no major in the name; PTX ISA 8.8, CUDA 12.9)
    beside CUDA 13's libraries only: libcurand.so.10, in both, is no CUDA 12 library."""
    obj = cuda_object(
        sass=("90",),
        ptx=("90",),
        isa="8.8",
        rpath="$ORIGIN/../nvidia/cublas/lib",
        imports=["dlopen"],
    )
    install(tmp_path, "pkg", "1.0", files={EXT: obj})
    cuda13 = tmp_path / "cuda13"
    cuda13.mkdir()
    for soname in ("libcurand.so.10", "libcudart.so.13"):
        (cuda13 / soname).write_bytes(shared_library(soname=soname))
    (problem,) = failing(doctor(tmp_path, LD_LIBRARY_PATH=str(cuda13)))
    assert "opens CUDA 12's libraries (looked for in $ORIGIN/../nvidia/cublas/lib)" in problem
    (cuda13 / "libcublas.so.12").write_bytes(shared_library(soname="libcublas.so.12"))
    assert doctor(tmp_path, LD_LIBRARY_PATH=str(cuda13)).problems == ()
