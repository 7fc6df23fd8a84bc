"""What the three JSON-RPC services (node, wallet, anchoring service) share in their apps.

Each serves its methods at ``/v2`` with HTTP 400 for an error reply (as factomd and
factom-walletd do, docs/jsonrpc.md §1), counts its HTTP requests and its calls
(``notary_<service>_http_*`` and ``notary_<service>_requests_total``, docs/jsonrpc.md),
and, when its settings give an RPC user and password (``ledger.serving.RpcServing``),
answers only requests carrying them (``ledger.jsonrpc.auth``), the probes staying open.

- ``rpc_observability(service)``: the metrics registry, request metrics and readiness of
  one service, and the observer of its calls;
- ``rpc_auth_gate(settings, realm=...)``: the gate of ``/v2`` (None when it is open);
- ``create_rpc_app(service, registry, settings, ...)``: the Starlette app of the wallet and
  the anchoring service with all of the above (the node has an ASGI app of its own,
  ``ledger.node.http``, and uses the first two).

Kept apart from ``ledger.serving``, which the pipeline's helper servers import too: the
server side of the JSON-RPC layer is not theirs to load.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from starlette.applications import Starlette

from ledger.jsonrpc.auth import BasicAuthGate
from ledger.jsonrpc.credentials import BasicCredentials
from ledger.jsonrpc.observed import CallObserver, ObservedRegistry
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.server import create_jsonrpc_app
from ledger.observability import Observability, ObservabilityMiddleware, RpcCallMetrics

__all__ = ["RPC_PATH", "create_rpc_app", "rpc_auth_gate", "rpc_observability"]

#: The JSON-RPC route of every service (factomd's ``/v2``).
RPC_PATH = "/v2"


class _RpcSettings(Protocol):
    max_body_bytes: int

    def rpc_credentials(self) -> BasicCredentials | None: ...


def rpc_observability(service: str) -> tuple[Observability, CallObserver]:
    """A new ``Observability`` of ``service`` (``"node"``, ``"wallet"``, ``"anchor"``) with
    its request metrics, and the observer that counts its JSON-RPC calls into it."""
    base = Observability.create(service, requests_prefix=f"notary_{service}_http")
    calls = RpcCallMetrics(base.registry, f"notary_{service}")
    return base, calls.observe


def rpc_auth_gate(settings: _RpcSettings, *, realm: str) -> BasicAuthGate | None:
    """The gate of ``RPC_PATH`` when the settings give an RPC user and password, else None.

    Args:
        realm: the ``WWW-Authenticate`` realm of its 401 (``"notary node RPC"``).
    """
    credentials = settings.rpc_credentials()
    if credentials is None:
        return None
    return BasicAuthGate(credentials, realm=realm, paths=(RPC_PATH,))


def create_rpc_app(
    service: str,
    registry: MethodRegistry,
    settings: _RpcSettings,
    *,
    realm: str,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[Any]],
) -> tuple[Starlette, Observability]:
    """The service's app: ``registry`` at ``RPC_PATH`` (module docstring), bodies up to
    ``settings.max_body_bytes``, the ``lifespan`` (``ledger.serving.service_lifespan``),
    and the observability middleware outermost.

    Returns:
        The app (its endpoint is ``app.state.jsonrpc``) and its ``Observability``, to which
        the service adds its own checks and figures.
    """
    observability, observe = rpc_observability(service)
    app = create_jsonrpc_app(
        ObservedRegistry(registry, observe),
        path=RPC_PATH,
        error_http_status=400,
        max_body_bytes=settings.max_body_bytes,
        lifespan=lifespan,
        credentials=settings.rpc_credentials(),
        realm=realm,
    )
    app.add_middleware(ObservabilityMiddleware, observability=observability)
    return app, observability
