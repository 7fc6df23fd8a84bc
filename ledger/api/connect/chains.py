"""Chains and entries in the hosted service's shapes (``ledger.api.connect.shapes``).

The same eleven operations as ``ledger.api.http.routes``, on the same paths, for requests in
Connect mode (``ledger.api.connect``). Writes go through the same ``ledger.api.http.writes``
(same checks, same 202 once durably stored); only the bodies differ:

* answers are wrapped (``{"data": ...}``) and lists are ``{"data", "offset", "limit",
  "count"}``; both searches answer every match as such a list, ``[]`` when none;
* lists and searches take ``limit`` (default 15) and ``offset``; the lists also take
  ``stages`` (comma-separated, ``replicated``, ``factom``, ``anchored``, ``failed``);
* a write given up shows stage ``failed`` and a ``failure`` object (``shapes``);
* ``callback_stages`` may use the hosted names or the spec's;
* entry creation answers ``{"entry_hash", "stage"}``, chain creation ``{"chain_id",
  "entry_hash", "stage"}``, with the hosted stage names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from ledger.api import entry_reads
from ledger.api.auth import Principal
from ledger.api.connect import shapes
from ledger.api.connect.common import (
    eblock_keymr,
    json_response,
    ledger_reads,
    owned_chain,
    paging,
    stage_filter,
)
from ledger.api.connect.ledger_reads import LedgerReads
from ledger.api.entry_reads import EntryRead
from ledger.api.http import writes
from ledger.api.http.deps import current_account, json_body, path_hash, read_json, services
from ledger.api.http.routes import API_VERSION
from ledger.api.http.schemas import ChainCreate, EntryCreate, ExternalIds
from ledger.api.models import Chain
from ledger.api.services import Services

__all__ = ["ConnectEntryCreate", "router"]

AccountDep = Annotated[Principal, Depends(current_account)]
ServicesDep = Annotated[Services, Depends(services)]
ReadsDep = Annotated[LedgerReads | None, Depends(ledger_reads)]
Limit = Annotated[int | None, Query()]
Offset = Annotated[int | None, Query()]
Stages = Annotated[str | None, Query()]
SearchBody = Annotated[ExternalIds, Depends(json_body(ExternalIds))]

router = APIRouter(prefix="/v1", dependencies=[Depends(current_account)])


class ConnectEntryCreate(BaseModel):
    """Body of chain and entry creation as Connect clients send it (stages by any name)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    external_ids: list[str] | None = None
    content: str | None = None
    callback_url: str | None = None
    callback_stages: list[str] | None = None

    def as_spec(self) -> dict[str, Any]:
        """The fields of the spec's ``EntryCreate`` (stage names translated)."""
        stages = self.callback_stages
        return {
            "external_ids": self.external_ids,
            "content": self.content,
            "callback_url": self.callback_url,
            "callback_stages": None
            if stages is None
            else shapes.spec_stages(stages, "callback_stages"),
        }


@router.get("", include_in_schema=False)
@router.get("/", include_in_schema=False)
async def get_info() -> Response:
    """API information: version and the link to the chains."""
    return json_response({"version": API_VERSION, "links": {"chains": "/v1/chains"}})


@router.post("/chains", include_in_schema=False)
async def create_chain(request: Request, account: AccountDep, svc: ServicesDep) -> Response:
    body = await read_json(request, ConnectEntryCreate)
    done = await writes.create_chain(svc, account, ChainCreate(**body.as_spec()))
    return json_response({**done, "stage": shapes.connect_stage(done["stage"])}, 202)


@router.get("/chains", include_in_schema=False)
def list_chains(
    account: AccountDep,
    svc: ServicesDep,
    limit: Limit = None,
    offset: Offset = None,
    stages: Stages = None,
) -> Response:
    size, start = paging(svc, limit, offset)
    wanted = stage_filter(stages)
    with svc.db.read() as session:
        rows, total = entry_reads.chains_with_first(
            session, account, stages=wanted, limit=size, offset=start
        )
        items = [shapes.chain_summary(chain, first) for chain, first in rows]
    return json_response(shapes.page(items, offset=start, limit=size, count=total))


@router.post("/chains/search", include_in_schema=False)
def search_chains(
    body: SearchBody,
    account: AccountDep,
    svc: ServicesDep,
    limit: Limit = None,
    offset: Offset = None,
) -> Response:
    size, start = paging(svc, limit, offset)
    values = writes.decode_all(body.external_ids, "external_ids")
    with svc.db.read() as session:
        rows, total = entry_reads.search_chains(session, account, values, limit=size, offset=start)
        items = [shapes.chain_summary(chain, first) for chain, first in rows]
    return json_response(shapes.page(items, offset=start, limit=size, count=total))


@router.get("/chains/{chain_id}", include_in_schema=False)
def get_chain(chain_id: str, account: AccountDep, svc: ServicesDep, reads: ReadsDep) -> Response:
    with svc.db.read() as session:
        chain = owned_chain(session, account, chain_id)
        first = entry_reads.first_entry(session, chain)
    keymr = eblock_keymr(reads, first.row)
    detail = shapes.chain_detail(chain, first.row, eblock_keymr=keymr, failure=first.failure)
    return json_response(detail)


@router.post("/chains/{chain_id}/entries", include_in_schema=False)
async def create_entry(
    chain_id: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    body = await read_json(request, ConnectEntryCreate)
    done = await writes.create_entry(svc, account, chain_id, EntryCreate(**body.as_spec()))
    answer = {"entry_hash": done["entry_hash"], "stage": shapes.connect_stage(done["stage"])}
    return json_response(answer, 202)


@router.get("/chains/{chain_id}/entries", include_in_schema=False)
def list_entries(
    chain_id: str,
    account: AccountDep,
    svc: ServicesDep,
    limit: Limit = None,
    offset: Offset = None,
    stages: Stages = None,
) -> Response:
    size, start = paging(svc, limit, offset)
    wanted = stage_filter(stages)
    with svc.db.read() as session:
        chain = owned_chain(session, account, chain_id)
        rows, total = entry_reads.entry_rows(
            session, chain, stages=wanted, limit=size, offset=start
        )
        items = [shapes.entry_summary(row) for row in rows]
    return json_response(shapes.page(items, offset=start, limit=size, count=total))


@router.get("/chains/{chain_id}/entries/first", include_in_schema=False)
def get_first_entry(
    chain_id: str, account: AccountDep, svc: ServicesDep, reads: ReadsDep
) -> Response:
    return _entry_answer(svc, account, chain_id, reads, entry_reads.first_entry)


@router.get("/chains/{chain_id}/entries/last", include_in_schema=False)
def get_last_entry(
    chain_id: str, account: AccountDep, svc: ServicesDep, reads: ReadsDep
) -> Response:
    return _entry_answer(svc, account, chain_id, reads, entry_reads.last_entry)


@router.post("/chains/{chain_id}/entries/search", include_in_schema=False)
def search_entries(
    chain_id: str,
    body: SearchBody,
    account: AccountDep,
    svc: ServicesDep,
    limit: Limit = None,
    offset: Offset = None,
) -> Response:
    size, start = paging(svc, limit, offset)
    with svc.db.read() as session:
        chain = owned_chain(session, account, chain_id)
        values = writes.decode_all(body.external_ids, "external_ids")
        rows, total = entry_reads.search_entries(session, chain, values, limit=size, offset=start)
        items = [shapes.entry_search_item(row) for row in rows]
    return json_response(shapes.page(items, offset=start, limit=size, count=total))


@router.get("/chains/{chain_id}/entries/{entry_hash}", include_in_schema=False)
def get_entry(
    chain_id: str, entry_hash: str, account: AccountDep, svc: ServicesDep, reads: ReadsDep
) -> Response:
    return _entry_answer(
        svc,
        account,
        chain_id,
        reads,
        lambda session, chain: entry_reads.get_entry(session, chain, path_hash(entry_hash)),
    )


def _entry_answer(
    svc: Services,
    account: Principal,
    chain_id: str,
    reads: LedgerReads | None,
    pick: Callable[[Session, Chain], EntryRead],
) -> Response:
    """The entry ``pick`` finds in the account's chain (first, last or by hash); the node is
    asked for its entry block after the session closed."""
    with svc.db.read() as session:
        found = pick(session, owned_chain(session, account, chain_id))
    keymr = eblock_keymr(reads, found.row)
    return json_response(shapes.entry_detail(found.row, eblock_keymr=keymr, failure=found.failure))
