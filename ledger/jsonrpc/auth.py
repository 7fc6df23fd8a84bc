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

Failed attempts are throttled per client address (``ledger.throttle.AuthFailureThrottle``,
docs/security.md): once an address is over the limit, its requests are answered HTTP 429
with ``Retry-After`` and the same body shape (``{"message": "Too Many Requests"}``) before
their credentials are compared, and refusals are logged as one summary line per interval.

Only the JSON-RPC route is guarded (``paths``): ``/health`` and the other probes stay
open. The comparison is ``BasicCredentials.matches`` (SHA-256 both sides, then constant
time). Refusals are logged with the clients' addresses only, never a header.

``BasicAuthGate`` decides and answers; ``BasicAuthMiddleware`` puts it in front of any
ASGI app (the wallet's and the anchoring service's Starlette apps); the node's own ASGI
app calls the gate directly (``ledger.node.http``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

from ledger.core.clock import Clock, MonotonicClock
from ledger.jsonrpc.credentials import BasicCredentials
from ledger.throttle import AuthFailureThrottle, retry_after_header

__all__ = ["THROTTLED_BODY", "UNAUTHORIZED_BODY", "BasicAuthGate", "BasicAuthMiddleware"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The body of every 401 answer (rule 2 of the module docstring).
UNAUTHORIZED_BODY = b'{"message": "Unauthorized"}'
#: The body of a 429 answer to a throttled address (module docstring).
THROTTLED_BODY = b'{"message": "Too Many Requests"}'


class BasicAuthGate:
    """The credentials one service accepts, and its 401 answer.

    Args:
        credentials: the user and password every guarded request must carry.
        realm: the ``WWW-Authenticate`` realm (``"notary node RPC"``); ASCII, no quotes.
        paths: the guarded paths (the JSON-RPC route, ``("/v2",)``).
        throttle: the failed-attempt throttle (default: ``AuthFailureThrottle``'s limits,
            on a monotonic clock).
        clock: the default throttle's clock (tests pass a manual one).
    """

    def __init__(
        self,
        credentials: BasicCredentials,
        *,
        realm: str,
        paths: Collection[str] = ("/v2",),
        throttle: AuthFailureThrottle | None = None,
        clock: Clock | None = None,
    ) -> None:
        if '"' in realm or not realm.isascii():
            raise ValueError("the realm must be ASCII without double quotes")
        self._credentials = credentials
        self.paths = frozenset(paths)
        self.throttle = throttle or AuthFailureThrottle(
            realm, clock=clock or MonotonicClock(), logger=log
        )
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
        ``Authorization`` header, as factomd reads it) and its address is not throttled.

        A refused request is counted by the throttle; answer it with ``refuse``.
        """
        client = _client(scope)
        wait_s = self.throttle.retry_after(client)
        if wait_s is not None:
            scope[_THROTTLED] = wait_s
            return False
        for name, value in scope.get("headers", ()):
            if name == b"authorization" and self._credentials.matches(value):
                return True
            if name == b"authorization":
                break
        self.throttle.failed(client)
        return False

    async def refuse(self, scope: Scope, send: Send) -> None:
        """Send the 401 answer (module docstring), or 429 with ``Retry-After`` when
        ``allows`` found the address throttled; logged in summary by the throttle."""
        wait_s = scope.get(_THROTTLED)
        if wait_s is None:
            status, headers, body = 401, self._headers, UNAUTHORIZED_BODY
        else:
            status, body = 429, THROTTLED_BODY
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
                (b"retry-after", retry_after_header(wait_s).encode("ascii")),
            ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        body = b"" if scope.get("method") == "HEAD" else body
        await send({"type": "http.response.body", "body": body})


#: The scope key where ``allows`` leaves a throttled request's wait for ``refuse``.
_THROTTLED = "notary.auth_throttled_s"


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


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
