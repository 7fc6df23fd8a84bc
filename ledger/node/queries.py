"""Read-side queries of the node service (pending lists, statuses, lookups).

A mixin of ``NodeService``: it relies on ``self.store``, ``self.floor_seq``, the process
lists and ``self._rules()`` and never changes state. Saved data is read from the store
(``ledger.node.store`` describes the tables); pending data from the process lists.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.core.entry import Entry
from ledger.core.transaction import Transaction
from ledger.node.assembly import node_identity
from ledger.node.process_list import ProcessList, RecordedEntry
from ledger.node.store import row_by_either_key

if TYPE_CHECKING:
    from ledger.node.assembly import BlockSet, NodeIdentity
    from ledger.node.rules import LedgerRules
    from ledger.node.store import Store
    from ledger.node.tip import ChainTip


@dataclass(frozen=True)
class CommitInfo:
    """A journaled commit: raw bytes, txid, node receive time (ms) and height once in a block."""

    raw: bytes
    txid: bytes
    received_ms: int
    height: int | None

    @property
    def entry_hash(self) -> bytes:
        """The entry hash the commit pays for (raw 32 bytes)."""
        return self.raw[7:39] if len(self.raw) == 136 else self.raw[71:103]


@dataclass(frozen=True)
class SavedEntry:
    """An entry recorded in a saved block."""

    entry_hash: bytes
    raw: bytes
    height: int
    commit_seq: int

    @property
    def chain_id(self) -> bytes:
        return self.raw[1:33]


class NodeQueries:
    """Read-only views over the store and the process lists."""

    store: Store
    tip: ChainTip
    floor_seq: int
    identity: NodeIdentity | None
    _saving: BlockSet | None
    _cut: Any

    @property
    def process_list(self) -> ProcessList:  # provided by NodeService
        raise NotImplementedError

    def _rules(self) -> LedgerRules:  # provided by NodeService
        raise NotImplementedError

    def _closed_lists(self) -> list[ProcessList]:
        """Process lists cut but not yet saved (being assembled, being written)."""
        lists = []
        if self._cut is not None:
            lists.append(self._cut.pl)
        if self._saving is not None:
            lists.append(self._saving.process_list)
        return lists

    def _open_lists(self) -> list[ProcessList]:
        """The current process list and those cut but not yet saved."""
        return [self.process_list, *self._closed_lists()]

    def _recorded(self, entry_hash: bytes) -> RecordedEntry | None:
        """The entry as recorded in an unsaved process list, if it is in one."""
        for pl in self._open_lists():
            found = pl.entries.get(entry_hash)
            if found is not None:
                return found
        return None

    # -- balances and status ----------------------------------------------------------------

    def balance(self, kind: str, key: bytes, *, saved: bool = False) -> int:
        """Balance of ``key``: ``kind`` "ec" (credits, by public key) or "fct" (minor units, by
        RCD hash); acknowledged (default) or as of the last saved block."""
        if saved:
            row = self.store.read.execute(
                "SELECT amount FROM balances WHERE kind=? AND key=?", (kind, key)
            ).fetchone()
            return 0 if row is None else int(row[0])
        rules = self._rules()
        table = rules.ec_balances if kind == "ec" else rules.fct_balances
        return table.get(key, 0)

    def balance_hash(self, *, temporary: bool = False) -> bytes:
        """SHA-256 over all balances, sorted (saved ones, or acknowledged when ``temporary``)."""
        if temporary:
            rules = self._rules()
            items = [("ec", k, v) for k, v in rules.ec_balances.items()]
            items += [("fct", k, v) for k, v in rules.fct_balances.items()]
        else:
            items = [
                (kind, bytes(key), amount)
                for kind, key, amount in self.store.read.execute(
                    "SELECT kind, key, amount FROM balances"
                )
            ]
        digest = hashlib.sha256()
        for kind, key, amount in sorted(items):
            digest.update(kind.encode() + key + amount.to_bytes(8, "big", signed=True))
        return digest.digest()

    def identity_hex(self) -> dict[str, str]:
        """The node's identity chain id and public key (hex), as used in admin block signatures."""
        identity = self.identity or node_identity(self.store)
        return {"chain_id": identity.chain_id.hex(), "public_key": identity.key.public_key.hex()}

    def block_time_ms(self, height: int | None) -> int | None:
        """Start of the saved directory block at ``height`` in Unix ms (None if not saved)."""
        if height is None:
            return None
        row = self.store.read.execute(
            "SELECT timestamp_min FROM dblocks WHERE height=?", (height,)
        ).fetchone()
        return None if row is None else int(row[0]) * 60_000

    def height_of_seq(self, seq: int) -> int | None:
        """Height of the saved block that recorded the commit or transaction journaled as ``seq``.

        Every commit is recorded in the first block cut after it was accepted, i.e. the
        lowest height whose journal floor is at least ``seq``; None while not yet saved.
        """
        if seq > self.floor_seq:
            return None
        row = self.store.read.execute(
            "SELECT height FROM dblocks WHERE floor_seq >= ? ORDER BY floor_seq LIMIT 1", (seq,)
        ).fetchone()
        return None if row is None else int(row[0])

    def ec_block_keys(self, height: int | None) -> tuple[bytes, bytes] | None:
        """``(entry credit block header hash, directory block keymr)`` of a saved height."""
        if height is None:
            return None
        row = self.store.read.execute(
            "SELECT e.header_hash, d.keymr FROM ecblocks e JOIN dblocks d ON d.height=e.height"
            " WHERE e.height=?",
            (height,),
        ).fetchone()
        return None if row is None else (bytes(row[0]), bytes(row[1]))

    # -- entries ------------------------------------------------------------------------------

    def saved_entry(self, entry_hash: bytes) -> SavedEntry | None:
        """The entry as recorded in a saved block, if it is."""
        row = self.store.read.execute(
            "SELECT j.raw, i.height, i.commit_seq FROM entry_index i"
            " JOIN journal j ON j.seq = i.reveal_seq WHERE i.entry_hash=?",
            (entry_hash,),
        ).fetchone()
        if row is None:
            return None
        return SavedEntry(entry_hash, bytes(row[0]), int(row[1]), int(row[2]))

    def entry_height(self, entry_hash: bytes) -> int | None:
        """Height of the saved directory block recording ``entry_hash``, if any."""
        row = self.store.read.execute(
            "SELECT height FROM entry_index WHERE entry_hash=?", (entry_hash,)
        ).fetchone()
        return None if row is None else int(row[0])

    def pending_entry(self, entry_hash: bytes) -> tuple[bytes, bytes] | None:
        """``(chain_id, raw entry)`` if the entry is in an unsaved process list or held.

        A recorded entry's bytes are read from its journal row, so an entry accepted in
        memory whose journal write is not yet durable (not yet acknowledged) is not found.
        """
        found = self._recorded(entry_hash)
        if found is not None:
            row = self.store.read.execute(
                "SELECT raw FROM journal WHERE seq=?", (found.reveal_seq,)
            ).fetchone()
            return None if row is None else (found.chain_id, bytes(row[0]))
        held = self._rules().held.get(entry_hash)
        return None if held is None else (held.entry.chain_id, held.raw)

    def chain_of_entry(self, entry_hash: bytes) -> bytes | None:
        """Chain id of an entry the node has seen (recorded, pending or held), else None."""
        found = self._recorded(entry_hash)
        if found is not None:
            return found.chain_id
        held = self._rules().held.get(entry_hash)
        if held is not None:
            return held.entry.chain_id
        saved = self.saved_entry(entry_hash)
        return None if saved is None else saved.chain_id

    def pending_entries(self) -> list[dict[str, str]]:
        """Entries accepted but not in a saved block: TransactionACK, or NotConfirmed if held."""
        items = [
            {"entryhash": ehash.hex(), "chainid": rec.chain_id.hex(), "status": "TransactionACK"}
            for pl in self._open_lists()
            for ehash, rec in pl.entries.items()
        ]
        items += [
            {
                "entryhash": ehash.hex(),
                "chainid": held.entry.chain_id.hex(),
                "status": "NotConfirmed",
            }
            for ehash, held in self._rules().held.items()
        ]
        return items

    def entry_status(self, entry_hash: bytes) -> str:
        """Ack status of an entry: DBlockConfirmed, TransactionACK, NotConfirmed or Unknown."""
        if self.entry_height(entry_hash) is not None:
            return "DBlockConfirmed"
        if any(entry_hash in pl.entries for pl in self._open_lists()):
            return "TransactionACK"
        if entry_hash in self._rules().held:
            return "NotConfirmed"
        return "Unknown"

    def find_entry(self, entry_hash: bytes) -> tuple[Entry, int, bytes | None, bytes | None] | None:
        """``(entry, height or -1, entry block keymr, directory block keymr)`` of an entry."""
        saved = self.saved_entry(entry_hash)
        if saved is not None:
            keys = self.eblock_keys(saved.chain_id, saved.height)
            eblock, dblock = keys if keys else (None, None)
            return Entry.unmarshal(saved.raw), saved.height, eblock, dblock
        pending = self.pending_entry(entry_hash)
        if pending is None:
            return None
        return Entry.unmarshal(pending[1]), -1, None, None

    def eblock_keys(self, chain_id: bytes, height: int) -> tuple[bytes, bytes] | None:
        """``(entry block keymr, directory block keymr)`` of a chain's block at ``height``."""
        row = self.store.read.execute(
            "SELECT b.keymr, d.keymr FROM eblocks b JOIN dblocks d ON d.height=b.height"
            " WHERE b.chain_id=? AND b.height=?",
            (chain_id, height),
        ).fetchone()
        return None if row is None else (bytes(row[0]), bytes(row[1]))

    # -- commits ------------------------------------------------------------------------------

    def find_commit(self, txid: bytes) -> CommitInfo | None:
        """A journaled commit by its txid (raw 32 bytes)."""
        row = self.store.read.execute(
            "SELECT seq, raw, received_ms FROM journal WHERE kind=1 AND key=?", (txid,)
        ).fetchone()
        if row is None:
            return None
        return CommitInfo(bytes(row[1]), txid, int(row[2]), self.height_of_seq(int(row[0])))

    def commit_for_entry(self, entry_hash: bytes) -> CommitInfo | None:
        """The commit that paid for ``entry_hash`` (recorded entries) or the open commit
        waiting for its reveal; None if the node knows of neither."""
        saved = self.saved_entry(entry_hash)
        if saved is not None:
            return self._commit_by_seq(saved.commit_seq)
        rec = self._recorded(entry_hash)
        if rec is not None:
            return self._commit_by_seq(rec.commit_seq)
        opened = self._rules().open_commits.get(entry_hash)
        if opened is None:
            return None
        raw = opened.commit.marshal()
        return CommitInfo(raw, opened.txid, opened.received_ms, self.height_of_seq(opened.seq))

    def _commit_by_seq(self, seq: int) -> CommitInfo | None:
        row = self.store.read.execute(
            "SELECT raw, key, received_ms FROM journal WHERE seq=?", (seq,)
        ).fetchone()
        if row is None:  # its journal write is still in flight
            return None
        return CommitInfo(bytes(row[0]), bytes(row[1]), int(row[2]), self.height_of_seq(seq))

    # -- coin transactions --------------------------------------------------------------------

    def find_transaction(
        self, key: bytes
    ) -> tuple[Transaction, int, bytes | None, bytes | None] | None:
        """``(tx, height or -1, coin block keymr, directory block keymr)`` by txid or full hash."""
        sql = (
            "SELECT t.raw, t.height, t.fblock_keymr, d.keymr FROM txs t"
            " JOIN dblocks d ON d.height=t.height WHERE t.{column}=?"
        )
        row = row_by_either_key(self.store.read, sql, ("txid", "full_hash"), key)
        if row is not None:
            tx = Transaction.unmarshal(bytes(row[0]))
            return tx, int(row[1]), bytes(row[2]), bytes(row[3])
        for pl in self._open_lists():
            pending = pl.tx_index.get(key)
            if pending is not None:
                return pending, -1, None, None
        for pl in self._open_lists():
            for candidate in pl.tx_index.values():
                if candidate.full_hash() == key:
                    return candidate, -1, None, None
        return None

    def pending_transactions(self, rcd_hash: bytes | None) -> list[dict[str, Any]]:
        """Coin transactions not yet in a saved block, optionally touching ``rcd_hash``."""
        rate = self._rules().ec_rate
        result = []
        for pl in self._open_lists():
            for txid, tx in pl.tx_index.items():
                touched = {a.address for a in (*tx.inputs, *tx.outputs)}
                if rcd_hash is None or rcd_hash in touched:
                    result.append(_pending_tx_json(txid, tx, height=pl.height, rate=rate))
        return result


def _pending_tx_json(txid: bytes, tx: Transaction, *, height: int, rate: int) -> dict[str, Any]:
    body = tx.to_json()
    return {
        "transactionid": txid.hex(),
        "dbheight": height,
        "status": "TransactionACK",
        "inputs": body["inputs"],
        "outputs": body["outputs"],
        "ecoutputs": body["outecs"],
        "fees": tx.fee(rate),
    }
