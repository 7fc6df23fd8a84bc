"""JSON-RPC 2.0 clients (sync and async) over httpx with keep-alive connections.

Exception tree::

    JsonRpcError (ledger.jsonrpc.errors)
    └── JsonRpcCallError          the server answered with an error object (.code, .message, .data, .method)
    JsonRpcTransportError (Exception)  the HTTP exchange failed (connect, timeout, read); __cause__ is httpx's error
    └── JsonRpcProtocolError      the reply is not a JSON-RPC response (bad status/body, unknown id)

Error replies are accepted whatever the HTTP status (factomd answers errors with 400, walletd
with 200, our servers answer oversized bodies with 413), as long as the body is a JSON-RPC
response.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx
import orjson
from pydantic import BaseModel

from ledger.jsonrpc.errors import JsonRpcError

__all__ = [
    "AsyncJsonRpcClient",
    "JsonRpcCallError",
    "JsonRpcClient",
    "JsonRpcProtocolError",
    "JsonRpcTransportError",
]

Params = Mapping[str, Any] | BaseModel | None
_HEADERS = {"content-type": "application/json", "accept": "application/json"}


class JsonRpcCallError(JsonRpcError):
    """An error object returned by the server.

    Args:
        code, message, data: the ``error`` member's fields.
        method: the method called, when known.
    """

    def __init__(self, code: int, message: str, data: Any = None, *, method: str | None = None):
        super().__init__(code, message, data)
        self.method = method


class JsonRpcTransportError(Exception):
    """The HTTP exchange with ``url`` failed; the httpx error is chained as ``__cause__``."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class JsonRpcProtocolError(JsonRpcTransportError):
    """The server replied with something that is not a JSON-RPC response.

    Attributes:
        status_code: the HTTP status of the reply (None if not applicable).
    """

    def __init__(self, message: str, *, url: str, status_code: int | None = None) -> None:
        super().__init__(message, url=url)
        self.status_code = status_code


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _request_object(request_id: int, method: str, params: Params) -> dict[str, Any]:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        request["params"] = params
    return request


def _safe_url(url: str) -> str:
    """``url`` without user info, for error messages."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


class _Exchange:
    """Pure encode/decode shared by the sync and async clients."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.safe_url = _safe_url(url)
        self._ids = itertools.count(1)

    def encode_call(self, method: str, params: Params) -> tuple[int, bytes]:
        request_id = next(self._ids)
        return request_id, orjson.dumps(
            _request_object(request_id, method, params), default=_default
        )

    def encode_batch(self, calls: Sequence[tuple[str, Params]]) -> tuple[list[int], bytes]:
        ids = [next(self._ids) for _ in calls]
        requests = [_request_object(i, m, p) for i, (m, p) in zip(ids, calls, strict=True)]
        return ids, orjson.dumps(requests, default=_default)

    def transport_error(self, exc: httpx.HTTPError) -> JsonRpcTransportError:
        return JsonRpcTransportError(
            f"JSON-RPC request to {self.safe_url} failed: {type(exc).__name__}: {exc}",
            url=self.safe_url,
        )

    def protocol_error(self, problem: str, status: int | None) -> JsonRpcProtocolError:
        message = f"invalid JSON-RPC reply from {self.safe_url} (HTTP {status}): {problem}"
        return JsonRpcProtocolError(message, url=self.safe_url, status_code=status)

    def decode(self, response: httpx.Response) -> Any:
        """The decoded JSON body; JsonRpcProtocolError if it is empty or not JSON."""
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise self.protocol_error("body is not JSON", response.status_code) from exc

    def outcome(self, reply: Any, status: int, method: str | None) -> Any:
        """The result of one response object, or the JsonRpcCallError it carries (not raised)."""
        if not isinstance(reply, dict):
            raise self.protocol_error("response is not an object", status)
        error = reply.get("error")
        if error is not None:
            if not isinstance(error, dict) or not isinstance(error.get("code"), int):
                raise self.protocol_error("malformed error object", status)
            message = str(error.get("message", ""))
            return JsonRpcCallError(error["code"], message, error.get("data"), method=method)
        if "result" not in reply:
            raise self.protocol_error("response has neither result nor error", status)
        return reply["result"]

    def single(self, response: httpx.Response, request_id: int, method: str) -> Any:
        """The result of a single call; raises JsonRpcCallError for an error reply."""
        status = response.status_code
        reply = self.decode(response)
        outcome = self.outcome(reply, status, method)
        if isinstance(outcome, JsonRpcCallError):
            if reply.get("id") not in (request_id, None):
                raise self.protocol_error("response id does not match the request", status)
            raise outcome
        if reply.get("id") != request_id:
            raise self.protocol_error("response id does not match the request", status)
        return outcome

    def batch(
        self, response: httpx.Response, ids: list[int], calls: Sequence[tuple[str, Params]]
    ) -> list[Any]:
        """Results (or JsonRpcCallError objects) in request order, matched by id."""
        status = response.status_code
        replies = self.decode(response)
        if isinstance(replies, dict):  # the whole batch was refused (parse error, too large)
            outcome = self.outcome(replies, status, None)
            if isinstance(outcome, JsonRpcCallError):
                raise outcome
            raise self.protocol_error("a batch got a single result", status)
        if not isinstance(replies, list):
            raise self.protocol_error("batch response is not an array", status)
        by_id = {r.get("id"): r for r in replies if isinstance(r, dict)}
        results = []
        for request_id, (method, _) in zip(ids, calls, strict=True):
            if request_id not in by_id:
                raise self.protocol_error(f"no response for request id {request_id}", status)
            results.append(self.outcome(by_id[request_id], status, method))
        return results


class JsonRpcClient:
    """Blocking JSON-RPC client; one keep-alive ``httpx.Client`` per instance.

    Args:
        url: the endpoint, e.g. ``"http://127.0.0.1:8088/v2"``.
        timeout_s: connect/read/write/pool timeout in seconds.
        transport: optional httpx transport (``httpx.MockTransport`` in tests).
    """

    def __init__(
        self, url: str, *, timeout_s: float = 30.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        self._exchange = _Exchange(url)
        self._http = httpx.Client(timeout=timeout_s, transport=transport, headers=_HEADERS)

    @property
    def url(self) -> str:
        return self._exchange.url

    def call(self, method: str, params: Params = None) -> Any:
        """Call ``method`` with named ``params`` (omitted when None) and return ``result``.

        Raises:
            JsonRpcCallError: the server returned an error object.
            JsonRpcTransportError: the HTTP exchange failed (JsonRpcProtocolError: bad reply).
        """
        request_id, body = self._exchange.encode_call(method, params)
        return self._exchange.single(self._post(body), request_id, method)

    def batch(self, calls: Sequence[tuple[str, Params]]) -> list[Any]:
        """Send ``[(method, params), ...]`` in one HTTP request.

        Returns:
            One item per call, in call order: the result, or a JsonRpcCallError (not raised).

        Raises:
            JsonRpcCallError: the server refused the whole batch with one error object.
            JsonRpcTransportError: the HTTP exchange failed (JsonRpcProtocolError: bad reply).
        """
        if not calls:
            return []
        ids, body = self._exchange.encode_batch(calls)
        return self._exchange.batch(self._post(body), ids, calls)

    def _post(self, body: bytes) -> httpx.Response:
        try:
            return self._http.post(self._exchange.url, content=body)
        except httpx.HTTPError as exc:
            raise self._exchange.transport_error(exc) from exc

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


class AsyncJsonRpcClient:
    """The async twin of :class:`JsonRpcClient` (``httpx.AsyncClient``); same arguments.

    ``transport`` is an ``httpx.AsyncBaseTransport`` (e.g. ``httpx.ASGITransport(app)``).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._exchange = _Exchange(url)
        self._http = httpx.AsyncClient(timeout=timeout_s, transport=transport, headers=_HEADERS)

    @property
    def url(self) -> str:
        return self._exchange.url

    async def call(self, method: str, params: Params = None) -> Any:
        """See :meth:`JsonRpcClient.call`."""
        request_id, body = self._exchange.encode_call(method, params)
        return self._exchange.single(await self._post(body), request_id, method)

    async def batch(self, calls: Sequence[tuple[str, Params]]) -> list[Any]:
        """See :meth:`JsonRpcClient.batch`."""
        if not calls:
            return []
        ids, body = self._exchange.encode_batch(calls)
        return self._exchange.batch(await self._post(body), ids, calls)

    async def _post(self, body: bytes) -> httpx.Response:
        try:
            return await self._http.post(self._exchange.url, content=body)
        except httpx.HTTPError as exc:
            raise self._exchange.transport_error(exc) from exc

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
