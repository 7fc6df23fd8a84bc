"""HTTPS: ``python -m ledger.api`` serves TLS when given a certificate and a key.

A throw-away certificate authority (``trustme``) issues the server certificate for
127.0.0.1; a client that trusts that authority reaches the API over HTTPS, a client that
does not is refused by certificate verification, and plain HTTP to the same port gets no
answer. Without a certificate the API serves plain HTTP (the development default).
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from pydantic import ValidationError

from ledger.api.accounts import create_account
from ledger.api.db import Database
from ledger.api.settings import ApiSettings
from tests.harness.ports import free_port
from tests.harness.processes import ManagedProcess, child_env
from tests.harness.tls import TlsFiles, issue_certificate
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.e2e


def _account_key(data_dir: Path) -> str:
    db = Database(ApiSettings(data_dir=data_dir).resolved_database_url())
    try:
        db.create_schema()
        with db.write() as session:
            return create_account(session, "tls")[1]
    finally:
        db.dispose()


def _start_api(tmp_path: Path, port: int, extra: dict[str, str]) -> ManagedProcess:
    env = child_env(
        {
            "NOTARY_API_DATA_DIR": str(tmp_path / "api"),
            "NOTARY_API_PORT": str(port),
            "NOTARY_API_WORKER_ENABLED": "false",
            **extra,
        }
    )
    proc = ManagedProcess("api", [sys.executable, "-m", "ledger.api"], env, tmp_path / "api.log")
    proc.spawn()
    return proc


def _wait_listening(proc: ManagedProcess, url: str, verify: ssl.SSLContext | bool) -> None:
    def answers() -> bool:
        assert proc.alive, proc.log_tail()
        httpx.get(url, verify=verify, timeout=2)
        return True

    wait_until(
        answers,
        60,
        0.1,
        what=lambda: f"the API to answer at {url}: {proc.log_tail()}",
        ignoring=(httpx.TransportError,),
    )


@pytest.fixture
def tls_files(tmp_path: Path) -> TlsFiles:
    return issue_certificate(tmp_path / "tls")


@pytest.fixture
def authority(tls_files: TlsFiles) -> trustme.CA:
    return tls_files.authority


@pytest.fixture
def https_api(tmp_path: Path, tls_files: TlsFiles) -> Iterator[tuple[int, str]]:
    cert_file, key_file = tls_files.cert_file, tls_files.key_file
    (tmp_path / "api").mkdir()
    key = _account_key(tmp_path / "api")
    port = free_port()
    proc = _start_api(
        tmp_path,
        port,
        {"NOTARY_API_TLS_CERT_FILE": str(cert_file), "NOTARY_API_TLS_KEY_FILE": str(key_file)},
    )
    try:
        _wait_listening(proc, f"https://127.0.0.1:{port}/v1", _trusting(tls_files.authority))
        yield port, key
    finally:
        proc.stop()


def _trusting(authority: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    authority.configure_trust(context)
    return context


def test_https_with_the_authority_trusted(
    https_api: tuple[int, str], authority: trustme.CA
) -> None:
    port, key = https_api
    with httpx.Client(verify=_trusting(authority), timeout=10) as client:
        info = client.get(f"https://127.0.0.1:{port}/v1", headers={"user-key": key})
        assert info.status_code == 200 and info.json()["api_version"] == "1.0.11"
        created = client.post(
            f"https://127.0.0.1:{port}/v1/chains",
            json={"external_ids": ["dGxz"], "content": ""},
            headers={"user-key": key},
        )
        assert created.status_code == 202
        assert client.get(f"https://127.0.0.1:{port}/v1").status_code == 403  # no key


def test_untrusted_certificate_and_plain_http_are_refused(https_api: tuple[int, str]) -> None:
    port, key = https_api
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"https://127.0.0.1:{port}/v1", headers={"user-key": key}, timeout=10)
    with pytest.raises(httpx.TransportError):  # no HTTP answer on the TLS port
        httpx.get(f"http://127.0.0.1:{port}/v1", headers={"user-key": key}, timeout=10)


def test_plain_http_is_the_default(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    key = _account_key(tmp_path / "api")
    port = free_port()
    proc = _start_api(tmp_path, port, {})
    try:
        _wait_listening(proc, f"http://127.0.0.1:{port}/v1", False)
        answer = httpx.get(f"http://127.0.0.1:{port}/v1", headers={"user-key": key}, timeout=10)
        assert answer.status_code == 200
    finally:
        proc.stop()


def test_certificate_and_key_go_together(tmp_path: Path) -> None:
    assert ApiSettings().uvicorn_tls_options() == {}
    with pytest.raises(ValidationError, match="tls_cert_file and tls_key_file"):
        ApiSettings(tls_cert_file=tmp_path / "server.pem")
    with pytest.raises(ValidationError, match="tls_cert_file and tls_key_file"):
        ApiSettings(tls_key_file=tmp_path / "server.key")
    both = ApiSettings(tls_cert_file=tmp_path / "c.pem", tls_key_file=tmp_path / "k.pem")
    assert both.tls_enabled
    assert both.uvicorn_tls_options()["ssl_certfile"] == str(tmp_path / "c.pem")
