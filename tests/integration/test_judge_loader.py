"""The judge's emulation of ld.so held to the real one: shared objects built by gcc (DT_RUNPATH
with $ORIGIN, DT_RPATH, versioned symbols from a version script, weak symbols, one symbol no
library defines) installed in a site directory, each one judged by ``cuship doctor`` and loaded
for real with ``ctypes.CDLL`` (dlopen, RTLD_NOW) in a fresh interpreter: the same verdict, the
same library found, the same symbol missing. Also this host's /etc/ld.so.cache read against
``ldconfig -p``, and C++ names demangled through c++filt."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cuship.doctor import demangler, diagnose
from cuship.machine import fingerprint
from cuship.machine.ldcache import parse_cache
from tests.site_factory import install

GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not installed: nothing to build")


def _gcc(out: Path, source: str, *flags: str) -> bytes:
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(".c")
    src.write_text(source)
    assert GCC is not None
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site with package ``ldpkg``: four extensions and the library they need."""
    build = tmp_path_factory.mktemp("build")
    version_script = build / "dep.map"
    version_script.write_text(
        "DEP_1 { global: dep_v1; local: *; };\nDEP_2 { global: dep_v2; } DEP_1;\n"
    )
    dep = _gcc(
        build / "libdep.so",
        "int dep_v1(void){return 1;}\nint dep_v2(void){return 2;}\n",
        "-Wl,-soname,libdep.so",
        f"-Wl,--version-script={version_script}",
    )
    lib = f"-L{build}"
    uses = "extern int dep_v2(void);\nint use(void){return dep_v2();}\n"
    files = {
        "ldpkg/lib/libdep.so": dep,
        # found through DT_RUNPATH $ORIGIN/lib; binds dep_v2@DEP_2
        "ldpkg/_runpath.so": _gcc(
            build / "r.so", uses, lib, "-ldep", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib"
        ),
        # found through DT_RPATH (no RUNPATH)
        "ldpkg/_rpath.so": _gcc(
            build / "p.so", uses, lib, "-ldep", "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/lib"
        ),
        # no search path: libdep.so is nowhere the loader looks
        "ldpkg/_lost.so": _gcc(build / "l.so", uses, lib, "-ldep"),
        # a weak symbol nobody defines loads; a strong one does not
        "ldpkg/_weak.so": _gcc(
            build / "w.so",
            "extern int gone(void) __attribute__((weak));\n"
            "int use(void){return gone ? gone() : 0;}\n",
        ),
        "ldpkg/_undefined.so": _gcc(
            build / "u.so", "extern int nowhere_fn(void);\nint use(void){return nowhere_fn();}\n"
        ),
    }
    root = tmp_path_factory.mktemp("site")
    install(root, "ldpkg", "1.0", files=files)
    return root


_LOAD = """
import ctypes, json, sys
out = {}
for path in sys.argv[2:]:
    try:
        ctypes.CDLL(sys.argv[1] + "/" + path)
        out[path] = None
    except OSError as err:
        out[path] = str(err)
print(json.dumps(out))
"""


def test_doctor_loads_what_dlopen_loads_and_names_what_it_does_not(site: Path) -> None:
    machine = fingerprint(
        {"CUSHIP_GPUS": "none", "PATH": "/nonexistent"}, toolkit=False, site_dirs=[str(site)]
    )
    (package,) = diagnose(["ldpkg"], paths=[site], machine=machine).packages
    ours = {load.path: load for load in package.loads}
    paths = sorted(ours)
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(site), *paths],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    real = json.loads(done.stdout)
    assert {p: ours[p].loads for p in paths} == {p: real[p] is None for p in paths}, real
    assert real["ldpkg/_lost.so"] is not None and "libdep.so" in real["ldpkg/_lost.so"]
    assert ours["ldpkg/_lost.so"].missing == ("libdep.so",)
    assert "nowhere_fn" in str(real["ldpkg/_undefined.so"])
    assert ours["ldpkg/_undefined.so"].unbound == ("nowhere_fn",)
    runpath = dict(ours["ldpkg/_runpath.so"].libraries)["libdep.so"]
    assert runpath.endswith("ldpkg/lib/libdep.so (DT_RUNPATH $ORIGIN/lib)")
    assert (
        "DT_RPATH of _rpath.so $ORIGIN/lib" in dict(ours["ldpkg/_rpath.so"].libraries)["libdep.so"]
    )
    assert len(package.problems) == 2  # libdep.so from nowhere, nowhere_fn undefined


def test_a_version_the_library_lacks_fails_as_ld_so_says(tmp_path: Path) -> None:
    build = tmp_path / "build"
    script = build / "v.map"
    build.mkdir()
    script.write_text("DEP_1 { global: dep_v1; local: *; };\nDEP_2 { global: dep_v2; } DEP_1;\n")
    new = _gcc(
        build / "libdep.so",
        "int dep_v1(void){return 1;}\nint dep_v2(void){return 2;}\n",
        "-Wl,-soname,libdep.so",
        f"-Wl,--version-script={script}",
    )
    user = _gcc(
        build / "user.so",
        "extern int dep_v2(void);\nint use(void){return dep_v2();}\n",
        f"-L{build}",
        "-ldep",
        "-Wl,--enable-new-dtags",
        "-Wl,-rpath,$ORIGIN/lib",
    )
    script.write_text("DEP_1 { global: dep_v1; local: *; };\n")
    old = _gcc(
        build / "old.so",
        "int dep_v1(void){return 1;}\n",
        "-Wl,-soname,libdep.so",
        f"-Wl,--version-script={script}",
    )
    assert new != old
    install(
        tmp_path / "site",
        "verpkg",
        "1.0",
        files={"verpkg/_u.so": user, "verpkg/lib/libdep.so": old},
    )
    site = tmp_path / "site"
    machine = fingerprint(
        {"CUSHIP_GPUS": "none", "PATH": "/nonexistent"}, toolkit=False, site_dirs=[str(site)]
    )
    (package,) = diagnose(["verpkg"], paths=[site], machine=machine).packages
    load = next(x for x in package.loads if x.path == "verpkg/_u.so")
    real = subprocess.run(
        [sys.executable, "-c", _LOAD, str(site), "verpkg/_u.so"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    said = json.loads(real.stdout)["verpkg/_u.so"]
    assert said is not None and "version `DEP_2' not found" in said
    assert load.loads is False
    assert load.versions == ("libdep.so: version `DEP_2' not found (required by _u.so)",)


def test_a_grafted_library_loads_through_the_extension_that_links_it(tmp_path: Path) -> None:
    """auditwheel's layout (faiss-gpu-cu12): ``_ext.so`` has DT_RPATH $ORIGIN/../graft.libs and
    links ``libmain-1.so`` there, which links ``libblas-2.so`` beside it with no search path of
    its own. ld.so finds libblas through the RPATH of the object that loads libmain, so the
    extension loads; libmain opened alone does not, and Python never opens it alone."""
    build = tmp_path / "build"
    blas = _gcc(build / "libblas-2.so", "int blas(void){return 2;}\n", "-Wl,-soname,libblas-2.so")
    main = _gcc(
        build / "libmain-1.so",
        "extern int blas(void);\nint main_fn(void){return blas();}\n",
        f"-L{build}",
        "-l:libblas-2.so",
        "-Wl,-soname,libmain-1.so",
    )
    ext = _gcc(
        build / "_ext.so",
        "extern int main_fn(void);\nint use(void){return main_fn();}\n",
        f"-L{build}",
        "-l:libmain-1.so",
        "-Wl,--disable-new-dtags",
        "-Wl,-rpath,$ORIGIN/../graft.libs",
    )
    site = tmp_path / "site"
    files = {"graft/_ext.so": ext, "graft.libs/libmain-1.so": main, "graft.libs/libblas-2.so": blas}
    install(site, "graft", "1.0", files=files)
    real = subprocess.run(
        # libmain first: once _ext.so loaded it, a dlopen of it finds it loaded
        [sys.executable, "-c", _LOAD, str(site), "graft.libs/libmain-1.so", "graft/_ext.so"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    said = json.loads(real.stdout)
    assert said["graft/_ext.so"] is None  # loads: libblas found through _ext.so's DT_RPATH
    assert (
        said["graft.libs/libmain-1.so"] is not None
        and "libblas-2.so" in said["graft.libs/libmain-1.so"]
    )  # alone it does not
    machine = fingerprint(
        {"CUSHIP_GPUS": "none", "PATH": "/nonexistent"}, toolkit=False, site_dirs=[str(site)]
    )
    (package,) = diagnose(["graft"], paths=[site], machine=machine).packages
    loads = {load.path: load.loads for load in package.loads}
    assert loads["graft/_ext.so"] is True
    assert loads["graft.libs/libmain-1.so"] is True  # loaded through _ext.so
    assert package.problems == ()
    (site / "graft.libs" / "libblas-2.so").unlink()  # now _ext.so's dlopen fails
    (broken,) = diagnose(["graft"], paths=[site], machine=machine).packages
    after = {load.path: load.loads for load in broken.loads}
    assert after["graft/_ext.so"] is False and after["graft.libs/libmain-1.so"] is False


@pytest.mark.skipif(
    shutil.which("ldconfig") is None and not Path("/sbin/ldconfig").exists(),
    reason="ldconfig is not installed",
)
def test_this_hosts_loader_cache_reads_as_ldconfig_prints_it() -> None:
    path = Path("/etc/ld.so.cache")
    if not path.exists():
        pytest.skip("this host has no /etc/ld.so.cache")
    cache = parse_cache(path.read_bytes())
    assert cache is not None
    tool = shutil.which("ldconfig") or "/sbin/ldconfig"
    listing = subprocess.run([tool, "-p"], capture_output=True, text=True, check=True).stdout
    expected: dict[str, str] = {}
    for line in listing.splitlines()[1:]:
        name, _, rest = line.strip().partition(" (")
        if "x86-64" in rest and "hwcap" not in rest:
            expected.setdefault(name, rest.rsplit("=> ", 1)[1])
    assert expected and {k: cache.where(k) for k in expected} == expected


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="binutils' c++filt is not installed")
def test_mangled_names_read_through_cxxfilt() -> None:
    demangle = demangler()
    assert demangle is not None
    assert list(demangle(["_ZN3c104cuda19CUDAErrorLogCaptureC1Ev", "plain_c"])) == [
        "c10::cuda::CUDAErrorLogCapture::CUDAErrorLogCapture()",
        "plain_c",
    ]
