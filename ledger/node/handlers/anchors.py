"""The ``anchors`` method (docs/jsonrpc.md §4; docs/formats.md §7.1, §7.4).

Params ``{"height": n}`` or ``{"hash": h}``, ``h`` being a directory block KeyMR (or full
hash), an entry hash, an entry block KeyMR, an admin block lookup hash, an entry credit
block header hash, a coin block KeyMR, a commit txid or a coin transaction id: it names the
directory block height that holds it. Result::

    {"directoryblockheight", "directoryblockkeymr",
     "anchor_pow": false | {"transactionhash", "blockhash"},
     "anchor_contract": false | {"recordheight", "dbheightmax", "dbheightmin", "windowmr",
                                 "merklebranch": [{left, right, top}], "contractaddress",
                                 "txid", "blockhash", "txindex"},
     "bitcoin": <anchor_pow>, "ethereum": <anchor_contract>}    (factomd's names, same data)

The answers come from the anchor records in the ledger itself: entries of
ChainID(["FactomAnchorChain"]) (proof-of-work anchors) and
ChainID(["FactomEthereumAnchorChain"]) (window anchors) in saved directory blocks, signed
(ExtID[0]) by a trusted anchor key. A record counts only if its KeyMR is the KeyMR this node
holds at that height (a window record: if its window root is the root of this node's
KeyMRs over the window); the first valid record per height wins. The window branch is
rebuilt here from the node's own KeyMRs. Records are indexed incrementally, block by
block, on the event loop thread.

Trusted keys: ``settings.anchor_public_key`` (hex) when the node settings have it,
otherwise on a development network (``dev_genesis``) the development anchor key, and
otherwise none (every answer says ``false``).
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ledger.core.anchor_record import (
    CONTRACT_CHAIN_ID,
    POW_ANCHOR_CHAIN_ID,
    AnchorRecord,
    parse_signed_record,
    window_root,
)
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.merkle import merkle_branch
from ledger.devnet import DEV_ANCHOR_PUBLIC_KEY
from ledger.jsonrpc import InvalidParams, ObjectNotFound
from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.handlers.blocks import HEIGHT_KINDS, eblock_raw
from ledger.node.params import AnchorsParams
from ledger.node.service import NodeService

__all__ = ["AnchorIndex", "register", "trusted_anchor_keys"]


def trusted_anchor_keys(settings: Any) -> list[bytes]:
    """Raw 32-byte public keys whose anchor records the node believes (see module doc)."""
    configured = getattr(settings, "anchor_public_key", None)
    if configured:
        return [bytes.fromhex(str(configured))]
    return [DEV_ANCHOR_PUBLIC_KEY] if getattr(settings, "dev_genesis", False) else []


@dataclass
class AnchorIndex:
    """Valid anchor records found in the saved blocks, by directory block height.

    ``refresh(tip)`` reads the anchor chains' entry blocks above the last height read.
    """

    read: sqlite3.Connection
    entry_raw: Callable[[bytes], bytes | None]
    trusted_keys: list[bytes]
    scanned: int = -1
    pow: dict[int, AnchorRecord] = field(default_factory=dict)
    windows: list[tuple[int, int, AnchorRecord]] = field(default_factory=list)

    def refresh(self, tip_height: int) -> None:
        """Index records in blocks ``scanned+1 .. tip_height``."""
        if tip_height <= self.scanned or not self.trusted_keys:
            return
        for chain_id in (POW_ANCHOR_CHAIN_ID, CONTRACT_CHAIN_ID):
            rows = self.read.execute(
                "SELECT raw FROM eblocks WHERE chain_id = ? AND height > ? AND height <= ?"
                " ORDER BY height",
                (chain_id, self.scanned, tip_height),
            ).fetchall()
            for (raw,) in rows:
                for entry_hash in EntryBlock.unmarshal(bytes(raw)).entry_hashes():
                    self._add(entry_hash)
        self.scanned = tip_height

    def _add(self, entry_hash: bytes) -> None:
        raw = self.entry_raw(entry_hash)
        if raw is None:
            return
        try:
            record = parse_signed_record(Entry.unmarshal(raw), self.trusted_keys)
        except LedgerFormatError:
            return  # the chain's first entry, an unsigned or foreign record: not an anchor
        if record.pow is not None and record.db_height not in self.pow:
            if self.keymr_at(record.db_height) == record.keymr:
                self.pow[record.db_height] = record
        elif record.window is not None and self._window_holds(record):
            w = record.window
            bisect.insort(self.windows, (w.height_max, w.height_min, record), key=lambda t: t[:2])

    def _window_holds(self, record: AnchorRecord) -> bool:
        w = record.window
        assert w is not None
        keymrs = self.keymrs(w.height_min, w.height_max)
        return len(keymrs) == w.height_max - w.height_min + 1 and window_root(keymrs) == w.window_mr

    def keymr_at(self, height: int) -> bytes | None:
        row = self.read.execute("SELECT keymr FROM dblocks WHERE height=?", (height,)).fetchone()
        return None if row is None else bytes(row[0])

    def keymrs(self, low: int, high: int) -> list[bytes]:
        rows = self.read.execute(
            "SELECT keymr FROM dblocks WHERE height BETWEEN ? AND ? ORDER BY height", (low, high)
        ).fetchall()
        return [bytes(r[0]) for r in rows]

    def window_for(self, height: int) -> AnchorRecord | None:
        """The first window record (lowest top) covering ``height``."""
        start = bisect.bisect_left(self.windows, height, key=lambda t: t[0])
        for _top, low, record in self.windows[start:]:
            if low <= height:
                return record
        return None


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add ``anchors``, bound to ``service``, to ``registry``."""
    index = AnchorIndex(
        service.store.read, _entry_reader(service), trusted_anchor_keys(service.settings)
    )

    @registry.method("anchors", params=AnchorsParams, blocking=False)
    def anchors(params: AnchorsParams) -> dict[str, Any]:
        height = _resolve_height(service, params)
        keymr = index.keymr_at(height)
        if keymr is None:
            raise ObjectNotFound(ObjectNotFound.BLOCK)
        index.refresh(service.tip.height)
        pow_json = _pow_json(index.pow.get(height))
        contract_json = _contract_json(index, height)
        return {
            "directoryblockheight": height,
            "directoryblockkeymr": keymr.hex(),
            "anchor_pow": pow_json,
            "anchor_contract": contract_json,
            "bitcoin": pow_json,
            "ethereum": contract_json,
        }


def _entry_reader(service: NodeService) -> Callable[[bytes], bytes | None]:
    def entry_raw(entry_hash: bytes) -> bytes | None:
        saved = service.saved_entry(entry_hash)
        return None if saved is None else saved.raw

    return entry_raw


def _resolve_height(service: NodeService, params: AnchorsParams) -> int:
    if params.hash is None:
        if params.height is None:
            raise InvalidParams("height or hash is required")
        return params.height
    height = _height_of(service, params.hash)
    if height is None:
        raise ObjectNotFound(ObjectNotFound.OBJECT)
    return height


def _height_of(service: NodeService, key: bytes) -> int | None:
    """Height of the saved directory block holding the block, entry, commit or tx ``key``."""
    read = service.store.read
    for kind in HEIGHT_KINDS:
        row = read.execute(
            f"SELECT height FROM {kind.table} WHERE {kind.primary}=:k OR {kind.secondary}=:k",
            {"k": key},
        ).fetchone()
        if row is not None:
            return int(row[0])
    height = service.entry_height(key)
    if height is not None:
        return height
    eblock = eblock_raw(read, key)
    if eblock is not None:
        return EntryBlock.unmarshal(eblock[0]).height
    commit = service.find_commit(key)
    if commit is not None and commit.height is not None:
        return commit.height
    tx = service.find_transaction(key)
    return tx[1] if tx is not None and tx[1] >= 0 else None


def _pow_json(record: AnchorRecord | None) -> dict[str, str] | bool:
    if record is None or record.pow is None:
        return False
    return {"transactionhash": record.pow.txid, "blockhash": record.pow.block_hash}


def _contract_json(index: AnchorIndex, height: int) -> dict[str, Any] | bool:
    record = index.window_for(height)
    if record is None or record.window is None or record.contract is None:
        return False
    w, ref = record.window, record.contract
    branch = merkle_branch(index.keymrs(w.height_min, w.height_max), height - w.height_min)
    return {
        "recordheight": record.record_height,
        "dbheightmax": w.height_max,
        "dbheightmin": w.height_min,
        "windowmr": w.window_mr.hex(),
        "merklebranch": [node.to_json() for node in branch],
        "contractaddress": ref.contract_address,
        "txid": ref.txid,
        "blockhash": ref.block_hash,
        "txindex": ref.tx_index,
    }
