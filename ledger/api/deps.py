"""Request plumbing: authentication, JSON bodies, body size limit, path identifiers.

Authentication (spec "Authentication"): the key is the ``user-key`` header, or the
``app_key`` header of an ``app_id`` + ``app_key`` pair (``app_id`` must be present and
non-empty but is not checked further). No key: 403 Authentication Parameters Missing;
unknown or revoked key: 403 Authentication Failed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import orjson
from fastapi import Depends, Request
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ledger.api.accounts import verify_key
from ledger.api.encoding import is_hash_hex
from ledger.api.errors import (
    AuthenticationFailed,
    AuthenticationMissing,
    BadRequest,
    PageNotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from ledger.api.models import Account
from ledger.api.services import Services

__all__ = ["BodySizeLimit", "current_account", "json_body", "path_hash", "services"]

Model = TypeVar("Model", bound=BaseModel)


def services(request: Request) -> Services:
    """The process's ``Services`` (set by ``create_app``)."""
    return request.app.state.services


def _presented_key(request: Request) -> str | None:
    key = request.headers.get("user-key")
    if key:
        return key
    app_id, app_key = request.headers.get("app_id"), request.headers.get("app_key")
    return app_key if app_id and app_key else None


def current_account(request: Request) -> Account:
    """The account whose key the request carries (dependency of every route)."""
    key = _presented_key(request)
    if key is None:
        raise AuthenticationMissing("Send the API key in the user-key header")
    with services(request).db.read() as session:
        account = verify_key(session, key)
    if account is None:
        raise AuthenticationFailed("The key sent is not valid")
    return account


def json_body(model: type[Model]) -> Callable[..., Awaitable[Model]]:
    """Dependency factory: the request body parsed as ``model``.

    Raises (in this order): 415 when the content type is not ``application/json``; 413 when
    the body is larger than ``max_body_bytes``; 400 for invalid JSON, a body that is not an
    object, or fields of the wrong type.
    """

    async def parse(
        request: Request, _account: Annotated[Account, Depends(current_account)]
    ) -> Model:
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise UnsupportedMediaType("Send the body as application/json")
        raw = await request.body()
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"The body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise BadRequest("The body must be a JSON object")
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise BadRequest(_validation_message(exc)) from exc

    return parse


def _validation_message(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    return "; ".join(parts) or "invalid body"


def path_hash(value: str) -> str:
    """A chain ID or entry hash from the path, lowercased; 404 Page Not Found if not 64 hex."""
    if not is_hash_hex(value):
        raise PageNotFound(f"{value[:80]!r} is not a known identifier")
    return value.lower()


class BodySizeLimit:
    """ASGI middleware: bodies above ``max_bytes`` get 413 (declared or streamed size)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            message = f"The body may be at most {self.max_bytes} bytes"
            await PayloadTooLarge(message).to_response()(scope, receive, send)
            return
        await self.app(scope, self._limited(receive), send)

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise PayloadTooLarge(f"The body may be at most {self.max_bytes} bytes")
            return message

        return limited_receive
