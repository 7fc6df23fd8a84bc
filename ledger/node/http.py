"""The node's HTTP surface as plain routing: JSON-RPC 2.0 at ``/v2``; health and metrics.

``NodeRoutes`` maps ``(method, path, body)`` to a ``Reply``; ``NodeAsgiApp`` serves it to
any ASGI server (uvicorn for ``python -m ledger.node`` and the bundled stack, httpx in
tests), behind ``ledger.observability``'s middleware when given one (``/health``,
``/health/live``, ``/health/ready``, ``/metrics``; request counts and latencies). It is lean on purpose: HTTP itself is uvicorn's, but per request a framework's
routing and middleware cost more CPU than the node's own work on a commit
(bench/node_ingest.py), and the node has one endpoint.

Wire rules kept from the shared endpoint (``ledger.jsonrpc.server``): ``POST`` or ``GET``
with the request in the body, any content type; a body over ``max_body_bytes`` is refused
with HTTP 413 and an Invalid Request error (``ErrorCode.INVALID_REQUEST``) after reading at most one chunk past
the limit; other verbs get 405, other paths 404. With an RPC user and password configured,
a ``/v2`` request without them gets the gate's 401 before its body is read
(``ledger.jsonrpc.auth``); ``/health`` stays open.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ledger.jsonrpc.auth import BasicAuthGate
from ledger.jsonrpc.errors import InvalidRequest
from ledger.jsonrpc.server import JsonRpcEndpoint
from ledger.jsonrpc.wire import encode_json, error_response
from ledger.node.service import NodeService
from ledger.observability import Observability, ObservabilityMiddleware, fixed_routes

__all__ = ["NodeAsgiApp", "NodeRoutes", "Reply"]

log = logging.getLogger(__name__)

JSON = "application/json"
RPC_PATH = "/v2"
_RPC_METHODS = ("GET", "POST", "HEAD")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class Reply:
    """One HTTP reply: ``status``, ``body`` bytes, ``content_type`` (None: no header), and
    ``allow`` (the ``Allow`` header of a 405)."""

    status: int
    body: bytes = b""
    content_type: str | None = JSON
    allow: str | None = None


class NodeRoutes:
    """Routing of the node's JSON-RPC path (see module doc).

    Args:
        endpoint: the JSON-RPC endpoint (its ``handle_body`` answers ``/v2``).
        service: the node.
        max_body_bytes: largest accepted request body.
    """

    def __init__(
        self, endpoint: JsonRpcEndpoint, service: NodeService, *, max_body_bytes: int
    ) -> None:
        self.endpoint = endpoint
        self.service = service
        self.max_body_bytes = max_body_bytes

    def refuse(self, method: str, path: str) -> Reply | None:
        """The reply to a request refused on its first line alone (404, 405), else None."""
        if path != RPC_PATH:
            return Reply(404, b"Not Found", "text/plain; charset=utf-8")
        if method not in _RPC_METHODS:
            allow = ", ".join(_RPC_METHODS)
            return Reply(405, b"Method Not Allowed", "text/plain; charset=utf-8", allow=allow)
        return None

    def too_large(self) -> Reply:
        """413 with an Invalid Request error (id null), as the shared endpoint answers."""
        error = InvalidRequest(f"request body exceeds {self.max_body_bytes} bytes")
        return Reply(413, encode_json(error_response(None, error)))

    async def reply(self, method: str, path: str, body: bytes) -> Reply:
        """Answer a request that ``refuse`` let through, with its whole ``body``."""
        status, content = await self.endpoint.handle_body(body)
        if content is None:
            return Reply(204, b"", None)
        return Reply(status, content)


class NodeAsgiApp:
    """ASGI 3 application over ``NodeRoutes``, with the node's lifespan.

    Args:
        routes: the routing.
        lifespan: ``async`` context manager factory run from the ASGI lifespan's startup to
            its shutdown (the block producer); None when the caller drives the node itself.
        observability: health, metrics and request measurement (``ObservabilityMiddleware``
            in front of the routing); None: neither.
        auth: the credentials gate of the JSON-RPC route; None leaves it open (the health
            and metrics routes are answered before it, so they stay open).

    ``state`` carries ``node`` (the ``NodeService``), ``jsonrpc`` (the endpoint) and
    ``observability``, as the Starlette app's ``app.state`` did.
    """

    def __init__(
        self,
        routes: NodeRoutes,
        lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
        *,
        observability: Observability | None = None,
        auth: BasicAuthGate | None = None,
    ) -> None:
        self.routes = routes
        self._lifespan = lifespan
        self._auth = auth
        self.state = SimpleNamespace(
            node=routes.service, jsonrpc=routes.endpoint, observability=observability
        )
        self._serve_http: Callable[[Scope, Receive, Send], Awaitable[None]] = self._http
        if observability is not None:
            self._serve_http = ObservabilityMiddleware(
                self._http, observability=observability, route_of=fixed_routes([RPC_PATH])
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._serve_http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._run_lifespan(receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        reply = self.routes.refuse(method, path)
        auth = self._auth
        if reply is None and auth is not None and auth.guards(path) and not auth.allows(scope):
            await auth.refuse(scope, send)
            return
        if reply is None:
            body = await _read_body(scope, receive, self.routes.max_body_bytes)
            if body is None:
                reply = self.routes.too_large()
            else:
                reply = await self.routes.reply(method, path, body)
        headers = [(b"content-length", b"%d" % len(reply.body))] if reply.status != 204 else []
        if reply.content_type is not None:
            headers.append((b"content-type", reply.content_type.encode()))
        if reply.allow is not None:
            headers.append((b"allow", reply.allow.encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        body = b"" if method == "HEAD" else reply.body
        await send({"type": "http.response.body", "body": body})

    async def _run_lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        context = self._lifespan() if self._lifespan is not None else _nothing()
        try:
            await context.__aenter__()
        except Exception as exc:
            log.exception("node start-up failed")
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        while (await receive())["type"] != "lifespan.shutdown":
            pass
        try:
            await context.__aexit__(None, None, None)
        except Exception as exc:
            log.exception("node shutdown failed")
            await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it is known to exceed ``limit`` bytes."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            return None
    chunks = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(chunks)
        chunks += message.get("body", b"")
        if len(chunks) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(chunks)


@contextlib.asynccontextmanager
async def _nothing() -> Any:
    yield
