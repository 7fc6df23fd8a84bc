"""Errors of the publishing API: the package's exception tree and the REST errors' JSON form.

Every error response has the body::

    {"error": {"code": <HTTP status>, "name": "<error name>", "message": "<detail>"}}

Exception tree (names as in docs/rest-api.md §7; statuses it does not name carry HTTP's
own reason phrase; modules named relative to ``ledger.api``)::

    LedgerApiError (Exception)           root of every error the ``ledger.api`` package defines
    ├── AccountNotFound (LookupError)    ``accounts``: no account with that id
    ├── CallbackRefused (ValueError)     ``outbox.callback_targets``: a callback URL refused
    ├── EncodingError (ValueError)       ``encoding``: a string not valid in its encoding
    ├── GatewayUnavailable               ``outbox.gateway``: the wallet or node cannot be reached
    ├── WriteRefused                     ``outbox.intake``: a write that cannot be done
    │   ├── ChainExists, AccountRevoked
    │   └── ChainNotFound (LookupError)
    ├── WriterClosed (RuntimeError)      ``outbox.writer``: the writer is stopped
    ├── _Disconnected                    ``http.fastpath``: the client went away mid-body
    └── ApiError                         .status_code, .name, .message: the errors rendered
        ├── BadRequest                 400   "Bad Request": invalid JSON, Base64, field types, query
        ├── AuthenticationMissing      403   "Authentication Parameters Missing"
        ├── AuthenticationFailed       403   "Authentication Failed"
        ├── NoMappingRuleMatched       404   "No Mapping Rule Matched": no such route or method
        ├── PageNotFound               404   "Page Not Found": unknown (or not yours) chain / entry,
        │                                    or a search that matches nothing
        ├── PayloadTooLarge            413   "Payload Too Large": body above ``max_body_bytes``
        ├── UnsupportedMediaType       415   "Unsupported Media Type": POST body not application/json
        ├── Unprocessable              422   "Unprocessable entity": entry too large, chain exists,
        │                                    chain unknown for entry creation, callback refused
        ├── TooManyRequests            429   "Too Many Requests": the key's rate limit is used up
        │                                    (``Retry-After`` header: whole seconds to wait)
        ├── InternalServerError        500   "Internal Error": a real fault (details only in the log)
        ├── TemporarilyUnavailable     503   "Service Unavailable": the service is stopping
        └── InsufficientStorage        507   "Insufficient Storage": the disk is full, nothing stored

These are the errors the API renders (``ledger.api.http.errors`` installs the handlers). Class names differ from the clients' and the JSON-RPC
layer's on purpose, one name per meaning: ``InternalServerError`` is HTTP 500 here, while
``ledger.jsonrpc.errors.InternalError`` is JSON-RPC -32603; ``TemporarilyUnavailable`` is the
503 this service answers, while ``connectors.errors.ServiceUnavailable`` is what a client
raises when a service cannot be reached or answers 5xx.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from fastapi.responses import JSONResponse

__all__ = [
    "ApiError",
    "LedgerApiError",
    "AuthenticationFailed",
    "AuthenticationMissing",
    "BadRequest",
    "InsufficientStorage",
    "InternalServerError",
    "NoMappingRuleMatched",
    "PageNotFound",
    "PayloadTooLarge",
    "TemporarilyUnavailable",
    "TooManyRequests",
    "Unprocessable",
    "UnsupportedMediaType",
    "error_body",
]


class LedgerApiError(Exception):
    """Root of the ``ledger.api`` package's errors (tree in the module docstring).

    Catch it to catch any of them; the builtin bases some subclasses keep (``LookupError``,
    ``ValueError``, ``RuntimeError``) stay for the callers that rely on them.
    """


class ApiError(LedgerApiError):
    """An error rendered as the JSON error body with its HTTP status.

    A subclass names its status and error name as class keywords:
    ``class PageNotFound(ApiError, status=404, name="Page Not Found")``.

    Args:
        message: human detail placed in ``error.message``; defaults to the error name.
    """

    status_code: ClassVar[int] = 500
    name: ClassVar[str] = "Internal Error"

    def __init_subclass__(cls, *, status: int | None = None, name: str | None = None) -> None:
        super().__init_subclass__()
        if status is not None:
            cls.status_code = status
        if name is not None:
            cls.name = name

    def __init__(self, message: str | None = None) -> None:
        self.message = message or self.name
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        """The JSON error body (module docstring)."""
        return error_body(self.status_code, self.name, self.message)

    def extra_headers(self) -> list[tuple[str, str]]:
        """Headers this error adds to its response (``Retry-After`` for 429)."""
        return []

    def to_response(self) -> JSONResponse:
        """The JSON response of this error."""
        response = JSONResponse(self.body(), status_code=self.status_code)
        for name, value in self.extra_headers():
            response.headers[name] = value
        return response


class BadRequest(ApiError, status=400, name="Bad Request"):
    """400: invalid JSON, Base64, field types or query parameters."""


class AuthenticationMissing(ApiError, status=403, name="Authentication Parameters Missing"):
    """403: no ``user-key`` (nor ``app_id`` + ``app_key``) header."""


class AuthenticationFailed(ApiError, status=403, name="Authentication Failed"):
    """403: an unknown or revoked key."""


class NoMappingRuleMatched(ApiError, status=404, name="No Mapping Rule Matched"):
    """404: no such route, or not with this method."""


class PageNotFound(ApiError, status=404, name="Page Not Found"):
    """404: an unknown (or another account's) chain or entry, or a search without match."""


class PayloadTooLarge(ApiError, status=413, name="Payload Too Large"):
    """413: a body above ``max_body_bytes``."""


class UnsupportedMediaType(ApiError, status=415, name="Unsupported Media Type"):
    """415: a POST body that is not ``application/json``."""


class Unprocessable(ApiError, status=422, name="Unprocessable entity"):
    """422: entry too large, chain exists, chain unknown for an entry, callback refused."""


class TooManyRequests(ApiError, status=429, name="Too Many Requests"):
    """429 with a ``Retry-After`` header (seconds, rounded up, at least 1).

    Args:
        retry_after_s: seconds until the next request would be allowed.
    """

    def __init__(self, message: str | None = None, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def extra_headers(self) -> list[tuple[str, str]]:
        return [("retry-after", str(max(1, math.ceil(self.retry_after_s))))]


class TemporarilyUnavailable(ApiError, status=503, name="Service Unavailable"):
    """503: the service cannot take the request now (it is stopping); send it again later."""


class InsufficientStorage(ApiError, status=507, name="Insufficient Storage"):
    """The service's disk is full: nothing was stored; the caller may send the write again."""


class InternalServerError(ApiError, status=500, name="Internal Error"):
    """500: a fault of the service; the details go to the log, never to the caller."""


def error_body(code: int, name: str, message: str) -> dict[str, Any]:
    """The one error body shape: ``{"error": {"code", "name", "message"}}``."""
    return {"error": {"code": code, "name": name, "message": message}}
