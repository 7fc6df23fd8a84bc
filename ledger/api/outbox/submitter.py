"""Submitting accepted writes: compose, commit and reveal the outbox rows (worker step 2).

Up to ``rows_per_pass`` due rows, in chunks of ``chunk_rows``: rows in state ``pending``
are composed by the wallet (one JSON-RPC batch per chunk, the next chunk composed in a
thread while the node handles this one) and their commits sent to the node (one batch);
an accepted commit, or Repeated Commit (``ErrorCode.REPEATED_COMMIT``), moves the row to
``committed`` together with the composed reveal call, in one transaction. Rows in
``committed`` have their reveal sent (one batch) and move to ``revealed``. Database
changes are set-based (``executemany``), not row by row.

Before its first submission a worker reconciles (``reconcile``): an outbox row still
``pending`` or ``committed`` whose entry the node already holds (revealed, or in a saved
block) is marked ``revealed`` instead of being committed again. Its outcome was recorded
on the node but not here: the API database is older than the node's (a backup takes the
API's snapshot before the node's, and writes submitted between the two are in the node's
copy only). The node accepts a second commit of an entry once the first is consumed by
its reveal, so without this step a restored stack would record such entries twice.

New chains go first; an entry waits until its chain's first entry is revealed (one whose
chain's first entry failed is given up instead, ``ledger.api.outbox.failures``). A commit is
never sent again once its outcome is recorded; only a commit whose reply was lost (crash
or outage after sending) is sent again, and the node answers it Repeated Commit.

Errors answered by wallet or node (``ledger.api.outbox.refusals``): an under-funded commit leaves
the row ``pending`` with its attempts, tells the ``CreditGate``, and no further commit is
sent while the gate is dry (reveals of committed rows still go; ``due_rows`` then returns
only those). A refusal of the write itself gives the row up at once; other errors are
retried with exponential back-off (doubling from ``retry_base_s``, at most an hour) and
give the row up after ``max_attempts``. A row given up moves to stage ``failed`` with its
reason (``ledger.api.outbox.failures``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, select, update
from sqlalchemy.orm import Session

from ledger.api.db import Database
from ledger.api.encoding import from_base64
from ledger.api.models import EntryRow, Stage, SubmitState, WriteFailure
from ledger.api.outbox.credit_gate import CreditGate
from ledger.api.outbox.driver_sql import driver_sql, marks
from ledger.api.outbox.failures import GiveUp, orphan_reason, record_failures
from ledger.api.outbox.gateway import (
    ComposedCalls,
    Composition,
    LedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.outbox.refusals import Refusal, RefusalKind, classify
from ledger.core.clock import Clock
from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry
from ledger.dbjson import json_text, json_value
from ledger.jsonrpc.codes import ErrorCode

__all__ = ["OutboxRow", "Submitter"]

_MAX_RETRY_DELAY_S = 3600.0
_log = logging.getLogger(__name__)
_ENTRIES = cast(Table, EntryRow.__table__)
_FAILURES = cast(Table, WriteFailure.__table__)
#: What ``_snapshot`` reads of an ``entries`` row.
_OUTBOX_COLUMNS = tuple(
    _ENTRIES.c[name]
    for name in (
        "id",
        "chain_id",
        "external_ids",
        "content",
        "is_first",
        "state",
        "attempts",
        "reveal_call",
    )
)


@dataclass(frozen=True)
class OutboxRow:
    """Snapshot of one row to submit."""

    id: int
    entry: Entry
    new_chain: bool
    state: str
    attempts: int
    reveal: RpcCall | None
    chain_failure: str | None = None  # an entry whose chain's first entry failed: why

    def cost_ec(self) -> int:
        """Credits its commit pays (docs/formats.md §1.4; ten more for a new chain)."""
        return self.entry.cost() + (NEW_CHAIN_FEE_EC if self.new_chain else 0)


@dataclass(frozen=True)
class _Composed:
    """A chunk composed by the wallet: its rows, the (row, calls) pairs, refusals by row id."""

    rows: list[OutboxRow]
    pairs: list[tuple[OutboxRow, ComposedCalls]]
    failures: dict[int, Refusal]


class Submitter:
    """Moves due outbox rows through commit and reveal (module docstring).

    Args:
        db: the API database.
        gateway: wallet + node access.
        clock: time source (due rows, back-off).
        credits: the paying address's gate: no commit is sent while it is dry.
        rows_per_pass: most due rows of one kind (new chains, entries) ``due_rows`` returns.
        chunk_rows: rows per compose / commit / reveal round trip.
        max_attempts: transient errors answered by wallet/node before a row is ``failed``.
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
        credits: CreditGate,
        rows_per_pass: int,
        chunk_rows: int,
        max_attempts: int,
        retry_base_s: float,
    ) -> None:
        self._db, self._gateway, self._clock, self._credits = db, gateway, clock, credits
        self.rows_per_pass, self._chunk_rows = rows_per_pass, chunk_rows
        self._max_attempts, self._retry_base_s = max_attempts, retry_base_s
        self._composer: ThreadPoolExecutor | None = None  # made on first use
        self._given_up = 0  # rows given up since ``take_given_up``

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
        chunks composed but not committed are dropped (composing sends nothing), as are
        those of the chunks after the credit gate went dry (their reveals still go).
        """
        rows = self._give_up_orphans(rows)
        size = self._chunk_rows
        chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
        ahead = self._compose_later(chunks[0]) if chunks else None
        for index, chunk in enumerate(chunks):
            assert ahead is not None
            composed = ahead.result()
            ahead = self._compose_later(chunks[index + 1]) if index + 1 < len(chunks) else None
            try:
                committed = self._commit(composed) if self._credits.funded else []
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
        ``rows_per_pass``; entries only once their chain's first entry is revealed (or
        failed: ``submit`` gives those up). While the credit gate is dry, ``committed``
        rows only (the others are held)."""
        template = _due_rows_sql(new_chains=new_chains, funded=self._credits.funded)
        params = (new_chains, self._clock.now(), self.rows_per_pass)
        with self._db.read() as session:
            connection = session.connection()
            rows = connection.exec_driver_sql(driver_sql(connection, template), params)
            snapshots = [_snapshot_of(*row) for row in rows]
            if not new_chains:
                snapshots = self._with_chain_failures(session, snapshots)
        return snapshots

    def reconcile(self) -> int:
        """Mark ``revealed`` the ``pending`` / ``committed`` rows whose entry the node
        already holds (module docstring); returns how many. Pages of ``chunk_rows`` rows,
        one ``ack`` batch each; an item the node answers with an error is left as it is.

        Raises: ``GatewayUnavailable`` when the node cannot be reached (rows of the pages
        already asked keep their change; a later call starts over).
        """
        e = _ENTRIES.c
        states = [SubmitState.PENDING.value, SubmitState.COMMITTED.value]
        held = {"DBlockConfirmed", "TransactionACK"}
        after, marked = 0, 0
        while True:
            query = (
                select(e.id, e.chain_id, e.entry_hash)
                .where(e.state.in_(states), e.id > after)
                .order_by(e.id)
                .limit(self._chunk_rows)
            )
            with self._db.read() as session:
                rows = session.execute(query).all()
            if not rows:
                return marked
            after = rows[-1].id
            statuses = self._gateway.entry_statuses([(r.chain_id, r.entry_hash) for r in rows])
            changes = [
                {"b_id": r.id, "state": SubmitState.REVEALED.value, "last_error": None}
                for r, status in zip(rows, statuses, strict=True)
                if isinstance(status, str) and status in held
            ]
            if changes:
                with self._db.transaction() as connection:
                    _bulk_update(connection, changes)
                marked += len(changes)
                _log.info("reconcile: %d rows the node already holds marked revealed", len(changes))

    def take_given_up(self) -> int:
        """Rows this submitter gave up since the last call (for the pass report)."""
        given_up, self._given_up = self._given_up, 0
        return given_up

    def oldest_held_cost(self) -> int:
        """Credits the oldest write waiting for its commit pays; 0 when none waits."""
        e = _ENTRIES.c
        query = (
            select(*_OUTBOX_COLUMNS)
            .where(e.state == SubmitState.PENDING.value)
            .order_by(e.id)
            .limit(1)
        )
        with self._db.read() as session:
            row = session.execute(query).first()
        return 0 if row is None else _snapshot_of(*row).cost_ec()

    @staticmethod
    def _with_chain_failures(session: Session, rows: list[OutboxRow]) -> list[OutboxRow]:
        """``rows`` with ``chain_failure`` set on the entries of chains whose first entry
        failed (one indexed look-up of those first entries)."""
        chains = {r.entry.chain_id.hex() for r in rows}
        if not chains:
            return rows
        e, f = _ENTRIES.c, _FAILURES.c
        query = (
            select(e.chain_id, f.reason)
            .join(_FAILURES, f.entry_id == e.id)
            .where(e.chain_id.in_(sorted(chains)), e.is_first.is_(True))
        )
        failed = dict(session.execute(query).tuples().all())
        return [
            replace(r, chain_failure=failed[r.entry.chain_id.hex()])
            if r.entry.chain_id.hex() in failed
            else r
            for r in rows
        ]

    def _give_up_orphans(self, rows: list[OutboxRow]) -> list[OutboxRow]:
        """Give up the rows whose chain failed; the others, to submit."""
        orphans = [r for r in rows if r.chain_failure is not None]
        if not orphans:
            return rows
        give_ups = [
            GiveUp(r.id, orphan_reason(r.chain_failure or ""), r.attempts, permanent=False)
            for r in orphans
        ]
        with self._db.transaction() as connection:
            self._given_up += record_failures(connection, give_ups, now=self._clock.now())
        return [r for r in rows if r.chain_failure is None]

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
            r.id: classify("compose", c)
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
                failures[row.id] = classify("commit", result)
            else:
                done.append((row, calls.reveal))
        with self._db.transaction() as connection:
            _record_committed(connection, done)
            self._record_failures(connection, composed.rows, failures)
        return done

    def _reveal(self, ready: list[tuple[OutboxRow, RpcCall]]) -> int:
        """Send the reveals of committed rows; returns how many the node accepted."""
        if not ready:
            return 0
        results = self._gateway.submit([reveal for _, reveal in ready])
        failures: dict[int, Refusal] = {}
        revealed: list[int] = []
        for (row, _), result in zip(ready, results, strict=True):
            if isinstance(result, RpcFailure):
                failures[row.id] = classify("reveal", result)
            else:
                revealed.append(row.id)
        with self._db.transaction() as connection:
            _record_revealed(connection, revealed)
            self._record_failures(connection, [r for r, _ in ready], failures)
        return len(revealed)

    def _record_failures(
        self, connection: Connection, rows: Iterable[OutboxRow], failures: dict[int, Refusal]
    ) -> None:
        """Book the refusals of ``rows`` (module docstring): hold, retry later or give up."""
        now = self._clock.now()
        unfunded: Refusal | None = None
        give_ups: list[GiveUp] = []
        for row in rows:
            refusal = failures.get(row.id)
            if refusal is None:
                continue
            if refusal.kind is RefusalKind.UNFUNDED:
                unfunded = refusal  # held: no attempt used, nothing written
                continue
            attempts = row.attempts + 1
            delay = min(_MAX_RETRY_DELAY_S, self._retry_base_s * 2 ** (attempts - 1))
            changes: dict[str, Any] = {
                "b_id": row.id,
                "attempts": attempts,
                "last_error": refusal.text[:2000],
                "next_attempt_at": now + delay,
            }
            _bulk_update(connection, [changes])
            _log.warning("entry row %s attempt %s failed: %s", row.id, attempts, refusal.text)
            if refusal.kind is RefusalKind.PERMANENT:
                reason = f"refused by the ledger: {refusal.text}"
                give_ups.append(GiveUp(row.id, reason, attempts, permanent=True))
            elif attempts >= self._max_attempts:
                reason = f"gave up after {attempts} attempts; last error: {refusal.text}"
                give_ups.append(GiveUp(row.id, reason, attempts, permanent=False))
        if give_ups:
            self._given_up += record_failures(connection, give_ups, now=now)
        if unfunded is not None:
            self._credits.refused(balance_ec=unfunded.balance_ec)


@functools.cache
def _due_rows_sql(*, new_chains: bool, funded: bool) -> str:
    """The ``due_rows`` statement of one kind as driver SQL (a ``driver_sql`` template):
    the conditions of the module docstring (an entry waits until its chain's first entry
    is revealed or failed), parameters ``(is_first, now, limit)``, the columns of
    ``_OUTBOX_COLUMNS`` in order. Read at the driver, the rows skip SQLAlchemy's result
    processing: 5,000 rows a pass, on the thread that also commits and reveals them."""
    table = _ENTRIES.name
    states = [f"'{SubmitState.COMMITTED.value}'"]
    if funded:
        states.append(f"'{SubmitState.PENDING.value}'")
    columns = ", ".join(f"e.{c.name}" for c in _OUTBOX_COLUMNS)
    sql = (
        f"SELECT {columns} FROM {table} AS e WHERE e.state IN ({', '.join(states)})"
        " AND e.is_first = ? AND e.next_attempt_at <= ?"
    )
    if not new_chains:
        settled_states = f"'{SubmitState.REVEALED.value}', '{SubmitState.FAILED.value}'"
        settled_stages = f"'{Stage.LEDGER.value}', '{Stage.ANCHOR.value}'"
        sql += (
            f" AND EXISTS (SELECT 1 FROM {table} AS f WHERE f.chain_id = e.chain_id"
            f" AND f.is_first = {_TRUE} AND (f.state IN ({settled_states})"
            f" OR f.stage IN ({settled_stages})))"
        )
    return sql + " ORDER BY e.id LIMIT ?"


def _snapshot_of(
    row_id: int,
    chain_id: str,
    external_ids: Any,
    content: bytes,
    is_first: Any,
    state: str,
    attempts: int,
    reveal_call: Any,
) -> OutboxRow:
    """The ``OutboxRow`` of an ``_OUTBOX_COLUMNS`` row, read by SQLAlchemy or at the driver
    (``_due_rows_sql``): there, JSON columns are text on SQLite (read by ``json_value``,
    as the engine reads them) and decoded values on PostgreSQL, and ``is_first`` is 0/1
    on SQLite."""
    if isinstance(external_ids, str | bytes):
        external_ids = json_value(external_ids)
    if isinstance(reveal_call, str | bytes):
        reveal_call = json_value(reveal_call)
    ext_ids = tuple(from_base64(x, field="stored") for x in external_ids)
    entry = Entry(bytes.fromhex(chain_id), ext_ids, bytes(content))
    reveal = RpcCall.from_json(reveal_call) if reveal_call else None
    return OutboxRow(row_id, entry, bool(is_first), state, attempts, reveal)


#: A commit's outcome: the row is ``committed`` and keeps the reveal to send (JSON text).
_COMMITTED_SQL = f"UPDATE {_ENTRIES.name} SET state = ?, reveal_call = {{json}} WHERE id = ?"
#: Most ids in one ``IN`` list (well under every driver's limit on parameters).
_IN_CHUNK = 500
#: A true ``is_first`` in literal SQL: both SQLite (1) and PostgreSQL (boolean) take it.
_TRUE = "TRUE"


def _record_committed(connection: Connection, done: list[tuple[OutboxRow, RpcCall]]) -> None:
    """Rows ``committed`` with their reveal calls: one driver-level ``executemany`` (no
    per-row SQLAlchemy parameter processing; the reveal's JSON written by ``json_text``,
    as the column's serializer writes it)."""
    if not done:
        return
    committed = SubmitState.COMMITTED.value
    rows = [(committed, json_text(reveal.to_json()), row.id) for row, reveal in done]
    connection.exec_driver_sql(driver_sql(connection, _COMMITTED_SQL), rows)


def _record_revealed(connection: Connection, ids: list[int]) -> None:
    """Rows ``revealed`` (error cleared): one ``UPDATE ... WHERE id IN (...)`` per chunk
    of ids, not a statement per row."""
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = ids[start : start + _IN_CHUNK]
        template = (
            f"UPDATE {_ENTRIES.name} SET state = ?, last_error = NULL"
            f" WHERE id IN ({marks(len(chunk))})"
        )
        params = (SubmitState.REVEALED.value, *chunk)
        connection.exec_driver_sql(driver_sql(connection, template), params)


def _bulk_update(connection: Connection, changes: list[dict[str, Any]]) -> None:
    """``UPDATE entries SET ... WHERE id = :b_id`` for each dict (same keys: one executemany)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for change in changes:
        groups.setdefault(tuple(sorted(change)), []).append(change)
    for keys, rows in groups.items():
        values: dict[str, Any] = {k: bindparam(k) for k in keys if k != "b_id"}
        statement = update(_ENTRIES).where(_ENTRIES.c.id == bindparam("b_id")).values(values)
        connection.execute(statement, rows)
