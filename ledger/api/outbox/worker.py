"""Background worker of the publishing API: submit the outbox, follow blocks and anchors.

The coordinator of three parts, each in its own module:

1. Follow blocks (``ledger.api.outbox.block_follower``): entries found in new directory blocks
   move to stage ``ledger``.
2. Submit (``ledger.api.outbox.submitter``): accepted rows are composed, committed and revealed;
   only once the block cursor is set (see the block follower). Before it, the paying
   address's balance is looked up when the credit gate says so
   (``ledger.api.outbox.credit_gate``: every minute while funded, with back-off while dry); the
   first pass adopts rows an older version gave up (``ledger.api.outbox.failures.adopt_legacy``)
   and reconciles the outbox with the node (``Submitter.reconcile``: rows the node
   already holds are not submitted again).
3. Follow anchors (``ledger.api.outbox.anchor_follower``): entries of anchored directory blocks
   move to stage ``anchor``.
4. Callbacks due are delivered (``CallbackDispatcher``).

One pass (``run_once``) runs these four steps; the thread started by ``start()`` repeats it
every ``poll_interval_s`` until ``stop()``. A pass that finds more work than it may do
(rows or blocks) is followed at once by the next, without the pause. An outage of wallet
or node (``GatewayUnavailable``) ends its step, not the pass; it is logged once, and not
at all in the first seconds of the thread while the services start.

Every stage change queues the matching callback in the same transaction. One worker per
database: two workers on one database would submit the same rows.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ledger.api.db import Database
from ledger.api.outbox.anchor_follower import AnchorFollower
from ledger.api.outbox.block_follower import LAST_HEIGHT_KEY, BlockFollower
from ledger.api.outbox.callbacks import CallbackDispatcher
from ledger.api.outbox.credit_gate import CreditGate
from ledger.api.outbox.failures import adopt_legacy
from ledger.api.outbox.gateway import GatewayUnavailable, LedgerGateway
from ledger.api.outbox.stage_moves import StageMoves, StageObserver
from ledger.api.outbox.submitter import Submitter
from ledger.core.clock import Clock

# LAST_HEIGHT_KEY: the block cursor's key, part of the worker's surface (the sandbox resets it).
__all__ = ["LAST_HEIGHT_KEY", "LedgerWorker", "PassReport"]

#: Outages in the first seconds of the thread are logged at DEBUG (services starting).
_STARTUP_GRACE_S = 10.0
_log = logging.getLogger(__name__)


@dataclass
class PassReport:
    """What one pass did (counts of rows) and the outages it met."""

    committed: int = 0
    revealed: int = 0
    confirmed: int = 0
    anchored: int = 0
    callbacks: int = 0
    failed: int = 0  # rows given up
    errors: list[str] = field(default_factory=list)
    backlog: bool = False  # more rows were due than one pass submits


class LedgerWorker:
    """Moves accepted rows onto the ledger and follows them through the stages.

    Args:
        db: the API database.
        gateway: wallet + node access.
        clock: time source.
        credits: the paying address's gate (``None``: one with the default delays).
        dispatcher: callback deliverer (``None``: callbacks stay queued).
        batch_size: most directory blocks, anchor heights or callbacks per step of a pass.
        submit_rows_per_pass: most due rows (of each kind: new chains, entries) one pass
            submits; a pass that reaches it is followed at once by the next (no pause).
        submit_chunk_rows: rows per compose / commit / reveal round trip; the wallet composes
            the next chunk while the node takes the commits and reveals of this one.
        max_attempts: transient errors answered by wallet/node before a row is ``failed``.
        retry_base_s: first back-off delay after such an error (doubles, capped at 1 h).
        poll_interval_s: pause between passes of the thread.
        anchor_poll_interval_s: least time between two anchor look-ups.
        stage_observer: told of the rows moved to ``ledger`` and ``anchor`` (metrics).
    """

    def __init__(
        self,
        db: Database,
        gateway: LedgerGateway,
        *,
        clock: Clock,
        credits: CreditGate | None = None,
        dispatcher: CallbackDispatcher | None = None,
        batch_size: int = 100,
        submit_rows_per_pass: int = 5000,
        submit_chunk_rows: int = 500,
        max_attempts: int = 20,
        retry_base_s: float = 2.0,
        poll_interval_s: float = 1.0,
        anchor_poll_interval_s: float = 0.0,
        stage_observer: StageObserver | None = None,
    ) -> None:
        self._db, self._gateway, self._clock = db, gateway, clock
        self.credits = credits or CreditGate(
            "", clock=clock, check_interval_s=60.0, retry_base_s=2.0, retry_max_s=60.0
        )
        self._dispatcher = dispatcher
        self._batch = batch_size
        moves = StageMoves(db, clock, stage_observer)
        self._blocks = BlockFollower(moves, gateway, batch_size=batch_size)
        self._submitter = Submitter(
            db,
            gateway,
            clock=clock,
            credits=self.credits,
            rows_per_pass=submit_rows_per_pass,
            chunk_rows=submit_chunk_rows,
            max_attempts=max_attempts,
            retry_base_s=retry_base_s,
        )
        self._anchors = AnchorFollower(
            moves, gateway, batch_size=batch_size, poll_interval_s=anchor_poll_interval_s
        )
        self._poll_interval_s = poll_interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pass_lock = threading.Lock()
        self._unavailable = False  # log an outage once, not every pass
        self._reached = False  # the node answered at least once
        self._adopted = False  # rows an older version gave up were adopted
        self._reconciled = False  # rows the node already holds were marked revealed
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
        self._submitter.close()

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
        self._submitter.close()

    # -- one pass -----------------------------------------------------------------------

    def run_once(self) -> PassReport:
        """One pass of the four steps (module docstring). Outages end a step, not the pass."""
        report = PassReport()
        with self._pass_lock:
            self._step(report, "blocks", lambda: self._follow_blocks(report))
            if self._blocks.last_height() is not None:  # never reveal before the cursor is set
                self._step(report, "submit", lambda: self._submit_all(report))
            self._step(report, "anchors", lambda: self._follow_anchors(report))
            if self._dispatcher is not None:
                delivered = self._dispatcher.deliver_due(limit=self._batch)
                report.callbacks = delivered
        return report

    def _step(self, report: PassReport, name: str, action: Callable[[], None]) -> None:
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
        report.confirmed += self._blocks.follow()
        report.backlog |= self._blocks.behind

    def _submit_all(self, report: PassReport) -> None:
        if not self._adopted:
            report.failed += adopt_legacy(self._db, now=self._clock.now())
            self._adopted = True
        if not self._reconciled:
            report.revealed += self._submitter.reconcile()
            self._reconciled = True
        if self.credits.check_due():
            self._look_up_credits(report)
        for new_chains in (True, False):
            rows = self._submitter.due_rows(new_chains=new_chains)
            report.backlog |= len(rows) >= self._submitter.rows_per_pass
            for committed, revealed in self._submitter.submit(rows):
                report.committed += committed
                report.revealed += revealed
        report.failed += self._submitter.take_given_up()

    def _look_up_credits(self, report: PassReport) -> None:
        """Give the credit gate the balance; a failed look-up does not stop submitting
        (an address the node cannot read would otherwise hold every write)."""
        try:
            balance = self._gateway.ec_balance()
        except GatewayUnavailable as exc:
            self.credits.lookup_failed()
            report.errors.append(f"credits: {exc}")
            _log.debug("worker: entry credit balance not looked up: %s", exc)
            return
        self.credits.observe(balance, needed_ec=self._submitter.oldest_held_cost())

    def _follow_anchors(self, report: PassReport) -> None:
        report.anchored += self._anchors.follow()

    # -- single steps (tests, tools) ----------------------------------------------------

    def submit_pending(self, *, new_chains: bool) -> tuple[int, int]:
        """Commit and reveal the due rows of one kind; returns (commits recorded, reveals)."""
        totals = [0, 0]
        for committed, revealed in self._submitter.submit(
            self._submitter.due_rows(new_chains=new_chains)
        ):
            totals[0] += committed
            totals[1] += revealed
        return totals[0], totals[1]

    def follow_blocks(self) -> int:
        """Handle directory blocks after ``last_height``; returns entries moved to ``ledger``."""
        return self._blocks.follow()

    def follow_anchors(self) -> int:
        """Move entries of anchored directory blocks to ``anchor``; returns rows moved."""
        return self._anchors.follow()
