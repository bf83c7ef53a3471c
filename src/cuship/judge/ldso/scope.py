"""What a Python process has loaded before a package's own objects (``[[preload]]`` of
``data/loader.toml``): the interpreter and its needs (the global scope), torch's global deps
(``RTLD_GLOBAL``) and ``torch._C`` with its needs when the package loads with torch, and the
NVIDIA wheel directories cuda-pathfinder opens libraries from.

torch is read from its files when the machine's torch is installed (its ``torch/lib``); a torch
given by ``CUSHIP_TORCH`` (or one an install will bring) is known by its libraries' SONAMEs
only, their symbols unknown.
"""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import dataclass, field

from cuship.judge.ldso.process import Missing, Node, Process, node_of
from cuship.judge.offer import TorchBuild
from cuship.machine.loader import LoaderView
from cuship.wheel.cudalibs import toolkit_libraries

__all__ = ["Base", "base_process", "pathfinder_dirs"]

_TORCH_SONAMES = ("libtorch_global_deps.so", "libtorch.so", "libtorch_cpu.so", "libc10.so")
_TORCH_FLAVOUR_SONAMES = {
    "cuda": ("libtorch_cuda.so", "libc10_cuda.so"),
    "rocm": ("libtorch_hip.so", "libc10_hip.so"),
    "xpu": ("libtorch_xpu.so", "libc10_xpu.so"),
}


@dataclass(slots=True)
class Base:
    """The process before the package's objects load, and what went wrong building it."""

    process: Process
    global_scope: list[Node] = field(default_factory=list)
    torch: str | None = None  # how torch is there: "read from …", "known by name", None: absent
    torch_missing: tuple[Missing, ...] = ()  # what torch itself needs and nothing provides
    interpreter_known: bool = False

    def fork(self) -> Process:
        """A copy of the process, for one object loaded as if alone."""
        return self.process.fork()


def base_process(view: LoaderView, torch: TorchBuild | None, *, with_torch: bool) -> Base:
    """The process of a package's import on the machine of ``view``: the interpreter, and
    torch when ``with_torch`` and a torch is there."""
    process = Process(view)
    base = Base(process=process)
    main = _interpreter(view)
    if main is not None:
        process.main = main
        base.global_scope += process.load(main, scope="global")
        base.interpreter_known = True
    if with_torch and torch is not None:
        _torch(base, view, torch)
    return base


def _interpreter(view: LoaderView) -> Node | None:
    if view.interpreter is None:
        return None
    facts = view.files.library(view.interpreter)
    if facts is None:
        return None
    return node_of(facts, path=view.interpreter, name=view.interpreter, how="the interpreter")


def _torch(base: Base, view: LoaderView, torch: TorchBuild) -> None:
    process = base.process
    before = len(process.missing)
    root = torch.location
    deps = None if root is None else f"{root}/lib/libtorch_global_deps.so"
    facts = None if deps is None else view.files.library(deps)
    if deps is None or facts is None:
        _virtual_torch(base, torch)
        return
    how = "torch's _load_global_deps (RTLD_GLOBAL)"
    base.global_scope += process.load(node_of(facts, path=deps, name=deps, how=how), scope="global")
    for name in view.files.listdir(root or ""):
        if fnmatch.fnmatchcase(name, "_C*.so"):
            path = posixpath.join(root or "", name)
            found = view.files.library(path)
            if found is not None:
                process.load(node_of(found, path=path, name=path, how="import torch._C"))
    base.torch = f"{torch.described}, read from {root}"
    base.torch_missing = tuple(process.missing[before:])


def _virtual_torch(base: Base, torch: TorchBuild) -> None:
    """torch known by version and build only: its libraries by SONAME, symbols unknown."""
    how = f"{torch.described} (its files not read)"
    names = list(_TORCH_SONAMES) + list(_TORCH_FLAVOUR_SONAMES.get(torch.flavour or "", ()))
    if torch.cuda_major is not None:
        names += [lib.soname for lib in toolkit_libraries(torch.cuda_major, with_torch=True)]
    for name in dict.fromkeys(names):
        node = Node(name=name, path=None, soname=name, known=False, how=how, scope="global")
        base.process.add(node)
        base.global_scope.append(node)
    base.torch = how


def pathfinder_dirs(view: LoaderView) -> tuple[str, ...]:
    """The NVIDIA wheels' library directories in the site directories (``nvidia/*/lib``),
    where cuda-pathfinder looks first."""
    found: list[str] = []
    for site in view.site_dirs:
        top = posixpath.join(site, "nvidia")
        for package in view.files.listdir(top):
            directory = posixpath.join(top, package, "lib")
            if view.files.listdir(directory):
                found.append(directory)
    return tuple(found)
