"""Receipts of many entries of one entry block, sharing the work (docs/formats.md §6).

``build_receipt(...).to_json()`` builds one receipt: its branch as ``MerkleNode`` objects,
then each node's three hashes turned into hex. A receipt sweep asks for the receipt of
every entry of a block (1,000+ entries per entry block in a 2 s block at load), and per
entry that rebuilt the same upper nodes (entry block header node, directory block branch)
and hexed the same tree hashes again: ~17 nodes x 3 conversions per receipt.

``BlockReceipts`` does that once per (entry block, directory block): the body tree's levels
as hex, the shared tail of every branch (entry block node, directory branch, directory
block node) as JSON. ``receipt_json`` then only picks one node per level. Its output is
exactly ``build_receipt(entry_hash, entry_block, directory_block).to_json()`` (the tests
check every entry of a block), including the errors.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ledger.core.blocks.directory import DirectoryBlock
from ledger.core.blocks.entry_block import EntryBlock
from ledger.core.errors import NotInBlockError
from ledger.core.merkle import MerkleNode
from ledger.core.receipt import directory_branch

__all__ = ["BlockReceipts"]


class BlockReceipts:
    """The ``receipt`` objects (``Receipt.to_json`` shape) of one entry block's entries.

    Args:
        entry_block: the block holding the entries.
        directory_block: the directory block listing ``entry_block``.

    Raises:
        NotInBlockError: ``entry_block`` (chain ID + KeyMR) is not listed in
            ``directory_block`` (as ``build_receipt`` raises it).
    """

    def __init__(self, entry_block: EntryBlock, directory_block: DirectoryBlock) -> None:
        self._eblock = entry_block
        self._dblock_timestamp_s = directory_block.timestamp_s
        keymr = entry_block.key_mr()
        tail = [MerkleNode(entry_block.header_hash(), entry_block.body_mr(), keymr)]
        tail += directory_branch(entry_block.chain_id, keymr, directory_block)
        self._tail = [node.to_json() for node in tail]
        self._keymr_hex = keymr.hex()
        self._dblock_keymr_hex = directory_block.key_mr().hex()
        self._height = directory_block.height

    @cached_property
    def _levels_hex(self) -> list[list[str]]:
        """The body tree's levels (items first, root last) in hex, made once."""
        return [[node.hex() for node in level] for level in self._eblock.merkle_levels]

    def receipt_json(self, entry_hash: bytes) -> dict[str, Any]:
        """The receipt of ``entry_hash`` (raw 32 bytes), as ``Receipt.to_json`` (no raw entry).

        The receipt and its ``entry`` object are new on every call (the node adds ``raw``
        to the latter); the branch's node objects are shared between calls: read-only.

        Raises:
            NotInBlockError: the entry is not in the entry block.
        """
        entry_hash = bytes(entry_hash)
        position = self._eblock.entry_position(entry_hash)
        if position is None:
            raise NotInBlockError(
                "entry is not in the entry block",
                item=entry_hash,
                block_key_mr=self._eblock.key_mr(),
            )
        # as ``merkle.branch_from_levels``: per level the pair holding the node (the last
        # node paired with itself) and their parent
        branch: list[dict[str, str]] = []
        levels = self._levels_hex
        index = position
        for level, parents in zip(levels, levels[1:], strict=False):
            left = index - (index % 2)
            right = min(left + 1, len(level) - 1)
            branch.append({"left": level[left], "right": level[right], "top": parents[index // 2]})
            index //= 2
        branch += self._tail
        timestamp = self._eblock.entry_timestamp_s(entry_hash, self._dblock_timestamp_s)
        return {
            "entry": {"entryhash": entry_hash.hex(), "timestamp": timestamp},
            "merklebranch": branch,
            "entryblockkeymr": self._keymr_hex,
            "directoryblockkeymr": self._dblock_keymr_hex,
            "directoryblockheight": self._height,
        }
