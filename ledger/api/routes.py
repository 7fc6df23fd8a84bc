"""The eleven operations of the REST interface (spec "Endpoints"), mounted at ``/v1``.

Writes (operations 2 and 6) answer HTTP 202 only after the row is committed to the
database (``Database.write``): that commit *is* the ``multi_az`` stage. On SQLite it
means fsynced into the WAL on one disk; on PostgreSQL it means committed by the server
(and replicated synchronously when the server is configured so). The worker then puts
the row on the ledger.

Status codes beyond the spec's table, chosen here:

* Search with no match (operations 4 and 10): 404 Page Not Found.
* Chain creation when the chain ID exists: 422 (the same first entry posted again by its
  owner is idempotent and answers 202 with the same IDs).
* Entry creation into a chain that does not exist or is not yours: 422; posting the same
  entry again is idempotent (202, same ``entry_hash``, no second entry).
* Entry payload (external IDs with their 2-byte length prefixes, plus content) above
  10240 bytes: 422. A callback URL refused by the host policy: 422.
* Another account's chain or entry is 404 Page Not Found, exactly like an unknown one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ledger.api import store
from ledger.api.callbacks import CallbackRefused, check_callback_url
from ledger.api.deps import current_account, json_body, path_hash, services
from ledger.api.encoding import EncodingError, from_base64, from_hash_hex, to_base64
from ledger.api.errors import BadRequest, PageNotFound, Unprocessable
from ledger.api.models import Account, Chain, EntryRow
from ledger.api.schemas import (
    AllInfo,
    ChainAccepted,
    ChainCreate,
    ChainList,
    ChainPublic,
    EntryAccepted,
    EntryCreate,
    EntryList,
    EntryPublic,
    ExternalIds,
)
from ledger.api.services import Services
from ledger.core.entry import MAX_ENTRY_PAYLOAD_BYTES, Entry
from ledger.core.errors import LimitError

__all__ = ["API_VERSION", "router"]

API_VERSION = "1.0.11"
_WRITE_RETRIES = 3
T = TypeVar("T")

AccountDep = Annotated[Account, Depends(current_account)]
ServicesDep = Annotated[Services, Depends(services)]

router = APIRouter(prefix="/v1", dependencies=[Depends(current_account)])


# -- helpers ------------------------------------------------------------------------------


def _base(request: Request, svc: Services) -> str:
    origin = svc.settings.public_base_url or str(request.base_url)
    return origin.rstrip("/") + "/v1"


def _iso(seconds: float) -> str:
    return (
        datetime.fromtimestamp(seconds, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _chain_url(base: str, chain_id: str) -> str:
    return f"{base}/chains/{chain_id}"


def _chain_public(base: str, chain: Chain, first: EntryRow) -> ChainPublic:
    url = _chain_url(base, chain.chain_id)
    return ChainPublic.model_validate(
        {
            "chain_id": chain.chain_id,
            "external_ids": list(chain.external_ids),
            "links": {
                "entries": f"{url}/entries",
                "first": f"{url}/entries/first",
                "last": f"{url}/entries/last",
            },
            **_stage_fields(first),
        }
    )


def _entry_public(base: str, row: EntryRow) -> EntryPublic:
    return EntryPublic.model_validate(
        {
            "entry_hash": row.entry_hash,
            "chain_id": row.chain_id,
            "external_ids": list(row.external_ids),
            "content": to_base64(bytes(row.content)),
            "links": {"chain": _chain_url(base, row.chain_id)},
            **_stage_fields(row),
        }
    )


def _stage_fields(row: EntryRow) -> dict[str, object]:
    return {
        "stage": row.stage,
        "created_at": _iso(row.created_at),
        "dblock_keymr": row.dblock_keymr,
        "dblock_height": row.dblock_height,
    }


def _decode_all(values: Sequence[str] | None, field: str) -> list[bytes]:
    try:
        return [from_base64(v, field=f"{field}[{i}]") for i, v in enumerate(values or [])]
    except EncodingError as exc:
        raise BadRequest(str(exc)) from exc


def _decode_content(value: str | None) -> bytes:
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


def _with_retries(svc: Services, action: Callable[..., T]) -> T:
    """Run ``action(session)`` in a durable write transaction; retry unique-key races."""
    for attempt in range(_WRITE_RETRIES):
        try:
            with svc.db.write() as session:
                return action(session)
        except IntegrityError:
            if attempt == _WRITE_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def _page(svc: Services, limit: int | None, offset: int) -> tuple[int, int]:
    size = svc.settings.page_size_default if limit is None else limit
    if not 1 <= size <= svc.settings.page_size_max:
        raise BadRequest(f"limit must be between 1 and {svc.settings.page_size_max}")
    if offset < 0:
        raise BadRequest("offset must be >= 0")
    return size, offset


def _owned_chain(svc: Services, account: Account, chain_id: str) -> Chain:
    with svc.db.read() as session:
        chain = store.get_chain(session, account, path_hash(chain_id))
    if chain is None:
        raise PageNotFound("No such chain")
    return chain


# -- operations ---------------------------------------------------------------------------


@router.get("", response_model=AllInfo)
@router.get("/", response_model=AllInfo, include_in_schema=False)
def get_info(request: Request, svc: ServicesDep) -> AllInfo:
    """Operation 1: API version and the link to the chain collection."""
    base = _base(request, svc)
    return AllInfo.model_validate(
        {"api_version": API_VERSION, "links": {"chains": f"{base}/chains"}}
    )


@router.post("/chains", status_code=202, response_model=ChainAccepted)
def create_chain(
    body: Annotated[ChainCreate, Depends(json_body(ChainCreate))],
    account: AccountDep,
    svc: ServicesDep,
) -> JSONResponse:
    """Operation 2: create a chain and its first entry; 202 once durably stored."""
    ext_ids, content = _decode_all(body.external_ids, "external_ids"), _decode_content(body.content)
    callback = _callback(body, svc)
    entry = _build_entry(lambda: Entry.first_entry(ext_ids, content))

    def accept(session: Session) -> ChainAccepted:
        chain, first, _ = store.accept_chain(
            session, account, entry, callback=callback, now=svc.clock.now()
        )
        return ChainAccepted(
            chain_id=chain.chain_id, entry_hash=first.entry_hash, stage=first.stage
        )

    try:
        accepted = _with_retries(svc, accept)
    except store.ChainExists as exc:
        raise Unprocessable(f"Chain {exc.chain_id} already exists") from exc
    return JSONResponse(accepted.model_dump(), status_code=202)


@router.get("/chains", response_model=ChainList)
def list_chains(
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
    limit: Annotated[int | None, Query()] = None,
    offset: Annotated[int, Query()] = 0,
) -> ChainList:
    """Operation 3: the calling account's chains, oldest first."""
    size, start = _page(svc, limit, offset)
    base = _base(request, svc)
    with svc.db.read() as session:
        chains, total = store.list_chains(session, account, limit=size, offset=start)
    items = [
        {"chain_id": c.chain_id, "links": {"chain": _chain_url(base, c.chain_id)}} for c in chains
    ]
    return ChainList.model_validate(
        {"items": items, "count": total, "offset": start, "limit": size}
    )


@router.post("/chains/search", response_model=ChainPublic)
def search_chains(
    request: Request,
    body: Annotated[ExternalIds, Depends(json_body(ExternalIds))],
    account: AccountDep,
    svc: ServicesDep,
) -> ChainPublic:
    """Operation 4: the oldest chain whose external IDs contain all values; 404 if none."""
    values = _decode_all(body.external_ids, "external_ids")
    with svc.db.read() as session:
        chain = store.search_chains(session, account, values)
        if chain is None:
            raise PageNotFound("No chain matches these external IDs")
        return _chain_public(_base(request, svc), chain, store.first_entry(session, chain))


@router.get("/chains/{chain_id}", response_model=ChainPublic)
def get_chain(
    chain_id: str,
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
) -> ChainPublic:
    """Operation 5: one chain."""
    chain = _owned_chain(svc, account, chain_id)
    with svc.db.read() as session:
        return _chain_public(_base(request, svc), chain, store.first_entry(session, chain))


@router.post("/chains/{chain_id}/entries", status_code=202, response_model=EntryAccepted)
def create_entry(
    chain_id: str,
    body: Annotated[EntryCreate, Depends(json_body(EntryCreate))],
    account: AccountDep,
    svc: ServicesDep,
) -> JSONResponse:
    """Operation 6: append an entry; 202 once durably stored, 422 if the chain is not yours."""
    ext_ids, content = _decode_all(body.external_ids, "external_ids"), _decode_content(body.content)
    callback = _callback(body, svc)
    chain_bytes = from_hash_hex(chain_id)
    if chain_bytes is None:
        raise Unprocessable("Chain does not exist")
    entry = _build_entry(lambda: Entry(chain_bytes, tuple(ext_ids), content))

    def accept(session: Session) -> EntryAccepted:
        row, _ = store.accept_entry(session, account, entry, callback=callback, now=svc.clock.now())
        return EntryAccepted(entry_hash=row.entry_hash, chain_id=row.chain_id, stage=row.stage)

    try:
        accepted = _with_retries(svc, accept)
    except store.ChainNotFound as exc:
        raise Unprocessable(f"Chain {exc.chain_id} does not exist") from exc
    return JSONResponse(accepted.model_dump(), status_code=202)


@router.get("/chains/{chain_id}/entries", response_model=EntryList)
def list_entries(
    chain_id: str,
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
    limit: Annotated[int | None, Query()] = None,
    offset: Annotated[int, Query()] = 0,
) -> EntryList:
    """Operation 7: the chain's entries in sequence (``limit``/``offset`` paging)."""
    size, start = _page(svc, limit, offset)
    chain = _owned_chain(svc, account, chain_id)
    base = _base(request, svc)
    with svc.db.read() as session:
        rows, total = store.list_entries(session, chain, limit=size, offset=start)
    prefix = f"{_chain_url(base, chain.chain_id)}/entries"
    items = [
        {"entry_hash": r.entry_hash, "links": {"entry": f"{prefix}/{r.entry_hash}"}} for r in rows
    ]
    return EntryList.model_validate(
        {"items": items, "count": total, "offset": start, "limit": size}
    )


@router.get("/chains/{chain_id}/entries/first", response_model=EntryPublic)
def get_first_entry(
    chain_id: str,
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
) -> EntryPublic:
    """Operation 8: the first entry (made with the chain)."""
    chain = _owned_chain(svc, account, chain_id)
    with svc.db.read() as session:
        return _entry_public(_base(request, svc), store.first_entry(session, chain))


@router.get("/chains/{chain_id}/entries/last", response_model=EntryPublic)
def get_last_entry(
    chain_id: str,
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
) -> EntryPublic:
    """Operation 9: the most recently accepted entry."""
    chain = _owned_chain(svc, account, chain_id)
    with svc.db.read() as session:
        return _entry_public(_base(request, svc), store.last_entry(session, chain))


@router.post("/chains/{chain_id}/entries/search", response_model=EntryPublic)
def search_entries(
    chain_id: str,
    request: Request,
    body: Annotated[ExternalIds, Depends(json_body(ExternalIds))],
    account: AccountDep,
    svc: ServicesDep,
) -> EntryPublic:
    """Operation 10: the oldest entry of the chain whose external IDs contain all values."""
    chain = _owned_chain(svc, account, chain_id)
    values = _decode_all(body.external_ids, "external_ids")
    with svc.db.read() as session:
        row = store.search_entries(session, chain, values)
        if row is None:
            raise PageNotFound("No entry matches these external IDs")
        return _entry_public(_base(request, svc), row)


@router.get("/chains/{chain_id}/entries/{entry_hash}", response_model=EntryPublic)
def get_entry(
    chain_id: str,
    entry_hash: str,
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
) -> EntryPublic:
    """Operation 11: one entry by its hash."""
    chain = _owned_chain(svc, account, chain_id)
    with svc.db.read() as session:
        row = store.get_entry(session, chain, path_hash(entry_hash))
    if row is None:
        raise PageNotFound("No such entry in this chain")
    return _entry_public(_base(request, svc), row)
