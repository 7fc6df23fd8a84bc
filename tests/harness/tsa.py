"""A real RFC 3161 timestamp authority for tests: OpenSSL's own (``openssl ts -reply``).

``issue_tsa(folder)`` makes a throw-away certificate authority and a TSA certificate with
the critical ``timeStamping`` extended key usage (``cryptography``), and writes them with
an OpenSSL TSA configuration file (``openssl-ts(1)``, "CONFIGURATION FILE OPTIONS").
``tsa_server(authority)`` serves it over HTTP on a free loopback port (``HttpServer``):
every POSTed ``TimeStampReq`` goes to ``openssl ts -reply`` and its answer comes back as
``application/timestamp-reply`` (RFC 3161 section 3.4).

``fault`` makes the same server a faulty authority, each fault a real answer bent in one
way: ``bad-signature`` (the last byte of the reply, the signature's, flipped),
``wrong-nonce`` and ``wrong-imprint`` (the request is altered before OpenSSL signs it),
``rejection`` (a ``rejection`` status), ``garbage`` (bytes that are no response) and
``error`` (HTTP 500). An expired certificate is ``issue_tsa(folder, expired=True)``
(valid until yesterday), and an authority that does not answer is a port where nothing
listens (``free_port``).
"""

from __future__ import annotations

import datetime as dt
import functools
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Literal

import pytest
from asn1crypto import tsp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.harness.debian import apt_install
from tests.harness.servers import HttpServer

__all__ = [
    "Fault",
    "TsaAuthority",
    "TsaServer",
    "issue_tsa",
    "openssl",
    "openssl_reply",
    "tsa_server",
]

Fault = Literal["bad-signature", "wrong-nonce", "wrong-imprint", "rejection", "garbage", "error"]

_CONFIG = """\
[tsa]
default_tsa = tsa_config

[tsa_config]
serial = {folder}/serial
crypto_device = builtin
signer_cert = {folder}/tsa.pem
certs = {folder}/ca.pem
signer_key = {folder}/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.55555.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


@dataclass(frozen=True)
class TsaAuthority:
    """A test TSA's files: ``ca_file`` (the authority to trust, PEM), ``tsa_cert_file``,
    ``config_file`` (OpenSSL's TSA configuration) and the TSA's subject ``name``."""

    folder: Path
    ca_file: Path
    tsa_cert_file: Path
    config_file: Path
    name: str


def issue_tsa(
    folder: Path, *, expired: bool = False, name: str = "notary test TSA"
) -> TsaAuthority:
    """A new test CA and TSA certificate (P-256 keys) and OpenSSL's config, in ``folder``.

    ``expired``: the TSA certificate's validity ended yesterday (its tokens are then
    dated after it).
    """
    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "notary test CA")])
    ca = (
        _builder(
            ca_name,
            ca_name,
            ca_key.public_key(),
            now - dt.timedelta(days=30),
            now + dt.timedelta(days=3650),
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    tsa_key = ec.generate_private_key(ec.SECP256R1())
    tsa_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ends = now - dt.timedelta(days=1) if expired else now + dt.timedelta(days=365)
    tsa = (
        _builder(tsa_name, ca_name, tsa_key.public_key(), now - dt.timedelta(days=30), ends)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "tsa.pem").write_bytes(tsa.public_bytes(pem))
    key_pem = tsa_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (folder / "tsa.key").write_bytes(key_pem)
    (folder / "tsa.key").chmod(0o600)
    (folder / "serial").write_text("01\n")
    (folder / "tsa.cnf").write_text(_CONFIG.format(folder=folder))
    return TsaAuthority(
        folder, folder / "ca.pem", folder / "tsa.pem", folder / "tsa.cnf", f"CN={name}"
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePublicKey,
    start: dt.datetime,
    end: dt.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
    )


@functools.cache
def openssl() -> str:
    """The ``openssl`` command (Debian's ``openssl`` package), installed with ``apt-get``
    when missing and running as root (as CI does); the test fails when it cannot be had."""
    found = shutil.which("openssl")
    problem = ""
    if found is None:
        problem = apt_install("openssl")
        found = shutil.which("openssl")
    if found is None:
        pytest.fail(
            f"the RFC 3161 tests need the openssl command (apt-get install openssl): {problem}"
        )
    return found


def openssl_reply(authority: TsaAuthority, request: bytes) -> bytes:
    """OpenSSL's DER ``TimeStampResp`` to the DER ``request`` (``openssl ts -reply``)."""
    with tempfile.TemporaryDirectory() as tmp:
        query, reply = Path(tmp) / "q.tsq", Path(tmp) / "r.tsr"
        query.write_bytes(request)
        subprocess.run(
            [openssl(), "ts", "-reply", "-config", str(authority.config_file),
             "-queryfile", str(query), "-out", str(reply)],
            check=True,
            capture_output=True,
        )  # fmt: skip
        return reply.read_bytes()


def tsa_server(authority: TsaAuthority, *, fault: Fault | None = None, port: int = 0) -> TsaServer:
    """An ``HttpServer`` answering RFC 3161 POSTs with ``authority`` (not yet started), on
    ``port`` (0: any free one); its ``requests`` counts the POSTs received."""
    state = _State()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with _OPENSSL_LOCK:
                state.requests += 1
                status, answer = _answer(authority, body, fault)
            self.send_response(status)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return TsaServer(Handler, port, state)


#: One ``openssl ts -reply`` at a time: the servers of one authority share its serial file.
_OPENSSL_LOCK = threading.Lock()


@dataclass
class _State:
    requests: int = 0


class TsaServer(HttpServer):
    """A test TSA's ``HttpServer``; ``requests``: how many POSTs it received."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int, state: _State) -> None:
        super().__init__(handler, port)
        self._state = state

    @property
    def requests(self) -> int:
        return self._state.requests


def _answer(authority: TsaAuthority, body: bytes, fault: Fault | None) -> tuple[int, bytes]:
    if fault == "error":
        return 500, b""
    if fault == "garbage":
        return 200, b"\x30\x03garbage"
    if fault == "rejection":
        status = {"status": "rejection", "status_string": ["test authority refuses"]}
        info = bytes(tsp.PKIStatusInfo(status).dump())
        return 200, bytes([0x30, len(info)]) + info  # a TimeStampResp without a token
    if fault in ("wrong-nonce", "wrong-imprint"):
        body = _altered(body, fault)
    reply = openssl_reply(authority, body)
    if fault == "bad-signature":
        reply = reply[:-1] + bytes([reply[-1] ^ 0x01])
    return 200, reply


def _altered(request: bytes, fault: Fault) -> bytes:
    parsed = tsp.TimeStampReq.load(request)
    native = parsed.native
    if fault == "wrong-nonce":
        native["nonce"] = (native["nonce"] or 0) + 1
    else:
        digest = native["message_imprint"]["hashed_message"]
        native["message_imprint"]["hashed_message"] = bytes([digest[0] ^ 0xFF]) + digest[1:]
    return bytes(tsp.TimeStampReq(native).dump())
