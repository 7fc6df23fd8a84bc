"""How the publishing client reaches the API: one transport, chosen at construction, and the
one request path every call of ``connectors.publishing`` goes through (``request_json``).

Two transports answer the same ``Transport`` interface (``request`` -> ``RawResponse``):

- ``connectors.http_keepalive.KeepAlivePool``, urllib3 keep-alive connections: a fifth of
  ``httpx``'s CPU per request, the default whenever the API is reached directly;
- ``HttpxTransport``, an ``httpx.Client``: when an ``httpx`` transport is injected
  (``httpx.MockTransport`` in tests) or the environment routes the API through a proxy
  (which the lean pool does not speak).

Either way the answers are read whole and mapped to ``connectors.errors`` the same way
(``raise_for_status``): 5xx and 429 ``ServiceUnavailable`` (retryable), 401/403
``AuthError``, 404 ``NotFound``, other 4xx ``RequestRejected``, a body that is not JSON
``InvalidResponse``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import httpx
import orjson

from connectors.errors import (
    AuthError,
    ConnectorError,
    InvalidResponse,
    NotFound,
    RequestRejected,
    ServiceUnavailable,
    from_transport_error,
)
from connectors.http_keepalive import KeepAlivePool, RawResponse, proxy_configured

__all__ = [
    "HttpxTransport",
    "Transport",
    "open_transport",
    "raise_for_status",
    "request_json",
    "send",
    "status_error",
]

_JSON = "application/json"


class Transport(Protocol):
    """Sends one request to the API and reads its answer whole (any status code).

    ``path`` follows the base URL's path (already quoted, query included); ``body`` is sent
    with its ``content-length`` and ``content_type``. Raises ``ServiceUnavailable`` when the
    request could not be sent or answered (``request_sent`` says whether it may have
    reached the server).
    """

    def request(
        self, method: str, path: str, body: bytes | None = None, *, content_type: str = ""
    ) -> RawResponse: ...

    def url(self, path: str) -> str:
        """The full URL of ``path`` (for error messages)."""
        ...

    def close(self) -> None: ...


class HttpxTransport:
    """``Transport`` over an ``httpx.Client`` (thread-safe, keep-alive pool of its own),
    whose ``base_url`` is the API root; built by ``open_transport``."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def request(
        self, method: str, path: str, body: bytes | None = None, *, content_type: str = ""
    ) -> RawResponse:
        headers = {"content-type": content_type} if content_type else None
        try:
            response = self._client.request(method, path, content=body, headers=headers)
        except httpx.TransportError as exc:
            raise from_transport_error(exc, url=path) from exc
        return RawResponse(
            response.status_code, response.reason_phrase, response.headers, response.content
        )

    def url(self, path: str) -> str:
        return f"{self._client.base_url}".rstrip("/") + path

    def close(self) -> None:
        self._client.close()


def open_transport(
    base_url: str,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    max_connections: int,
    transport: httpx.BaseTransport | None = None,
) -> Transport:
    """The transport for ``base_url`` (module docstring): the lean pool when the API is
    reached directly, ``HttpxTransport`` when ``transport`` is given or a proxy is
    configured.

    Args:
        base_url: API root including the base path.
        headers: sent with every request.
        timeout_s: connect/read/write timeout, seconds (waiting for a pooled connection is
            not limited).
        max_connections: size of the keep-alive pool.
        transport: an ``httpx`` transport (``httpx.MockTransport`` in tests); a network one
            with one connect retry when ``httpx`` is used without one.

    Raises:
        ValueError: ``base_url`` is not an ``http(s)`` URL, or ``max_connections`` < 1.
    """
    base_url = base_url.rstrip("/")
    if transport is None and not proxy_configured(base_url):
        tls = httpx.create_ssl_context() if base_url.startswith("https:") else None
        return KeepAlivePool(
            base_url,
            headers=headers,
            timeout_s=timeout_s,
            max_connections=max_connections,
            ssl_context=tls,
        )
    if transport is None:
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        transport = httpx.HTTPTransport(limits=limits, retries=1)
    client = httpx.Client(
        base_url=base_url,
        headers=dict(headers),
        timeout=httpx.Timeout(timeout_s, pool=None),
        transport=transport,
    )
    return HttpxTransport(client)


def send(transport: Transport, method: str, path: str, body: bytes | None = None) -> RawResponse:
    """Send one request with a JSON ``body`` (if any) through ``transport``: the one place
    the publishing client's requests leave from. Returns the answer whatever its status.

    Raises:
        ServiceUnavailable: the request could not be sent or answered.
    """
    return transport.request(method, path, body, content_type=_JSON if body else "")


def request_json(
    transport: Transport,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    allow_404: bool = False,
) -> Any:
    """Send one request (a JSON ``body``, if any) and decode its JSON answer.

    Returns:
        the decoded answer; ``None`` for a 404 when ``allow_404``.

    Raises:
        ServiceUnavailable, AuthError, NotFound, RequestRejected: by status
            (``raise_for_status``) or transport failure.
        InvalidResponse: a successful answer that is not JSON.
    """
    answer = send(transport, method, path, body)
    if allow_404 and answer.status == 404:
        return None
    raise_for_status(answer, transport.url(path))
    try:
        return orjson.loads(answer.body)
    except orjson.JSONDecodeError as exc:
        text = answer.body.decode("utf-8", "replace")
        raise InvalidResponse("response is not JSON", url=path, body=text) from exc


def raise_for_status(answer: RawResponse, url: str) -> None:
    """Raise the connector error of an error answer (status >= 400) to ``url``."""
    if answer.status < 400:
        return
    message, body = _error_message(answer)
    raise status_error(answer.status, message, body=body, url=url)


def status_error(status: int, message: str, *, body: Any, url: str) -> ConnectorError:
    """The connector error of an HTTP error ``status`` (of an answer, or of one entry of a
    bulk answer)."""
    if status >= 500 or status == 429:
        # 429 (rate limited) and 5xx are passing states: the caller retries later.
        return ServiceUnavailable(f"HTTP {status}: {message}", url=url, status_code=status)
    if status in (401, 403):
        return AuthError(message, status_code=status)
    error_type = NotFound if status == 404 else RequestRejected
    return error_type(message, status_code=status, body=body)


def _error_message(answer: RawResponse) -> tuple[str, Any]:
    """(message, decoded JSON body or None) from an error answer of unknown shape."""
    try:
        body = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        return (answer.body.decode("utf-8", "replace").strip() or answer.reason), None
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, dict) and "message" in value:
                value = value["message"]
            if value:
                return (value if isinstance(value, str) else str(value)), body
    return str(body), body
