"""Acceptance rules for commits, reveals and coin transactions (docs/formats.md §1.4, §2.4, §4.3).

``LedgerRules`` holds the in-memory view that the rules need (acknowledged balances, open
commits, held reveals) and the current ``ProcessList``. Every ``accept_*`` method either
raises a ``NodeError`` and changes nothing, or applies the message in memory and returns an
``Accepted`` holding the journal row that makes it durable and the undo that reverts it if
that write fails. Nothing here does I/O: whether a chain, a commit txid or a transaction
txid is already known is asked through the callables given to the constructor.

Rules, in the order they are checked:

Commits (2.4): 1. canonical signature; 2. timestamp within ``commit_window_ms`` of the node
clock; 3. the same txid was not accepted before (replay filter); 4. no pending commit for the
entry pays as much or more (else -32011; a larger one replaces it and both spend);
5. the EC balance covers the credits, which are deducted at once.

Reveals (1.3, 1.4, 2.2): recorded when an open commit pays ``KSize`` (entry) or ``KSize + 10``
with a matching chain id hash (new chain); a chain reveal paid by a commit-chain into an
existing chain is an ordinary entry; otherwise held until its commit (or chain) arrives.
Held reveals cost memory and nothing else (no credits), so they are capped by count and by
bytes (``max_held`` / ``max_held_bytes``); a reveal that would pass the cap, once the held
reveals older than the commit window are dropped, is refused (``HeldRevealLimit``) and
changes nothing. factomd holds without a limit and drops silently; this node acknowledges
only what it keeps, so it refuses instead.

Coin transactions (4.3): 1. at least one input; 2. RCD1 matches every input and every
signature verifies canonically; 3. timestamp window; 4. size <= 10240 bytes and inputs >=
outputs + EC outputs + fee (int64 sums); 5. per address, the inputs do not exceed the
acknowledged balance (no double spend); 6. the same txid was not accepted before.
EC outputs buy ``floor(amount / ec_rate)`` credits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ledger.core.commit import CommitChain
from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import entry_hash, sha256, sha256d
from ledger.core.transaction import Transaction
from ledger.node.errors import DuplicateCommit, DuplicateTransaction, RuleViolation
from ledger.node.held_reveals import HeldReveal, HeldReveals
from ledger.node.process_list import Commit, ProcessList, RecordedEntry

#: One journal write: ``(sql, params)`` executed in the store's group commit.
JournalRow = tuple[str, tuple[Any, ...]]

MAX_INT64 = 2**63 - 1

#: Journal row kinds (``journal.kind``).
KIND_COMMIT, KIND_REVEAL, KIND_TRANSACTION = 1, 2, 3
INSERT_JOURNAL = "INSERT INTO journal(seq, kind, key, raw, received_ms) VALUES (?,?,?,?,?)"


@dataclass(frozen=True, slots=True)
class OpenCommit:
    """A commit not yet consumed by a reveal (``txid`` raw 32 bytes, ``received_ms`` node ms,
    ``seq`` its journal sequence number)."""

    commit: Commit
    txid: bytes
    received_ms: int
    seq: int


@dataclass
class Accepted:
    """Result of an accepted message: its journal row and the undo of its in-memory effects."""

    journal: JournalRow
    undo: Callable[[], None]
    info: dict[str, object] = field(default_factory=dict)


def _never(_key: bytes) -> bool:
    return False


#: A commit message ends with the payer's public key (32) and the signature (64) over all
#: that precedes them (docs/formats.md §2.1, §2.2).
_KEY_AND_SIGNATURE = 32 + 64


def commit_txid(raw: bytes) -> bytes:
    """The txid of a marshalled commit: SHA256 of its signed part (docs/formats.md §2.3),
    the same as ``commit.txid()`` without marshalling the signed part again."""
    return sha256(raw[:-_KEY_AND_SIGNATURE])


class LedgerRules:
    """Validates and applies messages against balances, chains and the process list.

    Args:
        ec_rate: coin minor units per entry credit.
        commit_window_ms: allowed distance between a message timestamp and the node clock.
        known_chain: whether a chain exists in a saved block (raw chain id).
        known_commit: whether a commit with this txid was accepted before (journal or open lists).
        known_transaction: whether a coin transaction with this txid was accepted before.
        process_list: the list being filled.
        max_held: most reveals held at once, waiting for their commit or chain.
        max_held_bytes: most entry bytes held at once.
    """

    def __init__(
        self,
        *,
        ec_rate: int,
        commit_window_ms: int,
        known_chain: Callable[[bytes], bool],
        process_list: ProcessList,
        known_commit: Callable[[bytes], bool] = _never,
        known_transaction: Callable[[bytes], bool] = _never,
        max_held: int = 10_000,
        max_held_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        self.ec_rate = ec_rate
        self.commit_window_ms = commit_window_ms
        self._known_chain = known_chain
        self._known_commit = known_commit
        self._known_transaction = known_transaction
        self.pl = process_list
        self.ec_balances: dict[bytes, int] = {}
        self.fct_balances: dict[bytes, int] = {}
        self.open_commits: dict[bytes, OpenCommit] = {}
        #: Held reveals by entry hash, oldest first (a reveal sent again moves to the end).
        self.held = HeldReveals(max_count=max_held, max_bytes=max_held_bytes)
        self.seq = 0

    # -- helpers --------------------------------------------------------------------------

    @property
    def held_bytes(self) -> int:
        """Entry bytes of the held reveals."""
        return self.held.total_bytes

    def chain_exists(self, chain_id: bytes) -> bool:
        """True if the chain is in a saved block or created in the current process list."""
        return chain_id in self.pl.new_chains or self._known_chain(chain_id)

    def _next_seq(self, given: int | None = None) -> int:
        """A new journal sequence number, or ``given`` (journal replay keeps the original)."""
        if given is not None:
            self.seq = max(self.seq, given)
            return given
        self.seq += 1
        return self.seq

    def _check_window(self, timestamp_ms: int, now_ms: int) -> None:
        if abs(timestamp_ms - now_ms) > self.commit_window_ms:
            raise RuleViolation(
                f"timestamp {timestamp_ms} ms is more than {self.commit_window_ms // 60000} "
                f"minutes from the node clock ({now_ms} ms)"
            )

    # -- commits (section 2.4) ------------------------------------------------------------

    def check_commit(
        self, commit: Commit, *, now_ms: int, verified: bool = False, raw: bytes | None = None
    ) -> bytes:
        """Stateless-then-replay checks of a commit (rules 1-3); returns its txid.

        ``verified=True`` skips the signature check (already done, e.g. in a worker thread);
        ``raw`` is ``commit.marshal()`` when the caller has it.

        Raises:
            RuleViolation: bad signature or outside the time window.
            DuplicateCommit: the same commit (txid) was accepted before.
        """
        if not verified:
            try:
                commit.verify()
            except LedgerFormatError as exc:
                raise RuleViolation(f"invalid commit signature: {exc}") from exc
        self._check_window(commit.timestamp_ms, now_ms)
        txid = commit_txid(commit.marshal() if raw is None else raw)
        if self._known_commit(txid):
            raise DuplicateCommit(commit.entry_hash)
        return txid

    def accept_commit(
        self,
        commit: Commit,
        *,
        now_ms: int,
        replay: bool = False,
        verified: bool = False,
        seq: int | None = None,
    ) -> Accepted:
        """Accept a commit: rules 1-5 above; deduct the credits; release a held reveal.

        ``replay=True`` (journal replay at start-up) skips rules 1-4: the journal holds only
        accepted commits, and a later one replaces an earlier one for the same entry.
        ``seq`` (replay) is the journal sequence number the commit already has.

        Raises:
            RuleViolation: bad signature, outside the time window, or not enough credits.
            DuplicateCommit: a pending commit for the entry pays as much or more, or
                this commit was accepted before.
        """
        raw = commit.marshal()  # once: the journal row, the txid and the EC block use it
        if replay:
            txid = commit_txid(raw)
        else:
            txid = self.check_commit(commit, now_ms=now_ms, verified=verified, raw=raw)
        prior = self.open_commits.get(commit.entry_hash)
        if not replay and prior is not None and prior.commit.credits >= commit.credits:
            raise DuplicateCommit(commit.entry_hash)
        pub = commit.ec_public_key
        balance = self.ec_balances.get(pub, 0)
        if balance < commit.credits:
            raise RuleViolation(
                f"entry credit balance {balance} is less than the {commit.credits} credits committed"
            )
        self.ec_balances[pub] = balance - commit.credits
        seq = self._next_seq(seq)
        opened = OpenCommit(commit, txid, now_ms, seq)
        self.open_commits[commit.entry_hash] = opened
        pl = self.pl
        pl.add_commit(commit, txid, raw)
        released = self.release_after_commit(commit.entry_hash)

        def undo() -> None:
            for release_undo in reversed(released):
                release_undo()
            self.ec_balances[pub] = self.ec_balances.get(pub, 0) + commit.credits
            if self.open_commits.get(commit.entry_hash) is opened:
                if prior is not None:
                    self.open_commits[commit.entry_hash] = prior
                else:
                    del self.open_commits[commit.entry_hash]
            pl.remove_commit(commit, txid)

        row = (seq, KIND_COMMIT, txid, raw, now_ms)
        return Accepted((INSERT_JOURNAL, row), undo, {"released": len(released), "txid": txid})

    def restore_open_commit(self, commit: Commit, *, received_ms: int, seq: int) -> None:
        """Journal replay: a commit recorded in a saved block and not yet consumed by a reveal."""
        self.open_commits[commit.entry_hash] = OpenCommit(commit, commit.txid(), received_ms, seq)

    # -- reveals (sections 1.3, 1.4, 2.2) -------------------------------------------------

    def accept_reveal(
        self, raw: bytes, *, now_ms: int, seq: int | None = None
    ) -> tuple[Entry, bytes, Accepted]:
        """Accept a reveal: record it now if its commit and chain allow, else hold it.

        ``seq`` (journal replay) is the sequence number the reveal already has; replayed
        reveals were within the cap when accepted and are not refused again.

        Returns:
            ``(entry, entry_hash, accepted)``; ``accepted.info["held"]`` tells whether it waits.

        Raises:
            LedgerFormatError: the entry bytes do not parse (or the payload exceeds 10240).
            HeldRevealLimit: it would wait, and the held reveals are at their cap.
        """
        entry = Entry.unmarshal(raw)
        ehash = entry_hash(raw)  # the entry bytes are canonical: marshal(unmarshal(raw)) == raw
        item = HeldReveal(entry, raw, now_ms, self.seq + 1 if seq is None else seq)
        prior_held = self.held.get(ehash)
        recorded = self._try_record(item, ehash)
        if recorded is None and seq is None:
            self.held.make_room(ehash, len(raw), expire_before_ms=now_ms - self.commit_window_ms)
        self._next_seq(seq)
        held_item = None
        if recorded is None:
            held_item = item
            self.held.hold(ehash, held_item)

        def undo() -> None:
            if held_item is not None and self.held.get(ehash) is held_item:
                self.held.unhold(ehash)
                if prior_held is not None:
                    self.held.hold(ehash, prior_held)
            if recorded is not None:
                recorded()

        row = (item.seq, KIND_REVEAL, ehash, raw, now_ms)
        return entry, ehash, Accepted((INSERT_JOURNAL, row), undo, {"held": recorded is None})

    def expire_held(self, now_ms: int, *, all_of_them: bool = False) -> int:
        """Drop held reveals received more than the commit window before ``now_ms``;
        returns how many were dropped (``HeldReveals.expire``)."""
        return self.held.expire(now_ms - self.commit_window_ms, all_of_them=all_of_them)

    def _try_record(self, reveal: HeldReveal, ehash: bytes) -> Callable[[], None] | None:
        """Record the reveal in the process list if a sufficient commit and the chain exist;
        a newly created chain then releases the reveals that waited for it.

        Returns the undo callable, or ``None`` when the reveal must wait.
        """
        opened = self.open_commits.get(ehash)
        if opened is None:
            return None
        commit, entry = opened.commit, reveal.entry
        chain_id = entry.chain_id
        creates_chain = isinstance(commit, CommitChain) and not self.chain_exists(chain_id)
        if creates_chain:
            assert isinstance(commit, CommitChain)
            if commit.chain_id_hash != sha256d(chain_id):
                return None
            if commit.credits < entry.ksize() + NEW_CHAIN_FEE_EC:
                return None
        elif not self.chain_exists(chain_id) or commit.credits < entry.ksize():
            return None
        del self.open_commits[ehash]
        pl = self.pl
        if creates_chain:
            pl.new_chains[chain_id] = ehash
        recorded = RecordedEntry(chain_id, reveal.seq, opened.txid, opened.seq, opened.received_ms)
        pl.add_entry(ehash, recorded)
        pl.revealed_commit_txids.append(opened.txid)
        was_held = self.held.unhold(ehash)
        cascade = self._release_chain(chain_id) if creates_chain else []

        def undo() -> None:
            for release_undo in reversed(cascade):
                release_undo()
            if was_held is not None:
                self.held.hold(ehash, was_held)
            pl.remove_entry(ehash, chain_id)
            if opened.txid in pl.revealed_commit_txids:
                pl.revealed_commit_txids.remove(opened.txid)
            self.open_commits.setdefault(ehash, opened)

        return undo

    def _release_chain(self, chain_id: bytes) -> list[Callable[[], None]]:
        """The chain now exists: record the held reveals into it that have their commit."""
        undos: list[Callable[[], None]] = []
        for ehash in self.held.waiting_for(chain_id):
            item = self.held.get(ehash)
            if item is not None and ehash in self.open_commits:
                undo = self._try_record(item, ehash)
                if undo is not None:
                    undos.append(undo)
        return undos

    def release_after_commit(self, entry_hash: bytes) -> list[Callable[[], None]]:
        """A commit arrived: record its held reveal (and any reveal that waited on its chain)."""
        item = self.held.get(entry_hash)
        if item is None:
            return []
        undo = self._try_record(item, entry_hash)
        return [] if undo is None else [undo]

    # -- coin transactions (section 4.3) --------------------------------------------------

    def accept_transaction(
        self,
        tx: Transaction,
        *,
        now_ms: int,
        replay: bool = False,
        verified: bool = False,
        seq: int | None = None,
    ) -> Accepted:
        """Accept a signed coin transaction: rules 1-6 above; apply its balance changes.

        ``replay=True`` skips rules 1-4 and 6 (the journal holds only accepted transactions).

        Raises:
            RuleViolation: no inputs, bad signature, window, size, under-paid fee or an input
                above the address balance.
            DuplicateTransaction: the same txid was accepted before.
        """
        txid = tx.txid()
        if not replay:
            self.check_transaction(tx, now_ms=now_ms, verified=verified)
            if txid in self.pl.tx_index or self._known_transaction(txid):
                raise DuplicateTransaction(txid)
        self._check_balances(tx)
        deltas = self._transaction_deltas(tx)
        self._apply_deltas(deltas, sign=1)
        pl = self.pl
        pl.add_transaction(tx, txid)
        seq = self._next_seq(seq)

        def undo() -> None:
            self._apply_deltas(deltas, sign=-1)
            pl.remove_transaction(tx, txid)

        row = (seq, KIND_TRANSACTION, txid, tx.marshal(), now_ms)
        return Accepted((INSERT_JOURNAL, row), undo, {"txid": txid})

    def check_transaction(self, tx: Transaction, *, now_ms: int, verified: bool = False) -> None:
        """Rules 1-4 (no state needed). Raises RuleViolation."""
        if not tx.inputs:
            raise RuleViolation("a transaction needs at least one input")
        if not verified:
            try:
                tx.verify_signatures()
            except LedgerFormatError as exc:
                raise RuleViolation(f"invalid transaction signature: {exc}") from exc
        self._check_window(tx.timestamp_ms, now_ms)
        try:
            fee = tx.fee(self.ec_rate)
        except LedgerFormatError as exc:
            raise RuleViolation(f"invalid transaction: {exc}") from exc
        total_in, total_out = tx.total_inputs(), tx.total_outputs()
        if max(total_in, total_out + fee) > MAX_INT64:
            raise RuleViolation("transaction amounts overflow a signed 64-bit sum")
        if total_in < total_out + fee:
            raise RuleViolation(
                f"inputs {total_in} do not cover outputs {total_out} plus the fee {fee}"
            )

    def _check_balances(self, tx: Transaction) -> None:
        spent: dict[bytes, int] = {}
        for item in tx.inputs:
            spent[item.address] = spent.get(item.address, 0) + item.amount
        for address, amount in spent.items():
            balance = self.fct_balances.get(address, 0)
            if amount > balance:
                raise RuleViolation(
                    f"inputs of {amount} exceed the address balance of {balance} minor units"
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
