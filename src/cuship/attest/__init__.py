"""Signed statements about wheels and results: in-toto Statement v1 in DSSE envelopes, ed25519.

``keygen`` makes a key pair; :func:`attest` signs a statement whose subjects are files (their
sha256) and whose predicate says how they were built (SLSA provenance v1) or what a check or
bench run found; :func:`verify` checks an envelope against a public key and files. An
attestation for FILE is written as ``FILE.intoto.jsonl`` beside it (one envelope, one line),
which is where ``cuship index`` looks for it.

(A package, not the single ``attest.py`` of DESIGN.md: keys, envelopes, predicates and
verification are four ideas and together would pass the 400-line limit.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cuship._fs import write_atomic
from cuship.attest.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    STATEMENT_TYPE,
    Envelope,
    Subject,
    envelope_json,
    pae,
    parse_envelope,
    sign,
    statement,
    subject_of,
)
from cuship.attest.keys import (
    KeyPair,
    SigningKey,
    VerifyKey,
    key_id,
    keygen,
    load_signing_key,
    load_verify_key,
)
from cuship.attest.predicates import (
    BENCH_PREDICATE,
    BUILD_TYPE,
    CHECK_PREDICATE,
    SLSA_PROVENANCE,
    BuildRun,
    bench_predicate,
    build_predicate,
    builder_identity,
    check_predicate,
    jobs_from_results,
)
from cuship.attest.verify import FileCheck, Verification, verify
from cuship.errors import InputError

__all__ = [
    "ATTESTATION_SUFFIX",
    "BENCH_PREDICATE",
    "BUILD_TYPE",
    "CHECK_PREDICATE",
    "IN_TOTO_PAYLOAD_TYPE",
    "SLSA_PROVENANCE",
    "STATEMENT_TYPE",
    "BuildRun",
    "Envelope",
    "FileCheck",
    "KeyPair",
    "SigningKey",
    "Subject",
    "Verification",
    "VerifyKey",
    "attest",
    "attestation_path",
    "bench_predicate",
    "build_predicate",
    "builder_identity",
    "check_predicate",
    "envelope_json",
    "jobs_from_results",
    "key_id",
    "keygen",
    "load_signing_key",
    "load_verify_key",
    "pae",
    "parse_envelope",
    "sign",
    "statement",
    "subject_of",
    "verify",
    "write_envelope",
]

ATTESTATION_SUFFIX = ".intoto.jsonl"


def attestation_path(file: Path) -> Path:
    """Where the attestation of ``file`` lives by default: ``FILE.intoto.jsonl`` beside it."""
    return file.with_name(file.name + ATTESTATION_SUFFIX)


def attest(
    files: Sequence[Path],
    key: SigningKey,
    *,
    predicate_type: str,
    predicate: Mapping[str, Any],
) -> Envelope:
    """A signed in-toto statement whose subjects are ``files`` (name and sha256 of each)."""
    if not files:
        raise InputError("nothing to attest: no file given", hint="pass wheels or results files")
    subjects = [subject_of(path) for path in files]
    return sign(statement(subjects, predicate_type, predicate), key)


def write_envelope(envelope: Envelope, out: Path) -> Path:
    """Write ``envelope`` as one JSON line to ``out``, replacing it atomically."""
    data = (envelope_json(envelope) + "\n").encode("utf-8")
    try:
        write_atomic(out, data)
    except OSError as err:
        raise InputError(f"cannot write {str(out)!r}: {err.strerror or err}") from err
    return out
