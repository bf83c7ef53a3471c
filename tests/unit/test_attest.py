"""Attestations: PAE bytes, keys, signing round trip, and every tampering caught with its reason."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from cuship.attest import (
    CHECK_PREDICATE,
    SigningKey,
    VerifyKey,
    attest,
    attestation_path,
    envelope_json,
    keygen,
    load_signing_key,
    load_verify_key,
    pae,
    sign,
    statement,
    subject_of,
    verify,
    write_envelope,
)
from cuship.attest.dsse import Subject
from cuship.errors import InputError, ToolMissing, UsageError


def test_pae_is_the_dsse_v1_encoding_with_decimal_byte_lengths() -> None:
    # The DSSE protocol's own test vector, written out by hand: "DSSEv1" SP LEN(type) SP type
    # SP LEN(body) SP body, lengths as ASCII decimal without leading zeros.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    assert pae("", b"") == b"DSSEv1 0  0 "
    # Lengths count UTF-8 bytes, not characters: "é" is two bytes.
    assert pae("é", b"\x00") == b"DSSEv1 2 \xc3\xa9 1 \x00"


@pytest.fixture
def keys(tmp_path: Path) -> tuple[SigningKey, VerifyKey]:
    pair = keygen(tmp_path / "keys" / "signing")
    return load_signing_key(pair.private), load_verify_key(pair.public)


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    path = tmp_path / "demo-1.0+cu128-cp311-cp311-linux_x86_64.whl"
    path.write_bytes(b"PK not really a wheel, but bytes with a sha256" * 10)
    return path


def _envelope(path: Path) -> dict[str, object]:
    document = json.loads(path.read_text())
    assert isinstance(document, dict)
    return document


def _attested(wheel: Path, key: SigningKey) -> Path:
    envelope = attest([wheel], key, predicate_type=CHECK_PREDICATE, predicate={"verdict": "passed"})
    return write_envelope(envelope, attestation_path(wheel))


def test_keygen_writes_a_private_key_only_its_owner_reads_and_the_public_key_beside_it(
    tmp_path: Path,
) -> None:
    pair = keygen(tmp_path / "k")
    assert stat.S_IMODE(pair.private.stat().st_mode) == 0o600
    assert pair.public == tmp_path / "k.pub"
    assert b"BEGIN PRIVATE KEY" in pair.private.read_bytes()
    assert b"BEGIN PUBLIC KEY" in pair.public.read_bytes()
    public = load_verify_key(pair.public)
    raw = public.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert pair.keyid == public.keyid == hashlib.sha256(raw).hexdigest()
    assert load_signing_key(pair.private).keyid == pair.keyid


def test_keygen_refuses_to_overwrite_a_key_or_its_public_half(tmp_path: Path) -> None:
    pair = keygen(tmp_path / "k")
    before = pair.private.read_bytes()
    with pytest.raises(UsageError, match=r"refusing to overwrite '.*/k': it exists"):
        keygen(tmp_path / "k")
    assert pair.private.read_bytes() == before
    (tmp_path / "other.pub").write_text("someone else's key")
    with pytest.raises(UsageError, match=r"other\.pub"):
        keygen(tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_unreadable_or_foreign_key_files_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the public key"):
        load_verify_key(tmp_path / "missing.pub")
    (tmp_path / "junk.pub").write_text("not a key")
    with pytest.raises(InputError, match="not a PEM public key"):
        load_verify_key(tmp_path / "junk.pub")
    ec_key = ec.generate_private_key(ec.SECP256R1())
    pem = ec_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "ec").write_bytes(pem)
    with pytest.raises(InputError, match="not an ed25519 key"):
        load_signing_key(tmp_path / "ec")
    assert InputError.exit_code == 2


def test_round_trip_verifies_signature_statement_and_file(
    keys: tuple[SigningKey, VerifyKey], wheel: Path
) -> None:
    signing, public = keys
    envelope_path = _attested(wheel, signing)
    assert envelope_path.name == wheel.name + ".intoto.jsonl"
    assert envelope_path.read_text().count("\n") == 1  # one envelope, one line
    document = _envelope(envelope_path)
    assert document["payloadType"] == "application/vnd.in-toto+json"
    payload = json.loads(base64.b64decode(str(document["payload"])))
    assert payload["_type"] == "https://in-toto.io/Statement/v1"
    assert payload["subject"] == [
        {"name": wheel.name, "digest": {"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}}
    ]
    result = verify(envelope_path, key=public, files=[wheel])
    assert result.ok, result.problems
    assert result.predicate_type == CHECK_PREDICATE
    assert result.predicate == {"verdict": "passed"}
    assert [f.ok for f in result.files] == [True]


def test_a_flipped_byte_in_the_wheel_is_reported_with_both_digests(
    keys: tuple[SigningKey, VerifyKey], wheel: Path
) -> None:
    signing, public = keys
    envelope_path = _attested(wheel, signing)
    expected = hashlib.sha256(wheel.read_bytes()).hexdigest()
    data = bytearray(wheel.read_bytes())
    data[7] ^= 0x01
    wheel.write_bytes(bytes(data))
    actual = hashlib.sha256(bytes(data)).hexdigest()
    result = verify(envelope_path, key=public, files=[wheel])
    assert not result.ok
    assert result.problems == (
        f"sha256 of {str(wheel)!r} is {actual}, the statement says {expected}",
    )


def test_an_edited_payload_breaks_the_signature(
    keys: tuple[SigningKey, VerifyKey], wheel: Path
) -> None:
    signing, public = keys
    envelope_path = _attested(wheel, signing)
    document = _envelope(envelope_path)
    payload = base64.b64decode(str(document["payload"])).replace(b"passed", b"failed")
    document["payload"] = base64.b64encode(payload).decode()
    envelope_path.write_text(json.dumps(document))
    result = verify(envelope_path, key=public, files=[wheel])
    assert len(result.problems) == 1
    assert result.problems[0].startswith(f"signature invalid for key id {public.keyid}")


def test_a_signature_from_another_key_names_both_key_ids(
    tmp_path: Path, keys: tuple[SigningKey, VerifyKey], wheel: Path
) -> None:
    signing, public = keys
    envelope_path = _attested(wheel, signing)
    other = load_verify_key(keygen(tmp_path / "other").public)
    result = verify(envelope_path, key=other, files=[wheel])
    assert result.problems == (f"signed by key id {signing.keyid}, expected {other.keyid}",)
    assert verify(envelope_path, key=public).ok


def test_a_truncated_envelope_says_it_looks_cut_short(
    keys: tuple[SigningKey, VerifyKey], wheel: Path
) -> None:
    signing, public = keys
    envelope_path = _attested(wheel, signing)
    envelope_path.write_bytes(envelope_path.read_bytes()[:120])
    (problem,) = verify(envelope_path, key=public, files=[wheel]).problems
    assert problem.startswith("not valid JSON (it looks cut short")


def test_a_payload_type_other_than_in_toto_is_rejected_after_a_valid_signature(
    keys: tuple[SigningKey, VerifyKey], wheel: Path, tmp_path: Path
) -> None:
    signing, public = keys
    body = statement([subject_of(wheel)], CHECK_PREDICATE, {})
    out = write_envelope(sign(body, signing, payload_type="application/json"), tmp_path / "e")
    (problem,) = verify(out, key=public).problems
    assert problem == "payloadType is 'application/json', expected 'application/vnd.in-toto+json'"


def test_a_statement_without_subjects_or_not_naming_the_file_fails(
    keys: tuple[SigningKey, VerifyKey], wheel: Path, tmp_path: Path
) -> None:
    signing, public = keys
    empty = write_envelope(sign(statement([], CHECK_PREDICATE, {}), signing), tmp_path / "e1")
    assert verify(empty, key=public).problems == (
        "the statement has no subject: it attests nothing",
    )
    other = Subject(name="other.whl", sha256="0" * 64)
    named = write_envelope(sign(statement([other], CHECK_PREDICATE, {}), signing), tmp_path / "e2")
    (problem,) = verify(named, key=public, files=[wheel]).problems
    assert problem == f"{wheel.name!r} is not a subject of the statement (subjects: other.whl)"


def test_url_safe_base64_is_accepted_and_a_missing_file_is_bad_input(
    keys: tuple[SigningKey, VerifyKey], wheel: Path, tmp_path: Path
) -> None:
    signing, public = keys
    envelope = attest([wheel], signing, predicate_type=CHECK_PREDICATE, predicate={"x": "?>?>"})
    document = json.loads(envelope_json(envelope))
    document["payload"] = base64.urlsafe_b64encode(envelope.payload).decode().rstrip("=")
    path = tmp_path / "urlsafe.jsonl"
    path.write_text(json.dumps(document))
    assert verify(path, key=public, files=[wheel]).ok
    with pytest.raises(InputError, match="no such file to check"):
        verify(path, key=public, files=[tmp_path / "absent.whl"])
    with pytest.raises(InputError, match="cannot read the attestation"):
        verify(tmp_path / "absent.jsonl", key=public)


def test_without_cryptography_the_commands_name_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cuship.cli import main

    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.asymmetric", None)
    with pytest.raises(ToolMissing, match="'cryptography' package"):
        keygen(tmp_path / "k")
    assert main(["keygen", "-o", str(tmp_path / "k")]) == 3
    assert "pip install 'cuship[attest]'" in capsys.readouterr().err
