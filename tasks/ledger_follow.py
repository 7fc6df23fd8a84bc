"""The ``ledger`` stage while a run still publishes: a thread that sweeps at each new block.

Plain code (no Prefect). A folder or table run publishes for as long as its scan goes on;
its entries reach directory blocks all that time. Without this, the ``ledger`` stage
started only once the last window was published, and recording 100,000 receipts (verify,
store, move the rows) came after everything else: ~18 s of a 54 s run in the entry mode.
``LedgerFollower`` does that work during the stream instead, on the core the flow's
process leaves idle while it waits for the publishing API.

Each sweep is the cheap kind (``sweep_ledger(ask_node=False)``): receipts built from the
entry blocks of the collection's chain (``BlockIndex.follow``), never asked of the node
entry by entry, over the rows recorded after the run started. The node is the busiest
process of the stack while the run publishes; a full sweep would ask it for the receipt of
every entry it has not put in a block yet. What the follower leaves (entries of the last
blocks, rows of earlier runs, a block that failed a check) is found by the full sweep the
run makes afterwards (``flows.pipeline.wait_ledger``): the follower only makes it shorter,
and a follower that fails changes nothing but that.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from connectors.audit import AuditStore
from connectors.node import NodeClient
from tasks.block_index import BlockIndex
from tasks.ledger_stage import SweepOutcome, newest_height, sweep_ledger

__all__ = ["LedgerFollower"]

_log = logging.getLogger(__name__)


class LedgerFollower:
    """Sweep a collection's ``ledger`` stage from the blocks, in a thread of its own, at
    each new directory block, for as long as the ``with`` block runs.

    Args:
        store: the audit store (its engine is shared; the thread uses its own connection).
        node: the node client (thread safe; ``heights``, ``directory-block-by-height``
            and ``raw-data`` calls only).
        collection: the collection's name.
        chain_id: the collection's chain ID, 64 hex characters.
        after_id: only rows with a greater notarization id (the run's rows:
            ``AuditStore.notarizations.newest_id()`` read before the run records any).
        poll_s: pause between two ``heights`` calls while no block comes, seconds (> 0).

    Attributes:
        outcome: what the sweeps did (recorded summed; ``waiting`` as of the last sweep);
            read it after the ``with`` block.
        error: why the follower stopped early (the node or the store failed), else None.

    Raises:
        ValueError: ``chain_id`` is not 64 hex characters, or ``poll_s`` <= 0.
    """

    def __init__(
        self,
        store: AuditStore,
        node: NodeClient,
        *,
        collection: str,
        chain_id: str,
        after_id: int,
        poll_s: float = 0.25,
    ) -> None:
        if poll_s <= 0:
            raise ValueError(f"poll_s must be > 0, got {poll_s}")
        chain = bytes.fromhex(chain_id)
        if len(chain) != 32:
            raise ValueError(f"chain_id must be 32 bytes of hex, got {chain_id!r}")
        self._store, self._node, self._collection = store, node, collection
        self._chain, self._after_id, self._poll_s = chain, after_id, poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="ledger-follower", daemon=True)
        self.outcome = SweepOutcome()
        self.error: str | None = None

    def __enter__(self) -> LedgerFollower:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop following (a sweep under way is finished first) and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _follow(self) -> None:
        try:
            swept: int | None = None
            newest = newest_height(self._node)
            # Blocks are swept as they come: two kept are enough (8 held ~20 MB).
            index = BlockIndex(self._node, max_blocks=2)
            # The block being made when the run started is the first that can hold its
            # entries; from the one before, in case a block was made meanwhile.
            index.follow(self._chain, newest)
            while not self._stop.is_set():
                if newest != swept:
                    swept = newest
                    self.outcome.then(
                        sweep_ledger(
                            self._store,
                            self._node,
                            collection=self._collection,
                            index=index,
                            after_id=self._after_id,
                            ask_node=False,
                        )
                    )
                if self._stop.wait(self._poll_s):
                    break
                newest = newest_height(self._node)
        except Exception as exc:  # noqa: BLE001 - the run's full sweep does the work instead
            self.error = f"{type(exc).__name__}: {exc}"
            _log.warning("ledger follower stopped: %s", self.error)
