"""JSON-RPC 2.0 clients (sync and async) over httpx with keep-alive connections.

The one client of the project: the publishing API's gateway, the wallet's node link, the
anchoring service and the pipeline's connectors (``connectors.node``) all call through it.
Requests and the reading of replies are the wire codec's (``ledger.jsonrpc.wire``: id
matching, HTTP-status tolerance, a batch refused as a whole); this module adds HTTP.

Errors (tree in ``ledger.jsonrpc.errors``):

- ``JsonRpcCallError``: the server answered with an error object (``.code``, ``.message``,
  ``.data``, ``.method``).
- ``JsonRpcTransportError``: the HTTP exchange failed (connect, timeout, read); ``__cause__``
  is httpx's error.
- ``JsonRpcProtocolError`` (a transport error): the reply is not a JSON-RPC response;
  ``.status_code`` and ``.body`` say what came back instead.

Timeouts: ``timeout_s`` bounds connecting, each read and each write; waiting for a free
pooled connection is not bounded separately (each request holding one is).

Locked services (docs/jsonrpc.md §1.1): ``access`` (``ledger.jsonrpc.credentials.RpcAccess``)
gives the HTTP basic credentials sent with every request and the certificate authority
trusted for ``https://``. Credentials written in the URL (``http://user:pass@host:8088/v2``)
are used when ``access`` has none; they are taken out of the URL before any request, so
neither httpx's request log nor an error message shows them. A refusal (HTTP 401) is a
``JsonRpcProtocolError`` with ``status_code`` 401.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from ledger.jsonrpc.credentials import RpcAccess
from ledger.jsonrpc.errors import JsonRpcTransportError
from ledger.jsonrpc.wire import Call, JsonRpcCodec, Params

__all__ = ["AsyncJsonRpcClient", "JsonRpcClient"]

_HEADERS = {"content-type": "application/json", "accept": "application/json"}


def _safe_url(url: str) -> str:
    """``url`` without user info, for error messages."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


def _timeout(timeout_s: float) -> httpx.Timeout:
    return httpx.Timeout(timeout_s, pool=None)


def _split_userinfo(url: str) -> tuple[str, httpx.BasicAuth | None]:
    """``(url without user info, basic auth of that user info or None)``.

    httpx logs every request's URL (logger ``httpx``, INFO): credentials written in the URL
    are sent as an ``Authorization`` header instead, so that they never reach a log line.
    """
    parsed = httpx.URL(url)
    if not parsed.userinfo:
        return url, None
    plain = str(parsed.copy_with(username=None, password=None))
    return plain, httpx.BasicAuth(parsed.username, parsed.password)


def _http_options(
    timeout_s: float, access: RpcAccess | None, url_auth: httpx.BasicAuth | None
) -> dict[str, Any]:
    """The keyword arguments shared by ``httpx.Client`` and ``httpx.AsyncClient``."""
    access = access or RpcAccess()
    credentials = access.credentials
    auth = url_auth
    if credentials is not None:
        auth = httpx.BasicAuth(credentials.user, credentials.password)
    return {
        "timeout": _timeout(timeout_s),
        "headers": _HEADERS,
        "auth": auth,
        "verify": access.ssl_verify(),
    }


def _transport_error(codec: JsonRpcCodec, exc: httpx.HTTPError) -> JsonRpcTransportError:
    return JsonRpcTransportError(
        f"JSON-RPC request to {codec.url} failed: {type(exc).__name__}: {exc}", url=codec.url
    )


class _BaseClient:
    """What the blocking and the async client share: the endpoint, its codec, the httpx
    options (as httpx's ``BaseClient`` serves ``Client`` and ``AsyncClient``)."""

    def __init__(self, url: str, *, timeout_s: float, access: RpcAccess | None) -> None:
        self._url = url
        self._codec = JsonRpcCodec(_safe_url(url))
        self._endpoint, url_auth = _split_userinfo(url)
        self._options = _http_options(timeout_s, access, url_auth)

    @property
    def url(self) -> str:
        """The endpoint, as given."""
        return self._url


class JsonRpcClient(_BaseClient):
    """Blocking JSON-RPC client; one keep-alive ``httpx.Client`` per instance, thread-safe.

    Args:
        url: the endpoint, e.g. ``"http://127.0.0.1:8088/v2"``.
        timeout_s: connect/read/write timeout in seconds.
        transport: optional httpx transport (``httpx.MockTransport`` in tests,
            ``httpx.HTTPTransport(retries=1)`` to retry failed connects).
        access: credentials and TLS trust for a locked service (module docstring).

    Raises:
        OSError / ssl.SSLError: ``access.tls_ca_file`` cannot be read.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        access: RpcAccess | None = None,
    ) -> None:
        super().__init__(url, timeout_s=timeout_s, access=access)
        self._http = httpx.Client(transport=transport, **self._options)

    def call(self, method: str, params: Params = None) -> Any:
        """Call ``method`` with named ``params`` (omitted when None) and return ``result``.

        Raises:
            JsonRpcCallError: the server returned an error object.
            JsonRpcTransportError: the HTTP exchange failed (JsonRpcProtocolError: bad reply).
        """
        request_id, body = self._codec.encode_call(method, params)
        response = self._post(body)
        return self._codec.decode_call(
            response.status_code, response.content, request_id=request_id, method=method
        )

    def batch(self, calls: Sequence[Call]) -> list[Any]:
        """Send ``[(method, params), ...]`` in one HTTP request.

        Returns:
            One item per call, in call order: the result, or a JsonRpcCallError (not raised).

        Raises:
            JsonRpcCallError: the server refused the whole batch with one error object.
            JsonRpcTransportError: the HTTP exchange failed (JsonRpcProtocolError: bad reply).
        """
        if not calls:
            return []
        ids, body = self._codec.encode_batch(calls)
        response = self._post(body)
        return self._codec.decode_batch(
            response.status_code, response.content, ids=ids, calls=calls
        )

    def _post(self, body: bytes) -> httpx.Response:
        try:
            return self._http.post(self._endpoint, content=body)
        except httpx.HTTPError as exc:
            raise _transport_error(self._codec, exc) from exc

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncJsonRpcClient(_BaseClient):
    """The async twin of :class:`JsonRpcClient` (``httpx.AsyncClient``); same arguments.

    ``transport`` is an ``httpx.AsyncBaseTransport`` (e.g. ``httpx.ASGITransport(app)``).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        access: RpcAccess | None = None,
    ) -> None:
        super().__init__(url, timeout_s=timeout_s, access=access)
        self._http = httpx.AsyncClient(transport=transport, **self._options)

    async def call(self, method: str, params: Params = None) -> Any:
        """See :meth:`JsonRpcClient.call`."""
        request_id, body = self._codec.encode_call(method, params)
        response = await self._post(body)
        return self._codec.decode_call(
            response.status_code, response.content, request_id=request_id, method=method
        )

    async def batch(self, calls: Sequence[Call]) -> list[Any]:
        """See :meth:`JsonRpcClient.batch`."""
        if not calls:
            return []
        ids, body = self._codec.encode_batch(calls)
        response = await self._post(body)
        return self._codec.decode_batch(
            response.status_code, response.content, ids=ids, calls=calls
        )

    async def _post(self, body: bytes) -> httpx.Response:
        try:
            return await self._http.post(self._endpoint, content=body)
        except httpx.HTTPError as exc:
            raise _transport_error(self._codec, exc) from exc

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._http.aclose()

    async def close(self) -> None:
        """Alias of :meth:`aclose`."""
        await self.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
