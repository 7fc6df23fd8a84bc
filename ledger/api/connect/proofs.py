"""Receipts and anchors in the hosted service's shapes, read from the ledger node.

``GET /v1/receipts/{entry_hash}``: the node's receipt of one of the account's entries,
``{"data": {"entry_hash", "entry_serialized" (hex), "created_at", "merkle_branch",
"eblock": {"keymr"}, "dblock": {"keymr", "height"}}}``; 404 while the entry is not in a
directory block (or is not the account's).

``GET /v1/anchors/{object_identifier}``: anchors of a directory block named by its height
or by a hash the node resolves (directory or entry block key Merkle root, an entry hash,
...): ``{"data": {"dblock": {"keymr", "height"}, "anchors": [...]}}``, one item per anchor
(``network`` ``pow``: the bundled proof-of-work chain; ``contract``: the windowed
contract record), ``[]`` while not anchored and always in the sandbox (no anchoring there).
An entry hash of another account's entry is 404, like its other reads.

Both need a ledger node (``LedgerReads``): without one (the built-in sandbox ledger) they
answer 503.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from ledger.api import entry_reads
from ledger.api.auth import Principal
from ledger.api.connect import shapes
from ledger.api.connect.common import json_response, ledger_reads
from ledger.api.connect.ledger_reads import LedgerReads
from ledger.api.errors import PageNotFound, TemporarilyUnavailable
from ledger.api.http.deps import current_account, path_hash, services
from ledger.api.models import EntryRow
from ledger.api.services import Services

__all__ = ["anchors_body", "receipt_body", "router"]

AccountDep = Annotated[Principal, Depends(current_account)]
ServicesDep = Annotated[Services, Depends(services)]
ReadsDep = Annotated[LedgerReads | None, Depends(ledger_reads)]

router = APIRouter(prefix="/v1", dependencies=[Depends(current_account)])

_MAX_HEIGHT = 2**32 - 1


def _require(reads: LedgerReads | None) -> LedgerReads:
    if reads is None:
        raise TemporarilyUnavailable("This service has no ledger node to read receipts and anchors")
    return reads


def receipt_body(receipt: dict[str, Any]) -> dict[str, Any]:
    """The Connect receipt answer of a node ``receipt`` object."""
    entry = receipt["entry"]
    return {
        "data": {
            "entry_hash": entry["entryhash"],
            "entry_serialized": entry.get("raw"),
            "created_at": shapes.iso_time(float(entry["timestamp"])),
            "merkle_branch": receipt["merklebranch"],
            "eblock": {"keymr": receipt["entryblockkeymr"]},
            "dblock": {
                "keymr": receipt["directoryblockkeymr"],
                "height": receipt["directoryblockheight"],
            },
        }
    }


def anchors_body(answer: dict[str, Any], *, sandbox: bool) -> dict[str, Any]:
    """The Connect anchors answer of a node ``anchors`` answer."""
    items: list[dict[str, Any]] = []
    pow_anchor, contract = answer.get("anchor_pow"), answer.get("anchor_contract")
    if not sandbox and isinstance(pow_anchor, dict):
        items.append(
            {
                "network": "pow",
                "status": "confirmed",
                "tx_hash": pow_anchor["transactionhash"],
                "block_hash": pow_anchor["blockhash"],
            }
        )
    if not sandbox and isinstance(contract, dict):
        items.append(
            {
                "network": "contract",
                "status": "confirmed",
                "tx_hash": contract["txid"],
                "block_hash": contract["blockhash"],
                "tx_index": contract["txindex"],
                "contract_address": contract["contractaddress"],
                "record_height": contract["recordheight"],
                "window_merkle_root": contract["windowmr"],
                "dblock_height_min": contract["dbheightmin"],
                "dblock_height_max": contract["dbheightmax"],
                "merkle_branch": contract["merklebranch"],
            }
        )
    dblock = {"keymr": answer["directoryblockkeymr"], "height": answer["directoryblockheight"]}
    return {"data": {"dblock": dblock, "anchors": items}}


def _owned(svc: Services, account: Principal, entry_hash: str) -> EntryRow | None:
    with svc.db.read() as session:
        return entry_reads.owned_entry(session, account, entry_hash)


def _foreign(svc: Services, account: Principal, entry_hash: str) -> bool:
    """Whether ``entry_hash`` is an entry another account wrote through this API."""
    with svc.db.read() as session:
        row = entry_reads.entry_by_hash(session, entry_hash)
    return row is not None and row.account_id != account.id


@router.get("/receipts/{entry_hash}", include_in_schema=False)
def get_receipt(
    entry_hash: str, account: AccountDep, svc: ServicesDep, reads: ReadsDep
) -> Response:
    row = _owned(svc, account, path_hash(entry_hash))
    if row is None:
        raise PageNotFound("No such entry")
    receipt = _require(reads).receipt(row.entry_hash)
    if receipt is None:
        raise PageNotFound("The entry is not in a directory block yet")
    return json_response(receipt_body(receipt))


@router.get("/anchors/{object_identifier}", include_in_schema=False)
def get_anchors(
    object_identifier: str, account: AccountDep, svc: ServicesDep, reads: ReadsDep
) -> Response:
    if object_identifier.isdecimal() and len(object_identifier) <= 10:
        height = int(object_identifier)
        if height > _MAX_HEIGHT:
            raise PageNotFound("No such directory block")
        answer = _require(reads).anchors(height=height)
    else:
        key = path_hash(object_identifier)
        if _foreign(svc, account, key):
            raise PageNotFound("No such object")
        answer = _require(reads).anchors(key=key)
    if answer is None:
        raise PageNotFound("No such directory block or object")
    return json_response(anchors_body(answer, sandbox=svc.settings.sandbox))
