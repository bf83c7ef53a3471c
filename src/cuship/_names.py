"""One checked name (issue 43) for whatever reaches a path, a URL, a shell, HTML or YAML: a
project name (PEP 508, normalized per PEP 503), a version (PEP 440), a local version label, a
wheel-variant label (PEP 825), and file names built only from these.

Each check takes untrusted text and gives back the one spelling cuship uses, or raises a
:class:`~cuship.errors.UsageError` (exit 2) quoting the text cut short. What passes holds no
``/``, ``\\``, ``..``, whitespace, quote, ``$``, backtick or control character, so it is safe as a
path component, in a URL path, a shell word, HTML text and a YAML scalar as it is. Config
validators (:mod:`cuship.config.values`), the wheel-variant code and the index call these; no
other module decides what a name may be.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from cuship.errors import UsageError

__all__ = [
    "MAX_NAME",
    "NULL_LABEL",
    "base_url",
    "dist_name",
    "file_name",
    "local_label",
    "project",
    "requirement",
    "variant_label",
    "version",
    "wheel_stem",
]

MAX_NAME = 200  # characters of a project name or version; PyPI's longest names are under 100
NULL_LABEL = "null"  # PEP 825's reserved label: the variant with no property
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}")
_VARIANT_LABEL = re.compile(r"[0-9a-z_.]{1,16}")
_LOCAL = re.compile(r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*")


def _cut(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 62 else shown[:60] + "…"


def project(name: str, what: str = "project name") -> str:
    """``name`` normalized (PEP 503: lower case, runs of ``-_.`` as one ``-``) when it is a
    valid project name (PEP 508: letters, digits, ``-_.``, starting and ending with a letter or
    digit); a UsageError otherwise."""
    from packaging.utils import InvalidName, canonicalize_name  # its tags weigh on start-up

    if not isinstance(name, str) or len(name) > MAX_NAME:
        raise UsageError(f"{_cut(name)} is not a valid {what}")
    try:
        return canonicalize_name(name, validate=True)
    except InvalidName:
        raise UsageError(
            f"{_cut(name)} is not a valid {what}",
            hint="letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
        ) from None


def dist_name(name: str, what: str = "project name") -> str:
    """The wheel-file spelling of a project name: normalized, ``-`` as ``_`` (``my_pkg``)."""
    return project(name, what).replace("-", "_")


def version(text: str, what: str = "version") -> str:
    """``text`` when it is a PEP 440 version (``2.13.0+cu130``), at most :data:`MAX_NAME`
    characters; a UsageError otherwise. The text is given back as it was written."""
    if not isinstance(text, str) or len(text) > MAX_NAME or not text.isascii():
        raise UsageError(f"{what} {_cut(text)} is not a PEP 440 version")
    try:
        Version(text)
    except (InvalidVersion, ValueError):  # ValueError: digits past int()'s limit
        raise UsageError(
            f"{what} {_cut(text)} is not a PEP 440 version", hint="e.g. 1.2.0 or 2.8.0+cu128"
        ) from None
    return text


def local_label(text: str, what: str = "local version label") -> str:
    """``text`` (without a leading ``+``) when ``0+text`` is a PEP 440 version: ASCII letters
    and digits, parts joined by ``.``, ``-`` or ``_``; a UsageError otherwise."""
    if not isinstance(text, str) or len(text) > MAX_NAME or not _LOCAL.fullmatch(text):
        raise UsageError(
            f"{what} {_cut(text)} is not a local version label",
            hint="letters and digits, parts joined by '.', e.g. cu128torch2.8",
        )
    return text


def variant_label(label: str, *, null: bool = False) -> str:
    """``label`` when it is a wheel-variant label uv accepts and every tool keeps (lower case
    ``[0-9a-z_.]``, 1 to 16 characters); ``null`` is PEP 825's null variant, refused unless
    ``null`` is True (variantlib refuses it as a label of a variant with properties)."""
    if not isinstance(label, str) or not _VARIANT_LABEL.fullmatch(label):
        raise UsageError(
            f"{_cut(label)} is not a variant label: lower-case letters, digits, '_' and '.', "
            "1 to 16 characters",
            hint="e.g. cu130 or cu129_sm90; set [variants] label or pass --label",
        )
    if label == NULL_LABEL and not null:
        raise UsageError(
            f"{label!r} is the null variant's label (PEP 825), not one for a variant with "
            "properties",
            hint="pass --null for the null variant, or another label",
        )
    return label


def file_name(name: str, what: str = "file name") -> str:
    """``name`` when it is a plain file name: letters, digits and ``._+-``, not starting with
    a dot or a dash, at most 255 characters (no separator, no ``..``, nothing a shell or HTML
    reads specially); a UsageError otherwise."""
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name) or ".." in name:
        raise UsageError(
            f"{what} {_cut(name)} is not a plain file name",
            hint="letters, digits and '._+-', starting with a letter or digit",
        )
    return name


_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f\"'<>\\`^{|}]")


def base_url(url: str, what: str = "--base-url") -> str:
    """``url`` without trailing slashes when it is a plain http(s) URL a file name can follow:
    a host, no query, no fragment, no credentials, nothing that is not a printable URL
    character (a newline, a space or a quote would reach the index's HTML and the shells that
    read it); a UsageError otherwise."""
    from urllib.parse import urlsplit

    problem = None
    if not isinstance(url, str) or len(url) > 2048 or _URL_UNSAFE.search(url):
        problem = "holds a character a URL may not (a space, a line break, a quote, <, >)"
    else:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problem = "is not an http(s) URL"
        elif parts.query or parts.fragment or "?" in url or "#" in url:
            problem = "has a query or a fragment, which a file name cannot follow"
        elif parts.username is not None or parts.password is not None:
            problem = "holds credentials"
    if problem is not None:
        raise UsageError(
            f"{what} {_cut(url)} {problem}",
            hint="e.g. https://github.com/OWNER/REPO/releases/download/TAG",
        )
    return url.rstrip("/")


def requirement(text: str, what: str = "requirement") -> str:
    """``text`` when it is a PEP 508 requirement pip can take as one argument and nothing else:
    a name with extras, versions and markers, or ``name @ https://…``. A pip option
    (``--index-url=…``, ``-e.``), a path (``./x``, ``file:``) or anything packaging refuses is a
    UsageError: these reach pip's command line, where each would change what pip does."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not isinstance(text, str) or len(text) > 4096 or text.lstrip().startswith("-"):
        raise UsageError(
            f"{what} {_cut(text)} is a pip option, not a requirement",
            hint='write requirements only, e.g. "torch==2.13.0"; pip options go in build_args',
        )
    try:
        parsed = Requirement(text)
    except InvalidRequirement as err:
        raise UsageError(
            f"{what} {_cut(text)} is not a PEP 508 requirement ({str(err).splitlines()[0]})",
            hint='e.g. "numpy>=1.26" or "pkg @ https://host/pkg-1.0.tar.gz"; not a path',
        ) from None
    if parsed.url is not None and not parsed.url.startswith("https://"):
        raise UsageError(
            f"{what} {_cut(text)} points at {_cut(parsed.url)}: only https:// URLs",
            hint="a local path or another scheme reaches outside the build; publish it first",
        )
    return text


def wheel_stem(name: str, version_text: str) -> str:
    """``dist-version``, the start of a wheel's (and its ``.dist-info``'s) name, from a
    checked project name and version (a local label's ``+`` kept)."""
    return f"{dist_name(name)}-{version(version_text)}"
