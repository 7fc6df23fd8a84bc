"""Transaction methods: transaction, coin-ack, pending-transactions, send-raw-message.

``send-raw-message`` takes a network message: one type byte then the payload
(docs/formats.md §2.6: CommitChain=5, CommitEntry=6, FactoidTransaction=9, RevealEntry=13).
"""

from __future__ import annotations

from typing import Any

from ledger.core.blocks.entry_credit import ec_object_to_json
from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.transaction import Transaction
from ledger.jsonrpc.errors import InvalidParams, ObjectNotFound
from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.handlers.acks import coin_ack_json, txid_of_transaction
from ledger.node.handlers.balances import parse_address
from ledger.node.handlers.errors import node_errors
from ledger.node.params import (
    HashParams,
    MessageParams,
    OptionalAddressParams,
    TxidParams,
)
from ledger.node.service import NodeService

MSG_COMMIT_CHAIN = 5
MSG_COMMIT_ENTRY = 6
MSG_COIN_TRANSACTION = 9
MSG_REVEAL_ENTRY = 13


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the transaction methods, bound to ``service``, to ``registry``."""

    @registry.method("transaction", params=HashParams, blocking=False)
    def transaction(params: HashParams) -> dict[str, Any]:
        return transaction_json(service, params.hash)

    @registry.method("coin-ack", params=TxidParams, aliases=("factoid-ack",), blocking=False)
    def coin_ack(params: TxidParams) -> dict[str, Any]:
        if params.txid is not None:
            return coin_ack_json(service, params.txid)
        if params.fulltransaction is not None:
            return coin_ack_json(service, txid_of_transaction(params.fulltransaction))
        raise InvalidParams("txid or fulltransaction is required")

    @registry.method("pending-transactions", params=OptionalAddressParams, blocking=False)
    def pending_transactions(params: OptionalAddressParams | None = None) -> list[dict[str, Any]]:
        wanted = None
        if params is not None and params.address:
            wanted = parse_address(params.address, kind="fct")
        return service.pending_transactions(wanted)

    @registry.method("send-raw-message", params=MessageParams, blocking=False)
    async def send_raw_message(params: MessageParams) -> dict[str, Any]:
        await _dispatch_raw(service, params.message)
        return {"message": "Successfully sent the message"}


async def _dispatch_raw(service: NodeService, message: bytes) -> None:
    """Apply one network message: type byte, then the payload (docs/formats.md §2.6)."""
    if not message:
        raise InvalidParams("Invalid data passed: empty message")
    kind, payload = message[0], message[1:]
    with node_errors():
        if kind == MSG_COMMIT_CHAIN:
            commit = _parse(CommitChain.unmarshal, payload[:200], "Invalid Commit Chain")
            await service.submit_commit(commit)
        elif kind == MSG_COMMIT_ENTRY:
            commit = _parse(CommitEntry.unmarshal, payload[:136], "Invalid Commit Entry")
            await service.submit_commit(commit)
        elif kind == MSG_COIN_TRANSACTION:
            tx = _parse(Transaction.unmarshal, payload, "Invalid Transaction")
            await service.submit_transaction(tx)
        elif kind == MSG_REVEAL_ENTRY:
            raw = payload[6:]
            _parse(Entry.unmarshal, raw, "Invalid Entry")
            await service.submit_reveal(raw)
        else:
            raise InvalidParams(f"Invalid data passed: unsupported message type {kind}")


def _parse(parse: Any, raw: bytes, what: str) -> Any:
    try:
        return parse(raw)
    except LedgerFormatError as exc:
        raise InvalidParams(f"{what}: {exc}") from exc


def transaction_json(service: NodeService, key: bytes) -> dict[str, Any]:
    """``transaction`` result for a coin transaction (txid or full hash), a commit (txid) or
    an entry hash; ``includedindirectoryblockheight`` is -1 while pending.

    Raises:
        ObjectNotFound: nothing known under ``key``.
    """
    found = service.find_transaction(key)
    if found is not None:
        tx, height, fblock_keymr, dblock_keymr = found
        body = tx.to_json(block_height=0)
        return {
            "cointransaction": body,
            "factoidtransaction": body,
            **_included(fblock_keymr, dblock_keymr, height),
        }
    commit = _commit_json(service, key)
    if commit is not None:
        return commit
    located = service.find_entry(key)
    if located is None:
        raise ObjectNotFound(ObjectNotFound.OBJECT)
    entry, height, eblock_keymr, dblock_keymr = located
    return {
        "entry": {"version": 0, **entry.to_json()},
        **_included(eblock_keymr, dblock_keymr, height),
    }


def _included(block_key: bytes | None, dblock_keymr: bytes | None, height: int) -> dict[str, Any]:
    return {
        "includedintransactionblock": block_key.hex() if block_key else "",
        "includedindirectoryblock": dblock_keymr.hex() if dblock_keymr else "",
        "includedindirectoryblockheight": height,
    }


def _commit_json(service: NodeService, txid: bytes) -> dict[str, Any] | None:
    found = service.find_commit(txid)
    if found is None:
        return None
    raw, height = found.raw, found.height
    commit = (CommitChain if len(raw) == 200 else CommitEntry).unmarshal(raw)
    keys = service.ec_block_keys(height)
    return {
        "ectransaction": ec_object_to_json(commit),
        **_included(
            keys[0] if keys else None, keys[1] if keys else None, -1 if height is None else height
        ),
    }
