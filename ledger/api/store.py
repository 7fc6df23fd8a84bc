"""Writes of chains and entries one at a time (the record and outbox of the publishing API).

Every function takes an open ``Session``; the caller owns the transaction. The HTTP
write path records writes in batches through ``ledger.api.outbox.writer`` (group commit) and
``ledger.api.outbox.intake``; ``accept_chain``/``accept_entry`` here record one write through the
same ``intake.accept_batch`` in a caller's session (tools, tests, the benchmark).

Reads of chains and entries are ``ledger.api.entry_reads``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from ledger.api.models import Chain, EntryRow
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
    "write_request",
]


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
