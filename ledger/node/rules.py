"""Acceptance rules for commits, reveals and coin transactions (factom-formats sections 1.4, 2.4, 4.3).

``LedgerRules`` holds the in-memory view that the rules need (temporary balances, open
commits, held reveals, known chains) and the current ``ProcessList``. Every ``accept_*``
method either raises a ``NodeError`` and changes nothing, or applies the message in memory
and returns an ``Accepted`` with the journal write that makes it durable and the undo that
reverts it if that write fails. Nothing here does I/O.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import sha256d
from ledger.core.transaction import Transaction
from ledger.node.errors import RepeatedCommitError, RuleViolation
from ledger.node.process_list import Commit, ProcessList

Journal = Callable[[sqlite3.Connection], None]


@dataclass
class OpenCommit:
    """A commit not yet consumed by a reveal. ``in_block`` once an EC block records it."""

    commit: Commit
    received_ms: int
    in_block: bool = False


@dataclass
class HeldReveal:
    """A reveal waiting for its commit (or its chain)."""

    entry: Entry
    raw: bytes
    received_ms: int


@dataclass
class Accepted:
    """Result of an accepted message: the journal write and its undo."""

    journal: Journal
    undo: Callable[[], None]
    info: dict[str, object] = field(default_factory=dict)


class LedgerRules:
    """Validates and applies messages against balances, chains and the process list.

    Args:
        ec_rate: coin minor units per entry credit.
        commit_window_ms: allowed distance between a message timestamp and the node clock.
        known_chain: callable telling whether a chain exists in a saved block.
    """

    def __init__(
        self,
        *,
        ec_rate: int,
        commit_window_ms: int,
        known_chain: Callable[[bytes], bool],
        process_list: ProcessList,
    ) -> None:
        self.ec_rate = ec_rate
        self.commit_window_ms = commit_window_ms
        self._known_chain = known_chain
        self.pl = process_list
        self.ec_balances: dict[bytes, int] = {}
        self.fct_balances: dict[bytes, int] = {}
        self.open_commits: dict[bytes, OpenCommit] = {}
        self.held: dict[bytes, HeldReveal] = {}
        self.seq = 0

    # -- helpers --------------------------------------------------------------------------

    def chain_exists(self, chain_id: bytes) -> bool:
        return chain_id in self.pl.new_chains or self._known_chain(chain_id)

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def _check_window(self, timestamp_ms: int, now_ms: int) -> None:
        if abs(timestamp_ms - now_ms) > self.commit_window_ms:
            raise RuleViolation(
                f"timestamp {timestamp_ms} ms is more than {self.commit_window_ms // 60000} "
                f"minutes from the node clock ({now_ms} ms)"
            )

    # -- commits (section 2.4) ------------------------------------------------------------

    def accept_commit(self, commit: Commit, *, now_ms: int, replay: bool = False) -> Accepted:
        """Accept a commit: signature, window, repeat rule, EC balance; deduct the credits.

        Raises:
            RuleViolation: bad signature, outside the time window, or not enough credits.
            RepeatedCommitError: a pending commit for the entry pays as much or more.
        """
        if not replay:
            try:
                commit.verify()
            except LedgerFormatError as exc:
                raise RuleViolation(f"invalid commit signature: {exc}") from exc
            self._check_window(commit.timestamp_ms, now_ms)
        prior = self.open_commits.get(commit.entry_hash)
        if prior is not None and prior.commit.credits >= commit.credits:
            raise RepeatedCommitError(commit.entry_hash)
        pub = commit.ec_public_key
        balance = self.ec_balances.get(pub, 0)
        if balance < commit.credits:
            raise RuleViolation(
                f"entry credit balance {balance} is less than the {commit.credits} credits committed"
            )
        self.ec_balances[pub] = balance - commit.credits
        opened = OpenCommit(commit, now_ms)
        self.open_commits[commit.entry_hash] = opened
        pl = self.pl
        pl.add_commit(commit)
        seq = self._next_seq()
        released = self.release_after_commit(commit.entry_hash)

        def journal(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO commits(txid, entry_hash, raw, received_ms, seq)"
                " VALUES (?,?,?,?,?)",
                (commit.txid(), commit.entry_hash, commit.marshal(), now_ms, seq),
            )

        def undo() -> None:
            for release_undo in released:
                release_undo()
            self.ec_balances[pub] = self.ec_balances.get(pub, 0) + commit.credits
            if self.open_commits.get(commit.entry_hash) is opened:
                if prior is not None:
                    self.open_commits[commit.entry_hash] = prior
                else:
                    del self.open_commits[commit.entry_hash]
            pl.remove_commit(commit)

        return Accepted(journal, undo, {"released": len(released)})

    # -- reveals (sections 1.3, 1.4, 2.2) -------------------------------------------------

    def accept_reveal(self, raw: bytes, *, now_ms: int) -> tuple[Entry, bytes, Accepted]:
        """Accept a reveal: record it now if its commit and chain allow, else hold it.

        Returns:
            ``(entry, entry_hash, accepted)``; ``accepted.info["held"]`` tells whether it waits.

        Raises:
            LedgerFormatError: the entry bytes do not parse.
        """
        entry = Entry.unmarshal(raw)
        ehash = entry.hash()
        seq = self._next_seq()
        recorded = self._try_record(entry, ehash, raw)
        held_item = None
        if recorded is None:
            held_item = HeldReveal(entry, raw, now_ms)
            self.held[ehash] = held_item
        cascade = self._release_held(entry.chain_id) if recorded is not None else []

        def journal(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO pending_reveals(entry_hash, raw, received_ms, seq)"
                " VALUES (?,?,?,?)",
                (ehash, raw, now_ms, seq),
            )

        def undo() -> None:
            if held_item is not None and self.held.get(ehash) is held_item:
                del self.held[ehash]
            if recorded is not None:
                recorded()
            for release_undo in cascade:
                release_undo()

        info: dict[str, object] = {"held": recorded is None}
        return entry, ehash, Accepted(journal, undo, info)

    def _try_record(self, entry: Entry, ehash: bytes, raw: bytes) -> Callable[[], None] | None:
        """Record the entry in the process list if a sufficient commit and the chain exist.

        Returns the undo callable, or ``None`` when the reveal must wait.
        """
        opened = self.open_commits.get(ehash)
        if opened is None:
            return None
        commit = opened.commit
        ksize = entry.ksize()
        chain_id = entry.chain_id
        creates_chain = isinstance(commit, CommitChain) and not self.chain_exists(chain_id)
        if creates_chain:
            assert isinstance(commit, CommitChain)
            if commit.chain_id_hash != sha256d(chain_id):
                return None
            if commit.credits < ksize + NEW_CHAIN_FEE_EC:
                return None
        else:
            if not self.chain_exists(chain_id) or commit.credits < ksize:
                return None
        del self.open_commits[ehash]
        pl = self.pl
        if creates_chain:
            pl.new_chains[chain_id] = ehash
        pl.add_entry(ehash, chain_id=chain_id, raw=raw)
        pl.revealed_commit_txids.append(commit.txid())
        was_held = self.held.pop(ehash, None)

        def undo() -> None:
            if was_held is not None:
                self.held[ehash] = was_held
            pl.remove_entry(ehash, chain_id)
            if commit.txid() in pl.revealed_commit_txids:
                pl.revealed_commit_txids.remove(commit.txid())
            self.open_commits.setdefault(ehash, opened)

        return undo

    def _release_held(self, chain_id: bytes) -> list[Callable[[], None]]:
        """Record held reveals that can now go in (their chain or commit arrived)."""
        undos: list[Callable[[], None]] = []
        progress = True
        while progress:
            progress = False
            for ehash, item in list(self.held.items()):
                if ehash in self.open_commits:
                    undo = self._try_record(item.entry, ehash, item.raw)
                    if undo is not None:
                        undos.append(undo)
                        progress = True
        return undos

    def release_after_commit(self, entry_hash: bytes) -> list[Callable[[], None]]:
        """A commit arrived: record its held reveal (and any reveal that waited on its chain)."""
        item = self.held.get(entry_hash)
        if item is None:
            return []
        undo = self._try_record(item.entry, entry_hash, item.raw)
        if undo is None:
            return []
        return [undo, *self._release_held(item.entry.chain_id)]

    # -- coin transactions (section 4.3) --------------------------------------------------

    def accept_transaction(self, tx: Transaction, *, now_ms: int, replay: bool = False) -> Accepted:
        """Accept a signed coin transaction: signatures, window, fee, balances; apply it.

        Raises:
            RuleViolation: no inputs, bad signature, under-paid fee, or an input balance too low.
        """
        if not replay:
            self._check_transaction(tx, now_ms)
        deltas = self._transaction_deltas(tx)
        for rcd_hash, delta in deltas["fct"].items():
            if delta < 0 and self.fct_balances.get(rcd_hash, 0) + delta < 0:
                raise RuleViolation("input amount exceeds the address balance")
        self._apply_deltas(deltas, sign=1)
        pl = self.pl
        pl.add_transaction(tx)
        seq = self._next_seq()

        def journal(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO pending_txs(txid, raw, received_ms, seq) VALUES (?,?,?,?)",
                (tx.txid(), tx.marshal(), now_ms, seq),
            )

        def undo() -> None:
            self._apply_deltas(deltas, sign=-1)
            pl.remove_transaction(tx)

        return Accepted(journal, undo)

    def _check_transaction(self, tx: Transaction, now_ms: int) -> None:
        if not tx.inputs:
            raise RuleViolation("a transaction needs at least one input")
        try:
            tx.verify_signatures()
        except LedgerFormatError as exc:
            raise RuleViolation(f"invalid transaction signature: {exc}") from exc
        self._check_window(tx.timestamp_ms, now_ms)
        total_in = sum(i.amount for i in tx.inputs)
        total_out = sum(o.amount for o in tx.outputs) + sum(o.amount for o in tx.ec_outputs)
        fee = tx.fee(self.ec_rate)
        if total_in < total_out + fee:
            raise RuleViolation(
                f"inputs {total_in} do not cover outputs {total_out} plus the fee {fee}"
            )

    def _transaction_deltas(self, tx: Transaction) -> dict[str, dict[bytes, int]]:
        fct: dict[bytes, int] = {}
        ec: dict[bytes, int] = {}
        for item in tx.inputs:
            fct[item.address] = fct.get(item.address, 0) - item.amount
        for item in tx.outputs:
            fct[item.address] = fct.get(item.address, 0) + item.amount
        for item in tx.ec_outputs:
            ec[item.address] = ec.get(item.address, 0) + item.amount // self.ec_rate
        return {"fct": fct, "ec": ec}

    def _apply_deltas(self, deltas: dict[str, dict[bytes, int]], *, sign: int) -> None:
        for key, delta in deltas["fct"].items():
            self.fct_balances[key] = self.fct_balances.get(key, 0) + sign * delta
        for key, delta in deltas["ec"].items():
            self.ec_balances[key] = self.ec_balances.get(key, 0) + sign * delta
