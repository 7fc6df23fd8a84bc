"""Write methods: commit-chain, commit-entry, reveal-chain, reveal-entry, coin-submit.

Results follow docs/formats.md §9.3; each reply is sent only after the message is journaled.
Every handler awaits only the node's own futures (signature checks, journal writes), so
they are registered ``stepped``: a batch of them runs without a task per item.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.errors import LedgerFormatError
from ledger.core.hashing import sha256d
from ledger.core.transaction import Transaction
from ledger.jsonrpc.errors import InvalidParams
from ledger.jsonrpc.registry import MethodRegistry
from ledger.node.errors import NodeError
from ledger.node.handlers.errors import NODE_FAILURES, node_errors, rpc_error
from ledger.node.params import CommitChainParams, EntryParams, MessageParams, TransactionParams
from ledger.node.service import NodeService
from ledger.node.store import StoreError


def register(registry: MethodRegistry, service: NodeService) -> None:
    """Add the write methods, bound to ``service``, to ``registry``."""

    @registry.method("commit-chain", params=CommitChainParams, blocking=False, stepped=True)
    async def commit_chain(params: CommitChainParams) -> dict[str, Any]:
        commit = _commit(service, CommitChain, params.message, "Invalid Commit Chain")
        if params.chainid is not None and sha256d(params.chainid) != commit.chain_id_hash:
            raise InvalidParams("Invalid Commit Chain: chainid does not match the commit")
        try:
            txid = await service.submit_commit(commit)
        except NODE_FAILURES as exc:
            _raise_rendered(exc)
        chain_id = params.chainid or service.chain_of_entry(commit.entry_hash)
        return {
            "message": "Chain Commit Success",
            "txid": txid.hex(),
            "entryhash": commit.entry_hash.hex(),
            "chainidhash": commit.chain_id_hash.hex(),
            # The commit alone names only the chain ID's hash: null unless the caller sent
            # the chain ID or the node has already seen the first entry's reveal.
            "chainid": None if chain_id is None else chain_id.hex(),
        }

    @registry.method("commit-entry", params=MessageParams, blocking=False, stepped=True)
    async def commit_entry(params: MessageParams) -> dict[str, Any]:
        commit = _commit(service, CommitEntry, params.message, "Invalid Commit Entry")
        try:
            txid = await service.submit_commit(commit)
        except NODE_FAILURES as exc:
            _raise_rendered(exc)
        return {
            "message": "Entry Commit Success",
            "txid": txid.hex(),
            "entryhash": commit.entry_hash.hex(),
        }

    async def reveal(params: EntryParams) -> dict[str, Any]:
        try:
            result = await service.submit_reveal(params.entry)
        except LedgerFormatError as exc:
            raise InvalidParams(f"Invalid Entry: {exc}") from exc
        except NODE_FAILURES as exc:
            _raise_rendered(exc)
        return {
            "message": "Entry Reveal Success",
            "entryhash": result.entry_hash.hex(),
            "chainid": result.chain_id.hex(),
        }

    registry.add("reveal-entry", reveal, params=EntryParams, blocking=False, stepped=True)
    registry.add("reveal-chain", reveal, params=EntryParams, blocking=False, stepped=True)

    @registry.method(
        "coin-submit",
        params=TransactionParams,
        aliases=("factoid-submit",),
        blocking=False,
        stepped=True,
    )
    async def coin_submit(params: TransactionParams) -> dict[str, Any]:
        tx = _decode(Transaction.unmarshal, params.transaction, "Invalid Transaction")
        with node_errors():
            txid = await service.submit_transaction(tx)
        return {"message": "Successfully submitted the transaction", "txid": txid.hex()}


def _raise_rendered(exc: NodeError | StoreError) -> NoReturn:
    """Raise the JSON-RPC error of a node failure (``rpc_error``), or ``exc`` itself."""
    error = rpc_error(exc)
    if error is None:
        raise exc
    raise error from exc


def _decode(parse: Any, raw: bytes, what: str) -> Any:
    try:
        return parse(raw)
    except LedgerFormatError as exc:
        raise InvalidParams(f"{what}: {exc}") from exc


CommitT = TypeVar("CommitT", CommitEntry, CommitChain)


def _commit(service: NodeService, cls: type[CommitT], message: bytes, what: str) -> CommitT:
    """The commit in ``message``: parsed by the batch pre-check already, or parsed now."""
    cached = service.signatures.parsed(message)
    if isinstance(cached, cls):
        return cached
    return _decode(cls.unmarshal, message, what)
