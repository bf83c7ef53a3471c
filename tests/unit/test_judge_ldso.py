"""The loader emulation on synthetic libraries held in memory: how a name is found (the order of
data/loader.toml, after glibc's _dl_map_object) and how symbols bind (RTLD_NOW), each rule held
to what man 8 ld.so and glibc's sources say."""

from __future__ import annotations

import pytest

from cuship.judge.ldso.bind import bind
from cuship.judge.ldso.process import Node, Process, expand, node_of
from cuship.judge.ldso.scope import base_process
from cuship.judge.offer import TorchBuild
from cuship.machine.ldcache import LdCache
from cuship.machine.loader import LoaderView, loader_rules
from tests.elf_library import MemoryFiles, shared_library


def view(files: dict[str, bytes], **changes: object) -> LoaderView:
    base: dict[str, object] = {
        "default_dirs": ("/lib", "/usr/lib"),
        "lib": "lib64",
        "platform": "x86_64",
        "files": MemoryFiles(files),
    }
    base.update(changes)
    return LoaderView(**base)  # type: ignore[arg-type]


def load(v: LoaderView, path: str) -> tuple[Process, list[Node]]:
    process = Process(v)
    facts = v.files.library(path)
    assert facts is not None
    order = process.load(node_of(facts, path=path, name=path, how="test"))
    return process, order


def where(order: list[Node], name: str) -> str | None:
    found = next((n for n in order if name in (n.soname, n.name) or name in n.names), None)
    return None if found is None else found.path


def lib(soname: str, **kw: object) -> bytes:
    return shared_library(soname=soname, **kw)  # type: ignore[arg-type]


def test_every_search_rule_names_its_source() -> None:
    rules = loader_rules()
    assert [s.step for s in rules.search] == [
        "loaded",
        "path",
        "rpath",
        "library_path",
        "runpath",
        "cache",
        "default",
    ]
    sources = [r.source for r in rules.search] + [r.source for r in rules.token]
    sources += [r.source for r in rules.layout] + [r.source for r in rules.preload]
    sources += [r.source for r in rules.bind]
    assert all(source.strip() for source in sources)


def test_origin_lib_and_platform_expand_in_a_search_path() -> None:
    v = view({})
    assert expand("$ORIGIN/../lib", "/site/pkg", v) == "/site/lib"
    assert expand("${ORIGIN}/x/$LIB/${PLATFORM}", "/a", v) == "/a/x/lib64/x86_64"
    assert expand("$ORIGIN/lib", None, v) is None  # no directory to expand it with


def test_runpath_serves_only_the_objects_own_needs_and_rpath_the_whole_chain() -> None:
    """man 8 ld.so: DT_RUNPATH directories "do not apply to those objects' children";
    DT_RPATH "is applied to searches for all children in the dependency tree"."""
    files = {
        "/pkg/ext.so": lib("ext.so", needed=["libmid.so"], runpath="$ORIGIN/libs"),
        "/pkg/libs/libmid.so": lib("libmid.so", needed=["libleaf.so"]),
        "/pkg/libs/libleaf.so": lib("libleaf.so"),
    }
    process, order = load(view(files), "/pkg/ext.so")
    assert where(order, "libmid.so") == "/pkg/libs/libmid.so"
    assert [m.name for m in process.missing] == ["libleaf.so"]  # RUNPATH is not inherited
    files["/pkg/ext.so"] = lib("ext.so", needed=["libmid.so"], rpath="$ORIGIN/libs")
    process, order = load(view(files), "/pkg/ext.so")
    assert where(order, "libleaf.so") == "/pkg/libs/libleaf.so" and not process.missing


def test_rpath_is_ignored_when_the_object_has_a_runpath_too() -> None:
    files = {
        "/pkg/ext.so": lib("ext.so", needed=["libx.so"], rpath="/rp", runpath="/run"),
        "/rp/libx.so": lib("libx.so", defines=["from_rpath"]),
        "/run/libx.so": lib("libx.so", defines=["from_runpath"]),
    }
    _, order = load(view(files), "/pkg/ext.so")
    assert where(order, "libx.so") == "/run/libx.so"


def test_the_search_order_rpath_library_path_runpath_cache_defaults() -> None:
    files = {
        "/pkg/a.so": lib("a.so", needed=["libx.so"], rpath="/rp"),
        "/pkg/b.so": lib("b.so", needed=["libx.so"], runpath="/run"),
        "/rp/libx.so": lib("libx.so"),
        "/llp/libx.so": lib("libx.so"),
        "/run/libx.so": lib("libx.so"),
        "/cached/libx.so": lib("libx.so"),
        "/lib/libx.so": lib("libx.so"),
    }
    cache = LdCache(entries={"libx.so": "/cached/libx.so"}, layout="test", total=1)
    assert (
        where(load(view(files, library_path=("/llp",)), "/pkg/a.so")[1], "libx.so") == "/rp/libx.so"
    )
    assert (
        where(load(view(files, library_path=("/llp",)), "/pkg/b.so")[1], "libx.so")
        == "/llp/libx.so"
    )
    assert where(load(view(files), "/pkg/b.so")[1], "libx.so") == "/run/libx.so"
    del files["/run/libx.so"]
    assert where(load(view(files, cache=cache), "/pkg/b.so")[1], "libx.so") == "/cached/libx.so"
    assert where(load(view(files), "/pkg/b.so")[1], "libx.so") == "/lib/libx.so"


def test_nodeflib_skips_the_cache_and_the_default_directories() -> None:
    files = {
        "/pkg/a.so": lib("a.so", needed=["libx.so"], nodeflib=True),
        "/lib/libx.so": lib("libx.so"),
    }
    process, _ = load(view(files), "/pkg/a.so")
    assert [m.name for m in process.missing] == ["libx.so"]


def test_a_library_already_loaded_is_found_by_its_soname_without_a_search() -> None:
    files = {
        "/torch/lib/libc10.so": lib("libc10.so", defines=["c10_fn"]),
        "/pkg/ext.so": lib("ext.so", needed=["libc10.so"], imports=["c10_fn"]),
    }
    v = view(files)
    process = Process(v)
    first = v.files.library("/torch/lib/libc10.so")
    assert first is not None
    process.load(node_of(first, path="/torch/lib/libc10.so", name="x", how="torch"), scope="global")
    ext = v.files.library("/pkg/ext.so")
    assert ext is not None
    order = process.load(node_of(ext, path="/pkg/ext.so", name="/pkg/ext.so", how="test"))
    assert where(order, "libc10.so") == "/torch/lib/libc10.so" and not process.missing


def test_a_file_of_another_kind_on_the_path_is_passed_over() -> None:
    files = {
        "/pkg/a.so": lib("a.so", needed=["libx.so"], runpath="/first"),
        "/first/libx.so": b"not an ELF file",
        "/lib/libx.so": lib("libx.so"),
    }
    assert where(load(view(files), "/pkg/a.so")[1], "libx.so") == "/lib/libx.so"


def test_libraries_known_by_name_are_found_after_the_files_and_only_then() -> None:
    files = {"/pkg/a.so": lib("a.so", needed=["libcublas.so.13"], imports=["cublasCreate_v2"])}
    v = view(files, virtual={"libcublas.so.13": "CUSHIP_CUDA_LIBS (CUDA 13)"})
    _, order = load(v, "/pkg/a.so")
    found = next(n for n in order if n.name == "libcublas.so.13")
    assert not found.known and found.how == "CUSHIP_CUDA_LIBS (CUDA 13)"
    facts = v.files.library("/pkg/a.so")
    assert facts is not None
    binding = bind(order[0], facts.facts, order, {})
    assert binding.bound == 1 and not binding.unknown  # an NVIDIA library defines its own API


# --- binding -------------------------------------------------------------------------------


def _bind(files: dict[str, bytes], path: str = "/pkg/ext.so") -> object:
    v = view(files)
    _, order = load(v, path)
    facts = v.files.library(path)
    assert facts is not None
    return bind(order[0], facts.facts, order, {})


@pytest.mark.parametrize("table", ["gnu", "sysv", "none"])
def test_an_undefined_symbol_binds_to_a_definition_in_its_scope(table: str) -> None:
    files = {
        "/pkg/ext.so": lib(
            "ext.so", needed=["libdep.so"], imports=["present", "absent"], runpath="$ORIGIN"
        ),
        "/pkg/libdep.so": lib("libdep.so", defines=["present"], hash_table=table),
    }
    binding = _bind(files)
    assert binding.bound == 1 and binding.unbound == [("absent", None)]  # type: ignore[attr-defined]


def test_a_weak_undefined_symbol_may_stay_unbound() -> None:
    files = {"/pkg/ext.so": lib("ext.so", weak=["__gmon_start__"], imports=[])}
    binding = _bind(files)
    assert binding.unbound == [] and binding.bound == 0  # type: ignore[attr-defined]


def test_a_versioned_reference_binds_only_to_that_version_or_an_unversioned_definition() -> None:
    ext = lib(
        "ext.so",
        needed=["libv.so.1", "libplain.so"],
        runpath="$ORIGIN",
        versioned_imports=[
            ("f", "libv.so.1", "V_2"),
            ("g", "libv.so.1", "V_2"),
            ("h", "libplain.so", "P_1"),
        ],
    )
    files = {
        "/pkg/ext.so": ext,
        "/pkg/libv.so.1": lib(
            "libv.so.1", version_defs=["V_1", "V_2"], versioned_defines=[("f", "V_2"), ("g", "V_1")]
        ),
        "/pkg/libplain.so": lib("libplain.so", defines=["h"]),  # no version definitions at all
    }
    binding = _bind(files)
    assert binding.unbound == [("g", "V_2")]  # type: ignore[attr-defined]
    assert binding.versions == []  # type: ignore[attr-defined]


def test_a_version_the_library_does_not_define_fails_unless_it_is_weak() -> None:
    def files(weak: bool) -> dict[str, bytes]:
        return {
            "/pkg/ext.so": lib(
                "ext.so",
                needed=["libc.so.6"],
                runpath="$ORIGIN",
                versioned_imports=[("newfn", "libc.so.6", "GLIBC_2.99")],
                weak_versions=["GLIBC_2.99"] if weak else [],
            ),
            "/pkg/libc.so.6": lib(
                "libc.so.6",
                version_defs=["GLIBC_2.2.5"],
                versioned_defines=[("oldfn", "GLIBC_2.2.5")],
            ),
        }

    strict = _bind(files(False))
    assert strict.versions == [  # type: ignore[attr-defined]
        "libc.so.6: version `GLIBC_2.99' not found (required by ext.so)"
    ]
    assert _bind(files(True)).versions == []  # type: ignore[attr-defined]


def test_a_hidden_version_takes_no_unversioned_reference() -> None:
    files = {
        "/pkg/ext.so": lib("ext.so", needed=["libv.so"], runpath="$ORIGIN", imports=["old"]),
        "/pkg/libv.so": lib("libv.so", version_defs=["V_1"], hidden_defines=[("old", "V_1")]),
    }
    assert _bind(files).unbound == [("old", None)]  # type: ignore[attr-defined]


# --- what the import loads first -------------------------------------------------------------


def test_torch_known_by_version_only_leaves_its_symbols_unknown() -> None:
    files = {
        "/pkg/ext.so": lib(
            "ext.so", needed=["libc10.so"], imports=["_ZN3c104cuda19CUDAErrorLogCaptureC1Ev"]
        )
    }
    v = view(files)
    base = base_process(v, TorchBuild(version="2.13.0", flavour="cpu"), with_torch=True)
    assert base.torch is not None and "files not read" in base.torch
    process = base.fork()
    facts = v.files.library("/pkg/ext.so")
    assert facts is not None
    root = node_of(facts, path="/pkg/ext.so", name="/pkg/ext.so", how="test")
    scope = [*base.global_scope, *process.load(root)]
    binding = bind(root, facts.facts, scope, {})
    assert binding.unknown and not binding.unbound and not process.missing


def test_torch_read_from_its_files_loads_its_global_deps_and_finds_its_cuda_libraries() -> None:
    site = "/site"
    files = {
        f"{site}/torch/lib/libtorch_global_deps.so": lib(
            "libtorch_global_deps.so",
            needed=["libcudart.so.13"],
            rpath="$ORIGIN/../../nvidia/cu13/lib",
        ),
        f"{site}/torch/_C.cpython-311-x86_64-linux-gnu.so": lib(
            "_C.so", needed=["libc10.so"], rpath="$ORIGIN/lib"
        ),
        f"{site}/torch/lib/libc10.so": lib("libc10.so", defines=["_ZN3c105ErrorC1Ev"]),
        f"{site}/nvidia/cu13/lib/libcudart.so.13": lib("libcudart.so.13", defines=["cudaMalloc"]),
    }
    v = view(files, site_dirs=(site,))
    torch = TorchBuild(version="2.13.0", flavour="cuda", cuda="13.0", location=f"{site}/torch")
    base = base_process(v, torch, with_torch=True)
    assert not base.torch_missing
    assert [n.label for n in base.global_scope] == ["libtorch_global_deps.so", "libcudart.so.13"]
    loaded = {n.label for n in base.process.nodes}
    assert {"libc10.so", "_C.so"} <= loaded
    broken = base_process(
        view({k: b for k, b in files.items() if "nvidia" not in k}), torch, with_torch=True
    )
    assert [m.name for m in broken.torch_missing] == ["libcudart.so.13"]
