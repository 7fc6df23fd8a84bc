"""A pool of HTTP/1.1 keep-alive connections for many small requests from threads.

A thin layer over ``urllib3``'s connection pool, which costs a fraction of the CPU of
``httpx`` per request (measured on loopback, 16 threads, small JSON bodies: ``http.client``
0.2 ms, ``httpx.Client`` 1.0 ms, ``httpcore`` alone 0.65 ms; ``httpx``'s ``AsyncClient``
was slower still). On a small machine the client's CPU is taken from the services it
talks to, so this bounds how fast entries can be published. Only what bulk publishing
needs is here: one origin, requests with a complete body, answers read whole; everything
else stays on ``httpx`` (``connectors.publishing``).

``urllib3`` reuses a connection unless either side asked to close it and replaces one the
server closed while idle. The one retry here is a request on a connection the server
closed just as it was reused (closed before any answer); any other failure is reported
with whether it may have reached the server (``ServiceUnavailable.request_sent``), and the
caller's idempotency (the entry hash) decides.
"""

from __future__ import annotations

import http.client
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
)

from connectors.errors import ServiceUnavailable

__all__ = ["KeepAlivePool", "RawResponse", "proxy_configured"]

# What a reused connection closed by the server before it answered raises.
_CLOSED_UNANSWERED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class RawResponse:
    """An answer read whole: status code, reason phrase, headers (lowercase names), body."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes


def proxy_configured(base_url: str) -> bool:
    """True when the environment routes ``base_url`` through a proxy (``HTTP_PROXY`` etc.
    without a matching ``NO_PROXY``): this pool connects directly, so it must not be used."""
    parts = urlsplit(base_url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


class KeepAlivePool:
    """Keep-alive connections to the origin of ``base_url``, safe to use from many threads.

    Args:
        base_url: ``http://`` or ``https://`` URL; its path is the prefix of every request.
        headers: sent with every request (e.g. ``user-key``).
        timeout_s: connect and read timeout of each request, seconds.
        max_connections: at most this many connections at once; a request beyond waits
            for one to come back.
        ssl_context: TLS settings for ``https`` (default: ``ssl.create_default_context()``).

    Raises:
        ValueError: the scheme is neither ``http`` nor ``https``, or ``max_connections`` < 1.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout_s: float,
        max_connections: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections}")
        self._prefix = parts.path.rstrip("/")
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._headers = dict(headers)
        options: dict[str, Any] = {
            "timeout": urllib3.Timeout(connect=timeout_s, read=timeout_s),
            "maxsize": max_connections,
            "block": True,
            "retries": False,
        }
        if parts.scheme == "https":
            self._pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
                parts.hostname,
                parts.port or 443,
                ssl_context=ssl_context or ssl.create_default_context(),
                **options,
            )
        else:
            self._pool = urllib3.HTTPConnectionPool(parts.hostname, parts.port or 80, **options)

    def url(self, path: str) -> str:
        """The full URL of ``path`` (for error messages)."""
        return f"{self._origin}{self._prefix}{path}"

    def request(
        self, method: str, path: str, body: bytes | None = None, *, content_type: str = ""
    ) -> RawResponse:
        """Send one request and read its answer whole.

        Args:
            method: HTTP method.
            path: path after the base URL's path (already quoted), starting with ``/``.
            body: the request body, sent with its ``content-length``.
            content_type: the body's media type, if any.

        Returns:
            the answer, whatever its status code.

        Raises:
            ServiceUnavailable: the connection could not be opened (``request_sent`` False),
                or failed or timed out after the request was written (``request_sent`` True).
        """
        headers = self._headers | ({"content-type": content_type} if content_type else {})
        try:
            try:
                response = self._pool.urlopen(
                    method, self._prefix + path, body=body, headers=headers, preload_content=True
                )
            except ProtocolError as exc:
                if not _closed_unanswered(exc):
                    raise
                # A kept-alive connection the server closed just as it was reused (its idle
                # timeout racing ours): closed before any answer, so sent once more on a new
                # connection, as browsers do.
                response = self._pool.urlopen(
                    method, self._prefix + path, body=body, headers=headers, preload_content=True
                )
        except HTTPError as exc:
            # A refused or failed connect never carried the request; anything later may have.
            sent = not isinstance(exc, NewConnectionError) and not _connect_failure(exc)
            raise ServiceUnavailable(
                f"{type(exc).__name__} calling {self.url(path)}: {exc}",
                url=self.url(path),
                request_sent=sent,
            ) from exc
        answer_headers = {k.lower(): v for k, v in response.headers.items()}
        return RawResponse(response.status, response.reason or "", answer_headers, response.data)

    def close(self) -> None:
        """Close the idle connections; connections in use close when they come back."""
        self._pool.close()


def _closed_unanswered(exc: ProtocolError) -> bool:
    """The connection was closed or reset before any byte of an answer arrived."""
    causes = (exc.args[-1] if exc.args else None, exc.__cause__, exc.__context__)
    return any(isinstance(cause, _CLOSED_UNANSWERED) for cause in causes)


def _connect_failure(exc: HTTPError) -> bool:
    """``urllib3`` wraps a failed connect (refused, unreachable, connect timeout)."""
    reason = getattr(exc, "reason", None)
    return isinstance(exc, ConnectTimeoutError) or isinstance(
        reason, NewConnectionError | ConnectTimeoutError
    )
