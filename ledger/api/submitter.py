"""Submitting accepted writes: compose, commit and reveal the outbox rows (worker step 2).

Up to ``rows_per_pass`` due rows, in chunks of ``chunk_rows``: rows in state ``pending``
are composed by the wallet (one JSON-RPC batch per chunk, the next chunk composed in a
thread while the node handles this one) and their commits sent to the node (one batch);
an accepted commit, or Repeated Commit (``ErrorCode.REPEATED_COMMIT``), moves the row to
``committed`` together with the composed reveal call, in one transaction. Rows in
``committed`` have their reveal sent (one batch) and move to ``revealed``. Database
changes are set-based (``executemany``), not row by row.

New chains go first; an entry waits until its chain's first entry is revealed. A commit is
never sent again once its outcome is recorded; only a commit whose reply was lost (crash
or outage after sending) is sent again, and the node answers it Repeated Commit. Errors
answered by wallet or node are retried with exponential back-off (doubling from
``retry_base_s``, at most an hour); after ``max_attempts`` the row is ``failed``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, exists, or_, select, update
from sqlalchemy.orm import aliased

from ledger.api.db import Database
from ledger.api.encoding import from_base64
from ledger.api.gateway import (
    ComposedCalls,
    Composition,
    LedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.models import EntryRow, Stage, SubmitState
from ledger.core.clock import Clock
from ledger.core.entry import Entry
from ledger.jsonrpc.codes import ErrorCode

__all__ = ["OutboxRow", "Submitter"]

_MAX_RETRY_DELAY_S = 3600.0
_log = logging.getLogger(__name__)
_ENTRIES = cast(Table, EntryRow.__table__)


@dataclass(frozen=True)
class OutboxRow:
    """Snapshot of one row to submit."""

    id: int
    entry: Entry
    new_chain: bool
    state: str
    attempts: int
    reveal: RpcCall | None


@dataclass(frozen=True)
class _Composed:
    """A chunk composed by the wallet: its rows, the (row, calls) pairs, refusals by row id."""

    rows: list[OutboxRow]
    pairs: list[tuple[OutboxRow, ComposedCalls]]
    failures: dict[int, str]


class Submitter:
    """Moves due outbox rows through commit and reveal (module docstring).

    Args:
        db: the API database.
        gateway: wallet + node access.
        clock: time source (due rows, back-off).
        rows_per_pass: most due rows of one kind (new chains, entries) ``due_rows`` returns.
        chunk_rows: rows per compose / commit / reveal round trip.
        max_attempts: errors answered by wallet/node before a row is ``failed``.
        retry_base_s: first back-off delay after such an error, seconds (doubles, capped
            at 1 h).

    Raises (``submit``): ``GatewayUnavailable`` when wallet or node cannot be reached.
    """

    def __init__(
        self,
        db: Database,
        gateway: LedgerGateway,
        *,
        clock: Clock,
        rows_per_pass: int,
        chunk_rows: int,
        max_attempts: int,
        retry_base_s: float,
    ) -> None:
        self._db, self._gateway, self._clock = db, gateway, clock
        self.rows_per_pass, self._chunk_rows = rows_per_pass, chunk_rows
        self._max_attempts, self._retry_base_s = max_attempts, retry_base_s
        self._composer: ThreadPoolExecutor | None = None  # made on first use

    def close(self) -> None:
        """Stop the composer thread (a chunk being composed is finished first)."""
        composer, self._composer = self._composer, None
        if composer is not None:
            composer.shutdown(wait=True, cancel_futures=True)

    def submit(self, rows: list[OutboxRow]) -> Iterator[tuple[int, int]]:
        """Per chunk: commit the pending rows, reveal the committed ones; yields
        ``(commits recorded, reveals accepted)``.

        The wallet composes chunk k+1 (in the composer thread) while the node handles the
        commits and reveals of chunk k. An outage (``GatewayUnavailable``) ends the loop;
        chunks composed but not committed are dropped (composing sends nothing).
        """
        size = self._chunk_rows
        chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
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

    def due_rows(self, *, new_chains: bool) -> list[OutboxRow]:
        """Rows ``pending`` or ``committed`` whose next attempt is due, oldest first, at most
        ``rows_per_pass``; entries only once their chain's first entry is revealed."""
        e = _ENTRIES.c
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
            rows = session.execute(query.order_by(e.id).limit(self.rows_per_pass)).all()
        return [_snapshot(row) for row in rows]

    def _compose_later(self, chunk: list[OutboxRow]) -> Future[_Composed]:
        pending = [r for r in chunk if r.state == SubmitState.PENDING.value]
        if self._composer is None:
            self._composer = ThreadPoolExecutor(1, thread_name_prefix="notary-api-compose")
        return self._composer.submit(self._compose, pending)

    def _compose(self, rows: list[OutboxRow]) -> _Composed:
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

    def _commit(self, composed: _Composed) -> list[tuple[OutboxRow, RpcCall]]:
        """Send the commits of ``composed``; returns the rows now committed with their reveals."""
        if not composed.rows:
            return []
        pairs, failures = composed.pairs, dict(composed.failures)
        results = self._gateway.submit([c.commit for _, c in pairs]) if pairs else []
        done: list[tuple[OutboxRow, RpcCall]] = []
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

    def _reveal(self, ready: list[tuple[OutboxRow, RpcCall]]) -> int:
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
        self, connection: Connection, rows: Iterable[OutboxRow], failures: dict[int, str]
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


def _snapshot(row: Any) -> OutboxRow:
    ext_ids = tuple(from_base64(x, field="stored") for x in row.external_ids)
    entry = Entry(bytes.fromhex(row.chain_id), ext_ids, bytes(row.content))
    reveal = RpcCall.from_json(row.reveal_call) if row.reveal_call else None
    return OutboxRow(row.id, entry, row.is_first, row.state, row.attempts, reveal)


def _bulk_update(connection: Connection, changes: list[dict[str, Any]]) -> None:
    """``UPDATE entries SET ... WHERE id = :b_id`` for each dict (same keys: one executemany)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for change in changes:
        groups.setdefault(tuple(sorted(change)), []).append(change)
    for keys, rows in groups.items():
        values: dict[str, Any] = {k: bindparam(k) for k in keys if k != "b_id"}
        statement = update(_ENTRIES).where(_ENTRIES.c.id == bindparam("b_id")).values(values)
        connection.execute(statement, rows)
