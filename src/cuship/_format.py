"""Text shared by cuship's messages: byte sizes (:func:`size_text`, one format everywhere), and
``str.format`` templates from config files, limited to plain ``{field}`` placeholders.

A template is user input that ``str.format`` would otherwise run as a small language:
``{cuda_short!r:>99999999}`` writes 100 MB, ``{torch[999]}`` indexes, ``{x.__class__}`` reads
attributes. Label, image, torch-index and prebuilt URL templates all accept only the documented
names, with no conversion, format spec, index or attribute, and are checked when read.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["MAX_TEMPLATE", "TemplateError", "size_text", "template_fields"]

MAX_TEMPLATE = 1024  # characters; a prebuilt wheel URL is the longest template in practice


_UNITS = ("KiB", "MiB", "GiB", "TiB")


def size_text(size: float) -> str:
    """``size`` bytes as people read it: ``512 bytes``, ``1.5 KiB``, ``64 MiB``, ``2.3 GiB``
    (binary units, one decimal, none when it is zero)."""
    if size < 1024:
        return "1 byte" if size == 1 else f"{size:.0f} bytes"
    value = float(size)
    for unit in _UNITS:
        value /= 1024
        if round(value, 1) < 1024 or unit == _UNITS[-1]:
            break
    shown = f"{value:.1f}".removesuffix(".0")
    return f"{shown} {unit}"


class TemplateError(ValueError):
    """The template uses more than plain ``{field}`` placeholders; the message says what."""


def _known(fields: Collection[str]) -> str:
    return ", ".join("{" + f + "}" for f in fields)


def _complaint(
    field: str, spec: str, conversion: str | None, fields: Collection[str]
) -> str | None:
    shown = (
        "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
    )
    if conversion:
        return f"{shown} has a conversion (!{conversion}); write {{{field}}}"
    if spec:
        return f"{shown} has a format spec (:{spec[:20]}); write {{{field}}}"
    if not field or field.isdigit():
        return f"{shown} is positional; name one of the fields"
    if "[" in field or "." in field:
        return f"{shown} indexes or reads an attribute; write a plain field"
    if field not in fields:
        return f"unknown placeholder {shown}"
    return None


def template_fields(template: str, fields: Collection[str], *, what: str) -> tuple[str, ...]:
    """The fields ``template`` names, in order; anything but ``{field}`` of ``fields`` (and
    ``{{``/``}}`` for braces) is a :class:`TemplateError` naming the template and the fix."""
    if len(template) > MAX_TEMPLATE:
        raise TemplateError(f"{what} is {len(template):,} characters; at most {MAX_TEMPLATE}")
    import string  # here: most runs read no template

    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as err:  # a single { or }
        raise TemplateError(
            f"{what} {template!r} is not a template ({err}); write {{{{ or }}}} for a brace"
        ) from None
    found = []
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        complaint = _complaint(field, spec or "", conversion, fields)
        if complaint is not None:
            raise TemplateError(f"{what} {template!r}: {complaint}; known fields: {_known(fields)}")
        found.append(field)
    return tuple(found)
