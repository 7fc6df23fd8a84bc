"""Entry methods: entry, chain-head, receipt, ack, entry-ack, pending-entries, raw-data (entries).

Shapes follow the node methods table of docs/jsonrpc.md §4 and docs/formats.md §9.3;
receipts section 6.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.entry import Entry
from ledger.core.receipt import build_receipt
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

    # Receipts of one block's entries share its Merkle trees: keep the parsed blocks (whose
    # trees are built once) for the most recently asked blocks.
    parse_eblock = functools.lru_cache(maxsize=64)(EntryBlock.unmarshal)
    parse_dblock = functools.lru_cache(maxsize=16)(DirectoryBlock.unmarshal)

    @registry.method("receipt", params=ReceiptParams, blocking=False)
    def receipt(params: ReceiptParams) -> dict[str, Any]:
        data = receipt_json(
            service,
            params.hash,
            include_raw=params.includerawentry,
            parsers=(parse_eblock, parse_dblock),
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
    parsers: tuple[Callable[[bytes], EntryBlock], Callable[[bytes], DirectoryBlock]] = (
        EntryBlock.unmarshal,
        DirectoryBlock.unmarshal,
    ),
) -> dict[str, Any]:
    """The ``receipt`` object for an entry recorded in a saved block (section 6).

    ``parsers`` turn stored block bytes into blocks (callers pass caching ones).

    Raises:
        ReceiptCreationError: the entry is not in any saved directory block.
    """
    saved = service.saved_entry(entry_hash)
    row = None
    if saved is not None:
        row = service.store.read.execute(
            "SELECT b.raw, d.raw FROM eblocks b JOIN dblocks d ON d.height = b.height"
            " WHERE b.chain_id=? AND b.height=?",
            (saved.chain_id, saved.height),
        ).fetchone()
    if saved is None or row is None:
        raise ReceiptCreationError("entry is not in a directory block yet")
    eblock = parsers[0](bytes(row[0]))
    dblock = parsers[1](bytes(row[1]))
    data = build_receipt(entry_hash, eblock, dblock).to_json()
    if include_raw:
        data["entry"]["raw"] = saved.raw.hex()
    return data
