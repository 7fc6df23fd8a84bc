"""Following anchors: entries of anchored directory blocks move to ``anchor`` (worker step 3).

For directory block heights holding entries at stage ``ledger`` (lowest first, at most
``batch_size``), the node's ``anchors`` answer gives the proof-of-work anchor; those
entries move to ``anchor`` with ``anchor_block_hash``, and the ``anchor`` callback is
queued in the same transaction. Look-ups are at least ``poll_interval_s`` apart.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import Table, select

from ledger.api.models import EntryRow, Stage
from ledger.api.outbox.gateway import AnchorInfo, LedgerGateway
from ledger.api.outbox.stage_moves import StageMoves

__all__ = ["AnchorFollower"]

_ENTRIES = cast(Table, EntryRow.__table__)


class AnchorFollower:
    """Moves ``ledger`` entries whose directory block is anchored to ``anchor``.

    Args:
        moves: the database, clock (``anchor_at``, callbacks, the poll interval) and
            observer of the moves.
        gateway: node access.
        batch_size: most directory block heights looked up by one ``follow``.
        poll_interval_s: least time between two look-ups, seconds.

    Raises (``follow``): ``GatewayUnavailable`` when the node cannot be reached.
    """

    def __init__(
        self, moves: StageMoves, gateway: LedgerGateway, *, batch_size: int, poll_interval_s: float
    ) -> None:
        self._moves, self._gateway = moves, gateway
        self._db, self._clock = moves.db, moves.clock
        self._batch, self._interval_s = batch_size, poll_interval_s
        self._last_poll: float | None = None

    def follow(self) -> int:
        """Move entries of anchored directory blocks to ``anchor``; returns rows moved."""
        now = self._clock.now()
        if self._last_poll is not None and now - self._last_poll < self._interval_s:
            return 0
        query = (
            select(EntryRow.dblock_height)
            .where(EntryRow.stage == Stage.LEDGER.value)
            .distinct()
            .order_by(EntryRow.dblock_height)
            .limit(self._batch)
        )
        with self._db.read() as session:
            heights = [h for h in session.scalars(query) if h is not None]
        if not heights:
            return 0
        self._last_poll = now
        infos = [i for i in self._gateway.anchors(heights) if i is not None]
        return sum(self._anchor(info) for info in infos)

    def _anchor(self, info: AnchorInfo) -> int:
        now, e = self._clock.now(), _ENTRIES.c
        where = (e.dblock_height == info.height, e.stage == Stage.LEDGER.value)
        values = {"anchor_at": now, "anchor_block_hash": info.block_hash}
        params = {"anchor_block_hash": info.block_hash}
        with self._db.transaction() as connection:
            return self._moves.move(connection, where, Stage.ANCHOR, values, params, now=now)
