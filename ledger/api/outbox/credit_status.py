"""The paying address and the write queue, as health checks and metrics read them.

``CreditStatus`` is a frozen snapshot: the credit gate's state (``ledger.api.outbox.credit_gate``)
plus two figures of the API database, read when asked. ``Services.credit_status()`` builds
one; nothing here changes anything. Health and metrics endpoints read it, e.g. readiness
``funded``, a gauge per numeric field.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.api.db import Database
from ledger.api.outbox.backlog import read_backlog
from ledger.api.outbox.credit_gate import CreditGate

__all__ = ["CreditStatus", "read_credit_status"]


@dataclass(frozen=True)
class CreditStatus:
    """The paying entry credit address and the writes waiting on it.

    Attributes:
        ec_address: the paying address (``EC...``).
        funded: False while accepted writes are held for credits (the address ran dry).
        balance_ec: the last balance seen, credits (``None`` before the first look-up).
        checked_at: Unix seconds of that look-up (or of the node's refusal that gave it).
        dry_since: Unix seconds when the address ran dry; ``None`` while funded.
        dry_for_s: seconds since ``dry_since`` (0.0 while funded).
        queued_writes: accepted writes not committed yet (state ``pending``): what a dry
            address holds.
        oldest_unblocked_age_s: seconds since the oldest accepted write that is not in a
            directory block yet (stage ``multi_az``) was accepted; ``None`` when none waits.
    """

    ec_address: str
    funded: bool
    balance_ec: int | None
    checked_at: float | None
    dry_since: float | None
    dry_for_s: float
    queued_writes: int
    oldest_unblocked_age_s: float | None


def read_credit_status(gate: CreditGate, db: Database, *, now: float) -> CreditStatus:
    """The status now (``now``: Unix seconds of the injected clock): the gate's state and
    the queue figures of ``ledger.api.outbox.backlog`` (one read); safe from any thread."""
    state = gate.snapshot()
    backlog = read_backlog(db)
    oldest = backlog.oldest_unblocked_at
    return CreditStatus(
        ec_address=state.ec_address,
        funded=state.funded,
        balance_ec=state.balance_ec,
        checked_at=state.checked_at,
        dry_since=state.dry_since,
        dry_for_s=0.0 if state.dry_since is None else max(0.0, now - state.dry_since),
        queued_writes=backlog.unpaid_writes,
        oldest_unblocked_age_s=None if oldest is None else backlog.oldest_unblocked_age_s(now),
    )
