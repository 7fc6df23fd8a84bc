"""Request plumbing: authentication, JSON bodies, body size limit, path identifiers.

Authentication (docs/rest-api.md §2): the key is the ``user-key`` header, or the
``app_key`` header of an ``app_id`` + ``app_key`` pair (``app_id`` must be present and
non-empty but is not checked further). No key: 403 Authentication Parameters Missing;
unknown or revoked key: 403 Authentication Failed. Keys are resolved through the
``auth.KeyCache`` (a database look-up at most once per ``auth_cache_ttl_s`` per key), then
the account's token bucket is charged (``auth.RateLimiter``): 429 Too Many Requests.

Every dependency here is ``async`` so that FastAPI runs it on the event loop, not in the
thread pool; only a cache miss goes to a worker thread for its database look-up.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import Depends, Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ledger.api.auth import Principal
from ledger.api.encoding import is_hash_hex
from ledger.api.errors import (
    AuthenticationFailed,
    AuthenticationMissing,
    BadRequest,
    PageNotFound,
    PayloadTooLarge,
    TooManyRequests,
    UnsupportedMediaType,
)
from ledger.api.services import Services

__all__ = [
    "BodySizeLimit",
    "authenticate",
    "check_json_media_type",
    "current_account",
    "json_body",
    "parse_json",
    "path_hash",
    "presented_key",
    "read_json",
    "services",
    "validate",
]

Model = TypeVar("Model", bound=BaseModel)


async def services(request: Request) -> Services:
    """The process's ``Services`` (set by ``create_app``)."""
    return request.app.state.services


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The API key of a request: ``user-key``, else ``app_key`` of an ``app_id`` pair."""
    key = headers.get("user-key")
    if key:
        return key
    app_id, app_key = headers.get("app_id"), headers.get("app_key")
    return app_key if app_id and app_key else None


async def current_account(request: Request) -> Principal:
    """The account whose key the request carries (dependency of every route).

    Raises:
        AuthenticationMissing: no key (403).
        AuthenticationFailed: unknown or revoked key (403).
        TooManyRequests: the account's rate limit is exhausted, or the client address sent
            too many unknown keys (429).
    """
    client = request.client.host if request.client else None
    return await authenticate(
        request.app.state.services, presented_key(request.headers), client=client
    )


async def authenticate(svc: Services, key: str | None, *, client: str | None) -> Principal:
    """The live account of ``key``, its rate limit charged (errors as ``current_account``).

    ``client`` is the caller's address: its unknown keys are throttled
    (``Services.auth_failures``: 429 with ``Retry-After`` once over the limit, whatever
    key it then sends).
    """
    if key is None:
        raise AuthenticationMissing("Send the API key in the user-key header")
    account = svc.keys.cached(key)
    if account is None:
        wait_s = svc.auth_failures.retry_after(client)
        if wait_s is not None:
            raise TooManyRequests(
                "Too many requests with unknown keys from this address", retry_after_s=wait_s
            )
        account = await run_in_threadpool(svc.keys.lookup, key)
    if account is None:
        svc.auth_failures.failed(client)
        raise AuthenticationFailed("The key sent is not valid")
    wait_s = svc.limiter.take(account.id)
    if wait_s is not None:
        raise TooManyRequests(
            f"Rate limit of {svc.settings.rate_limit_per_s:g} requests per second exceeded",
            retry_after_s=wait_s,
        )
    return account


def json_body(model: type[Model]) -> Callable[..., Awaitable[Model]]:
    """Dependency factory: the request body parsed as ``model``.

    Raises (in this order): 415 when the content type is not ``application/json``; 413 when
    the body is larger than ``max_body_bytes``; 400 for invalid JSON, a body that is not an
    object, or fields of the wrong type.
    """

    async def parse(
        request: Request, _account: Annotated[Principal, Depends(current_account)]
    ) -> Model:
        return await read_json(request, model)

    return parse


async def read_json(request: Request, model: type[Model]) -> Model:
    """The request body parsed as ``model`` (errors as for ``json_body``)."""
    check_json_media_type(request.headers.get("content-type", ""))
    return parse_json(await request.body(), model)


def check_json_media_type(content_type: str) -> None:
    """Raise ``UnsupportedMediaType`` (415) unless the media type is ``application/json``."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise UnsupportedMediaType("Send the body as application/json")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` parsed as a JSON object; ``BadRequest`` (400) if it is not valid JSON or not
    an object."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object")
    return data


def parse_json(raw: bytes, model: type[Model]) -> Model:
    """``raw`` parsed as a JSON object and validated as ``model``; ``BadRequest`` (400) if not."""
    return validate(parse_json_object(raw), model)


def validate(data: dict[str, object], model: type[Model], *, where: str = "") -> Model:
    """A decoded JSON object validated as ``model``; ``BadRequest`` (400) naming each wrong
    field, after ``where`` (``"entries[3]."``: the item of a bulk write) when given."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(_validation_message(exc, where)) from exc


def _validation_message(exc: ValidationError, where: str = "") -> str:
    parts = [f"{where}{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    return "; ".join(parts) or "invalid body"


def path_hash(value: str) -> str:
    """A chain ID or entry hash from the path, lowercased; 404 Page Not Found if not 64 hex."""
    if not is_hash_hex(value):
        raise PageNotFound(f"{value[:80]!r} is not a known identifier")
    return value.lower()


class BodySizeLimit:
    """ASGI middleware: bodies above ``max_bytes`` get 413 (declared or streamed size).

    ``path_limits``: (path pattern, limit) pairs; a path that fully matches a pattern gets
    that limit instead (the bulk write's larger bodies).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        path_limits: Sequence[tuple[re.Pattern[str], int]] = (),
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.path_limits = tuple(path_limits)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit_for(scope.get("path", ""))
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            message = f"The body may be at most {limit} bytes"
            await PayloadTooLarge(message).to_response()(scope, receive, send)
            return
        await self.app(scope, self._limited(receive, limit), send)

    def _limit_for(self, path: str) -> int:
        for pattern, limit in self.path_limits:
            if pattern.fullmatch(path):
                return limit
        return self.max_bytes

    @staticmethod
    def _limited(receive: Receive, limit: int) -> Receive:
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLarge(f"The body may be at most {limit} bytes")
            return message

        return limited_receive
