"""The process list: what the node has accepted for the directory block being built.

Items are kept in arrival order, split by minute (ten minutes per block), exactly as the
blocks will record them (factom-formats sections 5.4, 5.6, 5.7):

- entry credit block objects: commits in order, a minute marker object after each minute;
- per chain, entry block items: entry hashes, a minute marker ``00..0m`` after a minute in
  which the chain received entries (never two markers in a row);
- coin transactions per minute (the coin block puts a ``0x00`` marker after each minute).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger.core.blocks.entry_block import is_minute_marker, minute_marker
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.transaction import Transaction

MINUTES_PER_BLOCK = 10

Commit = CommitEntry | CommitChain


@dataclass
class ProcessList:
    """Accepted messages of the directory block at ``height`` that started at ``start_s``.

    ``minute`` is the minute being filled (0..9). ``ec_objects`` holds ``Commit`` instances
    and ``int`` minute markers (1..10) in order.
    """

    height: int
    start_s: float
    minute: int = 0
    ec_objects: list[Commit | int] = field(default_factory=list)
    eblock_items: dict[bytes, list[bytes]] = field(default_factory=dict)
    entries: dict[bytes, tuple[bytes, bytes]] = field(default_factory=dict)
    new_chains: dict[bytes, bytes] = field(default_factory=dict)
    transactions: list[list[Transaction]] = field(
        default_factory=lambda: [[] for _ in range(MINUTES_PER_BLOCK)]
    )
    revealed_commit_txids: list[bytes] = field(default_factory=list)

    # -- adding ---------------------------------------------------------------------------

    def add_commit(self, commit: Commit) -> None:
        self.ec_objects.append(commit)

    def add_entry(self, entry_hash: bytes, *, chain_id: bytes, raw: bytes) -> None:
        """Record an accepted reveal (raw entry bytes) in its chain's entry block."""
        self.eblock_items.setdefault(chain_id, []).append(entry_hash)
        self.entries.setdefault(entry_hash, (chain_id, raw))

    def add_transaction(self, tx: Transaction) -> None:
        self.transactions[self.minute].append(tx)

    # -- undo (used when the journal write of an accepted item fails) ----------------------

    def remove_commit(self, commit: Commit) -> None:
        for i in range(len(self.ec_objects) - 1, -1, -1):
            if self.ec_objects[i] is commit:
                del self.ec_objects[i]
                return

    def remove_entry(self, entry_hash: bytes, chain_id: bytes) -> None:
        items = self.eblock_items.get(chain_id, [])
        for i in range(len(items) - 1, -1, -1):
            if items[i] == entry_hash:
                del items[i]
                break
        if not items:
            self.eblock_items.pop(chain_id, None)
        self.entries.pop(entry_hash, None)
        self.new_chains.pop(chain_id, None) if self.new_chains.get(chain_id) == entry_hash else None

    def remove_transaction(self, tx: Transaction) -> None:
        for bucket in self.transactions:
            if tx in bucket:
                bucket.remove(tx)
                return

    # -- minutes --------------------------------------------------------------------------

    def end_minute(self) -> None:
        """Close the current minute: add the markers of minute ``self.minute + 1``."""
        marker_number = self.minute + 1
        self.ec_objects.append(marker_number)
        marker = minute_marker(marker_number)
        for items in self.eblock_items.values():
            if items and not is_minute_marker(items[-1]):
                items.append(marker)
        self.minute = min(self.minute + 1, MINUTES_PER_BLOCK)

    @property
    def complete(self) -> bool:
        """True once all ten minutes are closed."""
        return self.minute >= MINUTES_PER_BLOCK

    def chain_in_process(self, chain_id: bytes) -> bool:
        return chain_id in self.eblock_items or chain_id in self.new_chains

    def commits(self) -> list[Commit]:
        return [obj for obj in self.ec_objects if not isinstance(obj, int)]
