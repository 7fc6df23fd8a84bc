"""Composition root of the node: store, service, JSON-RPC endpoint and HTTP front ends.

``create_app(settings)`` builds the ASGI app: ``python -m ledger.node`` and the bundled
stack serve it with uvicorn (``ledger.serving``), the tests drive it in process. The node
is opened (and its journal replayed) when the app is built, before any port is bound, so
a client that can connect gets answers.
"""

from __future__ import annotations

import logging

from ledger.core.clock import Clock, SystemClock
from ledger.jsonrpc.auth import BasicAuthGate
from ledger.jsonrpc.observed import CallObserver, ObservedRegistry
from ledger.node.endpoint import NodeEndpoint
from ledger.node.handlers import build_registry
from ledger.node.http import NodeAsgiApp, NodeRoutes
from ledger.node.observability import node_observability
from ledger.node.service import NodeService
from ledger.node.settings import NodeSettings
from ledger.node.store import Store
from ledger.observability import Observability
from ledger.rpc_serving import rpc_auth_gate, rpc_observability
from ledger.serving import service_lifespan

__all__ = ["auth_gate", "create_app", "create_observed_routes", "create_routes"]

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
    base, observe = rpc_observability("node")
    routes = create_routes(settings, clock=clock, observer=observe)
    return routes, node_observability(routes.service, settings, base=base)


def auth_gate(settings: NodeSettings) -> BasicAuthGate | None:
    """The gate of ``/v2`` when ``rpc_user``/``rpc_password`` are set, else None (open)."""
    return rpc_auth_gate(settings, realm="notary node RPC")


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
    service = routes.service
    lifespan = service_lifespan(run=service.run if produce_blocks else None, close=[service.close])
    return NodeAsgiApp(
        routes,
        lambda: lifespan(service),
        observability=observability,
        auth=auth_gate(settings),
    )
