"""RFC 3161 against a real authority: OpenSSL's own TSA (``tests.harness.tsa``), over
HTTP on loopback, and the faulty authority's every fault refused at its check."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ledger.core.timestamps.errors import Check, TimestampError, TimestampRejected
from ledger.core.timestamps.rfc3161 import build_request, verify_response, verify_token
from ledger.core.timestamps.tsa_chain import TsaTrust
from tests.harness.tsa import Fault, TsaAuthority, issue_tsa, openssl, openssl_reply, tsa_server

ROOT = hashlib.sha256(b"a directory block's key Merkle root").digest()
NONCE = 0x1234_5678_9ABC


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TsaAuthority:
    return issue_tsa(tmp_path_factory.mktemp("tsa"))


@pytest.fixture(scope="module")
def trust(authority: TsaAuthority) -> TsaTrust:
    return TsaTrust.from_pem(authority.ca_file.read_bytes(), name="ca.pem")


@pytest.fixture(scope="module")
def served(authority: TsaAuthority) -> Iterator[str]:
    with tsa_server(authority) as server:
        yield server.url


def test_openssl_token_over_http_verifies(served: str, trust: TsaTrust) -> None:
    reply = httpx.post(served, content=build_request(ROOT, nonce=NONCE)).content
    token, verdict = verify_response(reply, digest=ROOT, trust=trust, nonce=NONCE)
    assert verdict.tsa == "CN=notary test TSA"
    assert verdict.chain == ("CN=notary test TSA", "CN=notary test CA")
    assert verdict.trust == "ca.pem" and verdict.digest == ROOT
    assert verify_token(token, digest=ROOT, trust=trust) == verdict


def test_openssl_verifies_what_we_requested(
    authority: TsaAuthority, tmp_path: Path, trust: TsaTrust
) -> None:
    reply = openssl_reply(authority, build_request(ROOT, nonce=NONCE))
    verify_response(reply, digest=ROOT, trust=trust, nonce=NONCE)
    (tmp_path / "r.tsr").write_bytes(reply)
    done = subprocess.run(
        [openssl(), "ts", "-verify", "-digest", ROOT.hex(), "-in", str(tmp_path / "r.tsr"),
         "-CAfile", str(authority.ca_file)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "Verification: OK" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ("bad-signature", Check.SIGNATURE),
        ("wrong-nonce", Check.NONCE),
        ("wrong-imprint", Check.IMPRINT),
        ("rejection", Check.STATUS),
        ("garbage", Check.FORMAT),
    ],
)
def test_faulty_authority_is_refused_at_its_check(
    authority: TsaAuthority, trust: TsaTrust, fault: Fault, check: Check
) -> None:
    with tsa_server(authority, fault=fault) as server:
        reply = httpx.post(server.url, content=build_request(ROOT, nonce=NONCE)).content
    with pytest.raises(TimestampError) as caught:
        verify_response(reply, digest=ROOT, trust=trust, nonce=NONCE)
    assert caught.value.check is check
    assert isinstance(caught.value, TimestampRejected) == (fault == "rejection")


def test_expired_certificate_is_refused_at_the_tokens_time(tmp_path: Path) -> None:
    expired = issue_tsa(tmp_path, expired=True)
    reply = openssl_reply(expired, build_request(ROOT, nonce=NONCE))
    trust = TsaTrust.from_pem(expired.ca_file.read_bytes(), name="expired-ca.pem")
    with pytest.raises(TimestampError, match="not at the token's time") as caught:
        verify_response(reply, digest=ROOT, trust=trust, nonce=NONCE)
    assert caught.value.check is Check.CHAIN


def test_untrusted_ca_is_refused_by_name(authority: TsaAuthority, tmp_path: Path) -> None:
    reply = openssl_reply(authority, build_request(ROOT, nonce=NONCE))
    other = TsaTrust.from_pem(issue_tsa(tmp_path).ca_file.read_bytes(), name="other-ca.pem")
    with pytest.raises(TimestampError, match="other-ca.pem") as caught:
        verify_response(reply, digest=ROOT, trust=other, nonce=NONCE)
    assert caught.value.check is Check.CHAIN


def test_request_refuses_a_wrong_length_digest_or_nonce() -> None:
    with pytest.raises(ValueError, match="sha256"):
        build_request(ROOT[:31], nonce=NONCE)
    with pytest.raises(ValueError, match="nonce"):
        build_request(ROOT, nonce=0)
