"""What the publishing API still owes the ledger, read from its database in one pass.

``read_backlog(db)`` counts the accepted writes not yet in a directory block, those of
them not yet paid for (commit not accepted by the node), the oldest such write, the writes
given up (``failed``) and the callbacks waiting for delivery. Each count is one indexed
aggregate (``ix_entries_stage``, ``ix_entries_state_next``, ``ix_callbacks_status_next``),
cheap enough for every scrape and readiness probe.

``needed_ec_min`` is a lower bound of the entry credits the unpaid writes will cost: one
per entry (the least an entry costs) and ten more per new chain (docs/formats.md §1.4);
an entry over 1 KiB costs more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sqlalchemy import Table, case, func, select

from ledger.api.db import Database
from ledger.api.models import CallbackRow, CallbackStatus, EntryRow, Stage, SubmitState

__all__ = ["Backlog", "read_backlog"]

#: A new chain costs its first entry's cost plus this many entry credits (§1.4).
CHAIN_EXTRA_EC = 10
_ENTRIES = cast(Table, EntryRow.__table__)
_CALLBACKS = cast(Table, CallbackRow.__table__)
_UNBLOCKED = (Stage.ACCEPTED.value, Stage.MULTI_AZ.value)


@dataclass(frozen=True)
class Backlog:
    """Counts of one read (module docstring); ``oldest_unblocked_at`` in Unix seconds.

    Attributes:
        queued_writes: accepted writes not yet in a directory block (not failed).
        queued_chains: of those, new chains.
        unpaid_writes: of those, writes whose commit the node has not accepted yet.
        unpaid_chains: of those, new chains.
        oldest_unblocked_at: acceptance time of the oldest queued write, None without any.
        failed_writes: writes given up after repeated errors.
        callbacks_pending: callbacks queued and not yet delivered or dropped.
    """

    queued_writes: int
    queued_chains: int
    unpaid_writes: int
    unpaid_chains: int
    oldest_unblocked_at: float | None
    failed_writes: int
    callbacks_pending: int

    @property
    def needed_ec_min(self) -> int:
        """The least entry credits the unpaid writes cost (module docstring)."""
        return self.unpaid_writes + CHAIN_EXTRA_EC * self.unpaid_chains

    def oldest_unblocked_age_s(self, now: float) -> float:
        """Seconds the oldest queued write has waited at ``now`` (0 without any)."""
        if self.oldest_unblocked_at is None:
            return 0.0
        return max(0.0, now - self.oldest_unblocked_at)


def read_backlog(db: Database) -> Backlog:
    """Read the backlog (module docstring) in one read transaction.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database cannot be read.
    """
    e, c = _ENTRIES.c, _CALLBACKS.c
    unpaid = e.state == SubmitState.PENDING.value
    queued = select(
        func.count(),
        func.coalesce(func.sum(case((e.is_first, 1), else_=0)), 0),
        func.coalesce(func.sum(case((unpaid, 1), else_=0)), 0),
        func.coalesce(func.sum(case((unpaid & e.is_first, 1), else_=0)), 0),
        func.min(e.created_at),
    ).where(e.stage.in_(_UNBLOCKED), e.state != SubmitState.FAILED.value)
    failed = select(func.count()).select_from(_ENTRIES).where(e.state == SubmitState.FAILED.value)
    pending = (
        select(func.count()).select_from(_CALLBACKS).where(c.status == CallbackStatus.PENDING.value)
    )
    with db.read() as session:
        count, chains, unpaid_count, unpaid_chains, oldest = session.execute(queued).one()
        failed_count = session.execute(failed).scalar_one()
        callbacks = session.execute(pending).scalar_one()
    return Backlog(
        queued_writes=int(count),
        queued_chains=int(chains),
        unpaid_writes=int(unpaid_count),
        unpaid_chains=int(unpaid_chains),
        oldest_unblocked_at=None if oldest is None else float(oldest),
        failed_writes=int(failed_count),
        callbacks_pending=int(callbacks),
    )
