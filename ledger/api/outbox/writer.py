"""Group commit of accepted writes: one writer thread, one transaction per batch.

Every write request (operations 2 and 6) is handed to ``GroupCommitWriter.submit``; the
entries of one bulk write (``ledger.api.http.bulk``) together to ``submit_many``, which keeps
them in one transaction (a bulk larger than ``max_batch`` is a transaction of its own). A
single thread takes every request waiting in its queue (at most ``max_batch``), records
them with ``intake.accept_batch`` in one transaction, commits, and only then answers each
request. So each HTTP 202 still follows a durable commit of its own row, but one commit
(one fsync on SQLite, one WAL flush on PostgreSQL) serves all writes that arrived while
the previous commit was running.

Failures: business refusals (``WriteRefused``) come back per request and do not affect the
other requests of the batch. A database error rolls the batch back; its requests are then
written one per transaction, so a single faulty request fails alone; a unique-key race or
deadlock with another process is retried up to ``retries`` times.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from ledger.api.db import Database
from ledger.api.errors import LedgerApiError
from ledger.api.outbox.intake import WriteOutcome, WriteRequest, accept_batch
from ledger.core.clock import Clock

__all__ = ["GroupCommitWriter", "Result", "WriterClosed", "WriterStats"]

_log = logging.getLogger(__name__)
_STOP = object()

#: What ``submit_many`` answers for one request: its outcome or its error.
Result = WriteOutcome | Exception


class WriterClosed(LedgerApiError, RuntimeError):
    """The writer is stopped (the service is shutting down); nothing was written."""


@dataclass
class WriterStats:
    """Counters since start: ``batches`` committed and ``writes`` answered."""

    batches: int = 0
    writes: int = 0

    @property
    def mean_batch(self) -> float:
        return self.writes / self.batches if self.batches else 0.0


@dataclass
class _Job:
    """Requests answered together: one (``many=False``: the future gets its outcome or
    raises its error) or a bulk's (``many=True``: the future gets the list of outcomes and
    errors, in order)."""

    requests: tuple[WriteRequest, ...]
    future: asyncio.Future[Any] | Future[Any]
    loop: asyncio.AbstractEventLoop | None
    many: bool = False


class GroupCommitWriter:
    """The single writer of accepted writes (module docstring).

    Args:
        db: the database of chains and entries.
        clock: source of the acceptance time (``created_at``), read once per batch.
        max_batch: most requests in one transaction.
        retries: attempts of a single request after unique-key races or deadlocks.
    """

    def __init__(
        self, db: Database, *, clock: Clock, max_batch: int = 512, retries: int = 3
    ) -> None:
        self._db, self._clock = db, clock
        self._max_batch, self._retries = max_batch, retries
        self._lock_chains = not db.is_sqlite
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = True
        self.stats = WriterStats()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread (no-op when running)."""
        if self._thread is not None:
            return
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="notary-api-writer", daemon=True)
        self._thread.start()

    def stop(self, *, timeout_s: float = 30.0) -> None:
        """Stop taking requests, write every request already queued, end the thread."""
        if self._thread is None:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
        self._thread = None

    # -- submission ------------------------------------------------------------------------

    async def submit(self, request: WriteRequest) -> WriteOutcome:
        """Write ``request``; returns once its transaction committed.

        Raises:
            WriteRefused: the write cannot be done (nothing written for it).
            WriterClosed: the writer is stopped.
            sqlalchemy.exc.SQLAlchemyError: the database failed for this request.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[WriteOutcome] = loop.create_future()
        self._put(_Job((request,), future, loop))
        return await future

    async def submit_many(self, requests: Sequence[WriteRequest]) -> list[Result]:
        """Write ``requests`` in one transaction; returns once it committed.

        Returns:
            one item per request, in order: its ``WriteOutcome``, or the exception that
            ``submit`` would have raised for it (``WriteRefused``, a database error).

        Raises:
            WriterClosed: the writer is stopped (nothing written).
        """
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Result]] = loop.create_future()
        self._put(_Job(tuple(requests), future, loop, many=True))
        return await future

    def submit_wait(self, request: WriteRequest, *, timeout_s: float | None = None) -> WriteOutcome:
        """Blocking ``submit`` for callers outside an event loop (same errors)."""
        future: Future[WriteOutcome] = Future()
        self._put(_Job((request,), future, None))
        return future.result(timeout_s)

    def _put(self, job: _Job) -> None:
        if self._closed:
            raise WriterClosed("the writer is stopped")
        self._queue.put(job)

    # -- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            if item is _STOP:
                stopping = True
                batch = self._drain([])
            else:
                batch = [item]
                stopping = self._fill(batch)
            for group in self._groups(batch):
                self._process(group)

    def _fill(self, batch: list[_Job]) -> bool:
        """Add waiting jobs up to ``max_batch`` requests; True when the stop marker was met."""
        size = sum(len(job.requests) for job in batch)
        while size < self._max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                self._drain(batch)
                return True
            batch.append(item)
            size += len(item.requests)
        return False

    def _groups(self, jobs: list[_Job]) -> Iterator[list[_Job]]:
        """``jobs`` in transactions of at most ``max_batch`` requests, a job never split
        (a bulk above ``max_batch`` goes alone)."""
        group: list[_Job] = []
        size = 0
        for job in jobs:
            if group and size + len(job.requests) > self._max_batch:
                yield group
                group, size = [], 0
            group.append(job)
            size += len(job.requests)
        if group:
            yield group

    def _drain(self, batch: list[_Job]) -> list[_Job]:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch
            if item is not _STOP:
                batch.append(item)

    def _process(self, batch: list[_Job]) -> None:
        requests = [request for job in batch for request in job.requests]
        try:
            results = self._commit(requests)
        except Exception as exc:  # noqa: BLE001 - every waiting request must be answered
            _log.exception("write batch failed")
            results = [exc] * len(requests)
        self.stats.batches += 1
        self.stats.writes += len(requests)
        _deliver(batch, results)

    def _commit(self, requests: Sequence[WriteRequest]) -> list[Any]:
        try:
            return self._transaction(requests)
        except DBAPIError as exc:
            if len(requests) == 1:
                return [self._commit_one(requests[0], exc)]
            _log.warning(
                "write batch of %d rolled back (%s); writing one by one", len(requests), exc
            )
        return [self._commit_one(request, None) for request in requests]

    def _commit_one(self, request: WriteRequest, error: DBAPIError | None) -> Any:
        attempts = 0 if error is None else 1
        while True:
            if error is not None and (attempts >= self._retries or not _retryable(error)):
                return error
            try:
                return self._transaction([request])[0]
            except DBAPIError as exc:
                error, attempts = exc, attempts + 1

    def _transaction(self, requests: Sequence[WriteRequest]) -> list[Any]:
        with self._db.transaction() as connection:
            return accept_batch(
                connection, requests, now=self._clock.now(), lock_chains=self._lock_chains
            )


def _retryable(error: DBAPIError) -> bool:
    return isinstance(error, IntegrityError | OperationalError)


def _deliver(batch: list[_Job], results: Sequence[Any]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Job, Any]]] = {}
    start = 0
    for job in batch:
        end = start + len(job.requests)
        result = list(results[start:end]) if job.many else results[start]
        start = end
        if job.loop is None:
            _settle(job.future, result)
        else:
            by_loop.setdefault(job.loop, []).append((job, result))
    for loop, pairs in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(_settle_all, pairs)


def _settle_all(pairs: list[tuple[_Job, Any]]) -> None:
    for job, result in pairs:
        _settle(job.future, result)


def _settle(future: asyncio.Future[Any] | Future[Any], result: Any) -> None:
    if future.done():  # the request was cancelled (client gone); its write stands
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
