"""Moving accepted writes between stages, as the block and anchor followers do.

``StageMoves.move`` changes the ``entries`` rows and queues their stage callbacks
(``ledger.api.outbox.callbacks``) in the caller's transaction; a ``StageMoves`` carries
what a follower needs for it (the API database, the clock, and who is told of each move:
the stage latency metrics, ``StageObserver``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Table, insert, update

from ledger.api.db import Database
from ledger.api.models import CallbackRow, EntryRow, Stage
from ledger.api.outbox.callbacks import callback_values
from ledger.core.clock import Clock

__all__ = ["StageMoves", "StageObserver"]

StageObserver = Callable[[Stage, Sequence[float]], None]
"""``observer(stage, latencies_s)``: rows moved to ``stage``, each with the seconds from its
acceptance to the move (the API's stage latency metrics)."""

_ENTRIES = cast(Table, EntryRow.__table__)
_CALLBACKS = cast(Table, CallbackRow.__table__)


@dataclass(frozen=True)
class StageMoves:
    """What a follower moves rows with: the API database, the clock and the observer.

    Args:
        db: the API database.
        clock: time source (the stage times, callbacks, poll intervals).
        on_moved: told of the rows each move changes (``StageObserver``), if anyone.
    """

    db: Database
    clock: Clock
    on_moved: StageObserver | None = None

    def move(
        self,
        connection: Connection,
        where: Sequence[Any],
        stage: Stage,
        values: dict[str, Any],
        params: dict[str, str],
        *,
        now: float,
    ) -> int:
        """Move the ``entries`` rows matching ``where`` to ``stage`` (setting ``values`` too)
        and queue the ``stage`` callback of each moved row that asked for one, in the
        caller's transaction; then tell ``on_moved``. Returns the number of rows moved.

        One ``UPDATE ... RETURNING`` reads what the callbacks and the stage latencies need
        of the rows it changes: a ``SELECT`` of the same rows before it (for the latencies,
        for the callbacks) cost as much as the ``UPDATE`` itself, for every block followed.

        Args:
            where: SQLAlchemy conditions on the ``entries`` table.
            values: the other columns to set (``stage`` is set from ``stage``).
            params: the stage's callback parameters without ``stage``.
            now: Unix seconds, the callbacks' ``created_at`` and first ``next_attempt_at``.
        """
        e = _ENTRIES.c
        statement = (
            update(_ENTRIES)
            .where(*where)
            .values(stage=stage.value, **values)
            .returning(e.id, e.created_at, e.callback_url, e.callback_stages)
        )
        moved = connection.execute(statement).all()
        queued = [
            row_values
            for row in moved
            if row.callback_url is not None
            and (row_values := callback_values(row, stage, params, now=now)) is not None
        ]
        if queued:
            connection.execute(insert(_CALLBACKS), queued)
        if self.on_moved is not None:
            self.on_moved(stage, [now - row.created_at for row in moved])
        return len(moved)
