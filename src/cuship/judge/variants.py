"""Wheel variants from a build: the NVIDIA properties a wheel's binaries earn, its variant twin,
and the plain fallback beside a build's labelled wheels (the format is
:mod:`cuship.wheel.variant`'s).

The properties come from the binaries, never from a label (:func:`properties`): ``sm_arch``
``XY_real`` where every one of the package's own objects runs on a GPU X.Y (SASS of that major
and a minor not above it, or PTX), ``X0_virtual`` for a major that SASS does not cover at X.0 but
PTX serves; ``cuda_version_lower_bound`` the oldest CUDA major of the runtimes its objects link
(``libcudart.so.13``: 13); a runtime linked statically earns none. Arch-specific SASS
(``sm_90a``) is claimed for no GPU: uv's ``90_real`` would promise it to every 9.x GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuship._record import frozen
from cuship.arch import cc_tuple, sm_key
from cuship.errors import CushipError, InputError, UsageError
from cuship.judge.gpu import gpu_coverage
from cuship.judge.needs import WheelNeeds, wheel_needs
from cuship.wheel.variant import (
    NULL,
    VARIANT_JSON,
    check_label,
    default_label,
    dumps,
    read_wheel_variant,
    split_variant,
    variant_document,
)

if TYPE_CHECKING:
    from cuship.config import VariantsSection

__all__ = [
    "VariantWheel",
    "make_variant",
    "properties",
    "publish_configured",
    "publish_variants",
    "variant_file",
]


def _runs(device: Sequence[tuple[tuple[str, ...], tuple[str, ...]]], cc: str) -> bool:
    """Whether the judge lets a GPU of ``cc`` run the package: some own object has SASS or
    PTX for it (others lacking it make a partial fit, as the judge says)."""
    return any(gpu_coverage(cc, sass, ptx)[0] is not None for sass, ptx in device)


def _known_minors(arches: Sequence[str]) -> dict[int, list[int]]:
    """GPU minors by major: those of every GPU cuship knows, and those the arches name."""
    from cuship.compat import load

    found: dict[int, set[int]] = {}
    ccs = [gpu.cc for gpu in load().gpus] + [
        f"{int(a.rstrip('af')) // 10}.{int(a.rstrip('af')) % 10}" for a in arches
    ]
    for major, minor in map(cc_tuple, ccs):
        found.setdefault(major, set()).add(minor)
    return {major: sorted(minors) for major, minors in found.items()}


def properties(needs: WheelNeeds, *, upper_bound: bool = False) -> dict[str, list[str]]:
    """The NVIDIA properties of a wheel, from its own objects' device code and the CUDA runtime
    they link (see the module); empty for a wheel with no device code.

    ``XY_real`` is claimed when every GPU of major X and minor Y or more that cuship knows runs
    the package (uv promises it to each of them), ``X0_virtual`` when every GPU of major X
    does and no ``X0_real`` says so already."""
    device = [(o.sass, o.ptx) for o in needs.own if o.device]
    if not device:
        return {}
    sass = sorted({s for o in needs.own for s in o.sass}, key=sm_key)
    minors = _known_minors(sass)
    real: list[str] = []
    for sm in dict.fromkeys(s.rstrip("af") for s in sass):
        major, minor = int(sm) // 10, int(sm) % 10
        wanted = [m for m in minors[major] if m >= minor]
        if all(_runs(device, f"{major}.{m}") for m in wanted):
            real.append(f"{sm}_real")
    virtual = [
        f"{major}0_virtual"
        for major in sorted(minors)
        if f"{major}0_real" not in real
        and all(_runs(device, f"{major}.{m}") for m in minors[major])
    ]
    found: dict[str, list[str]] = {}
    majors = sorted({m for o in needs.own for m in o.cuda_majors})
    if majors:
        found["cuda_version_lower_bound"] = [str(majors[0])]
        if upper_bound:
            found["cuda_version_upper_bound"] = [str(majors[-1] + 1)]
    if real or virtual:
        found["sm_arch"] = real + virtual
    return found


def make_variant(
    wheel: Path,
    *,
    out_dir: Path,
    label: str | None = None,
    null: bool = False,
    upper_bound: bool = False,
    build: str | None = None,
) -> Path:
    """Write the variant twin of ``wheel`` into ``out_dir``: its public version (the local
    label dropped: variants of one release share its version), the variant label appended to
    its name, and a ``variant.json`` whose NVIDIA properties are read from its binaries (none
    with ``null``). ``label`` defaults to the wheel's local label (``+cu130``: ``cu130``);
    ``build``: a build tag for its name (a torch-linked build's torch minor, ``213``)."""
    from cuship.wheel.audit import inspect_wheel
    from cuship.wheel.write.retag import public_plan, rewrite

    if split_variant(wheel.name)[1] is not None or read_wheel_variant(wheel) is not None:
        raise InputError(
            f"{wheel.name!r} is a variant wheel already (its name or its variant.json says so)",
            hint="pass the plain or labelled wheel",
        )
    report = inspect_wheel(wheel)
    chosen = NULL if null else (label or default_label(report.local))
    if chosen is None:
        raise UsageError(
            f"{wheel.name!r} has no local label to name its variant by",
            hint="pass --label (lower case [0-9a-z_.], at most 16 characters)",
        )
    props = {} if null else properties(wheel_needs(report), upper_bound=upper_bound)
    if not null and not props:
        raise InputError(
            f"{wheel.name!r} holds no CUDA device code and links no CUDA runtime: no NVIDIA "
            "property to give a variant",
            hint="publish it as a plain wheel, or pass --null for a null variant",
        )
    stem = plain_name(wheel.name, build)[:-4]
    plan = public_plan(wheel.name, new_filename=f"{stem}-{check_label(chosen, null=null)}.whl")
    document = variant_document(chosen, props)
    return rewrite(
        wheel,
        replace(plan, extra=((VARIANT_JSON, dumps(document)),)),
        out_dir=out_dir,
    )


@frozen
class VariantWheel:
    """The wheel given, its variant twin, and the ``variant.json`` the twin carries."""

    input: Path
    output: Path
    variant: Mapping[str, Any]

    def to_json(self) -> dict[str, object]:
        """``cuship variant --json``."""
        return {"input": str(self.input), "output": str(self.output), "variant": self.variant}


def variant_file(
    wheel: Path,
    *,
    out_dir: Path,
    label: str | None = None,
    null: bool = False,
    upper_bound: bool = False,
) -> VariantWheel:
    """:func:`make_variant` of a wheel file someone named (:class:`InputError` when there is
    none), with the ``variant.json`` read back from the twin written."""
    if not wheel.is_file():
        raise InputError(f"{str(wheel)!r} is not a file", hint="pass a .whl file")
    twin = make_variant(wheel, out_dir=out_dir, label=label, null=null, upper_bound=upper_bound)
    return VariantWheel(input=wheel, output=twin, variant=read_wheel_variant(twin) or {})


def publish_variants(
    wheels: Sequence[Path],
    out_dir: Path,
    *,
    template: str = "cu{cuda_short}",
    plain: str | None = None,
    null: bool = False,
    upper_bound: bool = False,
) -> tuple[Path, ...]:
    """Beside the labelled ``wheels`` (a build's, ``+cu130``): the variant twin of each (its
    label from ``template``, its properties from its binaries), and per Python tag and
    platform (and torch minor) one plain wheel, the build ``plain`` names (default: the oldest
    CUDA), with its null variant when ``null``. Returns the files written, in ``out_dir``."""
    from cuship.wheel.names import format_label, parse_label

    written: list[Path] = []
    groups: dict[tuple[str, str | None], list[tuple[Path, Any]]] = {}
    for wheel in wheels:
        local = _local_of(wheel.name)
        if local is None or split_variant(wheel.name)[1] is not None:
            continue
        try:
            variant = parse_label(local)
        except CushipError:
            continue  # not a CUDA build's label (the CPU fallback's +cpu): no variant
        if variant.cuda is None:
            continue
        # A torch-linked build's files carry its torch minor as their build tag (213 for
        # torch 2.13): the builds for two torch releases get two names, and the index lists
        # each in its own sub-index (torch2.13), uv not being able to choose by torch.
        build = None if variant.torch is None else f"{variant.torch.major}{variant.torch.minor}"
        label = check_label(format_label(variant, template).lower())
        twin = make_variant(
            wheel, out_dir=out_dir, label=label, upper_bound=upper_bound, build=build
        )
        written.append(twin)
        groups.setdefault((_tags_of(wheel.name), build), []).append((wheel, variant))
    for (_, build), builds in groups.items():
        fallback = _fallback(builds, plain)
        written.append(_plain(fallback, out_dir, build))
        if null:
            written.append(make_variant(fallback, out_dir=out_dir, null=True, build=build))
    return tuple(written)


def _plain(wheel: Path, out_dir: Path, build: str | None) -> Path:
    from cuship.wheel.write.retag import public_plan, rewrite

    plan = public_plan(wheel.name, new_filename=plain_name(wheel.name, build))
    return rewrite(wheel, plan, out_dir=out_dir)


def plain_name(filename: str, build: str | None = None) -> str:
    """The name of ``filename``'s public-version wheel, with ``build`` as its build tag."""
    from cuship.wheel.write.retag import public_plan

    name = public_plan(filename).new_filename
    if build is None:
        return name
    head, version, rest = name.split("-", 2)
    return f"{head}-{version}-{build}-{rest}"


def _local_of(filename: str) -> str | None:
    version = filename.split("-")[1] if filename.count("-") >= 2 else ""
    return version.partition("+")[2] or None


def _tags_of(filename: str) -> str:
    """``cp311-cp311-linux_x86_64``: the tag part of a plain wheel name."""
    return "-".join(filename[:-4].split("-")[-3:])


def _fallback(builds: Sequence[tuple[Path, Any]], plain: str | None) -> Path:
    if plain is not None:
        for wheel, _ in builds:
            if (_local_of(wheel.name) or "").lower() == plain.lower():
                return wheel
        raise UsageError(
            f"[variants] plain = {plain!r} names no build among "
            f"{', '.join(sorted(w.name for w, _ in builds))}",
            hint="name the local label of one build, e.g. cu128",
        )
    ordered = sorted(builds, key=lambda pair: (pair[1].cuda is None, pair[1].cuda, pair[0].name))
    return ordered[0][0]


def publish_configured(
    section: VariantsSection, wheels: Sequence[Path], out_dir: Path
) -> tuple[Path, ...]:
    """:func:`publish_variants` as a project's ``[variants]`` says; nothing when it is off."""
    if not section.enabled or not wheels:
        return ()
    return publish_variants(
        wheels,
        out_dir,
        template=section.label,
        plain=section.plain,
        null=section.null,
        upper_bound=section.upper_bound,
    )
