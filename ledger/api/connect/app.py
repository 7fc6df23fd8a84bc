"""The Connect variant of the API: its own FastAPI app over the same ``Services``.

``create_connect_app(services, reads=...)`` builds the app that answers requests in
Connect mode (``ledger.api.connect``): the Connect routes (chains and entries, identities,
receipts and anchors), the same body-size limit, authentication, rate limit and error
bodies as the spec's app. It has no lifespan of its own: the spec app's lifespan starts
and stops the shared services, and ``ConnectDispatch`` hands this app HTTP requests only.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import Response

from ledger.api.connect import chains, identities, proofs
from ledger.api.connect.common import json_response
from ledger.api.connect.ledger_reads import LedgerReads
from ledger.api.http.deps import BodySizeLimit, current_account
from ledger.api.http.errors import install_error_handlers
from ledger.api.http.openapi import build_openapi
from ledger.api.http.routes import API_VERSION
from ledger.api.services import Services

__all__ = ["create_connect_app"]


_documents = APIRouter(prefix="/v1", dependencies=[Depends(current_account)])


@_documents.get("/openapi.json", include_in_schema=False)
async def get_openapi_document(request: Request) -> Response:
    """The spec app's OpenAPI document (it describes the spec's shapes), as in spec mode."""
    spec_app: FastAPI = request.app.state.spec_app
    document = getattr(spec_app.state, "openapi_document", None)
    if document is None:
        document = build_openapi(spec_app, request.app.state.services.settings)
        spec_app.state.openapi_document = document
    return json_response(document)


def create_connect_app(
    services: Services, *, reads: LedgerReads | None, spec_app: FastAPI
) -> FastAPI:
    """The Connect app over ``services``.

    Args:
        services: the spec app's services (shared).
        reads: the node reader of receipts and anchors (``None``: no node).
        spec_app: the spec's app, whose OpenAPI document ``/v1/openapi.json`` serves.
    """
    app = FastAPI(
        title="Notary publishing API (Harmony Connect shapes)",
        version=API_VERSION,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.services = services
    app.state.ledger_reads = reads
    app.state.spec_app = spec_app
    app.add_middleware(BodySizeLimit, max_bytes=services.settings.max_body_bytes)
    install_error_handlers(app)
    for router in (chains.router, identities.router, proofs.router, _documents):
        app.include_router(router)
    return app
