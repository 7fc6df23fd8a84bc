"""A real RFC 3161 timestamp authority for tests: OpenSSL's own (``openssl ts -reply``).

The authority is the product's local test TSA (``ledger.stack.local_tsa``, which
``notary demo`` starts): ``issue_tsa(folder)`` makes a throw-away certificate authority
and a TSA certificate with the critical ``timeStamping`` extended key usage and OpenSSL's
TSA configuration; ``tsa_server(authority)`` serves it over HTTP on a free loopback port:
every POSTed ``TimeStampReq`` goes to ``openssl ts -reply`` and its answer comes back as
``application/timestamp-reply`` (RFC 3161 section 3.4). What is the tests' own: the
``openssl`` command installed when missing, and the faults.

``fault`` makes the same server a faulty authority, each fault a real answer bent in one
way: ``bad-signature`` (the last byte of the reply, the signature's, flipped),
``wrong-nonce`` and ``wrong-imprint`` (the request is altered before OpenSSL signs it),
``rejection`` (a ``rejection`` status), ``garbage`` (bytes that are no response) and
``error`` (HTTP 500). An expired certificate is ``issue_tsa(folder, expired=True)``
(valid until yesterday), and an authority that does not answer is a port where nothing
listens (``free_port``).
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Literal

import pytest
from asn1crypto import tsp

from ledger.stack import local_tsa
from ledger.stack.local_tsa import LocalTsaServer, TsaAuthority
from tests.harness.debian import apt_install

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

#: A test TSA's server (``ledger.stack.local_tsa.LocalTsaServer``): ``requests`` counts
#: the POSTs it received.
TsaServer = LocalTsaServer


def issue_tsa(
    folder: Path, *, expired: bool = False, name: str = "notary test TSA"
) -> TsaAuthority:
    """A new test CA and TSA certificate (P-256 keys) and OpenSSL's config, in ``folder``
    (``ledger.stack.local_tsa.issue_tsa``).

    ``expired``: the TSA certificate's validity ended yesterday (its tokens are then
    dated after it).
    """
    return local_tsa.issue_tsa(folder, expired=expired, name=name, ca_name="notary test CA")


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
    return local_tsa.openssl_reply(authority, request, openssl=openssl())


def tsa_server(authority: TsaAuthority, *, fault: Fault | None = None, port: int = 0) -> TsaServer:
    """A server answering RFC 3161 POSTs with ``authority`` (not yet started), on ``port``
    (0: any free one); its ``requests`` counts the POSTs received."""
    return LocalTsaServer(
        authority,
        openssl=openssl(),
        answer=functools.partial(_answer, authority, fault=fault),
        port=port,
    )


def _answer(authority: TsaAuthority, body: bytes, *, fault: Fault | None) -> tuple[int, bytes]:
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
