"""Errors raised by the connectors (clients of the node, the anchoring service and the
publishing API), as the pipeline sees them: from the client's side of the wire.

Exception tree::

    ConnectorPackageError           root of every error the ``connectors`` package defines
    ├── AuditPathError (RuntimeError)       ``connectors.audit.paths``: an audit path unreadable
    ├── CollectionModeError (ValueError)    ``connectors.audit.collections``: a refused mode switch
    ├── MigrationError (RuntimeError)       ``connectors.migrations``: not an audit store
    ├── StoreExposedError (PermissionError) ``connectors.store_modes``: a store file others can read
    ├── ServerStartError (RuntimeError)     ``connectors.served_app``: the server cannot listen
    │   └── ReceiverStartError              ``connectors.callback_receiver``
    ├── TableSourceError                    ``connectors.table_source``
    │   ├── SourceConfigError (ValueError)
    │   └── SourceUnreachable
    ├── UnsafeFileError (OSError)           ``connectors.folder_files``: a path ``open_regular`` refuses
    └── ConnectorError              a service call failed; ``retryable`` tells whether trying again may succeed
        ├── ServiceUnavailable          connect errors, timeouts, broken connections, HTTP 5xx (retryable)
        ├── AuthError                   HTTP 401/403: missing or invalid ``user-key`` (not retryable)
        ├── RequestRejected             other HTTP 4xx, with the body's message (not retryable)
        │   └── NotFound                HTTP 404 where a resource was required (e.g. unknown chain)
        ├── RpcError                    a JSON-RPC 2.0 error object (code, message, data kept)
        └── InvalidResponse             a response that does not have the documented shape

Each name means one thing across the project: the services' own errors, which they render
on the wire, have other names (``ledger.api.errors.TemporarilyUnavailable`` is the 503 the
publishing API answers; ``ledger.jsonrpc.errors.ObjectNotFound`` the -32008 a node answers,
seen here as an ``RpcError``).

Third-party errors (``httpx``) and the JSON-RPC client's errors are converted at the
boundary (``from_transport_error``, ``from_jsonrpc_error``) with ``raise ... from exc``, so
``__cause__`` keeps the original.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, overload

from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.errors import JsonRpcCallError, JsonRpcProtocolError, JsonRpcTransportError

__all__ = [
    "AuthError",
    "ConnectorError",
    "ConnectorPackageError",
    "InvalidResponse",
    "NotFound",
    "RETRYABLE_RPC_CODES",
    "RequestRejected",
    "RpcError",
    "ServiceUnavailable",
    "from_jsonrpc_error",
    "from_transport_error",
]

# JSON-RPC codes worth retrying: internal errors (often a database lookup on the node,
# docs/jsonrpc.md §7 (Errors) table) may succeed on a later attempt. Everything else is the
# caller's fault or a definite answer.
RETRYABLE_RPC_CODES = frozenset({ErrorCode.INTERNAL_ERROR})


class ConnectorPackageError(Exception):
    """Root of the ``connectors`` package's errors (tree in the module docstring): the
    service-call failures (``ConnectorError``) and the sources' and stores' own errors.

    The builtin bases some keep (``ValueError``, ``RuntimeError``, ``OSError``) stay for
    the callers that rely on them.
    """


class ConnectorError(ConnectorPackageError):
    """Base of every error of a call to a service (node, anchoring service, publishing API).

    Attributes:
        retryable: True when the same call may succeed later (outage, overload, timeout).
    """

    retryable: bool = False


class ServiceUnavailable(ConnectorError):
    """The service could not be reached or failed on its side (HTTP 5xx). Retryable.

    Attributes:
        url: the URL that was called.
        status_code: the HTTP status for a 5xx answer, ``None`` for a transport failure.
        request_sent: False when the request surely never reached the server (connect
            failure, pool timeout); True or unknown otherwise, so a retried write may be a
            duplicate that the server must treat idempotently.
    """

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        url: str = "",
        status_code: int | None = None,
        request_sent: bool = True,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code
        self.request_sent = request_sent


class AuthError(ConnectorError):
    """The service refused the credentials (HTTP 401 or 403; docs/rest-api.md §2 (Authentication)).

    Attributes:
        status_code: 401 or 403.
        message: the server's message, if it sent one.
    """

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


class RequestRejected(ConnectorError):
    """The service rejected the request (HTTP 4xx other than 401/403).

    Attributes:
        status_code: the HTTP status (400, 404, 415, 422, ...).
        message: the message taken from the body (``message``, ``detail`` or ``error``
            field), or the raw body text.
        body: the decoded JSON body, or ``None`` when the body was not JSON.
    """

    def __init__(self, message: str, *, status_code: int, body: Any = None) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message
        self.body = body


class NotFound(RequestRejected):
    """HTTP 404 on a call that needs the resource to exist (docs/rest-api.md §5, rule 4)."""


class RpcError(ConnectorError):
    """A JSON-RPC 2.0 error object returned by the node (docs/jsonrpc.md §7 (Errors);
    docs/formats.md §9.2).

    Attributes:
        code: the JSON-RPC error code (``ledger.jsonrpc.codes.ErrorCode``; any int).
        message: the error's message string.
        data: the optional ``data`` member (string or object), or ``None``.
        method: the method that was called.
    """

    def __init__(self, code: int, message: str, *, data: Any = None, method: str = "") -> None:
        detail = f"{method}: " if method else ""
        detail += f"JSON-RPC error {code}: {message}"
        if data is not None:
            detail += f" ({data})"
        super().__init__(detail)
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        """True for codes in ``RETRYABLE_RPC_CODES`` (internal error)."""
        return self.code in RETRYABLE_RPC_CODES


class InvalidResponse(ConnectorError):
    """A response whose body is not the documented shape (not JSON, missing fields).

    Attributes:
        url: the URL that was called.
        body: the raw body text (truncated to 1000 characters).
    """

    def __init__(self, message: str, *, url: str = "", body: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.body = body[:1000]


def from_transport_error(exc: Exception, *, url: str) -> ServiceUnavailable:
    """Convert an ``httpx.TransportError`` (connect, timeout, protocol) into ``ServiceUnavailable``.

    ``request_sent`` is False only for failures that happen before the request is written
    (connect errors, connect and pool timeouts).
    """
    # Imported here: the pipeline's hashing child imports this tree (through the safe file
    # reading) and never calls over HTTP; httpx would cost it ~15 MB of memory.
    import httpx

    unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    return ServiceUnavailable(
        f"{type(exc).__name__} calling {url}: {exc}", url=url, request_sent=not unsent
    )


@overload
def from_jsonrpc_error(exc: JsonRpcCallError, *, url: str) -> RpcError: ...


@overload
def from_jsonrpc_error(exc: JsonRpcTransportError, *, url: str) -> ConnectorError: ...


def from_jsonrpc_error(
    exc: JsonRpcCallError | JsonRpcTransportError, *, url: str
) -> ConnectorError:
    """Convert an error of the JSON-RPC client (``ledger.jsonrpc.client``) into this tree.

    - ``JsonRpcCallError`` (an error object): ``RpcError`` with its code, message and data.
    - ``JsonRpcProtocolError`` (no JSON-RPC answer), by HTTP status: 5xx ``ServiceUnavailable``,
      401/403 ``AuthError``, other 4xx ``RequestRejected`` (the body's text as message), and
      anything else ``InvalidResponse`` (the body kept).
    - any other ``JsonRpcTransportError``: ``from_transport_error`` of its httpx cause.

    Callers raise the result ``from`` ``exc`` (or, for a transport failure, from its cause).
    """
    if isinstance(exc, JsonRpcCallError):
        return RpcError(exc.code, exc.message, data=exc.data, method=exc.method or "")
    if isinstance(exc, JsonRpcProtocolError):
        return _from_reply(exc, url=url)
    cause = exc.__cause__
    return from_transport_error(cause if isinstance(cause, Exception) else exc, url=url)


def _from_reply(exc: JsonRpcProtocolError, *, url: str) -> ConnectorError:
    status = exc.status_code or 0
    text = exc.body.strip()[:500] or _reason(status)
    if status >= 500:
        return ServiceUnavailable(f"HTTP {status}: {text}", url=url, status_code=status)
    if status in (401, 403):
        return AuthError(text, status_code=status)
    if status >= 400:
        return RequestRejected(text, status_code=status)
    return InvalidResponse(str(exc), url=url, body=exc.body)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
