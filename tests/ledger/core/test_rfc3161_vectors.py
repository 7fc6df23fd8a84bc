"""Real RFC 3161 tokens of public TSAs (tests/vectors/rfc3161/README.md): they verify
offline at their own time under the named trust store, and one-byte mutations fail."""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from asn1crypto import cms

from ledger.core.timestamps.errors import Check, TimestampError
from ledger.core.timestamps.rfc3161 import token_from_response, verify_token
from ledger.core.timestamps.tsa_chain import TsaTrust

VECTORS = Path(__file__).parents[2] / "vectors" / "rfc3161"

#: file, trust anchor file, hash, message, TSA subject, genTime
CASES = [
    (
        "globalsign-token.p7s",
        "globalsign-root.pem",
        "sha256",
        b"notation",
        "CN=Globalsign TSA for Advanced - G4,O=GlobalSign nv-sa,C=BE",
        datetime(2021, 9, 17, 14, 9, 10, tzinfo=UTC),
    ),
    (
        "identrust-issue-104.tsr",
        "identrust-root.pem",
        "sha512",
        b"hello",
        "CN=TrustID Timestamp Authority,O=IdenTrust,C=US",
        datetime(2025, 3, 11, 8, 52, 8, tzinfo=UTC),
    ),
    (
        "sigstage-response-sha256.tsr",
        "sigstage-root.pem",
        "sha256",
        b"hello",
        "CN=sigstore-tsa,O=sigstore.dev",
        datetime(2025, 5, 9, 11, 58, 55, tzinfo=UTC),
    ),
    (
        "sigstage-response-sha384.tsr",
        "sigstage-root.pem",
        "sha384",
        b"hello",
        "CN=sigstore-tsa,O=sigstore.dev",
        datetime(2025, 5, 9, 11, 58, 55, tzinfo=UTC),
    ),
]


def _token(name: str) -> bytes:
    data = (VECTORS / name).read_bytes()
    return token_from_response(data) if name.endswith(".tsr") else data


def _trust(name: str) -> TsaTrust:
    return TsaTrust.from_pem((VECTORS / name).read_bytes(), name=name)


@pytest.mark.parametrize(("name", "anchor", "hash_name", "message", "tsa", "when"), CASES)
def test_public_token_verifies(
    name: str, anchor: str, hash_name: str, message: bytes, tsa: str, when: datetime
) -> None:
    digest = hashlib.new(hash_name, message).digest()
    verdict = verify_token(_token(name), digest=digest, trust=_trust(anchor), hash_name=hash_name)
    assert (verdict.tsa, verdict.gen_time, verdict.trust) == (tsa, when, anchor)
    assert verdict.chain[0] == tsa and verdict.serial > 0
    assert verdict.revocation == "not checked"


def test_globalsign_certificate_set_is_not_in_der_order() -> None:
    """The token strict DER parsers refuse (InvalidSetOrdering) still gets a verdict."""
    signed = cms.ContentInfo.load(_token("globalsign-token.p7s"))["content"]
    encodings = [c.dump() for c in signed["certificates"]]
    assert encodings != sorted(encodings)


def test_altered_signature_published_by_others_fails() -> None:
    token = _token("sigstage-response-invalid-signature.tsr")
    digest = hashlib.sha256(b"hello").digest()
    with pytest.raises(TimestampError) as caught:
        verify_token(token, digest=digest, trust=_trust("sigstage-root.pem"))
    assert caught.value.check is Check.SIGNATURE


@pytest.mark.parametrize(("name", "anchor", "hash_name", "message", "tsa", "when"), CASES[:3])
def test_other_digest_and_untrusted_ca_fail(
    name: str, anchor: str, hash_name: str, message: bytes, tsa: str, when: datetime
) -> None:
    token = _token(name)
    wrong = hashlib.new(hash_name, message + b"!").digest()
    with pytest.raises(TimestampError) as caught:
        verify_token(token, digest=wrong, trust=_trust(anchor), hash_name=hash_name)
    assert caught.value.check is Check.IMPRINT
    other = "identrust-root.pem" if anchor != "identrust-root.pem" else "globalsign-root.pem"
    digest = hashlib.new(hash_name, message).digest()
    with pytest.raises(TimestampError) as caught:
        verify_token(token, digest=digest, trust=_trust(other), hash_name=hash_name)
    assert caught.value.check is Check.CHAIN
    assert other in str(caught.value)


@pytest.mark.parametrize(("name", "anchor", "hash_name", "message", "tsa", "when"), CASES[:3])
def test_one_byte_mutations_fail(
    name: str, anchor: str, hash_name: str, message: bytes, tsa: str, when: datetime
) -> None:
    """Sixty positions per token (fixed seed), each byte flipped: none verifies.
    (A scan of every position is ``test_every_one_byte_mutation_fails``, marked slow.)"""
    token, trust = _token(name), _trust(anchor)
    digest = hashlib.new(hash_name, message).digest()
    for position in random.Random(name).sample(range(len(token)), 60):
        _assert_mutation_fails(token, position, digest=digest, trust=trust, hash_name=hash_name)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "anchor", "hash_name", "message", "tsa", "when"), CASES[:3])
def test_every_one_byte_mutation_fails(
    name: str, anchor: str, hash_name: str, message: bytes, tsa: str, when: datetime
) -> None:
    token, trust = _token(name), _trust(anchor)
    digest = hashlib.new(hash_name, message).digest()
    for position in range(len(token)):
        _assert_mutation_fails(token, position, digest=digest, trust=trust, hash_name=hash_name)


def _assert_mutation_fails(
    token: bytes, position: int, *, digest: bytes, trust: TsaTrust, hash_name: str
) -> None:
    mutated = bytearray(token)
    mutated[position] ^= 0x01
    with pytest.raises(TimestampError):
        verify_token(bytes(mutated), digest=digest, trust=trust, hash_name=hash_name)
