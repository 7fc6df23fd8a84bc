"""Composition root of the node: store, service, JSON-RPC endpoint and HTTP front ends.

``create_app(settings)`` builds the ASGI app (the bundled stack serves it with uvicorn, the
tests drive it in process); ``serve(settings)`` is what ``python -m ledger.node`` runs: the
same app under uvicorn, with the process's long-lived objects frozen out of the collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from ledger.core.clock import Clock, SystemClock
from ledger.jsonrpc.auth import BasicAuthGate
from ledger.jsonrpc.observed import CallObserver, ObservedRegistry
from ledger.long_lived import freeze_long_lived
from ledger.node.endpoint import NodeEndpoint
from ledger.node.handlers import build_registry
from ledger.node.http import RPC_PATH, NodeAsgiApp, NodeRoutes
from ledger.node.observability import node_observability
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings
from ledger.node.store import Store
from ledger.observability import Observability, RpcCallMetrics
from ledger.serving import uvicorn_options

__all__ = ["auth_gate", "create_app", "create_observed_routes", "create_routes", "serve"]

log = logging.getLogger(__name__)


def create_routes(
    settings: NodeSettings, *, clock: Clock | None = None, observer: CallObserver | None = None
) -> NodeRoutes:
    """Open the store and the node (genesis on first start, journal replay) and route to it.

    ``observer`` is told of every JSON-RPC call (``ledger.jsonrpc.observed``).

    Raises:
        SchemaMismatch: the data folder holds another version of the node's schema.
    """
    store = Store(settings.db_path, synchronous=settings.sqlite_synchronous)
    service = NodeService(settings, store, clock or SystemClock())
    service.open()
    registry = build_registry(service)
    endpoint = NodeEndpoint(
        registry if observer is None else ObservedRegistry(registry, observer),
        error_http_status=400,
        max_body_bytes=settings.max_body_bytes,
        signatures=service.signatures,
    )
    return NodeRoutes(endpoint, service, max_body_bytes=settings.max_body_bytes)


def create_observed_routes(
    settings: NodeSettings, *, clock: Clock | None = None
) -> tuple[NodeRoutes, Observability]:
    """``create_routes`` with the node's metrics and health checks
    (``ledger.node.observability``): the routes and what ``NodeAsgiApp`` exposes."""
    base = Observability.create("node", requests_prefix="notary_node_http")
    rpc = RpcCallMetrics(base.registry, "notary_node")
    routes = create_routes(settings, clock=clock, observer=rpc.observe)
    return routes, node_observability(routes.service, settings, base=base)


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
    user and password, ``auth_gate``), health checks and metrics (always open).

    Args:
        settings: node settings.
        clock: time source (``ManualClock`` in tests); the system clock by default.
        produce_blocks: run the block producer loop in the lifespan (tests that drive
            ``service.tick()`` themselves pass False).

    The service is ``app.state.node``, the endpoint ``app.state.jsonrpc`` and the metrics
    and checks ``app.state.observability``; the block producer runs, and the node closes,
    with the ASGI lifespan.
    """
    routes, observability = create_observed_routes(settings, clock=clock)
    return NodeAsgiApp(
        routes,
        lambda: running(routes.service, produce_blocks=produce_blocks),
        observability=observability,
        auth=auth_gate(settings),
    )


async def serve(settings: NodeSettings, *, ready: asyncio.Event | None = None) -> None:
    """Serve the node on ``settings.host:port`` (HTTPS with ``tls_cert_file`` and
    ``tls_key_file``) until SIGINT or SIGTERM.

    The node is opened (and the journal replayed) before the port is bound, so a client
    that can connect gets answers. ``ready`` is set once listening. uvicorn's loggers keep
    the process's logging set-up (``log_config=None``: see ``configure_logging``).
    """
    routes, observability = create_observed_routes(settings)
    # Everything loaded so far (modules, the replayed state) lives as long as the process.
    freeze_long_lived()
    import uvicorn

    app = NodeAsgiApp(
        routes,
        lambda: running(routes.service),
        observability=observability,
        auth=auth_gate(settings),
    )
    config = uvicorn.Config(
        app,
        **uvicorn_options(settings),
        log_level=settings.log_level,
        log_config=None,
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
