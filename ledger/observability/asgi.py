"""The health and metrics routes of a service, and its request metrics, as one ASGI middleware.

``ObservabilityMiddleware`` sits outermost in front of any ASGI app (the node's own, a
Starlette or FastAPI app, the pipeline's metrics server) and answers four paths itself,
GET or HEAD, no key needed (other verbs: 405):

=================  =======================================================================
``/health/live``   200 ``{"status": "ok", ...}``: the process answers (plus the cheap
                   figures of ``Observability.live``, such as the node's ``height``)
``/health``        the same answer as ``/health/live``, kept for the callers of the
                   original probe of the node and the anchoring service
``/health/ready``  200 or 503 with each readiness check (``ledger.observability.health``)
``/metrics``       the service's registry in Prometheus' text format 0.0.4
=================  =======================================================================

Every other request goes to the app and is counted with its latency by method, route
template and status (``RequestMetrics``). The template comes from the route the app's
router matched (``scope["route"]``, set by Starlette and FastAPI), else from
``scope[ROUTE_KEY]`` (set by what answers before routing: the API's write fast path), else
from ``route_of`` (an app without a router: the node), else it is ``"other"``.

What these routes show: counts, heights, ages, balances of the service's own funding
address; never a key, a secret or an account's data. Services bind to loopback unless the
operator says otherwise, so the metrics are not exposed beyond the machine by default.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ledger.observability.health import Readiness
from ledger.observability.metrics import CONTENT_TYPE, RequestMetrics, new_registry, render

__all__ = [
    "HEALTH_PATH",
    "LIVE_PATH",
    "METRICS_PATH",
    "READY_PATH",
    "Observability",
    "ObservabilityMiddleware",
    "fixed_routes",
    "not_found_app",
    "ROUTE_KEY",
]

_log = logging.getLogger(__name__)

HEALTH_PATH = "/health"
LIVE_PATH = "/health/live"
READY_PATH = "/health/ready"
METRICS_PATH = "/metrics"
_PATHS = frozenset({HEALTH_PATH, LIVE_PATH, READY_PATH, METRICS_PATH})
_JSON = (b"content-type", b"application/json")
_OTHER_ROUTE = "other"

#: Scope key where an app that answers before routing (the API's write fast path) puts the
#: route template of the request it answered.
ROUTE_KEY = "notary.route"

RouteOf = Callable[[Scope], str | None]


@dataclass
class Observability:
    """What one service exposes: its registry, request metrics, readiness and live figures.

    Attributes:
        service: the name in reports (``"node"``).
        registry: the service's own registry (``new_registry``).
        requests: request counts and latencies (``None``: not measured).
        readiness: the checks of ``/health/ready``.
        live: cheap figures added to ``/health/live`` (no I/O: it runs on the event loop).
        before_scrape: coroutines run before ``/metrics`` is rendered, to refresh figures
            that need a call to another service (each bounded by ``scrape_timeout_s``; a
            failure leaves the figures as they were).
        scrape_timeout_s: bound of each ``before_scrape`` coroutine, seconds.
    """

    service: str
    registry: CollectorRegistry
    requests: RequestMetrics | None
    readiness: Readiness
    live: Callable[[], dict[str, Any]] = dict
    before_scrape: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    scrape_timeout_s: float = 2.0

    @classmethod
    def create(
        cls,
        service: str,
        *,
        requests_prefix: str | None,
        ready_timeout_s: float = 2.0,
        registry: CollectorRegistry | None = None,
    ) -> Observability:
        """A new registry (unless given) with request metrics named ``requests_prefix``
        (``None``: none) and an empty ``Readiness`` whose checks time out after
        ``ready_timeout_s`` seconds."""
        registry = registry if registry is not None else new_registry()
        requests = None if requests_prefix is None else RequestMetrics(registry, requests_prefix)
        readiness = Readiness(service, timeout_s=ready_timeout_s)
        return cls(service, registry, requests, readiness)

    async def metrics_body(self) -> bytes:
        """Refresh (``before_scrape``), then render the registry (in a worker thread, as
        scrape-time collectors may query a database)."""
        for refresh in self.before_scrape:
            try:
                await asyncio.wait_for(refresh(), timeout=self.scrape_timeout_s)
            except Exception as exc:  # a figure left stale must not fail the scrape
                _log.debug("metrics refresh of %s failed: %s", self.service, type(exc).__name__)
        return await asyncio.to_thread(render, self.registry)


class ObservabilityMiddleware:
    """ASGI middleware: the four routes of the module docstring, and request metrics.

    Args:
        app: the service's app.
        observability: what to expose.
        route_of: the route template of a request the app's router did not match (called
            after the answer); ``None`` or a ``None`` result count it as ``"other"``.
    """

    def __init__(
        self, app: ASGIApp, *, observability: Observability, route_of: RouteOf | None = None
    ) -> None:
        self.app = app
        self.observability = observability
        self.route_of = route_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in _PATHS:
            await self._answer(scope, send)
            return
        metrics = self.observability.requests
        if metrics is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an app that raises before answering: uvicorn answers 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            metrics.observe(
                scope["method"], self._route(scope), status, time.perf_counter() - started
            )

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
        template = scope.get(ROUTE_KEY)
        if isinstance(template, str):
            return template
        if self.route_of is not None:
            return self.route_of(scope) or _OTHER_ROUTE
        return _OTHER_ROUTE

    async def _answer(self, scope: Scope, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        if method not in ("GET", "HEAD"):
            await _reply(
                send, 405, b"Method Not Allowed", b"text/plain", method, allow=b"GET, HEAD"
            )
            return
        obs = self.observability
        if path == METRICS_PATH:
            await _reply(send, 200, await obs.metrics_body(), CONTENT_TYPE.encode(), method)
            return
        if path == READY_PATH:
            report = await obs.readiness.report()
            body = orjson.dumps(report.to_json())
            await _reply(send, report.status_code, body, _JSON[1], method)
            return
        body = orjson.dumps({"status": "ok", "service": obs.service, **obs.live()})
        await _reply(send, 200, body, _JSON[1], method)


async def _reply(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes,
    method: str,
    *,
    allow: bytes | None = None,
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    if allow is not None:
        headers.append((b"allow", allow))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


def fixed_routes(paths: Iterable[str]) -> RouteOf:
    """``route_of`` for an app whose routes are literal paths (the node's ``/v2``)."""
    known = frozenset(paths)
    return lambda scope: scope["path"] if scope["path"] in known else None


async def not_found_app(scope: Scope, receive: Receive, send: Send) -> None:
    """An ASGI app answering 404 to every request (behind the middleware of a process that
    serves nothing else, such as the pipeline's metrics server)."""
    if scope["type"] == "http":
        await _reply(send, 404, b"Not Found", b"text/plain", scope["method"])
