"""Reads and writes of chains and entries (the record and outbox of the publishing API).

Every function takes an open ``Session``; the caller owns the transaction. Writes are
made in ``Database.write()`` so that they are durable before HTTP 202 is answered.

Ordering: entries of a chain are numbered ``seq = 0, 1, 2, ...`` in acceptance order
(``seq`` 0 is the first entry, made with the chain). The number comes from
``chains.entry_count``, incremented by an ``UPDATE`` that locks the chain row (PostgreSQL)
or runs under the database write lock (SQLite), so concurrent appends never collide.

Search (operations 4 and 10): a chain or entry matches when its external IDs contain
every searched value (as a multiset; order does not matter). Matches are ordered oldest
first; the first is returned; no match is ``None`` (rendered 404 Page Not Found).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ledger.api.callbacks import DEFAULT_CALLBACK_STAGES, enqueue_callback
from ledger.api.encoding import from_base64, to_base64
from ledger.api.models import Account, Chain, EntryRow, ExternalIdTag, Stage, SubmitState
from ledger.core.entry import Entry

__all__ = [
    "Callback",
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
]

_SEARCH_PAGE = 200


class ChainExists(Exception):
    """The chain ID of a new chain is taken (by another account or another first entry)."""

    def __init__(self, chain_id: str) -> None:
        super().__init__(f"chain {chain_id} already exists")
        self.chain_id = chain_id


class ChainNotFound(LookupError):
    """No chain with this ID belongs to the calling account."""

    def __init__(self, chain_id: str) -> None:
        super().__init__(f"chain {chain_id} does not exist")
        self.chain_id = chain_id


@dataclass(frozen=True)
class Callback:
    """A requested callback: URL (already checked) and stages (``None``: the default)."""

    url: str
    stages: tuple[str, ...] | None = None

    def stage_list(self) -> list[str]:
        return list(DEFAULT_CALLBACK_STAGES if self.stages is None else dict.fromkeys(self.stages))


def accept_chain(
    session: Session, account: Account, entry: Entry, *, callback: Callback | None, now: float
) -> tuple[Chain, EntryRow, bool]:
    """Record a new chain and its first entry ``entry`` (stage ``multi_az``, state ``pending``).

    Returns ``(chain, first_entry, created)``. Posting the same first entry again from the
    same account is idempotent: the existing rows with ``created=False``.

    Raises:
        ChainExists: the chain ID exists with another owner or another first entry.
    """
    chain_id, entry_hash = entry.chain_id.hex(), entry.hash().hex()
    existing = session.get(Chain, chain_id)
    if existing is not None:
        if existing.account_id != account.id or existing.first_entry_hash != entry_hash:
            raise ChainExists(chain_id)
        return existing, _entry_by_hash(session, entry_hash), False
    ext_b64 = [to_base64(x) for x in entry.external_ids]
    chain = Chain(
        chain_id=chain_id,
        account_id=account.id,
        external_ids=ext_b64,
        created_at=now,
        first_entry_hash=entry_hash,
        entry_count=1,
    )
    session.add(chain)
    session.flush()
    row = _insert_entry(session, account, entry, seq=0, callback=callback, now=now)
    return chain, row, True


def accept_entry(
    session: Session, account: Account, entry: Entry, *, callback: Callback | None, now: float
) -> tuple[EntryRow, bool]:
    """Append ``entry`` to its chain (stage ``multi_az``, state ``pending``).

    Returns ``(row, created)``; the same entry (same entry hash) posted again returns the
    existing row with ``created=False``.

    Raises:
        ChainNotFound: the chain does not exist or belongs to another account.
    """
    chain_id = entry.chain_id.hex()
    chain = session.get(Chain, chain_id)
    if chain is None or chain.account_id != account.id:
        raise ChainNotFound(chain_id)
    existing = _entry_by_hash(session, entry.hash().hex(), required=False)
    if existing is not None:
        return existing, False
    counter = Chain.entry_count
    session.execute(
        update(Chain).where(Chain.chain_id == chain_id).values(entry_count=counter + 1),
        execution_options={"synchronize_session": False},
    )
    seq = session.scalar(select(Chain.entry_count).where(Chain.chain_id == chain_id)) - 1
    return _insert_entry(session, account, entry, seq=seq, callback=callback, now=now), True


def _insert_entry(
    session: Session,
    account: Account,
    entry: Entry,
    *,
    seq: int,
    callback: Callback | None,
    now: float,
) -> EntryRow:
    row = EntryRow(
        entry_hash=entry.hash().hex(),
        chain_id=entry.chain_id.hex(),
        seq=seq,
        account_id=account.id,
        is_first=seq == 0,
        external_ids=[to_base64(x) for x in entry.external_ids],
        content=entry.content,
        callback_url=callback.url if callback else None,
        callback_stages=callback.stage_list() if callback else None,
        stage=Stage.MULTI_AZ.value,
        state=SubmitState.PENDING.value,
        created_at=now,
        multi_az_at=now,
        next_attempt_at=now,
        attempts=0,
    )
    session.add(row)
    session.flush()
    for value in entry.external_ids:
        session.add(
            ExternalIdTag(
                entry_id=row.id,
                chain_id=row.chain_id,
                account_id=account.id,
                is_first=seq == 0,
                value_hash=_value_hash(value),
            )
        )
    enqueue_callback(session, row, Stage.MULTI_AZ, {"entry_hash": row.entry_hash}, now=now)
    return row


def _entry_by_hash(session: Session, entry_hash: str, *, required: bool = True) -> EntryRow:
    row = session.scalar(select(EntryRow).where(EntryRow.entry_hash == entry_hash))
    if row is None and required:
        raise LookupError(f"entry {entry_hash} missing")
    return row  # type: ignore[return-value]


def _value_hash(value: bytes) -> str:
    return hashlib.sha256(value).hexdigest()


def get_chain(session: Session, account: Account, chain_id: str) -> Chain | None:
    """The account's chain with this ID (lowercase hex), else ``None``."""
    chain = session.get(Chain, chain_id)
    return chain if chain is not None and chain.account_id == account.id else None


def list_chains(
    session: Session, account: Account, *, limit: int, offset: int
) -> tuple[list[Chain], int]:
    """The account's chains, oldest first: ``(page, total count)``."""
    where = Chain.account_id == account.id
    total = session.scalar(select(func.count()).select_from(Chain).where(where)) or 0
    query = select(Chain).where(where).order_by(Chain.created_at, Chain.chain_id)
    return list(session.scalars(query.limit(limit).offset(offset))), total


def list_entries(
    session: Session, chain: Chain, *, limit: int, offset: int
) -> tuple[list[EntryRow], int]:
    """Entries of ``chain`` in sequence (``seq`` ascending): ``(page, total count)``."""
    query = (
        select(EntryRow)
        .where(EntryRow.chain_id == chain.chain_id)
        .order_by(EntryRow.seq)
        .limit(limit)
        .offset(offset)
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
    """The most recent entry of ``chain`` (highest ``seq``)."""
    query = (
        select(EntryRow)
        .where(EntryRow.chain_id == chain.chain_id)
        .order_by(EntryRow.seq.desc())
        .limit(1)
    )
    row = session.scalar(query)
    return row if row is not None else first_entry(session, chain)


def get_entry(session: Session, chain: Chain, entry_hash: str) -> EntryRow | None:
    """The entry with this hash (lowercase hex) in ``chain``, else ``None``."""
    row = session.scalar(select(EntryRow).where(EntryRow.entry_hash == entry_hash))
    return row if row is not None and row.chain_id == chain.chain_id else None


def search_chains(session: Session, account: Account, values: Sequence[bytes]) -> Chain | None:
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
