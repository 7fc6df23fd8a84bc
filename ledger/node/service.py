"""The node service: accepts messages, produces blocks on the clock, answers reads.

Everything that changes ledger state runs on the event loop thread (the JSON-RPC write
handlers are registered as non-blocking), so the rules need no locks; each accepted
message is then written to the store's journal and the caller's reply waits until that
write is on disk (group commit in ``Store``).

Blocks: block ``N`` starts at ``start_s``; minute ``k`` ends at ``start_s + k * block_time_s / 10``.
``tick()`` closes every minute whose end has passed and saves the block after minute 10.
After a pause longer than a minute (a restart, a stalled clock) the next block starts at
the current time instead of producing a run of empty blocks.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from dataclasses import dataclass

from ledger.core.clock import Clock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.transaction import Transaction
from ledger.node.assembly import BlockSet, assemble_block, genesis_block
from ledger.node.errors import NodeError
from ledger.node.process_list import ProcessList
from ledger.node.rules import Accepted, LedgerRules
from ledger.node.settings import NodeSettings
from ledger.node.store import Store, StoreError
from ledger.node.queries import NodeQueries
from ledger.node.tip import ChainTip, load_tip

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RevealResult:
    """Outcome of an accepted reveal: raw 32-byte entry hash and chain id; ``held`` if waiting."""

    entry_hash: bytes
    chain_id: bytes
    held: bool


class NodeService(NodeQueries):
    """One single-leader development node over one ``Store``.

    Args:
        settings: node settings (block time, rate, network id, window).
        store: the opened store.
        clock: source of time (``ManualClock`` in tests).
    """

    def __init__(self, settings: NodeSettings, store: Store, clock: Clock) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.minute_s = settings.block_time_s / 10
        self.tip: ChainTip = ChainTip.empty()
        self.rules: LedgerRules | None = None
        self._saving: BlockSet | None = None
        self._tick_lock = asyncio.Lock()
        self.started_at_s = clock.now()

    # -- start-up -------------------------------------------------------------------------

    def open(self) -> None:
        """Load the saved chain (creating the genesis blocks on first start) and replay the journal."""
        if self.store.read.execute("SELECT 1 FROM dblocks LIMIT 1").fetchone() is None:
            blocks = genesis_block(self.settings, self.clock.now(), self.store)
            self.store.write_sync(blocks.save)
        self.tip = load_tip(self.store.read)
        pl = ProcessList(height=self.tip.height + 1, start_s=self.clock.now())
        self.rules = LedgerRules(
            ec_rate=self.settings.ec_rate,
            commit_window_ms=int(self.settings.commit_window_s * 1000),
            known_chain=self.chain_saved,
            process_list=pl,
        )
        self._load_balances()
        self._replay_journal()

    def _load_balances(self) -> None:
        rules = self._rules()
        for kind, key, amount in self.store.read.execute("SELECT kind, key, amount FROM balances"):
            target = rules.ec_balances if kind == "ec" else rules.fct_balances
            target[bytes(key)] = amount

    def _replay_journal(self) -> None:
        """Re-apply every acknowledged message that no saved block records yet."""
        rules = self._rules()
        read = self.store.read
        rows = read.execute(
            "SELECT raw, received_ms, block_height FROM commits WHERE revealed=0 ORDER BY seq"
        ).fetchall()
        for raw, received_ms, block_height in rows:
            commit = _parse_commit(bytes(raw))
            if block_height is None:
                rules.accept_commit(commit, now_ms=received_ms, replay=True)
            else:
                rules.open_commits[commit.entry_hash] = _open(commit, received_ms)
        for raw, received_ms in read.execute(
            "SELECT raw, received_ms FROM pending_txs ORDER BY seq"
        ).fetchall():
            rules.accept_transaction(
                Transaction.unmarshal(bytes(raw)), now_ms=received_ms, replay=True
            )
        for raw, received_ms in read.execute(
            "SELECT raw, received_ms FROM pending_reveals ORDER BY seq"
        ).fetchall():
            rules.accept_reveal(bytes(raw), now_ms=received_ms)
        rules.seq = _max_seq(read)

    # -- state helpers --------------------------------------------------------------------

    def _rules(self) -> LedgerRules:
        if self.rules is None:
            raise RuntimeError("NodeService.open() was not called")
        return self.rules

    @property
    def process_list(self) -> ProcessList:
        return self._rules().pl

    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)

    def chain_saved(self, chain_id: bytes) -> bool:
        row = self.store.read.execute(
            "SELECT 1 FROM chains WHERE chain_id=?", (chain_id,)
        ).fetchone()
        return row is not None

    async def _commit_journal(self, accepted: Accepted, pl: ProcessList) -> None:
        try:
            await self.store.write(accepted.journal)
        except StoreError:
            if self.process_list is pl:
                accepted.undo()
            raise

    # -- writes ---------------------------------------------------------------------------

    async def submit_commit(self, commit: CommitEntry | CommitChain) -> None:
        """Accept a commit and return once it is journaled on disk.

        Raises:
            RuleViolation, RepeatedCommitError: the rules refuse it (nothing changed).
            StoreError: the journal write failed (nothing changed).
        """
        pl = self.process_list
        accepted = self._rules().accept_commit(commit, now_ms=self.now_ms())
        await self._commit_journal(accepted, pl)

    async def submit_reveal(self, raw: bytes) -> RevealResult:
        """Accept a reveal (recorded now, or held for its commit or chain); durable on return.

        Raises:
            LedgerFormatError: the entry bytes do not parse.
            StoreError: the journal write failed (nothing changed).
        """
        pl = self.process_list
        entry, ehash, accepted = self._rules().accept_reveal(raw, now_ms=self.now_ms())
        await self._commit_journal(accepted, pl)
        return RevealResult(ehash, entry.chain_id, bool(accepted.info.get("held")))

    async def submit_transaction(self, tx: Transaction) -> None:
        """Accept a signed coin transaction; durable on return."""
        pl = self.process_list
        accepted = self._rules().accept_transaction(tx, now_ms=self.now_ms())
        await self._commit_journal(accepted, pl)

    # -- block production -----------------------------------------------------------------

    async def tick(self) -> int:
        """Close passed minutes and save finished blocks; returns how many blocks were saved."""
        async with self._tick_lock:
            saved = 0
            if self._saving is not None and await self._save(self._saving):
                saved += 1
            if self._saving is not None:
                return saved
            now = self.clock.now()
            pl = self.process_list
            while not pl.complete and now >= pl.start_s + (pl.minute + 1) * self.minute_s:
                pl.end_minute()
            if pl.complete:
                block_end = pl.start_s + 10 * self.minute_s
                next_start = block_end if now - block_end < self.minute_s else now
                blocks = assemble_block(
                    pl, self.tip, settings=self.settings, store=self.store, rules=self._rules()
                )
                self._rules().pl = ProcessList(height=pl.height + 1, start_s=next_start)
                self._expire_held(now)
                self._saving = blocks
                if await self._save(blocks):
                    saved += 1
            return saved

    async def _save(self, blocks: BlockSet) -> bool:
        try:
            await self.store.write(blocks.save)
        except (StoreError, sqlite3.Error) as exc:
            log.error("saving directory block %d failed, will retry: %s", blocks.height, exc)
            return False
        self.tip = blocks.tip
        self._saving = None
        return True

    def _expire_held(self, now_s: float) -> None:
        rules = self._rules()
        limit_ms = int(now_s * 1000) - rules.commit_window_ms
        for ehash, item in list(rules.held.items()):
            if item.received_ms < limit_ms:
                del rules.held[ehash]
        for ehash, opened in list(rules.open_commits.items()):
            if opened.received_ms < limit_ms:
                del rules.open_commits[ehash]

    async def run(self, stop: asyncio.Event) -> None:
        """Produce blocks until ``stop`` is set (polls the clock every ~50 ms or faster)."""
        poll_s = max(0.005, min(0.05, self.minute_s / 20))
        while not stop.is_set():
            try:
                await self.tick()
            except Exception:  # keep producing: one bad tick must not stop the ledger
                log.exception("block production tick failed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=poll_s)
            except TimeoutError:
                pass

def _parse_commit(raw: bytes) -> CommitEntry | CommitChain:
    if len(raw) == 200:
        return CommitChain.unmarshal(raw)
    return CommitEntry.unmarshal(raw)


def _open(commit: CommitEntry | CommitChain, received_ms: int):  # type: ignore[no-untyped-def]
    from ledger.node.rules import OpenCommit

    return OpenCommit(commit, received_ms, in_block=True)


def _max_seq(conn: sqlite3.Connection) -> int:
    best = 0
    for table in ("commits", "pending_reveals", "pending_txs"):
        row = conn.execute(f"SELECT MAX(seq) FROM {table}").fetchone()
        best = max(best, row[0] or 0)
    return best


__all__ = ["NodeError", "NodeService", "RevealResult", "Entry"]
