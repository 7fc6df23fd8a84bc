"""ASGI fast path of the write operations (2, 6 and the bulk write), the API's hot path.

``POST /v1/chains``, ``POST /v1/chains/{chain_id}/entries`` and
``POST /v1/chains/{chain_id}/entries/bulk`` (``ledger.api.http.bulk``) are answered here, before
FastAPI's exception middleware, routing and dependency solving, which cost more CPU per
request than the write itself (measured: about 60 % of the handler time). Every step is
the code the FastAPI routes use (``deps.authenticate``, ``deps.parse_json``,
``writes.create_chain``/``create_entry``, ``bulk.create_entries``, the ``errors`` bodies),
in the same order, so
the answers are identical; the routes stay registered for the OpenAPI document and for
any request this middleware passes on. Any other request goes to the app unchanged.

Order of checks, as in the routes: a declared body size over the limit (413, by the
``BodySizeLimit`` middleware outside this one), key (403), rate limit (429), content type
(415), body size as received (413), JSON and fields (400), then the write itself
(400/422/403/503, or 202).
"""

from __future__ import annotations

import logging
import re
from typing import Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from ledger.api.errors import ApiError, InternalServerError, LedgerApiError, PayloadTooLarge
from ledger.api.http import bulk, writes
from ledger.api.http.deps import authenticate, check_json_media_type, parse_json, presented_key
from ledger.api.http.schemas import ChainCreate, EntryCreate
from ledger.api.services import Services
from ledger.observability.asgi import ROUTE_KEY

__all__ = ["WriteFastPath"]

_log = logging.getLogger(__name__)
_ENTRIES_PATH = re.compile(r"/v1/chains/([^/]+)/entries")
_JSON_HEADERS = [(b"content-type", b"application/json")]


class _Disconnected(LedgerApiError):
    """The client went away before sending the whole body."""


class WriteFastPath:
    """ASGI middleware answering operations 2 and 6 directly (module docstring).

    Args:
        app: the rest of the application.
        services: the process's services (writer, key cache, settings).
    """

    def __init__(self, app: ASGIApp, *, services: Services) -> None:
        self.app = app
        self._svc = services
        self._max_body = services.settings.max_body_bytes
        self._max_bulk_body = services.settings.bulk_max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        many = False
        if path == "/v1/chains":
            chain_id = None
            scope[ROUTE_KEY] = "/v1/chains"  # the route template, for the request metrics
        else:
            match = _ENTRIES_PATH.fullmatch(path)
            if match is None:
                match, many = bulk.BULK_PATH.fullmatch(path), True
            if match is None:
                await self.app(scope, receive, send)
                return
            chain_id = match.group(1)
            scope[ROUTE_KEY] = "/v1/chains/{chain_id}/entries" + (bulk.BULK_SUFFIX if many else "")
        await self._answer(scope, receive, send, chain_id, many=many)

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, chain_id: str | None, *, many: bool
    ) -> None:
        try:
            body = await self._write(scope, receive, chain_id, many=many)
            status, extra = 202, []
        except _Disconnected:
            return
        except ApiError as error:
            status, body, extra = error.status_code, error.body(), error.extra_headers()
        except Exception:  # a real fault: logged, answered 500 like the app's handler
            _log.exception("unhandled error in the publishing API (write fast path)")
            fault = InternalServerError("The request could not be handled")
            status, body, extra = fault.status_code, fault.body(), []
        payload = orjson.dumps(body)
        headers = [
            *_JSON_HEADERS,
            (b"content-length", str(len(payload)).encode()),
            *((k.encode(), v.encode()) for k, v in extra),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _write(
        self, scope: Scope, receive: Receive, chain_id: str | None, *, many: bool
    ) -> dict[str, Any]:
        headers = _headers(scope)
        client = scope.get("client")
        account = await authenticate(
            self._svc, presented_key(headers), client=client[0] if client else None
        )
        check_json_media_type(headers.get("content-type", ""))
        raw = await self._body(receive, self._max_bulk_body if many else self._max_body)
        if many and chain_id is not None:  # the bulk path always names its chain
            return await bulk.create_entries(self._svc, account, chain_id, raw)
        if chain_id is None:
            return await writes.create_chain(self._svc, account, parse_json(raw, ChainCreate))
        return await writes.create_entry(self._svc, account, chain_id, parse_json(raw, EntryCreate))

    async def _body(self, receive: Receive, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"The body may be at most {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers by lowercase name (the first of a repeated header wins, as Starlette)."""
    return {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in reversed(scope["headers"])
    }
