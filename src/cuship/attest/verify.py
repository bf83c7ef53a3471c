"""Verify an attestation: the envelope decodes, the key signed it, the statement names the files.

The order follows the DSSE protocol: decode, check the signature over PAE(type, payload), then
the payload type, then parse the payload bytes that were verified (never a re-encoded copy).
Each failure is one reason a person can act on; a file that cannot be read or a key that cannot
be loaded is bad input (:class:`InputError`, exit 2), not a failed verification. What the file
holds is untrusted: more than ``max_bytes``, JSON nested too deep or strings that are not text
fail the verification with that reason (exit 1), never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuship import _read
from cuship.attest.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    STATEMENT_TYPE,
    Envelope,
    EnvelopeError,
    Subject,
    pae,
    parse_envelope,
    sha256_file,
)
from cuship.attest.keys import VerifyKey
from cuship.errors import InputError

__all__ = ["MAX_ENVELOPE_BYTES", "FileCheck", "Verification", "verify"]

MAX_ENVELOPE_BYTES = 64 << 20


class _Rejected(Exception):
    """Internal: verification stops here; the message is the reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileCheck:
    """One file compared with the statement's subjects."""

    path: str
    sha256: str
    ok: bool
    reason: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "sha256": self.sha256, "ok": self.ok, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Verification:
    """What :func:`verify` found; ``ok`` only when there is no problem at all."""

    envelope: str
    keyid: str
    problems: tuple[str, ...]
    predicate_type: str | None = None
    predicate: Mapping[str, Any] | None = None
    subjects: tuple[Subject, ...] = ()
    files: tuple[FileCheck, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {
            "envelope": self.envelope,
            "ok": self.ok,
            "keyid": self.keyid,
            "problems": list(self.problems),
            "predicate_type": self.predicate_type,
            "subjects": [s.to_json() for s in self.subjects],
            "files": [f.to_json() for f in self.files],
        }


def _envelope_text(path: Path, max_bytes: int) -> str:
    """The envelope's text (:mod:`cuship._read`): a FIFO or a device is bad input (exit 2);
    one past ``max_bytes`` or not UTF-8 is no envelope cuship reads (a failed verification)."""
    try:
        data = _read.read_bytes(path, _read.ENVELOPE, limit=max_bytes)
    except _read.NotRegular:
        raise
    except OSError as err:
        raise InputError(
            f"cannot read the attestation {str(path)!r}: {err.strerror or err}",
            hint=_read.ENVELOPE.hint,
        ) from err
    except _read.Refused as err:
        raise _Rejected(f"not a DSSE envelope cuship reads: it {err.problem}") from None
    try:
        return _read.decode(data, "the envelope")
    except _read.Refused as err:
        raise _Rejected(f"not a DSSE envelope: {err.problem.removeprefix('is ')}") from None


def _check_signature(envelope: Envelope, key: VerifyKey) -> None:
    from cryptography.exceptions import InvalidSignature

    message = pae(envelope.payload_type, envelope.payload)
    for signature in envelope.signatures:
        try:
            key.key.verify(signature.sig, message)
        except InvalidSignature:
            continue
        return
    others = sorted({s.keyid for s in envelope.signatures if s.keyid and s.keyid != key.keyid})
    if others and all(s.keyid != key.keyid for s in envelope.signatures):
        raise _Rejected(f"signed by key id {', '.join(others)}, expected {key.keyid}")
    raise _Rejected(
        f"signature invalid for key id {key.keyid}: the payload, its type or the signature "
        "was altered after signing"
    )


def _subject(raw: object, index: int) -> Subject:
    digest = raw.get("digest") if isinstance(raw, Mapping) else None
    name = raw.get("name") if isinstance(raw, Mapping) else None
    sha = digest.get("sha256") if isinstance(digest, Mapping) else None
    if not isinstance(name, str) or not isinstance(sha, str):
        raise _Rejected(f"statement subject[{index}] has no name and sha256 digest")
    return Subject(name=name, sha256=sha.lower())


def _statement(payload: bytes) -> tuple[str, Mapping[str, Any], tuple[Subject, ...]]:
    try:
        document = _read.loads(payload)
    except _read.JsonRefused as err:
        raise _Rejected(f"the signed payload {err.problem}") from err
    if not isinstance(document, Mapping) or document.get("_type") != STATEMENT_TYPE:
        found = document.get("_type") if isinstance(document, Mapping) else document
        raise _Rejected(f"the payload is not an in-toto Statement v1 (_type {found!r})")
    subjects = document.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise _Rejected("the statement has no subject: it attests nothing")
    predicate_type = document.get("predicateType")
    if not isinstance(predicate_type, str):
        raise _Rejected("the statement has no predicateType")
    predicate = document.get("predicate")
    return (
        predicate_type,
        predicate if isinstance(predicate, Mapping) else {},
        tuple(_subject(raw, i) for i, raw in enumerate(subjects)),
    )


def _check_file(path: Path, subjects: Sequence[Subject]) -> FileCheck:
    actual = sha256_file(path)
    named = [s for s in subjects if s.name == path.name]
    if any(s.sha256 == actual for s in named):
        return FileCheck(path=str(path), sha256=actual, ok=True)
    if named:
        reason = f"sha256 of {str(path)!r} is {actual}, the statement says {named[0].sha256}"
    elif any(s.sha256 == actual for s in subjects):
        return FileCheck(path=str(path), sha256=actual, ok=True)
    else:
        listed = ", ".join(s.name for s in subjects)
        reason = f"{path.name!r} is not a subject of the statement (subjects: {listed})"
    return FileCheck(path=str(path), sha256=actual, ok=False, reason=reason)


def verify(
    envelope_path: Path,
    *,
    key: VerifyKey,
    files: Sequence[Path] = (),
    max_bytes: int = MAX_ENVELOPE_BYTES,
) -> Verification:
    """Check ``envelope_path`` against ``key`` and, when given, ``files`` against its subjects.

    An envelope over ``max_bytes`` is refused unread (a failed verification).
    """
    for path in files:
        if not path.is_file():
            raise InputError(f"no such file to check: {str(path)!r}")
    where = str(envelope_path)
    try:
        envelope = parse_envelope(_envelope_text(envelope_path, max_bytes))
        _check_signature(envelope, key)
        if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE:
            raise _Rejected(
                f"payloadType is {envelope.payload_type!r}, expected {IN_TOTO_PAYLOAD_TYPE!r}"
            )
        predicate_type, predicate, subjects = _statement(envelope.payload)
    except (EnvelopeError, _Rejected) as why:
        return Verification(envelope=where, keyid=key.keyid, problems=(str(why),))
    checks = tuple(_check_file(path, subjects) for path in files)
    return Verification(
        envelope=where,
        keyid=key.keyid,
        problems=tuple(c.reason for c in checks if c.reason),
        predicate_type=predicate_type,
        predicate=predicate,
        subjects=subjects,
        files=checks,
    )
