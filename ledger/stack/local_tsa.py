"""A LOCAL TEST timestamp authority: OpenSSL's own RFC 3161 server, for the demo and the tests.

``notary demo`` starts one so that a newcomer's first proof carries an RFC 3161 token that
``openssl ts -verify`` accepts, and says each time that it is a local test authority: its
key sits in the demo's data folder, so its tokens are the operator's own word, never
independent evidence of time (docs/proof-bundle.md; an independent TSA is configured with
``notary up --tsa URL --tsa-ca FILE``).

- ``issue_tsa(folder)``: a throw-away certificate authority and a TSA certificate with the
  critical ``timeStamping`` extended key usage (RFC 3161 section 2.3), P-256 keys made
  with ``cryptography``, and OpenSSL's TSA configuration (``openssl-ts(1)``,
  "CONFIGURATION FILE OPTIONS"); every file owner-only (0600, the folder 0700).
- ``open_tsa(folder)``: the authority already in ``folder`` while its certificate is
  valid, else a new one (so a demo rerun keeps the CA that earlier tokens chain to).
- ``openssl_reply(authority, request)``: the DER ``TimeStampResp`` of ``openssl ts
  -reply`` to a DER ``TimeStampReq``.
- ``LocalTsaServer(authority)``: those answers over loopback HTTP: every POST body goes
  to ``answer`` (``openssl_reply`` by default; the tests bend it into faulty
  authorities) and comes back as ``application/timestamp-reply`` (RFC 3161 section 3.4).

``find_openssl()`` is the ``openssl`` command or None: without it there is no local TSA.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ledger.secret_file import make_private_dir, write_secret_file

__all__ = [
    "LOCAL_TSA_NAME",
    "LocalTsaError",
    "LocalTsaServer",
    "TsaAuthority",
    "find_openssl",
    "issue_tsa",
    "open_tsa",
    "openssl_reply",
]

#: The subject common name of the demo's authority: it says what it is wherever it shows.
LOCAL_TSA_NAME = "notary LOCAL TEST TSA (not independent evidence)"

#: A private-enterprise policy OID for the test tokens (RFC 3161 ``TSAPolicyId``).
_POLICY = "1.3.6.1.4.1.55555.1"

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
default_policy = {policy}
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


class LocalTsaError(RuntimeError):
    """OpenSSL could not answer a timestamp request (the message holds its error output)."""


@dataclass(frozen=True)
class TsaAuthority:
    """A local TSA's files, all in ``folder``.

    Attributes:
        ca_file: the certificate authority to trust for its tokens (PEM).
        tsa_cert_file: the TSA's certificate (PEM; its key is ``tsa.key`` beside it).
        config_file: OpenSSL's TSA configuration.
        name: the TSA's subject, ``CN=...``.
    """

    folder: Path
    ca_file: Path
    tsa_cert_file: Path
    config_file: Path
    name: str


def find_openssl() -> str | None:
    """The ``openssl`` command on ``PATH`` (Debian's ``openssl`` package), or None."""
    return shutil.which("openssl")


def issue_tsa(
    folder: Path,
    *,
    expired: bool = False,
    name: str = LOCAL_TSA_NAME,
    ca_name: str = "notary local test CA",
    now: dt.datetime | None = None,
) -> TsaAuthority:
    """A new CA and TSA certificate, and OpenSSL's configuration, written into ``folder``
    (created 0700; files 0600, replacing any there).

    Args:
        expired: the TSA certificate's validity ended a day before ``now`` (for tests of
            tokens dated after it).
        name, ca_name: the common names of the TSA and of its CA.
        now: the issuing time (default: the system clock, UTC); the CA is valid 30 days
            before it to ten years after, the TSA certificate 30 days before to one year.

    Raises:
        OSError: ``folder`` cannot be created or written.
    """
    make_private_dir(folder)
    now = now or dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
    ca = (
        _builder(ca_subject, ca_subject, ca_key.public_key(), now - dt.timedelta(days=30), 3650)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    tsa_key = ec.generate_private_key(ec.SECP256R1())
    tsa_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = now - dt.timedelta(days=30)
    tsa = (
        _builder(tsa_name, ca_subject, tsa_key.public_key(), start, 29 if expired else 395)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = tsa_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    for file_name, content in [
        ("ca.pem", ca.public_bytes(pem)),
        ("tsa.pem", tsa.public_bytes(pem)),
        ("tsa.key", key_pem),
        ("serial", b"01"),
    ]:
        write_secret_file(folder / file_name, content.rstrip(b"\n"))
    _write_config(folder)
    return _authority(folder, name)


def open_tsa(folder: Path, *, now: dt.datetime | None = None) -> TsaAuthority:
    """The authority issued into ``folder`` before, while its TSA certificate is valid at
    ``now`` (default: the system clock) for at least a day more (its configuration written
    again, for the folder where it is now); else ``issue_tsa(folder)``.

    Raises:
        OSError: ``folder`` cannot be created or written.
    """
    now = now or dt.datetime.now(dt.UTC)
    try:
        cert = x509.load_pem_x509_certificate((folder / "tsa.pem").read_bytes())
        complete = all((folder / f).is_file() for f in ("ca.pem", "tsa.key", "serial"))
    except (OSError, ValueError):
        return issue_tsa(folder, now=now)
    if not complete or cert.not_valid_after_utc < now + dt.timedelta(days=1):
        return issue_tsa(folder, now=now)
    name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    _write_config(folder)  # the folder may have moved since
    return _authority(folder, str(name))


def _write_config(folder: Path) -> None:
    """OpenSSL's TSA configuration, naming the files by absolute path (``openssl`` may run
    from another working folder)."""
    config = _CONFIG.format(folder=folder.resolve(), policy=_POLICY)
    write_secret_file(folder / "tsa.cnf", config.encode().rstrip(b"\n"))


def _authority(folder: Path, name: str) -> TsaAuthority:
    return TsaAuthority(
        folder, folder / "ca.pem", folder / "tsa.pem", folder / "tsa.cnf", f"CN={name}"
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePublicKey,
    start: dt.datetime,
    days_from_start: int,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days_from_start))
    )


def openssl_reply(authority: TsaAuthority, request: bytes, *, openssl: str) -> bytes:
    """OpenSSL's DER ``TimeStampResp`` to the DER ``request`` (``openssl ts -reply``).

    One at a time in a process: two runs for one authority would both write its serial
    file (two servers of one authority are one authority).

    Raises:
        LocalTsaError: OpenSSL failed (a request it cannot parse, a missing file).
    """
    with _OPENSSL_LOCK, tempfile.TemporaryDirectory() as tmp:
        query, reply = Path(tmp) / "q.tsq", Path(tmp) / "r.tsr"
        query.write_bytes(request)
        done = subprocess.run(
            [openssl, "ts", "-reply", "-config", str(authority.config_file),
             "-queryfile", str(query), "-out", str(reply)],
            capture_output=True,
            check=False,
        )  # fmt: skip
        if done.returncode != 0 or not reply.is_file():
            detail = done.stderr.decode("utf-8", "replace").strip()
            raise LocalTsaError(f"openssl ts -reply failed ({done.returncode}): {detail}")
        return reply.read_bytes()


_OPENSSL_LOCK = threading.Lock()

#: ``answer(request body) -> (HTTP status, response body)``.
Answer = Callable[[bytes], tuple[int, bytes]]


class LocalTsaServer:
    """An RFC 3161 HTTP server for ``authority`` on ``127.0.0.1:port`` (0: a free one),
    listening from construction, answering from ``start`` until ``stop``; a context
    manager. Any path takes POSTs; ``requests`` counts them.

    Args:
        authority: the TSA's files.
        openssl: the ``openssl`` command (``find_openssl``); used by the default answer.
        answer: what a POST body gets (default: ``openssl_reply``, HTTP 200, or HTTP 500
            when OpenSSL fails); called from the server's request threads.

    Raises:
        OSError: the port cannot be bound.
    """

    def __init__(
        self,
        authority: TsaAuthority,
        *,
        openssl: str,
        answer: Answer | None = None,
        port: int = 0,
    ) -> None:
        self.authority = authority
        self.requests = 0
        self._answer = answer or self._openssl_answer
        self._openssl = openssl
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="notary-local-tsa", daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>`` (POST to it or any path below)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start answering."""
        self._thread.start()

    def stop(self) -> None:
        """Stop answering and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _openssl_answer(self, body: bytes) -> tuple[int, bytes]:
        try:
            return 200, openssl_reply(self.authority, body, openssl=self._openssl)
        except LocalTsaError:
            return 500, b""

    def _respond(self, body: bytes) -> tuple[int, bytes]:
        with self._lock:
            self.requests += 1
        return self._answer(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        respond = self._respond

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                status, answer = respond(self.rfile.read(length))
                self.send_response(status)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the anchoring service logs what it asked and got

        return Handler
