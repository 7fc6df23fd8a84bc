"""Composition root of the node: store, service, JSON-RPC endpoint and HTTP front ends.

``create_app(settings)`` builds the ASGI app (the bundled stack serves it with uvicorn, the
tests drive it in process); ``serve(settings)`` is what ``python -m ledger.node`` runs: the
same app under uvicorn, with the process's long-lived objects frozen out of the collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator

from ledger.core.clock import Clock, SystemClock
from ledger.jsonrpc.auth import BasicAuthGate
from ledger.node.endpoint import NodeEndpoint
from ledger.node.handlers import build_registry
from ledger.node.http import RPC_PATH, NodeAsgiApp, NodeRoutes
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings
from ledger.node.store import Store
from ledger.serving import uvicorn_options

__all__ = ["auth_gate", "create_app", "create_routes", "serve"]

log = logging.getLogger(__name__)


def create_routes(settings: NodeSettings, *, clock: Clock | None = None) -> NodeRoutes:
    """Open the store and the node (genesis on first start, journal replay) and route to it.

    Raises:
        SchemaMismatch: the data folder holds another version of the node's schema.
    """
    store = Store(settings.db_path, synchronous=settings.sqlite_synchronous)
    service = NodeService(settings, store, clock or SystemClock())
    service.open()
    endpoint = NodeEndpoint(
        build_registry(service),
        error_http_status=400,
        max_body_bytes=settings.max_body_bytes,
        signatures=service.signatures,
    )
    return NodeRoutes(endpoint, service, max_body_bytes=settings.max_body_bytes)


def auth_gate(settings: NodeSettings) -> BasicAuthGate | None:
    """The gate of ``/v2`` when ``rpc_user``/``rpc_password`` are set, else None (open)."""
    credentials = settings.rpc_credentials()
    if credentials is None:
        return None
    return BasicAuthGate(credentials, realm="notary node RPC", paths=(RPC_PATH,))


@contextlib.asynccontextmanager
async def running(service: NodeService, *, produce_blocks: bool = True) -> AsyncIterator[None]:
    """Produce blocks (unless told not to) while inside; close the node on the way out."""
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop)) if produce_blocks else None
    try:
        yield
    finally:
        stop.set()
        if task is not None:
            await task
        service.close()


def create_app(
    settings: NodeSettings, *, clock: Clock | None = None, produce_blocks: bool = True
) -> NodeAsgiApp:
    """The node's ASGI app: JSON-RPC 2.0 at ``/v2`` (locked when ``settings`` give an RPC
    user and password, ``auth_gate``) and a ``/health`` probe.

    Args:
        settings: node settings.
        clock: time source (``ManualClock`` in tests); the system clock by default.
        produce_blocks: run the block producer loop in the lifespan (tests that drive
            ``service.tick()`` themselves pass False).

    The service is ``app.state.node`` and the endpoint ``app.state.jsonrpc``; the block
    producer runs, and the node closes, with the ASGI lifespan.
    """
    routes = create_routes(settings, clock=clock)
    return NodeAsgiApp(
        routes,
        lambda: running(routes.service, produce_blocks=produce_blocks),
        auth=auth_gate(settings),
    )


async def serve(settings: NodeSettings, *, ready: asyncio.Event | None = None) -> None:
    """Serve the node on ``settings.host:port`` (HTTPS with ``tls_cert_file`` and
    ``tls_key_file``) until SIGINT or SIGTERM.

    The node is opened (and the journal replayed) before the port is bound, so a client
    that can connect gets answers. ``ready`` is set once listening.
    """
    routes = create_routes(settings)
    # Everything loaded so far (modules, the replayed state) lives as long as the process:
    # keep it out of the cyclic collector's generations, so collections stay short.
    gc.collect()
    gc.freeze()
    import uvicorn

    app = NodeAsgiApp(routes, lambda: running(routes.service), auth=auth_gate(settings))
    config = uvicorn.Config(
        app,
        **uvicorn_options(settings),
        log_level="warning",
        lifespan="on",
        timeout_keep_alive=int(settings.keepalive_s),
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if ready is not None:
        ready.set()
    await task
