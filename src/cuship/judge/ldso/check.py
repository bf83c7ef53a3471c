"""The judge's loading checks (``loads``): each of the package's own objects installed here is
loaded as ``dlopen(RTLD_NOW)`` would load it, in a process that has imported what the package
imports first (:mod:`cuship.judge.ldso.scope`); its needs found as ld.so finds them
(:mod:`cuship.judge.ldso.process`), its symbols bound (:mod:`cuship.judge.ldso.bind`), the
NVIDIA libraries it opens itself looked for as its ``dlopen`` would (:mod:`.opened`).

A main object that does not load fails the package; an optional one is a partial fit
(:mod:`cuship.judge.roles`). A missing NVIDIA library is the libraries check's to say
(:mod:`cuship.judge.libraries`, with its fix), a missing torch library the torch check's; what
this check says is the rest: other libraries from nowhere, versions a library lacks, undefined
symbols (demangled, with the library expected to define them), and what could not be decided.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from cuship.judge import fixes
from cuship.judge.ldso.bind import DRIVER, Binding, bind
from cuship.judge.ldso.opened import opened, run_time_dirs
from cuship.judge.ldso.process import Node, node_of
from cuship.judge.ldso.scope import Base, base_process, pathfinder_dirs
from cuship.judge.model import CANNOT_OPEN, ObjectLoad, Status, which
from cuship.judge.needs import ObjectNeeds, WheelNeeds
from cuship.judge.release import majors_needed
from cuship.judge.roles import optional_reason
from cuship.judge.state import Judging
from cuship.machine.loader import LoaderView
from cuship.wheel.cudalibs import is_driver_lib, is_nvidia_lib
from cuship.wheel.torchabi import is_shim_symbol, is_torch_cxx_symbol, is_torch_library

__all__ = ["loads"]

_DRIVER_LIBRARIES = ("libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1", "libnvcuvid.so.1")
_PATHFINDER = frozenset({"cuda-pathfinder", "cuda-bindings", "cuda-core"})
_SHOWN = 3  # undefined symbols named per object


def loads(j: Judging) -> None:
    """Load each installed own object as ld.so would; see the module."""
    view = j.offer.loader
    # Without torch, an object linking torch is the torch check's to judge (it loads only
    # where torch is, or fails with torch missing).
    installed = [
        o
        for o in j.objects
        if o.role != "vendor" and o.location and (j.offer.torch is not None or not o.links_torch)
    ]
    if view is None or not installed:
        _not_loaded(j, bool(installed))
        return
    view = _with_driver(view, j)
    base = base_process(view, j.offer.torch, with_torch=_with_torch(j.needs))
    _torch_itself(j, base)
    extra = pathfinder_dirs(view) if _uses_pathfinder(j.needs) else ()
    memo: dict[tuple[int, str, str | None], bool] = {}
    results = [_load_one(j, base, obj, extra, memo) for obj in installed]
    j.loads = tuple(_propagate(_through_dependents(results, installed), installed))
    _report(j, j.loads, base)


def _not_loaded(j: Judging, installed: bool) -> None:
    """Say what loading would have decided and nothing else does: whether the torch symbols
    of its objects bind (the torch check's release rules are an estimate of it)."""
    linked = [o.path for o in j.objects if o.role != "vendor" and o.links_torch]
    if not linked or j.offer.torch is None:
        return
    why = (
        "the machine's loader was not described"
        if installed
        else "it is judged before it is installed; cuship doctor binds them once it is"
    )
    j.add(
        "torch",
        "unchecked",
        f"the torch symbols of {which(linked)} were not bound to {j.offer.torch.described}'s "
        f"libraries ({why})",
    )


def _with_driver(view: LoaderView, j: Judging) -> LoaderView:
    """A described machine with a driver has the driver's libraries, files or not."""
    if not j.offer.has_driver:
        return view
    added = dict.fromkeys(_DRIVER_LIBRARIES, DRIVER)
    return dataclasses.replace(view, virtual={**added, **view.virtual})


def _with_torch(needs: WheelNeeds) -> bool:
    return needs.torch_requirement is not None or any(o.links_torch for o in needs.own)


def _uses_pathfinder(needs: WheelNeeds) -> bool:
    names = {
        re.split(r"[\s;<>=!~\[(]", line.strip(), maxsplit=1)[0].lower() for line in needs.requires
    }
    return bool(names & _PATHFINDER) or needs.name.lower() in _PATHFINDER


def _torch_itself(j: Judging, base: Base) -> None:
    if not base.torch_missing:
        return
    names = list(dict.fromkeys(m.name for m in base.torch_missing))
    first = base.torch_missing[0]
    j.add(
        "torch",
        "fail",
        f"{base.torch} does not load here: {which(names, 3)} "
        f"(needed by {first.needed_by}) {'is' if len(names) == 1 else 'are'} nowhere: "
        f"'{names[0]}: {CANNOT_OPEN}'",
        fixes.library_install(names[0], None),
    )


def _load_one(
    j: Judging,
    base: Base,
    obj: ObjectNeeds,
    extra: Sequence[str],
    memo: dict[tuple[int, str, str | None], bool],
) -> ObjectLoad:
    view = base.process.view
    optional = optional_reason(obj, j.needs.own) or ""
    path = obj.location or obj.path
    facts = view.files.library(path)
    if facts is None:
        return ObjectLoad(path=obj.path, loads=None, optional=optional,
                          unchecked=(f"{obj.path} could not be read as ELF here",))  # fmt: skip
    process = base.fork()
    root = node_of(facts, path=path, name=path, how="the package's own")
    local = process.load(root)
    missing = tuple(dict.fromkeys(m.name for m in process.missing))
    j.stale.update({m.name: m.stale for m in process.missing if m.stale})
    libraries = tuple((n.label, _where(n)) for n in local[1:])
    needs = majors_needed(obj, j.compat)
    openings = opened(process, root, obj, extra, needs[0].major if needs else None)
    if missing:
        return ObjectLoad(path=obj.path, loads=False, optional=optional, libraries=libraries,
                          missing=missing, opens=openings)  # fmt: skip
    scope = list(dict.fromkeys([*base.global_scope, *local]))
    binding = bind(root, facts.facts, scope, memo)
    return _outcome(j, obj, optional, libraries, openings, binding, local, view)


def _where(node: Node) -> str:
    return f"{node.path} ({node.how})" if node.path else node.how


def _outcome(
    j: Judging,
    obj: ObjectNeeds,
    optional: str,
    libraries: tuple[tuple[str, str], ...],
    openings: tuple[tuple[str, str | None], ...],
    binding: Binding,
    local: Sequence[Node],
    view: LoaderView,
) -> ObjectLoad:
    unbound = [name for name, _ in binding.unbound]
    shown = _demangled(j, unbound[:_SHOWN])
    unchecked = []
    if binding.unknown or binding.unknown_versions:
        virtual = [n.label for n in local if not n.known and n.how != DRIVER]
        virtual = virtual or ["libraries known by name only"]
        unchecked.append(
            f"{obj.path}: {len(binding.unknown)} symbols and {len(binding.unknown_versions)} "
            f"versions it needs could only come from {which(virtual, 3)}, whose files were "
            "not read: not bound"
        )
    unchecked += run_time_dirs(obj, view, local)
    fails = bool(binding.unbound or binding.versions)
    return ObjectLoad(
        path=obj.path,
        loads=False if fails else (None if binding.unknown else True),
        optional=optional,
        libraries=libraries,
        versions=tuple(binding.versions),
        unbound=tuple(shown),
        unbound_count=len(unbound),
        expected=_expected(unbound[0], binding, obj) if unbound else "",
        opens=openings,
        unchecked=tuple(unchecked),
    )


def _demangled(j: Judging, names: list[str]) -> list[str]:
    demangle = j.context.demangle
    readable = list(demangle(names)) if demangle is not None and names else []
    if len(readable) != len(names):
        return [
            f"{name} (mangled: no c++filt here)" if name.startswith("_Z") else name
            for name in names
        ]
    return [
        f"{text} ({name})" if text != name else name
        for text, name in zip(readable, names, strict=True)
    ]


def _expected(name: str, binding: Binding, obj: ObjectNeeds) -> str:
    """The library expected to define ``name``: its version need's, else by its name."""
    if name in binding.expected:
        return binding.expected[name]
    if is_torch_cxx_symbol(name) or is_shim_symbol(name):
        torch = [lib for lib in obj.needed if is_torch_library(lib)]
        return f"torch's libraries ({which(torch, 3)})" if torch else "torch's libraries"
    nvidia = [lib for lib in obj.needed if is_nvidia_lib(lib)]
    return which(nvidia, 3) if nvidia else "one of the libraries it needs"


def _through_dependents(
    results: Sequence[ObjectLoad], objects: Sequence[ObjectNeeds]
) -> list[ObjectLoad]:
    """An own library another own object links (auditwheel's ``faiss.libs/libfaiss-….so``)
    is loaded through that object, never opened alone: the libraries it needs from nowhere
    when opened alone are looked for as ld.so looks for them then, through the DT_RPATH of
    the object that loads it. When each of them was found by a load that brought it in and
    succeeded, it loads (its symbols were bound in that load)."""
    found_by: dict[str, set[str]] = {}
    for result in results:
        if result.loads is not True:
            continue  # a failed dlopen unloads what it brought: nothing loaded through it
        names = {name for name, _where in result.libraries}
        for obj in objects:
            if obj.location and any(
                where.startswith(f"{obj.location} ") for _n, where in result.libraries
            ):
                found_by.setdefault(obj.location, set()).update(names)
    out = []
    for obj, result in zip(objects, results, strict=True):
        found = found_by.get(obj.location or "")
        if result.loads is False and found is not None and _found_here(result, found):
            result = dataclasses.replace(result, loads=True, missing=())
        out.append(result)
    return out


def _propagate(results: Sequence[ObjectLoad], objects: Sequence[ObjectNeeds]) -> list[ObjectLoad]:
    """An object whose own sibling does not load does not load either, unless what failed the
    sibling alone is what this object's load found: a library the sibling needs from nowhere
    when opened by itself is found by ld.so through the DT_RPATH of the object that loads it
    (faiss's ``_swigfaiss.so`` brings ``libopenblas`` for its bundled ``libfaiss``)."""
    failing = {
        o.location: r
        for o, r in zip(objects, results, strict=True)
        if r.loads is False and o.location
    }
    out = []
    for result in results:
        found = {name for name, _where in result.libraries}
        broken = [
            path
            for _name, where in result.libraries
            for path, sibling in failing.items()
            if where.startswith(f"{path} ") and not _found_here(sibling, found)
        ]
        if result.loads is not False and broken:
            result = dataclasses.replace(
                result,
                loads=False,
                versions=(*result.versions, f"needs {which(broken)}, which does not load"),
            )
        out.append(result)
    return out


def _found_here(sibling: ObjectLoad, found: set[str]) -> bool:
    """Whether ``sibling`` failed only for libraries from nowhere that a load found."""
    return (
        bool(sibling.missing)
        and not (sibling.versions or sibling.unbound)
        and set(sibling.missing) <= found
    )


def _report(j: Judging, results: Sequence[ObjectLoad], base: Base) -> None:
    """The rows of the check: failures (main objects) and partial fits (optional ones) by
    cause, what could not be decided, the sources of the libraries found."""
    for result in results:
        for name, where in result.libraries:
            j.found.setdefault(name, where)
        for name in result.missing:
            j.found.setdefault(name, None)
    _missing_others(j, results)
    _broken(j, [r for r in results if r.loads is False and not r.missing])
    _opened_report(j, results)
    for result in results:
        for line in result.unchecked:
            j.add("libraries", "unchecked", line)
    if not base.interpreter_known:
        j.add(
            "files",
            "unchecked",
            "the Python interpreter's file could not be read: the symbols it defines were taken "
            "as defined",
        )
    _torch_bound(j, results)


def _missing_others(j: Judging, results: Sequence[ObjectLoad]) -> None:
    """Libraries from nowhere that no other check judges: all but the NVIDIA libraries the
    object is known to link (the libraries check), torch's and the driver's (their checks).
    An NVIDIA library outside cuship's tables (cuTENSOR's libcutensor.so.2) is judged here, so
    an object that does not load is never left unsaid."""
    linked = {obj.path: frozenset(obj.libraries) for obj in j.needs.objects}
    for result in results:
        judged = linked.get(result.path, frozenset())
        others = [
            n for n in result.missing
            if n not in judged and not (is_torch_library(n) or is_driver_lib(n))
        ]  # fmt: skip
        if not others:
            continue
        status: Status = "partial" if result.optional else "fail"
        j.add(
            "libraries",
            status,
            f"{result.path}"
            + (f" (optional: {result.optional})" if result.optional else "")
            + f" needs {which(others, 3)}, which nothing here provides: '{others[0]}: {CANNOT_OPEN}'"
            + stale_hint(j, others),
            "" if result.optional else f"install the package that provides {others[0]}",
        )


def stale_hint(j: Judging, names: Sequence[str]) -> str:
    """Where a missing library lies in a directory ld.so.conf names that the cache lacks."""
    stale = [(n, j.stale[n]) for n in names if n in j.stale]
    if not stale:
        return ""
    name, where = stale[0]
    return (
        f" ({name} is in {where}, which ld.so.conf names but the loader cache does not list: "
        "run ldconfig)"
    )


def _broken(j: Judging, broken: Sequence[ObjectLoad]) -> None:
    """Objects whose libraries are all found but that do not bind."""
    for optional in (False, True):
        group = [r for r in broken if bool(r.optional) == optional]
        if not group:
            continue
        first = group[0]
        cause = (
            f"'undefined symbol: {first.unbound[0]}'"
            + (
                f" ({first.unbound_count} undefined; expected from {first.expected})"
                if first.unbound
                else ""
            )
            if first.unbound
            else f"'{first.versions[0]}'"
        )
        paths = [r.path + (f" (optional: {r.optional})" if r.optional else "") for r in group]
        total = len(j.loads)
        j.add(
            "torch" if "torch" in first.expected else "libraries",
            "partial" if optional else "fail",
            f"{len(group)} of {total} objects do not load ({which(paths)}): {cause}",
            "" if optional else _symbol_fix(j, first),
        )


def _symbol_fix(j: Judging, first: ObjectLoad) -> str:
    torch = j.offer.torch
    if first.unbound and "torch" in first.expected:
        built = j.needs.torch_built
        if built is not None and torch is not None:
            return fixes.torch_install(f"torch=={built}.*", torch)
        installed = torch.described if torch is not None else "the installed torch"
        return fixes.reinstall(j.needs, f"built against {installed}")
    return fixes.reinstall(j.needs, "built for this system's libraries")


def _opened_report(j: Judging, results: Sequence[ObjectLoad]) -> None:
    """The NVIDIA libraries objects open at run time, from nowhere: a failure for a main
    object with device code on a machine with a GPU when the library is its CUDA runtime or
    BLAS (its kernels cannot run without it), a partial fit otherwise."""
    by_path = {o.path: o for o in j.objects}
    for result in results:
        lost = [name for name, where in result.opens if where is None]
        if not lost or result.loads is False:
            continue  # an object that does not load opens nothing
        obj = by_path[result.path]
        core = obj.device and bool(j.offer.gpus) and not result.optional
        core = core and any(_core_runtime(name) for name in lost)
        j.add(
            "libraries",
            "fail" if core else "partial",
            f"{result.path} opens {which(lost, 3)} at run time (dlopen); nothing here provides "
            f"{'it' if len(lost) == 1 else 'them'}: its CUDA work fails with "
            f"'{lost[0].split(' or ')[0]}: {CANNOT_OPEN}'",
            fixes.library_install(lost[0].split(" or ")[0], None) if core else "",
        )


def _core_runtime(name: str) -> bool:
    """The CUDA runtime, cuBLAS, the driver, or an object's CUDA libraries as a whole."""
    return name.startswith(
        ("libcudart.so", "libcublas.so", "libcublasLt.so", "libcuda.so", "CUDA ", "its CUDA")
    )


def _torch_bound(j: Judging, results: Sequence[ObjectLoad]) -> None:
    """Whether every object linking torch bound its torch symbols here."""
    by_path = {o.path: o for o in j.objects}
    linked = [r for r in results if by_path[r.path].links_torch]
    if not linked or j.offer.torch is None or j.offer.torch.location is None:
        return
    if any(r.loads is None for r in linked):
        return
    j.bound_torch = not any("torch" in r.expected for r in linked if r.unbound)
