"""Composition root of the node: ``create_app(settings)`` builds store, service and routes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ledger.core.clock import Clock, SystemClock
from ledger.node.endpoint import NodeEndpoint
from ledger.node.handlers import build_registry
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings
from ledger.node.store import Store


def create_app(
    settings: NodeSettings, *, clock: Clock | None = None, produce_blocks: bool = True
) -> Starlette:
    """The node's ASGI app: JSON-RPC 2.0 at ``/v2`` and a ``/health`` probe.

    Args:
        settings: node settings.
        clock: time source (``ManualClock`` in tests); the system clock by default.
        produce_blocks: run the block producer loop in the lifespan (tests that drive
            ``service.tick()`` themselves pass False).

    The service is reachable as ``app.state.node`` once the lifespan has started.
    """
    store = Store(settings.db_path, synchronous=settings.sqlite_synchronous)
    service = NodeService(settings, store, clock or SystemClock())
    service.open()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        stop = asyncio.Event()
        task = asyncio.create_task(service.run(stop)) if produce_blocks else None
        try:
            yield
        finally:
            stop.set()
            if task is not None:
                await task
            service.close()

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "height": service.tip.height})

    endpoint = NodeEndpoint(
        build_registry(service),
        error_http_status=400,
        max_body_bytes=settings.max_body_bytes,
        signatures=service.signatures,
    )
    routes = [
        Route("/v2", endpoint.handle_http, methods=["GET", "POST"]),
        Route("/health", health),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.jsonrpc = endpoint
    app.state.node = service
    return app
