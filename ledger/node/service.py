"""The node service: accepts messages, produces blocks on the clock, answers reads.

Everything that changes ledger state runs on the event loop thread (the JSON-RPC write
handlers are registered as non-blocking), so the rules need no locks; each accepted
message is then written to the store's journal and the caller's reply waits until that
write is on disk (group commit in ``Store``).

Blocks: block ``N`` starts at ``start_s``; minute ``k`` ends at ``start_s + k * block_time_s / 10``.
``tick()`` closes every minute whose end has passed and saves the block after minute 10.
After a pause longer than a minute (a restart, a stalled clock) the next block starts at
the current time instead of producing a run of empty blocks.

Start-up (``open``): create the genesis blocks on an empty store, load the tip, the
saved balances and the commit replay filter (``ledger.node.commit_filter``), then replay,
in acceptance order (``seq``), the journal rows the saved blocks do not settle: the tip's
``carry`` list (held reveals and commits in a block still waiting for their reveal) and
every row above the tip's journal floor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from dataclasses import dataclass

from ledger.core.clock import Clock
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.transaction import Transaction
from ledger.node.assembly import (
    BlockSet,
    ChainHead,
    NodeIdentity,
    assemble_block,
    chain_heads,
    genesis_block,
    node_identity,
)
from ledger.node.commit_filter import CommitFilter, FilterLoad
from ledger.node.errors import DuplicateTransaction, NodeError, RuleViolation
from ledger.node.process_list import ProcessList
from ledger.node.queries import NodeQueries
from ledger.node.rules import KIND_COMMIT, KIND_TRANSACTION, Accepted, LedgerRules
from ledger.node.settings import NodeSettings
from ledger.node.sigcheck import SignatureChecker
from ledger.node.store import Store, StoreError
from ledger.node.tip import ChainTip, load_tip

log = logging.getLogger(__name__)

# CROSS JOIN keeps ``carry`` (a few rows) the outer loop: with a plain JOIN SQLite walked
# the whole journal below the floor probing ``carry`` for each row (a second per million).
_REPLAY_SQL = (
    "SELECT seq, kind, raw, received_ms FROM journal WHERE seq > ?"
    " UNION ALL SELECT j.seq, j.kind, j.raw, j.received_ms FROM carry c"
    " CROSS JOIN journal j ON j.seq = c.seq WHERE c.seq <= ?"
    " ORDER BY 1"
)
#: Chains known to exist, cached (a chain never disappears); bounded.
_CHAIN_CACHE_MAX = 100_000


@dataclass(frozen=True)
class _Cut:
    """A process list closed for assembly, with what its blocks need from the store."""

    pl: ProcessList
    heads: dict[bytes, ChainHead]
    floor_seq: int
    carry: tuple[int, ...]


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
        self.identity: NodeIdentity | None = None
        self._saving: BlockSet | None = None
        self._cut: _Cut | None = None
        self._known_chains: set[bytes] = set()
        self.floor_seq = 0
        self._tick_lock = asyncio.Lock()
        self.started_at_s = clock.now()
        self.accepted_entries = 0
        self.signatures = SignatureChecker()
        self.commit_filter_path = settings.commit_filter_path
        self._commit_filter = CommitFilter(
            store,
            self.commit_filter_path,
            snapshot_interval_s=settings.commit_filter_snapshot_s,
            accepted_seq=lambda: self._rules().seq,
        )
        self.filter_load = FilterLoad("journal", 0, 0.0)

    # -- start-up -------------------------------------------------------------------------

    def open(self) -> None:
        """Load the saved chain (creating the genesis blocks on first start) and replay the journal."""
        if self.store.read.execute("SELECT 1 FROM dblocks LIMIT 1").fetchone() is None:
            blocks = genesis_block(self.settings, self.clock.now())
            self.store.write_sync(blocks.save)
        self.tip = load_tip(self.store.read)
        self.identity = node_identity(self.store)
        # A clock set back across a restart must not stamp the next block before the saved
        # tip: resume no earlier than the end of the tip's block.
        resume_s = self.tip.timestamp_min * 60 + self.settings.block_time_s
        pl = ProcessList(height=self.tip.height + 1, start_s=max(self.clock.now(), resume_s))
        self.rules = LedgerRules(
            ec_rate=self.settings.ec_rate,
            commit_window_ms=int(self.settings.commit_window_s * 1000),
            known_chain=self.chain_saved,
            known_commit=self.commit_known,
            known_transaction=self.transaction_known,
            process_list=pl,
            max_held=self.settings.max_held_reveals,
            max_held_bytes=self.settings.max_held_reveal_bytes,
        )
        self._load_balances()
        self.filter_load = self._commit_filter.load()
        self._replay_journal()

    def _load_balances(self) -> None:
        rules = self._rules()
        for kind, key, amount in self.store.read.execute("SELECT kind, key, amount FROM balances"):
            target = rules.ec_balances if kind == "ec" else rules.fct_balances
            target[bytes(key)] = amount

    async def save_commit_filter(self) -> None:
        """Write the replay filter's snapshot now (``CommitFilter.save``; same errors)."""
        await self._commit_filter.save()

    def _replay_journal(self) -> None:
        """Re-apply, in acceptance order, every acknowledged message no saved block settles."""
        rules = self._rules()
        floor = self.floor_seq = self.tip_floor()
        best = floor
        for seq, kind, raw, received_ms in self.store.read.execute(_REPLAY_SQL, (floor, floor)):
            best = max(best, seq)
            try:
                self._replay_one(seq, kind, bytes(raw), received_ms, in_block=seq <= floor)
            except (NodeError, ValueError) as exc:  # an inconsistent journal must not stop the node
                log.error("journal replay skipped message %d (kind %d): %s", seq, kind, exc)
        rules.seq = best

    def _replay_one(
        self, seq: int, kind: int, raw: bytes, received_ms: int, *, in_block: bool
    ) -> None:
        rules = self._rules()
        if kind == KIND_COMMIT:
            commit = _parse_commit(raw)
            if not in_block:
                rules.accept_commit(commit, now_ms=received_ms, replay=True, seq=seq)
            elif received_ms >= self.now_ms() - rules.commit_window_ms:  # else expired
                rules.restore_open_commit(commit, received_ms=received_ms, seq=seq)
        elif kind == KIND_TRANSACTION:
            tx = Transaction.unmarshal(raw)
            rules.accept_transaction(tx, now_ms=received_ms, replay=True, seq=seq)
        else:
            rules.accept_reveal(raw, now_ms=received_ms, seq=seq)

    def tip_floor(self) -> int:
        """Journal floor of the saved tip (0 before any block)."""
        row = self.store.read.execute(
            "SELECT floor_seq FROM dblocks ORDER BY height DESC LIMIT 1"
        ).fetchone()
        return 0 if row is None else int(row[0])

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
        """Whether ``chain_id`` has an entry block in a saved block (or one being saved)."""
        if chain_id in self._known_chains:
            return True
        if any(chain_id in pl.new_chains for pl in self._closed_lists()):
            return True
        row = self.store.read.execute(
            "SELECT 1 FROM chains WHERE chain_id=?", (chain_id,)
        ).fetchone()
        if row is not None and len(self._known_chains) < _CHAIN_CACHE_MAX:
            self._known_chains.add(chain_id)
        return row is not None

    def commit_known(self, txid: bytes) -> bool:
        """Whether a commit with this txid was accepted before (open lists or journal)."""
        if any(txid in pl.commit_txids for pl in self._open_lists()):
            return True
        if not self._commit_filter.might_contain(txid):
            return False
        row = self.store.read.execute(
            "SELECT 1 FROM journal WHERE kind=1 AND key=?", (txid,)
        ).fetchone()
        return row is not None

    def transaction_known(self, txid: bytes) -> bool:
        """Whether a coin transaction with this txid was accepted before."""
        if any(txid in pl.tx_index for pl in self._open_lists()):
            return True
        row = self.store.read.execute("SELECT 1 FROM txs WHERE txid=?", (txid,)).fetchone()
        return row is not None

    async def _commit_journal(self, accepted: Accepted, pl: ProcessList) -> None:
        try:
            await self.store.append(*accepted.journal)
        except StoreError:
            if self.process_list is pl:
                accepted.undo()
            raise

    # -- writes ---------------------------------------------------------------------------

    async def submit_commit(self, commit: CommitEntry | CommitChain) -> bytes:
        """Accept a commit and return its txid once it is journaled on disk.

        The signature is checked in the signature worker (or was, for a batch).

        Raises:
            RuleViolation, DuplicateCommit: the rules refuse it (nothing changed).
            StoreError: the journal write failed (nothing changed).
        """
        if not await self.signatures.commit_ok(commit):
            raise RuleViolation("invalid commit signature: the signature does not verify")
        pl = self.process_list
        accepted = self._rules().accept_commit(commit, now_ms=self.now_ms(), verified=True)
        self._commit_filter.add(accepted.info["txid"])  # type: ignore[arg-type]
        await self._commit_journal(accepted, pl)
        return accepted.info["txid"]  # type: ignore[return-value]

    async def submit_reveal(self, raw: bytes) -> RevealResult:
        """Accept a reveal (recorded now, or held for its commit or chain); durable on return.

        Raises:
            LedgerFormatError: the entry bytes do not parse.
            StoreError: the journal write failed (nothing changed).
        """
        pl = self.process_list
        entry, ehash, accepted = self._rules().accept_reveal(raw, now_ms=self.now_ms())
        await self._commit_journal(accepted, pl)
        self.accepted_entries += 1
        return RevealResult(ehash, entry.chain_id, bool(accepted.info.get("held")))

    async def submit_transaction(self, tx: Transaction) -> bytes:
        """Accept a signed coin transaction; durable on return. Returns the txid.

        Submitting an already accepted transaction again changes nothing and succeeds
        (once the original is on disk): clients may retry after a lost reply.

        Raises:
            RuleViolation: the rules refuse it (nothing changed).
            StoreError: the journal write failed (nothing changed).
        """
        reason = await self.signatures.transaction_error(tx) if tx.inputs else None
        if reason is not None:
            raise RuleViolation(f"invalid transaction signature: {reason}")
        pl = self.process_list
        try:
            accepted = self._rules().accept_transaction(tx, now_ms=self.now_ms(), verified=True)
        except DuplicateTransaction as dup:
            await self.store.barrier()
            return dup.txid
        await self._commit_journal(accepted, pl)
        return accepted.info["txid"]  # type: ignore[return-value]

    # -- block production -----------------------------------------------------------------

    async def tick(self) -> int:
        """Close passed minutes and save finished blocks; returns how many blocks were saved.

        A block whose assembly or save failed is retried first (nothing newer is cut
        before it is saved, so heights stay contiguous).
        """
        async with self._tick_lock:
            saved = 0
            if self._cut is not None:
                self._saving = await self._assemble(self._cut)
            if self._saving is not None and await self._save(self._saving):
                saved += 1
            if self._saving is not None:
                return saved
            now = self.clock.now()
            pl = self.process_list
            while not pl.complete and now >= pl.start_s + (pl.minute + 1) * self.minute_s:
                pl.end_minute()
            if pl.complete:
                self._saving = await self._assemble(self._cut_block(pl, now))
                if await self._save(self._saving):
                    saved += 1
            return saved

    def _cut_block(self, pl: ProcessList, now: float) -> _Cut:
        """Close the complete list ``pl`` and open the next one at once."""
        rules = self._rules()
        block_end = pl.start_s + 10 * self.minute_s
        next_start = block_end if now - block_end < self.minute_s else now
        self._expire_held(now)
        carry = [h.seq for h in rules.held.values()] + [c.seq for c in rules.open_commits.values()]
        cut = _Cut(pl, chain_heads(pl, self.store), rules.seq, tuple(sorted(carry)))
        rules.pl = ProcessList(height=pl.height + 1, start_s=next_start)
        self._cut = cut
        return cut

    async def _assemble(self, cut: _Cut) -> BlockSet:
        """Assemble the blocks of a cut list in a worker thread (the event loop keeps
        accepting messages meanwhile; the cut list no longer changes)."""
        if self.identity is None:
            raise RuntimeError("NodeService.open() was not called")
        started = time.perf_counter()
        blocks = await asyncio.to_thread(
            assemble_block,
            cut.pl,
            self.tip,
            settings=self.settings,
            heads=cut.heads,
            identity=self.identity,
            floor_seq=cut.floor_seq,
            carry=cut.carry,
        )
        self._cut = None
        log.debug("block %d assembled in %.3f s", cut.pl.height, time.perf_counter() - started)
        return blocks

    async def _save(self, blocks: BlockSet) -> bool:
        started = time.perf_counter()
        try:
            await self.store.write(blocks.save)
            log.debug(
                "directory block %d saved in %.3f s (%d entries)",
                blocks.height,
                time.perf_counter() - started,
                len(blocks.process_list.entries),
            )
        except (StoreError, sqlite3.Error) as exc:
            log.error("saving directory block %d failed, will retry: %s", blocks.height, exc)
            return False
        self.tip = blocks.tip
        self.floor_seq = blocks.floor_seq
        self._saving = None
        return True

    def _expire_held(self, now_s: float) -> None:
        """Forget held reveals and open commits older than the commit window."""
        rules = self._rules()
        now_ms = int(now_s * 1000)
        rules.expire_held(now_ms, all_of_them=True)
        limit_ms = now_ms - rules.commit_window_ms
        for ehash, opened in list(rules.open_commits.items()):
            if opened.received_ms < limit_ms:
                del rules.open_commits[ehash]

    def close(self) -> None:
        """Stop the signature worker and close the store (after the block loop stopped)."""
        self.signatures.close()
        self.store.close()

    async def run(self, stop: asyncio.Event) -> None:
        """Produce blocks until ``stop`` is set (polls the clock every ~50 ms or faster)."""
        poll_s = max(0.005, min(0.05, self.minute_s / 20))
        snapshot_s = time.monotonic()
        while not stop.is_set():
            try:
                await self.tick()
                snapshot_s = self._commit_filter.snapshot_if_due(snapshot_s)
            except Exception:  # keep producing: one bad tick must not stop the ledger
                log.exception("block production tick failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=poll_s)
        await self._commit_filter.finish()  # a fast next start


def _parse_commit(raw: bytes) -> CommitEntry | CommitChain:
    if len(raw) == 200:
        return CommitChain.unmarshal(raw)
    return CommitEntry.unmarshal(raw)


__all__ = ["Entry", "FilterLoad", "NodeError", "NodeService", "RevealResult"]
