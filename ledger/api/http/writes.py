"""Operations 2 and 6 (create chain, create entry) from a parsed body to the 202 answer.

Shared by the FastAPI routes (``ledger.api.http.routes``) and the ASGI fast path
(``ledger.api.http.fastpath``), so both answer exactly alike. The request is validated and
the entry built and hashed here, on the event loop; only the database work goes to the
group-commit writer, and the answer is given once the write is committed.

A chain created with no external IDs (``external_ids`` absent, ``null`` or ``[]``) gets one
generated external ID, a random UUID as text (36 ASCII bytes, ``GENERATED_ID_BYTES`` with
its length prefix counted in the payload): a chain ID is the hash of its first entry's
external IDs, so without it every such chain would have the same ID and only the first
one could ever be created. Each such request therefore makes a new chain (posting it again
is not idempotent); the answer's ``chain_id`` names it, and reads show the generated ID.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.exc import OperationalError

from ledger.api import store
from ledger.api.auth import Principal
from ledger.api.encoding import EncodingError, from_base64, from_hash_hex
from ledger.api.errors import (
    ApiError,
    AuthenticationFailed,
    BadRequest,
    InsufficientStorage,
    TemporarilyUnavailable,
    Unprocessable,
)
from ledger.api.http.schemas import ChainCreate, EntryCreate
from ledger.api.outbox.callback_targets import CallbackRefused, check_callback_url
from ledger.api.outbox.intake import (
    AccountRevoked,
    ChainExists,
    ChainNotFound,
    WriteOutcome,
    WriteRequest,
)
from ledger.api.outbox.writer import WriterClosed
from ledger.api.services import Services
from ledger.core.entry import MAX_ENTRY_PAYLOAD_BYTES, Entry
from ledger.core.errors import LimitError

__all__ = [
    "GENERATED_ID_BYTES",
    "create_chain",
    "create_entry",
    "decode_all",
    "decode_content",
    "entry_accepted",
    "entry_request",
    "generated_chain_id_tag",
    "write_error",
]

#: Payload bytes a generated external ID takes: 36 ASCII bytes plus its 2-byte length.
GENERATED_ID_BYTES = 38


async def create_chain(svc: Services, account: Principal, body: ChainCreate) -> dict[str, Any]:
    """Operation 2: the 202 body ``{"chain_id", "entry_hash", "stage"}`` once stored.

    No external IDs: one is generated (module docstring).

    Raises:
        BadRequest: invalid Base64.
        Unprocessable: payload above 10240 bytes, callback refused, chain ID taken.
        AuthenticationFailed: the account was revoked. TemporarilyUnavailable: stopping.
    """
    ext_ids = decode_all(body.external_ids, "external_ids") or [generated_chain_id_tag()]
    content = decode_content(body.content)
    callback = _callback(body, svc)
    entry = _build_entry(lambda: Entry.first_entry(ext_ids, content))
    done = await _submit(svc, store.write_request("chain", account, entry, callback))
    return {"chain_id": done.chain_id, "entry_hash": done.entry_hash, "stage": done.stage}


async def create_entry(
    svc: Services, account: Principal, chain_id: str, body: EntryCreate
) -> dict[str, Any]:
    """Operation 6: the 202 body ``{"entry_hash", "chain_id", "stage"}`` once stored.

    Raises: as ``create_chain``; Unprocessable also when the chain is unknown or not yours.
    """
    done = await _submit(svc, entry_request(svc, account, chain_id, body))
    return entry_accepted(done)


def entry_request(
    svc: Services, account: Principal, chain_id: str, body: EntryCreate
) -> WriteRequest:
    """Operation 6's checks and its prepared write (also each item of a bulk write).

    Raises:
        BadRequest: invalid Base64.
        Unprocessable: payload above 10240 bytes, callback refused, chain ID not 64 hex.
    """
    ext_ids, content = decode_all(body.external_ids, "external_ids"), decode_content(body.content)
    callback = _callback(body, svc)
    chain_bytes = from_hash_hex(chain_id)
    if chain_bytes is None:
        raise Unprocessable("Chain does not exist")
    entry = _build_entry(lambda: Entry(chain_bytes, tuple(ext_ids), content))
    return store.write_request("entry", account, entry, callback)


def entry_accepted(done: WriteOutcome) -> dict[str, Any]:
    """The 202 body of operation 6: ``{"entry_hash", "chain_id", "stage"}``."""
    return {"entry_hash": done.entry_hash, "chain_id": done.chain_id, "stage": done.stage}


def generated_chain_id_tag() -> bytes:
    """The external ID given to a chain created without any: a random UUID as ASCII text."""
    return str(uuid.uuid4()).encode("ascii")


def decode_all(values: Sequence[str] | None, field: str) -> list[bytes]:
    """Base64 strings -> bytes; ``BadRequest`` naming the first invalid item."""
    try:
        return [from_base64(v, field=f"{field}[{i}]") for i, v in enumerate(values or [])]
    except EncodingError as exc:
        raise BadRequest(str(exc)) from exc


def decode_content(value: str | None) -> bytes:
    """The Base64 ``content`` -> bytes (absent: empty); ``BadRequest`` if invalid."""
    try:
        return from_base64(value or "", field="content")
    except EncodingError as exc:
        raise BadRequest(str(exc)) from exc


def _callback(body: EntryCreate, svc: Services) -> store.Callback | None:
    if body.callback_url is None:
        return None
    try:
        url = check_callback_url(body.callback_url, svc.policy)
    except CallbackRefused as exc:
        raise Unprocessable(str(exc)) from exc
    stages = None if body.callback_stages is None else tuple(body.callback_stages)
    return store.Callback(url, stages)


def _build_entry(make: Callable[[], Entry]) -> Entry:
    try:
        return make()
    except LimitError as exc:
        raise Unprocessable(
            f"External IDs and content exceed the {MAX_ENTRY_PAYLOAD_BYTES}-byte entry payload: {exc}"
        ) from exc


async def _submit(svc: Services, request: WriteRequest) -> WriteOutcome:
    """Hand ``request`` to the group-commit writer; map refusals to REST errors."""
    try:
        return await svc.writer.submit(request)
    except Exception as exc:
        error = write_error(exc)
        if error is None:
            raise
        raise error from exc


def write_error(exc: Exception) -> ApiError | None:
    """The REST error of a write the writer did not do; ``None`` for a real fault.

    ``WriteRefused`` kinds are 422 (chain taken or unknown) or 403 (account revoked); a
    stopped writer is 503; a full disk 507.
    """
    if isinstance(exc, ChainExists):
        return Unprocessable(f"Chain {exc.chain_id} already exists")
    if isinstance(exc, ChainNotFound):
        return Unprocessable(f"Chain {exc.chain_id} does not exist")
    if isinstance(exc, AccountRevoked):
        return AuthenticationFailed("The key sent is not valid")
    if isinstance(exc, WriterClosed):
        return TemporarilyUnavailable("The service is stopping; send the write again later")
    if isinstance(exc, OperationalError) and _disk_full(exc):
        return InsufficientStorage(
            "The service cannot store writes now (its disk is full); send the write again later"
        )
    return None


def _disk_full(exc: OperationalError) -> bool:
    """SQLite's SQLITE_FULL, or PostgreSQL's disk_full (SQLSTATE 53100)."""
    orig = exc.orig
    return (
        getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
        or getattr(orig, "sqlstate", None) == "53100"
    )
