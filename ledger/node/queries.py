"""Read-side queries of the node service (pending lists, statuses, lookups).

A mixin of ``NodeService``: it relies on ``self.store``, ``self.process_list``,
``self._saving`` and ``self._rules()`` and never changes state.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ledger.core.entry import Entry
from ledger.core.transaction import Transaction
from ledger.node.assembly import node_identity
from ledger.node.process_list import ProcessList

if TYPE_CHECKING:
    from ledger.node.assembly import BlockSet
    from ledger.node.rules import LedgerRules
    from ledger.node.store import Store
    from ledger.node.tip import ChainTip


class NodeQueries:
    """Read-only views over the store and the process lists."""

    store: Store
    tip: ChainTip
    _saving: BlockSet | None

    @property
    def process_list(self) -> ProcessList:  # provided by NodeService
        raise NotImplementedError

    def _rules(self) -> LedgerRules:  # provided by NodeService
        raise NotImplementedError

    def _open_lists(self) -> list[ProcessList]:
        lists = [self.process_list]
        if self._saving is not None:
            lists.append(self._saving.process_list)
        return lists

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
        identity = node_identity(self.store)
        return {"chain_id": identity.chain_id.hex(), "public_key": identity.key.public_key.hex()}

    def pending_entry(self, entry_hash: bytes) -> tuple[bytes, bytes] | None:
        """``(chain_id, raw entry)`` if the entry is in the process list or held."""
        found = self.process_list.entries.get(entry_hash)
        if found is None and self._saving is not None:
            found = self._saving.process_list.entries.get(entry_hash)
        if found is not None:
            return found
        held = self._rules().held.get(entry_hash)
        return None if held is None else (held.entry.chain_id, held.raw)

    def pending_entries(self) -> list[dict[str, str]]:
        """Entries accepted but not in a saved block: TransactionACK, or NotConfirmed if held."""
        lists = self._open_lists()
        items = [
            {"entryhash": ehash.hex(), "chainid": chain_id.hex(), "status": "TransactionACK"}
            for pl in lists
            for ehash, (chain_id, _raw) in pl.entries.items()
        ]
        items += [
            {"entryhash": ehash.hex(), "chainid": held.entry.chain_id.hex(), "status": "NotConfirmed"}
            for ehash, held in self._rules().held.items()
        ]
        return items

    def commit_for_entry(self, entry_hash: bytes) -> tuple[bytes | None, int | None]:
        """``(commit txid, received ms)`` of the latest commit paying for ``entry_hash``."""
        row = self.store.read.execute(
            "SELECT txid, received_ms FROM commits WHERE entry_hash=? ORDER BY seq DESC LIMIT 1",
            (entry_hash,),
        ).fetchone()
        return (None, None) if row is None else (bytes(row[0]), int(row[1]))

    def entry_block_time_ms(self, entry_hash: bytes) -> int | None:
        """Start of the directory block that records ``entry_hash`` (ms), if any."""
        row = self.store.read.execute(
            "SELECT d.timestamp_min FROM entries e JOIN dblocks d ON d.height=e.height"
            " WHERE e.entry_hash=?",
            (entry_hash,),
        ).fetchone()
        return None if row is None else int(row[0]) * 60_000

    def commit_ack(self, txid: bytes) -> dict[str, object]:
        """``ack`` with chainid ``c``: status of a commit by its txid (dates in seconds, as factomd)."""
        row = self.store.read.execute(
            "SELECT entry_hash, received_ms, block_height FROM commits WHERE txid=?", (txid,)
        ).fetchone()
        if row is None:
            return {"committxid": txid.hex(), "entryhash": "", "commitdata": {"status": "Unknown"}}
        status = "DBlockConfirmed" if row[2] is not None else "TransactionACK"
        return {
            "committxid": txid.hex(),
            "entryhash": bytes(row[0]).hex(),
            "commitdata": {"status": status, "transactiondate": int(row[1]) // 1000},
        }

    def entry_status(self, entry_hash: bytes) -> str:
        """Ack status of an entry: DBlockConfirmed, TransactionACK, NotConfirmed or Unknown."""
        if self.store.read.execute(
            "SELECT 1 FROM entries WHERE entry_hash=?", (entry_hash,)
        ).fetchone():
            return "DBlockConfirmed"
        if entry_hash in self.process_list.entries or (
            self._saving is not None and entry_hash in self._saving.process_list.entries
        ):
            return "TransactionACK"
        if entry_hash in self._rules().held:
            return "NotConfirmed"
        return "Unknown"



    def coin_ack(self, txid: bytes) -> dict[str, Any]:
        """``coin-ack`` result: DBlockConfirmed once in a saved block, TransactionACK if pending."""
        from ledger.node.handlers.transactions import coin_ack_json

        found = self.find_transaction(txid)
        if found is None:
            return coin_ack_json(txid, status="Unknown", tx_ms=None, block_ms=None)
        tx, height, _fkeymr, _dkeymr = found
        if height < 0:
            return coin_ack_json(txid, status="TransactionACK", tx_ms=tx.timestamp_ms, block_ms=None)
        row = self.store.read.execute(
            "SELECT timestamp_min FROM dblocks WHERE height=?", (height,)
        ).fetchone()
        return coin_ack_json(
            txid, status="DBlockConfirmed", tx_ms=tx.timestamp_ms, block_ms=int(row[0]) * 60_000
        )

    def find_transaction(self, key: bytes) -> tuple[Transaction, int, bytes | None, bytes | None] | None:
        """``(tx, height or -1, coin block keymr, directory block keymr)`` by txid or full hash."""
        row = self.store.read.execute(
            "SELECT t.raw, t.height, t.fblock_keymr, d.keymr FROM txs t"
            " JOIN dblocks d ON d.height=t.height WHERE t.txid=? OR t.full_hash=?",
            (key, key),
        ).fetchone()
        if row is not None:
            return Transaction.unmarshal(bytes(row[0])), int(row[1]), bytes(row[2]), bytes(row[3])
        for pl in self._open_lists():
            for bucket in pl.transactions:
                for tx in bucket:
                    if key in (tx.txid(), tx.full_hash()):
                        return tx, -1, None, None
        return None

    def pending_transactions(self, rcd_hash: bytes | None) -> list[dict[str, Any]]:
        """Coin transactions not yet in a saved block, optionally touching ``rcd_hash``."""
        rate = self._rules().ec_rate
        result = []
        for pl in self._open_lists():
            for bucket in pl.transactions:
                for tx in bucket:
                    touched = {a.address for a in (*tx.inputs, *tx.outputs)}
                    if rcd_hash is not None and rcd_hash not in touched:
                        continue
                    body = tx.to_json()
                    result.append(
                        {
                            "transactionid": tx.txid().hex(),
                            "dbheight": pl.height,
                            "status": "TransactionACK",
                            "inputs": body["inputs"],
                            "outputs": body["outputs"],
                            "ecoutputs": body["outecs"],
                            "fees": tx.fee(rate),
                        }
                    )
        return result

    def find_entry(self, entry_hash: bytes) -> tuple[Entry, int, bytes | None, bytes | None] | None:
        """``(entry, height or -1, entry block keymr, directory block keymr)`` of an entry."""
        row = self.store.read.execute(
            "SELECT e.raw, e.height, e.eblock_keymr, d.keymr FROM entries e"
            " JOIN dblocks d ON d.height=e.height WHERE e.entry_hash=?",
            (entry_hash,),
        ).fetchone()
        if row is not None:
            return Entry.unmarshal(bytes(row[0])), int(row[1]), bytes(row[2]), bytes(row[3])
        pending = self.pending_entry(entry_hash)
        if pending is None:
            return None
        return Entry.unmarshal(pending[1]), -1, None, None
