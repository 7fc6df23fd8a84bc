"""The sandbox's built-in ledger: a wallet + node in memory, implementing ``LedgerGateway``.

``python -m ledger.api --sandbox`` runs on it unless an external test network is named
(``ledger.api.sandbox.mode``); it closes a block when told (``mine_block``), which the
sandbox does every ``sandbox_block_time_s``. Tests drive it too, as the worker's ledger.
It keeps the rules the worker relies on: a commit is answered Repeated Commit (-32011)
when the same entry was already committed; a reveal needs its commit; an entry reveal
needs its chain; a directory block (``mine_block``) holds everything revealed since the
previous block, one entry block per chain. It counts every call per JSON-RPC method name,
and faults can be injected:

* ``fail_next(method, times)``: the next batches containing ``method`` raise
  ``GatewayUnavailable`` before doing anything (an outage).
* ``lose_reply_next(method, times)``: those batches are carried out, then the reply is lost
  (``GatewayUnavailable``), as when the API process dies right after sending.
* ``refuse_compose[entry_hash_hex] = RpcFailure(...)``: the wallet refuses that item;
  ``refuse_commit`` / ``refuse_reveal`` likewise for the node's answer to its commit or
  reveal.

Entry credits: ``credits`` is the paying address's balance (``None``, the default: never
runs out). A commit costs what the wallet composes (docs/formats.md §1.4: one credit per KiB
of payload, ten more for a new chain); one the balance does not cover is refused with the
node's -32602 answer, word for word, and ``ec_balance`` reports the balance.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ledger.api.outbox.gateway import (
    AnchorInfo,
    ComposedCalls,
    Composition,
    DirectoryBlockInfo,
    GatewayUnavailable,
    RpcCall,
    RpcFailure,
)
from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import sha256
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.errors import (
    REPEATED_COMMIT_INFO,
    InvalidParams,
    MethodNotFound,
    ObjectNotFound,
    RepeatedCommit,
)

__all__ = ["InMemoryLedger"]

_BLOCK_NOT_FOUND = RpcFailure.of(ObjectNotFound(ObjectNotFound.BLOCK))


class InMemoryLedger:
    """Wallet + node twin. Thread-safe.

    Args:
        start_height: height of the newest directory block at start.

    Attributes:
        calls: Counter of JSON-RPC method names called (``commit-chain``, ``heights``, ...).
        batches: the method names of every gateway call (one list per batch), in order.
        commits_sent / reveals_sent: Counter of entry hashes (hex) per commit / reveal sent.
        refuse_compose: entry hash hex -> RpcFailure the wallet answers for that item.
        refuse_commit, refuse_reveal: entry hash hex -> RpcFailure the node answers.
        credits: balance of the paying address (``None``: unlimited).
    """

    def __init__(self, *, start_height: int = 0) -> None:
        self._lock = threading.RLock()
        self.calls: Counter[str] = Counter()
        self.batches: list[list[str]] = []
        self.commits_sent: Counter[str] = Counter()
        self.reveals_sent: Counter[str] = Counter()
        self.refuse_compose: dict[str, RpcFailure] = {}
        self.refuse_commit: dict[str, RpcFailure] = {}
        self.refuse_reveal: dict[str, RpcFailure] = {}
        self.credits: int | None = None
        self._start_height = start_height
        self._fail: Counter[str] = Counter()
        self._lose: Counter[str] = Counter()
        self._reset_ledger()

    def _reset_ledger(self) -> None:
        self._height = self._start_height
        self._committed: set[str] = set()
        self._revealed: dict[str, Entry] = {}
        self._chains: set[str] = set()
        self._unblocked: list[Entry] = []
        self._dblocks: dict[int, DirectoryBlockInfo] = {}
        self._eblocks: dict[str, list[str]] = {}
        self._anchors: dict[int, str] = {}
        self._costs: dict[str, int] = {}  # entry hash -> credits its composed commit pays

    def reset(self) -> None:
        """Forget every commit, entry, block and anchor (back to ``start_height``).

        Call counters are cleared too; injected faults stay. Used by the sandbox purge.
        """
        with self._lock:
            self.calls.clear()
            self.batches.clear()
            self.commits_sent.clear()
            self.reveals_sent.clear()
            self._reset_ledger()

    # -- fault injection and block production -------------------------------------------

    def fail_next(self, method: str, times: int = 1) -> None:
        """Make the next ``times`` batches that contain ``method`` fail as an outage."""
        with self._lock:
            self._fail[method] += times

    def lose_reply_next(self, method: str, times: int = 1) -> None:
        """Carry out the next ``times`` batches containing ``method``, then lose the reply."""
        with self._lock:
            self._lose[method] += times

    def mine_block(self) -> DirectoryBlockInfo:
        """Close a directory block holding every entry revealed since the previous one."""
        with self._lock:
            self._height += 1
            by_chain: dict[str, list[str]] = {}
            for entry in self._unblocked:
                by_chain.setdefault(entry.chain_id.hex(), []).append(entry.hash().hex())
            self._unblocked = []
            pairs = []
            for chain_id, hashes in by_chain.items():
                keymr = _digest("eblock", self._height, chain_id)
                self._eblocks[keymr] = hashes
                pairs.append((chain_id, keymr))
            block = DirectoryBlockInfo(self._height, _digest("dblock", self._height), tuple(pairs))
            self._dblocks[self._height] = block
            return block

    def anchor_block(self, height: int, block_hash: str | None = None) -> str:
        """Record a proof-of-work anchor for directory block ``height``; returns its hash."""
        with self._lock:
            self._anchors[height] = block_hash or _digest("anchor", height)
            return self._anchors[height]

    def is_revealed(self, entry_hash_hex: str) -> bool:
        with self._lock:
            return entry_hash_hex in self._revealed

    # -- LedgerGateway ------------------------------------------------------------------

    def compose(self, items: Sequence[Composition]) -> list[ComposedCalls | RpcFailure]:
        methods = ["compose-chain" if i.new_chain else "compose-entry" for i in items]
        with self._lock:
            self._enter(methods)
            return self._finish(methods, [self._compose_one(i) for i in items])

    def submit(self, calls: Sequence[RpcCall]) -> list[dict[str, Any] | RpcFailure]:
        methods = [c.method for c in calls]
        with self._lock:
            self._enter(methods)
            return self._finish(methods, [self._submit_one(c) for c in calls])

    def height(self) -> int:
        with self._lock:
            self._enter(["heights"])
            return self._finish(["heights"], self._height)

    def directory_blocks(self, heights: Sequence[int]) -> list[DirectoryBlockInfo | RpcFailure]:
        methods = ["dblock-by-height"] * len(heights)
        with self._lock:
            self._enter(methods)
            blocks = [self._dblocks.get(h) or _BLOCK_NOT_FOUND for h in heights]
            return self._finish(methods, blocks)

    def entry_blocks(self, keymrs: Sequence[str]) -> list[list[str] | RpcFailure]:
        methods = ["entry-block"] * len(keymrs)
        with self._lock:
            self._enter(methods)
            found = [self._eblocks.get(k) for k in keymrs]
            lists = [list(f) if f is not None else _BLOCK_NOT_FOUND for f in found]
            return self._finish(methods, lists)

    def anchors(self, heights: Sequence[int]) -> list[AnchorInfo | None]:
        methods = ["anchors"] * len(heights)
        with self._lock:
            self._enter(methods)
            infos = [
                AnchorInfo(h, self._anchors[h]) if h in self._anchors else None for h in heights
            ]
            return self._finish(methods, infos)

    def ec_balance(self) -> int:
        with self._lock:
            self._enter(["entry-credit-balance"])
            balance = 10**9 if self.credits is None else self.credits
            return self._finish(["entry-credit-balance"], balance)

    def entry_statuses(self, entries: Sequence[tuple[str, str]]) -> list[str | RpcFailure]:
        methods = ["ack"] * len(entries)
        with self._lock:
            self._enter(methods)
            unblocked = {e.hash().hex() for e in self._unblocked}
            statuses: list[str | RpcFailure] = [
                "Unknown"
                if h not in self._revealed
                else "TransactionACK"
                if h in unblocked
                else "DBlockConfirmed"
                for _, h in entries
            ]
            return self._finish(methods, statuses)

    # -- internals ----------------------------------------------------------------------

    def _enter(self, methods: list[str]) -> None:
        for method in set(methods):
            if self._fail[method] > 0:
                self._fail[method] -= 1
                raise GatewayUnavailable(f"injected outage on {method}")
        self.calls.update(methods)
        self.batches.append(list(methods))

    def _finish(self, methods: list[str], result: Any) -> Any:
        for method in set(methods):
            if self._lose[method] > 0:
                self._lose[method] -= 1
                raise GatewayUnavailable(f"injected lost reply on {method}")
        return result

    def _compose_one(self, item: Composition) -> ComposedCalls | RpcFailure:
        entry_hash = item.entry.hash().hex()
        if entry_hash in self.refuse_compose:
            return self.refuse_compose[entry_hash]
        kind = "chain" if item.new_chain else "entry"
        self._costs[entry_hash] = item.entry.cost() + (NEW_CHAIN_FEE_EC if item.new_chain else 0)
        commit = RpcCall(f"commit-{kind}", {"message": entry_hash})
        reveal = RpcCall(f"reveal-{kind}", {"entry": item.entry.to_hex()})
        return ComposedCalls(commit, reveal)

    def _submit_one(self, call: RpcCall) -> dict[str, Any] | RpcFailure:
        if call.method in ("commit-chain", "commit-entry"):
            return self._commit(str(call.params.get("message", "")))
        if call.method in ("reveal-chain", "reveal-entry"):
            return self._reveal(call.method, str(call.params.get("entry", "")))
        return RpcFailure.of(MethodNotFound())

    def _commit(self, entry_hash: str) -> dict[str, Any] | RpcFailure:
        self.commits_sent[entry_hash] += 1
        if entry_hash in self.refuse_commit:
            return self.refuse_commit[entry_hash]
        if entry_hash in self._committed:
            data = {"info": REPEATED_COMMIT_INFO, "entryhash": entry_hash}
            return RpcFailure(ErrorCode.REPEATED_COMMIT, RepeatedCommit.MESSAGE, data)
        cost = self._costs.get(entry_hash, 1)
        if self.credits is not None:
            if self.credits < cost:
                text = (
                    f"entry credit balance {self.credits} is less than the {cost} credits committed"
                )
                return RpcFailure.of(InvalidParams(text))
            self.credits -= cost
        self._committed.add(entry_hash)
        return {"message": "Entry Commit Success", "entryhash": entry_hash}

    def _reveal(self, method: str, entry_hex: str) -> dict[str, Any] | RpcFailure:
        try:
            entry = Entry.from_hex(entry_hex)
        except LedgerFormatError as exc:
            return RpcFailure.of(InvalidParams(str(exc)))
        entry_hash, chain_id = entry.hash().hex(), entry.chain_id.hex()
        self.reveals_sent[entry_hash] += 1
        if entry_hash in self.refuse_reveal:
            return self.refuse_reveal[entry_hash]
        if entry_hash not in self._committed:
            return RpcFailure.of(InvalidParams("no commit for this entry"))
        if method == "reveal-entry" and chain_id not in self._chains:
            return RpcFailure.of(InvalidParams("chain not found"))
        if entry_hash not in self._revealed:
            self._revealed[entry_hash] = entry
            self._unblocked.append(entry)
            self._chains.add(chain_id)
        return {"message": "Entry Reveal Success", "entryhash": entry_hash, "chainid": chain_id}


def _digest(*parts: object) -> str:
    return sha256("/".join(str(p) for p in parts).encode()).hex()
