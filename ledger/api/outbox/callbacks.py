"""Status callbacks (docs/rest-api.md §6 (Events)): target URLs, the durable queue,
signing and delivery.

Delivery: ``POST <callback_url with stage parameters>`` with the JSON body ``{}``.

=========  ======================================================
stage      query parameters added to the caller's own parameters
=========  ======================================================
multi_az   ``entry_hash``, ``stage=multi_az``
ledger     ``dblock_keymr``, ``stage=ledger``
anchor     ``anchor_block_hash``, ``stage=anchor``
failed     ``entry_hash``, ``reason``, ``stage=failed`` (an extension: sent to every write
           that asked for any callback, docs/rest-api.md §6)
=========  ======================================================

A caller parameter with the same name as one added is replaced. Callbacks are queued in
the ``callbacks`` table in the same transaction as the stage change, delivered at least
once (a crash between the POST and its bookkeeping repeats the POST: receivers should be
idempotent on ``stage`` + their own identifiers), retried with exponential back-off until
``callback_give_up_s`` after queuing. Any 2xx answer counts as delivered. The queue is the
database table, so a restart of the API loses no callback and keeps each one's back-off.

Slow receivers: the POSTs of one pass run concurrently on a small thread pool (at most a
few per receiver host, so one slow host cannot take every thread), and a pass waits for
them only ``pass_budget_s``. A receiver that accepts connections but never answers
therefore costs the worker's pass at most that budget, not one POST timeout per queued
callback; its POSTs finish (or time out) in the background and record their own outcome,
and a callback still in flight is not picked again meanwhile.

Authenticity: every POST carries ``X-Notary-Timestamp`` (Unix seconds) and
``X-Notary-Signature`` (HMAC-SHA256 over the timestamp, the exact URL posted to and the
body), the rule of ``ledger.core.callback_signature``, which receivers check with the
same module.

Callback URLs are checked by the rules of ``ledger.api.outbox.callback_targets``
(``HostPolicy``): at acceptance, and again before every delivery.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from ledger.api.db import Database
from ledger.api.models import CallbackRow, CallbackStatus, EntryRow, Stage
from ledger.api.outbox.callback_targets import HostPolicy
from ledger.core.callback_signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign_callback
from ledger.core.clock import Clock

__all__ = [
    "DEFAULT_CALLBACK_STAGES",
    "CallbackDispatcher",
    "callback_target",
    "callback_values",
    "enqueue_callback",
]

DEFAULT_CALLBACK_STAGES: tuple[str, ...] = (Stage.LEDGER.value, Stage.ANCHOR.value)
_BODY = b"{}"
_log = logging.getLogger(__name__)

_ENTRIES = cast(Table, EntryRow.__table__)
_CALLBACKS = cast(Table, CallbackRow.__table__)


def callback_target(callback_url: str, params: dict[str, str]) -> str:
    """``callback_url`` with ``params`` added to its query (caller's own parameters kept)."""
    parts = urlsplit(callback_url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query = urlencode([*kept, *params.items()])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def enqueue_callback(
    session: Session, entry: EntryRow, stage: Stage, params: dict[str, str], *, now: float
) -> CallbackRow | None:
    """Queue the ``stage`` callback of ``entry`` if it asked for one (same transaction).

    Args:
        params: the stage's parameters without ``stage`` (e.g. ``{"dblock_keymr": hex}``).
    """
    values = callback_values(entry, stage, params, now=now)
    if values is None:
        return None
    row = CallbackRow(**values)
    session.add(row)
    return row


def callback_values(
    entry: Any, stage: Stage, params: dict[str, str], *, now: float
) -> dict[str, Any] | None:
    """Column values of the ``callbacks`` row for ``stage`` of ``entry``, or ``None``.

    ``entry`` is anything with ``id``, ``callback_url`` and ``callback_stages`` (an
    ``EntryRow`` or a result row); ``None`` when it asked for no callback at this stage.
    Stage ``failed`` is never listed in ``callback_stages``: it is sent to every write
    that asked for at least one callback.
    """
    stages = entry.callback_stages or ()
    asked = bool(stages) if stage is Stage.FAILED else stage.value in stages
    if not entry.callback_url or not asked:
        return None
    return {
        "entry_id": entry.id,
        "stage": stage.value,
        "url": callback_target(entry.callback_url, {**params, "stage": stage.value}),
        "status": CallbackStatus.PENDING.value,
        "created_at": now,
        "next_attempt_at": now,
        "attempts": 0,
    }


@dataclass(frozen=True)
class _Due:
    id: int
    url: str
    created_at: float
    attempts: int

    @property
    def host(self) -> str:
        """``host:port`` of the receiver (the unit of the per-host limit)."""
        return urlsplit(self.url).netloc.lower()


class CallbackDispatcher:
    """Delivers due rows of the ``callbacks`` table (module docstring: slow receivers).

    Args:
        db: the API database.
        http: client used for the POSTs (its timeout applies); must be thread-safe
            (``httpx.Client`` is).
        secret: HMAC key of the signature header.
        policy: host policy checked before each POST.
        clock: time source.
        retry_base_s, retry_max_s: back-off after the n-th failure is
            ``min(retry_max_s, retry_base_s * 2**(n-1))`` seconds.
        give_up_s: a callback still undelivered this long after queuing is dropped.
        max_concurrency: POSTs in flight at once (threads of the pool).
        per_host: POSTs in flight at once to one receiver host.
        pass_budget_s: longest ``deliver_due`` waits for the POSTs it started, seconds.
    """

    def __init__(
        self,
        db: Database,
        http: httpx.Client,
        *,
        secret: bytes,
        policy: HostPolicy,
        clock: Clock,
        retry_base_s: float,
        retry_max_s: float,
        give_up_s: float,
        max_concurrency: int = 16,
        per_host: int = 4,
        pass_budget_s: float = 1.0,
    ) -> None:
        if max_concurrency < 1 or per_host < 1:
            raise ValueError("max_concurrency and per_host must be at least 1")
        self._db, self._http, self._secret = db, http, secret
        self._policy, self._clock = policy, clock
        self._retry_base_s, self._retry_max_s, self._give_up_s = (
            retry_base_s,
            retry_max_s,
            give_up_s,
        )
        self._max_concurrency, self._per_host = max_concurrency, per_host
        self._pass_budget_s = pass_budget_s
        self._pool: ThreadPoolExecutor | None = None  # made on first use
        self._lock = threading.Lock()
        self._in_flight: dict[int, str] = {}  # callback id -> host, POST under way

    def deliver_due(self, *, limit: int = 100) -> int:
        """Start the POSTs of due callbacks (oldest first, at most ``limit``) and wait for
        them up to ``pass_budget_s``.

        Returns:
            how many of the callbacks started here were delivered within that wait (those
            still in flight record their outcome when they finish).
        """
        futures = [self._start(due) for due in self._due(limit)]
        delivered = 0
        if futures:
            done, _ = wait(futures, timeout=self._pass_budget_s)
            delivered = sum(f.result() for f in done)
        if not self.in_flight():
            self.close()  # no thread is kept between passes that leave nothing in flight
        return delivered

    def in_flight(self) -> int:
        """Callbacks whose POST is under way now."""
        with self._lock:
            return len(self._in_flight)

    def close(self) -> None:
        """Wait for the POSTs in flight (each ends by the client's timeout) and release the
        threads. Call from the thread that calls ``deliver_due`` (it starts a new pool)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _start(self, due: _Due) -> Future[int]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self._max_concurrency, thread_name_prefix="notary-api-callback"
            )
        return self._pool.submit(self._deliver_tracked, due)

    def _due(self, limit: int) -> list[_Due]:
        """Due rows not in flight, at most ``per_host`` in flight per host; marks them."""
        with self._lock:
            busy = dict(self._in_flight)
        now = self._clock.now()
        query = (
            select(CallbackRow)
            .where(CallbackRow.status == CallbackStatus.PENDING.value)
            .where(CallbackRow.next_attempt_at <= now)
            .order_by(CallbackRow.next_attempt_at, CallbackRow.id)
            # Room beyond ``limit``: rows of hosts at their in-flight cap are skipped, and
            # the next hosts' rows should not wait behind them.
            .limit(4 * limit + len(busy))
        )
        with self._db.read() as session:
            rows = session.scalars(query).all()
            candidates = [_Due(r.id, r.url, r.created_at, r.attempts) for r in rows]
        per_host = Counter(busy.values())
        chosen: list[_Due] = []
        for due in candidates:
            if len(chosen) >= limit:
                break
            if due.id in busy or per_host[due.host] >= self._per_host:
                continue  # the host's other callbacks wait for a later pass
            per_host[due.host] += 1
            chosen.append(due)
        with self._lock:
            self._in_flight.update((due.id, due.host) for due in chosen)
        return chosen

    def _deliver_tracked(self, due: _Due) -> int:
        try:
            return self._deliver(due)
        except Exception:  # a pool thread: log, the row stays pending for a later pass
            _log.exception("callback %s: delivery failed", due.id)
            return 0
        finally:
            with self._lock:
                self._in_flight.pop(due.id, None)

    def _deliver(self, due: _Due) -> int:
        now = self._clock.now()
        if now - due.created_at > self._give_up_s:
            self._finish(due, status=CallbackStatus.DROPPED, error="gave up: time limit reached")
            return 0
        refusal = self._policy.refusal_at_delivery(due.url)
        if refusal is not None:
            self._finish(due, status=CallbackStatus.DROPPED, error=f"refused: {refusal}")
            return 0
        error = self._post(due.url, timestamp=int(now))
        if error is None:
            self._finish(due, status=CallbackStatus.DELIVERED, error=None)
            return 1
        self._retry_later(due, error)
        return 0

    def _post(self, url: str, *, timestamp: int) -> str | None:
        headers = {
            "content-type": "application/json",
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: sign_callback(self._secret, timestamp=timestamp, url=url, body=_BODY),
        }
        try:
            response = self._http.post(url, content=_BODY, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
        except RuntimeError as exc:  # the client was closed under us: the API is stopping
            return f"not sent: {exc}"
        return None if response.is_success else f"HTTP {response.status_code}"

    def _finish(self, due: _Due, *, status: CallbackStatus, error: str | None) -> None:
        with self._db.write() as session:
            row = session.get(CallbackRow, due.id)
            if row is None:
                return
            row.status = status.value
            row.attempts = due.attempts + (status is CallbackStatus.DELIVERED)
            row.last_error = error
            if status is CallbackStatus.DELIVERED:
                row.delivered_at = self._clock.now()
        if error:
            _log.warning("callback %s %s: %s", due.id, status.value, error)

    def _retry_later(self, due: _Due, error: str) -> None:
        attempts = due.attempts + 1
        delay = min(self._retry_max_s, self._retry_base_s * 2 ** (attempts - 1))
        with self._db.write() as session:
            row: Any = session.get(CallbackRow, due.id)
            if row is not None:
                row.attempts = attempts
                row.last_error = error
                row.next_attempt_at = self._clock.now() + delay
