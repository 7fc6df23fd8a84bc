"""The demo's local test timestamp authority (``ledger.stack.local_tsa``): owner-only
files, kept while valid and renewed when not, named as a test authority in its tokens, and
its tokens accepted by OpenSSL and by our own verifier over loopback HTTP."""

from __future__ import annotations

import datetime as dt
import stat
import subprocess
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from ledger.core.timestamps.errors import TimestampRejected
from ledger.core.timestamps.rfc3161 import build_request, verify_response
from ledger.core.timestamps.tsa_chain import TsaTrust
from ledger.stack.local_tsa import (
    LOCAL_TSA_NAME,
    LocalTsaError,
    LocalTsaServer,
    issue_tsa,
    open_tsa,
    openssl_reply,
)
from tests.harness.tsa import openssl

ROOT = bytes(range(32))
NONCE = 0x0BAD_CAFE


def test_every_file_is_owner_only(tmp_path: Path) -> None:
    authority = issue_tsa(tmp_path / "local-tsa")
    assert stat.S_IMODE(authority.folder.stat().st_mode) == 0o700
    files = sorted(p.name for p in authority.folder.iterdir())
    assert files == ["ca.pem", "serial", "tsa.cnf", "tsa.key", "tsa.pem"]
    for path in authority.folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_valid_authority_is_kept_and_one_about_to_expire_is_renewed(tmp_path: Path) -> None:
    folder = tmp_path / "local-tsa"
    first = open_tsa(folder)
    ca = first.ca_file.read_bytes()
    assert open_tsa(folder) == first and first.ca_file.read_bytes() == ca  # kept
    assert first.name == f"CN={LOCAL_TSA_NAME}"

    expires = x509.load_pem_x509_certificate(first.tsa_cert_file.read_bytes()).not_valid_after_utc
    open_tsa(folder, now=expires - dt.timedelta(hours=1))
    assert first.ca_file.read_bytes() != ca  # renewed: a day before the end at the latest

    (folder / "tsa.key").unlink()
    renewed = first.ca_file.read_bytes()
    open_tsa(folder)
    assert first.ca_file.read_bytes() != renewed  # an incomplete folder is issued again


def test_a_moved_data_folder_keeps_its_authority_and_it_still_answers(tmp_path: Path) -> None:
    ca = open_tsa(tmp_path / "before" / "local-tsa").ca_file.read_bytes()
    moved = (tmp_path / "before").rename(tmp_path / "after") / "local-tsa"
    authority = open_tsa(moved)
    assert authority.ca_file.read_bytes() == ca
    trust = TsaTrust.from_pem(authority.ca_file.read_bytes(), name="ca.pem")
    reply = openssl_reply(authority, build_request(ROOT, nonce=NONCE), openssl=openssl())
    verify_response(reply, digest=ROOT, trust=trust, nonce=NONCE)


def test_its_tokens_over_http_verify_with_openssl_and_ours(tmp_path: Path) -> None:
    authority = open_tsa(tmp_path / "local-tsa")
    trust = TsaTrust.from_pem(authority.ca_file.read_bytes(), name="ca.pem")
    with LocalTsaServer(authority, openssl=openssl()) as server:
        reply = httpx.post(server.url, content=build_request(ROOT, nonce=NONCE))
        assert server.requests == 1
    assert reply.headers["content-type"] == "application/timestamp-reply"
    _token, verdict = verify_response(reply.content, digest=ROOT, trust=trust, nonce=NONCE)
    assert verdict.tsa == f"CN={LOCAL_TSA_NAME}"  # it says what it is in every token

    tsr = tmp_path / "r.tsr"
    tsr.write_bytes(reply.content)
    done = subprocess.run(
        [openssl(), "ts", "-verify", "-digest", ROOT.hex(), "-in", str(tsr),
         "-CAfile", str(authority.ca_file)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and "Verification: OK" in done.stdout, done


def test_a_request_it_cannot_read_is_refused_in_rfc_3161_terms(tmp_path: Path) -> None:
    authority = issue_tsa(tmp_path / "local-tsa")
    reply = openssl_reply(authority, b"not a request", openssl=openssl())
    trust = TsaTrust.from_pem(authority.ca_file.read_bytes(), name="ca.pem")
    with pytest.raises(TimestampRejected, match="rejection"):
        verify_response(reply, digest=ROOT, trust=trust, nonce=NONCE)


def test_when_openssl_fails_the_answer_is_http_500(tmp_path: Path) -> None:
    authority = issue_tsa(tmp_path / "local-tsa")
    authority.config_file.unlink()
    with pytest.raises(LocalTsaError, match="openssl ts -reply failed"):
        openssl_reply(authority, build_request(ROOT, nonce=NONCE), openssl=openssl())
    with LocalTsaServer(authority, openssl=openssl()) as server:
        reply = httpx.post(server.url, content=build_request(ROOT, nonce=NONCE))
    assert reply.status_code == 500 and reply.content == b""
