"""Background worker of the publishing API: submit the outbox, follow blocks and anchors.

One pass (``run_once``) runs four steps; the thread started by ``start()`` repeats it
every ``poll_interval_s`` until ``stop()``:

1. Follow blocks. ``height()`` gives the newest directory block; each height after the
   ``last_height`` kept in ``service_state`` is fetched (``dblock-by-height``), the entry
   blocks of chains with entries still at stage ``multi_az`` are read (``entry-block``),
   and every such entry found moves to stage ``ledger`` with ``dblock_keymr`` and
   ``dblock_height``; ``last_height`` advances in the same transaction, so a restart
   resumes after the last block handled. On the very first pass ``last_height`` starts
   at the current height (every later reveal lands in a later block).
2. Submit. Rows in state ``pending`` are composed by the wallet (one batch) and their
   commits sent to the node (one batch); an accepted commit, or error -32011 Repeated
   Commit, moves the row to ``committed`` together with the composed reveal call, in one
   transaction. Rows in ``committed`` have their reveal sent (one batch) and move to
   ``revealed``. New chains go first; an entry waits until its chain's first entry is
   revealed. A commit is never sent again once its outcome is recorded; only a commit
   whose reply was lost (crash or outage after sending) is sent again, and the node
   answers it -32011. Errors answered by wallet or node are retried with exponential
   back-off; after ``max_attempts`` the row is ``failed``.
3. Anchors. For directory block heights holding entries at stage ``ledger``, the node's
   ``anchors`` answer gives the proof-of-work anchor; those entries move to ``anchor``.
4. Callbacks due are delivered (``CallbackDispatcher``).

Every stage change queues the matching callback in the same transaction. One worker per
database: two workers on one database would submit the same rows.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import Session, aliased

from ledger.api.callbacks import CallbackDispatcher, enqueue_callback
from ledger.api.db import Database
from ledger.api.encoding import from_base64
from ledger.api.gateway import (
    REPEATED_COMMIT_CODE,
    AnchorInfo,
    Composition,
    DirectoryBlockInfo,
    GatewayUnavailable,
    LedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.models import EntryRow, ServiceState, Stage, SubmitState
from ledger.core.clock import Clock
from ledger.core.entry import Entry

__all__ = ["LAST_HEIGHT_KEY", "LedgerWorker", "PassReport"]

LAST_HEIGHT_KEY = "last_height"
_MAX_RETRY_DELAY_S = 3600.0
_IN_CHUNK = 500
_log = logging.getLogger(__name__)


@dataclass
class PassReport:
    """What one pass did (counts of rows) and the outages it met."""

    committed: int = 0
    revealed: int = 0
    confirmed: int = 0
    anchored: int = 0
    callbacks: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Outbox:
    """Snapshot of one row to submit."""

    id: int
    entry: Entry
    new_chain: bool
    state: str
    attempts: int
    reveal: RpcCall | None


class LedgerWorker:
    """Moves accepted rows onto the ledger and follows them through the stages.

    Args:
        db: the API database.
        gateway: wallet + node access.
        clock: time source.
        dispatcher: callback deliverer (``None``: callbacks stay queued).
        batch_size: most rows or blocks per step of a pass.
        max_attempts: errors answered by wallet/node before a row is ``failed``.
        retry_base_s: first back-off delay after such an error (doubles, capped at 1 h).
        poll_interval_s: pause between passes of the thread.
        anchor_poll_interval_s: least time between two anchor look-ups.
    """

    def __init__(
        self,
        db: Database,
        gateway: LedgerGateway,
        *,
        clock: Clock,
        dispatcher: CallbackDispatcher | None = None,
        batch_size: int = 100,
        max_attempts: int = 20,
        retry_base_s: float = 2.0,
        poll_interval_s: float = 1.0,
        anchor_poll_interval_s: float = 0.0,
    ) -> None:
        self._db, self._gateway, self._clock = db, gateway, clock
        self._dispatcher = dispatcher
        self._batch, self._max_attempts, self._retry_base_s = batch_size, max_attempts, retry_base_s
        self._poll_interval_s = poll_interval_s
        self._anchor_interval_s = anchor_poll_interval_s
        self._last_anchor_poll: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pass_lock = threading.Lock()
        self._unavailable = False  # log an outage once, not every pass

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Run passes in a daemon thread until ``stop()``; no-op when already running."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="notary-api-worker", daemon=True)
        self._thread.start()

    def stop(self, *, timeout_s: float = 10.0) -> None:
        """Ask the thread to stop after its current pass and wait up to ``timeout_s``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # keep the worker alive; the fault is logged
                _log.exception("worker pass failed")
            self._stop.wait(self._poll_interval_s)

    # -- one pass -----------------------------------------------------------------------

    def run_once(self) -> PassReport:
        """One pass of the four steps (module docstring). Outages end a step, not the pass."""
        report = PassReport()
        with self._pass_lock:
            self._step(report, "blocks", lambda: self._set(report, confirmed=self.follow_blocks()))
            self._step(report, "submit", lambda: self._submit_all(report))
            self._step(report, "anchors", lambda: self._set(report, anchored=self.follow_anchors()))
            if self._dispatcher is not None:
                delivered = self._dispatcher.deliver_due(limit=self._batch)
                report.callbacks = delivered
        return report

    @staticmethod
    def _set(report: PassReport, **counts: int) -> None:
        for name, value in counts.items():
            setattr(report, name, getattr(report, name) + value)

    def _step(self, report: PassReport, name: str, action: Any) -> None:
        try:
            action()
        except GatewayUnavailable as exc:
            report.errors.append(f"{name}: {exc}")
            level = logging.DEBUG if self._unavailable else logging.WARNING
            self._unavailable = True
            _log.log(level, "worker step %s: ledger unavailable: %s", name, exc)
        else:
            if self._unavailable and name == "blocks":  # the step that always calls the node
                _log.info("worker: ledger reachable again")
                self._unavailable = False

    def _submit_all(self, report: PassReport) -> None:
        for new_chains in (True, False):
            committed, revealed = self.submit_pending(new_chains=new_chains)
            report.committed += committed
            report.revealed += revealed

    # -- step 2: submission -------------------------------------------------------------

    def submit_pending(self, *, new_chains: bool) -> tuple[int, int]:
        """Commit and reveal one batch of due rows; returns (commits recorded, reveals)."""
        rows = self._due_rows(new_chains=new_chains)
        pending = [r for r in rows if r.state == SubmitState.PENDING.value]
        committed = self._commit(pending)
        ready = [(r, r.reveal) for r in rows if r.state == SubmitState.COMMITTED.value and r.reveal]
        return len(committed), self._reveal(ready + committed)

    def _due_rows(self, *, new_chains: bool) -> list[_Outbox]:
        states = [SubmitState.PENDING.value, SubmitState.COMMITTED.value]
        query = select(EntryRow).where(
            EntryRow.state.in_(states),
            EntryRow.next_attempt_at <= self._clock.now(),
            EntryRow.is_first.is_(new_chains),
        )
        if not new_chains:
            first = aliased(EntryRow)
            chain_out = or_(
                first.state == SubmitState.REVEALED.value,
                first.stage.in_([Stage.LEDGER.value, Stage.ANCHOR.value]),
            )
            query = query.where(
                exists().where(
                    first.chain_id == EntryRow.chain_id, first.is_first.is_(True), chain_out
                )
            )
        with self._db.read() as session:
            rows = session.scalars(query.order_by(EntryRow.id).limit(self._batch)).all()
            return [_snapshot(row) for row in rows]

    def _commit(self, rows: list[_Outbox]) -> list[tuple[_Outbox, RpcCall]]:
        """Compose and commit ``rows``; returns the rows now committed with their reveals."""
        if not rows:
            return []
        composed = self._gateway.compose([Composition(r.entry, r.new_chain) for r in rows])
        failures = {
            r.id: c.describe()
            for r, c in zip(rows, composed, strict=True)
            if isinstance(c, RpcFailure)
        }
        pairs = [
            (r, c) for r, c in zip(rows, composed, strict=True) if not isinstance(c, RpcFailure)
        ]
        results = self._gateway.submit([c.commit for _, c in pairs]) if pairs else []
        done: list[tuple[_Outbox, RpcCall]] = []
        for (row, calls), result in zip(pairs, results, strict=True):
            if isinstance(result, RpcFailure) and result.code != REPEATED_COMMIT_CODE:
                failures[row.id] = f"commit: {result.describe()}"
            else:
                done.append((row, calls.reveal))
        with self._db.write() as session:
            for row, reveal in done:
                _update(
                    session, row.id, state=SubmitState.COMMITTED.value, reveal_call=reveal.to_json()
                )
            self._record_failures(session, rows, failures)
        return done

    def _reveal(self, ready: list[tuple[_Outbox, RpcCall]]) -> int:
        """Send the reveals of committed rows; returns how many the node accepted."""
        if not ready:
            return 0
        results = self._gateway.submit([reveal for _, reveal in ready])
        failures: dict[int, str] = {}
        revealed = 0
        with self._db.write() as session:
            for (row, _), result in zip(ready, results, strict=True):
                if isinstance(result, RpcFailure):
                    failures[row.id] = f"reveal: {result.describe()}"
                    continue
                _update(session, row.id, state=SubmitState.REVEALED.value, last_error=None)
                revealed += 1
            self._record_failures(session, [r for r, _ in ready], failures)
        return revealed

    def _record_failures(
        self, session: Session, rows: Iterable[_Outbox], failures: dict[int, str]
    ) -> None:
        now = self._clock.now()
        for row in rows:
            if row.id not in failures:
                continue
            attempts = row.attempts + 1
            delay = min(_MAX_RETRY_DELAY_S, self._retry_base_s * 2 ** (attempts - 1))
            changes: dict[str, Any] = {
                "attempts": attempts,
                "last_error": failures[row.id][:2000],
                "next_attempt_at": now + delay,
            }
            if attempts >= self._max_attempts:
                changes["state"] = SubmitState.FAILED.value
            _update(session, row.id, **changes)
            _log.warning("entry row %s attempt %s failed: %s", row.id, attempts, failures[row.id])

    # -- step 1: blocks -----------------------------------------------------------------

    def follow_blocks(self) -> int:
        """Handle directory blocks after ``last_height``; returns entries moved to ``ledger``."""
        current = self._gateway.height()
        last = self._last_height()
        tracked = self._tracked_chains()
        if last is None or not tracked:
            if last != current:
                with self._db.write() as session:
                    _put_state(session, LAST_HEIGHT_KEY, str(current))
            return 0
        heights = list(range(last + 1, min(current, last + self._batch) + 1))
        if not heights:
            return 0
        blocks = _until_failure(self._gateway.directory_blocks(heights))
        found = self._entry_hashes(blocks, tracked)
        confirmed = 0
        for block in blocks[: len(found)]:
            with self._db.write() as session:
                confirmed += self._confirm(session, block, found[block.height])
                _put_state(session, LAST_HEIGHT_KEY, str(block.height))
        return confirmed

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

    def _confirm(self, session: Session, block: DirectoryBlockInfo, hashes: set[str]) -> int:
        now, count = self._clock.now(), 0
        for chunk in _chunks(sorted(hashes)):
            query = select(EntryRow).where(
                EntryRow.entry_hash.in_(chunk), EntryRow.stage == Stage.MULTI_AZ.value
            )
            for row in session.scalars(query):
                row.stage, row.ledger_at = Stage.LEDGER.value, now
                row.dblock_keymr, row.dblock_height = block.keymr, block.height
                row.state = SubmitState.REVEALED.value
                enqueue_callback(session, row, Stage.LEDGER, {"dblock_keymr": block.keymr}, now=now)
                count += 1
        return count

    def _tracked_chains(self) -> set[str]:
        query = select(EntryRow.chain_id).where(EntryRow.stage == Stage.MULTI_AZ.value).distinct()
        with self._db.read() as session:
            return set(session.scalars(query))

    def _last_height(self) -> int | None:
        with self._db.read() as session:
            row = session.get(ServiceState, LAST_HEIGHT_KEY)
            return None if row is None else int(row.value)

    # -- step 3: anchors ----------------------------------------------------------------

    def follow_anchors(self) -> int:
        """Move entries of anchored directory blocks to ``anchor``; returns rows moved."""
        now = self._clock.now()
        if (
            self._last_anchor_poll is not None
            and now - self._last_anchor_poll < self._anchor_interval_s
        ):
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
        self._last_anchor_poll = now
        infos = [i for i in self._gateway.anchors(heights) if i is not None]
        return sum(self._anchor(info) for info in infos)

    def _anchor(self, info: AnchorInfo) -> int:
        now = self._clock.now()
        query = select(EntryRow).where(
            EntryRow.dblock_height == info.height, EntryRow.stage == Stage.LEDGER.value
        )
        with self._db.write() as session:
            rows = list(session.scalars(query))
            for row in rows:
                row.stage, row.anchor_at, row.anchor_block_hash = (
                    Stage.ANCHOR.value,
                    now,
                    info.block_hash,
                )
                params = {"anchor_block_hash": info.block_hash}
                enqueue_callback(session, row, Stage.ANCHOR, params, now=now)
        return len(rows)


def _snapshot(row: EntryRow) -> _Outbox:
    ext_ids = tuple(from_base64(x, field="stored") for x in row.external_ids)
    entry = Entry(bytes.fromhex(row.chain_id), ext_ids, bytes(row.content))
    reveal = RpcCall.from_json(row.reveal_call) if row.reveal_call else None
    return _Outbox(row.id, entry, row.is_first, row.state, row.attempts, reveal)


def _update(session: Session, row_id: int, **changes: Any) -> None:
    row = session.get(EntryRow, row_id)
    if row is not None:
        for name, value in changes.items():
            setattr(row, name, value)


def _put_state(session: Session, key: str, value: str) -> None:
    row = session.get(ServiceState, key)
    if row is None:
        session.add(ServiceState(key=key, value=value))
    else:
        row.value = value


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
