"""Entry methods: entry, chain-head, receipt, ack, entry-ack, pending-entries, raw-data (entries).

Shapes follow the node methods table of docs/jsonrpc.md §4 and docs/formats.md §9.3;
receipts section 6.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ledger.core.block_receipts import BlockReceipts
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry
from ledger.jsonrpc.errors import (
    InvalidParams,
    MissingChainHead,
    ObjectNotFound,
    ReceiptCreationError,
)
from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.handlers.acks import (
    coin_ack_json,
    commit_ack_json,
    entry_ack_json,
    entry_hash_of,
    txid_of_commit,
    txid_of_transaction,
)
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
        saved = service.saved_entry(params.hash)
        if saved is None:
            raise ObjectNotFound(ObjectNotFound.ENTRY)
        return Entry.unmarshal(saved.raw).to_json()

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

    # Receipts of one block's entries share its Merkle trees and branch tail: keep them
    # (built once) for the most recently asked blocks.
    blocks = block_receipts_cache(service)

    @registry.method("receipt", params=ReceiptParams, blocking=False)
    def receipt(params: ReceiptParams) -> dict[str, Any]:
        data = receipt_json(
            service,
            params.hash,
            include_raw=params.includerawentry,
            blocks=blocks,
        )
        return {"receipt": data}

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
            txid = params.hash or txid_of_transaction(_required(params.fulltransaction))
            return coin_ack_json(service, txid)
        if params.chainid == "c":
            txid = params.hash or txid_of_commit(_required(params.fulltransaction))
            return commit_ack_json(service, txid)
        return entry_ack_json(
            service, params.hash or entry_hash_of(_required(params.fulltransaction))
        )

    @registry.method("entry-ack", params=TxidParams, blocking=False)
    def entry_ack(params: TxidParams) -> dict[str, Any]:
        entry_hash = params.txid or entry_hash_of(_required(params.fulltransaction, "txid"))
        return entry_ack_json(service, entry_hash)


def _required(value: bytes | None, name: str = "hash") -> bytes:
    if value is None:
        raise InvalidParams(f"{name} or fulltransaction is required")
    return value


def receipt_json(
    service: NodeService,
    entry_hash: bytes,
    *,
    include_raw: bool,
    blocks: Callable[[bytes, int], BlockReceipts] | None = None,
) -> dict[str, Any]:
    """The ``receipt`` object for an entry recorded in a saved block (section 6).

    ``blocks`` gives the ``BlockReceipts`` of the entry block of (chain ID, directory block
    height) (callers pass a caching one, ``block_receipts_cache``; default: read and parse
    the blocks for this call).

    Raises:
        ReceiptCreationError: the entry is not in any saved directory block.
    """
    saved = service.saved_entry(entry_hash)
    if saved is None:
        raise ReceiptCreationError("entry is not in a directory block yet")
    receipts = (blocks or functools.partial(_block_receipts, service))(saved.chain_id, saved.height)
    data = receipts.receipt_json(entry_hash)
    if include_raw:
        data["entry"]["raw"] = saved.raw.hex()
    return data


def block_receipts_cache(
    service: NodeService, *, maxsize: int = 32
) -> Callable[[bytes, int], BlockReceipts]:
    """``_block_receipts`` remembering the ``maxsize`` most recently asked entry blocks.

    A saved block never changes, so (chain ID, height) names it for the node's lifetime.
    Each holds its tree in hex (~230 KB for 1,000 entries); a block not saved yet raises
    (an exception is not remembered).
    """
    return functools.lru_cache(maxsize=maxsize)(functools.partial(_block_receipts, service))


def _block_receipts(service: NodeService, chain_id: bytes, height: int) -> BlockReceipts:
    """Read and parse the entry block of ``chain_id`` at ``height`` and its directory block.

    Raises:
        ReceiptCreationError: no such saved entry block with its directory block.
    """
    row = service.store.read.execute(
        "SELECT b.raw, d.raw FROM eblocks b JOIN dblocks d ON d.height = b.height"
        " WHERE b.chain_id=? AND b.height=?",
        (chain_id, height),
    ).fetchone()
    if row is None:
        raise ReceiptCreationError("entry is not in a directory block yet")
    return BlockReceipts(
        EntryBlock.unmarshal(bytes(row[0])), DirectoryBlock.unmarshal(bytes(row[1]))
    )
