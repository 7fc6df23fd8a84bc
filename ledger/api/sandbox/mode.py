"""Sandbox mode (docs/rest-api.md §9).

``python -m ledger.api --sandbox`` (or ``NOTARY_API_SANDBOX=true``) runs the same API with:

* its own database (``sandbox_database_url``, default ``<data_dir>/sandbox.sqlite``) for
  chains, entries, callbacks and the worker's state;
* the same account keys: keys are verified against the main database, and each account
  that uses the sandbox is copied into the sandbox database (its rows refer to it);
  revocations are copied at least every ``ACCOUNT_SYNC_S`` seconds (and reads stop within
  ``auth_cache_ttl_s`` anyway, since the key look-up goes to the main database);
* a test ledger without anchoring: a built-in in-memory ledger that closes a block every
  ``sandbox_block_time_s``, or an external test network named by ``sandbox_node_url`` +
  ``sandbox_wallet_url``. Either way the worker sees the ledger through ``WithoutAnchors``,
  which reports no anchor for any block: writes move ``multi_az`` -> ``ledger`` and never
  to ``anchor``, and no ``anchor`` callback is sent, even when the external network's
  node anchors its blocks (spec: the sandbox has no anchoring);
* a purge of every chain, entry and queued callback every ``sandbox_purge_interval_s``
  seconds (accounts stay). With the built-in ledger the data is also purged at start:
  that ledger lives in memory, so earlier sandbox entries could never reach a block.

The purge runs while the worker is paused between passes; a write racing with it is
either purged or kept whole (one transaction each).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from ledger.api.db import Database
from ledger.api.models import (
    Account,
    CallbackRow,
    Chain,
    EntryRow,
    ExternalIdTag,
    ServiceState,
    WriteFailure,
)
from ledger.api.outbox.gateway import (
    AnchorInfo,
    ComposedCalls,
    Composition,
    DirectoryBlockInfo,
    LedgerGateway,
    RpcCall,
    RpcFailure,
)
from ledger.api.outbox.worker import LAST_HEIGHT_KEY, LedgerWorker
from ledger.api.sandbox.memory_ledger import InMemoryLedger
from ledger.core.clock import Clock

__all__ = ["ACCOUNT_SYNC_S", "PurgeReport", "Sandbox", "WithoutAnchors"]

ACCOUNT_SYNC_S = 5.0
_TICK_S = 0.25
_log = logging.getLogger(__name__)


class WithoutAnchors:
    """A ``LedgerGateway`` that passes every call on except ``anchors``: never anchored.

    Args:
        inner: the sandbox's ledger (built-in test ledger or external test network).
    """

    def __init__(self, inner: LedgerGateway) -> None:
        self.inner = inner

    def compose(self, items: Sequence[Composition]) -> list[ComposedCalls | RpcFailure]:
        return self.inner.compose(items)

    def submit(self, calls: Sequence[RpcCall]) -> list[dict[str, Any] | RpcFailure]:
        return self.inner.submit(calls)

    def height(self) -> int:
        return self.inner.height()

    def directory_blocks(self, heights: Sequence[int]) -> list[DirectoryBlockInfo | RpcFailure]:
        return self.inner.directory_blocks(heights)

    def entry_blocks(self, keymrs: Sequence[str]) -> list[list[str] | RpcFailure]:
        return self.inner.entry_blocks(keymrs)

    def anchors(self, heights: Sequence[int]) -> list[AnchorInfo | None]:
        """No anchor, for every height (the inner ledger is not asked)."""
        return [None] * len(heights)

    def ec_balance(self) -> int:
        return self.inner.ec_balance()

    def entry_statuses(self, entries: Sequence[tuple[str, str]]) -> list[str | RpcFailure]:
        return self.inner.entry_statuses(entries)


@dataclass(frozen=True)
class PurgeReport:
    """Rows deleted by one purge."""

    chains: int
    entries: int


class Sandbox:
    """Runtime of sandbox mode: test blocks, account copies, periodic purge.

    Args:
        records: the sandbox database (chains, entries, ...).
        accounts: the main database (accounts and their keys).
        clock: time source of the schedules.
        ledger: the built-in test ledger, or ``None`` for an external test network.
        block_time_s: period of test blocks (built-in ledger only), seconds.
        purge_interval_s: period of the purge, seconds.
    """

    def __init__(
        self,
        *,
        records: Database,
        accounts: Database,
        clock: Clock,
        ledger: InMemoryLedger | None,
        block_time_s: float,
        purge_interval_s: float,
    ) -> None:
        self._records, self._accounts, self._clock, self.ledger = records, accounts, clock, ledger
        self._block_time_s, self._purge_interval_s = block_time_s, purge_interval_s
        self._worker: LedgerWorker | None = None
        self._next: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.purges = 0

    def attach(self, worker: LedgerWorker) -> None:
        """The worker to pause during purges (set before ``start``)."""
        self._worker = worker

    def start(self) -> None:
        """Copy the accounts, purge when the built-in ledger is used, start the schedule."""
        self.sync_accounts()
        if self.ledger is not None:
            self.purge()
        now = self._clock.now()
        self._next = {
            "block": now + self._block_time_s,
            "accounts": now + ACCOUNT_SYNC_S,
            "purge": now + self._purge_interval_s,
        }
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="notary-sandbox", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the schedule thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(_TICK_S):
            try:
                self.run_due()
            except Exception:  # keep the schedule alive; the fault is logged
                _log.exception("sandbox task failed")

    def run_due(self) -> list[str]:
        """Run every task whose time has come; returns their names (for tests)."""
        now, ran = self._clock.now(), []
        if self.ledger is not None and now >= self._next.get("block", now):
            self.ledger.mine_block()
            ran.append("block")
        if now >= self._next.get("accounts", now):
            self.sync_accounts()
            ran.append("accounts")
        if now >= self._next.get("purge", now):
            self.purge()
            ran.append("purge")
        periods = {
            "block": self._block_time_s,
            "accounts": ACCOUNT_SYNC_S,
            "purge": self._purge_interval_s,
        }
        for name in ran:
            self._next[name] = now + periods[name]
        return ran

    # -- accounts ------------------------------------------------------------------------

    def mirror_account(self, account: Account) -> None:
        """Copy one account row (id, name, key hash, times) into the sandbox database."""
        self._copy([account])

    def sync_accounts(self) -> int:
        """Copy every account of the main database; returns how many were copied."""
        with self._accounts.read() as session:
            accounts = list(session.scalars(select(Account)))
        self._copy(accounts)
        return len(accounts)

    def _copy(self, accounts: list[Account]) -> None:
        try:
            with self._records.write() as session:
                for account in accounts:
                    session.merge(
                        Account(
                            id=account.id,
                            name=account.name,
                            key_hash=account.key_hash,
                            created_at=account.created_at,
                            revoked_at=account.revoked_at,
                        )
                    )
        except IntegrityError as exc:  # a concurrent copy won; the next sync settles it
            _log.debug("sandbox account copy raced: %s", exc)

    # -- purge ---------------------------------------------------------------------------

    def purge(self) -> PurgeReport:
        """Delete every chain, entry, search tag, failure and queued callback (accounts stay)."""
        pause = self._worker.paused() if self._worker is not None else nullcontext()
        with pause:
            if self.ledger is not None:
                self.ledger.reset()
            with self._records.write() as session:
                session.execute(delete(CallbackRow))
                session.execute(delete(WriteFailure))
                session.execute(delete(ExternalIdTag))
                entries = _deleted(session.execute(delete(EntryRow)))
                chains = _deleted(session.execute(delete(Chain)))
                if self.ledger is not None:  # a fresh test ledger starts at height 0
                    session.execute(delete(ServiceState).where(ServiceState.key == LAST_HEIGHT_KEY))
        self.purges += 1
        _log.info("sandbox purged: %d chains, %d entries", chains, entries)
        return PurgeReport(chains=chains, entries=entries)


def _deleted(result: Any) -> int:
    """Row count of a DELETE result."""
    return int(result.rowcount)
