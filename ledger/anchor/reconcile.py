"""The anchor records the node already holds, read back once per start of the service.

The service's store can be older than the node's: ``notary backup`` copies the anchoring
service's record before the node's (``Stack.stores``), so the node of a restored stack can
hold records written between the two copies that the service's state still lists as
unrecorded. Writing them again would pay for a second record of the same anchor: an
identical entry while the record height is unchanged, else a second record of the block.
So before its first record the service reads back its own records (``records_on_node``)
and marks those blocks and windows recorded.

What is read, per anchor chain: the entries of ``pending-entries`` that the node has
recorded (``TransactionACK``; a reveal held for its commit is not a record yet), and the
saved entry blocks from the chain head back, newest first, until a block whose records
are all below the lowest height still unrecorded (records are written in height order).
Only entries signed by the service's own key (ExtID[0], ``parse_signed_record``) count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ledger.core.anchor_record import AnchorRecord, parse_signed_record
from ledger.core.entry import Entry
from ledger.core.errors import LedgerFormatError
from ledger.jsonrpc.client import AsyncJsonRpcClient
from ledger.jsonrpc.codes import ErrorCode
from ledger.jsonrpc.errors import JsonRpcCallError

__all__ = ["FoundRecord", "records_on_node"]

_NO_BLOCK = "00" * 32


@dataclass(frozen=True)
class FoundRecord:
    """One record of the service on the node: its entry hash (raw 32 bytes) and content."""

    entry_hash: bytes
    record: AnchorRecord


async def records_on_node(
    node: AsyncJsonRpcClient, chain_id: bytes, *, public_key: bytes, lowest_height: int
) -> list[FoundRecord]:
    """The records in ``chain_id`` signed by ``public_key`` (raw 32 bytes) that the node
    holds, pending ones first, then saved ones newest first, down to the first entry block
    whose records are all for directory block heights below ``lowest_height``.

    Raises:
        JsonRpcCallError: the node refused a read (other than a chain it does not have).
        JsonRpcTransportError: the node was unreachable.
    """
    pending = await node.call("pending-entries", {"chainid": chain_id.hex()})
    recorded = [
        bytes.fromhex(item["entryhash"]) for item in pending if item["status"] == "TransactionACK"
    ]
    found = await _read(node, recorded, public_key)
    try:
        head = await node.call("chain-head", {"chainid": chain_id.hex()})
    except JsonRpcCallError as exc:
        if exc.code == ErrorCode.MISSING_CHAIN_HEAD:
            return found
        raise
    keymr = head["chainhead"]
    while keymr and keymr != _NO_BLOCK:
        eblock = await node.call("entry-block", {"keymr": keymr})
        hashes = [bytes.fromhex(item["entryhash"]) for item in eblock["entrylist"]]
        records = await _read(node, hashes, public_key)
        found.extend(records)
        if records and all(r.record.db_height < lowest_height for r in records):
            break
        keymr = eblock["header"]["prevkeymr"]
    return found


async def _read(
    node: AsyncJsonRpcClient, hashes: Sequence[bytes], public_key: bytes
) -> list[FoundRecord]:
    """The entries of ``hashes`` (one ``raw-data`` batch) that are records signed by
    ``public_key``; others (the chain's first entry, foreign records) are skipped."""
    replies = await node.batch([("raw-data", {"hash": h.hex()}) for h in hashes])
    found: list[FoundRecord] = []
    for entry_hash, reply in zip(hashes, replies, strict=True):
        if isinstance(reply, JsonRpcCallError):
            continue  # gone from the process list into a block between the two reads
        try:
            entry = Entry.unmarshal(bytes.fromhex(reply["data"]))
            found.append(FoundRecord(entry_hash, parse_signed_record(entry, [public_key])))
        except LedgerFormatError:
            continue
    return found
