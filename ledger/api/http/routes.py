"""The eleven operations of the REST interface (docs/rest-api.md §5 (Endpoints)),
mounted at ``/v1``, and the bulk write (an extension, docs/rest-api.md §5.2).

Writes (operations 2 and 6) answer HTTP 202 only after the row is committed to the
database: the handler hands the prepared write to the group-commit writer
(``ledger.api.outbox.writer``), which commits it together with the other writes waiting at that
moment and answers each one after the commit has returned. That commit *is* the
``multi_az`` stage (see ``ledger.api.db`` for what it means on SQLite and PostgreSQL).
The worker then puts the row on the ledger. Write handlers are ``async`` (no thread-pool
hop); reads run in the thread pool with one database session each and answer with
``orjson``-encoded bodies.

Status codes beyond the original interface's table (docs/rest-api.md §11), chosen here:

* Search with no match (operations 4 and 10): 404 Page Not Found.
* Chain creation when the chain ID exists: 422 (the same first entry posted again by its
  owner is idempotent and answers 202 with the same IDs).
* Entry creation into a chain that does not exist or is not yours: 422; posting the same
  entry again is idempotent (202, same ``entry_hash``, no second entry).
* Entry payload (external IDs with their 2-byte length prefixes, plus content) above
  10240 bytes: 422. A callback URL refused by the host policy: 422.
* Another account's chain or entry is 404 Page Not Found, exactly like an unknown one.
* A key whose account was revoked while its look-up was cached: reads may succeed for up
  to ``auth_cache_ttl_s``; writes answer 403 Authentication Failed at once.
* Rate limit of the key used up: 429 Too Many Requests with ``Retry-After``.
* The service is stopping and no longer takes writes: 503 Service Unavailable.
* ``GET /v1/openapi.json``: the OpenAPI 3.1 document of all this; like every route it
  needs the key (see ``ledger.api.http.openapi``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ledger.api import entry_reads
from ledger.api.auth import Principal
from ledger.api.encoding import to_base64
from ledger.api.entry_reads import EntryRead
from ledger.api.errors import BadRequest, PageNotFound
from ledger.api.http import bulk, writes
from ledger.api.http.deps import (
    check_json_media_type,
    current_account,
    json_body,
    path_hash,
    read_json,
    services,
)
from ledger.api.http.openapi import MAX_OFFSET, build_openapi
from ledger.api.http.schemas import (
    AllInfo,
    ChainAccepted,
    ChainCreate,
    ChainList,
    ChainPublic,
    EntryAccepted,
    EntryBatchAccepted,
    EntryCreate,
    EntryList,
    EntryPublic,
    ExternalIds,
)
from ledger.api.models import PUBLIC_STAGES, Chain
from ledger.api.services import Services

__all__ = ["API_VERSION", "router"]

API_VERSION = "1.0.11"

AccountDep = Annotated[Principal, Depends(current_account)]
ServicesDep = Annotated[Services, Depends(services)]

router = APIRouter(prefix="/v1", dependencies=[Depends(current_account)])


# -- helpers ------------------------------------------------------------------------------


def _json(data: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status_code, media_type="application/json")


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


def _chain_public(base: str, chain: Chain, first: EntryRead) -> dict[str, Any]:
    url = _chain_url(base, chain.chain_id)
    return {
        "chain_id": chain.chain_id,
        "external_ids": list(chain.external_ids),
        "links": {
            "entries": f"{url}/entries",
            "first": f"{url}/entries/first",
            "last": f"{url}/entries/last",
        },
        **_stage_fields(first),
    }


def _entry_public(base: str, read: EntryRead) -> dict[str, Any]:
    row = read.row
    return {
        "entry_hash": row.entry_hash,
        "chain_id": row.chain_id,
        "external_ids": list(row.external_ids),
        "content": to_base64(bytes(row.content)),
        "links": {"chain": _chain_url(base, row.chain_id)},
        **_stage_fields(read),
    }


def _stage_fields(read: EntryRead) -> dict[str, object]:
    row, failure = read.row, read.failure
    fields: dict[str, object] = {
        "stage": row.stage,
        "created_at": _iso(row.created_at),
        "dblock_keymr": row.dblock_keymr,
        "dblock_height": row.dblock_height,
    }
    if failure is not None:  # only on a write given up (docs/rest-api.md §3)
        fields["failure"] = {
            "reason": failure.reason,
            "failed_at": None if failure.failed_at is None else _iso(failure.failed_at),
            "attempts": failure.attempts,
        }
    return fields


def _page(svc: Services, limit: int | None, offset: int) -> tuple[int, int]:
    size = svc.settings.page_size_default if limit is None else limit
    if not 1 <= size <= svc.settings.page_size_max:
        raise BadRequest(f"limit must be between 1 and {svc.settings.page_size_max}")
    if not 0 <= offset <= MAX_OFFSET:
        raise BadRequest(f"offset must be between 0 and {MAX_OFFSET}")
    return size, offset


def _entry_answer(
    request: Request,
    svc: Services,
    account: Principal,
    chain_id: str,
    pick: Callable[[Session, Chain], EntryRead],
) -> Response:
    """Operations 8, 9 and 11: the entry ``pick`` finds in the account's chain."""
    with svc.db.read() as session:
        found = pick(session, entry_reads.owned_chain(session, account, path_hash(chain_id)))
    return _json(_entry_public(_base(request, svc), found))


# -- operations ---------------------------------------------------------------------------


@router.get("", response_model=AllInfo, operation_id="getInfo")
@router.get("/", response_model=AllInfo, include_in_schema=False)
async def get_info(request: Request, svc: ServicesDep) -> Response:
    """Operation 1: API version and the link to the chain collection."""
    base = _base(request, svc)
    return _json(
        {
            "api_version": API_VERSION,
            "links": {"chains": f"{base}/chains"},
            "sandbox": svc.settings.sandbox,
        }
    )


@router.get("/openapi.json", include_in_schema=False)
async def get_openapi_document(request: Request, svc: ServicesDep) -> Response:
    """The OpenAPI document (``ledger.api.http.openapi``); needs the key like every route."""
    document = getattr(request.app.state, "openapi_document", None)
    if document is None:
        document = build_openapi(request.app, svc.settings)
        request.app.state.openapi_document = document
    return _json(document)


@router.post("/chains", status_code=202, response_model=ChainAccepted, operation_id="createChain")
async def create_chain(request: Request, account: AccountDep, svc: ServicesDep) -> Response:
    """Operation 2: create a chain and its first entry; 202 once durably stored."""
    body = await read_json(request, ChainCreate)
    return _json(await writes.create_chain(svc, account, body), 202)


@router.get("/chains", response_model=ChainList, operation_id="listChains")
def list_chains(
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
    limit: Annotated[int | None, Query()] = None,
    offset: Annotated[int, Query()] = 0,
) -> Response:
    """Operation 3: the calling account's chains, oldest first."""
    size, start = _page(svc, limit, offset)
    base = _base(request, svc)
    with svc.db.read() as session:
        chains, total = entry_reads.list_chains(session, account, limit=size, offset=start)
    items = [
        {"chain_id": c.chain_id, "links": {"chain": _chain_url(base, c.chain_id)}} for c in chains
    ]
    return _json({"items": items, "count": total, "offset": start, "limit": size})


@router.post("/chains/search", response_model=ChainPublic, operation_id="searchChains")
def search_chains(
    request: Request,
    body: Annotated[ExternalIds, Depends(json_body(ExternalIds))],
    account: AccountDep,
    svc: ServicesDep,
) -> Response:
    """Operation 4: the oldest chain whose external IDs contain all values; 404 if none."""
    values = writes.decode_all(body.external_ids, "external_ids")
    with svc.db.read() as session:
        chain = entry_reads.oldest_chain_match(session, account, values)
        if chain is None:
            raise PageNotFound("No chain matches these external IDs")
        first = entry_reads.first_entry(session, chain)
    return _json(_chain_public(_base(request, svc), chain, first))


@router.get("/chains/{chain_id}", response_model=ChainPublic, operation_id="getChain")
def get_chain(chain_id: str, request: Request, account: AccountDep, svc: ServicesDep) -> Response:
    """Operation 5: one chain."""
    with svc.db.read() as session:
        chain = entry_reads.owned_chain(session, account, path_hash(chain_id))
        first = entry_reads.first_entry(session, chain)
    return _json(_chain_public(_base(request, svc), chain, first))


@router.post(
    "/chains/{chain_id}/entries",
    status_code=202,
    response_model=EntryAccepted,
    operation_id="createEntry",
)
async def create_entry(
    chain_id: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    """Operation 6: append an entry; 202 once durably stored, 422 if the chain is not yours."""
    body = await read_json(request, EntryCreate)
    return _json(await writes.create_entry(svc, account, chain_id, body), 202)


@router.post(
    "/chains/{chain_id}/entries" + bulk.BULK_SUFFIX,
    status_code=202,
    response_model=EntryBatchAccepted,
    operation_id="createEntries",
)
async def create_entries(
    chain_id: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    """Bulk write (an extension, ``ledger.api.http.bulk``): many entries of one chain at once;
    202 once all are durably stored, with each entry's answer or error, in order."""
    check_json_media_type(request.headers.get("content-type", ""))
    raw = await request.body()
    return _json(await bulk.create_entries(svc, account, chain_id, raw), 202)


@router.get("/chains/{chain_id}/entries", response_model=EntryList, operation_id="listEntries")
def list_entries(
    chain_id: str,
    request: Request,
    account: AccountDep,
    svc: ServicesDep,
    limit: Annotated[int | None, Query()] = None,
    offset: Annotated[int, Query()] = 0,
    stage: Annotated[str | None, Query()] = None,
) -> Response:
    """Operation 7: the chain's entries in sequence (``limit``/``offset`` paging); with
    ``stage`` (an extension), only those at that stage, e.g. ``failed``."""
    size, start = _page(svc, limit, offset)
    if stage is not None and stage not in PUBLIC_STAGES:
        raise BadRequest(f"stage must be one of {', '.join(PUBLIC_STAGES)}")
    base = _base(request, svc)
    with svc.db.read() as session:
        chain = entry_reads.owned_chain(session, account, path_hash(chain_id))
        stages = [] if stage is None else [stage]
        hashes, total = entry_reads.entry_hashes(
            session, chain, stages=stages, limit=size, offset=start
        )
        prefix = f"{_chain_url(base, chain.chain_id)}/entries"
        items = [{"entry_hash": h, "links": {"entry": f"{prefix}/{h}"}} for h in hashes]
    return _json({"items": items, "count": total, "offset": start, "limit": size})


@router.get(
    "/chains/{chain_id}/entries/first", response_model=EntryPublic, operation_id="getFirstEntry"
)
def get_first_entry(
    chain_id: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    """Operation 8: the first entry (made with the chain)."""
    return _entry_answer(request, svc, account, chain_id, entry_reads.first_entry)


@router.get(
    "/chains/{chain_id}/entries/last", response_model=EntryPublic, operation_id="getLastEntry"
)
def get_last_entry(
    chain_id: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    """Operation 9: the most recently accepted entry."""
    return _entry_answer(request, svc, account, chain_id, entry_reads.last_entry)


@router.post(
    "/chains/{chain_id}/entries/search", response_model=EntryPublic, operation_id="searchEntries"
)
def search_entries(
    chain_id: str,
    request: Request,
    body: Annotated[ExternalIds, Depends(json_body(ExternalIds))],
    account: AccountDep,
    svc: ServicesDep,
) -> Response:
    """Operation 10: the oldest entry of the chain whose external IDs contain all values."""
    with svc.db.read() as session:
        chain = entry_reads.owned_chain(session, account, path_hash(chain_id))
        values = writes.decode_all(body.external_ids, "external_ids")
        found = entry_reads.oldest_entry_match(session, chain, values)
        if found is None:
            raise PageNotFound("No entry matches these external IDs")
    return _json(_entry_public(_base(request, svc), found))


@router.get(
    "/chains/{chain_id}/entries/{entry_hash}", response_model=EntryPublic, operation_id="getEntry"
)
def get_entry(
    chain_id: str, entry_hash: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    """Operation 11: one entry by its hash."""
    return _entry_answer(
        request,
        svc,
        account,
        chain_id,
        lambda session, chain: entry_reads.get_entry(session, chain, path_hash(entry_hash)),
    )
