"""What every part of the audit store shares: the engine, the clock, the batch statements,
and the one way a notarization moves forward (``_advance``).

``connectors.audit_store.AuditStore`` is this base plus one part per concern
(``NotarizationsPart``, ``ProofsPart``, ``RunsPart``); each part reads and writes its tables
through the helpers of ``connectors.audit_sql``, one transaction per public method.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, or_, update
from sqlalchemy.engine import Connection, Engine

from connectors.audit_models import STAGE_ORDER, Stage
from connectors.audit_sql import (
    STAGE_TIME_COLUMN,
    append_events,
    movable_ids,
    notarizations_table,
    statements_for,
)
from ledger.core.clock import Clock

__all__ = ["AuditStoreBase"]


class AuditStoreBase:
    """The audit store's engine and clock, and the stage move its parts share.

    Args:
        engine: an engine on the audit database (``connectors.audit_engine.build_engine``).
        clock: source of time (``now()``: Unix seconds); stored times are aware UTC.
    """

    def __init__(self, engine: Engine, *, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        self._statements = statements_for(engine.dialect.name)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for migrations and reports)."""
        return self._engine

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.now(), tz=UTC)

    def _advance(
        self,
        conn: Connection,
        changes: Mapping[int, Mapping[str, Any]],
        stage: Stage,
        *,
        details: Mapping[int, Mapping[str, Any] | None] | None = None,
    ) -> int:
        """Move rows (id -> extra column values) forward to ``stage``; log one event each."""
        now = self._now()
        movable = movable_ids(conn, list(changes), stage)
        if not movable:
            return 0
        keys = sorted({k for values in changes.values() for k in values})
        fixed = {"stage": stage, "updated_at": now, STAGE_TIME_COLUMN[stage]: now, "error": None}
        per_row: dict[str, Any] = {k: bindparam(f"p_{k}") for k in keys}
        earlier = STAGE_ORDER[: STAGE_ORDER.index(stage)]
        stmt = update(notarizations_table).where(
            notarizations_table.c.id == bindparam("p_id"),
            or_(*[notarizations_table.c.stage == s for s in earlier]),  # no IN: executemany
        )
        params = [{"p_id": i} | {f"p_{k}": changes[i].get(k) for k in keys} for i in movable]
        conn.execute(stmt.values(**fixed, **per_row), params)
        evts = [(i, stage, dict((details or {}).get(i) or {}) or None) for i in movable]
        append_events(conn, evts, at=now)
        return len(movable)
