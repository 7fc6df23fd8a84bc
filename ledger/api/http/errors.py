"""How the HTTP layer answers errors: every failure in the one JSON error form.

``install_error_handlers(app)`` renders ``ApiError`` (``ledger.api.errors``) as itself,
a routing miss as 404 No Mapping Rule Matched (405 too), a request validation error as
400 Bad Request, and any other exception as 500 Internal Error with the details only in
the log (docs/rest-api.md §7).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ledger.api.errors import (
    ApiError,
    BadRequest,
    InternalServerError,
    NoMappingRuleMatched,
    PayloadTooLarge,
    error_body,
)

__all__ = ["install_error_handlers"]

_log = logging.getLogger(__name__)


def install_error_handlers(app: FastAPI) -> None:
    """Render ApiError, routing misses, validation errors and faults in the JSON error form."""
    app.add_exception_handler(ApiError, _on_api_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _on_validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _on_fault)


async def _on_api_error(_request: Request, exc: ApiError) -> JSONResponse:
    return exc.to_response()


async def _on_http_exception(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if exc.status_code in (404, 405):
        return NoMappingRuleMatched("The call matched no known endpoint").to_response()
    name = {400: BadRequest.name, 413: PayloadTooLarge.name}.get(exc.status_code, "Error")
    return JSONResponse(
        error_body(exc.status_code, name, str(exc.detail)), status_code=exc.status_code
    )


async def _on_validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    details = "; ".join(
        f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg')}" for err in exc.errors()
    )
    return BadRequest(details or "invalid request").to_response()


async def _on_fault(_request: Request, exc: Exception) -> JSONResponse:
    _log.exception("unhandled error in the publishing API", exc_info=exc)
    return InternalServerError("The request could not be handled").to_response()
