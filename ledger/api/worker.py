"""Background worker of the publishing API: submit the outbox, follow blocks and anchors.

One pass (``run_once``) runs four steps; the thread started by ``start()`` repeats it
every ``poll_interval_s`` until ``stop()``:

1. Follow blocks. ``height()`` gives the newest directory block; each height after the
   ``last_height`` kept in ``service_state`` is fetched (``dblock-by-height``), the entry
   blocks of chains with entries still at stage ``multi_az`` are read (``entry-block``),
   and every such entry found moves to stage ``ledger`` with ``dblock_keymr`` and
   ``dblock_height``; ``last_height`` advances in the same transaction, so a restart
   resumes after the last block handled. On the very first pass ``last_height`` starts
   at the current height (every later reveal lands in a later block); nothing is
   submitted before ``last_height`` is set, so no reveal can land in a block the worker
   never reads (for instance when the node is down at the first pass).
2. Submit. Up to ``submit_rows_per_pass`` due rows, in chunks of ``submit_chunk_rows``:
   rows in state ``pending`` are composed by the wallet (one JSON-RPC batch per chunk,
   the next chunk composed while the node handles this one) and their commits sent to
   the node (one batch); an accepted commit, or error -32011 Repeated Commit, moves the
   row to ``committed`` together with the composed reveal call, in one transaction. Rows
   in ``committed`` have their reveal sent (one batch) and move to ``revealed``. Database
   changes are set-based (``executemany``), not row by row. A pass that finds more work
   than it may do (rows or blocks) is followed at once by the next, without the pause. New chains go first; an entry waits until its chain's first entry is
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
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, exists, insert, or_, select, update
from sqlalchemy.orm import aliased

from ledger.api.callbacks import CallbackDispatcher, callback_values
from ledger.api.db import Database
from ledger.api.encoding import from_base64
from ledger.api.gateway import (
    AnchorInfo,
    ComposedCalls,
    Composition,
    DirectoryBlockInfo,
    GatewayUnavailable,
    LedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.models import CallbackRow, EntryRow, ServiceState, Stage, SubmitState
from ledger.core.clock import Clock
from ledger.core.entry import Entry
from ledger.jsonrpc.codes import ErrorCode

__all__ = ["LAST_HEIGHT_KEY", "LedgerWorker", "PassReport"]

LAST_HEIGHT_KEY = "last_height"
_MAX_RETRY_DELAY_S = 3600.0
#: Outages in the first seconds of the thread are logged at DEBUG (services starting).
_STARTUP_GRACE_S = 10.0
_IN_CHUNK = 500
_log = logging.getLogger(__name__)
_ENTRIES = cast(Table, EntryRow.__table__)
_CALLBACKS = cast(Table, CallbackRow.__table__)
_STATE = cast(Table, ServiceState.__table__)


@dataclass
class PassReport:
    """What one pass did (counts of rows) and the outages it met."""

    committed: int = 0
    revealed: int = 0
    confirmed: int = 0
    anchored: int = 0
    callbacks: int = 0
    errors: list[str] = field(default_factory=list)
    backlog: bool = False  # more rows were due than one pass submits


@dataclass(frozen=True)
class _Composed:
    """A chunk composed by the wallet: its rows, the (row, calls) pairs, refusals by row id."""

    rows: list[_Outbox]
    pairs: list[tuple[_Outbox, ComposedCalls]]
    failures: dict[int, str]


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
        batch_size: most directory blocks, anchor heights or callbacks per step of a pass.
        submit_rows_per_pass: most due rows (of each kind: new chains, entries) one pass
            submits; a pass that reaches it is followed at once by the next (no pause).
        submit_chunk_rows: rows per compose / commit / reveal round trip; the wallet composes
            the next chunk while the node takes the commits and reveals of this one.
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
        submit_rows_per_pass: int = 5000,
        submit_chunk_rows: int = 500,
        max_attempts: int = 20,
        retry_base_s: float = 2.0,
        poll_interval_s: float = 1.0,
        anchor_poll_interval_s: float = 0.0,
    ) -> None:
        self._db, self._gateway, self._clock = db, gateway, clock
        self._dispatcher = dispatcher
        self._batch, self._max_attempts, self._retry_base_s = batch_size, max_attempts, retry_base_s
        self._rows_per_pass, self._chunk_rows = submit_rows_per_pass, submit_chunk_rows
        self._composer: ThreadPoolExecutor | None = None  # made on first use
        self._poll_interval_s = poll_interval_s
        self._anchor_interval_s = anchor_poll_interval_s
        self._last_anchor_poll: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pass_lock = threading.Lock()
        self._unavailable = False  # log an outage once, not every pass
        self._blocks_behind = False  # the last follow_blocks stopped short of the tip
        self._reached = False  # the node answered at least once
        self._started_at = time.monotonic()

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Run passes in a daemon thread until ``stop()``; no-op when already running."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._started_at = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="notary-api-worker", daemon=True)
        self._thread.start()

    def stop(self, *, timeout_s: float = 10.0) -> None:
        """Ask the thread to stop after its current pass and wait up to ``timeout_s``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                return  # still in a pass; the thread closes its composer when it ends
            self._thread = None
        self._close_composer()

    def _close_composer(self) -> None:
        composer, self._composer = self._composer, None
        if composer is not None:
            composer.shutdown(wait=True, cancel_futures=True)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No pass runs inside this block (a pass under way finishes first)."""
        with self._pass_lock:
            yield

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            backlog = False
            try:
                backlog = self.run_once().backlog
            except Exception:  # keep the worker alive; the fault is logged
                _log.exception("worker pass failed")
            if not backlog:
                self._stop.wait(self._poll_interval_s)
        self._close_composer()

    # -- one pass -----------------------------------------------------------------------

    def run_once(self) -> PassReport:
        """One pass of the four steps (module docstring). Outages end a step, not the pass."""
        report = PassReport()
        with self._pass_lock:
            self._step(report, "blocks", lambda: self._follow_blocks(report))
            if self._last_height() is not None:  # never reveal before the block cursor is set
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
            starting = (
                self._thread is not None
                and not self._reached
                and (time.monotonic() - self._started_at < _STARTUP_GRACE_S)
            )  # the node may still be starting (the bundled stack starts all at once)
            level = logging.DEBUG if self._unavailable or starting else logging.WARNING
            self._unavailable = not starting
            _log.log(level, "worker step %s: ledger unavailable: %s", name, exc)
        else:
            self._reached = self._reached or name == "blocks"
            if self._unavailable and name == "blocks":  # the step that always calls the node
                _log.info("worker: ledger reachable again")
                self._unavailable = False

    def _follow_blocks(self, report: PassReport) -> None:
        report.confirmed += self.follow_blocks()
        report.backlog |= self._blocks_behind

    def _submit_all(self, report: PassReport) -> None:
        for new_chains in (True, False):
            rows = self._due_rows(new_chains=new_chains)
            report.backlog |= len(rows) >= self._rows_per_pass
            for committed, revealed in self._submit_chunks(rows):
                report.committed += committed
                report.revealed += revealed

    # -- step 2: submission -------------------------------------------------------------

    def submit_pending(self, *, new_chains: bool) -> tuple[int, int]:
        """Commit and reveal the due rows of one kind; returns (commits recorded, reveals)."""
        totals = [0, 0]
        for committed, revealed in self._submit_chunks(self._due_rows(new_chains=new_chains)):
            totals[0] += committed
            totals[1] += revealed
        return totals[0], totals[1]

    def _submit_chunks(self, rows: list[_Outbox]) -> Iterator[tuple[int, int]]:
        """Per chunk: commit the pending rows, reveal the committed ones; yields the counts.

        The wallet composes chunk k+1 (in the composer thread) while the node handles the
        commits and reveals of chunk k. An outage (``GatewayUnavailable``) ends the loop;
        chunks composed but not committed are dropped (composing sends nothing).
        """
        chunks = [rows[i : i + self._chunk_rows] for i in range(0, len(rows), self._chunk_rows)]
        ahead = self._compose_later(chunks[0]) if chunks else None
        for index, chunk in enumerate(chunks):
            assert ahead is not None
            composed = ahead.result()
            ahead = self._compose_later(chunks[index + 1]) if index + 1 < len(chunks) else None
            try:
                committed = self._commit(composed)
                ready = [
                    (r, r.reveal)
                    for r in chunk
                    if r.state == SubmitState.COMMITTED.value and r.reveal
                ]
                yield len(committed), self._reveal(ready + committed)
            except BaseException:
                if ahead is not None:
                    ahead.cancel()
                raise

    def _compose_later(self, chunk: list[_Outbox]) -> Future[_Composed]:
        pending = [r for r in chunk if r.state == SubmitState.PENDING.value]
        if self._composer is None:
            self._composer = ThreadPoolExecutor(1, thread_name_prefix="notary-api-compose")
        return self._composer.submit(self._compose, pending)

    def _due_rows(self, *, new_chains: bool) -> list[_Outbox]:
        e = EntryRow.__table__.c
        states = [SubmitState.PENDING.value, SubmitState.COMMITTED.value]
        query = select(
            e.id,
            e.chain_id,
            e.external_ids,
            e.content,
            e.is_first,
            e.state,
            e.attempts,
            e.reveal_call,
        ).where(
            e.state.in_(states),
            e.next_attempt_at <= self._clock.now(),
            e.is_first.is_(new_chains),
        )
        if not new_chains:
            first = aliased(EntryRow)
            chain_out = or_(
                first.state == SubmitState.REVEALED.value,
                first.stage.in_([Stage.LEDGER.value, Stage.ANCHOR.value]),
            )
            query = query.where(
                exists().where(first.chain_id == e.chain_id, first.is_first.is_(True), chain_out)
            )
        with self._db.read() as session:
            rows = session.execute(query.order_by(e.id).limit(self._rows_per_pass)).all()
        return [_snapshot(row) for row in rows]

    def _compose(self, rows: list[_Outbox]) -> _Composed:
        """Compose commit + reveal of ``rows`` (wallet); failures are kept per row."""
        if not rows:
            return _Composed([], [], {})
        composed = self._gateway.compose([Composition(r.entry, r.new_chain) for r in rows])
        failures = {
            r.id: c.describe()
            for r, c in zip(rows, composed, strict=True)
            if isinstance(c, RpcFailure)
        }
        pairs = [
            (r, c) for r, c in zip(rows, composed, strict=True) if not isinstance(c, RpcFailure)
        ]
        return _Composed(rows, pairs, failures)

    def _commit(self, composed: _Composed) -> list[tuple[_Outbox, RpcCall]]:
        """Send the commits of ``composed``; returns the rows now committed with their reveals."""
        if not composed.rows:
            return []
        pairs, failures = composed.pairs, dict(composed.failures)
        results = self._gateway.submit([c.commit for _, c in pairs]) if pairs else []
        done: list[tuple[_Outbox, RpcCall]] = []
        for (row, calls), result in zip(pairs, results, strict=True):
            if isinstance(result, RpcFailure) and result.code != ErrorCode.REPEATED_COMMIT:
                failures[row.id] = f"commit: {result.describe()}"
            else:
                done.append((row, calls.reveal))
        with self._db.transaction() as connection:
            changes = [
                {
                    "b_id": row.id,
                    "state": SubmitState.COMMITTED.value,
                    "reveal_call": reveal.to_json(),
                }
                for row, reveal in done
            ]
            _bulk_update(connection, changes)
            self._record_failures(connection, composed.rows, failures)
        return done

    def _reveal(self, ready: list[tuple[_Outbox, RpcCall]]) -> int:
        """Send the reveals of committed rows; returns how many the node accepted."""
        if not ready:
            return 0
        results = self._gateway.submit([reveal for _, reveal in ready])
        failures: dict[int, str] = {}
        changes: list[dict[str, Any]] = []
        for (row, _), result in zip(ready, results, strict=True):
            if isinstance(result, RpcFailure):
                failures[row.id] = f"reveal: {result.describe()}"
            else:
                changes.append(
                    {"b_id": row.id, "state": SubmitState.REVEALED.value, "last_error": None}
                )
        with self._db.transaction() as connection:
            _bulk_update(connection, changes)
            self._record_failures(connection, [r for r, _ in ready], failures)
        return len(changes)

    def _record_failures(
        self, connection: Connection, rows: Iterable[_Outbox], failures: dict[int, str]
    ) -> None:
        now = self._clock.now()
        for row in rows:
            if row.id not in failures:
                continue
            attempts = row.attempts + 1
            delay = min(_MAX_RETRY_DELAY_S, self._retry_base_s * 2 ** (attempts - 1))
            changes: dict[str, Any] = {
                "b_id": row.id,
                "attempts": attempts,
                "last_error": failures[row.id][:2000],
                "next_attempt_at": now + delay,
            }
            if attempts >= self._max_attempts:
                changes["state"] = SubmitState.FAILED.value
            _bulk_update(connection, [changes])
            _log.warning("entry row %s attempt %s failed: %s", row.id, attempts, failures[row.id])

    # -- step 1: blocks -----------------------------------------------------------------

    def follow_blocks(self) -> int:
        """Handle directory blocks after ``last_height``; returns entries moved to ``ledger``."""
        current = self._gateway.height()
        last = self._last_height()
        tracked = self._tracked_chains()
        self._blocks_behind = False
        if last is None or not tracked:
            if last != current:
                with self._db.transaction() as connection:
                    _put_state(connection, LAST_HEIGHT_KEY, str(current))
            return 0
        heights = list(range(last + 1, min(current, last + self._batch) + 1))
        if not heights:
            return 0
        self._blocks_behind = current > heights[-1]
        blocks = _until_failure(self._gateway.directory_blocks(heights))
        found = self._entry_hashes(blocks, tracked)
        confirmed = 0
        for block in blocks[: len(found)]:
            with self._db.transaction() as connection:
                confirmed += self._confirm(connection, block, found[block.height])
                _put_state(connection, LAST_HEIGHT_KEY, str(block.height))
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

    def _confirm(self, connection: Connection, block: DirectoryBlockInfo, hashes: set[str]) -> int:
        """Move the ``multi_az`` rows among ``hashes`` to ``ledger`` (set-based, per chunk)."""
        now, count, e = self._clock.now(), 0, _ENTRIES.c
        for chunk in _chunks(sorted(hashes)):
            where = (e.entry_hash.in_(chunk), e.stage == Stage.MULTI_AZ.value)
            _queue_callbacks(
                connection, where, Stage.LEDGER, {"dblock_keymr": block.keymr}, now=now
            )
            moved = connection.execute(
                update(_ENTRIES)
                .where(*where)
                .values(
                    stage=Stage.LEDGER.value,
                    ledger_at=now,
                    dblock_keymr=block.keymr,
                    dblock_height=block.height,
                    state=SubmitState.REVEALED.value,
                )
            )
            count += moved.rowcount
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
        now, e = self._clock.now(), _ENTRIES.c
        where = (e.dblock_height == info.height, e.stage == Stage.LEDGER.value)
        params = {"anchor_block_hash": info.block_hash}
        with self._db.transaction() as connection:
            _queue_callbacks(connection, where, Stage.ANCHOR, params, now=now)
            moved = connection.execute(
                update(_ENTRIES)
                .where(*where)
                .values(stage=Stage.ANCHOR.value, anchor_at=now, anchor_block_hash=info.block_hash)
            )
        return moved.rowcount


def _queue_callbacks(
    connection: Connection,
    where: Sequence[Any],
    stage: Stage,
    params: dict[str, str],
    *,
    now: float,
) -> None:
    """Queue the ``stage`` callback of every row matching ``where`` that asked for one."""
    e = _ENTRIES.c
    query = select(e.id, e.callback_url, e.callback_stages).where(
        *where, e.callback_url.is_not(None)
    )
    rows = [
        values
        for row in connection.execute(query)
        if (values := callback_values(row, stage, params, now=now)) is not None
    ]
    if rows:
        connection.execute(insert(_CALLBACKS), rows)


def _snapshot(row: Any) -> _Outbox:
    ext_ids = tuple(from_base64(x, field="stored") for x in row.external_ids)
    entry = Entry(bytes.fromhex(row.chain_id), ext_ids, bytes(row.content))
    reveal = RpcCall.from_json(row.reveal_call) if row.reveal_call else None
    return _Outbox(row.id, entry, row.is_first, row.state, row.attempts, reveal)


def _bulk_update(connection: Connection, changes: list[dict[str, Any]]) -> None:
    """``UPDATE entries SET ... WHERE id = :b_id`` for each dict (same keys: one executemany)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for change in changes:
        groups.setdefault(tuple(sorted(change)), []).append(change)
    for keys, rows in groups.items():
        values: dict[str, Any] = {k: bindparam(k) for k in keys if k != "b_id"}
        statement = update(_ENTRIES).where(_ENTRIES.c.id == bindparam("b_id")).values(values)
        connection.execute(statement, rows)


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
