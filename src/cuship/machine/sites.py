"""Where this interpreter finds installed packages, and a venv that sees them too.

A venv made from an interpreter that is itself a venv (``python -m venv``, ``uv venv``) is a
venv of the *base* interpreter: ``--system-site-packages`` shows it the base's site-packages,
never those of the venv it was made from, where a user installed torch. So a venv that must see
what this interpreter sees is made without ``--system-site-packages`` and given a ``.pth`` file
(:func:`layer_text`) that adds this interpreter's site directories (:func:`site_dirs`) after its
own site-packages, running their ``.pth`` files (editable installs) as ``site`` does. Those
directories are exactly what this interpreter sees: a venv's own site-packages, its base
interpreter's only when the venv was made with system-site-packages (``site.getsitepackages``
lists both then, and only then), and the user site when it is on ``sys.path``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cuship.machine import _ask

__all__ = ["layer_text", "site_dirs", "venv_purelib"]


def site_dirs() -> tuple[str, ...]:
    """The site directories of the running interpreter, in its order (see the module): what
    the interpreter probe (:mod:`cuship.machine.interpreter`) reports as ``site``."""
    return tuple(_ask.site_dirs())


def layer_text(dirs: Sequence[str]) -> str:
    """A ``.pth`` line that adds ``dirs`` after the site-packages it sits in and runs their own
    ``.pth`` files (a plain path line would add a directory without them)."""
    calls = "; ".join(f"site.addsitedir({d!r})" for d in dirs)
    return f"import site; {calls}\n"


def venv_purelib(venv: str) -> str:
    """Where a venv of this interpreter at ``venv`` keeps packages (the venv scheme, as
    ``sysconfig`` writes it), known before the venv is made."""
    import sysconfig

    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
    return sysconfig.get_path("purelib", scheme, vars={"base": venv, "platbase": venv})
