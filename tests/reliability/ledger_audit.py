"""What the node's saved blocks hold, read through its JSON-RPC interface and checked.

``LedgerAudit`` reads every directory block from height 0 up, and the entry blocks each one
lists, exactly once each, asserting on the way the rules a crash must never break:
heights without a gap, each directory block linking to its predecessor (previous KeyMR and
full hash, time not going back), and each chain's entry blocks linking to the previous
one with consecutive sequence numbers. It counts every entry hash it meets, so a test can
then ask whether an acknowledged write is there, and whether anything is there twice.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import httpx

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from tests.harness.waiting import WaitTimeout, wait_until

__all__ = ["LedgerAudit"]


class LedgerAudit:
    """Reads the node's saved blocks once each, in height order, checking every link.

    ``scan()`` reads the blocks added since the last call. ``entries`` counts each entry
    hash over every entry block read; ``height_of`` is the directory block height of an
    entry's (first) appearance; ``chains`` lists each chain's entry hashes in order.

    Raises (from ``scan``):
        AssertionError: a height is skipped or a block does not link to its predecessor.
    """

    def __init__(self, node_url: str) -> None:
        self._http = httpx.Client(timeout=10.0)
        self._url = node_url
        self.tip = -1
        self._prev: DirectoryBlock | None = None
        self._heads: dict[bytes, EntryBlock] = {}
        self.entries: Counter[bytes] = Counter()
        self.height_of: dict[bytes, int] = {}
        self.chains: dict[bytes, list[bytes]] = {}
        self.dblocks: dict[int, bytes] = {}  # height -> exact bytes

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LedgerAudit:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One JSON-RPC call to the node; its ``result`` (an error object fails the test)."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        reply = self._http.post(self._url, json=body).json()
        assert "result" in reply, f"{method} {params}: {reply}"
        return reply["result"]

    def scan(self) -> int:
        """Read the blocks saved since the last scan; returns the newest height."""
        tip = int(self.rpc("heights")["directoryblockheight"])
        for height in range(self.tip + 1, tip + 1):
            self._read(height)
        self.tip = max(self.tip, tip)
        return self.tip

    def _read(self, height: int) -> None:
        raw = bytes.fromhex(self.rpc("dblock-by-height", {"height": height})["rawdata"])
        dblock = DirectoryBlock.unmarshal(raw)
        assert dblock.height == height, f"asked for height {height}, got {dblock.height}"
        if self._prev is not None:
            assert dblock.prev_key_mr == self._prev.key_mr(), f"height {height}: previous KeyMR"
            assert dblock.prev_full_hash == self._prev.full_hash(), f"height {height}: full hash"
            assert dblock.timestamp_min >= self._prev.timestamp_min, f"height {height}: time"
        self._prev = dblock
        self.dblocks[height] = raw
        for item in dblock.entries[3:]:  # after the admin, entry credit and coin blocks
            data = self.rpc("raw-data", {"hash": item.key_mr.hex()})["data"]
            eblock = EntryBlock.unmarshal(bytes.fromhex(data))
            last = self._heads.get(eblock.chain_id)
            if last is None:
                assert eblock.sequence == 0, f"chain {eblock.chain_id.hex()} starts mid-way"
            else:
                assert eblock.prev_key_mr == last.key_mr(), f"height {height}: entry block link"
                assert eblock.sequence == last.sequence + 1, f"height {height}: sequence gap"
            self._heads[eblock.chain_id] = eblock
            for entry_hash in eblock.entry_hashes():
                self.entries[entry_hash] += 1
                self.height_of.setdefault(entry_hash, height)
                self.chains.setdefault(eblock.chain_id, []).append(entry_hash)

    def duplicates(self) -> dict[bytes, int]:
        """Entry hashes read more than once, with their counts."""
        return {h: n for h, n in self.entries.items() if n > 1}

    def describe_duplicates(self) -> str:
        """The entries read more than once, each with its chain and the heights of its
        entry blocks (for a failing assertion's message); empty when there are none."""
        twice = self.duplicates()
        where: dict[bytes, list[str]] = {}
        for chain_id, hashes in self.chains.items():
            for entry_hash in hashes:
                if entry_hash in twice:
                    where.setdefault(entry_hash, []).append(chain_id.hex()[:16])
        return "; ".join(
            f"{h.hex()[:16]} x{n} in chain {','.join(sorted(set(where.get(h, []))))} "
            f"first at height {self.height_of[h]}"
            for h, n in twice.items()
        )

    def wait_for(self, wanted: set[bytes], *, timeout_s: float) -> set[bytes]:
        """Scan until every hash of ``wanted`` was read or ``timeout_s`` passed; the missing."""

        def all_read() -> bool:
            self.scan()
            return not wanted - self.entries.keys()

        with contextlib.suppress(WaitTimeout):  # the caller reports what is missing
            wait_until(all_read, timeout_s, 0.2)
        return wanted - self.entries.keys()
