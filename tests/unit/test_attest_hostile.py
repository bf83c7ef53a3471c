"""Hostile envelopes for `cuship verify-attestation` (issue 16): a lone surrogate, JSON 100,000
deep, a file far too large. Each is a failed verification (exit 1) with its reason on stderr,
never a traceback; a file that cannot be opened stays bad input (exit 2)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from cuship.attest import (
    SigningKey,
    VerifyKey,
    envelope_json,
    keygen,
    load_signing_key,
    load_verify_key,
    sign,
    statement,
    verify,
)
from cuship.attest.dsse import Subject

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def keys(tmp_path: Path) -> tuple[SigningKey, VerifyKey, Path]:
    pair = keygen(tmp_path / "keys" / "signing")
    return load_signing_key(pair.private), load_verify_key(pair.public), pair.public


def _cli(envelope: Path, public: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from cuship.cli import main

    code = main(["verify-attestation", str(envelope), "--key", str(public)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out + captured.err


def _signed(tmp_path: Path, key: SigningKey, body: bytes) -> Path:
    path = tmp_path / "signed.intoto.jsonl"
    path.write_text(envelope_json(sign(body, key)) + "\n", encoding="utf-8")
    return path


def test_a_lone_surrogate_payload_type_is_a_failed_verification(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    envelope = tmp_path / "surrogate.intoto.jsonl"
    payload = base64.b64encode(b"{}").decode()
    sig = base64.b64encode(b"\0" * 64).decode()
    document = {"payloadType": "PT", "payload": payload, "signatures": [{"keyid": "", "sig": sig}]}
    # JSON allows the escape \ud800, a lone surrogate: a str Python cannot encode or sign over
    envelope.write_text(json.dumps(document).replace("PT", "\\ud800"), encoding="utf-8")
    result = verify(envelope, key=keys[1])
    (problem,) = result.problems
    assert "lone surrogate" in problem and "'\\ud800'" in problem
    code, said = _cli(envelope, keys[2], capsys)
    assert code == 1
    assert "lone surrogate" in said and str(envelope) in said


def test_a_100000_deep_envelope_is_a_failed_verification(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    envelope = tmp_path / "deep.intoto.jsonl"
    envelope.write_bytes(DEEP)
    (problem,) = verify(envelope, key=keys[1]).problems
    assert "nested too deeply" in problem
    code, said = _cli(envelope, keys[2], capsys)
    assert code == 1 and "nested too deeply" in said


def test_a_signed_100000_deep_statement_is_a_failed_verification(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    envelope = _signed(tmp_path, keys[0], DEEP)
    (problem,) = verify(envelope, key=keys[1]).problems
    assert "signed payload" in problem and "nested too deeply" in problem
    code, said = _cli(envelope, keys[2], capsys)
    assert code == 1 and "nested too deeply" in said


def test_a_signed_statement_naming_a_lone_surrogate_is_refused_not_printed(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = statement([Subject(name="SUBJECT", sha256="ab" * 32)], "https://x/p", {})
    body = good.replace(b"SUBJECT", b"\\udc80.whl")  # valid JSON; the string is no text
    envelope = _signed(tmp_path, keys[0], body)
    (problem,) = verify(envelope, key=keys[1]).problems
    assert "lone surrogate" in problem
    code, said = _cli(envelope, keys[2], capsys)
    assert code == 1 and "lone surrogate" in said


def test_an_envelope_past_the_size_cap_is_refused_unread(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    envelope = tmp_path / "huge.intoto.jsonl"
    with envelope.open("wb") as sparse:
        sparse.truncate(2 << 30)  # 2 GiB of hole: nothing is written
    (problem,) = verify(envelope, key=keys[1]).problems
    assert "larger than 64 MiB (2 GiB)" in problem
    code, said = _cli(envelope, keys[2], capsys)
    assert code == 1 and "larger than 64 MiB" in said
    small = _signed(tmp_path, keys[0], b"{}")
    (problem,) = verify(small, key=keys[1], max_bytes=16).problems
    assert "larger than 16 bytes" in problem


def test_an_envelope_that_cannot_be_opened_stays_bad_input(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, said = _cli(tmp_path / "absent.intoto.jsonl", keys[2], capsys)
    assert code == 2 and "cannot read the attestation" in said


def test_an_ordinary_envelope_with_an_emoji_still_verifies(
    tmp_path: Path, keys: tuple[SigningKey, VerifyKey, Path]
) -> None:
    body = statement([Subject(name="w\N{GRINNING FACE}.whl", sha256="ab" * 32)], "https://x/p", {})
    assert b"\\ud83d" in json.dumps(json.loads(body)).encode()  # a surrogate pair once escaped
    result = verify(_signed(tmp_path, keys[0], json.dumps(json.loads(body)).encode()), key=keys[1])
    assert result.ok, result.problems
    assert result.subjects[0].name == "w\N{GRINNING FACE}.whl"


def test_an_envelope_with_1000_signatures_is_refused_before_checking_them(
    tmp_path: Path,
    keys: tuple[SigningKey, VerifyKey, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = json.loads(envelope_json(sign(b"{}", keys[0])))
    good["signatures"] = good["signatures"] * 1_000
    envelope = tmp_path / "many.intoto.jsonl"
    envelope.write_text(json.dumps(good), encoding="utf-8")
    (problem,) = verify(envelope, key=keys[1]).problems
    assert "1,000 signatures" in problem and "at most 64" in problem
    code, said = _cli(envelope, keys[2], capsys)
    assert code == 1 and "1,000 signatures" in said


def test_a_results_file_100000_deep_is_bad_input(tmp_path: Path) -> None:
    from cuship.attest.run import read_results
    from cuship.errors import InputError

    results = tmp_path / "results.json"
    results.write_bytes(DEEP)
    with pytest.raises(InputError, match="nested too deeply") as caught:
        read_results(results)
    assert str(results) in str(caught.value) and caught.value.exit_code == 2
