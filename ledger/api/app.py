"""Composition root of the publishing REST API: ``create_app(settings)``."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from ledger.api.connect import ConnectDispatch, LedgerReads, create_connect_app
from ledger.api.connect.ledger_reads import JsonRpcLedgerReads
from ledger.api.http.bulk import BULK_PATH
from ledger.api.http.deps import BodySizeLimit
from ledger.api.http.errors import install_error_handlers
from ledger.api.http.fastpath import WriteFastPath
from ledger.api.http.routes import API_VERSION, router
from ledger.api.http.verify_page import router as verify_page_router
from ledger.api.observability import api_observability
from ledger.api.outbox.callback_targets import Resolver
from ledger.api.outbox.gateway import LedgerGateway, LedgerRpcClients
from ledger.api.services import Services, build_services
from ledger.api.settings import ApiSettings
from ledger.core.clock import Clock
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.observability import Observability, ObservabilityMiddleware
from ledger.serving import service_lifespan

__all__ = ["create_app"]


def create_app(
    settings: ApiSettings | None = None,
    *,
    gateway: LedgerGateway | None = None,
    clock: Clock | None = None,
    http_transport: httpx.BaseTransport | None = None,
    resolver: Resolver | None = None,
    ledger_reads: LedgerReads | None = None,
    rpc_clients: LedgerRpcClients | None = None,
) -> FastAPI:
    """Build the FastAPI application (routes under ``/v1``).

    Args:
        settings: configuration (default: read from ``NOTARY_API_*`` environment variables).
        gateway: wallet + node access (default: JSON-RPC to ``node_url`` / ``wallet_url``).
        clock: time source (default: the system clock).
        http_transport: httpx transport for callback POSTs (tests: ``httpx.MockTransport``).
        resolver: host name -> addresses, for the callback host policy (default: DNS).
        ledger_reads: node reads of the Connect routes (receipts, anchors); default: the
            node at ``node_url`` (``sandbox_node_url`` in the sandbox, none with the built-in
            test ledger), or none when ``gateway`` is given.
        rpc_clients: the node's and wallet's clients the worker's gateway uses instead of
            ``node_url`` / ``wallet_url`` (the bundled stack's in-process clients); the
            readiness checks and the Connect reads still use the URLs.

    The lifespan creates the database schema, starts the group-commit writer, builds the
    worker and starts its thread (unless ``worker_enabled`` is false), and in sandbox mode
    the sandbox schedule; it stops them at shutdown (queued writes are committed first).
    Operations 2 and 6 are answered by the ``WriteFastPath`` middleware unless
    ``write_fast_path`` is false. Requests that authenticate with ``app_id`` + ``app_key``
    (the Harmony Connect SDKs) are answered by the Connect app (``ledger.api.connect``,
    ``app.state.connect_app``) in the hosted service's shapes. ``app.state.services``
    holds the ``Services`` (``.db``, ``.worker``, ``.gateway``, ...). ``/health``,
    ``/health/live``, ``/health/ready`` and ``/metrics`` need no key
    (``ledger.api.observability``; ``app.state.observability``).
    """
    settings = settings or ApiSettings()
    svc = build_services(
        settings,
        gateway=gateway,
        clock=clock,
        http_transport=http_transport,
        resolver=resolver,
        rpc_clients=rpc_clients,
    )
    probes = _probe_clients(settings, gateway_given=gateway is not None)
    observability = api_observability(
        svc,
        base=Observability.create(
            "api", requests_prefix="notary_api", ready_timeout_s=settings.ready_timeout_s
        ),
        node=probes[0],
        wallet=probes[1],
    )

    probe_closers = [client.aclose for client in probes if client is not None]
    app = FastAPI(
        title="Notary publishing API",
        version=API_VERSION,
        lifespan=service_lifespan(start=svc.start, close=[svc.close, *probe_closers]),
        docs_url=None,  # no HTML pages; the document is GET /v1/openapi.json (with the key)
        redoc_url=None,
        openapi_url=None,
    )
    app.state.services = svc
    if settings.write_fast_path:
        app.add_middleware(WriteFastPath, services=svc)  # inner: runs after the size check
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        path_limits=[(BULK_PATH, settings.bulk_max_body_bytes)],
    )
    if ledger_reads is None and gateway is None:
        ledger_reads = _default_reads(settings)
    if ledger_reads is not None:
        svc.owned.append(ledger_reads)
    app.state.connect_app = create_connect_app(svc, reads=ledger_reads, spec_app=app)
    app.add_middleware(ConnectDispatch, connect_app=app.state.connect_app)
    app.state.observability = observability
    # outermost: health and metrics need no key; every request is counted and timed
    app.add_middleware(ObservabilityMiddleware, observability=observability)
    install_error_handlers(app)
    app.include_router(router)
    app.include_router(verify_page_router)  # GET /verify, no key
    return app


def _probe_clients(
    settings: ApiSettings, *, gateway_given: bool
) -> tuple[AsyncJsonRpcClient | None, AsyncJsonRpcClient | None]:
    """Clients of the node and wallet the API talks to over JSON-RPC, for the readiness
    checks and the balance figure; None where it talks to none (a given gateway, the
    sandbox's built-in ledger)."""
    if gateway_given:
        return None, None
    node_url, wallet_url = settings.node_url, settings.wallet_url
    if settings.sandbox:
        if not (settings.sandbox_node_url and settings.sandbox_wallet_url):
            return None, None
        node_url, wallet_url = settings.sandbox_node_url, settings.sandbox_wallet_url
    timeout_s = settings.ready_timeout_s
    return (
        AsyncJsonRpcClient(node_url, timeout_s=timeout_s, access=settings.node_access()),
        AsyncJsonRpcClient(wallet_url, timeout_s=timeout_s, access=settings.wallet_access()),
    )


def _default_reads(settings: ApiSettings) -> LedgerReads | None:
    """The node the Connect routes read receipts and anchors from (module docstring)."""
    if settings.sandbox:
        url = settings.sandbox_node_url if settings.sandbox_wallet_url else None
        return None if url is None else JsonRpcLedgerReads(url)
    return JsonRpcLedgerReads(settings.node_url, access=settings.node_access())


def services_of(app: FastAPI) -> Services:
    """The ``Services`` of an app built by ``create_app``."""
    return app.state.services
