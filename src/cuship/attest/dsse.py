"""DSSE envelopes (secure-systems-lab/dsse, protocol v1) and in-toto Statement v1 payloads.

A signature covers the pre-authentication encoding of the payload type and the payload bytes,
``PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`` with LEN the byte count
in ASCII decimal, so neither the type nor the body can be swapped without breaking it. The
envelope is ``{"payloadType", "payload": base64(body), "signatures": [{"keyid", "sig"}]}``;
readers accept standard and URL-safe base64 as the protocol requires.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuship import _fs, _read
from cuship.attest.keys import SigningKey
from cuship.errors import InputError

__all__ = [
    "IN_TOTO_PAYLOAD_TYPE",
    "STATEMENT_TYPE",
    "Envelope",
    "EnvelopeError",
    "Subject",
    "b64decode",
    "envelope_json",
    "pae",
    "parse_envelope",
    "sign",
    "statement",
    "subject_of",
]

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
MAX_SIGNATURES = 64  # each is an ed25519 check; real envelopes carry one or two
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


class EnvelopeError(Exception):
    """Internal: the envelope cannot be decoded; the message is the reason a user reads."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """One artefact a statement is about: its file name and sha256."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "digest": {"sha256": self.sha256}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature:
    keyid: str | None
    sig: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """A decoded envelope: the exact payload bytes that were signed, and the signatures."""

    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...]


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding of ``payload_type`` (UTF-8) and ``body``."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks; unreadable files are an :class:`InputError`."""
    try:
        return _fs.sha256_file(path)
    except OSError as err:
        raise InputError(f"cannot read {str(path)!r}: {err.strerror or err}") from err


def subject_of(path: Path) -> Subject:
    """The subject for a file: its base name and sha256."""
    return Subject(name=path.name, sha256=sha256_file(path))


def statement(
    subjects: Sequence[Subject], predicate_type: str, predicate: Mapping[str, Any]
) -> bytes:
    """An in-toto Statement v1, serialised once (the bytes that get signed)."""
    document = {
        "_type": STATEMENT_TYPE,
        "subject": [s.to_json() for s in subjects],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")


def sign(body: bytes, key: SigningKey, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> Envelope:
    """Sign ``body`` as ``payload_type`` with ``key``."""
    signature = key.key.sign(pae(payload_type, body))
    return Envelope(
        payload_type=payload_type,
        payload=body,
        signatures=(Signature(keyid=key.keyid, sig=signature),),
    )


def envelope_json(envelope: Envelope) -> str:
    """The envelope as one line of JSON (a ``.intoto.jsonl`` file holds one per line)."""
    document = {
        "payloadType": envelope.payload_type,
        "payload": base64.b64encode(envelope.payload).decode("ascii"),
        "signatures": [
            {"keyid": s.keyid or "", "sig": base64.b64encode(s.sig).decode("ascii")}
            for s in envelope.signatures
        ],
    }
    return json.dumps(document, separators=(",", ":"))


def b64decode(text: str) -> bytes:
    """Standard or URL-safe base64, padding optional; anything else raises ``ValueError``."""
    altchars = b"-_" if ("-" in text or "_" in text) else None
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded, altchars=altchars, validate=True)
    except binascii.Error as err:
        raise ValueError(str(err)) from err


def _field(document: Mapping[str, Any], name: str, kind: type) -> Any:
    value = document.get(name)
    if not isinstance(value, kind):
        found = "missing" if value is None else f"a {type(value).__name__}"
        raise EnvelopeError(f"envelope field {name!r} is {found}, expected a {kind.__name__}")
    return value


def _signature(raw: object, index: int) -> Signature:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("sig"), str):
        raise EnvelopeError(f"signatures[{index}] has no 'sig' string")
    keyid = raw.get("keyid")
    try:
        sig = b64decode(raw["sig"])
    except ValueError as err:
        raise EnvelopeError(f"signatures[{index}].sig is not base64: {err}") from err
    return Signature(keyid=keyid if isinstance(keyid, str) and keyid else None, sig=sig)


def parse_envelope(text: str) -> Envelope:
    """Decode one DSSE envelope; every defect raises :class:`EnvelopeError` with the reason.

    The text is untrusted: nesting too deep for the parser and strings that are not Unicode
    text (a lone surrogate as ``payloadType``) are defects like any other.
    """
    try:
        document = _read.loads(text)
    except _read.JsonRefused as refused:
        err = refused.__cause__
        if not isinstance(err, json.JSONDecodeError):
            raise EnvelopeError(f"not a DSSE envelope cuship reads: it {refused.problem}") from None
        if err.msg == "Extra data":
            raise EnvelopeError(
                "holds more than one JSON document; cuship reads one envelope per file"
            ) from err
        ended = text.rstrip().endswith(("}", "]"))
        cut = "" if ended else " (it looks cut short: it does not end with '}')"
        raise EnvelopeError(f"not valid JSON{cut}: {err}") from err
    if not isinstance(document, Mapping):
        raise EnvelopeError(f"not a DSSE envelope: a JSON {type(document).__name__}")
    payload_type = _field(document, "payloadType", str)
    try:
        payload = b64decode(_field(document, "payload", str))
    except ValueError as err:
        raise EnvelopeError(f"envelope payload is not base64: {err}") from err
    raw_signatures = _field(document, "signatures", list)
    if not raw_signatures:
        raise EnvelopeError("the envelope holds no signature")
    if len(raw_signatures) > MAX_SIGNATURES:
        raise EnvelopeError(
            f"the envelope holds {len(raw_signatures):,} signatures; cuship checks at most "
            f"{MAX_SIGNATURES}"
        )
    signatures = tuple(_signature(raw, i) for i, raw in enumerate(raw_signatures))
    return Envelope(payload_type=payload_type, payload=payload, signatures=signatures)
