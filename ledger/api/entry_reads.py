"""Reads of chains and entries: the one query layer behind the spec and the Connect routes.

Both faces of the API (``ledger.api.http.routes``, docs/rest-api.md §5, and
``ledger.api.connect``, docs/interop.md) answer the same reads of the same rows; each
only shapes the answer. Every function takes an open ``Session`` (the caller owns the
transaction) and, where a chain or entry is owned, the calling account (``HasId``):
nothing of another account is ever returned, and another account's chain or entry is
404 Page Not Found exactly like an unknown one. Identifiers are lowercase hex (the
routes check and lower the path segments first). An entry read comes with its failure
(``EntryRead.failure``) for a write given up, so the answer can be built after the
session closed.

Ordering: entries of a chain are numbered ``seq = 0, 1, 2, ...`` in acceptance order
without gaps (``ledger.api.outbox.intake``), so pages of an entry list are ranges of
the ``(chain_id, seq)`` index.

Search: a chain or entry matches when its external IDs contain every searched value, as
a multiset (order does not matter). Matches come oldest first; the spec's searches
(operations 4 and 10) take the oldest, Connect's page through them all.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from ledger.api.encoding import from_base64
from ledger.api.errors import PageNotFound
from ledger.api.models import Chain, EntryRow, ExternalIdTag, SubmitState
from ledger.api.outbox.failures import FailureInfo, failure_of
from ledger.api.store import HasId

__all__ = [
    "EntryRead",
    "HasId",
    "chain_entries",
    "chains_with_first",
    "entry_by_hash",
    "entry_hashes",
    "entry_rows",
    "first_entry",
    "get_chain",
    "get_entry",
    "last_entry",
    "list_chains",
    "oldest_chain_match",
    "oldest_entry_match",
    "owned_chain",
    "owned_entry",
    "search_chains",
    "search_entries",
]

#: Candidate rows read per query while matching external IDs.
_SCAN_PAGE = 200


@dataclass(frozen=True)
class EntryRead:
    """An entry row and, for a write given up (stage ``failed``), its failure."""

    row: EntryRow
    failure: FailureInfo | None


# -- chains -------------------------------------------------------------------------------


def get_chain(session: Session, account: HasId, chain_id: str) -> Chain | None:
    """The account's chain with this ID (lowercase hex), else ``None``."""
    chain = session.get(Chain, chain_id)
    return chain if chain is not None and chain.account_id == account.id else None


def owned_chain(session: Session, account: HasId, chain_id: str) -> Chain:
    """The account's chain with this ID (lowercase hex).

    Raises:
        PageNotFound: no such chain, or another account's.
    """
    chain = get_chain(session, account, chain_id)
    if chain is None:
        raise PageNotFound("No such chain")
    return chain


def list_chains(
    session: Session, account: HasId, *, limit: int, offset: int
) -> tuple[list[Chain], int]:
    """The account's chains, oldest first: ``(page, total count)``."""
    where = Chain.account_id == account.id
    total = session.scalar(select(func.count()).select_from(Chain).where(where)) or 0
    query = select(Chain).where(where).order_by(Chain.created_at, Chain.chain_id)
    return list(session.scalars(query.limit(limit).offset(offset))), total


def chains_with_first(
    session: Session, account: HasId, *, stages: Sequence[str], limit: int, offset: int
) -> tuple[list[tuple[Chain, EntryRow]], int]:
    """The account's chains with their first entries, oldest first: ``(page, total)``.

    ``stages`` (empty = all) keeps the chains whose first entry is at one of them.
    """
    where: list[ColumnElement[bool]] = [Chain.account_id == account.id]
    if stages:
        where.append(EntryRow.stage.in_(stages))
    on_first = EntryRow.entry_hash == Chain.first_entry_hash
    total = session.scalar(
        select(func.count()).select_from(Chain).join(EntryRow, on_first).where(*where)
    )
    query = select(Chain, EntryRow).join(EntryRow, on_first).where(*where)
    query = query.order_by(Chain.created_at, Chain.chain_id).limit(limit).offset(offset)
    return [(chain, first) for chain, first in session.execute(query).tuples()], total or 0


# -- entries of a chain -------------------------------------------------------------------


def first_entry(session: Session, chain: Chain) -> EntryRead:
    """The first entry of ``chain`` (made with the chain)."""
    return _read(session, _entry(session, chain.first_entry_hash))


def last_entry(session: Session, chain: Chain) -> EntryRead:
    """The most recently accepted entry of ``chain`` (``seq = entry_count - 1``)."""
    query = select(EntryRow).where(
        EntryRow.chain_id == chain.chain_id, EntryRow.seq == chain.entry_count - 1
    )
    row = session.scalar(query)
    return _read(session, row) if row is not None else first_entry(session, chain)


def get_entry(session: Session, chain: Chain, entry_hash: str) -> EntryRead:
    """The entry ``entry_hash`` (lowercase hex) of ``chain``.

    Raises:
        PageNotFound: no such entry in this chain.
    """
    row = entry_by_hash(session, entry_hash)
    if row is None or row.chain_id != chain.chain_id:
        raise PageNotFound("No such entry in this chain")
    return _read(session, row)


def entry_hashes(
    session: Session, chain: Chain, *, stages: Sequence[str], limit: int, offset: int
) -> tuple[list[str], int]:
    """Entry hashes of ``chain`` in sequence, ``stages`` (empty = all) kept: ``(page, total)``.

    Only the hashes are read (not the content), which the spec's entry list shows.
    """
    hashes, total = _entry_page(session, chain, EntryRow.entry_hash, stages, limit, offset)
    return [str(h) for h in hashes], total


def entry_rows(
    session: Session, chain: Chain, *, stages: Sequence[str], limit: int, offset: int
) -> tuple[list[EntryRow], int]:
    """Entries of ``chain`` in sequence, ``stages`` (empty = all) kept: ``(page, total)``."""
    return _entry_page(session, chain, EntryRow, stages, limit, offset)


def chain_entries(session: Session, chain: Chain) -> list[EntryRow]:
    """Every entry of ``chain`` in sequence, except writes given up as ``failed``."""
    query = (
        select(EntryRow)
        .where(EntryRow.chain_id == chain.chain_id, EntryRow.state != SubmitState.FAILED.value)
        .order_by(EntryRow.seq)
    )
    return list(session.scalars(query))


def _entry_page(
    session: Session,
    chain: Chain,
    what: Any,
    stages: Sequence[str],
    limit: int,
    offset: int,
) -> tuple[list[Any], int]:
    """A page of ``what`` (a row or a column) over the chain's entries, and the total.

    Without a stage filter the page is a range of the ``(chain_id, seq)`` index, so its
    cost does not grow with ``offset``, and the total is the chain's counter.
    """
    where: list[ColumnElement[bool]] = [EntryRow.chain_id == chain.chain_id]
    if stages:
        where.append(EntryRow.stage.in_(stages))
        total = session.scalar(select(func.count()).select_from(EntryRow).where(*where)) or 0
        query = select(what).where(*where).order_by(EntryRow.seq)
        return list(session.scalars(query.limit(limit).offset(offset))), total
    ranged = (*where, EntryRow.seq >= offset, EntryRow.seq < offset + limit)
    return list(session.scalars(select(what).where(*ranged).order_by(EntryRow.seq))), (
        chain.entry_count
    )


# -- entries by hash ----------------------------------------------------------------------


def entry_by_hash(session: Session, entry_hash: str) -> EntryRow | None:
    """The entry with this hash (lowercase hex), whoever wrote it, else ``None``."""
    return session.scalar(select(EntryRow).where(EntryRow.entry_hash == entry_hash))


def owned_entry(session: Session, account: HasId, entry_hash: str) -> EntryRow | None:
    """The account's entry with this hash (lowercase hex), else ``None``."""
    row = entry_by_hash(session, entry_hash)
    return row if row is not None and row.account_id == account.id else None


# -- search -------------------------------------------------------------------------------


def oldest_chain_match(session: Session, account: HasId, values: Sequence[bytes]) -> Chain | None:
    """The oldest of the account's chains whose external IDs contain all ``values``."""
    row = next(_matches(session, _chain_scope(account), values), None)
    return None if row is None else session.get(Chain, row.chain_id)


def oldest_entry_match(session: Session, chain: Chain, values: Sequence[bytes]) -> EntryRead | None:
    """The oldest entry of ``chain`` whose external IDs contain all ``values``."""
    row = next(_matches(session, _entry_scope(chain), values), None)
    return None if row is None else _read(session, row)


def search_chains(
    session: Session, account: HasId, values: Sequence[bytes], *, limit: int, offset: int
) -> tuple[list[tuple[Chain, EntryRow]], int]:
    """The account's chains whose external IDs contain all ``values`` with their first
    entries, oldest first: ``(page, total)``."""
    matches = list(_matches(session, _chain_scope(account), values))
    chosen = matches[offset : offset + limit]
    ids = [row.chain_id for row in chosen]
    chains = {c.chain_id: c for c in session.scalars(select(Chain).where(Chain.chain_id.in_(ids)))}
    return [(chains[row.chain_id], row) for row in chosen], len(matches)


def search_entries(
    session: Session, chain: Chain, values: Sequence[bytes], *, limit: int, offset: int
) -> tuple[list[EntryRow], int]:
    """Entries of ``chain`` whose external IDs contain all ``values``: ``(page, total)``."""
    found = list(_matches(session, _entry_scope(chain), values))
    return found[offset : offset + limit], len(found)


def _chain_scope(account: HasId) -> tuple[ColumnElement[bool], ...]:
    return (ExternalIdTag.account_id == account.id, ExternalIdTag.is_first.is_(True))


def _entry_scope(chain: Chain) -> tuple[ColumnElement[bool], ...]:
    return (ExternalIdTag.chain_id == chain.chain_id,)


def _matches(
    session: Session, scope: tuple[ColumnElement[bool], ...], values: Sequence[bytes]
) -> Iterator[EntryRow]:
    """Matching entries, oldest first, read lazily: candidates share the first value's hash
    (indexed), the full multiset match is checked here. No values match nothing."""
    if not values:
        return
    wanted = Counter(values)
    tagged = select(ExternalIdTag.entry_id).where(
        *scope, ExternalIdTag.value_hash == hashlib.sha256(values[0]).hexdigest()
    )
    query = select(EntryRow).where(EntryRow.id.in_(tagged)).order_by(EntryRow.id)
    start = 0
    while True:
        batch = list(session.scalars(query.limit(_SCAN_PAGE).offset(start)))
        for row in batch:
            if wanted <= Counter(from_base64(x, field="stored") for x in row.external_ids):
                yield row
        if len(batch) < _SCAN_PAGE:
            return
        start += _SCAN_PAGE


def _entry(session: Session, entry_hash: str) -> EntryRow:
    row = entry_by_hash(session, entry_hash)
    if row is None:
        raise LookupError(f"entry {entry_hash} missing")
    return row


def _read(session: Session, row: EntryRow) -> EntryRead:
    return EntryRead(row, failure_of(session, row))
