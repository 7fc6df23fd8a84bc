"""The JSON-RPC 2.0 HTTP endpoint (Starlette) shared by the ledger node and the wallet.

Wire rules (docs/jsonrpc.md §2 (Wire format), §7 (Errors), docs/formats.md §9.1/§9.2):

1. ``POST`` or ``GET`` on ``path`` (``/v2``); a GET may carry the request in its body, as factom
   clients do. Any content type is accepted (``application/json``, ``text/plain``, none, ...).
2. Bodies over ``max_body_bytes`` are refused with HTTP 413 and an Invalid Request (-32600) error,
   after reading at most ``max_body_bytes + one chunk``.
3. Invalid UTF-8, invalid JSON or JSON nested too deeply -> Parse error (-32700), id null.
4. A single request gets one response object: HTTP 200 on success, ``error_http_status`` on error
   (400 for the node and the wallet, as factomd and factom-walletd answer).
5. A batch (non-empty array) gets an array of responses in request order, HTTP 200; an empty array
   is one Invalid Request error. Notifications (no ``id`` member) get no response entry; when
   nothing is left to answer the reply is HTTP 204 with an empty body. Items run one after the
   other by default; with ``concurrent_batches=True`` they are all started at once, in request
   order (see :class:`JsonRpcEndpoint`), and the responses still keep request order.
6. The ``id`` of a well-formed request is echoed (int, str or null); when the envelope itself is
   invalid, the id is echoed if it is a valid id, otherwise null.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ledger.jsonrpc.auth import BasicAuthGate, BasicAuthMiddleware
from ledger.jsonrpc.credentials import BasicCredentials
from ledger.jsonrpc.errors import InternalError, InvalidRequest, JsonRpcError, ParseError
from ledger.jsonrpc.registry import MethodRegistry
from ledger.jsonrpc.wire import encode_json, error_response, result_response

__all__ = ["BatchScope", "JsonRpcEndpoint", "create_jsonrpc_app", "run_stepped"]

BatchScope = Callable[[list[Any]], AbstractAsyncContextManager[object]]
"""``scope(items)`` -> async context manager entered around the dispatch of one batch's items
(the decoded request objects, as sent); e.g. the node checks every commit signature of the
batch in one worker-thread call on entry and drops unused results on exit."""

logger = logging.getLogger(__name__)

_MEDIA_TYPE = "application/json"
_UTF8_BOM = b"\xef\xbb\xbf"
_NO_ID = object()  # marks a notification (no "id" member)
_ID_TYPES = (int, str, float)


def _valid_id(request_id: Any) -> bool:
    return request_id is None or (
        isinstance(request_id, _ID_TYPES) and not isinstance(request_id, bool)
    )


def _encode_response(response: dict[str, Any]) -> bytes:
    """Encode one response object; an unencodable result or error data becomes Internal error."""
    try:
        return encode_json(response)
    except (TypeError, orjson.JSONEncodeError, RecursionError):
        logger.exception("JSON-RPC response for id %r could not be encoded", response.get("id"))
        return encode_json(error_response(response.get("id"), InternalError()))


class JsonRpcEndpoint:
    """Parses envelopes, dispatches to a :class:`MethodRegistry` and renders responses.

    Usable without HTTP: :meth:`handle_body` maps request bytes to ``(status, body | None)``.

    Args:
        registry: the methods to serve.
        error_http_status: HTTP status of a single error response (400 for node and wallet).
        max_body_bytes: largest accepted request body in bytes; larger -> HTTP 413.
        concurrent_batches: run the items of a batch concurrently instead of one after the
            other. Each item is started, in request order, before the first one is awaited,
            so every handler runs up to its first suspension in request order: a handler
            that applies its effect before suspending (the node's write handlers apply a
            message in memory, then wait for the journal) keeps a commit ahead of the
            reveal that follows it in the same batch, while the waits overlap (one group
            commit for the whole batch instead of one per item). Handlers that suspend
            before acting (sync handlers run in a worker thread, ``blocking=True``) get no
            ordering guarantee in this mode. Off by default (the JSON-RPC 2.0 batch
            semantics allow either).
        batch_scope: optional :data:`BatchScope` entered around the dispatch of each batch.
    """

    def __init__(
        self,
        registry: MethodRegistry,
        *,
        error_http_status: int = 400,
        max_body_bytes: int = 1_048_576,
        concurrent_batches: bool = False,
        batch_scope: BatchScope | None = None,
    ) -> None:
        self.registry = registry
        self.error_http_status = error_http_status
        self.max_body_bytes = max_body_bytes
        self.concurrent_batches = concurrent_batches
        self.batch_scope = batch_scope

    async def handle_http(self, request: Request) -> Response:
        """Starlette endpoint: read the body (bounded), handle it, build the HTTP response."""
        body = await self._read_body(request)
        if body is None:
            data = f"request body exceeds {self.max_body_bytes} bytes"
            error = _encode_response(error_response(None, InvalidRequest(data)))
            return Response(error, status_code=413, media_type=_MEDIA_TYPE)
        status, content = await self.handle_body(body)
        if content is None:
            return Response(status_code=204)
        return Response(content, status_code=status, media_type=_MEDIA_TYPE)

    async def _read_body(self, request: Request) -> bytes | None:
        """The whole body, or None as soon as it is known to exceed ``max_body_bytes``."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        chunks = bytearray()
        async for chunk in request.stream():
            chunks += chunk
            if len(chunks) > self.max_body_bytes:
                return None
        return bytes(chunks)

    async def handle_body(self, body: bytes) -> tuple[int, bytes | None]:
        """Handle one HTTP body; returns ``(http_status, response bytes or None for no content)``."""
        try:
            payload = orjson.loads(body.removeprefix(_UTF8_BOM))
        except (orjson.JSONDecodeError, RecursionError):
            return self.error_http_status, _encode_response(error_response(None, ParseError()))
        if isinstance(payload, list):
            return await self._handle_batch(payload)
        response = await self.handle_request(payload)
        if response is None:
            return 204, None
        status = self.error_http_status if "error" in response else 200
        return status, _encode_response(response)

    async def _handle_batch(self, payload: list[Any]) -> tuple[int, bytes | None]:
        if not payload:
            error = error_response(None, InvalidRequest("empty batch"))
            return self.error_http_status, _encode_response(error)
        responses = await self.handle_batch(payload)
        parts = [_encode_response(r) for r in responses if r is not None]
        if not parts:
            return 204, None
        return 200, b"[" + b",".join(parts) + b"]"

    async def handle_batch(self, payload: list[Any]) -> list[dict[str, Any] | None]:
        """Answer the decoded request objects of a non-empty batch: one response object
        per item in request order (None for a notification), dispatched as a batch body
        is (``batch_scope``, ``concurrent_batches``), without encoding them.

        In-process callers (``ledger.jsonrpc.local``) use it to skip HTTP and JSON text;
        it must run on the event loop that serves this endpoint.
        """
        scope = self.batch_scope(payload) if self.batch_scope is not None else nullcontext()
        async with scope:
            if self.concurrent_batches and not self._runs_through(payload):
                if self._all_stepped(payload):
                    return await run_stepped([self.handle_request(item) for item in payload])
                # create_task starts nothing by itself; gather runs the tasks in creation
                # (= request) order up to their first suspension: see the class docstring.
                # (The loop's own create_task: ensure_future's checks cost a tenth of it.)
                create = asyncio.get_running_loop().create_task
                tasks = [create(self.handle_request(item)) for item in payload]
                return list(await asyncio.gather(*tasks))
            return [await self.handle_request(item) for item in payload]

    def _all_stepped(self, payload: list[Any]) -> bool:
        """Whether every item is a well-formed call of a ``stepped`` method or of a sync
        handler run on the loop: then ``run_stepped`` runs the batch without a task per
        item (a task, its first step and its wake-up were ~8 % of the bundled stack's
        CPU on batches of hundreds of commits and reveals)."""
        for item in payload:
            method = item.get("method") if isinstance(item, dict) else None
            entry = self.registry.get(method) if isinstance(method, str) else None
            if entry is None or not (entry.stepped or not (entry.is_async or entry.blocking)):
                return False
        return True

    def _runs_through(self, payload: list[Any]) -> bool:
        """Whether every item calls a sync handler run on the event loop (``blocking=False``).

        Such a handler never suspends: started as a task it runs to its end in its turn, so
        the concurrent mode would answer the batch exactly as one after the other does, at
        the cost of a task per item (~3 % of the bundled stack's CPU, serving batches of
        hundreds of ``receipt`` calls).
        """
        for item in payload:
            method = item.get("method") if isinstance(item, dict) else None
            entry = self.registry.get(method) if isinstance(method, str) else None
            if entry is None or entry.is_async or entry.blocking:
                return False
        return True

    async def handle_request(self, request: Any) -> dict[str, Any] | None:
        """Handle one decoded request object; None for a (valid) notification."""
        if not isinstance(request, dict):
            return error_response(None, InvalidRequest("request must be a JSON object"))
        request_id = request.get("id", _NO_ID)
        problem = _envelope_problem(request, request_id)
        if problem is not None:
            echoed = request_id if request_id is not _NO_ID and _valid_id(request_id) else None
            return error_response(echoed, InvalidRequest(problem))
        try:
            result = await self.registry.dispatch(request["method"], request.get("params"))
        except JsonRpcError as error:
            if request_id is _NO_ID:
                return None
            return error_response(request_id, error)
        if request_id is _NO_ID:
            return None
        return result_response(request_id, result)


async def run_stepped(coroutines: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """Run ``coroutines`` concurrently inside the calling task; their results in order.

    Each is started in list order and runs up to its first suspension, as the tasks of
    ``asyncio.gather`` would; then, once everything the suspended ones wait for is done,
    each is resumed in list order, and so on until all have returned. Only for
    coroutines that await nothing but asyncio futures of the running loop (``stepped``
    methods): no task of their own, so no cancel scope or context of their own.

    Raises: the first exception a coroutine raises (the others are closed); on
    cancellation, the unfinished coroutines are closed.
    """
    results: list[Any] = [None] * len(coroutines)
    waiting: list[tuple[int, Any]] = [(i, None) for i in range(len(coroutines))]
    started = False
    try:
        while waiting:
            if started:
                await _all_done([awaited for _, awaited in waiting])
            started = True
            suspended: list[tuple[int, Any]] = []
            for index, _ in waiting:
                try:
                    awaited = coroutines[index].send(None)
                except StopIteration as stop:
                    results[index] = stop.value
                    continue
                if awaited is not None:  # a future: as a Task would, take it over
                    awaited._asyncio_future_blocking = False
                suspended.append((index, awaited))
            waiting = suspended
    except BaseException:
        for coroutine in coroutines:
            coroutine.close()
        raise
    return results


async def _all_done(awaited: list[Any]) -> None:
    """Return once every future of ``awaited`` is done (``None``: a bare yield, one loop
    turn), without taking their results."""
    pending = [f for f in awaited if f is not None and not f.done()]
    if pending:
        await asyncio.wait(pending)
    else:
        await asyncio.sleep(0)


def _envelope_problem(request: dict[str, Any], request_id: Any) -> str | None:
    """Why ``request`` is not a JSON-RPC 2.0 request object, or None if it is one."""
    if request.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(request.get("method"), str):
        return "method must be a string"
    if request_id is not _NO_ID and not _valid_id(request_id):
        return "id must be a number, a string or null"
    params = request.get("params")
    if params is not None and not isinstance(params, dict | list):
        return "params must be an object or an array"
    return None


def create_jsonrpc_app(
    registry: MethodRegistry,
    *,
    path: str = "/v2",
    error_http_status: int = 400,
    max_body_bytes: int = 1_048_576,
    concurrent_batches: bool = False,
    batch_scope: BatchScope | None = None,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[Any]] | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    credentials: BasicCredentials | None = None,
    realm: str = "JSON-RPC",
) -> Starlette:
    """Build the Starlette app serving ``registry`` at ``path`` (GET and POST).

    Args:
        registry: the methods to serve.
        path: the JSON-RPC route (``/v2`` for node and wallet).
        error_http_status: HTTP status of a single error response (400 for node and wallet).
        max_body_bytes: largest accepted request body in bytes; larger -> HTTP 413.
        concurrent_batches: run a batch's items concurrently (see :class:`JsonRpcEndpoint`).
        batch_scope: context entered around each batch (see :data:`BatchScope`).
        lifespan: optional Starlette lifespan context (open/close stores, start block timers).
        extra_routes: further routes served by the same app (health checks, ...).
        credentials: when given, ``path`` answers only requests carrying them (HTTP basic
            authentication, ``ledger.jsonrpc.auth``: 401 otherwise); ``extra_routes`` stay
            open.
        realm: the ``WWW-Authenticate`` realm of that 401.

    The endpoint object is reachable as ``app.state.jsonrpc``.
    """
    endpoint = JsonRpcEndpoint(
        registry,
        error_http_status=error_http_status,
        max_body_bytes=max_body_bytes,
        concurrent_batches=concurrent_batches,
        batch_scope=batch_scope,
    )
    routes = [Route(path, endpoint.handle_http, methods=["GET", "POST"]), *extra_routes]
    middleware = []
    if credentials is not None:
        gate = BasicAuthGate(credentials, realm=realm, paths=(path,))
        middleware.append(Middleware(BasicAuthMiddleware, gate=gate))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.jsonrpc = endpoint
    return app
