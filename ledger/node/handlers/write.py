"""Write methods: commit-chain, commit-entry, reveal-chain, reveal-entry, coin-submit.

Results follow factom-formats 9.3; each reply is sent only after the message is journaled.
"""

from __future__ import annotations

from typing import Any

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.errors import LedgerFormatError, LimitError
from ledger.core.transaction import Transaction
from ledger.jsonrpc import MethodRegistry
from ledger.jsonrpc.errors import InvalidParams
from ledger.node.handlers.errors import node_errors
from ledger.node.params import EntryParams, MessageParams, TransactionParams
from ledger.node.service import NodeService


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the write methods, bound to ``service``, to ``registry``."""

    @registry.method("commit-chain", params=MessageParams, blocking=False)
    async def commit_chain(params: MessageParams) -> dict[str, Any]:
        commit = _decode(CommitChain.unmarshal, params.message, "Invalid Commit Chain")
        with node_errors():
            await service.submit_commit(commit)
        return {
            "message": "Chain Commit Success",
            "txid": commit.txid().hex(),
            "entryhash": commit.entry_hash.hex(),
            "chainidhash": commit.chain_id_hash.hex(),
        }

    @registry.method("commit-entry", params=MessageParams, blocking=False)
    async def commit_entry(params: MessageParams) -> dict[str, Any]:
        commit = _decode(CommitEntry.unmarshal, params.message, "Invalid Commit Entry")
        with node_errors():
            await service.submit_commit(commit)
        return {
            "message": "Entry Commit Success",
            "txid": commit.txid().hex(),
            "entryhash": commit.entry_hash.hex(),
        }

    async def reveal(params: EntryParams) -> dict[str, Any]:
        with node_errors():
            try:
                result = await service.submit_reveal(params.entry)
            except LimitError as exc:
                raise InvalidParams(f"Invalid Entry: {exc}") from exc
            except LedgerFormatError as exc:
                raise InvalidParams(f"Invalid Entry: {exc}") from exc
        return {
            "message": "Entry Reveal Success",
            "entryhash": result.entry_hash.hex(),
            "chainid": result.chain_id.hex(),
        }

    registry.add("reveal-entry", reveal, params=EntryParams, blocking=False)
    registry.add("reveal-chain", reveal, params=EntryParams, blocking=False)

    @registry.method(
        "coin-submit", params=TransactionParams, aliases=("factoid-submit",), blocking=False
    )
    async def coin_submit(params: TransactionParams) -> dict[str, Any]:
        tx = _decode(Transaction.unmarshal, params.transaction, "Invalid Transaction")
        with node_errors():
            await service.submit_transaction(tx)
        return {"message": "Successfully submitted the transaction", "txid": tx.txid().hex()}


def _decode(parse: Any, raw: bytes, what: str) -> Any:
    try:
        return parse(raw)
    except LedgerFormatError as exc:
        raise InvalidParams(f"{what}: {exc}") from exc
