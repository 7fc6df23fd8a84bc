"""Following directory blocks: accepted writes move to stage ``ledger`` (worker step 1).

``height()`` gives the newest directory block; each height after the ``last_height`` kept
in ``service_state`` is fetched (``dblock-by-height``), the entry blocks of chains with
entries still at stage ``multi_az`` are read (``entry-block``), and every such entry found
moves to stage ``ledger`` with ``dblock_keymr`` and ``dblock_height``; ``last_height``
advances in the same transaction, so a restart resumes after the last block handled. On
the very first pass ``last_height`` starts at the current height (every later reveal
lands in a later block); the worker submits nothing before ``last_height`` is set, so no
reveal can land in a block it never reads (for instance when the node is down at the
first pass). Each move queues the ``ledger`` callback in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from sqlalchemy import Connection, Table, insert, select, update

from ledger.api.models import EntryRow, ServiceState, Stage, SubmitState
from ledger.api.outbox.gateway import DirectoryBlockInfo, LedgerGateway, RpcFailure
from ledger.api.outbox.stage_moves import StageMoves

__all__ = ["LAST_HEIGHT_KEY", "BlockFollower"]

#: ``service_state`` key of the last directory block height handled.
LAST_HEIGHT_KEY = "last_height"
_IN_CHUNK = 500
_ENTRIES = cast(Table, EntryRow.__table__)
_STATE = cast(Table, ServiceState.__table__)


class BlockFollower:
    """Moves ``multi_az`` entries found in new directory blocks to ``ledger``.

    Args:
        moves: the database, clock (``ledger_at``, callbacks) and observer of the moves.
        gateway: node access.
        batch_size: most directory blocks handled by one ``follow``.

    Raises (``follow``): ``GatewayUnavailable`` when the node cannot be reached.
    """

    def __init__(self, moves: StageMoves, gateway: LedgerGateway, *, batch_size: int) -> None:
        self._moves, self._gateway, self._batch = moves, gateway, batch_size
        self._db, self._clock = moves.db, moves.clock
        self.behind = False
        """True when the last ``follow`` stopped short of the node's newest block."""

    def follow(self) -> int:
        """Handle directory blocks after ``last_height``; returns entries moved to ``ledger``."""
        current = self._gateway.height()
        last = self.last_height()
        tracked = self._tracked_chains()
        self.behind = False
        if last is None or not tracked:
            if last != current:
                with self._db.transaction() as connection:
                    _put_state(connection, LAST_HEIGHT_KEY, str(current))
            return 0
        heights = list(range(last + 1, min(current, last + self._batch) + 1))
        if not heights:
            return 0
        self.behind = current > heights[-1]
        blocks = _until_failure(self._gateway.directory_blocks(heights))
        found = self._entry_hashes(blocks, tracked)
        confirmed = 0
        for block in blocks[: len(found)]:
            with self._db.transaction() as connection:
                confirmed += self._confirm(connection, block, found[block.height])
                _put_state(connection, LAST_HEIGHT_KEY, str(block.height))
        return confirmed

    def last_height(self) -> int | None:
        """The last directory block height handled, or None before the first pass."""
        with self._db.read() as session:
            row = session.get(ServiceState, LAST_HEIGHT_KEY)
            return None if row is None else int(row.value)

    def _entry_hashes(
        self, blocks: list[DirectoryBlockInfo], tracked: set[str]
    ) -> dict[int, set[str]]:
        """Entry hashes per height for the tracked chains' entry blocks, up to a failure."""
        wanted = [(b.height, k) for b in blocks for c, k in b.entry_blocks if c in tracked]
        lists = self._gateway.entry_blocks([k for _, k in wanted]) if wanted else []
        failed = {
            h for (h, _), lst in zip(wanted, lists, strict=True) if isinstance(lst, RpcFailure)
        }
        stop = min(failed) if failed else None
        found: dict[int, set[str]] = {}
        for block in blocks:
            if stop is not None and block.height >= stop:
                break
            found[block.height] = set()
        for (height, _), hashes in zip(wanted, lists, strict=True):
            if height in found and not isinstance(hashes, RpcFailure):
                found[height].update(hashes)
        return found

    def _confirm(self, connection: Connection, block: DirectoryBlockInfo, hashes: set[str]) -> int:
        """Move the ``multi_az`` rows among ``hashes`` to ``ledger`` (set-based, per chunk)."""
        now, count, e = self._clock.now(), 0, _ENTRIES.c
        values = {
            "ledger_at": now,
            "dblock_keymr": block.keymr,
            "dblock_height": block.height,
            "state": SubmitState.REVEALED.value,
        }
        params = {"dblock_keymr": block.keymr}
        for chunk in _chunks(sorted(hashes)):
            where = (e.entry_hash.in_(chunk), e.stage == Stage.MULTI_AZ.value)
            count += self._moves.move(connection, where, Stage.LEDGER, values, params, now=now)
        return count

    def _tracked_chains(self) -> set[str]:
        query = select(EntryRow.chain_id).where(EntryRow.stage == Stage.MULTI_AZ.value).distinct()
        with self._db.read() as session:
            return set(session.scalars(query))


def _put_state(connection: Connection, key: str, value: str) -> None:
    changed = connection.execute(update(_STATE).where(_STATE.c.key == key).values(value=value))
    if changed.rowcount == 0:
        connection.execute(insert(_STATE).values(key=key, value=value))


def _until_failure(blocks: Sequence[DirectoryBlockInfo | RpcFailure]) -> list[DirectoryBlockInfo]:
    good: list[DirectoryBlockInfo] = []
    for block in blocks:
        if isinstance(block, RpcFailure):
            break
        good.append(block)
    return good


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]
