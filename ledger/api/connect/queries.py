"""Reads behind the Connect shapes: paged searches, stage filters, an account's entry.

Every function takes an open ``Session`` (the caller owns the transaction) and an account
(``store.HasId``); nothing of another account is ever returned. Matching is the spec
routes' (``ledger.api.store``): a chain or entry matches when its external IDs contain
every searched value, as a multiset. Unlike the spec's searches (the oldest match), these
return every match, oldest first, a page at a time.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from ledger.api.encoding import from_base64
from ledger.api.models import Chain, EntryRow, ExternalIdTag, SubmitState
from ledger.api.store import HasId

__all__ = [
    "chain_entries",
    "entry_by_hash",
    "list_chains",
    "list_entries",
    "owned_entry",
    "search_chains",
    "search_entries",
]

_SCAN_PAGE = 500


def list_chains(
    session: Session,
    account: HasId,
    *,
    stages: Sequence[str],
    limit: int,
    offset: int,
) -> tuple[list[tuple[Chain, EntryRow]], int]:
    """The account's chains with their first entries, oldest first: ``(page, total)``.

    ``stages`` (ours; empty = all) keeps the chains whose first entry is at one of them.
    """
    where: list[ColumnElement[bool]] = [Chain.account_id == account.id]
    if stages:
        where.append(EntryRow.stage.in_(stages))
    joined = select(Chain, EntryRow).join(EntryRow, EntryRow.entry_hash == Chain.first_entry_hash)
    total = session.scalar(
        select(func.count())
        .select_from(Chain)
        .join(EntryRow, EntryRow.entry_hash == Chain.first_entry_hash)
        .where(*where)
    )
    query = joined.where(*where).order_by(Chain.created_at, Chain.chain_id)
    rows = session.execute(query.limit(limit).offset(offset)).tuples().all()
    return [(chain, first) for chain, first in rows], total or 0


def list_entries(
    session: Session, chain: Chain, *, stages: Sequence[str], limit: int, offset: int
) -> tuple[list[EntryRow], int]:
    """Entries of ``chain`` in sequence, ``stages`` (ours; empty = all) kept: ``(page, total)``."""
    where: list[ColumnElement[bool]] = [EntryRow.chain_id == chain.chain_id]
    if stages:
        where.append(EntryRow.stage.in_(stages))
        total = session.scalar(select(func.count()).select_from(EntryRow).where(*where)) or 0
        query = select(EntryRow).where(*where).order_by(EntryRow.seq)
        return list(session.scalars(query.limit(limit).offset(offset))), total
    ranged = (*where, EntryRow.seq >= offset, EntryRow.seq < offset + limit)  # index range
    query = select(EntryRow).where(*ranged).order_by(EntryRow.seq)
    return list(session.scalars(query)), chain.entry_count


def chain_entries(session: Session, chain: Chain) -> list[EntryRow]:
    """Every entry of ``chain`` in sequence, except writes given up as ``failed``."""
    query = (
        select(EntryRow)
        .where(EntryRow.chain_id == chain.chain_id, EntryRow.state != SubmitState.FAILED.value)
        .order_by(EntryRow.seq)
    )
    return list(session.scalars(query))


def entry_by_hash(session: Session, entry_hash: str) -> EntryRow | None:
    """The entry with this hash (lowercase hex), whoever wrote it, else ``None``."""
    return session.scalar(select(EntryRow).where(EntryRow.entry_hash == entry_hash))


def owned_entry(session: Session, account: HasId, entry_hash: str) -> EntryRow | None:
    """The account's entry with this hash (lowercase hex), else ``None``."""
    row = entry_by_hash(session, entry_hash)
    return row if row is not None and row.account_id == account.id else None


def search_chains(
    session: Session, account: HasId, values: Sequence[bytes], *, limit: int, offset: int
) -> tuple[list[tuple[Chain, EntryRow]], int]:
    """The account's chains whose external IDs contain all ``values``: ``(page, total)``."""
    scope = (ExternalIdTag.account_id == account.id, ExternalIdTag.is_first.is_(True))
    matches = _matches(session, scope, values)
    chosen = matches[offset : offset + limit]
    chains = {c.chain_id: c for c in _chains(session, [row.chain_id for row in chosen])}
    return [(chains[row.chain_id], row) for row in chosen], len(matches)


def search_entries(
    session: Session, chain: Chain, values: Sequence[bytes], *, limit: int, offset: int
) -> tuple[list[EntryRow], int]:
    """Entries of ``chain`` whose external IDs contain all ``values``: ``(page, total)``."""
    matches = _matches(session, (ExternalIdTag.chain_id == chain.chain_id,), values)
    return matches[offset : offset + limit], len(matches)


def _chains(session: Session, chain_ids: list[str]) -> list[Chain]:
    if not chain_ids:
        return []
    return list(session.scalars(select(Chain).where(Chain.chain_id.in_(chain_ids))))


def _matches(
    session: Session, scope: tuple[ColumnElement[bool], ...], values: Sequence[bytes]
) -> list[EntryRow]:
    """Every matching entry, oldest first: candidates share the first value's hash (indexed)."""
    if not values:
        return []
    wanted = Counter(values)
    tagged = select(ExternalIdTag.entry_id).where(
        *scope, ExternalIdTag.value_hash == hashlib.sha256(values[0]).hexdigest()
    )
    query = select(EntryRow).where(EntryRow.id.in_(tagged)).order_by(EntryRow.id)
    found: list[EntryRow] = []
    start = 0
    while True:
        batch = list(session.scalars(query.limit(_SCAN_PAGE).offset(start)))
        for row in batch:
            if wanted <= Counter(from_base64(x, field="stored") for x in row.external_ids):
                found.append(row)
        if len(batch) < _SCAN_PAGE:
            return found
        start += _SCAN_PAGE
