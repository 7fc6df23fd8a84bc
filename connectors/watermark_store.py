"""Where each table source stopped reading, kept in the audit store (``table_watermarks``).

The flow saves a position only after the page ending there is recorded in the audit store,
so a run killed half-way re-reads its last page (those rows are then skipped as already
notarized) and never skips one. The table is part of the audit schema
(``connectors.audit.models.TableWatermark``, created by the Alembic migrations that
``AuditStore`` runs when it opens), so the engine given here must be an opened audit
store's (``AuditStore.engine``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Table, and_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from connectors.audit.models import AUDIT_METADATA
from connectors.table_position import Position
from ledger.core.clock import Clock, SystemClock

__all__ = ["WatermarkStore"]

table_watermarks: Table = AUDIT_METADATA.tables["table_watermarks"]


class WatermarkStore:
    """Where each (source, collection) stopped reading, in ``table_watermarks``.

    A position saved for other watermark or key columns does not apply: ``load`` returns
    ``None`` and reading starts over (re-reading is harmless: known rows are skipped by
    hash).

    Args:
        engine: the audit store's engine (``AuditStore.engine``; its schema migrated).
        clock: source of ``updated_at`` (Unix seconds); the wall clock by default.
    """

    def __init__(self, engine: Engine, *, clock: Clock | None = None) -> None:
        self._engine = engine
        self._clock: Clock = clock or SystemClock()

    def load(
        self, source: str, collection: str, *, watermark_column: str, key_columns: Sequence[str]
    ) -> Position | None:
        """The saved position, or ``None`` (nothing saved, or saved for other columns)."""
        t = table_watermarks.c
        query = select(t.watermark_column, t.key_columns, t.position).where(
            t.source == source, t.collection == collection
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None or row.watermark_column != watermark_column:
            return None
        if list(row.key_columns) != list(key_columns):
            return None
        return Position.from_json(row.position)

    def save(
        self,
        source: str,
        collection: str,
        position: Position,
        *,
        watermark_column: str,
        key_columns: Sequence[str],
        rows_read: int = 0,
    ) -> None:
        """Store ``position`` (replacing the previous one) and add ``rows_read`` to the count."""
        t = table_watermarks.c
        now = datetime.fromtimestamp(self._clock.now(), tz=UTC)
        values = {
            "watermark_column": watermark_column,
            "key_columns": list(key_columns),
            "position": position.to_json(),
            "updated_at": now,
        }
        where = and_(t.source == source, t.collection == collection)
        stmt = (
            update(table_watermarks)
            .where(where)
            .values(rows_read=t.rows_read + rows_read, **values)
        )
        new_row = table_watermarks.insert().values(
            source=source, collection=collection, rows_read=rows_read, **values
        )
        for attempt in range(2):
            try:
                with self._engine.begin() as conn:
                    if not conn.execute(stmt).rowcount:
                        conn.execute(new_row)
                return
            except IntegrityError:  # another run inserted the row first: update it
                if attempt:
                    raise

    def reset(self, source: str, collection: str) -> bool:
        """Forget the position, so the next run reads from the start; True if one was kept."""
        t = table_watermarks.c
        stmt = table_watermarks.delete().where(t.source == source, t.collection == collection)
        with self._engine.begin() as conn:
            return bool(conn.execute(stmt).rowcount)
