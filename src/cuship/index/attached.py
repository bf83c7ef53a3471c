"""Files the index publishes beside a wheel: its attestation (``WHEEL.intoto.jsonl``).

``cuship attest`` writes the envelope next to the wheel; :func:`find_attestations` picks it up
when the wheel is indexed. The index does not verify the signature (it holds no key), but it
does read the statement and refuses to link an envelope whose subjects do not include this
wheel's sha256 (a stale attestation left beside a rebuilt wheel), with a warning.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping

from cuship import _read
from cuship._record import frozen
from cuship.events import Emit, Event, discard
from cuship.index.scan import IndexedWheel

__all__ = ["ATTESTATION_SUFFIX", "AttestationRef", "find_attestations", "statement_digests"]

ATTESTATION_SUFFIX = ".intoto.jsonl"  # the same name cuship.attest writes


@frozen
class AttestationRef:
    """An attestation the index links: its sha256 and, when the site holds it, its bytes.

    ``content`` is None for an attestation kept from an earlier release that lives with that
    release's wheels (``--keep-existing`` with an absolute URL): it is linked, not copied.
    """

    sha256: str
    content: bytes | None


def statement_digests(envelope: bytes) -> frozenset[str]:
    """sha256 digests of the subjects in a DSSE envelope's in-toto statement (unverified)."""
    from cuship.attest.dsse import b64decode

    digests: set[str] = set()
    for line in envelope.decode("utf-8", errors="replace").splitlines():
        try:
            document = _read.loads(line)
            payload = _read.loads(b64decode(document["payload"]))
            subjects = payload["subject"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(subjects, list):
            continue
        for subject in subjects:
            digest = subject.get("digest") if isinstance(subject, Mapping) else None
            if isinstance(digest, Mapping) and isinstance(digest.get("sha256"), str):
                digests.add(digest["sha256"].lower())
    return frozenset(digests)


def find_attestations(
    wheels: Iterable[IndexedWheel],
    emit: Emit = discard,
    *,
    listed: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, AttestationRef]:
    """``{wheel filename: attestation}`` for each wheel with a matching envelope beside it;
    ``listed``: the attestations' names in folders listed already (by ``str(Path(folder))``,
    as :func:`cuship.index.scan.wheel_files` gives them), so those are not listed again."""
    found: dict[str, AttestationRef] = {}
    names_in: dict[str, frozenset[str] | None] = dict(listed or {})
    for wheel in wheels:
        where = str(wheel.path)
        folder = os.path.dirname(where) or "."  # noqa: PTH120 - a string: per wheel
        if folder not in names_in:
            names_in[folder] = _names(folder)
        names = names_in[folder]
        if names is not None and (
            not names or where.rpartition("/")[2] + ATTESTATION_SUFFIX not in names
        ):
            continue
        path = wheel.path.with_name(wheel.path.name + ATTESTATION_SUFFIX)
        try:
            content = _read.read_bytes(path, _read.ENVELOPE)
        except FileNotFoundError:
            continue
        except (OSError, _read.Refused) as err:
            said = err.message if isinstance(err, _read.Refused) else err.strerror or err
            message = f"cannot read the attestation {str(path)!r}: {said}"
            emit(Event(level="warning", topic="index", message=message))
            continue
        if wheel.sha256 not in statement_digests(content):
            message = (
                f"not linking {str(path)!r}: its statement does not name this wheel's sha256 "
                f"{wheel.sha256} (attest the wheel again after rebuilding it)"
            )
            emit(Event(level="warning", topic="index", message=message))
            continue
        found[wheel.filename] = AttestationRef(
            sha256=hashlib.sha256(content).hexdigest(), content=content
        )
    return found


def _names(folder: str) -> frozenset[str] | None:
    """The attestations in ``folder`` (listed once: most wheels have none, and trying to open
    each one's is a failed system call per wheel); None when it cannot be listed."""
    try:
        names = os.listdir(folder)  # noqa: PTH208 - names only: 100,000 of them, no Path each
    except OSError:
        return None
    return frozenset(n for n in names if n.endswith(ATTESTATION_SUFFIX))
