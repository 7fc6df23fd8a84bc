"""Reads and writes of chains and entries (the record and outbox of the publishing API).

Every function takes an open ``Session``; the caller owns the transaction. The HTTP
write path records writes in batches through ``ledger.api.outbox.writer`` (group commit) and
``ledger.api.outbox.intake``; ``accept_chain``/``accept_entry`` here record one write through the
same ``intake.accept_batch`` in a caller's session (tools, tests, the benchmark).

Ordering: entries of a chain are numbered ``seq = 0, 1, 2, ...`` in acceptance order
(``seq`` 0 is the first entry, made with the chain), without gaps (``intake``), so
pages of the entry list are ranges of the ``(chain_id, seq)`` index.

Search (operations 4 and 10): a chain or entry matches when its external IDs contain
every searched value (as a multiset; order does not matter). Matches are ordered oldest
first; the first is returned; no match is ``None`` (rendered 404 Page Not Found).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ledger.api.encoding import from_base64
from ledger.api.models import Chain, EntryRow, ExternalIdTag
from ledger.api.outbox.callbacks import DEFAULT_CALLBACK_STAGES
from ledger.api.outbox.intake import (
    AccountRevoked,
    ChainExists,
    ChainNotFound,
    WriteKind,
    WriteOutcome,
    WriteRefused,
    WriteRequest,
    accept_batch,
)
from ledger.core.entry import Entry

__all__ = [
    "AccountRevoked",
    "Callback",
    "HasId",
    "ChainExists",
    "ChainNotFound",
    "accept_chain",
    "accept_entry",
    "entry_at",
    "first_entry",
    "get_chain",
    "get_entry",
    "last_entry",
    "list_chains",
    "list_entries",
    "search_chains",
    "search_entries",
    "write_request",
]

_SEARCH_PAGE = 200


class HasId(Protocol):
    """An account as the store needs it: its ``id`` (``Account`` row or ``auth.Principal``)."""

    @property
    def id(self) -> int: ...


@dataclass(frozen=True)
class Callback:
    """A requested callback: URL (already checked) and stages (``None``: the default)."""

    url: str
    stages: tuple[str, ...] | None = None

    def stage_list(self) -> list[str]:
        return list(DEFAULT_CALLBACK_STAGES if self.stages is None else dict.fromkeys(self.stages))


def write_request(
    kind: WriteKind, account: HasId, entry: Entry, callback: Callback | None
) -> WriteRequest:
    """The prepared write of ``entry`` by ``account`` (see ``intake.WriteRequest``)."""
    if callback is None:
        return WriteRequest.of(kind, account.id, entry)
    return WriteRequest.of(
        kind, account.id, entry, callback_url=callback.url, callback_stages=callback.stage_list()
    )


def accept_chain(
    session: Session, account: HasId, entry: Entry, *, callback: Callback | None, now: float
) -> tuple[Chain, EntryRow, bool]:
    """Record a new chain and its first entry ``entry`` (stage ``multi_az``, state ``pending``).

    One write through ``intake.accept_batch`` in the session's transaction (the HTTP path
    batches many through the group-commit writer instead). Returns
    ``(chain, first_entry, created)``; the same first entry from the same account again is
    idempotent (``created=False``).

    Raises:
        ChainExists: the chain ID exists with another owner or another first entry.
        AccountRevoked: the account is revoked.
    """
    outcome = _accept_one(session, write_request("chain", account, entry, callback), now)
    chain = session.get(Chain, outcome.chain_id, populate_existing=True)
    assert chain is not None
    return chain, _reloaded_entry(session, outcome.entry_hash), outcome.created


def accept_entry(
    session: Session, account: HasId, entry: Entry, *, callback: Callback | None, now: float
) -> tuple[EntryRow, bool]:
    """Append ``entry`` to its chain (stage ``multi_az``, state ``pending``).

    Returns ``(row, created)``; the same entry (same entry hash) posted again returns the
    existing row with ``created=False``.

    Raises:
        ChainNotFound: the chain does not exist or belongs to another account.
        AccountRevoked: the account is revoked.
    """
    outcome = _accept_one(session, write_request("entry", account, entry, callback), now)
    return _reloaded_entry(session, outcome.entry_hash), outcome.created


def _reloaded_entry(session: Session, entry_hash: str) -> EntryRow:
    query = select(EntryRow).where(EntryRow.entry_hash == entry_hash)
    return session.scalars(query.execution_options(populate_existing=True)).one()


def _accept_one(session: Session, request: WriteRequest, now: float) -> WriteOutcome:
    lock = session.get_bind().dialect.name != "sqlite"
    (result,) = accept_batch(session.connection(), [request], now=now, lock_chains=lock)
    if isinstance(result, WriteRefused):
        raise result
    return result


def _entry_by_hash(session: Session, entry_hash: str, *, required: bool = True) -> EntryRow:
    row = session.scalar(select(EntryRow).where(EntryRow.entry_hash == entry_hash))
    if row is None and required:
        raise LookupError(f"entry {entry_hash} missing")
    return row  # type: ignore[return-value]


def _value_hash(value: bytes) -> str:
    return hashlib.sha256(value).hexdigest()


def get_chain(session: Session, account: HasId, chain_id: str) -> Chain | None:
    """The account's chain with this ID (lowercase hex), else ``None``."""
    chain = session.get(Chain, chain_id)
    return chain if chain is not None and chain.account_id == account.id else None


def list_chains(
    session: Session, account: HasId, *, limit: int, offset: int
) -> tuple[list[Chain], int]:
    """The account's chains, oldest first: ``(page, total count)``."""
    where = Chain.account_id == account.id
    total = session.scalar(select(func.count()).select_from(Chain).where(where)) or 0
    query = select(Chain).where(where).order_by(Chain.created_at, Chain.chain_id)
    return list(session.scalars(query.limit(limit).offset(offset))), total


def list_entries(
    session: Session, chain: Chain, *, limit: int, offset: int, stage: str | None = None
) -> tuple[list[str], int]:
    """Entry hashes of ``chain`` in sequence (``seq`` ascending): ``(page, total count)``.

    ``seq`` runs 0..count-1 without gaps, so a page is a range of the ``(chain_id, seq)``
    index: its cost does not grow with ``offset``. Only the hashes are read (not the
    content), which is all operation 7 shows. With ``stage``, only the entries at that
    stage (``limit``/``offset`` then page over those, and the total counts them).
    """
    if stage is not None:
        where = (EntryRow.chain_id == chain.chain_id, EntryRow.stage == stage)
        total = session.scalar(select(func.count()).select_from(EntryRow).where(*where)) or 0
        staged = select(EntryRow.entry_hash).where(*where).order_by(EntryRow.seq)
        return list(session.scalars(staged.limit(limit).offset(offset))), total
    query = (
        select(EntryRow.entry_hash)
        .where(
            EntryRow.chain_id == chain.chain_id,
            EntryRow.seq >= offset,
            EntryRow.seq < offset + limit,
        )
        .order_by(EntryRow.seq)
    )
    return list(session.scalars(query)), chain.entry_count


def entry_at(session: Session, chain: Chain, seq: int) -> EntryRow | None:
    """The entry number ``seq`` of ``chain`` (0 = first), else ``None``."""
    query = select(EntryRow).where(EntryRow.chain_id == chain.chain_id, EntryRow.seq == seq)
    return session.scalar(query)


def first_entry(session: Session, chain: Chain) -> EntryRow:
    """The first entry of ``chain`` (made with the chain)."""
    return _entry_by_hash(session, chain.first_entry_hash)


def last_entry(session: Session, chain: Chain) -> EntryRow:
    """The most recent entry of ``chain`` (highest ``seq``, ``entry_count - 1``)."""
    row = entry_at(session, chain, chain.entry_count - 1)
    return row if row is not None else first_entry(session, chain)


def get_entry(session: Session, chain: Chain, entry_hash: str) -> EntryRow | None:
    """The entry with this hash (lowercase hex) in ``chain``, else ``None``."""
    row = session.scalar(select(EntryRow).where(EntryRow.entry_hash == entry_hash))
    return row if row is not None and row.chain_id == chain.chain_id else None


def search_chains(session: Session, account: HasId, values: Sequence[bytes]) -> Chain | None:
    """The oldest of the account's chains whose external IDs contain all ``values``."""
    scope = (ExternalIdTag.account_id == account.id, ExternalIdTag.is_first.is_(True))
    row = _search(session, scope, values)
    return None if row is None else session.get(Chain, row.chain_id)


def search_entries(session: Session, chain: Chain, values: Sequence[bytes]) -> EntryRow | None:
    """The oldest entry of ``chain`` whose external IDs contain all ``values``."""
    return _search(session, (ExternalIdTag.chain_id == chain.chain_id,), values)


def _search(
    session: Session, scope: tuple[object, ...], values: Sequence[bytes]
) -> EntryRow | None:
    """Candidates share the first value's hash (indexed); the full match is checked here."""
    if not values:
        return None
    wanted = Counter(values)
    tagged = select(ExternalIdTag.entry_id).where(
        *scope,  # type: ignore[arg-type]
        ExternalIdTag.value_hash == _value_hash(values[0]),
    )
    query = select(EntryRow).where(EntryRow.id.in_(tagged)).order_by(EntryRow.id)
    offset = 0
    while True:
        page = list(session.scalars(query.limit(_SEARCH_PAGE).offset(offset)))
        for row in page:
            have = Counter(from_base64(x, field="stored") for x in row.external_ids)
            if wanted <= have:
                return row
        if len(page) < _SEARCH_PAGE:
            return None
        offset += _SEARCH_PAGE
