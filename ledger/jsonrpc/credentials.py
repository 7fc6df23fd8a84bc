"""How a client reaches a locked JSON-RPC service: HTTP basic credentials and TLS trust.

factomd and factom-walletd offer an RPC user and password (HTTP basic authentication,
RFC 7617) and TLS; the node, the wallet and the anchoring service offer the same
(docs/jsonrpc.md §1.1). This module holds what both ends share:

- ``BasicCredentials``: a user and a password, the ``Authorization`` header they make
  (``Basic base64(user ":" password)``, UTF-8), and the server's check of a presented
  header (``matches``), in constant time;
- ``RpcAccess``: the credentials a client sends (or none) and the certificate authority it
  trusts for HTTPS (or the system's), as the one JSON-RPC client takes them.

The password never appears in ``repr`` or ``str``; nothing here logs. Client side: it
imports no server library.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from ledger.jsonrpc.errors import JsonRpcLayerError

__all__ = ["BasicCredentials", "CredentialsError", "RpcAccess"]


class CredentialsError(JsonRpcLayerError, ValueError):
    """A user name or password that HTTP basic authentication cannot carry, or a
    credentials text that is not ``user:password``."""


@dataclass(frozen=True, repr=False)
class BasicCredentials:
    """An RPC user and password (RFC 7617 §2).

    Args:
        user: non-empty, without ``:`` (the separator) or control characters.
        password: non-empty, without control characters (it may contain ``:``).

    Raises:
        CredentialsError: either rule is broken (the message never quotes the password).
    """

    user: str
    password: str = field(compare=False)

    def __post_init__(self) -> None:
        if not self.user or ":" in self.user or _has_control(self.user):
            raise CredentialsError("an RPC user must be non-empty, without ':' or controls")
        if not self.password or _has_control(self.password):
            raise CredentialsError("an RPC password must be non-empty, without controls")

    @classmethod
    def from_text(cls, text: str) -> BasicCredentials:
        """Parse ``user:password`` (the first ``:`` separates; surrounding blanks dropped),
        the form ``notary up`` keeps in ``<data_dir>/rpc-credentials``.

        Raises:
            CredentialsError: no ``:``, or a part breaks the rules above.
        """
        user, sep, password = text.strip().partition(":")
        if not sep:
            raise CredentialsError("RPC credentials must be written as user:password")
        return cls(user, password)

    def to_text(self) -> str:
        """``user:password`` (the inverse of ``from_text``). It holds the secret."""
        return f"{self.user}:{self.password}"

    def authorization(self) -> bytes:
        """The ``Authorization`` header value: ``b"Basic " + base64(user:password)``."""
        return b"Basic " + base64.b64encode(self.to_text().encode("utf-8"))

    def matches(self, header: bytes | None) -> bool:
        """Whether ``header`` (the raw ``Authorization`` value, None when absent) carries
        exactly these credentials.

        Both sides are hashed with SHA-256 before the constant-time comparison, so the
        time taken depends neither on where they differ nor on the presented length (as
        factomd's ``checkAuthHeader`` does). The scheme name is matched without regard
        to case (RFC 7617 §2).
        """
        if header is None:
            return False
        scheme, _, token = header.strip().partition(b" ")
        presented = b"basic " + token.strip() if scheme.lower() == b"basic" else b""
        expected = b"basic " + self.authorization()[len(b"Basic ") :]
        return hmac.compare_digest(
            hashlib.sha256(presented).digest(), hashlib.sha256(expected).digest()
        )

    def __repr__(self) -> str:
        return f"BasicCredentials(user={self.user!r}, password='********')"

    __str__ = __repr__


@dataclass(frozen=True)
class RpcAccess:
    """What a client needs to reach one JSON-RPC service.

    Attributes:
        credentials: sent as HTTP basic authentication on every request; None sends none
            (credentials written in the URL, ``http://user:pass@host``, are then used).
        tls_ca_file: PEM file of the certificate authorities trusted for ``https://`` URLs;
            None trusts the system's store.
    """

    credentials: BasicCredentials | None = None
    tls_ca_file: Path | None = None

    @classmethod
    def from_parts(
        cls, user: str | None, password: str | None, tls_ca_file: Path | None = None
    ) -> RpcAccess:
        """Build from settings fields: ``user`` and ``password`` both set or both None.

        Raises:
            CredentialsError: only one of them is set, or they break ``BasicCredentials``.
        """
        if (user is None) != (password is None):
            raise CredentialsError("set both the RPC user and the RPC password, or neither")
        credentials = None if user is None or password is None else BasicCredentials(user, password)
        return cls(credentials, tls_ca_file)

    def ssl_verify(self) -> ssl.SSLContext | bool:
        """httpx's ``verify``: a context trusting ``tls_ca_file``, else True (system store).

        Raises:
            OSError / ssl.SSLError: the CA file cannot be read or holds no certificate.
        """
        if self.tls_ca_file is None:
            return True
        return ssl.create_default_context(cafile=str(self.tls_ca_file))


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)
