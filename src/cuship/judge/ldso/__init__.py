"""The judge's emulation of glibc's dynamic loader: a package's objects loaded as
``dlopen(RTLD_NOW)`` loads them on the machine judged, after what its import loads first.

- :mod:`.process`: the objects a process has loaded and how a library name is found (the rules
  of ``data/loader.toml``, each with its source);
- :mod:`.scope`: what is loaded before the package's objects (the interpreter, torch,
  cuda-pathfinder's directories);
- :mod:`.bind`: versions and undefined symbols against the lookup scope;
- :mod:`.opened`: the NVIDIA libraries an object opens itself;
- :mod:`.check`: the judge's ``loads`` check.
"""

from __future__ import annotations

from cuship.judge.ldso.check import loads

__all__ = ["loads"]
