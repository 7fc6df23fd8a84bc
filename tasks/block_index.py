"""Receipts built from the blocks themselves: one ``raw-data`` per entry block, not one
node ``receipt`` per entry (plain functions and classes; no Prefect).

A node ``receipt`` is ~8 KB of JSON per entry that the node builds and encodes and the
pipeline decodes, parses and hashes again (~17 nodes). Every entry of one entry block
shares the same trees, so a sweep reads each entry block once instead and builds its
entries' receipts locally (``ledger.core.block_receipts``, the code the node's ``receipt``
method runs, so the receipts are the same objects, byte for byte).

Trust is the same as a verified node receipt's: the directory block is the one the node
serves at its height, parsed exactly and hashed here (``TrustedDirectoryBlock``); an entry
block is used only if its bytes hash (header and whole body tree) to the KeyMR that
directory block lists under the entry block's own chain ID. A receipt built from those
checked bytes proves its entry up to the trusted KeyMR by construction; a block that fails
a check is not used, and its entries fall back to node receipts, which are verified one by
one (and rejected when they do not hold).

Which blocks to read: the index learns the chains and the first height from node receipts
(``learn``), then reads blocks forward from there (``receipts``), as far as the entries
asked for need and at most to the node's newest block.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from connectors.errors import RpcError
from connectors.node import NOT_FOUND_CODES, NodeClient
from ledger.core.block_receipts import BlockReceipts
from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.errors import LedgerFormatError
from ledger.core.proof.steps import Step
from tasks.verify import ReceiptRejected, TrustedDirectoryBlock

__all__ = ["BlockIndex"]

Receipt = dict[str, Any]


class BlockIndex:
    """The directory and entry blocks one sweep has read, and receipts built from them.

    Not thread safe: used by one thread at a time (a sweep's fetching thread; the sweeps
    of one ``follow_ledger`` call, one after the other, share one index).

    Args:
        node: the node client.
        max_blocks: entry blocks kept (most recently read first); ~1 MB each at 2,000
            entries. Entries of a block dropped are asked as node receipts again.
        max_directory_blocks: parsed directory blocks kept (a few hundred bytes each
            beyond their entry blocks' pairs); the lowest heights go first.

    Raises:
        ValueError: a limit below 1.
    """

    def __init__(
        self, node: NodeClient, *, max_blocks: int = 8, max_directory_blocks: int = 256
    ) -> None:
        if max_blocks < 1 or max_directory_blocks < 1:
            raise ValueError(f"limits must be >= 1, got {max_blocks}, {max_directory_blocks}")
        self._node = node
        self._max_blocks = max_blocks
        self._max_dblocks = max_directory_blocks
        self._dblocks: dict[int, DirectoryBlock | str | None] = {}
        self._eblocks: OrderedDict[bytes, tuple[EntryBlock, BlockReceipts] | None] = OrderedDict()
        self._chains: set[bytes] = set()
        self._next_height: int | None = None  # the next directory block to read forward
        self._missing: int | None = None  # a height the node had no block at

    def trusted(self, height: int) -> TrustedDirectoryBlock | str | None:
        """The directory block the node serves at ``height``, parsed and hashed once, why
        it cannot be trusted (a ``ReceiptRejected`` message of ``Step.DIRECTORY_BLOCK``), or
        ``None`` when the node serves none there (yet).

        Raises:
            ConnectorError: the node could not be reached.
        """
        dblock = self._dblock(height)
        if dblock is None or isinstance(dblock, str):
            return dblock
        return TrustedDirectoryBlock(height=dblock.height, key_mr=dblock.key_mr())

    def learn(self, receipt: Mapping[str, Any]) -> None:
        """Note the chain and height of a node receipt: later ``receipts`` calls read that
        chain's entry blocks from that height on. A receipt that does not name a block of
        a trusted directory block teaches nothing (its verification rejects it).

        Raises:
            ConnectorError: the node could not be reached.
        """
        try:
            height = int(receipt["directoryblockheight"])
            keymr = bytes.fromhex(receipt["entryblockkeymr"])
        except (KeyError, TypeError, ValueError):
            return
        dblock = self._dblock(height)
        if not isinstance(dblock, DirectoryBlock):
            return
        chain = next((e.chain_id for e in dblock.entries if e.key_mr == keymr), None)
        if chain is None:
            return
        if chain not in self._chains:
            self._chains.add(chain)
            # the heights read so far skipped this chain's blocks: read them again
            if self._next_height is not None:
                self._next_height = min(self._next_height, height)
        if self._next_height is None:
            self._next_height = height

    def follow(self, chain_id: bytes, height: int) -> None:
        """Read ``chain_id``'s entry blocks from directory block ``height`` on (as ``learn``
        does from a node receipt), for a caller who knows the chain already: a run that
        publishes to it and wants its entries' receipts without asking the node first.

        Raises:
            ValueError: ``chain_id`` is not 32 bytes, or ``height`` is negative.
        """
        if len(chain_id) != 32 or height < 0:
            raise ValueError(f"a 32-byte chain ID and a height >= 0, got {chain_id!r}, {height}")
        self._chains.add(chain_id)
        if self._next_height is None or height < self._next_height:
            self._next_height = height

    def receipts(self, entry_hashes: Iterable[str]) -> dict[str, Receipt]:
        """Receipts (``Receipt.to_json`` shape) of those ``entry_hashes`` (hex) found in the
        entry blocks read, reading further blocks while some are missing.

        Returns:
            entry hash (as given) -> receipt; hashes in no block read are left out.

        Raises:
            ConnectorError: the node could not be reached.
        """
        wanted = {bytes.fromhex(h): h for h in entry_hashes}
        found: dict[str, Receipt] = {}
        self._collect(wanted, found)
        while wanted and self._next_height is not None and self._next_height != self._missing:
            dblock = self._dblock(self._next_height)
            if dblock is None:  # beyond the newest block: not asked again by this index
                self._missing = self._next_height
                break
            self._next_height += 1
            if isinstance(dblock, DirectoryBlock):
                for listed in dblock.entries:
                    if listed.chain_id in self._chains:
                        self._read_eblock(listed.chain_id, listed.key_mr, dblock)
                self._collect(wanted, found)
        return found

    def _collect(self, wanted: dict[bytes, str], found: dict[str, Receipt]) -> None:
        """Move the ``wanted`` entries found in the blocks kept into ``found``."""
        for kept in self._eblocks.values():
            if kept is None or not wanted:
                continue
            eblock, blocks = kept
            for entry_hash in [h for h in wanted if eblock.entry_position(h) is not None]:
                found[wanted.pop(entry_hash)] = blocks.receipt_json(entry_hash)

    def _read_eblock(self, chain_id: bytes, keymr: bytes, dblock: DirectoryBlock) -> None:
        """Read, check and keep the entry block ``keymr`` that ``dblock`` lists for
        ``chain_id``; a block that fails a check is kept as ``None`` (not used)."""
        if keymr in self._eblocks:
            self._eblocks.move_to_end(keymr, last=False)
            return
        raw = self._node.raw_data(keymr.hex())
        checked: tuple[EntryBlock, BlockReceipts] | None = None
        try:
            eblock = EntryBlock.unmarshal(raw) if raw is not None else None
            if eblock is not None and eblock.chain_id == chain_id and eblock.key_mr() == keymr:
                checked = (eblock, BlockReceipts(eblock, dblock))
        except LedgerFormatError:  # also NotInBlockError: listed, so not expected
            checked = None
        self._eblocks[keymr] = checked
        self._eblocks.move_to_end(keymr, last=False)
        while len(self._eblocks) > self._max_blocks:
            self._eblocks.popitem(last=True)

    def _dblock(self, height: int) -> DirectoryBlock | str | None:
        """The parsed directory block at ``height``, why it cannot be trusted, or ``None``
        when the node has none there yet (asked again next time)."""
        if height in self._dblocks:
            return self._dblocks[height]
        try:
            rawdata = self._node.dblock_by_height(height).get("rawdata")
        except RpcError as exc:
            if exc.code in NOT_FOUND_CODES:
                return None
            raise
        parsed: DirectoryBlock | str
        try:
            raw = bytes.fromhex(rawdata) if isinstance(rawdata, str) else None
        except ValueError:
            raw = None
        if raw is None:
            why = f"directory block {height} has no valid rawdata"
            parsed = str(ReceiptRejected(why, step=Step.DIRECTORY_BLOCK))
        else:
            try:
                parsed = DirectoryBlock.unmarshal(raw)
            except LedgerFormatError as exc:
                parsed = str(
                    ReceiptRejected(
                        f"directory block does not parse: {exc}", step=Step.DIRECTORY_BLOCK
                    )
                )
        self._dblocks[height] = parsed
        if len(self._dblocks) > self._max_dblocks:
            del self._dblocks[min(self._dblocks)]
        return parsed

    def forget_missing(self) -> None:
        """Forget that the node had no directory block at some height: it may have one now
        (a new sweep starts)."""
        self._missing = None
