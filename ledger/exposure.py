"""Listening beyond loopback: what must be in place first, and where the stack dials itself.

A service bound to loopback answers only the processes of this machine; bound to any other
address (``0.0.0.0``, ``::``, a network interface's address), it answers the network. The
bundled stack then refuses to start (``ExposureError``, one message naming everything
missing) unless (docs/security.md):

1. its JSON-RPC services (node, wallet, anchoring) are locked with credentials (over the
   network, an open wallet hands out its seed and moves coins);
2. a TLS certificate is configured, so that every service listening there (node, wallet,
   anchoring, publishing API) serves HTTPS only: credentials and API keys never cross the
   network in clear.

Prefect's server is not part of this check: ``notary up`` binds it to loopback whatever
``--host`` says, unless ``--prefect-host`` names another address, which needs Prefect's
own authentication (``PREFECT_SERVER_API_AUTH_STRING``).

``client_host`` is where the stack's own clients (the wallet's node link, the API's
gateways, the anchoring service's node client, the readiness wait) dial: loopback for a
wildcard bind, the bound address otherwise. The certificate must name that host (or give
the certificate's own name as ``client_host``, resolving to this machine).
"""

from __future__ import annotations

import ipaddress

__all__ = ["ExposureError", "client_host", "exposure_problems", "is_loopback"]

_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104 - compared


class ExposureError(ValueError):
    """A service would listen beyond loopback without what that needs.

    Attributes:
        host: the address it would bind.
        missing: what is missing, one sentence each (in the message too).
    """

    def __init__(self, host: str, missing: list[str]) -> None:
        super().__init__(
            f"refusing to listen on {host} (beyond loopback): " + "; ".join(missing) + "."
        )
        self.host = host
        self.missing = missing


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1, bracketed or not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def client_host(host: str) -> str:
    """Where a client on this machine dials a service bound to ``host`` (module docstring)."""
    return _WILDCARDS.get(host, host)


def exposure_problems(host: str, *, rpc_locked: bool, tls: bool) -> list[str]:
    """What is missing for services to listen on ``host`` (empty when it is loopback or
    nothing is missing), as sentences naming the flags that fix them."""
    if is_loopback(host):
        return []
    missing = []
    if not rpc_locked:
        missing.append(
            "the JSON-RPC services (node, wallet, anchoring) are not locked: add --rpc-auth "
            "(or --rpc-user and --rpc-password-file)"
        )
    if not tls:
        missing.append(
            "no TLS certificate: node, wallet, anchoring and publishing API would speak "
            "plain HTTP, credentials and API keys in clear; add --tls-cert-file and "
            "--tls-key-file"
        )
    return missing
