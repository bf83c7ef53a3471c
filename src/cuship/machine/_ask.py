"""What a Python interpreter says of itself: the one probe script (see
:mod:`cuship.machine.interpreter`, which runs it and reads its answer).

Another interpreter runs this file's text as ``python -I -c TEXT [LEND]`` and prints one JSON
object; the running interpreter imports it and calls :func:`about`. It imports the standard
library only (the interpreter asked may hold nothing else) and runs on Python 3.7 and later:
the wheel tags come from ``packaging``, LEND's (a directory holding it, put first on ``sys.path`` only
while it is imported, after the path is read) or else the interpreter's own; without one the
tags are ``null``.
"""

from __future__ import annotations

import json
import platform
import site
import sys
import sysconfig
from importlib.util import find_spec

MODULES = ("pip", "pytest", "venv", "ensurepip")


def site_dirs() -> list[str]:
    """This interpreter's site directories, in its order: ``site.getsitepackages()`` (a venv's
    own, its base's only with system-site-packages), then the user site when it is on the path."""
    dirs = list(site.getsitepackages())
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user and user in sys.path:
        dirs.append(user)
    return list(dict.fromkeys(dirs))


def _tags(lend: str | None) -> list[str] | None:
    if lend:
        sys.path.insert(0, lend)
    try:
        from packaging import tags

        return [str(tag) for tag in tags.sys_tags()]
    except Exception:  # no packaging here, or one too old or broken: the tags are unknown
        return None
    finally:
        if lend:
            sys.path.remove(lend)


def about(lend: str | None = None) -> dict[str, object]:
    """The answer: a dict of JSON values."""
    return {
        "executable": sys.executable,
        "version": list(sys.version_info[:3]),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "in_venv": sys.prefix != sys.base_prefix,
        "paths": [path for path in sys.path if path],
        "site": site_dirs(),
        "modules": [name for name in MODULES if find_spec(name) is not None],
        "tags": _tags(lend),
    }


if __name__ == "__main__":
    sys.stdout.write(json.dumps(about(sys.argv[1] if len(sys.argv) > 1 else None)) + "\n")
