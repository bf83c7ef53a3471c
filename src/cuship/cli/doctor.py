"""`cuship doctor [PACKAGE…] [--json]`: why an installed CUDA package will not run here (no
kernel image for a GPU, a driver too old for its CUDA, a torch ABI mismatch, a glibc too old),
one line per problem with the command that fixes it. Exit 1 when a problem is found."""

from __future__ import annotations

import click

from cuship.cli._common import exit_with, json_option, make_console
from cuship.doctor import DoctorReport, GpuRun, Machine, PackageReport, diagnose
from cuship.judge.ptx import reach_lines


@click.command("doctor")
@click.argument("packages", nargs=-1, metavar="[PACKAGE]...")
@json_option
def command(packages: tuple[str, ...], as_json: bool) -> None:
    """Check installed packages with compiled code against this machine's GPUs, driver, torch
    and glibc (all of them, or the PACKAGEs named)."""
    console = make_console()
    report = diagnose(packages)
    if as_json:
        console.print_json(report.to_json())
    else:
        console.print_text(render(report, detailed=bool(packages)))
    exit_with(report.exit_code)


def render(report: DoctorReport, *, detailed: bool = False) -> str:
    """The report as text: the machine, a block per package (one line for a package with no
    CUDA or torch code and no problem, unless ``detailed``), the summary."""
    lines = [_machine(report.machine), ""]
    for package in report.packages:
        lines += _package(package, detailed=detailed)
    for skipped in report.skipped:
        lines.append(f"{skipped.name}: not checked: {skipped.reason}")
    count = len(report.problems)
    verdict = "no problem" if not count else f"{count} problem{'s' * (count > 1)}"
    unchecked = len(report.unchecked)
    if unchecked:
        verdict = ("no problem found" if not count else verdict) + (
            f"; {unchecked} check{'s' * (unchecked > 1)} could not run (the 'not checked' lines)"
        )
    checked = len(report.packages)
    lines.append(
        f"{checked} distribution{'s' * (checked != 1)} with compiled code checked (of "
        f"{report.scanned} looked at) in {report.seconds:.2f} s: {verdict}"
    )
    return "\n".join(lines)


def _machine(machine: Machine) -> str:
    gpus = ", ".join(f"{name} ({cc or '?'})" for name, cc in dict.fromkeys(machine.gpus))
    driver = machine.driver_version or "unknown"
    if machine.driver_cuda:
        driver += f" (CUDA {machine.driver_cuda})"
    torch = machine.torch_build or "torch not installed"
    return (
        f"this machine: GPUs {gpus or 'none'} [{machine.gpu_source}] · driver {driver} · "
        f"{torch} · glibc {machine.glibc or 'unknown'}"
    )


def _plain(package: PackageReport) -> bool:
    return not (
        package.problems
        or package.unchecked
        or package.sass
        or package.ptx
        or package.libraries
        or package.torch.abi != "none"
        or package.provenance.variant
    )


def _package(package: PackageReport, *, detailed: bool) -> list[str]:
    head = f"{package.name} {package.version}"
    glibc = package.glibc
    if _plain(package) and not detailed:
        fits = f"; {glibc.tag} fits glibc {glibc.system}" if glibc.ok else ""
        return [f"{head}: {_count(len(package.objects))}, no CUDA or torch code{fits}"]
    provenance = package.provenance
    if provenance.variant:
        head += f"  variant {provenance.variant} ({provenance.variant_from})"
    if provenance.filename:
        head += f"  from {provenance.filename}"
    if provenance.index:
        head += f" ({provenance.index})"
    lines = [head, f"  objects  {_objects(package)}"]
    if package.sass or package.ptx:
        lines += [f"  ptx      {line}" for line in reach_lines(package.ptx)]
    lines += [f"  gpu      {_gpu(run)}" for run in package.gpus]
    lines += [
        f"  cuda     needs {lib.soname} (CUDA {lib.cuda_major}): {_ok(lib.runs, 'driver')}"
        + (f", from {lib.source}" if lib.source else "")
        for lib in package.libraries
    ]
    lines.append(f"  torch    {_torch(package)}")
    lines.append(f"  glibc    {_glibc(package)}")
    for problem in package.problems:
        lines.append(f"  PROBLEM  [{problem.area}] {problem.message}")
        lines.append(f"     fix   {problem.fix}")
    lines += [f"  not checked  {line}" for line in package.unchecked]
    lines += [f"  note     {note}" for note in package.notes]
    return [*lines, ""]


def _count(objects: int) -> str:
    return f"{objects} shared object{'s' * (objects != 1)}"


def _objects(package: PackageReport) -> str:
    code = []
    if package.sass:
        code.append("SASS " + " ".join(f"sm_{s}" for s in package.sass))
    if package.ptx:
        code.append("PTX " + " ".join(f"compute_{p}" for p in package.ptx))
    return f"{_count(len(package.objects))}; " + (
        "; ".join(code) if code else "no CUDA device code"
    )


def _gpu(run: GpuRun) -> str:
    where = f"{run.gpu} ({run.cc}): "
    if run.runs == "sass":
        return where + f"native ({', '.join(run.arches)})"
    if run.runs == "ptx":
        return where + f"JIT from PTX ({', '.join(run.arches)}; slow first launch)"
    return where + "nothing it can run (no kernel image)"


def _ok(value: bool | None, what: str) -> str:
    if value is None:
        return f"{what} unknown, not checked"
    return "ok" if value else "FAILS"


def _torch(package: PackageReport) -> str:
    torch = package.torch
    if torch.abi == "none" and torch.flavour is None:
        return "links no torch"
    build = ""
    if torch.flavour == "cuda":
        build = f", needs a CUDA{' ' + str(torch.cuda_major) if torch.cuda_major else ''} build"
    built = f", built for torch {torch.built} (its {torch.built_from})" if torch.built else ""
    state = " — FAILS" if torch.ok is False else ""
    return f"{torch.abi} ABI{build}{built}: {torch.reason}{state}"


def _glibc(package: PackageReport) -> str:
    glibc = package.glibc
    if glibc.needed is None:
        return f"{glibc.tag or 'no tag'}: no glibc version promised"
    return f"{glibc.tag} needs glibc {glibc.needed}; this system has {glibc.system or '?'}: " + (
        _ok(glibc.ok, "glibc")
    )
