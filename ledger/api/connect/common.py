"""Plumbing shared by the Connect routes: JSON answers, paging, owned chains, ledger reads."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ledger.api import entry_reads
from ledger.api.auth import Principal
from ledger.api.connect.ledger_reads import LedgerReads
from ledger.api.connect.shapes import spec_stages
from ledger.api.errors import BadRequest, TemporarilyUnavailable
from ledger.api.http.deps import path_hash
from ledger.api.http.openapi import MAX_OFFSET
from ledger.api.models import Chain, EntryRow
from ledger.api.services import Services

__all__ = [
    "DEFAULT_LIMIT",
    "eblock_keymr",
    "json_response",
    "ledger_reads",
    "owned_chain",
    "paging",
    "stage_filter",
]

#: Items per page when ``limit`` is not sent (the hosted service's default).
DEFAULT_LIMIT = 15


def json_response(data: Any, status_code: int = 200) -> Response:
    """``data`` as an ``application/json`` answer (orjson)."""
    return Response(orjson.dumps(data), status_code=status_code, media_type="application/json")


def paging(svc: Services, limit: int | None, offset: int | None) -> tuple[int, int]:
    """``(limit, offset)`` of a list request; 400 Bad Request when out of range."""
    size = DEFAULT_LIMIT if limit is None else limit
    start = 0 if offset is None else offset
    if not 1 <= size <= svc.settings.page_size_max:
        raise BadRequest(f"limit must be between 1 and {svc.settings.page_size_max}")
    if not 0 <= start <= MAX_OFFSET:
        raise BadRequest(f"offset must be between 0 and {MAX_OFFSET}")
    return size, start


def stage_filter(stages: str | None) -> list[str]:
    """The ``stages`` query parameter (comma-separated, hosted names) as our stage names."""
    if not stages:
        return []
    return spec_stages([s.strip() for s in stages.split(",") if s.strip()], "stages")


def owned_chain(session: Session, account: Principal, chain_id: str) -> Chain:
    """The account's chain; 404 Page Not Found for an unknown or foreign one."""
    return entry_reads.owned_chain(session, account, path_hash(chain_id))


def ledger_reads(request: Request) -> LedgerReads | None:
    """The node reader of this app (``None`` when the API runs without a node)."""
    return getattr(request.app.state, "ledger_reads", None)


def eblock_keymr(reads: LedgerReads | None, row: EntryRow) -> str | None:
    """Key Merkle root of the entry block holding ``row``, from the node's receipt.

    ``None`` before the entry is in a directory block, without a node, or while the node
    cannot be asked (the rest of the answer does not depend on it).
    """
    if reads is None or row.dblock_height is None:
        return None
    try:
        receipt = reads.receipt(row.entry_hash)
    except TemporarilyUnavailable:
        return None
    return None if receipt is None else str(receipt["entryblockkeymr"])
