"""Entry methods: entry, chain-head, receipt, ack, entry-ack, pending-entries, raw-data (entries).

Shapes follow the spec's node methods table and factom-formats 9.3; receipts section 6.
"""

from __future__ import annotations

from typing import Any

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry
from ledger.core.receipt import build_receipt
from ledger.jsonrpc import MethodRegistry
from ledger.jsonrpc.errors import InvalidParams, MissingChainHead, NotFound, ReceiptError
from ledger.node.handlers.timefmt import ms_fields
from ledger.node.params import (
    AckParams,
    ChainIdParams,
    HashParams,
    OptionalChainParams,
    ReceiptParams,
    TxidParams,
)
from ledger.node.service import NodeService


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the entry methods, bound to ``service``, to ``registry``."""
    read = service.store.read

    @registry.method("entry", params=HashParams, blocking=False)
    def entry(params: HashParams) -> dict[str, Any]:
        row = read.execute("SELECT raw FROM entries WHERE entry_hash=?", (params.hash,)).fetchone()
        if row is None:
            raise NotFound(NotFound.ENTRY)
        return Entry.unmarshal(bytes(row[0])).to_json()

    @registry.method("chain-head", params=ChainIdParams, blocking=False)
    def chain_head(params: ChainIdParams) -> dict[str, Any]:
        row = read.execute(
            "SELECT head_keymr FROM chains WHERE chain_id=?", (params.chainid,)
        ).fetchone()
        in_process = service.process_list.chain_in_process(params.chainid)
        if row is None and not in_process:
            raise MissingChainHead()
        head = "" if row is None else bytes(row[0]).hex()
        return {"chainhead": head, "chaininprocesslist": in_process}

    @registry.method("receipt", params=ReceiptParams, blocking=False)
    def receipt(params: ReceiptParams) -> dict[str, Any]:
        return {"receipt": receipt_json(service, params.hash, include_raw=params.includerawentry)}

    @registry.method("pending-entries", params=OptionalChainParams, blocking=False)
    def pending_entries(params: OptionalChainParams | None = None) -> list[dict[str, Any]]:
        wanted = None if params is None else params.chainid
        return [
            item
            for item in service.pending_entries()
            if wanted is None or item["chainid"] == wanted.hex()
        ]

    @registry.method("ack", params=AckParams, blocking=False)
    def ack(params: AckParams) -> dict[str, Any]:
        if params.chainid == "f":
            return service.coin_ack(_ack_hash(params, coin=True))
        if params.chainid == "c":
            return service.commit_ack(_ack_hash(params, coin=False))
        return entry_ack_json(service, _ack_hash(params, coin=False))

    @registry.method("entry-ack", params=TxidParams, blocking=False)
    def entry_ack(params: TxidParams) -> dict[str, Any]:
        if params.txid is None:
            raise InvalidParams("txid is required")
        return entry_ack_json(service, params.txid)


def _ack_hash(params: AckParams, *, coin: bool) -> bytes:
    if params.hash is not None:
        return params.hash
    if params.fulltransaction is not None:
        from ledger.core.hashing import entry_hash, sha256

        raw = params.fulltransaction
        if coin:
            from ledger.core.transaction import Transaction

            return Transaction.unmarshal(raw).txid()
        return sha256(raw) if len(raw) in (136, 200) else entry_hash(raw)
    raise InvalidParams("hash or fulltransaction is required")


def receipt_json(service: NodeService, entry_hash: bytes, *, include_raw: bool) -> dict[str, Any]:
    """The ``receipt`` object for an entry recorded in a saved block (section 6).

    Raises:
        ReceiptError: the entry is not in any saved directory block.
    """
    read = service.store.read
    row = read.execute(
        "SELECT e.eblock_keymr, e.height, e.raw, b.raw, d.raw FROM entries e"
        " JOIN eblocks b ON b.keymr = e.eblock_keymr JOIN dblocks d ON d.height = e.height"
        " WHERE e.entry_hash=?",
        (entry_hash,),
    ).fetchone()
    if row is None:
        raise ReceiptError("entry is not in a directory block yet")
    eblock = EntryBlock.unmarshal(bytes(row[3]))
    dblock = DirectoryBlock.unmarshal(bytes(row[4]))
    result = build_receipt(entry_hash, eblock, dblock)
    data = result.to_json()
    if include_raw:
        data["entry"]["raw"] = bytes(row[2]).hex()
    return data


def entry_ack_json(service: NodeService, entry_hash: bytes) -> dict[str, Any]:
    """``ack`` / ``entry-ack`` result for an entry hash (status DBlockConfirmed ... Unknown)."""
    status = service.entry_status(entry_hash)
    commit_txid, commit_ms = service.commit_for_entry(entry_hash)
    block_ms = service.entry_block_time_ms(entry_hash)
    commit_data: dict[str, Any] = {"status": status if commit_txid else "Unknown"}
    commit_data.update(ms_fields("transaction", commit_ms))
    commit_data.update(ms_fields("block", block_ms))
    entry_data: dict[str, Any] = {"status": status}
    entry_data.update(ms_fields("block", block_ms))
    return {
        "committxid": commit_txid.hex() if commit_txid else "",
        "entryhash": entry_hash.hex(),
        "commitdata": commit_data,
        "entrydata": entry_data,
    }
