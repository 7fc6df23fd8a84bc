"""Identities in the hosted service's shapes: create, read, keys, key replacement.

An identity is a chain of the calling account (formats section 8.1): its first entry has
the ExtIDs ``["IdentityChain", *names]`` and the content ``{"keys":[idpub...],
"version":1}``; a key replacement is an entry ``["ReplaceKey", old, new, signature,
signer]`` in it. Both are written through ``ledger.api.http.writes`` like any chain or entry
(202 once stored, then to the ledger by the worker).

Key state is the replay of ``ledger.core.identity_keys`` over the chain's entries:

* the initial keys are active from the start (``activated_height`` is ``null`` until the
  identity chain is in a directory block);
* a replacement counts once its entry is in a directory block: the old key gets its
  ``retired_height``, the new key its ``activated_height`` (that block's height);
* the first valid replacement not yet in a block is the identity's ``pending_key``.

A replacement is checked before it is accepted, against every key the identity has or is
getting (rules a to d of ``ledger.core.identity_keys``): a refused one is 422 with the
reason. Another account's identity is 404, like any chain of another account.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ledger.api import entry_reads
from ledger.api.auth import Principal
from ledger.api.connect import shapes
from ledger.api.connect.common import json_response, owned_chain, paging
from ledger.api.encoding import from_base64, to_base64
from ledger.api.errors import BadRequest, PageNotFound, Unprocessable
from ledger.api.http import writes
from ledger.api.http.deps import current_account, read_json, services
from ledger.api.http.schemas import ChainCreate, EntryCreate
from ledger.api.models import Chain, EntryRow
from ledger.api.services import Services
from ledger.core.entry import Entry
from ledger.core.errors import DecodeError
from ledger.core.identity_keys import (
    IDENTITY_CHAIN_TAG,
    KeyTenure,
    Replacement,
    check_replacement,
    identity_first_entry,
    identity_key_history,
    parse_replacement,
    replacement_entry,
)

__all__ = ["IdentityCreate", "IdentityView", "KeyReplace", "identity_view", "router"]

AccountDep = Annotated[Principal, Depends(current_account)]
ServicesDep = Annotated[Services, Depends(services)]
Limit = Annotated[int | None, Query()]
Offset = Annotated[int | None, Query()]

router = APIRouter(prefix="/v1", dependencies=[Depends(current_account)])


class _Callback(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    callback_url: str | None = None
    callback_stages: list[str] | None = None

    def callback_fields(self) -> dict[str, Any]:
        stages = self.callback_stages
        return {
            "callback_url": self.callback_url,
            "callback_stages": None
            if stages is None
            else shapes.spec_stages(stages, "callback_stages"),
        }


class IdentityCreate(_Callback):
    """Body of ``POST /v1/identities``: ``names`` (Base64), ``keys`` (idpub, priority order)."""

    names: list[str] = Field(min_length=1)
    keys: list[str] = Field(min_length=1)


class KeyReplace(_Callback):
    """Body of ``POST /v1/identities/{id}/keys``; ``signature`` is Base64 of 64 bytes."""

    old_key: str
    new_key: str
    signature: str
    signer_key: str


@dataclass(frozen=True)
class IdentityView:
    """An identity's state: names, version, every key ever, the pending key."""

    chain: Chain
    first: EntryRow
    names: list[str]
    version: Any
    keys: list[dict[str, Any]]
    pending: dict[str, Any] | None

    def active(self) -> list[dict[str, Any]]:
        live = [k for k in self.keys if k["retired_height"] is None]
        return sorted(live, key=lambda k: k["priority"])

    def body(self) -> dict[str, Any]:
        chain_id = self.chain.chain_id
        return {
            "data": {
                "chain_id": chain_id,
                "version": self.version,
                "stage": shapes.connect_stage(self.first.stage),
                "created_height": self.first.dblock_height,
                "names": self.names,
                "all_keys_href": f"/v1/identities/{chain_id}/keys",
                "active_keys": self.active(),
                "pending_key": self.pending,
            }
        }


def _entry(row: EntryRow) -> Entry:
    ext_ids = tuple(from_base64(x, field="stored") for x in row.external_ids)
    return Entry(bytes.fromhex(row.chain_id), ext_ids, bytes(row.content))


def identity_view(chain: Chain, rows: list[EntryRow]) -> IdentityView:
    """The state of identity ``chain`` from its entries in sequence (module docstring).

    Raises:
        PageNotFound: the chain is not an identity chain.
    """
    chain_bytes = bytes.fromhex(chain.chain_id)
    recorded = [rows[0]] + [r for r in rows[1:] if r.dblock_height is not None]
    try:
        history = identity_key_history(chain_bytes, [_entry(r) for r in recorded])
        version = json.loads(bytes(rows[0].content)).get("version", 1)
    except (DecodeError, ValueError, AttributeError) as exc:
        raise PageNotFound("No such identity") from exc

    def key(tenure: KeyTenure) -> dict[str, Any]:
        activated = recorded[tenure.activated_by]
        retired = None if tenure.retired_by is None else recorded[tenure.retired_by]
        return {
            "key": tenure.key,
            "activated_height": activated.dblock_height,
            "retired_height": None if retired is None else retired.dblock_height,
            "priority": tenure.priority,
            "entry_hash": activated.entry_hash,
        }

    names = [to_base64(x) for x in _entry(rows[0]).external_ids[1:]]
    return IdentityView(
        chain, rows[0], names, version, [key(t) for t in history], _pending(chain, rows, history)
    )


def _pending(chain: Chain, rows: list[EntryRow], history: list[KeyTenure]) -> dict[str, Any] | None:
    chain_bytes = bytes.fromhex(chain.chain_id)
    levels = {t.key: t.priority for t in history if t.retired_by is None}
    for row in rows[1:]:
        if row.dblock_height is not None:
            continue
        proposed = parse_replacement(_entry(row).external_ids)
        if proposed is not None and check_replacement(chain_bytes, history, proposed) is None:
            return {
                "key": proposed.new,
                "activated_height": None,
                "retired_height": None,
                "priority": levels[proposed.old],
                "entry_hash": row.entry_hash,
            }
    return None


def _identity_rows(
    svc: Services, account: Principal, chain_id: str
) -> tuple[Chain, list[EntryRow]]:
    """The account's chain and its entries; 404 unless its first ExtID names an identity.

    The first entry is looked at before the others are read, so asking a long chain that
    is not an identity costs one row.
    """
    with svc.db.read() as session:
        chain = owned_chain(session, account, chain_id)
        first = entry_reads.first_entry(session, chain).row
        if not first.external_ids or from_base64(first.external_ids[0], field="stored") != (
            IDENTITY_CHAIN_TAG
        ):
            raise PageNotFound("No such identity")
        return chain, entry_reads.chain_entries(session, chain)


def _load(svc: Services, account: Principal, chain_id: str) -> IdentityView:
    return identity_view(*_identity_rows(svc, account, chain_id))


@router.post("/identities", include_in_schema=False)
async def create_identity(request: Request, account: AccountDep, svc: ServicesDep) -> Response:
    body = await read_json(request, IdentityCreate)
    names = writes.decode_all(body.names, "names")
    try:
        first = identity_first_entry(names, body.keys)
    except DecodeError as exc:
        raise BadRequest(f"keys: {exc}") from exc
    create = ChainCreate(
        external_ids=[to_base64(x) for x in first.external_ids],
        content=to_base64(first.content),
        **body.callback_fields(),
    )
    done = await writes.create_chain(svc, account, create)
    return json_response({**done, "stage": shapes.connect_stage(done["stage"])}, 202)


@router.get("/identities/{chain_id}", include_in_schema=False)
def get_identity(chain_id: str, account: AccountDep, svc: ServicesDep) -> Response:
    return json_response(_load(svc, account, chain_id).body())


@router.get("/identities/{chain_id}/keys", include_in_schema=False)
def list_keys(
    chain_id: str, account: AccountDep, svc: ServicesDep, limit: Limit = None, offset: Offset = None
) -> Response:
    size, start = paging(svc, limit, offset)
    keys = _load(svc, account, chain_id).keys
    chosen = keys[start : start + size]
    return json_response(shapes.page(chosen, offset=start, limit=size, count=len(keys)))


@router.get("/identities/{chain_id}/keys/{key}", include_in_schema=False)
def get_key(chain_id: str, key: str, account: AccountDep, svc: ServicesDep) -> Response:
    for item in _load(svc, account, chain_id).keys:
        if item["key"] == key:
            return json_response({"data": item})
    raise PageNotFound("This key has never been a key of this identity")


@router.post("/identities/{chain_id}/keys", include_in_schema=False)
async def replace_key(
    chain_id: str, request: Request, account: AccountDep, svc: ServicesDep
) -> Response:
    body = await read_json(request, KeyReplace)
    proposed = Replacement(body.old_key, body.new_key, _signature(body.signature), body.signer_key)
    chain = await run_in_threadpool(_check_replacement, svc, account, chain_id, proposed)
    chain_bytes = bytes.fromhex(chain.chain_id)
    entry = replacement_entry(chain_bytes, proposed)
    create = EntryCreate(
        external_ids=[to_base64(x) for x in entry.external_ids],
        content="",
        **body.callback_fields(),
    )
    done = await writes.create_entry(svc, account, chain.chain_id, create)
    answer = {"entry_hash": done["entry_hash"], "stage": shapes.connect_stage(done["stage"])}
    return json_response(answer, 202)


def _check_replacement(
    svc: Services, account: Principal, chain_id: str, proposed: Replacement
) -> Chain:
    """The identity chain, once ``proposed`` is found acceptable after every entry so far.

    Raises:
        PageNotFound: no such identity of this account.
        Unprocessable: a rule refuses the replacement (the reason is in the message).
    """
    chain, rows = _identity_rows(svc, account, chain_id)
    identity_view(chain, rows)  # 404 unless a valid identity
    chain_bytes = bytes.fromhex(chain.chain_id)
    history = identity_key_history(chain_bytes, [_entry(r) for r in rows])
    reason = check_replacement(chain_bytes, history, proposed)
    if reason is not None:
        raise Unprocessable(f"Key replacement refused: {reason}")
    return chain


def _signature(text: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise BadRequest("signature: not valid Base64") from exc
    if len(raw) != 64:
        raise BadRequest("signature: must be 64 bytes (Base64 of an ed25519 signature)")
    return raw
