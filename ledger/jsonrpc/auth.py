"""HTTP basic authentication in front of a JSON-RPC route (server side).

When a service is given an RPC user and password (``NOTARY_NODE_RPC_USER`` and
``NOTARY_NODE_RPC_PASSWORD``, the same for the wallet and the anchoring service), every
request to its JSON-RPC route must carry them (docs/jsonrpc.md §1.1). As factomd and
factom-walletd answer (their ``wsapi`` ``checkAuthHeader``), a request without them, or
with others, gets:

1. HTTP 401 with ``WWW-Authenticate: Basic realm="<service> RPC"``;
2. a body without detail: ``{"message": "Unauthorized"}``, which says nothing about
   which part was wrong; it is JSON so that clients that read every error body as JSON
   (``factom-api`` raises its ``FactomAPIError`` carrying the 401 response) still raise
   their own error;
3. nothing else: the request is not read further, nothing runs.

Only the JSON-RPC route is guarded (``paths``): ``/health`` and the other probes stay
open. The comparison is ``BasicCredentials.matches`` (SHA-256 both sides, then constant
time). A refusal is logged with the client's address only, never a header.

``BasicAuthGate`` decides and answers; ``BasicAuthMiddleware`` puts it in front of any
ASGI app (the wallet's and the anchoring service's Starlette apps); the node's own ASGI
app calls the gate directly (``ledger.node.http``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

from ledger.jsonrpc.credentials import BasicCredentials

__all__ = ["UNAUTHORIZED_BODY", "BasicAuthGate", "BasicAuthMiddleware"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The body of every 401 answer (rule 2 of the module docstring).
UNAUTHORIZED_BODY = b'{"message": "Unauthorized"}'


class BasicAuthGate:
    """The credentials one service accepts, and its 401 answer.

    Args:
        credentials: the user and password every guarded request must carry.
        realm: the ``WWW-Authenticate`` realm (``"notary node RPC"``); ASCII, no quotes.
        paths: the guarded paths (the JSON-RPC route, ``("/v2",)``).
    """

    def __init__(
        self, credentials: BasicCredentials, *, realm: str, paths: Collection[str] = ("/v2",)
    ) -> None:
        if '"' in realm or not realm.isascii():
            raise ValueError("the realm must be ASCII without double quotes")
        self._credentials = credentials
        self.paths = frozenset(paths)
        self._headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(UNAUTHORIZED_BODY)),
            (b"www-authenticate", f'Basic realm="{realm}"'.encode("ascii")),
        ]

    def guards(self, path: str) -> bool:
        """Whether requests to ``path`` need the credentials."""
        return path in self.paths

    def allows(self, scope: Scope) -> bool:
        """Whether the HTTP request of ``scope`` carries the credentials (its first
        ``Authorization`` header, as factomd reads it)."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                return self._credentials.matches(value)
        return False

    async def refuse(self, scope: Scope, send: Send) -> None:
        """Send the 401 answer (module docstring) and log the refusal without secrets."""
        client = scope.get("client")
        log.warning(
            "refused a JSON-RPC request without valid credentials from %s",
            client[0] if client else "an unknown address",
        )
        await send({"type": "http.response.start", "status": 401, "headers": self._headers})
        body = b"" if scope.get("method") == "HEAD" else UNAUTHORIZED_BODY
        await send({"type": "http.response.body", "body": body})


class BasicAuthMiddleware:
    """ASGI middleware: requests to the gate's paths without the credentials get its 401;
    everything else (other paths, the lifespan) goes to ``app`` untouched.

    Starlette: ``app.add_middleware(BasicAuthMiddleware, gate=gate)``.
    """

    def __init__(self, app: Asgi, *, gate: BasicAuthGate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.gate.guards(scope["path"])
            and not self.gate.allows(scope)
        ):
            await self.gate.refuse(scope, send)
            return
        await self.app(scope, receive, send)
