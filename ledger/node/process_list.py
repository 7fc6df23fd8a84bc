"""The process list: what the node has accepted for the directory block being built.

Items are kept in arrival order, split by minute (ten minutes per block), exactly as the
blocks will record them (docs/formats.md §5.4, §5.6, §5.7):

- entry credit block objects: commits in order, a minute marker object after each minute;
- per chain, entry block items: entry hashes, a minute marker ``00..0m`` after a minute in
  which the chain received entries (never two markers in a row);
- coin transactions per minute (the coin block puts a ``0x00`` marker after each minute).

Indexes by commit txid and transaction txid make the replay checks and lookups O(1).
Journal sequence numbers (``seq``) of the recorded reveals and of the commits paying for
them are kept so that a saved block can point at the journal rows holding the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ledger.core.blocks.entry_block import is_minute_marker, minute_marker
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.transaction import Transaction

MINUTES_PER_BLOCK = 10

Commit = CommitEntry | CommitChain


class RecordedEntry(NamedTuple):
    """An entry recorded in a process list and the commit that paid for it.

    The entry's bytes are not kept here: they are in the journal row ``reveal_seq`` (an
    open block at the production block time can hold hundreds of thousands of entries of
    up to 10 KiB each, so keeping them would make memory grow with the block). A tuple of
    bytes and ints, so the cyclic garbage collector stops tracking it after its first
    pass: a full collection over an open block of 300,000 entries took 320 ms with these
    records tracked (every collection walks every tracked object).

    Attributes:
        chain_id: raw 32 bytes.
        reveal_seq / commit_seq: journal sequence numbers of the reveal and of its commit.
        commit_txid: raw 32 bytes. commit_received_ms: node time the commit was accepted.
    """

    chain_id: bytes
    reveal_seq: int
    commit_txid: bytes
    commit_seq: int
    commit_received_ms: int


@dataclass
class ProcessList:
    """Accepted messages of the directory block at ``height`` that started at ``start_s``.

    ``minute`` is the minute being filled (0..9, 10 once complete). ``ec_objects`` holds
    ``Commit`` instances and ``int`` minute markers (1..10) in order; ``ec_raw``, in step
    with it, each commit's marshalled bytes (empty for a marker), so that assembling the
    entry credit block does not marshal every commit again. ``entries`` maps an
    entry hash to its ``RecordedEntry``; ``commit_txids`` and ``tx_index`` hold
    the txids (raw 32 bytes) of the commits and coin transactions accepted into this list.
    """

    height: int
    start_s: float
    minute: int = 0
    ec_objects: list[Commit | int] = field(default_factory=list)
    ec_raw: list[bytes] = field(default_factory=list)
    eblock_items: dict[bytes, list[bytes]] = field(default_factory=dict)
    entries: dict[bytes, RecordedEntry] = field(default_factory=dict)
    new_chains: dict[bytes, bytes] = field(default_factory=dict)
    transactions: list[list[Transaction]] = field(
        default_factory=lambda: [[] for _ in range(MINUTES_PER_BLOCK)]
    )
    revealed_commit_txids: list[bytes] = field(default_factory=list)
    commit_txids: set[bytes] = field(default_factory=set)
    tx_index: dict[bytes, Transaction] = field(default_factory=dict)

    # -- adding ---------------------------------------------------------------------------

    def add_commit(self, commit: Commit, txid: bytes, raw: bytes | None = None) -> None:
        """Append ``commit`` (whose txid is ``txid`` and bytes ``raw``, ``commit.marshal()``
        when not given) to the entry credit objects."""
        self.ec_objects.append(commit)
        self.ec_raw.append(commit.marshal() if raw is None else raw)
        self.commit_txids.add(txid)

    def add_entry(self, entry_hash: bytes, recorded: RecordedEntry) -> None:
        """Record an accepted reveal in its chain's entry block (duplicates appear twice)."""
        self.eblock_items.setdefault(recorded.chain_id, []).append(entry_hash)
        self.entries.setdefault(entry_hash, recorded)

    def add_transaction(self, tx: Transaction, txid: bytes) -> None:
        """Append ``tx`` to the current minute's coin transactions."""
        self.transactions[min(self.minute, MINUTES_PER_BLOCK - 1)].append(tx)
        self.tx_index[txid] = tx

    # -- undo (used when the journal write of an accepted item fails) ----------------------

    def remove_commit(self, commit: Commit, txid: bytes) -> None:
        for i in range(len(self.ec_objects) - 1, -1, -1):
            if self.ec_objects[i] is commit:
                del self.ec_objects[i]
                del self.ec_raw[i]
                break
        self.commit_txids.discard(txid)

    def remove_entry(self, entry_hash: bytes, chain_id: bytes) -> None:
        items = self.eblock_items.get(chain_id, [])
        for i in range(len(items) - 1, -1, -1):
            if items[i] == entry_hash:
                del items[i]
                # never leave two markers in a row (or a marker first)
                at_marker = i < len(items) and is_minute_marker(items[i])
                if at_marker and (i == 0 or is_minute_marker(items[i - 1])):
                    del items[i]
                break
        if not any(not is_minute_marker(item) for item in items):
            self.eblock_items.pop(chain_id, None)
        if entry_hash not in items:
            self.entries.pop(entry_hash, None)
        if self.new_chains.get(chain_id) == entry_hash:
            del self.new_chains[chain_id]

    def remove_transaction(self, tx: Transaction, txid: bytes) -> None:
        for bucket in self.transactions:
            if tx in bucket:
                bucket.remove(tx)
                break
        self.tx_index.pop(txid, None)

    # -- minutes --------------------------------------------------------------------------

    def end_minute(self) -> None:
        """Close the current minute: add the markers of minute ``self.minute + 1``."""
        if self.complete:
            return
        marker_number = self.minute + 1
        self.ec_objects.append(marker_number)
        self.ec_raw.append(b"")
        marker = minute_marker(marker_number)
        for items in self.eblock_items.values():
            if items and not is_minute_marker(items[-1]):
                items.append(marker)
        self.minute += 1

    @property
    def complete(self) -> bool:
        """True once all ten minutes are closed."""
        return self.minute >= MINUTES_PER_BLOCK

    def chain_in_process(self, chain_id: bytes) -> bool:
        """Whether the chain receives entries (or is created) in this list."""
        return chain_id in self.eblock_items or chain_id in self.new_chains

    def commits(self) -> list[Commit]:
        """The commits in order, markers left out."""
        return [obj for obj in self.ec_objects if not isinstance(obj, int)]

    def all_transactions(self) -> list[Transaction]:
        """Every coin transaction in minute order."""
        return [tx for bucket in self.transactions for tx in bucket]
