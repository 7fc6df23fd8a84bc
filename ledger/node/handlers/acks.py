"""Ack results: ``ack`` (entry, commit ``c`` and coin ``f`` forms), ``entry-ack``, ``coin-ack``.

Shapes of docs/formats.md §9.3: ``*date`` fields in milliseconds with ``*datestring`` beside
them, except the commit form of ``ack`` whose ``transactiondate`` is in seconds (factomd's
quirk). Status values: ``DBlockConfirmed``, ``TransactionACK``, ``NotConfirmed``, ``Unknown``.
"""

from __future__ import annotations

from typing import Any

from ledger.core.commit import CommitChain, CommitEntry
from ledger.core.entry import Entry
from ledger.core.errors import LedgerFormatError
from ledger.core.transaction import Transaction
from ledger.jsonrpc.errors import InvalidParams
from ledger.node.handlers.timefmt import ms_fields
from ledger.node.service import NodeService


def _status(height: int | None) -> str:
    return "TransactionACK" if height is None else "DBlockConfirmed"


def entry_ack_json(service: NodeService, entry_hash: bytes) -> dict[str, Any]:
    """``ack`` / ``entry-ack`` result for a raw 32-byte entry hash."""
    status = service.entry_status(entry_hash)
    block_ms = service.block_time_ms(service.entry_height(entry_hash))
    commit = service.commit_for_entry(entry_hash)
    commit_data: dict[str, Any] = {"status": "Unknown"}
    commit_data.update(ms_fields("transaction", None))
    commit_data.update(ms_fields("block", None))
    if commit is not None:
        commit_data["status"] = _status(commit.height)
        commit_data.update(ms_fields("transaction", commit.received_ms))
        commit_data.update(ms_fields("block", service.block_time_ms(commit.height)))
    entry_data: dict[str, Any] = {"status": status}
    entry_data.update(ms_fields("block", block_ms))
    return {
        "committxid": "" if commit is None else commit.txid.hex(),
        "entryhash": entry_hash.hex(),
        "commitdata": commit_data,
        "entrydata": entry_data,
    }


def commit_ack_json(service: NodeService, txid: bytes) -> dict[str, Any]:
    """``ack`` with chainid ``c``: status of a commit by its txid (dates in seconds, as factomd)."""
    found = service.find_commit(txid)
    if found is None:
        return {
            "committxid": txid.hex(),
            "entryhash": "",
            "commitdata": {"status": "Unknown"},
            "entrydata": {"status": "Unknown"},
        }
    received_ms, height, entry_hash = found.received_ms, found.height, found.entry_hash
    commit_data: dict[str, Any] = {
        "status": _status(height),
        "transactiondate": received_ms // 1000,
        "transactiondatestring": ms_fields("", received_ms)["datestring"],
    }
    block_ms = service.block_time_ms(height)
    if block_ms is not None:
        commit_data["blockdate"] = block_ms // 1000
        commit_data["blockdatestring"] = ms_fields("", block_ms)["datestring"]
    return {
        "committxid": txid.hex(),
        "entryhash": entry_hash.hex(),
        "commitdata": commit_data,
        "entrydata": {"status": service.entry_status(entry_hash)},
    }


def coin_ack_json(service: NodeService, txid: bytes) -> dict[str, Any]:
    """``coin-ack`` / ``ack`` (chainid ``f``): txid, dates (ms), date strings, status."""
    found = service.find_transaction(txid)
    tx_ms = block_ms = None
    status = "Unknown"
    if found is not None:
        tx, height, _fkeymr, _dkeymr = found
        tx_ms = tx.timestamp_ms
        status = "TransactionACK" if height < 0 else "DBlockConfirmed"
        block_ms = None if height < 0 else service.block_time_ms(height)
    result: dict[str, Any] = {"txid": txid.hex()}
    result.update(ms_fields("transaction", tx_ms))
    result.update(ms_fields("block", block_ms))
    result["status"] = status
    return result


def txid_of_transaction(raw: bytes) -> bytes:
    """Txid of a marshalled coin transaction (``fulltransaction``). Raises InvalidParams."""
    try:
        return Transaction.unmarshal(raw).txid()
    except LedgerFormatError as exc:
        raise InvalidParams(f"Invalid Transaction: {exc}") from exc


def txid_of_commit(raw: bytes) -> bytes:
    """Txid of a marshalled commit (136 or 200 bytes). Raises InvalidParams."""
    try:
        return (CommitChain if len(raw) == 200 else CommitEntry).unmarshal(raw).txid()
    except LedgerFormatError as exc:
        raise InvalidParams(f"Invalid Commit: {exc}") from exc


def entry_hash_of(raw: bytes) -> bytes:
    """Entry hash named by ``fulltransaction``: a commit's entry hash or an entry's own hash.

    Raises:
        InvalidParams: neither a commit nor an entry.
    """
    if len(raw) in (136, 200):
        try:
            return (CommitChain if len(raw) == 200 else CommitEntry).unmarshal(raw).entry_hash
        except LedgerFormatError:
            pass
    try:
        return Entry.unmarshal(raw).hash()
    except LedgerFormatError as exc:
        raise InvalidParams(f"Invalid Entry: {exc}") from exc
