"""What `cuship attest` does, as a library call: pick the predicate, sign, write the envelopes.

One envelope per file by default (``FILE.intoto.jsonl`` beside it, which ``cuship index`` links
from the wheel's row); with ``out`` one envelope whose statement lists every file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from cuship import _read
from cuship.attest import attest, attestation_path, write_envelope
from cuship.attest.keys import SigningKey
from cuship.attest.predicates import (
    BENCH_PREDICATE,
    CHECK_PREDICATE,
    SLSA_PROVENANCE,
    BuildRun,
    bench_predicate,
    build_predicate,
    builder_identity,
    check_predicate,
    jobs_from_results,
)
from cuship.errors import InputError, UsageError

__all__ = ["Attested", "PredicateKind", "attest_files", "predicate_for", "read_results"]

PredicateKind = Literal["build", "check", "bench"]
Machine = Callable[[], Mapping[str, Any]]


def read_results(path: Path) -> object:
    """A results document (JSON); unreadable or malformed files are an :class:`InputError`."""
    try:
        return _read.read_json(path, _read.RESULTS)
    except OSError as err:
        raise InputError(f"cannot read results {str(path)!r}: {err.strerror or err}") from err
    except _read.Refused as err:
        raise InputError(
            err.message,
            hint="pass what `cuship check --format json -o F` or `cuship bench --export json` wrote",
        ) from err


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _toolchain(machine: Mapping[str, Any]) -> dict[str, str | None]:
    toolkit, torch = machine.get("toolkit"), machine.get("torch")
    return {
        "nvcc": toolkit.get("version") if isinstance(toolkit, Mapping) else None,
        "torch": torch.get("version") if isinstance(torch, Mapping) else None,
        "python": machine.get("python"),
    }


def _build(
    files: Sequence[Path], documents: Sequence[object], environ: Mapping[str, str], machine: Machine
) -> dict[str, Any]:
    from cuship.wheel.audit import inspect_wheel

    not_wheels = [str(f) for f in files if f.suffix != ".whl"]
    if not_wheels:
        raise UsageError(
            f"--predicate build attests wheels; not a wheel: {not_wheels[0]!r}",
            hint="use --predicate check or bench for results files",
        )
    reports = [inspect_wheel(f) for f in files]
    jobs = [job for doc in documents for job in jobs_from_results(doc)]
    builder, invocation = builder_identity(environ)
    run = BuildRun(
        builder_id=builder,
        invocation_id=invocation,
        started_on=None,
        finished_on=_iso(max(f.stat().st_mtime for f in files)),
        toolchain=_toolchain(machine()),
    )
    return build_predicate(reports, run=run, jobs=jobs)


def _one_document(
    kind: str, files: Sequence[Path], documents: Sequence[object]
) -> Mapping[str, Any]:
    found = list(documents) or [read_results(f) for f in files if f.suffix == ".json"]
    if len(found) != 1 or not isinstance(found[0], Mapping):
        count = "no" if not found else f"{len(found)}"
        raise UsageError(
            f"--predicate {kind} needs one results document, got {count}",
            hint=f"pass --results FILE once, or attest the {kind} results .json file itself",
        )
    return found[0]


def predicate_for(
    kind: PredicateKind,
    files: Sequence[Path],
    *,
    results: Sequence[Path] = (),
    environ: Mapping[str, str],
    machine: Machine,
) -> tuple[str, dict[str, Any]]:
    """(predicateType, predicate) for attesting ``files``.

    ``machine`` gives this machine's fingerprint (called only when needed): the toolchain of a
    build, the environment of check/bench results that carry none of their own.
    """
    documents = [read_results(path) for path in results]
    if kind == "build":
        return SLSA_PROVENANCE, _build(files, documents, environ, machine)
    document = _one_document(kind, files, documents)
    own = any(isinstance(document.get(k), Mapping) for k in ("fingerprint", "environment"))
    environment = {} if own else machine()
    if kind == "check":
        return CHECK_PREDICATE, check_predicate(document, environment=environment)
    return BENCH_PREDICATE, bench_predicate(document, environment=environment)


@dataclass(frozen=True, slots=True, kw_only=True)
class Attested:
    """What :func:`attest_files` signed: the key, the kind of predicate and the envelopes."""

    keyid: str
    predicate: PredicateKind
    envelopes: tuple[Path, ...]

    def to_json(self) -> dict[str, object]:
        """``cuship attest --json``."""
        return {
            "keyid": self.keyid,
            "predicate": self.predicate,
            "envelopes": [str(p) for p in self.envelopes],
        }


def attest_files(
    files: Sequence[Path],
    key: SigningKey,
    *,
    kind: PredicateKind = "build",
    results: Sequence[Path] = (),
    out: Path | None = None,
    environ: Mapping[str, str],
    machine: Machine,
) -> Attested:
    """Sign and write attestations; what was signed, with the envelope paths written."""
    for path in files:
        if not path.is_file():
            raise InputError(f"no such file to attest: {str(path)!r}")
    if kind != "build" and not results:
        results = tuple(path for path in files if path.suffix == ".json")
    once = functools.cache(machine)
    groups = [list(files)] if out is not None else [[path] for path in files]
    written: list[Path] = []
    for group in groups:
        predicate_type, predicate = predicate_for(
            kind, group, results=results, environ=environ, machine=once
        )
        envelope = attest(group, key, predicate_type=predicate_type, predicate=predicate)
        target = out if out is not None else attestation_path(group[0])
        written.append(write_envelope(envelope, target))
    return Attested(keyid=key.keyid, predicate=kind, envelopes=tuple(written))
