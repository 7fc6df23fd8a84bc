"""The node's commit replay filter over its store: loaded at start-up, snapshotted while running.

Commit rule 3 (a commit txid accepted before is refused, docs/formats.md §2.4) asks whether a txid
is in the journal; ``CommitFilter`` answers "surely not" without a database read for
almost every new commit (a ``TxidFilter``, see ``ledger.node.txfilter``).

Start-up (``load``): from the snapshot file next to the database when it was taken of this
store (same genesis block, its last covered journal row still there and unchanged), plus
the commits journaled after it; otherwise from every journaled commit. While the node
runs, ``snapshot_if_due`` starts a snapshot in the background once ``snapshot_interval_s``
passed and commits came in; ``finish`` waits for it and writes a last one when anything
changed, so the next start is fast.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ledger.node.store import Store, StoreError
from ledger.node.txfilter import SnapshotKey, TxidFilter, read_snapshot, write_snapshot

__all__ = ["CommitFilter", "FilterLoad"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FilterLoad:
    """How the commit replay filter was filled at start-up: ``source`` ``"snapshot"`` (its
    snapshot file plus the journal after it) or ``"journal"`` (every journaled commit),
    ``commits_read`` journal rows, in ``seconds``."""

    source: str
    commits_read: int
    seconds: float


class CommitFilter:
    """The replay filter of journaled commit txids, with its snapshot file.

    Args:
        store: the node's opened store (journal reads, the barrier before a snapshot).
        path: the snapshot file.
        snapshot_interval_s: least time between two background snapshots, seconds.
        accepted_seq: the journal sequence number of the last accepted message (a snapshot
            covers the journal up to it).
    """

    def __init__(
        self,
        store: Store,
        path: Path,
        *,
        snapshot_interval_s: float,
        accepted_seq: Callable[[], int],
    ) -> None:
        self._store, self.path = store, path
        self._interval_s, self._accepted_seq = snapshot_interval_s, accepted_seq
        self._filter = TxidFilter()
        self._saved_count = -1
        self._saving: asyncio.Task[None] | None = None

    def might_contain(self, txid: bytes) -> bool:
        """False proves the 32-byte ``txid`` was never journaled; True means "look it up"."""
        return self._filter.might_contain(txid)

    def add(self, txid: bytes) -> None:
        """Record an accepted commit's 32-byte txid."""
        self._filter.add(txid)

    def load(self) -> FilterLoad:
        """Fill the filter from its snapshot plus the commits journaled after it, or from
        every journaled commit when there is no usable snapshot (module docstring)."""
        started = time.perf_counter()
        read = self._store.read
        snapshot = read_snapshot(self.path)
        if snapshot is not None and self._snapshot_matches(snapshot[1]):
            self._filter, key = snapshot
            source = "snapshot"
            rows = read.execute(
                "SELECT key FROM journal WHERE seq > ? AND kind=1", (key.covered_seq,)
            )
        else:
            self._filter = TxidFilter()
            source = "journal"
            rows = read.execute("SELECT key FROM journal WHERE kind=1")
        txids = [bytes(txid) for (txid,) in rows]
        self._filter.add_many(txids)
        self._saved_count = self._filter.count if not txids else -1
        loaded = FilterLoad(source, len(txids), time.perf_counter() - started)
        log.info(
            "replay filter from the %s: %d journaled commits read in %.2f s",
            source,
            len(txids),
            loaded.seconds,
        )
        return loaded

    async def save(self) -> None:
        """Write the filter's snapshot now.

        Raises:
            OSError: the file could not be written (the filter itself is unaffected).
            StoreError: the journal could not be flushed.
        """
        accepted = self._accepted_seq()
        await self._store.barrier()  # every row up to ``accepted`` is on disk (or failed)
        row = self._store.read.execute(
            "SELECT seq, key FROM journal WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (accepted,)
        ).fetchone()
        covered = (0, bytes(32)) if row is None else (int(row[0]), bytes(row[1]))
        key = SnapshotKey(covered[0], covered[1], self._genesis_key())
        # every commit up to ``accepted`` was added to the filter when it was accepted;
        # later ones in the copy are harmless (a false positive costs one journal read)
        bits, count = self._filter.copy_bits(), self._filter.count
        await asyncio.to_thread(
            write_snapshot,
            self.path,
            bits,
            count=count,
            bits_log2=self._filter.bits_log2,
            key=key,
        )
        self._saved_count = count

    def snapshot_if_due(self, last_s: float) -> float:
        """Start a snapshot when the interval passed since ``last_s`` (``time.monotonic``
        seconds) and commits came in since the last one; returns the time of the last
        started snapshot."""
        now = time.monotonic()
        due = now - last_s >= self._interval_s
        changed = self._filter.count != self._saved_count
        if not (due and changed) or (self._saving and not self._saving.done()):
            return last_s
        self._saving = asyncio.create_task(self._save_logged())
        return now

    async def finish(self) -> None:
        """Wait for a snapshot under way; write one more if commits came in since."""
        if self._saving is not None:
            await asyncio.gather(self._saving, return_exceptions=True)
        if self._filter.count != self._saved_count:
            await self._save_logged()

    async def _save_logged(self) -> None:
        try:
            await self.save()
        except (OSError, StoreError) as exc:
            log.warning("replay filter snapshot not written: %s", exc)

    def _genesis_key(self) -> bytes:
        row = self._store.read.execute("SELECT keymr FROM dblocks WHERE height=0").fetchone()
        return bytes(row[0]) if row is not None else bytes(32)

    def _snapshot_matches(self, key: SnapshotKey) -> bool:
        """Whether a filter snapshot was taken of this store (same genesis, and its last
        covered journal row still there, unchanged)."""
        if key.genesis_key != self._genesis_key():
            return False
        if key.covered_seq == 0:
            return True
        row = self._store.read.execute(
            "SELECT key FROM journal WHERE seq=?", (key.covered_seq,)
        ).fetchone()
        return row is not None and bytes(row[0]) == key.covered_key
