"""Which shapes a request gets, and the ASGI middleware that routes it accordingly.

A request is in **Connect mode** when it authenticates the way the Harmony Connect SDKs
do: an ``app_id`` or ``app_key`` header (the SDKs always send both) and no ``user-key``
header. It is then answered by the Connect app (``create_connect_app``) in the hosted
service's shapes, except for the bulk write (``ledger.api.http.bulk``: an extension that exists
in the spec's shapes only; the spec's app reads the key from ``app_key`` too); a pair with one half missing or empty is refused there with 403
Authentication Parameters Missing, as in spec mode. Every other request (``user-key``, the
spec's header, or no key at all) is answered by the spec's app, whose shapes are exactly
the spec's. The key is the same either way: ``app_key`` carries the account's API key
(``app_id`` is any non-empty name).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ledger.api.http.bulk import BULK_PATH

__all__ = ["ConnectDispatch", "is_connect_request"]


def is_connect_request(headers: dict[bytes, bytes]) -> bool:
    """Whether raw ASGI headers (lowercase names) ask for the Connect shapes."""
    if headers.get(b"user-key"):
        return False
    return b"app_id" in headers or b"app_key" in headers


class ConnectDispatch:
    """ASGI middleware: Connect-mode HTTP requests go to ``connect_app``, the rest on.

    Args:
        app: the spec's application (everything else, lifespan included).
        connect_app: the Connect application.
    """

    def __init__(self, app: ASGIApp, *, connect_app: ASGIApp) -> None:
        self.app = app
        self.connect_app = connect_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and is_connect_request(_first_headers(scope))
            and not BULK_PATH.fullmatch(scope["path"])
        ):
            await self.connect_app(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _first_headers(scope: Scope) -> dict[bytes, bytes]:
    """Request headers by lowercase name; the first of a repeated header wins."""
    return {name: value for name, value in reversed(scope.get("headers") or [])}
