"""What every part of the audit store shares: the engine, the clock, the batch statements,
and the one way a notarization moves forward (``_advance``).

``connectors.audit.store.AuditStore`` is this base plus one part per concern
(``NotarizationsPart``, ``ProofsPart``, ``RunsPart``); each part reads and writes its tables
through the helpers of ``connectors.audit.sql``, one transaction per public method.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from connectors.audit.models import Stage
from connectors.audit.paths import BatchTrees
from connectors.audit.sql import append_events, move_forward, notarizations_table, statements_for
from ledger.core.clock import Clock

__all__ = ["AuditStoreBase"]


class AuditStoreBase:
    """The audit store's engine and clock, and the stage move its parts share.

    Args:
        engine: an engine on the audit database (``connectors.audit.engine.build_engine``).
        clock: source of time (``now()``: Unix seconds); stored times are aware UTC.
    """

    def __init__(self, engine: Engine, *, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        self._statements = statements_for(engine.dialect.name)
        self._trees = BatchTrees()  # members' audit paths, rebuilt when read

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for migrations and reports)."""
        return self._engine

    @property
    def one_connection(self) -> bool:
        """True when every thread shares one database connection (an in-memory SQLite
        store): its users must not write from two threads at once."""
        return isinstance(self._engine.pool, StaticPool)

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
        """Move rows (id -> extra column values) forward to ``stage``; log one event each.

        Which rows move is decided by one conditional ``UPDATE ... RETURNING`` per chunk of
        ids, not by reading the stages first: when two processes move the same rows at
        once (two workers sweeping one collection), the second one's update finds them
        moved already (PostgreSQL re-checks the condition once the first commits), so each
        move is logged once. Reading first logged it twice.
        """
        now = self._now()
        groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
        for i, change in changes.items():
            groups.setdefault(tuple(sorted(change.items())), []).append(i)
        if len(groups) * 4 <= len(changes):
            # Few distinct values (a page of entries in one or two directory blocks): one
            # UPDATE per group sets them with the stage, instead of one row at a time.
            moved = sorted(
                i
                for key, ids in groups.items()
                for i in move_forward(conn, ids, stage, at=now, values=dict(key))
            )
            keys = []
        else:
            moved = move_forward(conn, list(changes), stage, at=now)
            keys = sorted({k for i in moved for k in changes[i]})
        if keys:  # the moved rows are this transaction's now: no stage condition needed
            n = notarizations_table.c
            stmt = update(notarizations_table).where(n.id == bindparam("p_id"))
            per_row: dict[str, Any] = {k: bindparam(f"p_{k}") for k in keys}
            params = [{"p_id": i} | {f"p_{k}": changes[i].get(k) for k in keys} for i in moved]
            conn.execute(stmt.values(**per_row), params)
        evts = [(i, stage, dict((details or {}).get(i) or {}) or None) for i in moved]
        append_events(conn, evts, at=now)
        return len(moved)
